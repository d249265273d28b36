"""The NVML backend records the two files GFD reads beside NVML: each GPU's sysfs PCI class and the DMI
product name, so that ``node labels`` gives ``gpu.mode`` and ``gpu.machine`` as GFD does.

Where GFD reads them (NVIDIA/k8s-device-plugin@1b826acc6af3079d8923bac395c3124b8861a9a6):
``internal/resource/nvml-device.go`` ``GetPCIClass`` looks the GPU up by ``GetPCIBusID`` (vendored go-nvlib
``pkg/nvlib/device/device.go``: NVML's bus id in lower case, the leading ``0000`` of an 8-digit domain
dropped) under go-nvlib's ``PCIDevicesRoot`` ``/sys/bus/pci/devices`` and reads its ``class`` file
(``pkg/nvpci/nvpci.go`` ``readPCIField``: TrimSpace, ``ParseUint(s, 0, 32)``);
``cmd/gpu-feature-discovery/main.go`` reads ``--machine-type-file``, default ``/sys/class/dmi/id/product_name``.

The real H200 node pins the bus id mapping and the class text: its NVML reading
(``shared/fixtures/nodes/h200-1gpu/nvml.json``) has bus id ``00000000:00:06.0`` and its ``host.txt`` lists
``/sys/bus/pci/devices/0000:00:06.0 … class=0x030200`` (a 3D controller). The fake NVML below answers as that
node did for the queries a reading cannot do without and refuses the rest (the backend records refusals).
"""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import pynvml
import pytest
from click.testing import CliRunner

from kubegpu.cli.node_cmd import node
from kubegpu.devices import PluginConfig, gfd_labels, inventory_to_reading, parse_reading
from kubegpu.devices.labels import machine_label
from kubegpu.node import discovery
from kubegpu.node.discovery import NvmlBackend, read_file_text, sysfs_bus_id

SHARED_H200 = Path(__file__).parents[2] / ".." / "shared" / "fixtures" / "nodes" / "h200-1gpu"
Q35 = "Standard PC (Q35 + ICH9, 2009)"  # QEMU's Q35 SMBIOS product name (qemu hw/i386/pc_q35.c)


class _FakeNvml:
    """pynvml's errors and constants; the recorded H200's answers for the queries a reading needs."""

    NVMLError = pynvml.NVMLError
    NVML_SUCCESS = pynvml.NVML_SUCCESS
    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
    NVML_CLOCK_SM = pynvml.NVML_CLOCK_SM
    NVML_CLOCK_MEM = pynvml.NVML_CLOCK_MEM
    NVML_FEATURE_ENABLED = pynvml.NVML_FEATURE_ENABLED
    NVML_NVLINK_MAX_LINKS = pynvml.NVML_NVLINK_MAX_LINKS

    def __init__(self, recorded: dict[str, Any]) -> None:
        self.top = recorded
        self.gpu = recorded["devices"][0]

    def __getattr__(self, name: str) -> Any:
        def refuse(*_args: object) -> Any:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

        return refuse

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> object:
        return index

    def nvmlSystemGetDriverVersion(self) -> str:
        return str(self.top["driver"])

    def nvmlSystemGetNVMLVersion(self) -> str:
        return str(self.top["nvml"])

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return int(self.top["cuda_driver"])

    def nvmlDeviceGetName(self, _h: object) -> str:
        return str(self.gpu["name"])

    def nvmlDeviceGetUUID(self, _h: object) -> str:
        return str(self.gpu["uuid"])

    def nvmlDeviceGetMemoryInfo(self, _h: object) -> object:
        return types.SimpleNamespace(**self.gpu["memory"])

    def nvmlDeviceGetPciInfo(self, _h: object) -> object:
        return types.SimpleNamespace(busId=self.gpu["pci_bus_id"].encode())  # older pynvml: bytes

    def nvmlDeviceGetArchitecture(self, _h: object) -> int:
        return int(self.gpu["arch"])

    def nvmlDeviceGetCudaComputeCapability(self, _h: object) -> tuple[int, int]:
        return (self.gpu["cuda_cc"][0], self.gpu["cuda_cc"][1])


@pytest.fixture
def h200_nvml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The backend over the fake NVML, with sysfs and DMI under ``tmp_path`` (empty until a test writes)."""
    recorded = json.loads((SHARED_H200 / "nvml.json").read_text())
    monkeypatch.setattr(discovery, "load_pynvml", lambda: _FakeNvml(recorded))
    monkeypatch.setattr(discovery, "read_mig_minors", lambda: [])
    monkeypatch.setattr(discovery, "PCI_DEVICES_ROOT", tmp_path / "sys/bus/pci/devices")
    monkeypatch.setattr(discovery, "MACHINE_TYPE_FILE", tmp_path / "sys/class/dmi/id/product_name")
    return tmp_path


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_sysfs_name_of_an_nvml_bus_id_is_go_nvlibs() -> None:
    assert (
        json.loads((SHARED_H200 / "nvml.json").read_text())["devices"][0]["pci_bus_id"] == "00000000:00:06.0"
    )
    assert (
        "/sys/bus/pci/devices/0000:00:06.0 numa=-1 class=0x030200" in (SHARED_H200 / "host.txt").read_text()
    )
    assert sysfs_bus_id("00000000:00:06.0") == "0000:00:06.0"
    assert sysfs_bus_id("00000000:1A:00.0") == "0000:1a:00.0"  # lower case, as sysfs names functions
    assert sysfs_bus_id("00010000:1A:00.0") == "00010000:1a:00.0"  # a domain GetPCIBusID does not shorten


def test_reading_records_the_class_and_machine_type_and_labels_follow(h200_nvml: Path) -> None:
    _write(h200_nvml / "sys/bus/pci/devices/0000:00:06.0/class", "0x030200\n")  # as the H200 host listed it
    _write(h200_nvml / "sys/class/dmi/id/product_name", Q35 + "\n")
    reading = NvmlBackend().reading()
    assert reading["machine_type"] == Q35
    assert reading["devices"][0]["pci_class"] == "0x030200"  # type: ignore[index]
    inv = parse_reading(reading, source="nvml")
    labels = gfd_labels(inv, PluginConfig())
    assert (labels["nvidia.com/gpu.machine"], labels["nvidia.com/gpu.mode"]) == (
        "Standard-PC-Q35-ICH9-2009",
        "compute",
    )
    # the keys survive `node discover -o json` and reading it back (the reading format's round trip)
    written = inventory_to_reading(inv)
    assert (written["machine_type"], written["devices"][0]["pci_class"]) == (Q35, "0x030200")  # type: ignore[index]
    assert parse_reading(written, source="nvml") == inv


def test_unreadable_files_are_recorded_as_errors_and_label_unknown(h200_nvml: Path) -> None:
    # No DMI (a VM without SMBIOS) and no sysfs function: GFD logs the read errors and writes "unknown".
    reading = NvmlBackend().reading()
    assert str(reading["machine_type"]).startswith("ERR:FileNotFoundError:")
    assert str(reading["devices"][0]["pci_class"]).startswith("ERR:FileNotFoundError:")  # type: ignore[index]
    labels = gfd_labels(parse_reading(reading), PluginConfig())
    assert (labels["nvidia.com/gpu.machine"], labels["nvidia.com/gpu.mode"]) == ("unknown", "unknown")


def test_read_file_text_keeps_bytes_gfd_would_drop_out_of_the_label(tmp_path: Path) -> None:
    # Go's regexp sees an invalid UTF-8 byte as U+FFFD and sanitise removes it; so does the label from here.
    path = tmp_path / "product_name"
    path.write_bytes(b"Box \xff 9000\n")
    text = read_file_text(path)
    assert text == "Box \ufffd 9000"
    inv = parse_reading({"driver": "580.159.04", "nvml": "13.580.159.04", "cuda_driver": 13000,
                         "machine_type": text, "devices": []})  # fmt: skip
    assert inv.machine_type == text
    # GFD's sanitise (internal/lm/resource.go): U+FFFD is outside [A-Za-z0-9-_. ], dropped; the words joined by "-"
    assert machine_label(inv.machine_type) == "Box-9000"


def test_node_labels_and_the_nfd_feature_file_show_both(h200_nvml: Path) -> None:
    reading = json.loads((SHARED_H200 / "nvml.json").read_text())
    reading["machine_type"] = Q35
    reading["devices"][0]["pci_class"] = "0x030200"
    path = h200_nvml / "reading.json"
    path.write_text(json.dumps(reading))
    feature_file = h200_nvml / "features.d" / "kubegpu"
    result = CliRunner().invoke(
        node, ["labels", "--reading", str(path), "-o", "json", "--nfd-feature-file", str(feature_file)]
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert (printed["nvidia.com/gpu.machine"], printed["nvidia.com/gpu.mode"]) == (
        "Standard-PC-Q35-ICH9-2009",
        "compute",
    )
    lines = feature_file.read_text().splitlines()
    assert "nvidia.com/gpu.machine=Standard-PC-Q35-ICH9-2009" in lines
    assert "nvidia.com/gpu.mode=compute" in lines


@pytest.mark.parametrize(("key", "value"), [("machine_type", 7), ("pci_class", ["0x030200"])])
def test_a_class_or_machine_type_that_is_not_text_is_one_clear_error(
    h200_nvml: Path, key: str, value: object
) -> None:
    reading = json.loads((SHARED_H200 / "nvml.json").read_text())
    (reading if key == "machine_type" else reading["devices"][0])[key] = value
    path = h200_nvml / "bad.json"
    path.write_text(json.dumps(reading))
    result = CliRunner().invoke(node, ["labels", "--reading", str(path)])
    assert result.exit_code != 0
    (line,) = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert f"{key}: expected a string, got {value!r}" in line
    assert "Traceback" not in result.output
