"""Replay mode: preemption victims terminate for their grace period, as in Kubernetes (and in batch
mode, where an admission that evicted starts once its victims are deleted).

Upstream behaviour pinned here:
- ``spec.terminationGracePeriodSeconds`` defaults to 30 s (PodSpec API reference); a deleted pod keeps
  its node's resources until its grace period is over, and its controller recreates it at its deletion;
- kube-scheduler does not bind the preemptor at once: it fails the cycle with ``status.nominatedNodeName``
  set, and pods of its priority or lower see it on that node (the nominated-pods filter pass);
- DefaultPreemption's ``PodEligibleToPreemptOthers``: while a lower-priority pod is terminating on the
  nominated node, the preemptor may not preempt again ("not eligible due to a terminating pod on the
  nominated node.");
- a pod deleted while the preemptor's cycle is in flight moves it to backoffQ (1 s initial backoff);
- the scheduler may place a nominated pod on another node that becomes free first (the
  ``nominatedNodeName`` API doc: it "does not guarantee that the pod will be scheduled on this node").

Every timeline is worked by hand in the docstrings; each pod carries its own name as its queue label so
that ``waits_by_queue`` gives each pod's pending time.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from kubegpu.batch.objects import QUEUE_LABEL, PodGroup
from kubegpu.errors import InputError
from kubegpu.model.parse import parse_pod
from kubegpu.model.podgroup import KUBEGPU_GROUP_LABEL
from kubegpu.scheduler.plugins import names
from kubegpu.sim.openb import to_node
from kubegpu.sim.openb_replay import packing_factory
from kubegpu.sim.replay import BatchSetup, NodeEvent, Replay, ReplayReport, SimPod, preemption_plugin
from tests.sim.builders import node, pod


def sim(
    name: str, arrival: float, duration: float, gpus: int = 1, priority: int = 0, grace: int = 30
) -> SimPod:
    p = replace(
        pod(name, gpus),
        priority=priority,
        termination_grace_period_seconds=grace,
        labels={QUEUE_LABEL: name},
    )
    return SimPod(p, arrival, duration)


def replay(
    nodes: list[tuple[str, int]], pods: list[SimPod], events: list[NodeEvent] | None = None
) -> ReplayReport:
    factory = packing_factory("BestFit", None, names.DEFAULT_PREEMPTION)
    cluster = [to_node(node(n, g)) for n, g in nodes]
    return Replay(cluster, pods, factory, preempt=True, node_events=events or []).run()


def wait(r: ReplayReport, name: str) -> float:
    (w,) = r.waits_by_queue[name]
    return w


def test_victim_holds_the_node_for_its_grace_period_and_the_preemptor_waits_it_out() -> None:
    """One 1-GPU node. low (priority 0, grace 60 s, 1000 s of work, no checkpoint) runs from 0. high
    (priority 10, 50 s) arrives at 10: low is evicted (10 GPU-seconds lost: no checkpoint) and terminates
    10 → 70 holding the GPU; high waits, nominated. low2 (priority 0, 5 s) arrives at 20: the GPU is held,
    it waits. At 70 low is deleted: its replacement is created and high and low2 move; high goes first
    and runs 70 → 120 (pending 60 s). low2 cannot start before high leaves at 120 (pending ≥ 100 s).
    low2 and low's replacement (1000 s of work again) then follow each other with the GPU never idle:
    busy 0 → 1125 without a gap, so allocation is 100 % (the terminating victim's GPU counts as held)."""
    r = replay(
        [("n", 1)],
        [sim("low", 0, 1000, grace=60), sim("high", 10, 50, priority=10), sim("low2", 20, 5)],
    )
    assert (r.evictions, r.gpu_seconds_lost) == (1, 10)
    assert wait(r, "high") == 60
    assert wait(r, "low2") == 100  # arrives at 20, starts when high leaves at 120
    assert r.horizon_s == 1125
    assert r.mean_allocation_pct == pytest.approx(100.0)


def test_the_nomination_keeps_a_half_freed_node_for_the_preemptor() -> None:
    """One 2-GPU node: v1 (grace 10 s) and v2 (grace 60 s), 1 GPU each, priority 0, from 0. high
    (priority 10, 2 GPUs, 30 s) arrives at 10 and preempts both. v1 is deleted at 20: one GPU is free,
    but high is nominated to the node, so v1's replacement (created at 20) and low2 (priority 0, 1 GPU,
    arriving at 25) do not fit there (nominated pods of higher priority count in the filter). high,
    retried at 20, still needs v2's GPU and may not preempt again (v2 terminating). v2 is deleted at 70:
    high runs 70 → 100 (pending 60 s); low2 starts no earlier than 100."""
    r = replay(
        [("n", 2)],
        [
            sim("v1", 0, 1000, grace=10),
            sim("v2", 0, 1000, grace=60),
            sim("high", 10, 30, gpus=2, priority=10),
            sim("low2", 25, 5),
        ],
    )
    assert r.evictions == 2
    assert wait(r, "high") == 60
    assert wait(r, "low2") == 75


def test_no_second_preemption_while_a_victim_terminates_on_the_nominated_node() -> None:
    """n (2 GPUs): v1 (grace 10 s) and v2 (grace 60 s), 1 GPU each, priority 0. m (2 GPUs): w (priority
    5, 2 GPUs, grace 30 s). From 0, all long-running, no checkpoints.
    - 10: high (priority 10, 2 GPUs, 30 s) preempts on n (highest victim priority 0 beats m's 5):
      v1 and v2 terminate; high is nominated to n.
    - 15: peer (priority 20, 1 GPU) fits nowhere; its preemption picks n with v2 as victim, already
      terminating: no new eviction; peer is nominated to n.
    - 20: v1 is deleted. peer (nominated pods of lower priority do not count for it) takes n's free
      GPU (pending 5 s). high fits nowhere; v2 is still terminating on its nominated node, so it is not
      eligible to preempt: w stays (without that rule it would evict w now and start at 50).
    - 70: v2 is deleted. high fits nowhere (n: peer + 1 free), is eligible again and preempts w on m
      (n has nothing below it): w terminates 70 → 100.
    - 100: high starts on m: pending 90 s.
    Lost: v1 and v2 ran 10 s (1 GPU each), w ran 70 s on 2 GPUs: 10 + 10 + 140 = 160 GPU-seconds."""
    r = replay(
        [("n", 2), ("m", 2)],
        [
            sim("v1", 0, 10_000, grace=10),
            sim("v2", 0, 10_000, grace=60),
            sim("w", 0, 10_000, gpus=2, priority=5),
            sim("high", 10, 30, gpus=2, priority=10),
            sim("peer", 15, 10_000, priority=20),
        ],
    )
    assert wait(r, "peer") == 5
    assert wait(r, "high") == 90
    assert (r.evictions, r.gpu_seconds_lost) == (3, 160)


def test_zero_grace_frees_the_node_at_once_and_the_preemptor_waits_out_its_backoff() -> None:
    """grace 0: low is deleted at the eviction instant 10, while high's cycle is in flight, so high
    goes to backoffQ (1 s after its attempt at 10) and starts at the 1 s flush at 11."""
    r = replay([("n", 1)], [sim("low", 0, 1000, grace=0), sim("high", 10, 50, priority=10)])
    assert r.evictions == 1
    assert wait(r, "high") == 1


def test_a_node_added_during_the_grace_period_takes_the_nominated_preemptor() -> None:
    """n (1 GPU): low (grace 60 s) evicted by high at 10, terminating until 70. Node x (1 GPU) is added
    at 30: the move event retries high, its nominated node n is still held, x fits: high starts at 30
    (pending 20 s). The victim still holds n after the cluster is rebuilt for x: low2 (arriving at 35)
    waits for low's deletion at 70 and, queued before low's replacement (timestamp 35 < 70), goes
    first: pending 35 s."""
    x = to_node(node("x", 1))
    r = replay(
        [("n", 1)],
        [sim("low", 0, 1000, grace=60), sim("high", 10, 1000, priority=10), sim("low2", 35, 5)],
        [NodeEvent(30, "add", "x", x)],
    )
    assert wait(r, "high") == 20
    assert wait(r, "low2") == 35


def test_a_pod_terminating_on_a_removed_node_goes_with_it() -> None:
    """n1 and n2 (1 GPU each). low (grace 60 s) runs on one of them from 0 (seeded tie-break); filler
    (priority 5) takes the other. high (priority 10) arrives at 10 and preempts low (the lower victim),
    which terminates 10 → 70; high is nominated to low's node. That node is removed at 30: low goes with
    it (not counted again, as a node-removal eviction) and so does high's nomination. The removal moves
    high, which fits nowhere and, nominated nowhere, preempts filler on the remaining node (filler
    terminates 30 → 60); high starts at 60: pending 50 s."""
    pods = [
        sim("low", 0, 1000, grace=60),
        sim("filler", 0, 1000, priority=5),
        sim("high", 10, 1000, priority=10),
    ]
    for name in ("n1", "n2"):
        probe = replay([("n1", 1), ("n2", 1)], pods, [NodeEvent(30, "remove", name)])
        if probe.node_removal_evictions == 0:  # the removed node held low (terminating), not filler
            assert (probe.evictions, wait(probe, "high")) == (2, 50)
            return
    raise AssertionError("one of the two removals must hit low's node")


def test_termination_grace_period_is_parsed_with_the_api_default() -> None:
    """``spec.terminationGracePeriodSeconds``: 30 when unset (API default), the pod's value when set, and
    a negative value is refused naming the field (the API requires a non-negative integer)."""

    def parsed(spec_extra: dict[str, object]) -> int:
        raw = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "image": "i"}], **spec_extra},
        }
        return parse_pod(raw, "pods.yaml").termination_grace_period_seconds

    assert parsed({}) == 30
    assert parsed({"terminationGracePeriodSeconds": 120}) == 120
    assert parsed({"terminationGracePeriodSeconds": 0}) == 0
    with pytest.raises(InputError, match="terminationGracePeriodSeconds"):
        parsed({"terminationGracePeriodSeconds": -1})


def batch_replay(
    nodes: list[tuple[str, int]], pods: list[SimPod], groups: dict[str, PodGroup]
) -> ReplayReport:
    """Batch mode with preemption; every queue label is an undefined queue (no quota applies)."""
    factory = packing_factory("BestFit", None, preemption_plugin("batch", True))
    cluster = [to_node(node(n, g)) for n, g in nodes]
    setup = BatchSetup({}, {}, groups)
    return Replay(cluster, pods, factory, mode="batch", batch=setup, preempt=True).run()


def test_batch_admission_starts_when_its_victim_is_deleted() -> None:
    """Batch mode, one 1-GPU node. low (priority 0, grace 60 s, no checkpoint) from 0; high (priority
    10, 50 s) arrives at 10: the session evicts low (10 GPU-seconds lost) and admits high into its room
    at once, but high starts only when low is deleted at 70 (pending 60 s). low2 (priority 0, arriving
    at 20) finds the room taken by high and cannot start before high leaves at 120. The GPU is held
    without a gap (low, low terminating, high, then low2 and low's replacement): allocation 100 %."""
    r = batch_replay(
        [("n", 1)],
        [sim("low", 0, 1000, grace=60), sim("high", 10, 50, priority=10), sim("low2", 20, 5)],
        {},
    )
    assert (r.evictions, r.gpu_seconds_lost) == (1, 10)
    assert wait(r, "high") == 60
    assert wait(r, "low2") >= 100
    assert r.mean_allocation_pct == pytest.approx(100.0)


def test_batch_gang_starts_whole_when_the_last_victim_on_its_nodes_is_deleted() -> None:
    """Batch mode, two 1-GPU nodes: v1 (grace 10 s) and v2 (grace 60 s), priority 0. A gang of two
    1-GPU pods (priority 10, minMember 2) arrives at 10 and preempts both; its pods start together when
    v2, the last victim on their nodes, is deleted at 70: both wait 60 s."""

    def member(name: str) -> SimPod:
        s = sim(name, 10, 50, priority=10)
        labels = {QUEUE_LABEL: "gang", KUBEGPU_GROUP_LABEL: "g"}
        return replace(s, pod=replace(s.pod, labels=labels))

    r = batch_replay(
        [("n1", 1), ("n2", 1)],
        [sim("v1", 0, 1000, grace=10), sim("v2", 0, 1000, grace=60), member("g0"), member("g1")],
        {"openb/g": PodGroup("openb", "g", 2)},
    )
    assert r.evictions == 2
    assert r.waits_by_queue["gang"] == [60, 60]


def test_batch_gang_admitted_at_min_member_starts_the_rest_when_room_frees() -> None:
    """Batch mode, one 3-GPU node. blk (1 GPU, queue x) runs from 0 to 1000. A gang of three 1-GPU
    members (minMember 2, each 50 s) arrives at 10: two GPUs are free, so it is admitted with two members
    placed, which start at once (wait 0) and leave at 60; the third waits on its own and starts at 60,
    when they free their GPUs: wait 50. All four pods run; nothing is evicted."""
    members = [
        SimPod(replace(pod(f"g{i}", 1), labels={QUEUE_LABEL: "gang", KUBEGPU_GROUP_LABEL: "g"}), 10, 50)
        for i in range(3)
    ]
    blk = SimPod(replace(pod("blk", 1), labels={QUEUE_LABEL: "x"}), 0, 1000)
    r = batch_replay([("n", 3)], [blk, *members], {"openb/g": PodGroup("openb", "g", 2)})
    assert (r.placed, r.evictions) == (4, 0)
    assert sorted(r.waits) == [0, 0, 0, 50]
