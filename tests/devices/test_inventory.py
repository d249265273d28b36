"""The reading format: the real H200 reading parses to what its own README and nvidia-smi files say."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest
from device_readings import SHARED_H200

from kubegpu.devices import Health, NodeInventory, inventory_to_reading, load_reading, parse_reading
from kubegpu.errors import InputError


def test_h200_reading_matches_what_nvidia_smi_printed_on_the_same_node(h200: NodeInventory) -> None:
    # query-gpu.csv in the same directory: "0, GPU-5f3c…, NVIDIA H200, 00000000:00:06.0, …, 143771 MiB, …,
    # Disabled" and nvidia-smi-topo.txt: no NVLink, NUMA affinity not reported by NVML.
    (gpu,) = h200.devices
    assert (gpu.index, gpu.uuid, gpu.name) == (0, "GPU-5f3c0a7e-1d2b-4c8e-9a6f-0b1c2d3e4f50", "NVIDIA H200")
    assert gpu.pci_bus_id == "00000000:00:06.0"
    assert gpu.memory_mib == 143771
    assert (gpu.mig_capable, gpu.mig_enabled, gpu.mig_pending) == (True, False, False)
    assert gpu.numa_node is None  # README: NVML's NUMA query answers NotSupported on this VM
    assert gpu.nvlinks == () and gpu.mig_devices == () and gpu.processes == ()
    assert gpu.cuda_cc == (9, 0)
    assert gpu.health is Health.HEALTHY
    assert (h200.driver, h200.cuda_driver) == ("580.159.04", 13000)


def test_h200_gpu_instance_profiles_are_the_ones_nvidia_smi_mig_lgip_lists(h200: NodeInventory) -> None:
    # nvidia-smi-mig-lgip.txt lists 1g.18gb (id 19, 7 instances), 1g.18gb+me (20), 1g.35gb (15),
    # 2g.35gb (14), 3g.71gb (9), 4g.71gb (5), 7g.141gb (0); unsupported profile slots are dropped.
    profiles = {p.name: (p.id, p.instances) for p in h200.devices[0].gi_profiles}
    assert profiles == {
        "MIG 1g.18gb": (19, 7),
        "MIG 1g.18gb+me": (20, 1),
        "MIG 1g.35gb": (15, 4),
        "MIG 2g.35gb": (14, 3),
        "MIG 3g.71gb": (9, 2),
        "MIG 4g.71gb": (5, 1),
        "MIG 7g.141gb": (0, 1),
    }


def test_writing_a_reading_back_loses_nothing_the_model_reads(h200: NodeInventory) -> None:
    again = parse_reading(json.loads(json.dumps(inventory_to_reading(h200))), source=h200.source)
    assert again == h200
    assert again.devices[0].telemetry == h200.devices[0].telemetry


def test_written_reading_keeps_the_shared_fixture_keys_and_values() -> None:
    raw = json.loads((SHARED_H200 / "nvml.json").read_text())
    written = inventory_to_reading(parse_reading(raw))
    device = written["devices"][0]  # type: ignore[index]
    original = raw["devices"][0]
    for key in (
        "index",
        "name",
        "uuid",
        "serial",
        "memory",
        "pci_bus_id",
        "arch",
        "cuda_cc",
        "mig_mode",
        "numa",
    ):
        assert device[key] == original[key], key
    for key in ("temp", "power_mw", "util", "ecc", "clocks", "procs", "nvlink"):
        assert device[key] == original[key], key


def _broken(mutate: object) -> dict[str, object]:
    raw = json.loads((SHARED_H200 / "nvml.json").read_text())
    mutate(raw)  # type: ignore[operator]
    return raw


@pytest.mark.parametrize(
    ("mutate", "field", "problem"),
    [
        (lambda r: r.pop("driver"), "driver", "missing"),
        (lambda r: r["devices"][0]["memory"].update(total="lots"), "memory.total", "expected an integer"),
        (lambda r: r["devices"][0].update(cuda_cc=[9]), "cuda_cc", "expected a list of 2 integers"),
        (
            lambda r: r["devices"][0].update(health="Sick"),
            "health",
            "'Sick' is not one of Healthy, Unhealthy",
        ),
        (
            lambda r: r["devices"][0].update(nvlink=[{"link": 0, "remote_pci_bus_id": "x"}]),
            "nvlink[0].remote_type",
            "missing",
        ),
        (lambda r: r["devices"].append(copy.deepcopy(r["devices"][0])), "devices", "device indexes repeat"),
    ],
    ids=[
        "missing driver",
        "memory not a number",
        "short compute capability",
        "unknown health",
        "link type",
        "dup",
    ],
)
def test_bad_readings_name_file_device_and_field(mutate: object, field: str, problem: str) -> None:
    with pytest.raises(InputError) as err:
        parse_reading(_broken(mutate), source="node.json")
    assert err.value.source == "node.json"
    assert err.value.field == field
    assert problem in err.value.problem
    if field != "driver" and field != "devices":
        assert err.value.obj == "device 0"


def test_a_file_that_is_not_json_is_input_error_with_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "nvml.json"
    bad.write_text('{"driver": "580",\n oops}')
    with pytest.raises(InputError, match=r"nvml.json: invalid JSON at line 2, column 2: "):
        load_reading(bad)


def test_device_lookup_by_uuid(h200: NodeInventory) -> None:
    assert h200.device("GPU-5f3c0a7e-1d2b-4c8e-9a6f-0b1c2d3e4f50").index == 0
    with pytest.raises(KeyError):
        h200.device("GPU-nope")


def test_inventory_is_frozen(h200: NodeInventory) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        h200.devices[0].health = Health.UNHEALTHY  # type: ignore[misc]
