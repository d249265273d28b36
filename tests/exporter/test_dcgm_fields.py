"""The DCGM series: dcgm-exporter's names, types, HELP texts and labels, and NVML's values (R13.2, R16).

Pins dcgm-exporter's ``etc/default-counters.csv`` (the lines below are copied from it, NVIDIA/dcgm-exporter
commit b54068a9) and its ``gpuMetricsFormat`` template: labels ``gpu``, ``UUID``, ``pci_bus_id``,
``device`` (``nvidia<gpu>``), ``modelName``, ``Hostname``; counters exposed under their own name (no
``_total``). Values come from the real H200 reading in ``shared/fixtures/nodes/h200-1gpu/nvml.json``.
"""

from __future__ import annotations

import copy
import json

import pytest
from exporter_helpers import (
    H200,
    H200_DRIVER,
    H200_UUID,
    ReadingBackend,
    Scraper,
    labels,
    scrape_once,
)

from kubegpu.devices import dcgm_fields as F
from kubegpu.devices.inventory import MIB
from kubegpu.exporter.collector import GpuCollector
from kubegpu.node.discovery import RecordedBackend

# Lines of dcgm-exporter's default-counters.csv, verbatim; "# " lines are commented out there (ECC).
UPSTREAM_CSV = """\
DCGM_FI_DEV_SM_CLOCK,  gauge, SM clock frequency (in MHz).
DCGM_FI_DEV_MEM_CLOCK, gauge, Memory clock frequency (in MHz).
DCGM_FI_DEV_MEMORY_TEMP, gauge, Memory temperature (in C).
DCGM_FI_DEV_GPU_TEMP,    gauge, GPU temperature (in C).
DCGM_FI_DEV_POWER_USAGE,              gauge, Power draw (in W).
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Total energy consumption since boot (in mJ).
DCGM_FI_DEV_PCIE_REPLAY_COUNTER, counter, Total number of PCIe retries.
DCGM_FI_DEV_GPU_UTIL,      gauge, GPU utilization (in %).
DCGM_FI_DEV_MEM_COPY_UTIL, gauge, Memory utilization (in %).
DCGM_FI_DEV_ENC_UTIL,      gauge, Encoder utilization (in %).
DCGM_FI_DEV_DEC_UTIL ,     gauge, Decoder utilization (in %).
DCGM_FI_DEV_XID_ERRORS,            gauge,   Value of the last XID error encountered.
DCGM_FI_DEV_FB_FREE, gauge, Framebuffer memory free (in MiB).
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB).
# DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, counter, Total number of single-bit volatile ECC errors.
# DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors.
# DCGM_FI_DEV_ECC_SBE_AGG_TOTAL, counter, Total number of single-bit persistent ECC errors.
# DCGM_FI_DEV_ECC_DBE_AGG_TOTAL, counter, Total number of double-bit persistent ECC errors.
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS, counter, Number of remapped rows for uncorrectable errors
DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS,   counter, Number of remapped rows for correctable errors
DCGM_FI_DEV_ROW_REMAP_FAILURE,           gauge,   Whether remapping of rows has failed
"""

GPU0 = {
    "gpu": "0",
    "UUID": H200_UUID,
    "pci_bus_id": "00000000:00:06.0",
    "device": "nvidia0",
    "modelName": "NVIDIA H200",
    "Hostname": "gpu-node-1",
    "DCGM_FI_DRIVER_VERSION": H200_DRIVER,
}


def _upstream() -> list[tuple[str, str, str]]:
    rows = []
    for line in UPSTREAM_CSV.splitlines():
        name, typ, help_ = (part.strip() for part in line.removeprefix("# ").split(",", 2))
        rows.append((name, typ, help_))
    return rows


def test_every_exported_field_is_a_line_of_dcgm_exporters_counters_file_in_its_order() -> None:
    assert [(f.name, f.type.value, f.help) for f in F.DCGM_FIELDS] == _upstream()


@pytest.fixture
def h200_scrape() -> Scraper:
    scraper = Scraper(GpuCollector(RecordedBackend(H200 / "nvml.json"), hostname="gpu-node-1"))
    yield scraper
    scraper.close()


def test_recorded_h200_series_carry_nvmls_values_and_dcgm_exporters_labels(h200_scrape: Scraper) -> None:
    got = h200_scrape.scrape()
    gpu0 = labels(**GPU0)
    # nvml.json: memory used 644939776 B, free 150109880320 B; temp 37; power 81383 mW; clocks 345/3201.
    expected = {
        "DCGM_FI_DEV_FB_USED": 644939776 // MIB,  # 615 MiB
        "DCGM_FI_DEV_FB_FREE": 150109880320 // MIB,  # 143156 MiB
        "DCGM_FI_DEV_GPU_TEMP": 37,
        "DCGM_FI_DEV_POWER_USAGE": 81.383,
        "DCGM_FI_DEV_SM_CLOCK": 345,
        "DCGM_FI_DEV_MEM_CLOCK": 3201,
        "DCGM_FI_DEV_GPU_UTIL": 0,
        "DCGM_FI_DEV_MEM_COPY_UTIL": 0,
    }
    for name, value in expected.items():
        assert got.series[name] == {gpu0: value}, name
        assert got.types[name] == "gauge"
        assert got.helps[name] == F.FIELDS_BY_NAME[name].help


def test_fields_the_reading_does_not_have_are_absent_not_zero(h200_scrape: Scraper) -> None:
    # dcgm-exporter leaves out what the card does not support; a 0 would read as "no XID", "no ECC".
    got = h200_scrape.scrape()
    for name in (
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    ):
        assert name not in got.series
        assert f"# HELP {name} " not in got.text


def test_a_query_nvml_refused_leaves_its_field_out() -> None:
    reading = json.loads((H200 / "nvml.json").read_text())
    reading["devices"][0]["temp"] = "ERR:NVMLError_NotSupported:Not Supported"
    reading["devices"][0]["power_mw"] = "ERR:NVMLError_NotSupported:Not Supported"
    got = scrape_once(GpuCollector(ReadingBackend(reading)))
    assert "DCGM_FI_DEV_GPU_TEMP" not in got.series and "DCGM_FI_DEV_POWER_USAGE" not in got.series
    assert "DCGM_FI_DEV_FB_USED" in got.series


def test_counters_keep_their_exact_name_in_help_type_and_sample_lines() -> None:
    # client_python's own encoder would write "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION_total counter".
    energy = {H200_UUID: {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 123456789.0}}
    got = scrape_once(GpuCollector(RecordedBackend(H200 / "nvml.json"), counters=lambda: energy))
    lines = got.text.splitlines()
    i = lines.index("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter")
    assert (
        lines[i - 1]
        == "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ)."
    )
    assert lines[i + 1].startswith('DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="')
    assert lines[i + 1].endswith("} 1.23456789e+08")
    assert got.types["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] == "counter"


def test_without_a_hostname_the_label_is_left_out_as_dcgm_exporter_does() -> None:
    got = scrape_once(GpuCollector(RecordedBackend(H200 / "nvml.json")))
    without = {k: v for k, v in GPU0.items() if k != "Hostname"}
    assert got.series["DCGM_FI_DEV_GPU_TEMP"] == {labels(**without): 37}


def test_mig_devices_get_their_parents_labels_plus_gpu_instance_profile_and_id() -> None:
    """dcgm-exporter 4.5.3-4.8.2 pkg/cmd/app.go: the default FlexKey "f" monitors "all GPU instances if MIG
    is enabled"; internal/pkg/devicemonitoring/device_monitoring.go ``monitorAllGPUInstances`` adds the
    GPU itself only when it has no GPU instance. So each instance has its own framebuffer and the card's
    device-wide fields (SM clock: NVIDIA/dcgm-exporter issues #317 and #713 show ``DCGM_FI_DEV_SM_CLOCK`` per
    ``GPU_I_ID``), and the MIG-enabled GPU has no DCGM series (issue #561); kubegpu's own series stay on it."""
    reading = json.loads((H200 / "nvml.json").read_text())
    dev = reading["devices"][0]
    dev["mig_mode"] = [1, 1]
    migs = [("MIG-11111111-2222-3333-4444-555555555555", 1), ("MIG-66666666-7777-8888-9999-000000000000", 2)]
    dev["mig_devices"] = [
        {"index": i, "uuid": u, "profile": "3g.71gb", "gi_id": gi, "ci_id": 0, "memory_total": 71424 * MIB}
        for i, (u, gi) in enumerate(migs)
    ]
    per_mig = {u: {"DCGM_FI_DEV_FB_USED": 100.0 * gi, "DCGM_FI_DEV_FB_FREE": 71000.0} for u, gi in migs}
    got = scrape_once(GpuCollector(ReadingBackend(copy.deepcopy(reading)), counters=lambda: per_mig))
    base = {k: v for k, v in GPU0.items() if k != "Hostname"}
    gi1, gi2 = (labels(**base, GPU_I_PROFILE="3g.71gb", GPU_I_ID=gi) for gi in ("1", "2"))
    assert got.series["DCGM_FI_DEV_FB_USED"] == {gi1: 100, gi2: 200}
    # the card's SM clock (the fixture's reading: 345 MHz) on each instance, none on the GPU itself
    assert got.series["DCGM_FI_DEV_SM_CLOCK"] == {gi1: 345, gi2: 345}
    healthy = {k for k in got.series["kubegpu_gpu_healthy"] if "GPU_I_ID" not in dict(k)}
    assert len(healthy) == 1  # the parent keeps kubegpu's series


def test_driver_version_label_follows_hostname_on_dcgm_series_only(h200_scrape: Scraper) -> None:
    """dcgm-exporter 4.5.3-4.8.2 etc/default-counters.csv enables ``DCGM_FI_DRIVER_VERSION, label, Driver
    Version``; gpu_collector.go ``toMetric`` puts label fields in ``Labels``, which
    internal/pkg/rendermetrics/render_metrics.go writes after ``Hostname``. Value: the h200-1gpu fixture's
    nvidia-smi-q.xml ``<driver_version>580.159.04``."""
    got = h200_scrape.scrape()
    temp = next(line for line in got.text.splitlines() if line.startswith("DCGM_FI_DEV_GPU_TEMP{"))
    assert temp.endswith(',Hostname="gpu-node-1",DCGM_FI_DRIVER_VERSION="580.159.04"} 37.0')
    assert not any("DCGM_FI_DRIVER_VERSION" in dict(k) for k in got.series["kubegpu_gpu_healthy"])


def test_nvml_v2_memory_gives_fb_reserved_and_a_used_without_it() -> None:
    """dcgm-exporter 4.5.3-4.8.2 etc/default-counters.csv: ``DCGM_FI_DEV_FB_RESERVED, gauge, Framebuffer
    memory reserved (in MiB).`` after FB_USED. NVML's nvmlMemory_v2_t (R590 reference) keeps ``reserved``
    apart from ``used``; the values are the idle H200's nvidia-smi-q.xml ``<fb_memory_usage>`` (reserved
    616, used 0, free 143156 MiB), which nvidia-smi reads through v2."""
    from types import SimpleNamespace

    from kubegpu.exporter.nvml_counters import _framebuffer
    from kubegpu.exporter.values import EXPORTED_FIELDS

    v2 = SimpleNamespace(total=143771 * MIB, reserved=616 * MIB, used=0, free=143156 * MIB)

    class NVMLError(Exception):
        pass

    def get_memory_info(handle: object, version: object = None) -> SimpleNamespace:
        if version != "v2":
            raise NVMLError("v1 asked")
        return v2

    nvml = SimpleNamespace(nvmlDeviceGetMemoryInfo=get_memory_info, nvmlMemory_v2="v2", NVMLError=NVMLError)
    assert _framebuffer(nvml, object()) == {
        "DCGM_FI_DEV_FB_USED": 0,
        "DCGM_FI_DEV_FB_FREE": 143156,
        "DCGM_FI_DEV_FB_RESERVED": 616,
    }
    names = [f.name for f in EXPORTED_FIELDS]
    assert names[names.index("DCGM_FI_DEV_FB_USED") + 1] == "DCGM_FI_DEV_FB_RESERVED"
    reserved = next(f for f in EXPORTED_FIELDS if f.name == "DCGM_FI_DEV_FB_RESERVED")
    assert (reserved.type.value, reserved.help) == ("gauge", "Framebuffer memory reserved (in MiB).")
    counters = {H200_UUID: {"DCGM_FI_DEV_FB_RESERVED": 616.0}}
    got = scrape_once(GpuCollector(RecordedBackend(H200 / "nvml.json"), counters=lambda: counters))
    assert got.one("DCGM_FI_DEV_FB_RESERVED", gpu="0") == 616
    assert got.types["DCGM_FI_DEV_FB_RESERVED"] == "gauge"
