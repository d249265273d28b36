"""KubegpuCpuFrag's kept state and its fast paths (``CpuAwareFragmentation``): the cached per-node columns
against a recount, the float path's exact quotients, and one empty node computed per kind (FGD too). Split from
``test_cpu_frag.py`` (the plugin's scores), whose helpers (in ``builders``) these tests share; expected values
are worked out by hand in each docstring."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from kubegpu.model.objects import Pod
from kubegpu.model.resources import CPU, MEMORY
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import Handle, ReasonTable
from kubegpu.scheduler.gpu_shapes import pod_shape
from kubegpu.scheduler.plugins import cpu_frag as cplugin
from kubegpu.scheduler.plugins.fgd import FragmentationGradientDescent
from kubegpu.sim.openb import TraceNode, TracePod, to_node, to_pod
from kubegpu.sim.packing import packing_scheduler
from tests.sim.builders import CPU_FRAG, Bench, cpu_frag, node, pod, typical, use_cpu, use_memory


def test_cached_state_equals_a_recount_of_the_ledgers_gpus() -> None:
    """The plugin keeps each node's state as one column (``_layout``), renewed only when the node's
    version moved. After random placements (sharing, whole-GPU, part-GPU and CPU pods) and removals,
    every column equals a recount written out here from the ledger's free milli per GPU and the
    cluster's free CPU and memory: per GPU shape t, GPUs with free ≥ milli_t, less count_t, plus 1 (on
    any model: a model t may not use leaves t's weight out, through the last row), Σ free, Σ free on GPUs
    with free ≥ milli_t, Σ ⌊free / milli_t⌋, and the empty node's stranding max(0, (⌊GPUs · ⌊1000 /
    milli_t⌋ / count_t⌋ − min(⌊CPU / cpu_t⌋, ⌊memory / memory_t⌋)) · count_t · milli_t); last, the
    node's weight pattern: one for the G2 nodes, where the G2-only shape weighs, another for the rest."""
    target = typical(
        (1000, 1, 500, 0.3), (4000, 1, 1000, 0.3), (8000, 2, 1000, 0.1), (2000, 1, 250, 0.1),
        (3000, 4, 1000, 0.1), (3000, 0, 0, 0.1),
        models=(None, frozenset({"G2"}), None, None, None, None),
        memory_mib=(2048, 30_000, 60_000, 1024, 100_000, 4096),
    )  # fmt: skip
    nodes = [node(f"t{i}", 2 + 2 * (i % 4), cpu=16_000 + 8000 * i) for i in range(6)]
    nodes += [node(f"g{i}", 8, cpu=48_000, model="G2", memory_mib=131_072) for i in range(3)]
    b = Bench(nodes, CPU_FRAG, target)
    ours = cpu_frag(b.ledger, balance=0.25)
    rows = np.arange(len(nodes))
    cl, lg = b.cluster, b.ledger
    assert target.memory is not None
    memory_of = target.memory.tolist()
    shapes = ours._shapes
    assert sorted(shapes.tolist()) == [0, 1, 2, 3, 4]  # the GPU shapes, multi-GPU first
    assert sorted(target.count[shapes].tolist()[:2]) == [2, 4]

    def recount(k: int) -> list[int]:
        free, gpus = lg.gpu_left[k].tolist(), int(lg.gpu_count[k])
        cpu = int(cl.allocatable[k, cl.col[CPU]] - cl.requested[k, cl.col[CPU]])
        memory = int(cl.allocatable[k, cl.col[MEMORY]] - cl.requested[k, cl.col[MEMORY]])
        fit, above, units, empty = [], [], [], []
        for t in shapes.tolist():
            m, c = int(target.milli[t]), int(target.count[t])
            fit.append(1 + sum(v >= m for v in free) - c)
            above.append(sum(v for v in free if v >= m))
            units.append(sum(v // m for v in free))
            alloc_cpu, alloc_memory = (
                int(cl.allocatable[k, cl.col[CPU]]),
                int(cl.allocatable[k, cl.col[MEMORY]]),
            )
            fed = min(alloc_cpu // int(target.cpu[t]), alloc_memory // memory_of[t])
            empty.append(max(0, (gpus * (1000 // m) // c - fed) * c * m))
        return [cpu, memory, *fit, sum(free), *above, *units, *empty]

    rng = np.random.default_rng(3)
    placed: list[Pod] = []
    for step in range(80):
        if placed and rng.random() < 0.3:
            cl.remove_pod(placed.pop(int(rng.integers(len(placed)))))
        else:
            kind = int(rng.integers(4))
            gpus, milli = [(1, int(rng.choice([200, 500, 700]))), (1, 1000), (2, 500), (0, 0)][kind]
            p = pod(f"p{step}", gpus, milli, cpu=int(rng.choice([1000, 4000, 9000])), memory_mib=4096)
            if b.schedule(p)[0] is not None:
                placed.append(p)
        if step % 10 == 9 or step > 60:  # (after one change: one node renewed, by index)
            ours.node_delta(pod_shape(pod("probe", 1, 500)), rows)  # renews the nodes that moved
            for k in rows.tolist():
                assert ours._nodes[k, :-1].tolist() == recount(k), (step, k)
            patterns = {(n.model, int(ours._nodes[k, -1])) for k, n in enumerate(nodes)}
            assert len(patterns) == 2 and len({m for m, _ in patterns}) == 2
    assert len(placed) > 10


@pytest.mark.parametrize("memory_mib", [1 << 20, 1 << 24])
def test_copies_fed_are_exact_floor_quotients_in_the_float_path(memory_mib: int) -> None:
    """From ``FLOAT_FROM`` columns on, ``_fed`` divides in float64 where that is exact (every free amount
    plus divisor below 2**53); its copies must be the integer quotients: checked against Python's ``//``
    at a − 1, a and a + 1 for a = q · b, b each divisor, up to the node's memory (1 TiB; and 16 TiB,
    1.8 · 10¹⁶ milli-bytes, beyond 2**53: there a − 1 is no double and only integer division is exact),
    and with a negative free amount (an over-committed node) in the batch."""
    target = typical((8000, 1, 1000, 0.6), (3000, 1, 500, 0.4), memory_mib=(32 * 1024, 7 * 1024 + 3))
    b = Bench([node("n", 4, cpu=1 << 40, memory_mib=memory_mib)], CPU_FRAG, target)
    ours = cpu_frag(b.ledger)
    assert target.memory is not None
    cpu_div, memory_div = target.cpu.tolist(), target.memory.tolist()
    top = int(b.cluster.allocatable[0, b.cluster.col[MEMORY]])
    cpu, memory = [], []
    for q in (0, 1, 2, 7, 1000, 123_456, top // max(memory_div), top // min(memory_div)):
        for d in (-1, 0, 1):
            for bc, bm in zip(cpu_div, memory_div, strict=True):  # CPU binding, then memory binding
                # (free amounts never exceed allocatable: a pod only takes)
                cpu += [max(q * bc + d, 0) % (1 << 40), 1 << 40]
                memory += [top, min(max(q * bm + d, 0), top)]
    assert len(cpu) >= cplugin.FLOAT_FROM

    def fed(free_cpu: list[int], free_memory: list[int]) -> list[list[int]]:
        state = np.zeros((ours._nodes.shape[1], len(free_cpu)), dtype=np.int64)
        state[0], state[1] = free_cpu, free_memory
        out: list[list[int]] = ours._fed(state)[np.argsort(ours._shapes)].tolist()
        return out

    def floor_quotients(free_cpu: list[int], free_memory: list[int]) -> list[list[int]]:
        """Per shape, Python's integer ``//``: min(⌊free CPU / cpu⌋, ⌊free memory / memory⌋) per column."""
        return [
            [min(c // bc, m // bm) for c, m in zip(free_cpu, free_memory, strict=True)]
            for bc, bm in zip(cpu_div, memory_div, strict=True)
        ]

    assert fed(cpu, memory) == floor_quotients(cpu, memory)
    memory[0] = -5  # free memory below 0: integer division (floor towards −∞)
    assert fed(cpu, memory) == floor_quotients(cpu, memory)


def spy(compute: Callable[..., np.ndarray], sizes: list[int]) -> Callable[..., np.ndarray]:
    """``compute`` (the plugin's ``_delta``, or ``fgd_node_scores``) noting how many rows each call computes:
    the length of its argument ``rows``, however it is passed."""
    signature = inspect.signature(compute)

    def noted(*args: Any, **kwargs: Any) -> np.ndarray:
        sizes.append(len(signature.bind(*args, **kwargs).arguments["rows"]))
        return compute(*args, **kwargs)

    return noted


def alike_bench() -> Bench:
    """40 empty T4 nodes of 4 GPUs and 32 CPUs, 30 empty G2 nodes of 8 GPUs, 10 more T4 nodes alike but
    for their CPU (64), and 12 that are not empty: CPU, memory or one GPU's milli used."""
    target = typical(
        (1000, 1, 500, 0.4), (4000, 1, 1000, 0.3), (8000, 2, 1000, 0.2), (3000, 0, 0, 0.1),
        models=(None, frozenset({"G2"}), None, None),
        memory_mib=(2048, 30_000, 60_000, 4096),
    )  # fmt: skip
    nodes = [node(f"a{i}", 4, cpu=32_000) for i in range(40)]
    nodes += [node(f"g{i}", 8, cpu=64_000, model="G2") for i in range(30)]
    nodes += [node(f"c{i}", 4, cpu=64_000) for i in range(10)]
    nodes += [node(f"u{i}", 4, cpu=32_000) for i in range(12)]
    b = Bench(nodes, CPU_FRAG, target)
    for i in range(12):
        k = 80 + i
        if i % 3 == 0:
            use_cpu(b, k, 1000 * (i + 1))
        elif i % 3 == 1:
            use_memory(b, k, i)
        else:
            b.ledger.gpu_left[k, i % 4] = 1000 - 50 * i
            b.ledger._recount(np.array([k]))
    return b


ALIKE_PODS = (pod("s", 1, 300, cpu=2000), pod("w", 2, 1000), pod("o", 1, 1000), pod("c", 0, cpu=7000))


def test_many_rows_compute_one_empty_node_of_each_kind() -> None:
    """From ``GROUP_FROM`` rows on, ``node_delta`` computes one node per kind of the rows still empty
    (nothing requested, every GPU free) and gives it to the others: their Δ must be the bits each gets
    computed alone. On ``alike_bench``, for a sharing, a 2-GPU, a 1-GPU and a CPU pod: 15 nodes
    computed, not 92."""
    b = alike_bench()
    rows = np.arange(len(b.cluster))
    assert len(rows) >= cplugin.GROUP_FROM
    for p in ALIKE_PODS:
        shape = pod_shape(p)
        grouped = cpu_frag(b.ledger, balance=0.25)
        computed: list[int] = []
        grouped._delta = spy(grouped._delta, computed)  # type: ignore[method-assign]
        together = grouped.node_delta(shape, rows)
        assert computed == [12 + 3]  # the 12 busy nodes and one of each of the 3 empty kinds
        alone = cpu_frag(b.ledger, balance=0.25)
        assert np.array_equal(together, np.concatenate([alone.node_delta(shape, rows[[k]]) for k in rows]))
        assert len(np.unique(together)) > 1


def test_fgd_scores_many_rows_with_one_empty_node_of_each_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """FGD's scores (the FGD simulator's ``FGDScore``, hkust-adsl/kubernetes-scheduler-simulator), as
    ``node_delta``: from ``GROUP_FROM`` rows on, one node per kind of the rows still empty is scored and
    its score given to the others, the scores each node gets alone (a shape first met in a packing run
    is scored on every feasible node, mostly empty ones)."""
    from kubegpu.scheduler.plugins import fgd as fgd_module

    b = alike_bench()
    rows = np.arange(len(b.cluster))
    fgd = FragmentationGradientDescent({}, Handle(ReasonTable(), sharing=b.ledger))
    varied = 0
    for p in ALIKE_PODS:
        shape = pod_shape(p)
        computed: list[int] = []
        monkeypatch.setattr(fgd_module, "fgd_node_scores", spy(fgd_module.fgd_node_scores, computed))
        together = fgd.node_scores(shape, rows)
        monkeypatch.undo()
        assert computed == [12 + 3]
        b.ledger.last_share = None
        alone = np.concatenate([fgd.node_scores(shape, rows[[k]]) for k in rows])
        assert together.tolist() == alone.tolist()
        varied += len(np.unique(together)) > 1
    assert varied >= 2  # (a CPU pod changes no GPU: FGD scores it alike everywhere)


def test_a_shape_asking_no_cpu_scores_the_same_on_the_float_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A typical GPU shape asking 0 CPU divides free CPU by 0: numpy's integer ``x // 0`` is 0, its float
    ``x / 0.0`` inf, so ``_fed``'s float path (from ``FLOAT_FROM`` columns) must not run for it. On 40
    nodes (past ``FLOAT_FROM``) with a 1 × 125-milli 0-CPU shape in the target (an odd milli: the overflow
    does not cancel), 12 pods placed one by one land where the integer path (``FLOAT_FROM`` out of reach)
    puts them, with the same scores: the case a reviewer's differential against the previous code found."""
    trace = [
        TracePod("a", 0, 0, 1, 125),
        TracePod("b", 8000, 30000, 1, 1000),
        TracePod("c", 4000, 4096, 2, 1000),
    ]
    nodes = [
        TraceNode(f"n{i}", 32000 if i % 2 else 96000, 262144, 8 if i % 3 else 2, "V100M16") for i in range(40)
    ]

    def placements() -> list[tuple[str | None, dict[str, int]]]:
        cluster = ClusterState([to_node(n) for n in nodes])
        sched, _ = packing_scheduler(cluster, trace, CPU_FRAG, 1)
        return [
            (r.node, r.scores)
            for r in (sched.schedule_one(to_pod(trace[i % 3], f"p{i}"), preempt=False) for i in range(12))
        ]

    float_path = placements()
    monkeypatch.setattr(cplugin, "FLOAT_FROM", 1 << 30)
    assert float_path == placements()
    assert len({n for n, _ in float_path}) > 1
