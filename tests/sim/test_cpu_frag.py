"""KubegpuCpuFrag (``CpuAwareFragmentation``): FGD's score over a fragment measure that also counts the
GPU a node's free CPU and memory cannot feed. Expected values are worked out by hand in each docstring; the small
clusters are made up for the case (T4-labelled nodes, as in the other simulator tests)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from kubegpu.errors import ConfigError
from kubegpu.model.resources import MEMORY
from kubegpu.scheduler.framework import CycleState, Handle, ReasonTable
from kubegpu.scheduler.gpu_ledger import GpuShareLedger
from kubegpu.scheduler.gpu_shapes import TypicalPods, pod_shape
from kubegpu.scheduler.plugins.cpu_frag import CpuAwareFragmentation, model_scarcity, whole_node_share
from kubegpu.scheduler.plugins.fgd import FragmentationGradientDescent
from kubegpu.sim.openb import to_node
from kubegpu.sim.packing import run_packing
from tests.sim.builders import CPU_FRAG, Bench, cpu_frag, node, pod, trace, typical, use_cpu, use_memory

# one typical shape: 1 whole GPU with 8 CPU (popularity 1)
ONE_GPU_8_CPU = typical((8000, 1, 1000, 1.0))
# one typical shape: 1 whole GPU with 8 CPU and 32 GiB
ONE_GPU_8_CPU_32_GIB = typical((8000, 1, 1000, 1.0), memory_mib=(32 * 1024,))


def first_ties(b: Bench) -> Bench:
    b.scheduler.tie_break = "first"  # as the packing runs: ties to the first node in order
    return b


def test_gpu_that_cpu_cannot_feed_counts_as_fragment() -> None:
    """A node of 4 GPUs and 64 CPUs, 48 CPUs requested, shape {1 GPU, 8 CPU}: 4 copies by GPU, 16/8 = 2
    by CPU, so 2 GPUs (2000 milli) are stranded; λ = 0.5 → 1000. Empty, the node fed all 4 copies (64/8 =
    8), so all 1000 is beyond its empty-state stranding. FGD sees the shape fit and nothing too small: 0."""
    b = Bench([node("n", 4, cpu=64_000)], CPU_FRAG, ONE_GPU_8_CPU)
    use_cpu(b, 0, 48_000)
    row = np.array([0])
    assert float(cpu_frag(b.ledger).frag(row)[0]) == pytest.approx(1000)
    assert float(b.ledger.node_frag(row)[0]) == 0
    assert float(cpu_frag(b.ledger, 1.0).frag(row)[0]) == pytest.approx(2000)


def test_a_nodes_own_cpu_per_gpu_is_not_fragment() -> None:
    """The same shape on an EMPTY node of 4 GPUs and 16 CPUs: 2 copies stranded, 1000 at λ = 0.5, but
    that is the node's hardware (its empty-state stranding), so the measure is 0. After an 8-CPU pod
    without GPU, 8 CPUs feed 1 copy: 3 stranded, 1500, 500 beyond the empty state."""
    b = Bench([node("n", 4, cpu=16_000)], CPU_FRAG, ONE_GPU_8_CPU)
    row = np.array([0])
    assert float(cpu_frag(b.ledger).frag(row)[0]) == 0
    use_cpu(b, 0, 8000)
    assert float(cpu_frag(b.ledger).frag(row)[0]) == pytest.approx(500)


def test_gpu_that_memory_cannot_feed_counts_as_fragment() -> None:
    """A node of 4 GPUs, 64 CPUs and 128 GiB, 88 GiB requested, shape {1 GPU, 8 CPU, 32 GiB}: 4 copies
    by GPU, 8 by CPU, ⌊40/32⌋ = 1 by memory, so 3 GPUs are stranded: 0.5 · 3000 = 1500. Empty, 128/32 = 4
    copies by memory fed all 4. FGD, and ours with a target workload that gives no memory: 0."""
    nodes = [node("n", 4, cpu=64_000, memory_mib=128 * 1024)]
    b = Bench(nodes, CPU_FRAG, ONE_GPU_8_CPU_32_GIB)
    use_memory(b, 0, 88)
    row = np.array([0])
    assert float(cpu_frag(b.ledger).frag(row)[0]) == pytest.approx(1500)
    assert float(b.ledger.node_frag(row)[0]) == 0
    unknown = Bench(nodes, CPU_FRAG, ONE_GPU_8_CPU)
    use_memory(unknown, 0, 88)
    assert float(cpu_frag(unknown.ledger).frag(row)[0]) == 0


def test_a_shape_the_free_memory_cannot_hold_does_not_fit() -> None:
    """The same node with 112 of 128 GiB requested: 16 GiB cannot hold the shape's 32, so the shape does
    not fit and all 4000 free milli are its fragment (FGD's rule for a shape that does not fit; no
    stranding is added on top). FGD checks CPU only: the shape fits, 0."""
    b = Bench([node("n", 4, cpu=64_000, memory_mib=128 * 1024)], CPU_FRAG, ONE_GPU_8_CPU_32_GIB)
    use_memory(b, 0, 112)
    row = np.array([0])
    assert float(cpu_frag(b.ledger).frag(row)[0]) == pytest.approx(4000)
    assert float(b.ledger.node_frag(row)[0]) == 0


def test_a_shape_asking_no_memory_fits_a_node_with_none_left() -> None:
    """A shape of memory 0 (pods without a memory request) on a node whose memory is all requested: it
    still fits and memory feeds any number of its copies, so the measure is FGD's: 0."""
    b = Bench(
        [node("n", 4, cpu=64_000, memory_mib=128 * 1024)],
        CPU_FRAG,
        typical((8000, 1, 1000, 1.0), memory_mib=(0,)),
    )
    use_memory(b, 0, 128)
    assert float(cpu_frag(b.ledger).frag(np.array([0]))[0]) == 0


def test_memory_heavy_gpu_pod_goes_to_the_memory_rich_node() -> None:
    """Nodes a (4 GPUs, 64 CPU, 128 GiB) and b (4 GPUs, 64 CPU, 512 GiB), shape {1 GPU, 8 CPU, 32 GiB};
    pod 1 GPU, 8 CPU, 64 GiB. FGD: both keep 3 free GPUs and the CPU for the shape, Δ = 0, the tie goes
    to a. Ours: a after has 64 GiB, 2 copies by memory for 3 by GPU: 1 stranded, 500, Δ = −500, score
    int(100·σ(−0.5)) = 37; b keeps 448 GiB (14 copies): Δ = 0, score 50 → b."""
    nodes = [node("a", 4, cpu=64_000, memory_mib=128 * 1024), node("b", 4, cpu=64_000, memory_mib=512 * 1024)]
    heavy = pod("p", 1, 1000, cpu=8000, memory_mib=64 * 1024)
    assert first_ties(Bench(nodes, "FGD", ONE_GPU_8_CPU_32_GIB)).schedule(heavy)[0] == "a"
    ours = first_ties(Bench(nodes, CPU_FRAG, ONE_GPU_8_CPU_32_GIB))
    scores = cpu_frag(ours.ledger).score_batch(CycleState(), heavy, ours.cluster, np.array([0, 1]))
    assert scores.tolist() == [37, 50]
    assert ours.schedule(heavy) == ("b", (0,))


def test_partial_gpus_count_in_copies() -> None:
    """Shape {1 GPU × 300 milli, 2 CPU}; free [1000, 700, 200], 4 of 40 CPUs free. By GPU: ⌊1000/300⌋
    + ⌊700/300⌋ + 0 = 3 + 2 = 5 copies; by CPU 2: 3 stranded × 300 = 900, ×0.5 = 450 (empty: 9 copies
    by GPU, 20 by CPU, none stranded); plus FGD's part, the 200 on the GPU too small for the shape: 650
    unrounded, which the defaults give (the shape takes 1 of the node's 3 GPUs: no whole-node demand, q =
    0). Rounded to a fixed 500-milli quantum the CPU part is 500: 700."""
    b = Bench([node("n", 3, cpu=40_000)], CPU_FRAG, typical((2000, 1, 300, 1.0)))
    use_cpu(b, 0, 36_000)
    b.ledger.gpu_left[0] = [1000, 700, 200]
    b.ledger._recount(np.array([0]))
    assert float(cpu_frag(b.ledger, quantum=1).frag(np.array([0]))[0]) == pytest.approx(650)
    assert float(cpu_frag(b.ledger).frag(np.array([0]))[0]) == pytest.approx(650)
    assert float(cpu_frag(b.ledger, quantum=500).frag(np.array([0]))[0]) == pytest.approx(700)


def test_small_cpu_part_rounds_away() -> None:
    """Shape {1 GPU × 300 milli, 2 CPU}, free [1000, 1000, 1000] and 10 of 40 CPUs: 9 copies by GPU, 5
    by CPU, 4 stranded × 300 × 0.5 = 600 → one 500 quantum (600/500 = 1.2). With 14 CPUs free: 7 by
    CPU, 2 stranded, 300 → 300/500 = 0.6 → 500 as well; with 16 free: 8 by CPU, 150 → 0.3 → 0. With a
    1000-milli quantum: 600 → 1000, 300 → 0."""
    b = Bench([node("n", 3, cpu=40_000)], CPU_FRAG, typical((2000, 1, 300, 1.0)))
    row = np.array([0])
    for free, q500, q1000 in ((10_000, 500, 1000), (14_000, 500, 0), (16_000, 0, 0)):
        use_cpu(b, 0, 40_000 - free)
        assert float(cpu_frag(b.ledger, quantum=500).frag(row)[0]) == q500
        assert float(cpu_frag(b.ledger, quantum=1000).frag(row)[0]) == q1000


def test_cpu_only_pod_goes_where_cpu_is_to_spare() -> None:
    """Nodes a (4 GPUs, 16 CPU) and b (4 GPUs, 64 CPU), shape {1 GPU, 8 CPU}; an 8-CPU pod without GPU.
    FGD: the shape still fits both afterwards, Δ = 0 on both, score 50, the tie goes to a.
    Ours: a has 0 now (its empty-state stranding, above); after, 8 CPU feed 1 copy of 4 → 500 beyond
    it: Δ = −500, score int(100·σ(−0.5)) = 37. b: 64 then 56 CPU feed all 4 copies, Δ = 0, score 50
    → b."""
    nodes = [node("a", 4, cpu=16_000), node("b", 4, cpu=64_000)]
    assert first_ties(Bench(nodes, "FGD", ONE_GPU_8_CPU)).schedule(pod("p", 0, cpu=8000))[0] == "a"
    ours = first_ties(Bench(nodes, CPU_FRAG, ONE_GPU_8_CPU))
    scores = cpu_frag(ours.ledger).score_batch(
        CycleState(), pod("p", 0, cpu=8000), ours.cluster, np.array([0, 1])
    )
    assert scores.tolist() == [37, 50]
    assert ours.schedule(pod("p", 0, cpu=8000))[0] == "b"


def test_cpu_heavy_gpu_pod_goes_to_the_cpu_rich_node() -> None:
    """Nodes a (4 GPUs, 32 CPU) and b (4 GPUs, 64 CPU), shape {1 GPU, 8 CPU}; pod 1 GPU + 16 CPU.
    FGD: afterwards both have 3 free GPUs and ≥ 8 CPU, Δ = 0 on both, the tie goes to a.
    Ours: a now 4 copies by GPU and 4 by CPU (0, as empty); after, 3 by GPU and 16/8 = 2 by CPU → 1
    stranded, 500: Δ = −500, score 37. b: 48 CPU after → 6 copies ≥ 3, Δ = 0, score 50 → b, GPU 0."""
    nodes = [node("a", 4, cpu=32_000), node("b", 4, cpu=64_000)]
    heavy = pod("p", 1, 1000, cpu=16_000)
    assert first_ties(Bench(nodes, "FGD", ONE_GPU_8_CPU)).schedule(heavy)[0] == "a"
    assert first_ties(Bench(nodes, CPU_FRAG, ONE_GPU_8_CPU)).schedule(heavy) == ("b", (0,))


def test_unfed_gpu_is_what_free_cpu_and_memory_cannot_feed_at_the_workloads_ratio() -> None:
    """Shape {1 GPU, 8 CPU, 32 GiB}: the target asks 8 milli-CPU and 32 GiB per 1000 milli-GPU. A node of
    4 GPUs, 64 CPUs and 128 GiB with 48 CPUs requested: 16 CPUs feed 2000 milli, 128 GiB feed all 4000:
    2000 unfed. With 88 GiB requested too, 40 GiB feed 1250: 2750. Without memory in the target, memory
    is not counted: 2000. Empty, the node feeds all its GPUs: 0."""
    nodes = [node("n", 4, cpu=64_000, memory_mib=128 * 1024)]
    b = Bench(nodes, CPU_FRAG, ONE_GPU_8_CPU_32_GIB)
    row = np.array([0])

    def unfed(target: TypicalPods) -> float:
        lg = b.ledger
        ours = cpu_frag(GpuShareLedger(b.cluster, target))
        free = np.stack((lg.cpu_left(row), lg.left(row, MEMORY)))
        return float(ours.unfed(lg.counts(row)[2], free)[0])

    assert unfed(ONE_GPU_8_CPU_32_GIB) == 0
    use_cpu(b, 0, 48_000)
    assert unfed(ONE_GPU_8_CPU_32_GIB) == pytest.approx(2000)
    use_memory(b, 0, 88)
    assert unfed(ONE_GPU_8_CPU_32_GIB) == pytest.approx(2750)
    assert unfed(ONE_GPU_8_CPU) == pytest.approx(2000)


def test_cpu_light_pod_goes_where_cpu_cannot_feed_the_gpus() -> None:
    """Nodes b (4 GPUs, 64 CPU) first and a (4 GPUs, 16 CPU), shape {1 GPU, 8 CPU}; pod 1 GPU + 2 CPU.
    FGD: both keep the shape fitting, Δ = 0, the tie goes to b. The stranding term is 0 on both (a's
    copies fed by CPU go from 2 of 4 to 1 of 3, its empty-state stranding of 2 either way), so at β = 0
    the tie stays. With β = 0.25: the target asks 8 milli-CPU per milli-GPU; a's 16 CPU feed 2000 of its
    4000 milli (2000 unfed), after 14 CPU feed 1750 of 3000 (1250 unfed): the charge is 0.25 · (1250 −
    2000) = −187.5, Δ = 187.5, score int(100·σ(0.1875)) = 54; b feeds everything before and after: 50
    → a. The pod takes a GPU that a's CPU could not have fed, and b keeps its CPU for pods that need it."""
    nodes = [node("b", 4, cpu=64_000), node("a", 4, cpu=16_000)]
    light = pod("p", 1, 1000, cpu=2000)
    rows = np.array([0, 1])
    assert first_ties(Bench(nodes, "FGD", ONE_GPU_8_CPU)).schedule(light)[0] == "b"
    ours = first_ties(Bench(nodes, CPU_FRAG, ONE_GPU_8_CPU))
    assert cpu_frag(ours.ledger).score_batch(CycleState(), light, ours.cluster, rows).tolist() == [50, 50]
    balanced = cpu_frag(ours.ledger, balance=0.25)
    assert balanced.score_batch(CycleState(), light, ours.cluster, rows).tolist() == [50, 54]
    assert ours.schedule(light)[0] == "a"


def random_state(
    target: TypicalPods,
    nodes: int,
    seed: int,
    memory_gib: Callable[[int], int] | None = None,
    milli_cpu: Callable[[int], int] | None = None,
) -> tuple[Bench, np.ndarray]:
    """8-GPU nodes with 8, 10, 12 … CPUs and free milli per GPU drawn from a few values; when given, node
    k's memory (GiB) and CPU (milli) marked requested: ``memory_gib(k)``, ``milli_cpu(k)``."""
    b = Bench([node(f"n{i}", 8, cpu=8_000 + 2000 * i) for i in range(nodes)], CPU_FRAG, target)
    rng = np.random.default_rng(seed)
    b.ledger.gpu_left[:] = rng.choice([0, 120, 500, 730, 1000], size=b.ledger.gpu_left.shape)
    rows = np.arange(nodes)
    b.ledger._recount(rows)
    for k in range(nodes):
        if memory_gib is not None:
            use_memory(b, k, memory_gib(k))
        if milli_cpu is not None:
            use_cpu(b, k, milli_cpu(k))
    return b, rows


def test_zero_weight_is_fgd() -> None:
    """λ = 0 (and β = 0) leaves FGD's measure: the same scores for sharing, whole-GPU and CPU pods on a
    random state."""
    target = typical((1000, 1, 500, 0.4), (4000, 1, 1000, 0.3), (8000, 2, 1000, 0.1), (2000, 0, 0, 0.2))
    b, rows = random_state(target, 20, 5)
    fgd = FragmentationGradientDescent({}, Handle(ReasonTable(), sharing=b.ledger))
    zero = cpu_frag(b.ledger, 0.0)
    for p in (pod("s", 1, 400, cpu=3000), pod("w", 2, 1000, cpu=6000), pod("c", 0, cpu=5000)):
        assert zero.score_batch(CycleState(), p, b.cluster, rows).tolist() == (
            fgd.score_batch(CycleState(), p, b.cluster, rows).tolist()
        )


def test_shapes_alike_but_for_their_models_are_measured_as_one() -> None:
    """Shapes that differ only in the GPU models they may use (as the gpuspec traces' do) share one state
    (``_layout``), each node's model weighing only the shapes that may use it. With λ = 0 (β = 0, no
    reserve charge) the scores must still be FGD's, whose measure counts every shape on its own
    (``GpuShareLedger.combine``: a shape not allowed on the node's model never fits there): on T4, G2 and
    A100 nodes, with free milli per GPU and CPU drawn at random."""
    target = typical(
        (4000, 1, 1000, 0.3), (4000, 1, 1000, 0.2), (4000, 1, 1000, 0.1), (1000, 1, 500, 0.2),
        (1000, 1, 500, 0.1), (2000, 0, 0, 0.1),
        models=(None, frozenset({"G2"}), frozenset({"T4", "A100"}), frozenset({"A100"}), None, None),
    )  # fmt: skip
    models = ("T4", "G2", "A100")
    b = Bench(
        [node(f"n{i}", 4, cpu=6_000 + 1000 * i, model=models[i % 3]) for i in range(18)], CPU_FRAG, target
    )
    rng = np.random.default_rng(11)
    b.ledger.gpu_left[:] = rng.choice([0, 250, 500, 1000], size=b.ledger.gpu_left.shape)
    rows = np.arange(18)
    b.ledger._recount(rows)
    for k in rows.tolist():
        use_cpu(b, k, int(rng.integers(0, 6)) * 1000)
    zero = cpu_frag(b.ledger, 0.0, reserve=0.0)
    assert len(zero._shapes) == 2 and zero._by_pattern is not None  # two groups, three weight patterns
    fgd = FragmentationGradientDescent({}, Handle(ReasonTable(), sharing=b.ledger))
    for p in (pod("s", 1, 500, cpu=1000), pod("w", 1, 1000, cpu=2000), pod("c", 0, cpu=3000)):
        ours = zero.score_batch(CycleState(), p, b.cluster, rows).tolist()
        assert ours == fgd.score_batch(CycleState(), p, b.cluster, rows).tolist()
        assert len(set(ours)) > 1


def test_incremental_forms_equal_recomputing_the_node() -> None:
    """The sharing-pod and whole-GPU shortcuts against the measure recomputed from the GPUs after (a
    2 × 500 pod is no GPU shape, ``gpu_shapes.gpu_request_problem``: GpuShare's PreFilter refuses it before
    any Score, ``test_gpu_count_annotation``), with shapes asking for memory (each node's memory a
    random amount requested and 4–8 of its CPUs left, so that copies go unfed), with the balance
    charge written out here from its definition: β · the change of max(0, free milli-GPU − free CPU /
    c, free milli-GPU − free memory / m), c and m the target's Σ p·cpu and Σ p·memory over Σ p·GPUs·milli,
    and β = 0.25 · (1 − w): the 8-GPU shape (whole-node on these 8-GPU nodes) carries 0.05 · 8000 = 400 of
    the 200 + 300 + 200 + 50 + 400 = 1150 milli-GPU of demand."""
    target = typical(
        (1000, 1, 500, 0.4), (4000, 1, 1000, 0.3), (8000, 2, 1000, 0.1), (2000, 1, 250, 0.2),
        (16_000, 8, 1000, 0.05),
        memory_mib=(2048, 30_000, 60_000, 1024, 100_000),
    )  # fmt: skip
    # 4–8 CPUs left on each node: copies go unfed
    b, rows = random_state(target, 25, 9, lambda k: 100 + 20 * k % 150, lambda k: 2000 * k + 1000 * (k % 5))
    ours = cpu_frag(b.ledger, balance=0.25)
    cpu = b.ledger.cpu_left(rows)
    memory_free = b.ledger.left(rows, MEMORY)
    memory = memory_free - pod("s").requests[MEMORY]
    gpu_milli = float((target.freq * target.count * target.milli).sum())
    c = float((target.freq * target.cpu).sum()) / gpu_milli
    assert target.memory is not None
    m = float((target.freq * target.memory).sum()) / gpu_milli

    def unfed(gpu: float, cpu_free: float, memory_free: float) -> float:
        return max(0.0, gpu - cpu_free / c, gpu - memory_free / m)

    def charge(k: int, milli: int) -> float:
        gpu = float(b.ledger.gpu_left[k].sum())
        beta = 0.25 * (1 - 400 / 1150)
        return beta * (unfed(gpu - milli, cpu[k] - 3000, memory[k]) - unfed(gpu, cpu[k], memory_free[k]))

    def recomputed(k: int, cpu_after: int, left: np.ndarray) -> float:
        gl = left[None, :]
        r = rows[[k]]
        counts = b.ledger.counts_of(gl)
        return float(ours.measure(r, np.array([cpu_after]), memory[[k]], counts, ours.units_of(gl))[0])

    before = ours.frag(rows)
    share = ours.score_batch(CycleState(), pod("s", 1, 500, cpu=3000), b.cluster, rows)
    whole = ours.score_batch(CycleState(), pod("w", 2, 1000, cpu=3000), b.cluster, rows)

    def expected(k: int, after: np.ndarray, milli: int) -> int:
        """FGD's score of the decrease when node k's GPUs go to ``after`` and 3 CPUs go."""
        delta = before[k] - recomputed(k, int(cpu[k]) - 3000, after) - charge(k, milli)
        return int(100 / (1 + np.exp(-delta / 1000)))

    for k in rows.tolist():
        left = b.ledger.gpu_left[k]
        best = -1
        for g in np.flatnonzero(left >= 500):
            after = left.copy()
            after[g] -= 500
            best = max(best, expected(k, after, 500))
        assert share[k] == best
        if (left == 1000).sum() >= 2:
            after = left.copy()
            after[np.flatnonzero(left == 1000)[:2]] = 0
            assert whole[k] == expected(k, after, 2000)


def test_a_nodes_delta_does_not_depend_on_the_rows_computed_with_it() -> None:
    """``node_delta`` measures the after-states of the rows it is given together with the current state
    of those whose cached measure is stale, in one pass; every value is row by row, so a node's Δ is
    the same bits whether it is computed alone, with all the others, or after another call has brought
    part of the cache up to date. Checked for a sharing, a 2-GPU, a 1-GPU and a CPU-only pod, with
    memory, balance and rounding in play."""
    target = typical(
        (1000, 1, 500, 0.4), (4000, 1, 1000, 0.3), (8000, 2, 1000, 0.1), (2000, 1, 250, 0.2),
        (3000, 0, 0, 0.1),
        memory_mib=(2048, 30_000, 60_000, 1024, 4096),
    )  # fmt: skip
    b, rows = random_state(target, 25, 11, lambda k: 50 + 7 * k, lambda k: 1000 * (k % 6))
    for p in (pod("s", 1, 250, cpu=3000), pod("w", 2, 1000), pod("o", 1, 1000), pod("c", 0, cpu=7000)):
        shape = pod_shape(p)
        together = cpu_frag(b.ledger, quantum=300, balance=0.25).node_delta(shape, rows)
        alone = np.concatenate(
            [cpu_frag(b.ledger, quantum=300, balance=0.25).node_delta(shape, rows[[k]]) for k in rows]
        )
        partly = cpu_frag(b.ledger, quantum=300, balance=0.25)
        partly.node_delta(shape, rows[::3])  # brings every third node's cached measure up to date
        assert np.array_equal(together, alone) and np.array_equal(together, partly.node_delta(shape, rows))
        assert len(np.unique(together)) > 1  # the nodes differ, and so do their Δ (values: the test above)


def test_kept_scores_equal_a_fresh_plugins_after_placements() -> None:
    """``score_batch`` keeps per shape and node the score itself where no reserve charge applies, else Δ
    (the charge is relative to the rows scored together). Either way, after pods land on some nodes, a
    plugin that scored before gives every row what a fresh plugin computes now, over all rows and over a
    subset (the kept values depend on the node alone; those of changed nodes are recomputed)."""
    target = typical((1000, 1, 500, 0.4), (4000, 1, 1000, 0.3), (8000, 2, 1000, 0.1), (2000, 0, 0, 0.2))
    b, rows = random_state(target, 20, 7)
    pods = (pod("s", 1, 250, cpu=3000), pod("w", 2, 1000, cpu=2000), pod("c", 0, cpu=5000))
    for reserving in (False, True):
        kept = cpu_frag(b.ledger)
        kept._reserving = reserving  # (the reserve charge is 0 here: both caches must give the same)
        for p in pods:
            kept.score_batch(CycleState(), p, b.cluster, rows)
        for k in range(len(pods)):
            b.place(pod(f"x{reserving}{k}", 0, cpu=1000), f"n{3 * k + 1}")  # the CPU changes: Δ moves
        for p in pods:
            fresh = cpu_frag(b.ledger).score_batch(CycleState(), p, b.cluster, rows)
            assert kept.score_batch(CycleState(), p, b.cluster, rows).tolist() == fresh.tolist()
            some = rows[::3]
            assert kept.score_batch(CycleState(), p, b.cluster, some).tolist() == fresh[::3].tolist()
            assert len(set(fresh.tolist())) > 1  # the nodes differ, and so do their scores


def test_same_seed_same_run() -> None:
    nodes = [to_node(node(f"n{i}", 4, cpu=16_000)) for i in range(3)]
    one = run_packing(nodes, trace(), CPU_FRAG, 42)
    again = run_packing(nodes, trace(), CPU_FRAG, 42)
    assert np.array_equal(one.allocated, again.allocated) and np.array_equal(one.frag, again.frag)
    assert one.failed == again.failed


def test_bad_quantum_is_a_config_error() -> None:
    b = Bench([node("n", 2)], CPU_FRAG, ONE_GPU_8_CPU)
    for quantum in (0, 2.5, "500", True):
        with pytest.raises(ConfigError, match="cpuQuantum"):
            CpuAwareFragmentation({"cpuQuantum": quantum}, Handle(ReasonTable(), sharing=b.ledger))
    for full_at in (-0.1, 1.5, "0.3", True):
        with pytest.raises(ConfigError, match="quantumFullAt"):
            CpuAwareFragmentation({"quantumFullAt": full_at}, Handle(ReasonTable(), sharing=b.ledger))


def test_whole_node_share_sets_the_quantum() -> None:
    """Nodes of 4 and 2 GPUs: a whole-node shape takes 4 GPUs. Shapes {4 × 1000} p, {1 × 1000} 0.9 − p
    and a CPU-only shape 0.1 (no GPU demand): GPU demand 4000p against 1000(0.9 − p), so w = 4p / (0.9 +
    3p). p = 0.1: w = 0.4 / 1.2 = 1/3 ≥ 0.3 → q = 500 (q_max). p = 0.04: w = 0.16 / 1.02 = 8/51 → q =
    500 · (8/51) / 0.3 = 261.4. Without the 4-GPU shape w = 0 → q = 0 (no rounding); a 2-GPU shape is
    not whole-node here. The balance weight is β · (1 − w): 0.25 · 2/3 = 1/6 and 0.25 · 43/51, and 0.25
    with no whole-node shape."""
    nodes = [node("big", 4), node("small", 2)]

    def target(p: float, count: int = 4) -> TypicalPods:
        return typical((8000, count, 1000, p), (4000, 1, 1000, 0.9 - p), (2000, 0, 0, 0.1))

    wide = Bench(nodes, CPU_FRAG, target(0.1))
    assert whole_node_share(target(0.1), wide.ledger) == pytest.approx(1 / 3)
    assert cpu_frag(wide.ledger).quantum == pytest.approx(500)
    assert cpu_frag(wide.ledger, balance=0.25).balance == pytest.approx(1 / 6)
    narrow = Bench(nodes, CPU_FRAG, target(0.04))
    assert whole_node_share(target(0.04), narrow.ledger) == pytest.approx(8 / 51)
    assert cpu_frag(narrow.ledger).quantum == pytest.approx(261.4, abs=0.05)
    assert cpu_frag(narrow.ledger, balance=0.25).balance == pytest.approx(0.25 * 43 / 51)
    for other in (ONE_GPU_8_CPU, target(0.1, count=2)):
        b = Bench(nodes, CPU_FRAG, other)
        assert whole_node_share(other, b.ledger) == 0
        assert cpu_frag(b.ledger).quantum == 0
        assert cpu_frag(b.ledger, balance=0.25).balance == 0.25


def test_rounding_follows_whole_node_demand() -> None:
    """The node of test_small_cpu_part_rounds_away (3 GPUs, 40 CPUs, 10 free), shape A {1 GPU × 300
    milli, 2 CPU} with popularity 0.9 and a whole-node shape B {3 GPUs, 2 CPU} 0.1: GPU demand 270 vs
    300, w = 300/570 = 0.526 → q = 500. A: 9 copies by GPU, 5 by CPU → 4 stranded × 300 × 0.5 = 600;
    B: 1 copy by GPU, 5 by CPU, none. CPU part 0.9 · 600 = 540 → 500 (1.08 quanta); FGD's part 0 (both
    fit, nothing too small). With B asking 2 GPUs instead, no shape takes the whole node: w = 0, q = 0,
    and the measure is the unrounded 540 (B: ⌊3/2⌋ = 1 copy by GPU, 5 by CPU, nothing stranded)."""
    whole = typical((2000, 1, 300, 0.9), (2000, 3, 1000, 0.1))
    b = Bench([node("n", 3, cpu=40_000)], CPU_FRAG, whole)
    use_cpu(b, 0, 30_000)
    row = np.array([0])
    assert float(cpu_frag(b.ledger).frag(row)[0]) == pytest.approx(500)
    partial = typical((2000, 1, 300, 0.9), (2000, 2, 1000, 0.1))
    b = Bench([node("n", 3, cpu=40_000)], CPU_FRAG, partial)
    use_cpu(b, 0, 30_000)
    assert float(cpu_frag(b.ledger).frag(row)[0]) == pytest.approx(540)


@pytest.mark.parametrize("arg", ["cpuWeight", "reserveWeight", "balanceWeight"])
@pytest.mark.parametrize("weight", [-0.1, 1.5, "half", True])
def test_bad_weight_is_a_config_error(arg: str, weight: object) -> None:
    b = Bench([node("n", 2)], CPU_FRAG, ONE_GPU_8_CPU)
    with pytest.raises(ConfigError, match=arg):
        CpuAwareFragmentation({arg: weight}, Handle(ReasonTable(), sharing=b.ledger))


def test_model_scarcity_is_restricted_demand_over_capacity_share() -> None:
    """Nodes a (2 T4) and b (6 G2): capacity shares 1/4 and 3/4. Shapes (popularity × GPUs × milli =
    GPU demand): {1 × 1000, T4 only} 0.2 → 200; {2 × 1000, T4|G2|A100} 0.1 → 200, split over the two
    models present (A100 has no node): 100 each; {1 × 500, any} 0.4 → 200; CPU-only 0.3 → 0. Total 600.
    T4: 300/600 = 0.5 of demand over 0.25 of capacity = 2 → capped at 1. G2: 100/600 over 0.75 = 2/9."""
    target = typical(
        (4000, 1, 1000, 0.2),
        (4000, 2, 1000, 0.1),
        (4000, 1, 500, 0.4),
        (2000, 0, 0, 0.3),
        models=(frozenset({"T4"}), frozenset({"T4", "G2", "A100"}), None, None),
    )
    b = Bench([node("a", 2, model="T4"), node("b", 6, model="G2")], CPU_FRAG, target)
    assert b.ledger.model_names == ["T4", "G2"]
    assert model_scarcity(target, b.ledger).tolist() == pytest.approx([1.0, 2 / 9])
    assert model_scarcity(ONE_GPU_8_CPU, b.ledger).tolist() == [0.0, 0.0]  # nothing restricted


def test_unrestricted_pod_keeps_off_gpus_restricted_pods_need() -> None:
    """Nodes g2 (4 G2 GPUs, 32 CPU) and t4 (2 T4 GPUs, 104 CPU); shapes A {1 GPU, 8 CPU, any} 0.75 and
    B {1 GPU, 4 CPU, T4 only} 0.25; pod 1 GPU + 24 CPU, any model. T4 scarcity: B's demand 250 of 1000
    over T4's share 2/6 = 0.75. B never fits g2, so F_B there is all free milli.
    FGD: g2 0.25·4000 = 1000 → 0.25·3000 = 750 (A still fits with 8 CPU): Δ = 250, score 56; t4 0 → 0,
    50 → g2.
    λ = 0.5 without the reserve: g2 after: A 3 copies by GPU, 8/8 = 1 by CPU → 2 stranded, 0.5 · 2000
    = 1000, 0.75 · 1000 + 750 = 1500: Δ = −500, score 37; t4 stays 0 (CPU for 10+ copies), 50 → t4.
    With the reserve (weight 1): t4 is charged 1 · 1000 milli · (0.75 − 0, g2's scarcity the least):
    Δ = −750, score int(100·σ(−0.75)) = 32 < 37 → g2. A T4-only pod has only t4: no charge.
    (Both nodes are empty before, with no empty-state stranding; the scores are unrounded, as the
    defaults give here: no shape takes 4 GPUs. With a fixed 500-milli quantum g2's CPU part 0.75 · 1000
    = 750 rounds to 1000 (1.5 → 2, halves to even), Δ = −750 and score 32 too: the tie goes to g2,
    first in order.)
    With the balance term at its default β = 0.25 (all of the above is β = 0), the pod's 24 CPU per GPU
    outweighs the reserve: the target workload asks (0.75 · 8000 + 0.25 · 4000) / 1000 = 7 milli-CPU per
    milli-GPU; g2 after has 3000 milli-GPU free and 8000 CPU to feed 8000 / 7 = 1142.9 of it, unfed
    1857.1 (0 before), charged 0.25 · 1857.1 = 464.3: Δ = −500 − 464.3, score int(100·σ(−0.964)) = 27;
    t4 keeps 80 CPU for 1000 milli (nothing unfed): 32 → t4, which the packing runs' defaults choose.
    A sharing pod {500 milli, 4 CPU}: g2 → [500, 1000 × 3], 28 CPU: F_A = 500 (too small for A), no
    stranding (3 vs 3 copies), F_B = 3500: 0.75·500 + 0.25·3500 = 1250 from 1000, Δ = −250, score 43.
    t4 → [500, 1000]: F_A = F_B = 500, Δ = −500 (score 37 unreserved); reserve 0.75 · 500 = 375:
    Δ = −875, score 29."""
    target = typical((8000, 1, 1000, 0.75), (4000, 1, 1000, 0.25), models=(None, frozenset({"T4"})))
    nodes = [node("g2", 4, cpu=32_000, model="G2"), node("t4", 2, cpu=104_000, model="T4")]
    heavy = pod("p", 1, 1000, cpu=24_000)
    rows = np.array([0, 1])
    assert first_ties(Bench(nodes, "FGD", target)).schedule(heavy)[0] == "g2"
    b = first_ties(Bench(nodes, CPU_FRAG, target))
    unrounded = cpu_frag(b.ledger, reserve=0.0, quantum=1)
    assert unrounded.score_batch(CycleState(), heavy, b.cluster, rows).tolist() == [37, 50]
    assert cpu_frag(b.ledger, quantum=1).score_batch(CycleState(), heavy, b.cluster, rows).tolist() == [
        37,
        32,
    ]
    assert cpu_frag(b.ledger).score_batch(CycleState(), heavy, b.cluster, rows).tolist() == [37, 32]
    assert cpu_frag(b.ledger, quantum=500).score_batch(CycleState(), heavy, b.cluster, rows).tolist() == [
        32,
        32,
    ]
    balanced = cpu_frag(b.ledger, balance=0.25)
    assert balanced.score_batch(CycleState(), heavy, b.cluster, rows).tolist() == [27, 32]
    assert b.schedule(heavy)[0] == "t4"
    t4_only = pod("q", 1, 1000, cpu=24_000, spec=frozenset({"T4"}))
    one = np.array([1])
    assert cpu_frag(b.ledger).score_batch(CycleState(), t4_only, b.cluster, one).tolist() == [50]
    share, b = pod("s", 1, 500, cpu=4000), Bench(nodes, CPU_FRAG, target)  # before the pod above
    unrounded = cpu_frag(b.ledger, reserve=0.0, quantum=1)
    assert unrounded.score_batch(CycleState(), share, b.cluster, rows).tolist() == [43, 37]
    assert cpu_frag(b.ledger, quantum=1).score_batch(CycleState(), share, b.cluster, rows).tolist() == [
        43,
        29,
    ]
