"""Device records reconciled on start and resync (issue 22): the live scheduler's view of held device IDs
comes from its own records first, then the ``kubegpu.io/allocated-devices`` records of bound pods, each
ID held once. A record naming an ID another pod holds, or one the node does not advertise (a forged or
stale annotation), is not trusted: the ledger holds unheld stand-ins for that pod instead.

The node is ``conftest.gpu_node`` (8 whole GPUs, no GFD labels), whose device model is synthesized; the
IDs are read from that model (the input), and the expected outcomes are derived by hand from the records
below. The record format is kubegpu's own (``{container: {resource: [ids]}}``, docs/live.md).
"""

from __future__ import annotations

import json

import pytest

from kubegpu.devices.node_devices import NodeDevices, node_devices
from kubegpu.live.assumed import reconcile_records
from kubegpu.model.objects import Pod
from kubegpu.model.parse import parse_node, parse_pod
from kubegpu.scheduler.assembly import plugin_config_for
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.device_ledger import ALLOCATION_ANNOTATION
from tests.live.conftest import gpu_node, gpu_pod


def model() -> NodeDevices:
    node = parse_node(gpu_node("gpu-1"), "test")
    built = node_devices(node, plugin_config_for(node, {}))
    assert built is not None
    return built


def bound(name: str, gpus: int, ids: list[str]) -> Pod:
    raw = gpu_pod(name, gpus, node="gpu-1")
    raw["metadata"]["uid"] = f"uid-{name}"
    raw["metadata"]["annotations"] = {ALLOCATION_ANNOTATION: json.dumps({"main": {"nvidia.com/gpu": ids}})}
    return parse_pod(raw, "test")


def test_a_record_naming_a_held_or_unknown_device_is_not_trusted(caplog: pytest.LogCaptureFixture) -> None:
    m = model()
    ids = [d.id for d in m.plans["nvidia.com/gpu"].devices]
    assert len(ids) == 8
    a = bound("a", 2, ids[0:2])  # first: trusted
    b = bound("b", 1, ids[0:1])  # names a's first device: not trusted
    c = bound("c", 1, ["GPU-not-on-this-node"])  # not a device of gpu-1: not trusted
    d = bound("d", 1, ids[2:3])  # free: trusted
    out = reconcile_records([a, b, c, d], {"gpu-1": m})

    # trusted records first, the untrusted after them (their stand-ins are picked among what is left)
    assert [(p.name, ALLOCATION_ANNOTATION in p.annotations) for p in out] == [
        ("a", True), ("d", True), ("b", False), ("c", False)
    ]  # fmt: skip
    assert f"nvidia.com/gpu {ids[0]} is held by ml/a" in caplog.text
    assert "GPU-not-on-this-node is not a device node gpu-1 advertises" in caplog.text

    # the ledger built from the reconciled pods holds 2 + 1 + 1 + 1 = 5 distinct IDs, one per requested GPU
    cluster = ClusterState([parse_node(gpu_node("gpu-1"), "test")], out, {"gpu-1": m})
    held = cluster.devices.held[0]["nvidia.com/gpu"]
    assert len(held) == 5
    assert held[ids[0]] == held[ids[1]] == "ml/a" and held[ids[2]] == "ml/d"
    assert sorted(k for k in held.values() if k in ("ml/b", "ml/c")) == ["ml/b", "ml/c"]
    assert "GPU-not-on-this-node" not in held


def test_the_first_record_wins_so_own_records_are_passed_first() -> None:
    """The same two records in the other order: the other pod keeps its record (precedence is the order,
    which the scheduler makes: assumed pods' own records, then bound pods oldest first)."""
    m = model()
    ids = [d.id for d in m.plans["nvidia.com/gpu"].devices]
    mine, theirs = bound("mine", 1, ids[0:1]), bound("theirs", 1, ids[0:1])
    assert [
        ALLOCATION_ANNOTATION in p.annotations for p in reconcile_records([mine, theirs], {"gpu-1": m})
    ] == [
        True,
        False,
    ]
    assert [
        ALLOCATION_ANNOTATION in p.annotations for p in reconcile_records([theirs, mine], {"gpu-1": m})
    ] == [
        True,
        False,
    ]
    assert reconcile_records([theirs, mine], {"gpu-1": m})[0].name == "theirs"
