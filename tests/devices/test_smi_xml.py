"""`nvidia-smi -q -x` as an inventory, on the real H200 reading (shared fixture, read-only commands on a
real node, UUID replaced by a stand-in). The expected values are the ones nvidia-smi printed there and
the NVML reading of the same node (`nvml.json`) agrees with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubegpu.devices.smi_xml import parse_smi_xml
from kubegpu.errors import InputError

H200 = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "nodes" / "h200-1gpu"


def test_real_h200_xml_matches_the_nvml_reading() -> None:
    inv = parse_smi_xml((H200 / "nvidia-smi-q.xml").read_text(), source="nvidia-smi-q.xml")
    nvml = json.loads((H200 / "nvml.json").read_text())
    (gpu,) = inv.devices
    dev = nvml["devices"][0]
    assert (inv.driver, inv.cuda_driver) == (nvml["driver"], nvml["cuda_driver"])
    assert (gpu.uuid, gpu.name, gpu.pci_bus_id, gpu.arch) == (
        dev["uuid"],
        dev["name"],
        dev["pci_bus_id"],
        dev["arch"],
    )
    # nvidia-smi prints whole MiB; NVML's total is 150754820096 bytes = 143771 MiB + 0.x
    assert gpu.memory_mib == dev["memory"]["total"] // (1024 * 1024) == 143771
    assert (gpu.mig_capable, gpu.mig_enabled, gpu.minor) == (True, False, 0)
    assert gpu.numa_node is None and gpu.cuda_cc == (0, 0)  # not in the XML: unknown, not invented


def test_broken_xml_names_the_problem() -> None:
    with pytest.raises(InputError, match="not XML"):
        parse_smi_xml("<nvidia_smi_log><gpu>", source="x.xml")
    bad = "<nvidia_smi_log><driver_version>1</driver_version><cuda_version>13.0</cuda_version><gpu id='a'>" \
          "<uuid>GPU-x</uuid><product_name>p</product_name><fb_memory_usage><total>lots</total><used>0 MiB</used>" \
          "</fb_memory_usage><pci><pci_bus_id>a</pci_bus_id></pci></gpu></nvidia_smi_log>"  # fmt: skip
    with pytest.raises(InputError) as err:
        parse_smi_xml(bad, source="x.xml")
    assert err.value.one_line() == "x.xml: gpu a: fb_memory_usage/total: expected '<n> MiB', got 'lots'"


@pytest.mark.parametrize(
    ("architecture", "arch"),
    # nvml.h nvmlDeviceArchitecture_t: NVML_DEVICE_ARCH_ADA 8, _HOPPER 9, _BLACKWELL 10, _RUBIN 13; a name
    # nvidia-smi may print in a later driver is unknown (0), never guessed
    [("Ada Lovelace", 8), ("Hopper", 9), ("Blackwell", 10), ("Rubin", 13), ("Feynman", 0)],
)
def test_architecture_names_map_to_nvml_values(architecture: str, arch: int) -> None:
    text = (H200 / "nvidia-smi-q.xml").read_text()
    assert "<product_architecture>Hopper</product_architecture>" in text
    text = text.replace(
        "<product_architecture>Hopper</product_architecture>",
        f"<product_architecture>{architecture}</product_architecture>",
    )
    (gpu,) = parse_smi_xml(text, source="nvidia-smi-q.xml").devices
    assert gpu.arch == arch
