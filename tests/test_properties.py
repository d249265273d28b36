"""Properties of the core on random clusters (hypothesis):
- every batch (vectorised) filter and score gives the scalar reference's answer on every node;
- scheduling never puts any node over its allocatable for any resource;
- a pod reported schedulable on node X passes every filter on X;
- the equivalence-class cache changes no decision.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import BatchFilterPlugin, BatchScorePlugin, CycleState, Framework
from kubegpu.scheduler.registry import default_profile, in_tree_registry
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.scheduler.status import Code
from kubegpu.testing.builders import make_node, make_pod

POOLS = ["train", "infer", "dev"]
TAINTS = [
    ("nvidia.com/gpu", "present", "NoSchedule"),
    ("spot", "true", "PreferNoSchedule"),
    ("maint", "", "NoExecute"),
]


@st.composite
def nodes(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(1, 8))):
        b = make_node(f"n{i}").capacity(
            cpu=str(draw(st.sampled_from([4, 16, 64]))), pods=str(draw(st.integers(2, 6)))
        )
        gpus = draw(st.sampled_from([0, 1, 2, 4, 8]))
        if gpus:
            b.gpus(gpus)
        if draw(st.booleans()):
            b.label("pool", draw(st.sampled_from(POOLS)))
        for t in draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique=True)):
            b.taint(*t)
        if draw(st.integers(0, 9)) == 0:
            b.cordon()
        out.append(b.obj())
    return out


@st.composite
def pods(draw: st.DrawFn, n: int, prefix: str) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        b = make_pod(f"{prefix}{i}").requests(cpu=str(draw(st.sampled_from([0, 1, 2, 8]))))
        gpus = draw(st.sampled_from([0, 0, 1, 2, 4, 8]))
        if gpus:
            b.gpu(gpus)
        if draw(st.booleans()):
            b.tolerate("nvidia.com/gpu", "present", "NoSchedule")
        if draw(st.integers(0, 3)) == 0:
            b.tolerate("", operator="Exists")
        choice = draw(st.integers(0, 5))
        if choice == 1:
            b.selector("pool", draw(st.sampled_from(POOLS)))
        elif choice == 2:
            b.require([("pool", draw(st.sampled_from(["In", "NotIn"])), [draw(st.sampled_from(POOLS))])])
        elif choice == 3:
            b.require([("pool", "DoesNotExist", [])], [("pool", "Exists", [])])
        elif (
            choice >= 4
        ):  # pinned by name (a label of one value per node, or the node's name field); n9 never exists
            names = draw(st.lists(st.sampled_from(["n0", "n1", "n3", "n9"]), min_size=1, max_size=3))
            op = draw(st.sampled_from(["In", "NotIn"]))
            if choice == 4:
                b.require([("kubernetes.io/hostname", op, names)])
            else:
                b.require([], fields=[("metadata.name", op, names)])
        if draw(st.integers(0, 5)) == 0:
            b.host_port(8080)
        b.priority(draw(st.sampled_from([0, 10, 100])))
        out.append(b.obj())
    return out


def build(
    node_objs: list[dict[str, Any]], pod_objs: list[dict[str, Any]], *, cache: bool = True
) -> tuple[Scheduler, list[Any]]:
    snap = build_snapshot([("h", o) for o in node_objs + pod_objs])
    assert not snap.errors
    fw = Framework(default_profile(), in_tree_registry(), snap.pdbs)
    return Scheduler(fw, ClusterState(snap.nodes, snap.pods), seed=1, use_cache=cache), snap.pods


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(nodes(), st.data())
def test_batch_filters_and_scores_equal_the_scalar_reference(
    node_objs: list[dict[str, Any]], data: st.DataObject
) -> None:
    scheduler, _ = build(node_objs, [])
    fw, cluster = scheduler.framework, scheduler.cluster
    for pod_obj in data.draw(pods(3, "p")):
        scheduler.schedule_one(build([], [pod_obj])[1][0])  # fill the cluster a little, through the core
    rows = np.arange(len(cluster), dtype=np.intp)
    for pod in build([], data.draw(pods(4, "q")))[1]:
        state = CycleState()
        fw.run_pre_filter(state, pod, cluster)
        for plugin in fw.filter_plugins:
            if not isinstance(plugin, BatchFilterPlugin) or plugin.name in state.skip_filter:
                continue
            codes, reason_ids = plugin.filter_batch(state, pod, cluster, rows)
            for i in rows:
                scalar = plugin.filter(state, pod, cluster.view(int(i)))
                assert int(codes[i]) == int(scalar.code), (plugin.name, i)
                # same reason values (kind and data), hence the same text
                assert fw.reason_values(int(reason_ids[i])) == scalar.reasons, (plugin.name, i)
                assert fw.reason_strings(int(reason_ids[i])) == scalar.texts(), (plugin.name, i)
        for plugin in fw.score_plugins:  # PreScore first, as run_scores does (spread and affinity need it)
            if plugin.pre_score(state, pod, cluster, rows).code == Code.SKIP:
                continue
            if isinstance(plugin, BatchScorePlugin):
                batch = plugin.score_batch(state, pod, cluster, rows)
                assert batch.tolist() == [plugin.score(state, pod, cluster.view(int(i))) for i in rows], (
                    plugin.name
                )


@SETTINGS
@given(nodes(), st.data())
def test_scheduling_never_exceeds_allocatable_and_chosen_nodes_pass_every_filter(
    node_objs: list[dict[str, Any]], data: st.DataObject
) -> None:
    scheduler, pending = build(node_objs, data.draw(pods(12, "p")))
    cluster = scheduler.cluster
    for pod in pending:
        result = scheduler.schedule_one(pod, assume=False)
        if result.scheduled:
            idx = cluster.index[result.node]
            state = CycleState()
            scheduler.framework.run_pre_filter(state, pod, cluster)
            assert scheduler.framework.run_filters(state, pod, cluster.view(idx)).is_success
            cluster.add_pod(pod, idx)
        assert (cluster.requested <= cluster.allocatable).all() or not result.scheduled
        assert (cluster.pod_count <= cluster.max_pods).all()


@SETTINGS
@given(nodes(), st.data())
def test_equivalence_cache_changes_no_decision(node_objs: list[dict[str, Any]], data: st.DataObject) -> None:
    pod_objs = data.draw(pods(10, "p"))
    pod_objs += [
        dict(o, metadata={**o["metadata"], "name": o["metadata"]["name"] + "-twin"}) for o in pod_objs
    ]
    cached, pending = build(node_objs, pod_objs, cache=True)
    fresh, _ = build(node_objs, pod_objs, cache=False)
    for pod in pending:
        a, b = cached.schedule_one(pod), fresh.schedule_one(pod)
        assert (a.node, a.message, a.nominated_node) == (b.node, b.message, b.nominated_node)


def free_matches(cluster: ClusterState) -> bool:
    """``ClusterState.free`` by its definition: allocatable − requested, and the pods column 1000 × the
    pods the node can still take."""
    want = cluster.allocatable - cluster.requested
    want[:, cluster.col["pods"]] = (cluster.max_pods - cluster.pod_count) * 1000
    return bool((cluster.free == want).all())


@SETTINGS
@given(nodes(), st.data())
def test_free_matrix_stays_allocatable_minus_requested_through_placements_removals_and_rollbacks(
    node_objs: list[dict[str, Any]], data: st.DataObject
) -> None:
    scheduler, pending = build(node_objs, data.draw(pods(12, "p")))
    cluster = scheduler.cluster
    assert free_matches(cluster)
    placed = []
    for pod in pending:  # with preemption: its dry runs remove and restore pods through the journal
        if scheduler.schedule_one(pod).scheduled:
            placed.append(pod)
        assert free_matches(cluster)
    mark = cluster.mark()
    for pod in placed[::2]:
        cluster.remove_pod(pod)
        assert free_matches(cluster)
    cluster.rollback(mark)
    assert free_matches(cluster)
