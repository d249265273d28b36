"""The prefix class cache: a pod that some filter cannot sign (required pod anti-affinity, a DoNotSchedule
spread constraint) shares the verdicts of the filters before that one with the pods of its prefix class,
and runs the rest over the nodes those passed. It must decide exactly as evaluating every filter fresh:
upstream ``RunFilterPlugins`` (pkg/scheduler/framework/runtime/framework.go, v1.34) stops at a node's
first rejecting plugin, so a node a prefix filter rejects is never asked again, and a node it passes
gets the first rejection of the filters after it."""

from __future__ import annotations

from typing import Any

from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import Framework
from kubegpu.scheduler.registry import default_profile, in_tree_registry
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.testing.builders import make_node, make_pod

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def scheduler(objs: list[dict[str, Any]], cache: bool) -> tuple[Scheduler, list[Any]]:
    snap = build_snapshot([("t", o) for o in objs])
    fw = Framework(default_profile(), in_tree_registry())
    s = Scheduler(fw, ClusterState(snap.nodes, snap.pods), use_cache=cache)
    return s, snap.pending_pods()


def test_prefix_filters_then_anti_affinity_on_the_rest() -> None:
    """Three nodes, each rejected by a different filter for the second replica of a hostname
    anti-affinity app: n0 by its taint (TaintToleration, before the prefix ends), n1 by its one GPU that a
    running pod holds (NodeResourcesFit), n2 by the first replica placed there (InterPodAffinity, after).
    Hand-derived message: the three reasons sorted as text ("1 I…" < "1 node(s) d…" < "1 node(s) h…"),
    then preemption: n0 is UnschedulableAndUnresolvable (not helpful), n1 and n2 Unschedulable but holding
    only priority-0 pods against a priority-0 pod (no victims)."""
    objs = [
        make_node("n0").gpus(1).taint("nvidia.com/gpu", "present").obj(),
        make_node("n1").gpus(1).obj(),
        make_node("n2").gpus(2).obj(),  # room for both replicas: only the anti-affinity keeps the second off
        make_pod("holder").gpu(1).on("n1").obj(),
    ]
    for name in ("a-0", "a-1"):
        objs.append(make_pod(name).gpu(1).labels(app="a").pod_affinity(HOST, {"app": "a"}, anti=True).obj())
    s, pods = scheduler(objs, cache=True)
    first, second = (s.schedule_one(p) for p in sorted(pods, key=lambda p: p.name))
    assert first.node == "n2"
    assert second.node is None
    assert second.message == (
        "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, "
        "1 node(s) didn't match pod anti-affinity rules, 1 node(s) had untolerated taint(s). "
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod."
    )
    assert second.diagnosis is not None
    by_node = {
        s.cluster.nodes[i].name: s.framework.plugin_name(int(p))
        for i, p in enumerate(second.diagnosis.plugins)
    }
    assert by_node == {"n0": "TaintToleration", "n1": "NodeResourcesFit", "n2": "InterPodAffinity"}
    assert s._prefix_cache  # the shared prefix was used (the class of both replicas)


def test_prefix_cache_decides_as_fresh_evaluation() -> None:
    """A mixed queue over nodes that placements keep changing: plain pods, hostname anti-affinity and
    zone spread (DoNotSchedule) replicas, some with a pool selector or the taint's toleration. With the
    cache on, every placement, message and per-node verdict equals the uncached run's."""
    nodes = []
    for i in range(12):
        b = make_node(f"n{i:02d}").gpus(2).label(ZONE, f"z{i % 3}").label("pool", "a" if i % 2 else "b")
        if i % 4 == 0:
            b.taint("nvidia.com/gpu", "present")
        nodes.append(b.obj())
    queue = []
    for j in range(48):
        app = f"app-{j % 4}"
        pb = make_pod(f"p{j:02d}").gpu(1 + j % 2).labels(app=app)
        if j % 4 == 1:
            pb.pod_affinity(HOST, {"app": app}, anti=True)
        elif j % 4 == 2:
            pb.spread(ZONE, 1, {"app": app})
        if j % 3 == 0:
            pb.selector("pool", "a")
        if j % 5 == 0:
            pb.tolerate("nvidia.com/gpu", "present", "NoSchedule")
        queue.append(pb.obj())
    runs = []
    for cache in (True, False):
        s, pods = scheduler([*nodes, *queue], cache)
        out = []
        for p in sorted(pods, key=lambda p: p.name):
            r = s.schedule_one(p)
            verdicts = None if r.diagnosis is None else r.diagnosis.plugins.tolist()
            out.append((r.node, r.message, verdicts))
        runs.append(out)
        if cache:
            assert s._prefix_cache
    assert runs[0] == runs[1]
    assert any(n is None for n, _, _ in runs[0]) and any(n for n, _, _ in runs[0])


def test_a_new_class_starts_from_the_node_only_filters_of_pods_alike_but_for_requests() -> None:
    """Pods that differ only in their CPU and memory requests are each a class of their own (NodeResourcesFit
    signs the requests), yet their node-only filters (NodeUnschedulable, NodeName, TaintToleration,
    NodeAffinity) sign alike: a new class takes those filters' verdicts from their prefix class and runs
    the rest over the nodes they pass. Placements, messages and per-node verdicts equal the uncached run's,
    across placements and a cordon between pods (a Node change: the prefix class's rows refiltered)."""
    nodes = []
    for i in range(10):
        b = make_node(f"n{i}").gpus(2).capacity(cpu="16", memory="64Gi").label("pool", "a" if i % 2 else "b")
        if i % 3 == 0:
            b.taint("nvidia.com/gpu", "present")
        nodes.append(b.obj())
    queue = [
        make_pod(f"p{j:02d}")
        .gpu(1)
        .requests(cpu=f"{2 + j % 7}", memory=f"{4 + 3 * j}Gi")
        .selector("pool", "a")
        .obj()
        for j in range(16)
    ]
    runs = []
    for cache in (True, False):
        s, pods = scheduler([*nodes, *queue], cache)
        out = []
        for k, p in enumerate(sorted(pods, key=lambda p: p.name)):
            if k == 6:
                s.cluster.set_unschedulable(s.cluster.index["n3"], True)
            r = s.schedule_one(p)
            out.append((r.node, r.message, None if r.diagnosis is None else r.diagnosis.plugins.tolist()))
        runs.append(out)
        if cache:
            first = s.framework.first_pod_reader
            assert len(s._cache) == 16  # a class per pod
            assert [len(k[0]) for k in s._prefix_cache] == [first]  # and one prefix class for all of them
    assert runs[0] == runs[1]
    assert any(n is None for n, _, _ in runs[0]) and any(n for n, _, _ in runs[0])
