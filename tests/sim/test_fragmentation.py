"""Fragmentation over a target workload (Weng et al., ATC '23 §4; simulator ``NodeGpuShareFragAmount``).

Target workload used below, worked by hand: S1 = 1 GPU × 500 milli, 1 CPU, popularity 0.5;
S2 = 1 GPU × 1000 milli, 1 CPU, 0.25; S3 = CPU-only, 2 CPU, 0.25.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from kubegpu.scheduler.gpu_shapes import GpuShape, build_typical_pods
from tests.sim.builders import Bench, node, pod, typical

TARGET = typical((1000, 1, 500, 0.5), (1000, 1, 1000, 0.25), (2000, 0, 0, 0.25))


def frag(bench: Bench, cpu_left: int, gpu_left: list[int]) -> float:
    return float(bench.ledger.frag_of(np.array([0]), np.array([cpu_left]), np.array([gpu_left]))[0])


def test_shape_that_fits_sees_only_too_small_gpus_as_fragment() -> None:
    # free [1000, 300], CPU 8000: S1 fits on GPU0 → its fragment is the 300 on GPU1 (0.5·300 = 150);
    # S2 fits on GPU0 → 300 (0.25·300 = 75); S3 is CPU-only → every free milli-GPU (0.25·1300 = 325)
    b = Bench([node("n", 2)], "FGD", TARGET)
    assert frag(b, 8000, [1000, 300]) == pytest.approx(550)


def test_shape_lacking_cpu_sees_all_free_gpu_as_fragment() -> None:
    # CPU 500 < 1000: S1 and S2 lack CPU (Q4), so all 1300 counts for every shape
    b = Bench([node("n", 2)], "FGD", TARGET)
    assert frag(b, 500, [1000, 300]) == pytest.approx(1300)


def test_no_gpu_large_enough_makes_all_free_gpu_fragment() -> None:
    # free [200, 300]: no GPU has 500 → S1 and S2 lack GPU (Q2): all 500 free is fragment
    b = Bench([node("n", 2)], "FGD", TARGET)
    assert frag(b, 8000, [200, 300]) == pytest.approx(500)


def test_idle_node_is_fragment_only_for_cpu_pods() -> None:
    # an idle 2-GPU node: S1, S2 fit with nothing too small; S3 sees 2000 → 0.25·2000
    b = Bench([node("n", 2)], "FGD", TARGET)
    assert float(b.ledger.node_frag(np.array([0]))[0]) == pytest.approx(500)


def test_gpu_model_the_shape_may_not_use_is_all_fragment() -> None:
    # S1 restricted to model A on a T4 node: "no access", all 2000 free counts for it (0.5·2000),
    # S2 fits (0), S3 CPU-only (0.25·2000)
    target = typical(
        (1000, 1, 500, 0.5), (1000, 1, 1000, 0.25), (2000, 0, 0, 0.25), models=(frozenset({"A"}), None, None)
    )
    b = Bench([node("n", 2, model="T4")], "FGD", target)
    assert float(b.ledger.node_frag(np.array([0]))[0]) == pytest.approx(1500)


def test_cached_fragment_follows_placements() -> None:
    # a 400-milli pod with 4 CPU on GPU1 of an idle 2-GPU node: free [1000, 600], CPU 60000:
    # S1 fits, 600 ≥ 500 so nothing too small (0); S2 fits on GPU0, 600 < 1000 (0.25·600 = 150);
    # S3: 0.25·1600 = 400 → 550
    b = Bench([node("n", 2)], "FGD", TARGET)
    b.place(pod("p", 1, 400), "n", (1,))
    assert float(b.ledger.node_frag(np.array([0]))[0]) == pytest.approx(550)


def test_incremental_share_and_sub_forms_equal_the_reference() -> None:
    """The per-GPU (sharing) and whole-GPU shortcuts against recomputing the node from scratch: equal
    exactly, since both are integer sums of popularity weight × milli-GPU (``combine``)."""

    def reference(k: int, gl: np.ndarray) -> int:
        return int(b.ledger.combine(rows[[k]], cpu[[k]] - 3000, *b.ledger.counts_of(gl))[0])

    b = Bench([node(f"n{i}", 8) for i in range(30)], "FGD", TARGET)
    rng = np.random.default_rng(3)
    b.ledger.gpu_left[:] = rng.choice([0, 120, 500, 730, 1000], size=b.ledger.gpu_left.shape)
    rows = np.arange(30)
    b.ledger._recount(rows)
    cpu = b.ledger.cpu_left(rows)
    pos, values, after = b.ledger.share_candidates(rows, 3000, 500)
    for k, v, f in zip(pos, values, after, strict=True):
        gl = b.ledger.gpu_left[[k]].copy()
        gl[0, int(np.flatnonzero(gl[0] == v)[0])] -= 500
        assert f == reference(k, gl)
    whole = b.ledger.frag_after_sub(rows, GpuShape(3000, 2, 1000))
    for k in rows:
        gl = np.sort(b.ledger.gpu_left[[k]], axis=1)
        taken = np.flatnonzero(gl[0] >= 1000)[:2]
        if len(taken) == 2:
            gl[0, taken] = 0
            assert whole[k] == reference(int(k), gl)


def test_fragment_amount_is_the_exact_sum_rounded_once_whatever_rows_are_computed_together() -> None:
    """1,200 random 8-GPU nodes (enough rows for a BLAS product to block them, which made a row's sum
    depend on how many rows were multiplied with it): every node's fragment amount, computed over all
    rows and for the node alone, equals the exact rational Σ_t p_t · F_t rounded once to a float, F_t
    derived here from the definition (free milli on GPUs below the shape's milli when the shape fits
    by GPUs and CPU, else all free milli; the CPU shape: all free milli). Popularities 1/3 each, which
    no float holds exactly."""
    target = typical((1000, 1, 500, 1 / 3), (2000, 2, 1000, 1 / 3), (2000, 0, 0, 1 / 3))
    b = Bench([node(f"n{i}", 8) for i in range(1200)], "FGD", target)
    rng = np.random.default_rng(7)
    gl = rng.choice([0, 120, 250, 500, 730, 1000], size=(1200, 8))
    cpu = rng.choice([0, 1000, 1500, 4000], size=1200)
    rows = np.arange(1200)
    together = b.ledger.frag_of(rows, cpu, gl)
    for k in range(0, 1200, 7):
        alone = b.ledger.frag_of(rows[[k]], cpu[[k]], gl[[k]])[0]
        exact = Fraction(0)
        for cpu_t, count_t, milli_t, weight_t in zip(
            target.cpu, target.count, target.milli, target.weight, strict=True
        ):
            free = [int(v) for v in gl[k]]
            fits = milli_t > 0 and sum(v >= milli_t for v in free) >= count_t and cpu[k] >= cpu_t
            lost = sum(v for v in free if v < milli_t) if fits else sum(free)
            exact += Fraction(int(weight_t), target.scale) * lost
        assert together[k] == alone == float(exact), k


def test_typical_pods_cover_95_percent_by_popularity() -> None:
    """``GetTypicalPods``: most popular shapes until 95 % of pods, ties by the larger shape, renormalised."""
    a, b2, c = GpuShape(1000, 1, 500), GpuShape(2000, 1, 1000), GpuShape(500, 0, 0)
    shapes = [(a, None)] * 60 + [(b2, None)] * 36 + [(c, None)] * 4
    t = build_typical_pods(shapes)
    # 60 % then 96 % ≥ 95 %: c (4 %) is left out; popularity renormalised over 96 pods
    assert list(t.milli) == [500, 1000]
    assert list(t.freq) == pytest.approx([60 / 96, 36 / 96])


def test_typical_pods_carry_the_mean_memory_of_their_pods() -> None:
    """Memory is not part of a shape's key (FGD's shapes are CPU and GPU): pods of one shape asking 10
    and 20 units of memory make one shape with memory 15; another shape keeps its own 7."""
    small, big, other = GpuShape(1000, 1, 500, 10), GpuShape(1000, 1, 500, 20), GpuShape(2000, 1, 1000, 7)
    t = build_typical_pods([(small, None), (big, None), (other, None)], 100)
    assert list(t.milli) == [500, 1000]
    assert t.memory is not None and list(t.memory) == [15, 7]


def test_fragment_measured_in_a_dry_run_is_not_served_after_a_real_change() -> None:
    """``what_if`` restores node generations, so a dry-run pod and a later real one on the same node
    leave it at the same generation. A 2-GPU node with 64 CPUs; dry run: a CPU pod of 63,500 milli leaves
    500, too little for S1 and S2 (1 CPU each), so all 2000 free milli count for every shape: 2000. Real:
    a CPU pod of 1,000 leaves 63,000; S1 and S2 fit with no GPU too small, S3 sees 2000 · 0.25 = 500.
    Cached against the generation, the dry run's 2000 would be served; the per-node version never
    repeats (as ``node_cache.NodeCache``'s)."""
    b = Bench([node("n", 2)], "FGD", TARGET)
    row = np.array([0])
    with b.cluster.what_if():
        b.cluster.add_pod(pod("dry", 0, 0, cpu=63_500), 0)
        dry_generation = int(b.cluster.generation[0])
        assert float(b.ledger.node_frag(row)[0]) == 2000
    b.cluster.add_pod(pod("real", 0, 0, cpu=1000), 0)
    assert int(b.cluster.generation[0]) == dry_generation  # the collision
    assert float(b.ledger.node_frag(row)[0]) == 500
