"""CDI spec entries and the XID health rules (NVIDIA device plugin checkHealth)."""

from __future__ import annotations

import dataclasses

import pytest

from kubegpu.devices import Health, HealthEvent, NodeInventory, apply_health_event, cdi_spec, xid_is_critical
from kubegpu.devices.inventory import MigDevice


def test_h200_cdi_spec_resolves_index_uuid_and_all_to_dev_nvidia0(h200: NodeInventory) -> None:
    # host.txt of the same node: "Device Minor: 0", /dev/nvidia0, /dev/nvidiactl, /dev/nvidia-uvm(-tools).
    uuid = h200.devices[0].uuid
    node0 = {"deviceNodes": [{"path": "/dev/nvidia0"}]}
    assert cdi_spec(h200) == {
        "cdiVersion": "0.5.0",
        "kind": "nvidia.com/gpu",
        "devices": [
            {"name": "0", "containerEdits": node0},
            {"name": uuid, "containerEdits": node0},
            {"name": "all", "containerEdits": node0},
        ],
        "containerEdits": {
            "env": ["NVIDIA_VISIBLE_DEVICES=void"],
            "deviceNodes": [
                {"path": "/dev/nvidiactl"},
                {"path": "/dev/nvidia-uvm"},
                {"path": "/dev/nvidia-uvm-tools"},
            ],
        },
    }


def test_cdi_uses_the_recorded_minor_number_not_the_index(dgx1: NodeInventory) -> None:
    swapped = dataclasses.replace(dgx1.devices[1], minor=7)
    spec = cdi_spec(dataclasses.replace(dgx1, devices=(dgx1.devices[0], swapped)), dev_root="/host/dev")
    names = {d["name"]: d["containerEdits"]["deviceNodes"] for d in spec["devices"]}  # type: ignore[index,union-attr]
    assert names["1"] == [{"path": "/host/dev/nvidia7"}]
    assert names[swapped.uuid] == [{"path": "/host/dev/nvidia7"}]
    assert names["all"] == [{"path": "/host/dev/nvidia0"}, {"path": "/host/dev/nvidia7"}]


@pytest.mark.parametrize(
    ("xid", "disabled", "critical"),
    [
        (79, "", True),  # GPU has fallen off the bus
        (48, "", True),  # double-bit ECC error
        (13, "", False),  # application errors upstream skips: 13, 31, 43, 45, 68, 109
        (31, "", False),
        (43, "", False),
        (45, "", False),
        (68, "", False),
        (109, "", False),  # context switch timeout
        (79, "all", False),
        (79, "xids", False),
        (79, "79,94", False),  # extra XIDs to skip, DP_DISABLE_HEALTHCHECKS=79,94
        (48, "79,94", True),
    ],
)
def test_which_xids_mark_a_device_unhealthy(xid: int, disabled: str, critical: bool) -> None:
    assert xid_is_critical(xid, disabled) is critical


def test_a_critical_xid_marks_only_its_gpu(dgx1: NodeInventory) -> None:
    after = apply_health_event(dgx1, HealthEvent(uuid=dgx1.devices[3].uuid, xid=79))
    assert [g.health for g in after.devices] == [Health.HEALTHY] * 3 + [Health.UNHEALTHY] + [
        Health.HEALTHY
    ] * 4
    assert after.devices[3].health_reason == "XID 79"


def test_an_event_without_a_device_marks_every_gpu(dgx1: NodeInventory) -> None:
    after = apply_health_event(dgx1, HealthEvent(uuid=None, xid=48))
    assert {g.health for g in after.devices} == {Health.UNHEALTHY}


def test_an_application_xid_changes_nothing(dgx1: NodeInventory) -> None:
    assert apply_health_event(dgx1, HealthEvent(uuid=dgx1.devices[0].uuid, xid=43)) is dgx1


def test_an_xid_on_a_gpu_instance_marks_only_that_mig_device(h200: NodeInventory) -> None:
    migs = tuple(
        MigDevice(index=i, uuid=f"MIG-{i}", profile="3g.71gb", gi_id=i + 1, ci_id=0, memory_total=1)
        for i in range(2)
    )
    gpu = dataclasses.replace(h200.devices[0], mig_enabled=True, mig_devices=migs)
    inv = dataclasses.replace(h200, devices=(gpu,))
    after = apply_health_event(inv, HealthEvent(uuid=gpu.uuid, xid=94, gpu_instance=2))
    assert after.devices[0].health is Health.HEALTHY
    assert [m.health for m in after.devices[0].mig_devices] == [Health.HEALTHY, Health.UNHEALTHY]
