"""``Recovery``: the way back to Healthy that the NVIDIA device plugin lacks, on virtual time.

Pins kubegpu's rule (issue 5, R3.3): a device an XID marked Unhealthy is probed once no critical XID has
hit it for ``quiet_seconds``; a successful probe returns it to Healthy, a failed one or a new XID starts
the period again. Skipped (application) XIDs and ``DP_DISABLE_HEALTHCHECKS`` never start one, because
they never mark a device (upstream's ``checkHealth``). ``quiet_seconds=None`` is upstream's behaviour.
"""

from __future__ import annotations

import dataclasses

from kubegpu.devices import Health, HealthEvent, NodeInventory, apply_health_event
from kubegpu.devices.health import NO_EVENTS_XID, HealthChecks, Recovery, affected_devices, mark_healthy
from kubegpu.devices.inventory import MigDevice


def test_quiet_period_then_probe_brings_a_gpu_back(dgx1: NodeInventory) -> None:
    uuid = dgx1.devices[2].uuid
    event = HealthEvent(uuid=uuid, xid=79)
    r = Recovery(quiet_seconds=60).after_event(dgx1, event, now=100.0)
    assert r.due(159.9) == ()
    assert r.due(160.0) == ((uuid, None),)
    r = r.probed((uuid, None), ok=True, now=160.0)
    assert r.due(10_000.0) == ()

    sick = apply_health_event(dgx1, event)
    healed = mark_healthy(sick, (uuid, None))
    assert healed == dgx1  # health and the "XID 79" reason both cleared


def test_a_new_xid_during_the_quiet_period_starts_it_again(dgx1: NodeInventory) -> None:
    event = HealthEvent(uuid=dgx1.devices[0].uuid, xid=48)
    r = Recovery(quiet_seconds=60).after_event(dgx1, event, now=0.0).after_event(dgx1, event, now=50.0)
    assert r.due(100.0) == ()
    assert r.due(110.0) == ((dgx1.devices[0].uuid, None),)


def test_a_failed_probe_waits_another_full_period(dgx1: NodeInventory) -> None:
    key = (dgx1.devices[0].uuid, None)
    r = Recovery(quiet_seconds=30).after_event(dgx1, HealthEvent(uuid=key[0], xid=79), now=0.0)
    r = r.probed(key, ok=False, now=30.0)
    assert r.due(59.0) == ()
    assert r.due(60.0) == (key,)


def test_skipped_xids_start_no_recovery_and_none_means_never(dgx1: NodeInventory) -> None:
    uuid = dgx1.devices[0].uuid
    for xid in (13, 31, 43, 45, 68, 109):
        assert Recovery(60).after_event(dgx1, HealthEvent(uuid=uuid, xid=xid), now=0.0).last_fault == {}
    assert (
        Recovery(60)
        .after_event(dgx1, HealthEvent(uuid=uuid, xid=79), 0.0, HealthChecks.parse("xids"))
        .last_fault
        == {}
    )
    upstream = Recovery(quiet_seconds=None).after_event(dgx1, HealthEvent(uuid=uuid, xid=79), now=0.0)
    assert upstream.due(1e9) == ()


def test_a_gpu_that_reports_no_events_never_comes_back(dgx1: NodeInventory) -> None:
    # Registration for XID events failed: silence proves nothing, so it stays Unhealthy as upstream.
    uuid = dgx1.devices[1].uuid
    r = Recovery(60).after_event(dgx1, HealthEvent(uuid=uuid, xid=79), now=0.0)
    r = r.after_event(dgx1, HealthEvent(uuid=uuid, xid=NO_EVENTS_XID), now=1.0)
    assert r.due(1e9) == ()


def test_an_event_naming_no_gpu_starts_recovery_for_every_gpu(dgx1: NodeInventory) -> None:
    r = Recovery(10).after_event(dgx1, HealthEvent(uuid=None, xid=79), now=0.0)
    assert r.due(10.0) == tuple((g.uuid, None) for g in dgx1.devices)


def test_a_mig_device_recovers_alone(h200: NodeInventory) -> None:
    migs = tuple(
        MigDevice(index=i, uuid=f"MIG-{i}", profile="3g.71gb", gi_id=i + 1, ci_id=0, memory_total=1)
        for i in range(2)
    )
    gpu = dataclasses.replace(h200.devices[0], mig_enabled=True, mig_devices=migs)
    inv = dataclasses.replace(h200, devices=(gpu,))
    event = HealthEvent(uuid=gpu.uuid, xid=94, gpu_instance=2)
    assert affected_devices(inv, event) == ((gpu.uuid, 2),)
    sick = apply_health_event(inv, event)
    assert [m.health for m in sick.devices[0].mig_devices] == [Health.HEALTHY, Health.UNHEALTHY]
    assert mark_healthy(sick, (gpu.uuid, 2)) == inv
