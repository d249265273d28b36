"""The packing fast paths give the answers of the computation they stand in for (issue 25, item 6).

- ``NodeCache`` recomputes exactly the nodes that changed since a key was last asked for, dry runs
  included (hand-derived cases);
- every cached packing score equals the same plugin's score computed from scratch, on random packing
  states reached through the core (property test);
- the equivalence-class filter cache, which keeps the verdicts of filters that read only the Node object
  across pod changes, decides as the uncached scheduler does, cordons between pods included (property
  test).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kubegpu.model.objects import Pod
from kubegpu.scheduler.assembly import SchedulerSpec, assemble
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import BatchScorePlugin, CycleState
from kubegpu.scheduler.gpu_ledger import GpuShareLedger
from kubegpu.scheduler.node_cache import NodeCache
from kubegpu.scheduler.registry import in_tree_registry
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.sim.openb import to_node
from tests.sim.builders import Bench, node, pod, typical

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# the policies whose scores are cached per (pod shape, node): all but Random (FGD's and KubegpuCpuFrag's
# since their popularity-weighted sums are exact integers, ``GpuShareLedger.combine``)
CACHED = ["DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD", "KubegpuCpuFrag"]
TARGET = typical((4000, 1, 500, 0.4), (8000, 1, 1000, 0.3), (16_000, 2, 1000, 0.2), (2000, 0, 0, 0.1))


def small_cluster() -> ClusterState:
    return ClusterState([to_node(node(f"n{i}", 2)) for i in range(3)])


class Counting:
    """``compute`` for a NodeCache that records which rows it was asked for; the value is the node's
    requested CPU, so a stale value is visible."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.asked: list[list[int]] = []

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        self.asked.append(rows.tolist())
        out: np.ndarray = self.cluster.requested[rows, self.cluster.col["cpu"]].copy()
        return out


def test_node_cache_recomputes_only_the_nodes_that_changed() -> None:
    """3 nodes, nothing placed: the first ask computes all 3; asking again computes none; a pod of 4000
    milli-CPU on n1 makes n1 (and only n1) stale, and its value becomes 4000; another key starts empty."""
    cluster = small_cluster()
    cache = NodeCache(cluster, np.int64)
    compute = Counting(cluster)
    rows = np.arange(3, dtype=np.intp)
    assert cache.values("a", rows, compute).tolist() == [0, 0, 0]
    assert cache.values("a", rows, compute).tolist() == [0, 0, 0]
    assert compute.asked == [[0, 1, 2]]
    cluster.add_pod(pod("p", cpu=4000), 1)
    assert cache.values("a", rows, compute).tolist() == [0, 4000, 0]
    assert compute.asked == [[0, 1, 2], [1]]
    assert cache.values("a", rows[[0, 2]], compute).tolist() == [0, 0]  # a subset: no recompute
    cache.values("b", rows, compute)
    assert compute.asked[-1] == [0, 1, 2]


def test_a_value_cached_in_a_dry_run_is_not_served_after_a_real_change() -> None:
    """``what_if`` restores node generations, so a dry-run placement on n0 and a later real one both
    leave n0 at generation 1. Cached against generations, the dry run's value (1000 milli-CPU) would be
    served for the real state (3000); the per-node version never repeats, so it is recomputed."""
    cluster = small_cluster()
    cache = NodeCache(cluster, np.int64)
    compute = Counting(cluster)
    rows = np.arange(3, dtype=np.intp)
    with cluster.what_if():
        cluster.add_pod(pod("dry", cpu=1000), 0)
        dry_generation = int(cluster.generation[0])
        assert cache.values("a", rows, compute).tolist() == [1000, 0, 0]
    cluster.add_pod(pod("real", cpu=3000), 0)
    assert int(cluster.generation[0]) == dry_generation  # the collision the version guards against
    assert cache.values("a", rows, compute).tolist() == [3000, 0, 0]


def random_nodes(rng: np.random.Generator, n: int) -> list[Any]:
    return [
        node(
            f"n{i}",
            int(rng.choice([1, 2, 4, 8])),
            cpu=int(rng.choice([16_000, 32_000, 96_000])),
            model=str(rng.choice(["T4", "V100"])),
            memory_mib=int(rng.choice([65_536, 262_144])),
        )
        for i in range(n)
    ]


def random_pod(rng: np.random.Generator, name: str) -> Pod:
    kind = int(rng.integers(4))
    cpu = int(rng.choice([1000, 4000, 8000, 24_000]))
    spec = frozenset({"V100"}) if rng.integers(5) == 0 else None
    memory = int(rng.choice([1024, 30_000]))
    if kind == 0:
        return pod(name, 0, 0, cpu=cpu, memory_mib=memory)
    if kind == 1:
        return pod(name, 1, int(rng.choice([250, 500, 700])), cpu=cpu, spec=spec, memory_mib=memory)
    return pod(name, int(rng.choice([1, 2, 4])), 1000, cpu=cpu, spec=spec, memory_mib=memory)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(CACHED))
# seed 1333 draws nodes of at most 3 GPUs and a 4-GPU pod: GpuClustering's kind column for 4 did not
# exist and the score raised IndexError (found by hypothesis; kept so it runs every time)
@example(1333, "GpuClustering")
def test_cached_packing_scores_equal_scores_computed_from_scratch(seed: int, policy: str) -> None:
    """Random nodes and pods, scheduled through the core (so the cache sees placements between asks);
    after each, three probe shapes are scored over every node by the policy's plugin (cached), by a new
    instance of it (nothing cached) and, node by node, by the scalar score of one more new instance."""
    rng = np.random.default_rng(seed)
    b = Bench(random_nodes(rng, 6), policy, TARGET, seed=seed % 1000)
    fw = b.scheduler.framework
    (plugin,) = fw.score_plugins
    assert isinstance(plugin, BatchScorePlugin)
    spec = next(s for s in fw.profile.plugins if s.name == plugin.name)
    factory = in_tree_registry()[spec.name]

    def new_instance() -> BatchScorePlugin:
        made = factory(spec.args, fw.handle)
        assert isinstance(made, BatchScorePlugin)
        return made

    rows = np.arange(len(b.cluster), dtype=np.intp)
    probes = [random_pod(rng, f"probe{j}") for j in range(3)]
    for i in range(25):
        b.schedule(random_pod(rng, f"p{i}"))
        fresh = new_instance()
        for q in probes:
            state = CycleState()
            cached = plugin.score_batch(state, q, b.cluster, rows)
            assert cached.tolist() == fresh.score_batch(state, q, b.cluster, rows).tolist(), (i, q.name)
            one = new_instance()
            scalar = [one.score(state, q, b.cluster.view(int(k))) for k in rows]
            assert cached.tolist() == scalar, (i, q.name)


def scheduler(nodes: list[Any], use_cache: bool) -> Scheduler:
    cluster = ClusterState([to_node(n) for n in nodes])
    ledger = GpuShareLedger(cluster, TARGET)
    spec = SchedulerSpec("packing", policy="FGD", seed=1, use_cache=use_cache, tie_break="first")
    return assemble(spec, cluster, sharing=ledger)


@SETTINGS
@given(st.integers(0, 2**32 - 1))
def test_filter_cache_with_node_only_verdicts_decides_as_the_uncached_scheduler(seed: int) -> None:
    """Pods of a few shapes (so classes recur) with cordons and uncordons between them: the same node,
    message and GPUs as a scheduler that filters every node afresh each cycle."""
    rng = np.random.default_rng(seed)
    nodes = random_nodes(rng, 5)
    cached, fresh = scheduler(nodes, True), scheduler(nodes, False)
    shapes = [random_pod(rng, f"shape{j}") for j in range(4)]
    for i in range(30):
        if rng.integers(4) == 0:
            idx, cordon = int(rng.integers(len(nodes))), bool(rng.integers(2))
            cached.cluster.set_unschedulable(idx, cordon)
            fresh.cluster.set_unschedulable(idx, cordon)
        like = shapes[int(rng.integers(len(shapes)))]
        p = dataclasses.replace(like, name=f"p{i}")
        a, b = cached.schedule_one(p, preempt=False), fresh.schedule_one(p, preempt=False)
        assert (a.node, a.message) == (b.node, b.message), i
    ledgers = [s.framework.filter_plugins[-1].ledger for s in (cached, fresh)]  # type: ignore[attr-defined]
    assert ledgers[0].held == ledgers[1].held
