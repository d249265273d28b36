"""NodeResourcesFit and the resource scorers, pinned to kube-scheduler 1.34 noderesources (fit.go,
least_allocated.go, most_allocated.go, requested_to_capacity_ratio.go, balanced_allocation.go)."""

from __future__ import annotations

import numpy as np
import pytest

from kubegpu.model import parse
from kubegpu.scheduler import resource_allocation as ra
from kubegpu.scheduler.framework import PluginSpec, Profile
from kubegpu.scheduler.registry import default_profile
from kubegpu.scheduler.status import Code
from kubegpu.testing.builders import make_node, make_pod
from tests.conftest import scheduler_for
from tests.realkube.cases import CASES


def fit_status(node, pod):  # type: ignore[no-untyped-def]
    s = scheduler_for(node.obj(), *[p.obj() for p in pod[1:]])
    from kubegpu.scheduler.framework import CycleState

    state = CycleState()
    s.framework.run_pre_filter(state, pod[0].parsed(), s.cluster)
    return s.framework.run_filters(state, pod[0].parsed(), s.cluster.view(0))


@pytest.mark.parametrize(
    ("node_gpus", "used", "want", "code", "reasons"),
    [
        (8, 6, 2, Code.SUCCESS, ()),
        (8, 6, 4, Code.UNSCHEDULABLE, ("Insufficient nvidia.com/gpu",)),
        (8, 0, 9, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient nvidia.com/gpu",)),
        (0, 0, 1, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient nvidia.com/gpu",)),
    ],
    ids=[
        "fits in free",
        "exceeds free: preemption may help",
        "exceeds allocatable: unresolvable",
        "resource absent",
    ],
)
def test_extended_resource_fit(
    node_gpus: int, used: int, want: int, code: Code, reasons: tuple[str, ...]
) -> None:
    node = make_node("n").gpus(node_gpus) if node_gpus else make_node("n")
    running = [make_pod(f"r{i}").gpu(1).on("n") for i in range(used)]
    status = fit_status(node, [make_pod("p").gpu(want), *running])
    assert (status.code, status.texts()) == (code, reasons)


def test_all_insufficient_resources_are_reported_in_upstream_order() -> None:
    """TestEnoughRequests 'too many resources fails': cpu then memory, then scalars; one status, all reasons."""
    node = make_node("n").capacity(cpu="2", memory="2Gi").gpus(1)
    pod = make_pod("p").requests(cpu="3", memory="1Gi").gpu(2).requests(memory="3Gi")
    status = fit_status(node, [pod])
    assert status.texts() == ("Insufficient cpu", "Insufficient memory", "Insufficient nvidia.com/gpu")


def test_too_many_pods_is_never_unresolvable() -> None:
    node = make_node("n").capacity(pods="1")
    status = fit_status(node, [make_pod("p"), make_pod("r").on("n")])
    assert (status.code, status.texts()) == (Code.UNSCHEDULABLE, ("Too many pods",))


def test_one_unresolvable_reason_makes_the_node_unresolvable() -> None:
    node = make_node("n").capacity(cpu="4").gpus(1)
    status = fit_status(
        node, [make_pod("p").requests(cpu="3").gpu(2), make_pod("r").requests(cpu="2").on("n")]
    )
    assert status.texts() == ("Insufficient cpu", "Insufficient nvidia.com/gpu")
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_sidecar_requests_count_toward_fit() -> None:
    """R11.2: an injected sidecar changes the effective request."""
    node = make_node("n").capacity(cpu="2")
    pod = make_pod("p").requests(cpu="1500m").init_container("mesh", {"cpu": "600m"}, sidecar=True)
    assert fit_status(node, [pod]).texts() == ("Insufficient cpu",)


def test_ignored_resources_are_not_checked() -> None:
    profile = default_profile(plugin_args={"NodeResourcesFit": {"ignoredResourceGroups": ["nvidia.com"]}})
    s = scheduler_for(make_node("n").obj(), profile=profile)
    assert s.schedule_one(make_pod("p").gpu(1).parsed()).node == "n"


def test_least_allocated_formula() -> None:
    """((capacity − requested) × 100) / capacity per resource, then the weighted integer mean."""
    req = np.array([[3000, 5 * 2**30]])
    alloc = np.array([[4000, 10 * 2**30]])
    # cpu: (1000*100)/4000 = 25; memory: 50 → (25 + 50) / 2 = 37
    assert ra.least_allocated(req, alloc, np.array([1, 1])).tolist() == [37]
    assert ra.least_allocated(np.array([[5000, 0]]), alloc, np.array([1, 1])).tolist() == [
        50
    ]  # over capacity scores 0


def test_most_allocated_formula() -> None:
    req = np.array([[3000, 5 * 2**30]])
    alloc = np.array([[4000, 10 * 2**30]])
    assert ra.most_allocated(req, alloc, np.array([1, 1])).tolist() == [62]  # (75 + 50) // 2
    assert ra.most_allocated(np.array([[5000, 0]]), alloc, np.array([1, 1])).tolist() == [
        50
    ]  # clamped to 100


def test_requested_to_capacity_ratio_formula() -> None:
    """Shape {0:0, 100:10} scaled to 0..100; a resource scoring 0 is left out of the mean; Go rounds."""
    score = ra.requested_to_capacity_ratio([(0, 0), (100, 10)])
    # cpu at 25% → 25, memory at 50% → 50: round(75/2) = 38 (37.5 rounds half away from zero)
    assert score(np.array([[1000, 50]]), np.array([[4000, 100]]), np.array([1, 1])).tolist() == [38]
    # cpu at 0% scores 0 and is dropped: memory alone, 50
    assert score(np.array([[0, 50]]), np.array([[4000, 100]]), np.array([1, 1])).tolist() == [50]


def test_broken_linear_truncates_toward_zero_like_go() -> None:
    f = ra.broken_linear([(0, 100), (3, 0)])
    # 100 + (0 − 100)·1/3 = 100 − 33.3…: Go truncates −33.3 to −33, giving 67 (floor division would give 66)
    assert f(np.array([1])).tolist() == [67]


def test_balanced_allocation_formula() -> None:
    """(1 − |f_cpu − f_mem| / 2) × 100, truncated: 50% cpu and 10% memory → 80."""
    assert ra.balanced(np.array([[2000, 1]]), np.array([[4000, 10]])).tolist() == [80]
    assert ra.balanced(np.array([[1, 1, 0]]), np.array([[2, 4, 0]])).tolist() == [87]  # (1 − 0.125) × 100


# Two 8-CPU, 16Gi nodes: a runs 5 CPU and 8Gi (62.5% and 50%), b 6 CPU and 1Gi (75% and 6.25%); the pending pod
# asks 1 CPU and 4Gi. The differential case itself, so the cluster checked here is the one the real scheduler decided.
_BALANCE = next(c for c in CASES if c.name == "balanced-allocation-change")


def test_balanced_allocation_change_formula() -> None:
    """kubernetes PR #135573 (1.36; noderesources/balanced_allocation.go balancedResourceScorer, v1.36.5):
    50 + (50 + balance with the pod − balance without it) / 2, Go int64 division. 100 after, 93 before → 78;
    71 after, 65 before → 78; no change → 75; perfectly balanced to fully imbalanced (50) → 50."""
    assert ra.balance_change(np.array([100, 71, 90, 50]), np.array([93, 65, 90, 100])).tolist() == [
        78,
        78,
        75,
        50,
    ]
    assert ra.balance_change(100, 93) == 78


@pytest.mark.parametrize(("minor", "node"), [("1.34", "a"), ("1.35", "a"), ("1.36", "b"), ("1.37", "b")])
def test_balanced_allocation_scores_the_change_from_1_36(minor: str, node: str) -> None:
    """A pod of 1 CPU and 4Gi on ``_BALANCE``'s two nodes. NodeResourcesFit (LeastAllocated, non-zero requests):
    a (2000·100/8000 + 4·100/16)/2 = 25, b (1000·100/8000 = 12 + 11·100/16 = 68)/2 = 40. Balance with the pod:
    a 75%/75% → 100, b 87.5%/31.25% → (1 − 0.28125)·100 = 71; without: a 62.5%/50% → 93, b 75%/6.25% → 65.
    Up to 1.35 the balance is the score: a 25 + 100 = 125 > b 40 + 71 = 111. From 1.36 (PR #135573) the change
    is: a 50 + (50 + 100 − 93)//2 = 78, b 50 + (50 + 71 − 65)//2 = 78, so a 103 < b 118. The real
    kube-scheduler of each release decides the same (tests/realkube/cases.py balanced-allocation-change)."""
    s = scheduler_for(*_BALANCE.objects, kube_version=minor)
    result = s.schedule_one(parse.parse_pod(_BALANCE.pod, "case"))
    assert result.node == node
    assert result.scores["NodeResourcesBalancedAllocation"] == (100 if node == "a" else 78)


def test_most_allocated_profile_packs_onto_the_busier_node() -> None:
    """A bin-packing profile (MostAllocated on nvidia.com/gpu) keeps whole nodes free for big jobs (R14.2)."""
    fit_args = {
        "scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "nvidia.com/gpu", "weight": 1}]}
    }
    profile = Profile(plugins=(PluginSpec("NodeResourcesFit", 1, fit_args),))
    objs = [
        make_node("empty").gpus(8).obj(),
        make_node("busy").gpus(8).obj(),
        make_pod("r").gpu(4).on("busy").obj(),
    ]
    assert scheduler_for(*objs, profile=profile).schedule_one(make_pod("p").gpu(1).parsed()).node == "busy"


def test_default_profile_does_not_score_gpus_at_all() -> None:
    """R14.1: the default scorers look at cpu and memory only, so a half-used 8-GPU node and an empty one
    tie for a 1-GPU pod, and the pick is random — nothing protects the empty node for an 8-GPU job."""
    s = scheduler_for(make_node("empty").gpus(8).obj(), make_node("busy").gpus(8).obj(),
                      make_pod("r").gpu(4).requests(cpu="0", memory="0").on("busy").obj())  # fmt: skip
    from kubegpu.scheduler.framework import CycleState

    pod = make_pod("p").gpu(1).parsed()
    state = CycleState()
    s.framework.run_pre_filter(state, pod, s.cluster)
    total, _ = s.framework.run_scores(state, pod, s.cluster, np.array([0, 1]))
    assert total[0] == total[1]


@pytest.mark.parametrize("k", [3, 11, 12, 14])
def test_wide_requests_the_batch_filter_reports_as_the_per_node_filter(k: int) -> None:
    """A request of ``k`` extended resources (plus cpu) on three nodes: n0 has 2 of each (fits), n1 has 1
    of each (each short, and above allocatable: UnschedulableAndUnresolvable from 1.34, kubernetes PR
    #131345), n2 has none (each short). The batch filter keys shortage patterns by a table up to 12
    columns (pods + 11 resources) and per row past that: both must say what ``filter`` says per node,
    the reasons in upstream order (cpu, memory, then scalar resources by name: fit.go fitsRequest)."""
    names = [f"example.com/r{j:02d}" for j in range(k)]
    nodes = [
        make_node("n0").capacity(cpu="8", **dict.fromkeys(names, "2")),
        make_node("n1").capacity(cpu="8", **dict.fromkeys(names, "1")),
        make_node("n2").capacity(cpu="8"),
    ]
    # extended resources need limits equal to requests (the API server refuses them otherwise)
    pod = make_pod("p").requests(cpu="1", **dict.fromkeys(names, "2")).limits(**dict.fromkeys(names, "2"))
    s = scheduler_for(*(n.obj() for n in nodes), pod.obj())
    from kubegpu.scheduler.framework import CycleState

    state = CycleState()
    parsed = pod.parsed()
    s.framework.run_pre_filter(state, parsed, s.cluster)
    fit = next(p for p in s.framework.filter_plugins if p.name == "NodeResourcesFit")
    rows = np.arange(len(s.cluster), dtype=np.intp)
    codes, reason_ids = fit.filter_batch(state, parsed, s.cluster, rows)  # type: ignore[attr-defined]
    short = tuple(f"Insufficient {n}" for n in names)
    want = {"n0": (Code.SUCCESS, ()), "n1": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, short)}
    want["n2"] = want["n1"]
    for i in rows:
        name = s.cluster.nodes[int(i)].name
        scalar = fit.filter(state, parsed, s.cluster.view(int(i)))
        got = (Code(int(codes[i])), s.framework.reason_strings(int(reason_ids[i])))
        assert got == (scalar.code, scalar.texts()) == want[name], name


def test_columns_gives_the_submatrix_by_either_path() -> None:
    """``cluster.columns`` picks few rows row first and many column by column (a speed choice only): both
    must be ``matrix[np.ix_(rows, cols)]``, columns in the order asked, repeated or not."""
    import numpy as np

    from kubegpu.scheduler.cluster import FEW_ROWS_PER_COLUMN, columns

    rng = np.random.default_rng(7)
    matrix = rng.integers(-(10**12), 10**12, size=(3000, 9))
    for cols in ([4, 0, 2], [8], [1, 1, 5, 3, 0, 7]):
        c = np.array(cols, dtype=np.intp)
        for k in (0, 1, FEW_ROWS_PER_COLUMN * len(cols) - 1, FEW_ROWS_PER_COLUMN * len(cols), 3000):
            rows = np.sort(rng.choice(3000, size=k, replace=False)).astype(np.intp)
            assert np.array_equal(columns(matrix, rows, c), matrix[np.ix_(rows, c)])


def test_few_and_many_rows_and_a_column_added_later_filter_as_the_per_node_filter() -> None:
    """The batch Filter compares few rows as whole rows of ``free`` and many column by column (a speed
    choice): over 240 nodes of random capacity with pods placed, every subset gives per row what the
    per-node ``filter`` gives (fit.go fitsRequest: Too many pods, cpu, memory, then scalars by name). A pod
    asking for a resource no node has adds a column after the first pod's vector was made: still equal."""
    from kubegpu.scheduler.framework import CycleState

    rng = np.random.default_rng(11)
    nodes = [
        make_node(f"n{i}")
        .capacity(cpu=str(int(rng.integers(1, 9))), memory=f"{int(rng.integers(1, 9))}Gi", pods="3")
        .gpus(int(rng.integers(0, 4)))
        .obj()
        for i in range(240)
    ]
    placed = [
        make_pod(f"q{j}").requests(cpu="1", memory="1Gi").on(f"n{int(rng.integers(0, 240))}").obj()
        for j in range(300)
    ]
    s = scheduler_for(*nodes, *placed)
    fit = next(p for p in s.framework.filter_plugins if p.name == "NodeResourcesFit")
    pods = [
        make_pod("a").requests(cpu="3", memory="2Gi").gpu(2).parsed(),
        make_pod("b")
        .requests(cpu="2", **{"example.com/new": "1"})
        .limits(**{"example.com/new": "1"})
        .parsed(),
    ]
    for pod in (*pods, pods[0]):  # "a" again: its vector was made before "b" added a column
        state = CycleState()
        s.framework.run_pre_filter(state, pod, s.cluster)
        want = [fit.filter(state, pod, s.cluster.view(i)) for i in range(len(s.cluster))]
        if pod.name == "a":  # fits some nodes, not others (short, and above allocatable on some)
            assert {w.code for w in want} == {
                Code.SUCCESS,
                Code.UNSCHEDULABLE,
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            }
        else:  # no node has the resource: above allocatable everywhere (1.34+, kubernetes PR #131345)
            assert {w.code for w in want} == {Code.UNSCHEDULABLE_AND_UNRESOLVABLE}
        for rows in (np.arange(240), np.arange(0, 240, 7), np.array([5]), np.arange(17, 60)):
            rows = rows.astype(np.intp)
            codes, ids = fit.filter_batch(state, pod, s.cluster, rows)  # type: ignore[attr-defined]
            for j, i in enumerate(rows.tolist()):
                got = (Code(int(codes[j])), s.framework.reason_strings(int(ids[j])))
                assert got == (want[i].code, want[i].texts()), (pod.name, i)
