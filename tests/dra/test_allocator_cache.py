"""The allocator evaluates each selector once per (slice, device, expression), not once per node.

An ``allNodes`` slice (upstream allocator_test.go "network-attached-device") reaches every node, so the
Filter visits its devices on each node; the answers cannot differ between nodes (a selector sees only
the device), so the allocator keeps them. Counted here by wrapping the compiled selectors.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler import dra_allocator
from kubegpu.scheduler.dra_allocator import Allocator, SliceIndex
from kubegpu.testing.builders import make_node
from tests.dra import objects as o


def test_selectors_run_once_per_device_across_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = dra_allocator.compiled

    class Counting:
        def __init__(self, expr: str) -> None:
            self.inner, self.expr = real(expr), expr

        def matches(self, driver: str, device: Any) -> bool:
            calls.append(device.name)
            return bool(self.inner.matches(driver, device))

    monkeypatch.setattr(dra_allocator, "compiled", Counting)
    net = o.node_slice("x", [o.gpu_device(0, "net"), o.gpu_device(1, "net")], name="everywhere")
    del net["spec"]["nodeName"]
    net["spec"]["allNodes"] = True
    sel = "device.attributes['gpu.nvidia.com'].index >= 0"
    snap = build_snapshot([("t", x) for x in (*o.gpu_classes(), net,
                                               o.claim("c", o.request("g", count=3, selectors=(sel,))))])  # fmt: skip
    alloc = Allocator(list(snap.dra.claims.values()), snap.dra.classes, SliceIndex(snap.dra.slices), set())
    nodes = [make_node(f"n{i}").parsed() for i in range(3)]
    # 3 GPUs asked, 2 exist: every node fails, after looking at both devices on each
    assert [alloc.allocate(n.name, n.labels) for n in nodes] == [None, None, None]
    # per device: the class selector and the request selector, once each → 2 devices × 2 = 4, where a
    # per-node evaluation would have made 3 nodes × 4 = 12
    assert sorted(calls) == ["gpu-0", "gpu-0", "gpu-1", "gpu-1"]


def test_an_allocation_search_leaves_no_reference_cycle() -> None:
    """The allocator's search is two recursive closures holding each other (a reference cycle per
    ``Allocator.allocate`` call, with its candidate lists): with the cyclic collector paused, as one-shot
    commands run, 100 Pending pods on 2,000 DRA-capable nodes kept 2.6 GB of them. The cycle is broken when
    the call ends: 50 cycles of a pod refused on two DRA nodes leave nothing for the collector."""
    import gc

    from kubegpu.explain.engine import Engine
    from kubegpu.model.snapshot import build_snapshot
    from tests.dra import objects as o

    objs = [
        *o.gpu_classes(),
        *o.gpu_node("n1", 2),
        *o.gpu_node("n2", 2),
        o.claim("big", o.request("gpu", count=3)),
        o.pod("p", ("gpu", "big", "")),
    ]
    snap = build_snapshot([("t", x) for x in objs])
    pod = snap.pod("default/p")
    assert pod is not None
    scheduler = Engine(snap).scheduler
    assert scheduler.schedule_one(pod, assume=False).node is None
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for _ in range(50):
            scheduler.schedule_one(pod, assume=False)
        assert gc.collect() == 0
    finally:
        (gc.enable if was else gc.disable)()
