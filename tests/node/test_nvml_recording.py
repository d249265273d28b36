"""The NVML backend, checked through what it printed on a real H200 (tests/fixtures/nodes/README.md).

``h200-1gpu-discover.json`` was written by ``kubegpu node discover -o json`` on a lent H200 machine;
``shared/.../nvml.json`` was recorded on an H200 node of the same kind by a different script, and its
``host.txt`` holds ``/proc/driver/nvidia`` output. Where the two NVML readings must agree (identity,
memory, PCI, architecture, MIG), they do; the minor number the backend read is the one the driver printed.
"""

from __future__ import annotations

import json
from pathlib import Path

from kubegpu.devices import inventory_to_reading, load_reading

REPO = Path(__file__).parents[2]
RECORDED = REPO / "tests" / "fixtures" / "nodes" / "h200-1gpu-discover.json"
SHARED = REPO / ".." / "shared" / "fixtures" / "nodes" / "h200-1gpu"


def test_backend_reading_agrees_with_the_independent_recording_of_an_h200() -> None:
    (ours,) = load_reading(RECORDED).devices
    (theirs,) = load_reading(SHARED / "nvml.json").devices
    for field in ("index", "uuid", "name", "memory_total", "pci_bus_id", "arch", "cuda_cc", "mig_capable"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert (ours.mig_enabled, ours.numa_node, ours.nvlinks) == (False, None, ())
    assert ours.gi_profiles == theirs.gi_profiles  # same 7 GPU-instance profiles, ids and sizes


def test_backend_recorded_the_minor_number_the_driver_printed() -> None:
    (gpu,) = load_reading(RECORDED).devices
    assert "Device Minor: \t 0" in (SHARED / "host.txt").read_text()
    assert gpu.minor == 0


def test_the_recording_is_already_in_written_form() -> None:
    # discover -o json writes inventory_to_reading(...); reading and writing it again changes nothing.
    raw = json.loads(RECORDED.read_text())
    assert inventory_to_reading(load_reading(RECORDED)) == raw


H100 = REPO / "tests" / "fixtures" / "nodes" / "h100-1gpu"


def test_the_h100_nvml_reading_agrees_with_nvidia_smi_on_the_same_node() -> None:
    """Two independent readings of the lent H100 (tests/fixtures/nodes/h100-1gpu/README.md): ``kubegpu node
    discover -o json`` through NVML and ``nvidia-smi -q -x`` parsed by ``devices.smi_xml``. They agree on
    identity, memory, PCI, architecture, MIG and the minor number, and on what nvidia-smi printed besides:
    81559 MiB (``--query-gpu`` in host.txt), PCI 00000000:00:06.0, Device Minor 0, MIG Disabled."""
    from kubegpu.devices.smi_xml import parse_smi_xml

    (nvml,) = load_reading(H100 / "discover.json").devices
    (smi,) = parse_smi_xml((H100 / "nvidia-smi-q.xml").read_text(), source="nvidia-smi-q.xml").devices
    for field in ("index", "uuid", "name", "memory_total", "pci_bus_id", "arch", "mig_capable", "mig_enabled",
                  "numa_node", "minor", "nvlinks"):  # fmt: skip
        assert getattr(nvml, field) == getattr(smi, field), field
    host = (H100 / "host.txt").read_text()
    assert f"0, {nvml.uuid}, NVIDIA H100 80GB HBM3, 00000000:00:06.0, 81559 MiB, Disabled, Default" in host
    assert nvml.memory_mib == 81559 and "Device Minor: \t 0" in host and nvml.minor == 0
    assert nvml.cuda_cc == (9, 0)  # Hopper, sm_90 (what the device's PyTorch reports for an H100)
    assert f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: {nvml.uuid})" in (H100 / "nvidia-smi-L.txt").read_text()
