"""A DGX-1 (8 × V100, two NUMA nodes) with its device inventory, pods holding some of its GPUs, and an engine
over built objects: for the device placement tests (test_device_placement.py, test_nominated_pods.py)."""

from __future__ import annotations

import json
from pathlib import Path

from kubegpu.devices.node_devices import INVENTORY_ANNOTATION, TOPOLOGY_POLICY_ANNOTATION
from kubegpu.explain.engine import Engine
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.assembly import SchedulerSpec
from kubegpu.scheduler.device_ledger import ALLOCATION_ANNOTATION
from kubegpu.testing.builders import make_node, make_pod

FIXTURES = Path(__file__).parent / "fixtures" / "nodes"
DGX1 = json.loads((FIXTURES / "dgx1-8xv100.json").read_text())  # generated: NUMA 0 = GPUs 0-3, NUMA 1 = 4-7
UUIDS = [d["uuid"] for d in DGX1["devices"]]


def dgx_node(policy: str = "single-numa-node"):  # type: ignore[no-untyped-def]
    b = make_node("dgx").gpus(8)
    raw = b.obj()
    raw["metadata"]["annotations"] = {
        INVENTORY_ANNOTATION: json.dumps(DGX1),
        TOPOLOGY_POLICY_ANNOTATION: policy,
    }
    return raw


def holder(name: str, ids: list[str]):  # type: ignore[no-untyped-def]
    raw = make_pod(name).gpu(len(ids)).on("dgx").obj()
    raw["metadata"]["annotations"] = {ALLOCATION_ANNOTATION: json.dumps({"main": {"nvidia.com/gpu": ids}})}
    return raw


def engine(*objs, profile=None):  # type: ignore[no-untyped-def]
    snap = build_snapshot([("t", o) for o in objs])
    assert not snap.errors, snap.errors
    return Engine(snap, SchedulerSpec(profile or "default"))
