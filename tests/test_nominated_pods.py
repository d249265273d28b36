"""Nominated pods in filtering, pinned to kube-scheduler 1.34 ``framework/runtime/framework.go`` and
``schedule_one.go``:

- ``RunFilterPluginsWithNominatedPods`` / ``addGENominatedPods``: pods nominated to a node whose priority
  is >= the incoming pod's (and that are not the pod itself) are added to the node for a first filter
  pass; only when that pass succeeds and pods were added, a second pass without them runs, and its
  status is the answer; a failing first pass is the answer as it stands;
- ``evaluateNominatedNode``: a pod with ``status.nominatedNodeName`` tries that node alone first;
- ``SelectVictimsOnNode`` filters with nominated pods too;
- DefaultPreemption without candidates returns ``NewPostFilterResultWithNominatedNode("")`` (the
  nomination is cleared); ``assume`` deletes the pod's nomination.

Expected messages are worked out by hand from the node sizes and kube-scheduler's FitError format.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kubegpu.model.objects import Pod
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.framework import CycleState, Framework, Handle, PluginSpec, Profile
from kubegpu.scheduler.loop import run_queue
from kubegpu.scheduler.reasons import Message
from kubegpu.scheduler.registry import default_profile, in_tree_registry, kubegpu_profile
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.scheduler.status import SUCCESS, Status, unschedulable
from kubegpu.testing.builders import PodBuilder, make_node, make_pod
from tests.conftest import scheduler_for
from tests.dgx_placement import UUIDS, dgx_node, engine, holder


def nominated(builder: PodBuilder, node: str) -> dict[str, Any]:
    raw = builder.obj()
    raw["status"]["nominatedNodeName"] = node
    return raw


def four_gpus_two_used() -> list[dict[str, Any]]:
    return [make_node("n").gpus(4).obj(), make_pod("running").gpu(2).on("n").obj()]


def with_nomination(*objs: dict[str, Any], pending: dict[str, Any]) -> Scheduler:
    s = scheduler_for(*objs)
    pod = build_snapshot([("t", pending)]).pods[0]
    s.cluster.nominate(pod, pod.nominated_node_name)
    return s


BIG = nominated(make_pod("big").gpu(2).priority(100), "n")  # preempted for: the 2 free GPUs are its


def test_a_pod_of_lower_or_equal_priority_yields_to_the_nominated_pod() -> None:
    s = with_nomination(*four_gpus_two_used(), pending=BIG)
    for prio in (0, 100):
        result = s.schedule_one(make_pod("small").gpu(1).priority(prio).parsed(), preempt=False)
        # first pass: 2 running + 2 nominated + 1 > 4
        assert result.message == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    assert s.cluster.requested[0, s.cluster.col["nvidia.com/gpu"]] == 2000  # the what-if pass rolled back


def test_a_pod_of_higher_priority_may_take_the_room() -> None:
    s = with_nomination(*four_gpus_two_used(), pending=BIG)
    assert s.schedule_one(make_pod("urgent").gpu(1).priority(101).parsed()).node == "n"


def test_the_nominated_pod_does_not_count_itself_and_its_nomination_ends_when_assumed() -> None:
    s = with_nomination(*four_gpus_two_used(), pending=BIG)
    big = build_snapshot([("t", BIG)]).pods[0]
    result = s.schedule_one(big)
    assert result.node == "n" and result.evaluated_nodes == 1
    assert s.cluster.nominated == {} and s.cluster.nominated_to == {}


def test_the_nominated_node_is_tried_alone_first() -> None:
    """Two fitting nodes: LeastAllocated prefers the empty one, but the nominated node passes on its own."""
    objs = [
        make_node("busy").gpus(8).obj(),
        make_pod("r").gpu(6).requests(cpu="60").on("busy").obj(),
        make_node("idle").gpus(8).obj(),
    ]
    pod = build_snapshot([("t", nominated(make_pod("p").gpu(1).priority(5), "busy"))]).pods[0]
    assert (
        scheduler_for(*objs).schedule_one(build_snapshot([("t", make_pod("p").gpu(1).obj())]).pods[0]).node
        == "idle"
    )
    result = scheduler_for(*objs).schedule_one(pod)
    assert (result.node, result.evaluated_nodes, result.feasible_nodes) == ("busy", 1, 1)


class PodCount:
    """Test plugin: rejects a node that holds any pod, naming how many (so two passes differ)."""

    name: ClassVar[str] = "PodCount"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.want_company = bool(args.get("wantCompany"))

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        count = node.pod_count
        if self.want_company:  # like required pod affinity: needs another pod on the node
            return SUCCESS if count else unschedulable(Message("node(s) had no pods"))
        return unschedulable(Message(f"node(s) had {count} pod(s)")) if count else SUCCESS


def count_scheduler(*objs: dict[str, Any], want_company: bool) -> Scheduler:
    snap = build_snapshot([("t", o) for o in objs])
    base = default_profile()
    profile = Profile(
        base.scheduler_name, (*base.plugins, PluginSpec("PodCount", 0, {"wantCompany": want_company}))
    )
    registry = {**in_tree_registry(), "PodCount": PodCount}
    s = Scheduler(Framework(profile, registry), ClusterState(snap.nodes, snap.pods))
    for p in snap.pending_pods():
        s.cluster.nominate(p, p.nominated_node_name)
    return s


def test_a_passing_first_pass_is_checked_again_without_the_nominated_pods() -> None:
    """The empty node passes with the nominated pod counted, fails without it: upstream's second pass
    makes the answer the failure."""
    s = count_scheduler(
        make_node("n").gpus(4).obj(), nominated(make_pod("nom").priority(10), "n"), want_company=True
    )
    result = s.schedule_one(make_pod("p").priority(0).parsed(), preempt=False)
    assert result.message == "0/1 nodes are available: 1 node(s) had no pods."


def test_a_failing_first_pass_is_the_answer() -> None:
    """1 running pod + 1 nominated: the first pass says 2 pods; the plain pass (1 pod) never runs."""
    s = count_scheduler(
        make_node("n").gpus(4).obj(),
        make_pod("r").on("n").obj(),
        nominated(make_pod("nom").priority(10), "n"),
        want_company=False,
    )
    assert (
        s.schedule_one(make_pod("p").parsed(), preempt=False).message
        == "0/1 nodes are available: 1 node(s) had 2 pod(s)."
    )
    # a pod that outranks the nominated one sees only the running pod
    result = s.schedule_one(make_pod("q").priority(11).parsed(), preempt=False)
    assert result.message == "0/1 nodes are available: 1 node(s) had 1 pod(s)."


def test_nominated_pods_hold_their_gpus_in_the_device_ledger() -> None:
    """DGX-1, single-numa-node: GPUs 0-1 (NUMA 0) held. The nominated 3-GPU pod can only align on NUMA 1
    (4 free), leaving 2 + 1: a 3-GPU pod fits by count (8-2-3=3) but on no single NUMA node."""
    name = kubegpu_profile().scheduler_name
    big = nominated(make_pod("big").gpu(3).priority(100), "dgx")
    big["spec"]["schedulerName"] = name
    e = engine(dgx_node(), holder("a", UUIDS[0:2]), big, profile=kubegpu_profile())
    held_before = e.cluster.devices.taken(0)
    result = e.scheduler.schedule_one(make_pod("p").gpu(3).parsed(), preempt=False)
    assert result.message == (
        "0/1 nodes are available: 1 node(s) could not align nvidia.com/gpu on one NUMA node "
        "(topology manager single-numa-node)."
    )
    assert e.cluster.devices.taken(0) == held_before == {"nvidia.com/gpu": set(UUIDS[0:2])}
    # the same pod without the nomination gets NUMA 1
    plain = engine(dgx_node(), holder("a", UUIDS[0:2]), profile=kubegpu_profile())
    placed = plain.scheduler.schedule_one(make_pod("p").gpu(3).parsed(), preempt=False)
    assert placed.allocation is not None
    assert set(placed.allocation["main"]["nvidia.com/gpu"]) <= set(UUIDS[4:8])


def test_preemption_leaves_the_room_of_a_nominated_pod_and_clears_a_hopeless_nomination() -> None:
    """Node of 2 GPUs held by a prio-0 pod that a prio-100 pod (2 GPUs) is nominated to replace. A prio-50
    pod could evict the prio-0 pod, but the nominated pod outranks it: no candidate."""
    s = with_nomination(
        make_node("n").gpus(2).obj(),
        make_pod("low").gpu(2).priority(0).on("n").obj(),
        pending=nominated(make_pod("big").gpu(2).priority(100), "n"),
    )
    mid = build_snapshot([("t", nominated(make_pod("mid").gpu(1).priority(50), "elsewhere"))]).pods[0]
    s.cluster.nominate(mid, "n")
    result = s.schedule_one(mid)
    assert result.victims == () and result.nominated_node == ""
    assert result.message == (
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. "
        "preemption: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    )
    assert result.clears_nomination
    assert mid.key not in s.cluster.nominated_to and list(s.cluster.nominated_to) == ["default/big"]


def test_the_offline_loop_starts_with_the_snapshot_nominations() -> None:
    """The victim of an earlier preemption is still terminating; its preemptor (prio 100, 4 GPUs) waits
    nominated. A prio-0 pod queued behind it must not take the 2 free GPUs it needs."""
    victim = make_pod("victim").gpu(2).on("n").obj()
    victim["metadata"]["deletionTimestamp"] = "2026-01-01T00:05:00Z"
    snap = build_snapshot(
        [
            ("t", o)
            for o in (
                make_node("n").gpus(4).obj(),
                victim,
                nominated(make_pod("hi").gpu(4).priority(100), "n"),
                make_pod("lo").gpu(2).obj(),
            )
        ]
    )
    s = Scheduler(Framework(default_profile(), in_tree_registry()), ClusterState(snap.nodes, snap.pods))
    outcomes = {o.pod.name: o for o in run_queue(s, snap.pending_pods())}
    assert outcomes["hi"].node is None  # not eligible: a lower-priority pod is terminating on n
    assert outcomes["lo"].node is None
    assert outcomes["lo"].message.startswith("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")


def test_cached_first_passes_equal_fresh_ones() -> None:
    """The first-pass cache (per class, priority and row) against no cache at all: same placements and
    messages for a queue of mixed pods over nodes where preemptors of several priorities wait."""

    def run(use_cache: bool) -> list[tuple[str | None, str]]:
        objs: list[dict[str, Any]] = []
        for i in range(12):
            objs.append(make_node(f"n{i:02d}").gpus(8).obj())
            objs.append(make_pod(f"r{i:02d}").gpu(i % 5).on(f"n{i:02d}").obj())
        snap = build_snapshot([("t", o) for o in objs])
        s = Scheduler(
            Framework(default_profile(), in_tree_registry()),
            ClusterState(snap.nodes, snap.pods),
            use_cache=use_cache,
        )
        for k in range(6):
            waiting = make_pod(f"w{k}").gpu(2 + k % 3).priority(10 * k).parsed()
            s.cluster.nominate(waiting, f"n{(2 * k) % 12:02d}")
        pods = [make_pod(f"p{j:02d}").gpu(1 + j % 4).priority(15 * (j % 4)).parsed() for j in range(40)]
        return [(o.node, o.message) for o in run_queue(s, pods)]

    assert run(True) == run(False)
