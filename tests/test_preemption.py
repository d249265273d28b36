"""DefaultPreemption, pinned to kube-scheduler 1.34 defaultpreemption + framework/preemption:
eligibility, candidate nodes, minimal victims with PDB-aware reprieve, and pickOneNodeForPreemption."""

from __future__ import annotations

from typing import Any

from kubegpu.testing.builders import make_node, make_pod
from tests.conftest import scheduler_for


def pdb(name: str, ns: str, app: str, allowed: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": ns},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
        "status": {"disruptionsAllowed": allowed},
    }  # fmt: skip


def test_only_strictly_lower_priority_pods_are_victims() -> None:
    s = scheduler_for(make_node("n").gpus(2).obj(), make_pod("same").gpu(2).priority(10).on("n").obj())
    result = s.schedule_one(make_pod("p").gpu(1).priority(10).parsed())
    assert result.nominated_node == ""
    assert result.message == (
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_as_few_victims_as_possible_and_the_least_important_go_first() -> None:
    """Reprieve walks victims from most to least important (priority, then earlier start) and keeps
    every pod whose return still lets the preemptor fit."""
    s = scheduler_for(
        make_node("n").gpus(4).obj(),
        make_pod("old").gpu(1).priority(1).on("n", started="2026-01-01T00:00:00Z").obj(),
        make_pod("new").gpu(1).priority(1).on("n", started="2026-01-02T00:00:00Z").obj(),
        make_pod("low").gpu(1).priority(0).on("n").obj(),
        make_pod("mid").gpu(1).priority(5).on("n").obj(),
    )
    result = s.schedule_one(make_pod("p").gpu(2).priority(100).parsed())
    assert result.nominated_node == "n"
    assert [v.name for v in result.victims] == ["new", "low"]
    # 1.37 (kubernetes PR #140180) says where and how many; the real 1.37.2 scheduler printed the same
    # form in tests/realkube/golden/1.37.2.json (case preemption-succeeds)
    assert result.message == (
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. "
        "preemption: found a potential placement for pod on node n, preempting 2 victims"
    )


def test_a_successful_preemption_added_no_text_before_1_37() -> None:
    """1.30–1.36: a successful PostFilter returns a Status without a message, so FailedScheduling ends with the
    filter histogram (the 1.35.4 and 1.36.3 goldens, case preemption-succeeds)."""
    objs = (make_node("n").gpus(4).obj(), make_pod("lo").gpu(4).priority(1).on("n").obj())
    for version in ("1.33", "1.36"):
        result = scheduler_for(*objs, kube_version=version).schedule_one(
            make_pod("p").gpu(4).priority(100).parsed()
        )
        assert (result.nominated_node, result.message) == (
            "n",
            "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
        )


def test_node_choice_prefers_no_pdb_violation_then_lower_victim_priority() -> None:
    objs = [
        make_node("guarded").gpus(1).obj(),
        make_pod("svc").gpu(1).labels(app="svc").on("guarded").obj(),
        pdb("svc", "default", "svc", 0),
        make_node("important").gpus(1).obj(),
        make_pod("imp").gpu(1).priority(50).on("important").obj(),
        make_node("cheap").gpus(1).obj(),
        make_pod("cheap").gpu(1).priority(10).on("cheap").obj(),
    ]
    result = scheduler_for(*objs).schedule_one(make_pod("p").gpu(1).priority(100).parsed())
    assert result.nominated_node == "cheap"
    # without the cheap node, the PDB-guarded node still loses to a non-violating one despite its lower priority
    result = scheduler_for(*objs[:5]).schedule_one(make_pod("p").gpu(1).priority(100).parsed())
    assert result.nominated_node == "important"


def test_fewer_victims_win_when_priorities_tie() -> None:
    objs = [
        make_node("two").gpus(2).obj(),
        make_pod("a").gpu(1).on("two").obj(),
        make_pod("b").gpu(1).on("two").obj(),
        make_node("one").gpus(2).obj(),
        make_pod("c").gpu(2).on("one").obj(),
    ]
    result = scheduler_for(*objs).schedule_one(make_pod("p").gpu(2).priority(1).parsed())
    # sum of (priority + MaxInt32 + 1) is lower on "one" (one victim) → it wins before the count criterion
    assert (result.nominated_node, [v.name for v in result.victims]) == ("one", ["c"])


def test_preemption_policy_never() -> None:
    s = scheduler_for(make_node("n").gpus(1).obj(), make_pod("low").gpu(1).on("n").obj())
    result = s.schedule_one(make_pod("p").gpu(1).priority(100).preemption_policy("Never").parsed())
    assert result.message == (
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: not eligible due to preemptionPolicy=Never."
    )


def test_unresolvable_nodes_are_not_candidates() -> None:
    s = scheduler_for(make_node("small").gpus(2).obj(), make_pod("low").gpu(2).on("small").obj())
    result = s.schedule_one(make_pod("p").gpu(4).priority(100).parsed())
    assert result.message == (
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_node_still_too_small_after_removing_victims_reports_the_filter_reason() -> None:
    s = scheduler_for(
        make_node("n").gpus(4).obj(),
        make_pod("high").gpu(3).priority(1000).on("n").obj(),
        make_pod("low").gpu(1).on("n").obj(),
    )
    result = s.schedule_one(make_pod("p").gpu(2).priority(100).parsed())
    assert result.message == (
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. "
        "preemption: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    )


def test_dry_runs_leave_the_cluster_exactly_as_it_was() -> None:
    s = scheduler_for(
        make_node("n").gpus(2).obj(),
        make_pod("a").gpu(1).on("n").obj(),
        make_pod("b").gpu(1).on("n").obj(),
    )
    before = (s.cluster.requested.copy(), s.cluster.pod_count.copy(), dict(s.cluster.placement))
    s.schedule_one(make_pod("p").gpu(2).priority(10).parsed())
    assert (s.cluster.requested == before[0]).all()
    assert (s.cluster.pod_count == before[1]).all()
    assert s.cluster.placement == before[2]


def test_nodes_still_short_after_removing_every_lower_pod_need_no_dry_run(monkeypatch: Any) -> None:
    """Upstream ``SelectVictimsOnNode`` (pkg/scheduler/framework/preemption, 1.34) removes every lower-priority
    pod, runs the filters and answers with the first failing status. Where NodeResourcesFit is still short
    with them gone, that status is read off the columns: n0–n2 (4 GPUs; 3 held at priority 1000, 1 at 0)
    free only 1 of the 2 the pod needs; on w the low pod holds all 4, so only w gets a victim search and is
    chosen (no filter after NodeResourcesFit reads its pods here, so that search is NodeResourcesFit's
    reprieve on the columns, ``_victims_by_fit``, not a dry run)."""
    from kubegpu.scheduler.plugins.default_preemption import DefaultPreemption

    objs = []
    for n in ("n0", "n1", "n2"):
        objs += [
            make_node(n).gpus(4).obj(),
            make_pod(f"high-{n}").gpu(3).priority(1000).on(n).obj(),
            make_pod(f"low-{n}").gpu(1).on(n).obj(),
        ]
    objs += [make_node("w").gpus(4).obj(), make_pod("low-w").gpu(4).on("w").obj()]
    s = scheduler_for(*objs)
    dry_runs: list[int] = []
    real = DefaultPreemption.select_victims_on_node

    def counted(self: DefaultPreemption, state: Any, pod: Any, idx: int) -> Any:
        dry_runs.append(idx)
        return real(self, state, pod, idx)

    real_by_fit = DefaultPreemption._victims_by_fit

    def counted_by_fit(self: DefaultPreemption, state: Any, pod: Any, idx: int, reading: Any) -> Any:
        dry_runs.append(idx)
        return real_by_fit(self, state, pod, idx, reading)

    monkeypatch.setattr(DefaultPreemption, "select_victims_on_node", counted)
    monkeypatch.setattr(DefaultPreemption, "_victims_by_fit", counted_by_fit)
    result = s.schedule_one(make_pod("p").gpu(2).priority(100).parsed())
    assert [s.cluster.nodes[i].name for i in dry_runs] == ["w"]
    assert (result.nominated_node, [v.name for v in result.victims]) == ("w", ["low-w"])
    # the same nodes without w: every one answers with the filter's status, counted as a dry run would
    s = scheduler_for(*objs[:9])
    result = s.schedule_one(make_pod("p").gpu(2).priority(100).parsed())
    assert result.message == (
        "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. "
        "preemption: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    )


def test_a_dry_run_leaves_the_order_of_the_nodes_pods_as_it_was() -> None:
    """Victims of equal importance are taken in the node's pod order: kubernetes v1.34.4
    ``pkg/scheduler/framework/preemption/preemption.go`` ``DryRunPreemption`` gives ``SelectVictimsOnNode`` a
    copy (``nodeInfoCopy := potentialNodes[...].Snapshot()``), which sorts ``nodeInfo.GetPods()`` with
    ``sort.Slice`` (insertion sort up to 12 pods, so in that order among equals), so a dry run never reorders
    the cache. Asking twice names the same victims in the same order; a rollback used to put the removed pods
    back at the end, so each dry run on a node reversed the order the next one read."""
    objs = [make_node("n").gpus(4).obj()]
    objs += [make_pod(name).gpu(1).on("n").obj() for name in ("a", "b", "c", "d")]
    s = scheduler_for(*objs)
    pod = make_pod("p").gpu(3).priority(10).parsed()
    first = [v.name for v in s.schedule_one(pod, assume=False).victims]
    assert list(s.cluster.pods_on[0]) == [f"default/{n}" for n in "abcd"]
    again = [v.name for v in s.schedule_one(pod, assume=False).victims]
    # a goes back first and leaves the 3 GPUs the pod needs; b, c and d do not fit beside it
    assert first == again == ["b", "c", "d"]


def test_a_reprieved_victim_is_back_on_the_devices_it_held(monkeypatch: Any) -> None:
    """Reprieving a victim (upstream ``SelectVictimsOnNode``'s ``reprievePod``, kubernetes v1.34.4
    plugins/defaultpreemption/default_preemption.go) means it is never evicted: it keeps its GPUs. kubegpu
    removes and re-adds it in the dry run, so the device ledger must give it back the devices it held, not
    pick free ones afresh (b holds n-gpu2; re-added first, as the earlier started, it used to get n-gpu1)."""
    from kubegpu.devices.node_devices import node_devices
    from kubegpu.scheduler.assembly import SchedulerSpec, assemble
    from kubegpu.scheduler.cluster import ClusterState
    from tests.conftest import snapshot_of

    snap = snapshot_of(
        make_node("n").gpus(4).obj(),
        make_pod("c").gpu(1).priority(1000).on("n").obj(),
        make_pod("a").gpu(1).on("n", started="2026-01-02T00:00:00Z").obj(),
        make_pod("b").gpu(1).on("n", started="2026-01-01T00:00:00Z").obj(),
    )
    from kubegpu.scheduler.plugins.default_preemption import DefaultPreemption

    cluster = ClusterState(snap.nodes, snap.pods, {n.name: node_devices(n) for n in snap.nodes})
    s = assemble(SchedulerSpec("default", seed=0), cluster)
    before = {k: cluster.devices.assignment(k, 0) for k in cluster.pods_on[0]}
    # no filter after NodeResourcesFit reads the node's pods here: the victims come off the columns
    fast = s.schedule_one(make_pod("p").gpu(2).priority(10).parsed(), assume=False)
    assert [v.name for v in fast.victims] == ["a"]
    # the dry run itself (where another filter reads the pods, or devices are placed): forced here
    monkeypatch.setattr(DefaultPreemption, "_decided_after_fit", lambda self, state, pod, rows: ({}, set()))
    seen: list[dict[str, Any]] = []
    real = s.framework.run_filters_with_nominated

    def recorded(state: Any, pod: Any, view: Any) -> Any:
        seen.append({k: cluster.devices.assignment(k, 0) for k in cluster.pods_on[0]})
        return real(state, pod, view)

    s.framework.run_filters_with_nominated = recorded  # type: ignore[method-assign]
    result = s.schedule_one(make_pod("p").gpu(2).priority(10).parsed(), assume=False)
    assert [v.name for v in result.victims] == ["a"]
    assert before["default/b"] == {"main": {"nvidia.com/gpu": ["n-gpu2"]}}
    # every filter pass of the dry run: all lower pods gone, b back, then a back (rejected)
    assert [sorted(held) for held in seen] == [["default/c"], ["default/b", "default/c"], sorted(before)]
    assert all(held[k] == before[k] for held in seen for k in held)
