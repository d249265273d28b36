"""The GPU-share ledger's reads of one node against the same reads over many rows, its per-GPU Filter and
its refusal of an over-committed GPU (the FGD artifact, hkust-adsl/kubernetes-scheduler-simulator:
``pkg/utils/frag.go`` ``CanNodeHostPodOnGpuMemory`` counts the GPUs with enough milli left,
``GetGpuFragMilli`` sums the milli left on the GPUs below a shape's request; ``pkg/type/resource.go``
``Sub`` takes a pod's GPUs from those with the least sufficient milli left).

Target workload, as in test_fragmentation: S1 = 1 GPU × 500 milli, 1 CPU, popularity 0.5;
S2 = 1 GPU × 1000 milli, 1 CPU, 0.25; S3 = CPU-only, 2 CPU, 0.25.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from kubegpu.model.objects import Pod
from kubegpu.scheduler import gpu_share
from kubegpu.scheduler.gpu_shapes import GpuShape, TypicalPods
from kubegpu.scheduler.gpu_share import (
    fgd_node_scores,
    fgd_scores,
    fgd_scores_of,
    select_min_frag,
    share_scores,
)
from tests.sim.builders import Bench, node, pod, typical

TARGET = typical((1000, 1, 500, 0.5), (1000, 1, 1000, 0.25), (2000, 0, 0, 0.25))


# TARGET with S1 allowed on V100 only: a T4 node sees all its free milli as S1's fragment
TARGET_V100 = typical(
    (1000, 1, 500, 0.5), (1000, 1, 1000, 0.25), (2000, 0, 0, 0.25), models=(frozenset({"V100"}), None, None)
)


def random_bench(target: TypicalPods = TARGET) -> tuple[Bench, np.ndarray]:
    """30 8-GPU nodes (T4 and V100 in turn) with free milli drawn from {0, 120, 500, 730, 1000} and
    CPU-only pods of 0–63 CPUs."""
    b = Bench([node(f"n{i}", 8, model=("T4", "V100")[i % 2]) for i in range(30)], "FGD", target)
    rng = np.random.default_rng(11)
    b.ledger.gpu_left[:] = rng.choice([0, 120, 500, 730, 1000], size=b.ledger.gpu_left.shape)
    rows = np.arange(30, dtype=np.intp)
    b.ledger._recount(rows)
    for i in rows:
        b.cluster.add_pod(pod(f"cpu{i}", 0, 0, cpu=int(rng.integers(0, 64)) * 1000), int(i))
    return b, rows


def test_one_node_read_by_index_equals_that_node_read_with_others() -> None:
    """A one-row call reads its node by index (no gathers); every value must equal the node's entry of
    the same call over all 30 rows: fragment amount, the sharing pod's candidates (distinct free values
    ≥ 500 and the fragment after each), the fragment after ``Sub`` of whole-GPU (2 and 4), sharing and
    CPU-only pods, and the per-GPU Filter."""
    b, rows = random_bench()
    lg = b.ledger
    together = lg.frag(rows)
    pos, values, after = lg.share_candidates(rows, 3000, 500)
    shapes = [GpuShape(3000, 2, 1000), GpuShape(3000, 4, 1000), GpuShape(3000, 0, 0), GpuShape(3000, 1, 730)]
    subs = [lg.frag_after_sub(rows, s) for s in shapes]
    for k in rows:
        one = rows[[k]]
        assert int(lg.frag(int(k))) == together[k] == lg.frag(one)[0]
        p1, v1, a1 = lg.share_candidates(one, 3000, 500)
        assert list(p1) == [0] * len(v1)
        assert list(v1) == list(values[pos == k]) and list(a1) == list(after[pos == k])
        for s, sub in zip(shapes, subs, strict=True):
            assert lg.frag_after_sub(one, s).tolist() == [sub[k]]
            assert bool(lg.fits(int(k), s)) == lg.fits(rows, s)[k] == lg.fits(one, s)[0]


@pytest.mark.parametrize("target", [TARGET, TARGET_V100], ids=["any-model", "S1-on-V100"])
def test_node_by_node_reads_in_python_ints_equal_the_batch_reads(target: TypicalPods) -> None:
    """The one-node reads in Python ints (a node's kept fragment amount refreshed alone, a sharing pod's
    candidates, ``Sub``, FGD's node scores over a few rows) must be the integers the numpy batch over all
    30 rows gives (``combine``, held to hand-derived values in test_fragmentation), with and without a
    shape the node's GPU model may not use. Each node is changed alone first (a 1-CPU pod), so its kept
    amount is refreshed by the one-node path."""
    b, rows = random_bench(target)
    lg = b.ledger
    lg.node_frag_weighted(rows)  # every node refreshed (in one batch)
    for k in rows.tolist():
        b.place(pod(f"one{k}", 0, 0, cpu=1000), f"n{k}")
        assert lg.node_frag_one(k) == lg.frag(rows)[k]
    together = lg.frag(rows)
    assert lg.node_frag_weighted(rows).tolist() == together.tolist()
    assert lg.cluster_frag() == int(together.sum()) / target.scale
    pos, values, after = lg.share_candidates(rows, 3000, 500)
    shapes = [GpuShape(3000, 2, 1000), GpuShape(3000, 4, 1000), GpuShape(3000, 0, 0), GpuShape(3000, 1, 730)]
    subs = [lg.frag_after_sub(rows, s) for s in shapes]
    for k in rows.tolist():
        assert lg.share_after_one(k, 3000, 500) == list(
            zip(values[pos == k].tolist(), after[pos == k].tolist(), strict=True)
        )
        for s, sub in zip(shapes, subs, strict=True):
            assert lg.after_sub_one(k, s) == sub[k]
    for s in [*shapes, GpuShape(3000, 1, 500), GpuShape(60_000, 1, 120)]:
        batch = fgd_node_scores(lg, rows, s)  # 30 rows: one numpy batch
        lg.last_share = None
        for step in (1, 3):  # one node (Python ints), three (sharing pods: a batch of three)
            parts = np.concatenate([fgd_node_scores(lg, rows[i : i + step], s) for i in range(0, 30, step)])
            assert parts.tolist() == batch.tolist()
        assert lg.misfits(rows, s).tolist() == (~lg.fits(rows, s)).tolist()


def test_fgd_scores_read_from_the_steps_equal_the_scores_computed() -> None:
    """``fgd_scores`` and ``fgd_scores_of`` (decreases × scale; TARGET's scale 10⁶) read the score from its
    steps: Δ 0 → 50, 1000 milli → 73, −1000 → 26, and equal to the definition computed (``_computed``: the
    FGD simulator's ``FGDScore``, hkust-adsl/kubernetes-scheduler-simulator, int64(sigmoid(Δ/1000) · 100))
    on every float within 20,000 of each step (in float order), on a 1-milli grid around σ⁻¹(k/100) · 1000,
    and on random decreases of every magnitude; ±0, ±∞ and the smallest subnormals too; a NaN scores 101
    (kubegpu's choice: outside [0, 100], so the framework refuses it)."""
    b = Bench([node("n", 1)], "FGD", TARGET)
    assert fgd_scores_of(b.ledger, [0, 1000 * 10**6, -1000 * 10**6]) == [50, 73, 26]
    steps = gpu_share._steps()
    assert steps is not None and len(steps[1]) == 100  # (None only where exp is not monotone)
    keys = gpu_share._order_key(steps[0][:100])
    near = gpu_share._of_order_key(
        (keys[:, None] - np.uint64(20_000) + np.arange(40_001, dtype=np.uint64)).ravel()
    )
    rng = np.random.default_rng(3)
    weighted = np.concatenate(
        [np.arange(-50, 51) * 10**6 + round(math.log(k / (100 - k)) * 1000 * 10**6) for k in range(1, 100)]
        + [rng.integers(-(10**12), 10**12, 5000)]
    )
    special = np.array([0.0, -0.0, np.inf, -np.inf, 5e-324, -5e-324, 1e300, -1e300])
    for delta in (
        near,
        b.ledger.milli(weighted),
        rng.normal(0, 1, 10**5) * 10.0 ** rng.integers(0, 12, 10**5),
        special,
    ):
        assert fgd_scores(delta).tolist() == gpu_share._computed(delta).tolist()
    assert fgd_scores_of(b.ledger, weighted.tolist()) == fgd_scores(b.ledger.milli(weighted)).tolist()
    assert fgd_scores(np.array([np.nan])).tolist() == [101]
    assert fgd_scores_of(b.ledger, [float("nan") * 10**6]) == [101]


def test_kept_counts_and_fragment_follow_placements_departures_and_rollbacks() -> None:
    """After each step of random placements (CPU only, 1–4 GPUs of 1000, or 1 GPU of 100–900 milli; 1, 2,
    31, 32 or 63 of a node's 64 CPUs, so nodes run short of the shapes' 1–2 CPUs), departures and a dry run rolled back, every node's kept per-shape counts, sorted free milli and the cluster's kept
    fragment amount equal a recount from the free milli per GPU and the CPU left (``counts_of``,
    ``combine``: no kept value read)."""
    b = Bench(
        [node(f"n{i}", (1, 2, 4, 8)[i % 4], model=("T4", "V100")[i % 2]) for i in range(8)],
        "FGD",
        TARGET_V100,
    )
    lg, cluster, rng = b.ledger, b.cluster, np.random.default_rng(5)
    rows = np.arange(8, dtype=np.intp)
    placed: list[Pod] = []

    def check() -> None:
        recount = lg.counts_of(lg.gpu_left[rows])
        assert [a.tolist() for a in lg.counts(rows)] == [a.tolist() for a in recount]
        assert lg._sorted.tolist() == np.sort(lg.gpu_left, axis=1).tolist()
        every = lg.combine(rows, lg.cpu_left(rows), *recount)
        assert lg.cluster_frag() == lg.milli_of(int(every.sum()))

    for i in range(120):
        if placed and rng.random() < 0.3:
            cluster.remove_pod(placed.pop(int(rng.integers(len(placed)))))
        elif rng.random() < 0.1 and placed:
            mark = cluster.mark()
            cluster.remove_pod(placed[0])
            check()
            cluster.rollback(mark)
        else:
            kind = rng.random()
            cpu = int(rng.choice([1, 2, 31, 32, 63])) * 1000  # on 64 CPUs: 1 or 0 left, under the shapes'
            if kind < 0.3:  # CPU only: changes the node's fragment through its CPU left alone
                p = pod(f"p{i}", 0, 0, cpu=cpu)
            elif kind < 0.6:
                p = pod(f"p{i}", int(rng.integers(1, 5)), 1000, cpu=cpu)
            else:
                p = pod(f"p{i}", 1, int(rng.integers(1, 10)) * 100, cpu=cpu)
            if b.schedule(p)[0] is not None:
                placed.append(p)
        check()


def test_counts_kept_by_assign_and_release_equal_a_recount() -> None:
    """After a run of placements and departures, the per-shape counts kept node by node equal the counts
    recomputed from the free milli per GPU: on a 4-GPU node, pods of 300 on GPU0, 2×1000 on GPU2–3, 500
    on GPU0 leave free [200, 1000, 0, 0]: S1 (500) fits 1 GPU, below 200; S2 (1000) fits 1, below 200;
    S3 (0 milli) counts all 4 GPUs as fitting; free 1200. Releasing the 2-GPU pod gives [200, 1000, 1000,
    1000]: S1 fits 3, S2 fits 3, below 200 each; free 3200."""
    b = Bench([node("n", 4)], "FGD", TARGET)
    small, whole, half = pod("s", 1, 300), pod("w", 2, 1000), pod("h", 1, 500)
    b.place(small, "n", (0,))
    b.place(whole, "n", (2, 3))
    b.place(half, "n", (0,))
    fit, below, total = b.ledger.counts(np.array([0]))
    assert fit.tolist() == [[1, 1, 4]] and below.tolist() == [[200, 200, 0]] and total.tolist() == [1200]
    b.cluster.remove_pod(whole)
    fit, below, total = b.ledger.counts(np.array([0]))
    assert fit.tolist() == [[3, 3, 4]] and below.tolist() == [[200, 200, 0]] and total.tolist() == [3200]
    again = b.ledger.counts_of(b.ledger.gpu_left[[0]])
    assert [a.tolist() for a in again] == [fit.tolist(), below.tolist(), total.tolist()]


def test_filter_needs_count_gpus_each_with_the_milli() -> None:
    """Free [1000, 300, 600, 0]: 1×500 fits (1000, 600), 2×500 fits, 3×500 does not (300 < 500);
    1×1000 fits, 2×1000 does not; a pod asking no GPU fits; 5 GPUs is more than the node has."""
    b = Bench([node("n", 4)], "FGD", TARGET)
    b.place(pod("a", 1, 700), "n", (1,))
    b.place(pod("b", 1, 400), "n", (2,))
    b.place(pod("c", 1, 1000), "n", (3,))
    assert b.ledger.gpu_left[0].tolist() == [1000, 300, 600, 0]
    wanted = {(1, 500): True, (2, 500): True, (3, 500): False, (1, 1000): True, (2, 1000): False}
    wanted |= {(0, 0): True, (5, 100): False}
    for (count, milli), ok in wanted.items():
        assert bool(b.ledger.fits(0, GpuShape(1000, count, milli))) is ok, (count, milli)


def test_assign_refuses_a_gpu_without_that_much_free() -> None:
    """A 600-milli pod on GPU0, then another 600 on GPU0 (400 free): refused, naming the GPU, and the
    ledger is left as it was."""
    b = Bench([node("n", 2)], "FGD", TARGET)
    b.place(pod("a", 1, 600), "n", (0,))
    with pytest.raises(ValueError, match="GPU 0 of node 0 has 400 milli-GPU free, not 600"):
        b.ledger.assign(pod("b", 1, 600), 0, (0,), 600)
    assert b.ledger.gpu_left[0].tolist() == [400, 1000]


def test_fgd_gpu_choice_with_one_free_value_takes_the_first_fitting_gpu() -> None:
    """Free [300, 1000, 1000]: for a 500-milli pod only GPUs 1 and 2 fit, both with 1000 free, so both
    score alike and the first, GPU1, is taken (GPU0 scores −1: it does not fit)."""
    b = Bench([node("n", 3)], "FGD", TARGET)
    b.place(pod("a", 1, 700), "n", (0,))
    assert select_min_frag(b.ledger, 0, GpuShape(1000, 1, 500), np.random.default_rng(0)) == 1


def test_fgd_scores_truncate_and_reach_zero_without_overflow() -> None:
    """int(100 / (1 + e^(−Δ/1000))): Δ = 0 → 50; Δ = 1000 → int(73.1) = 73; Δ = −1000 → int(26.9) = 26;
    Δ = −10⁹ (e^(10⁶) overflows a float) → 0, with no overflow warning; Δ = +∞ → 100."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores = fgd_scores(np.array([0.0, 1000.0, -1000.0, -1e9, np.inf]))
    assert scores.tolist() == [50, 73, 26, 0, 100]


def test_fgd_gpu_choice_reads_scores_kept_for_this_state_only() -> None:
    """FGD's Score keeps its last one-node answer for Reserve's GPU choice; a change of the node since must
    not be answered from it. Free [1000, 500, 1000] (pod a, 4 CPU, on GPU1), 60 of 64 CPUs free, a pod
    of 1.5 CPU × 500 milli. Before: S1 fits, nothing below 500 (0); S2 fits, 500 below (0.25 · 500 =
    125); S3 all 2500 free (625): 750. On GPU1 (500 → 0): S1 0, S2 0, S3 500: Δ 250, score
    ⌊100·σ(0.25)⌋ = 56. On GPU0 (1000 → 500): S1 0, S2 1000 · 0.25, S3 500: Δ 0, score 50. GPU1.
    Then a CPU-only pod takes 58 CPUs: 2 free, 0.5 after the pod, so S1 and S2 (1 CPU) no longer fit
    after it and every shape sees all 2000 free milli: both choices score alike, the first GPU (GPU0)."""
    b = Bench([node("n", 3)], "FGD", TARGET)
    b.place(pod("a", 1, 500), "n", (1,))
    shape = GpuShape(1500, 1, 500)
    rows = np.array([0], dtype=np.intp)
    _, values, scores = share_scores(b.ledger, rows, shape)
    assert (values.tolist(), scores.tolist()) == ([500, 1000], [56, 50])
    assert select_min_frag(b.ledger, 0, shape, np.random.default_rng(0)) == 1
    b.place(pod("c", 0, 0, cpu=58_000), "n")
    _, values, scores = share_scores(b.ledger, rows, shape)
    assert scores[0] == scores[1]
    assert select_min_frag(b.ledger, 0, shape, np.random.default_rng(0)) == 0


def test_a_pod_that_left_and_is_nominated_back_holds_no_gpus_in_the_first_pass() -> None:
    """x (600 milli) leaves GPU0 of n for good; y (700) takes that GPU (300 free left); x, pending again,
    is nominated to n. A later pod's filter pass adds x there for the first pass (upstream
    ``addGENominatedPods``): x counts on the node but holds no GPU in the ledger, so nothing tries to put
    it back on GPU0 (which has 300 free, not 600: that raised before). Only a rollback of x's removal
    gives it its GPUs back."""
    b = Bench([node("n", 1), node("m", 1)], "FGD", TARGET)
    x = pod("x", 1, 600)
    b.place(x, "n", (0,))
    b.cluster.remove_pod(x)
    b.place(pod("y", 1, 700), "n", (0,))
    b.cluster.nominate(x, "n")
    result = b.scheduler.schedule_one(pod("z", 1, 100), preempt=False)
    assert result.scheduled and x.key not in b.ledger.held
    # n's GPU keeps y's 700 taken, and z's 100 if z landed there (either node fits it)
    assert b.ledger.gpu_left[b.cluster.index["n"], 0] == 300 - (100 if result.node == "n" else 0)
    # a rollback of a removal restores the pod's GPUs, as before
    fresh = Bench([node("o", 1)], "FGD", TARGET)
    w = pod("w", 1, 500)
    fresh.place(w, "o", (0,))
    mark = fresh.cluster.mark()
    fresh.cluster.remove_pod(w)
    assert fresh.ledger.gpu_left[0, 0] == 1000
    fresh.cluster.rollback(mark)
    assert fresh.ledger.held[w.key] == (0, (0,), 500) and fresh.ledger.gpu_left[0, 0] == 500


def test_a_cycle_that_only_asks_leaves_the_ledger_as_it_was() -> None:
    """``schedule_one(assume=False)`` (explain, plan effects, a failed pod's preemption retry) answers
    where the pod would go without placing it: the GPUs its Reserve chose go back (Unreserve), so the
    ledger holds nothing for it and FGD's kept GPU-choice scores are never read for a state the node is
    not in. Free [1000, 700, 1000]: a 300-milli pod would land here, and afterwards FGD's choice for it
    is the one a fresh computation gives, GPU 1. By hand (TARGET: 500 milli at ½, 1000 milli at ¼, CPU-only
    at ¼): now ½·0 + ¼·700 + ¼·2700 = 850; on GPU 1 (700 → 400) ½·400 + ¼·400 + ¼·2400 = 900, Δ −50; on
    GPU 0 or 2 (1000 → 700) ½·0 + ¼·1400 + ¼·2400 = 950, Δ −100: GPU 1 scores higher."""
    b = Bench([node("n", 3)], "FGD", TARGET)
    b.place(pod("a", 1, 300), "n", (1,))
    before = b.ledger.gpu_left[0].tolist()
    q = pod("q", 1, 300, cpu=1500)
    assert b.scheduler.schedule_one(q, assume=False, preempt=False).node == "n"
    assert b.ledger.gpu_left[0].tolist() == before == [1000, 700, 1000] and q.key not in b.ledger.held
    shape = GpuShape(1500, 1, 300)
    kept = select_min_frag(b.ledger, 0, shape, np.random.default_rng(0))
    b.ledger.last_share = None
    assert kept == select_min_frag(b.ledger, 0, shape, np.random.default_rng(0)) == 1


def test_gpushare_filter_verdicts_and_the_all_fit_path() -> None:
    """GpuShare's batch Filter: n0 free [1000, 300, 600, 0], n1 with every GPU taken. A 1 × 500 pod fits
    n0 only; a 3-GPU pod neither (n0's third most free GPU has 300 free); 5 GPUs is more than any node has
    (past the sorted table's width): neither. A rejected row is Unschedulable with kubegpu's one reason
    ("node(s) had no GPU with enough free milli-GPU": the FGD artifact's filter names none); when every
    row fits (n0 alone, 1 × 500) the codes and reasons are all 0, as each node's scalar ``filter`` says."""
    from kubegpu.scheduler.framework import CycleState
    from kubegpu.scheduler.status import Code

    b = Bench([node("n0", 4), node("n1", 4)], "FGD", TARGET)
    b.place(pod("a", 1, 700), "n0", (1,))
    b.place(pod("b", 1, 400), "n0", (2,))
    b.place(pod("c", 1, 1000), "n0", (3,))
    b.place(pod("d", 4, 1000), "n1", (0, 1, 2, 3))
    fw = b.scheduler.framework
    share = next(p for p in fw.filter_plugins if p.name == "GpuShare")
    both, first = np.array([0, 1], dtype=np.intp), np.array([0], dtype=np.intp)
    text = ("node(s) had no GPU with enough free milli-GPU",)
    cases = {(1, 500, 2): [True, False], (3, 1000, 2): [False, False], (5, 1000, 2): [False, False]}
    cases[(1, 500, 1)] = [True]
    for (count, milli, k), fits in cases.items():
        p = pod("p", count, milli)
        rows = both if k == 2 else first
        codes, reasons = share.filter_batch(CycleState(), p, b.cluster, rows)  # type: ignore[attr-defined]
        for j, ok in enumerate(fits):
            got = (Code(int(codes[j])), fw.reason_strings(int(reasons[j])))
            assert got == ((Code.SUCCESS, ()) if ok else (Code.UNSCHEDULABLE, text)), (count, milli, j)
            scalar = share.filter(CycleState(), p, b.cluster.view(int(rows[j])))
            assert (scalar.code, scalar.texts()) == got


def test_sub_choice_and_the_packing_policies_one_node_values_equal_the_batch() -> None:
    """The simulator's ``NodeResource.Sub`` choice (``count`` GPUs with the least sufficient free milli)
    is written once for arrays (``sub_taken``) and once for one node in Python ints (``sub_taken_one``);
    the baseline policies score one node in Python numbers and many in arrays from one rule each. On 30
    random nodes every one-node answer equals that node's row of the 30-row batch, for whole (1, 2 and 4
    GPUs), sharing, CPU-only and too-large shapes; GPU pods of each kind (sharing, 1 and 2 whole GPUs)
    placed on 12 of the nodes first, so that GpuClustering sees nodes of one kind, of another and mixed."""
    from kubegpu.scheduler.plugins import packing_policies as pp

    b, rows = random_bench()
    lg = b.ledger
    for k in range(12):  # by node: sharing; 1 GPU; sharing + 2 GPUs (where the GPUs are free)
        left = lg.gpu_left[k].tolist()
        whole = [g for g, v in enumerate(left) if v == 1000]
        share = next(g for g, v in enumerate(left) if v >= 120)
        if k % 3 != 1:
            b.place(pod(f"s{k}", 1, 120), f"n{k}", (share,))
        if k % 3 == 1 and whole:
            b.place(pod(f"w{k}", 1, 1000), f"n{k}", (whole[0],))
        if k % 3 == 2 and len(whole) >= 3:
            b.place(pod(f"d{k}", 2, 1000), f"n{k}", tuple(g for g in whole if g != share)[:2])
    shapes = [
        GpuShape(3000, 1, 1000), GpuShape(3000, 2, 1000), GpuShape(3000, 1, 500), GpuShape(3000, 4, 1000),
        GpuShape(3000, 0, 0), GpuShape(3000, 1, 730), GpuShape(3000, 9, 1000),
    ]  # fmt: skip
    classes = (pp.DotProductScore, pp.GpuClusteringScore, pp.GpuPackingScore, pp.BestFitScore)
    plugins = [cls({}, b.scheduler.framework.handle) for cls in classes]
    for s in shapes:
        left, taken = lg.sub_taken(rows, s)
        for k in rows.tolist():
            assert lg.sub_taken_one(k, s) == left[k][taken[k]].tolist(), (s, k)
        for p in plugins:
            batch = np.asarray(p.values(s, rows))
            if isinstance(p, pp.GpuClusteringScore) and s.count:  # each band met, not only empty nodes
                assert len(set(batch.tolist())) >= 4, (s, sorted(set(batch.tolist())))
            one = [p.values(s, k) for k in rows.tolist()]
            assert one == batch.tolist(), (type(p).__name__, s)  # the same numbers, floats bit for bit
