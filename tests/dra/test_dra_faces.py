"""DRA devices on the report's GPU map and in the cluster exporter.

Cluster (NVIDIA driver-shaped slices, tests/dra/objects.py): n1 in pool ``a`` publishes gpu-0 and gpu-1,
claim ``c`` is allocated gpu-0 and reserved for pod ``p`` (running on n1); n2 in pool ``b`` publishes
gpu-0, nothing holds it. Hand-counted: pool a 2 devices, 1 allocated, 1 free; pool b 1, 0, 1. On the map
n1 has two tiles, GPU 0 held by default/p, GPU 1 free; both nodes appear although neither advertises
``nvidia.com/gpu`` (no device-plugin model).
"""

from __future__ import annotations

from kubegpu.cluster_exporter.collector import families_of
from kubegpu.cluster_exporter.measure import measure
from kubegpu.explain.cards import node_cards
from kubegpu.explain.engine import Engine
from kubegpu.explain.overview import node_rows
from kubegpu.model.snapshot import build_snapshot
from kubegpu.testing.builders import make_pod
from tests.dra import objects as o

POOL = "accelerator.example.com/pool"


def snapshot() -> Engine:
    n1 = o.gpu_node("n1", 2)
    n1[0]["metadata"]["labels"][POOL] = "a"
    n2 = o.gpu_node("n2", 1)
    n2[0]["metadata"]["labels"][POOL] = "b"
    p = o.pod("p", ("gpu", "c", ""), uid="uid-p")
    p["spec"]["nodeName"] = "n1"
    p["status"] = {"phase": "Running"}
    c = o.claim("c", o.request("gpu"), status=o.allocated("n1", ("gpu", "gpu-0"), reserved=("uid-p",)))
    other = make_pod("web").on("n2").obj()
    snap = build_snapshot([("t", x) for x in (*o.gpu_classes(), *n1, *n2, p, c, other)])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    return Engine(snap)


def test_exporter_counts_dra_devices_per_pool_and_driver() -> None:
    engine = snapshot()
    fams = {f.name: f for f in families_of(measure(engine, POOL))}
    got = {
        name: {(s.labels["pool"], s.labels["driver"]): s.value for s in fams[name].samples}
        for name in (
            "kubegpu_pool_dra_devices",
            "kubegpu_pool_dra_devices_allocated",
            "kubegpu_pool_dra_devices_free",
        )
    }
    assert got == {
        "kubegpu_pool_dra_devices": {("a", "gpu.nvidia.com"): 2, ("b", "gpu.nvidia.com"): 1},
        "kubegpu_pool_dra_devices_allocated": {("a", "gpu.nvidia.com"): 1, ("b", "gpu.nvidia.com"): 0},
        "kubegpu_pool_dra_devices_free": {("a", "gpu.nvidia.com"): 1, ("b", "gpu.nvidia.com"): 1},
    }


def test_the_gpu_map_shows_dra_nodes_with_each_device_held_by_its_claims_pod() -> None:
    engine = snapshot()
    cards = {c.name: c for c in node_cards(engine, node_rows(engine, POOL), POOL)}
    assert sorted(cards) == ["n1", "n2"]
    tiles = [(g.index, [(s.device_id, s.holder) for s in g.slots]) for g in cards["n1"].gpus]
    assert tiles == [
        (0, [("gpu.nvidia.com/n1/gpu-0", "default/p")]),
        (1, [("gpu.nvidia.com/n1/gpu-1", "")]),
    ]
    assert cards["n1"].pool == "a" and cards["n2"].gpus[0].holders == ()


def test_simulate_replays_claim_pods_with_their_devices() -> None:
    # one DRA node with 2 GPUs; two pending pods, each with a claim for 2 GPUs (claims a, b). Both fit by
    # CPU; the allocator gives the first (queue order: equal priority, name) both GPUs, the second finds
    # none free → 1 placed, 1 still pending at the end. Without the DRA objects both would be placed.
    import math

    from kubegpu.sim.replay_inputs import SimPod
    from kubegpu.sim.whatif import Scenario, run

    objs = [*o.gpu_classes(), *o.gpu_node("n1", 2),
            o.claim("a", o.request("gpu", count=2)), o.claim("b", o.request("gpu", count=2)),
            o.pod("pa", ("gpu", "a", "")), o.pod("pb", ("gpu", "b", ""))]  # fmt: skip
    snap = build_snapshot([("t", x) for x in objs])
    pending = [SimPod(p, 0.0, math.inf) for p in snap.pods if not p.node_name]
    with_dra = run(Scenario(list(snap.nodes), pending, False, dra=snap.dra), "default", None, 0, "dra")
    assert (with_dra.placed, with_dra.still_pending) == (1, 1)
    without = run(Scenario(list(snap.nodes), pending, False), "default", None, 0, "cpu only")
    assert (without.placed, without.still_pending) == (2, 0)
