"""Each packing policy's node and GPU choice on small cases worked out by hand (FGD artifact semantics)."""

from __future__ import annotations

from collections import Counter

from kubegpu.scheduler.gpu_ledger import MAX_SPEC_CPU
from tests.sim.builders import Bench, node, pod, typical


def test_fgd_picks_the_gpu_and_node_that_keep_the_target_shape_whole() -> None:
    """Target: one shape, 1 GPU × 600 milli. A 300-milli pod on n1 (free [700, 1000]): GPU0 would leave
    [400, 1000] (400 < 600 is fragment: Δ = −400, score int(100·σ(−0.4)) = 40), GPU1 leaves [700, 700]
    (fragment 0, Δ = 0, score 50), so n1 scores 50 with GPU1. n2 (free [1000, 1000]) leaves a 700 and a
    1000: fragment 0, score 50. The tie goes to the first node, n1, and Reserve uses GPU1."""
    b = Bench([node("n1", 2), node("n2", 2)], "FGD", typical((1000, 1, 600, 1.0)))
    b.place(pod("old", 1, 300), "n1", (0,))
    b.scheduler.rng = FIRST  # ties to the first node, as the packing runs do
    assert b.schedule(pod("new", 1, 300)) == ("n1", (1,))


def test_best_fit_gpu_choice_differs_from_fgd() -> None:
    """Same state under BestFit: the node score prefers the fuller node n1 and Reserve takes the GPU
    with the least free milli that fits (GPU0: 700), which FGD avoided."""
    b = Bench([node("n1", 2), node("n2", 2)], "BestFit")
    b.place(pod("old", 1, 300), "n1", (0,))
    assert b.schedule(pod("new", 1, 300)) == ("n1", (0,))


def test_best_fit_prefers_least_leftover() -> None:
    """Pod 1 CPU + 500 milli. n-small (8 CPU, 2 GPUs): 1 − ½·7000/128000 − ½·1500/8000 → 87;
    n-big (64 CPU, 8 GPUs): 1 − ½·63000/128000 − ½·7500/8000 → 28; min–max → 100 and 0."""
    b = Bench([node("n-big", 8, cpu=64_000), node("n-small", 2, cpu=8_000)], "BestFit")
    assert b.schedule(pod("p", 1, 500, cpu=1000))[0] == "n-small"


def test_dot_product_prefers_the_node_whose_free_vector_is_least_aligned() -> None:
    """Pod 32 CPU + 1 GPU. a (128 CPU, 1 GPU): (1·¼ + ⅛·⅛)/2 = 0.133 → 86; b (32 CPU, 8 GPUs):
    (¼·¼ + 1·⅛)/2 = 0.094 → 90: b wins."""
    b = Bench([node("a", 1, cpu=MAX_SPEC_CPU), node("b", 8, cpu=32_000)], "DotProd")
    assert b.schedule(pod("p", 1, 1000, cpu=32_000))[0] == "b"


def test_gpu_packing_shares_a_used_gpu_before_opening_a_free_one() -> None:
    """A 300-milli pod: idle 8-GPU node scores max(33 − 8, 8) = 25; the node whose GPU0 has 600 free
    scores 100 − (60)/10 = 94 (case 1, a shared GPU)."""
    b = Bench([node("idle", 8), node("used", 8)], "GpuPacking")
    b.place(pod("old", 1, 400), "used", (0,))
    assert b.schedule(pod("p", 1, 300)) == ("used", (0,))


def test_gpu_packing_whole_gpu_prefers_used_node() -> None:
    """A 1-GPU pod: idle 2-GPU node → max(33 − 2, 2) = 31; a node with one GPU taken → case 2,
    max(50 − 1, 33) = 49."""
    b = Bench([node("idle", 2), node("used", 2)], "GpuPacking")
    b.place(pod("old", 1, 1000), "used", (0,))
    assert b.schedule(pod("p", 1, 1000)) == ("used", (1,))


def test_gpu_clustering_gathers_pods_of_one_kind() -> None:
    """A sharing pod: node with only sharing pods → 75 + 25·(8000 − 7500)//8000 = 76; node with a
    1-GPU pod → 0 + 25·1000//8000 = 3; empty node → 25."""
    b = Bench([node("empty", 8), node("whole", 8), node("share", 8)], "GpuClustering")
    b.place(pod("w", 1, 1000), "whole", (0,))
    b.place(pod("s", 1, 500), "share", (0,))
    assert b.schedule(pod("p", 1, 200))[0] == "share"


def test_random_spreads_over_feasible_nodes_only() -> None:
    """RandomScore: one feasible node drawn uniformly per pod; the 1-GPU node cannot take 2 GPUs."""
    b = Bench([node(f"n{i}", 8) for i in range(4)] + [node("small", 1)], "Random", seed=0)
    chosen = Counter(b.schedule(pod(f"p{i}", 2, 1000, cpu=100))[0] for i in range(12))
    assert "small" not in chosen
    assert len(chosen) == 4


def test_gpu_model_constraint_is_node_affinity() -> None:
    """gpu_spec becomes required node affinity on nvidia.com/gpu.product: only the V100M32 node fits."""
    b = Bench([node("t4", 8, model="T4"), node("v100", 8, model="V100M32")], "BestFit")
    assert b.schedule(pod("p", 1, 1000, spec=frozenset({"V100M32", "A10"})))[0] == "v100"


def test_sharing_pod_never_spans_gpus() -> None:
    """GpuShare filter: 600 milli needs ONE GPU with 600 free; [500, 500] has 1000 in total but no such GPU."""
    b = Bench([node("n", 2)], "BestFit")
    b.place(pod("a", 1, 500), "n", (0,))
    b.place(pod("b", 1, 500), "n", (1,))
    assert b.schedule(pod("p", 1, 600))[0] is None


class _First:
    def integers(self, high: int) -> int:
        return 0


FIRST = _First()
