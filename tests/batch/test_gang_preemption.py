"""A gang as preemptor (issue 6): all of the gang fits after the evictions or nothing is evicted; the
cheapest victims by GPU-time lost since their last checkpoint; a victim gang is evicted whole.

Costs are worked by hand with ``eviction_cost``: GPUs × seconds since the last checkpoint (or since
start without one), measured at 11:10."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubegpu.batch.gang_preemption import preempt_for_gang
from kubegpu.batch.objects import parse_batch_objects
from kubegpu.batch.session import BatchSession
from kubegpu.batch.workloads import Workload
from kubegpu.explain.engine import Engine
from kubegpu.model.podgroup import eviction_cost
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.registry import kubegpu_profile
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.testing.builders import make_node, make_pod

NOW = datetime(2026, 12, 2, 11, 10, tzinfo=UTC)
CKPT = "kubegpu.io/last-checkpoint-time"


def running(name: str, node: str, started: str, gang: str = "", **annotations: str) -> dict[str, Any]:
    raw = make_pod(name).gpu(4).on(node, started=f"2026-12-02T{started}:00Z").obj()
    raw["metadata"]["annotations"] = dict(annotations)
    if gang:
        raw["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": gang}
    return raw


def scheduler(*objs: dict[str, Any]) -> Scheduler:
    snap = build_snapshot([("t", o) for o in objs])
    assert not snap.errors, snap.errors
    return Engine(snap, kubegpu_profile()).scheduler


def preemptor(members: int, priority: int = 100) -> Workload:
    pods = tuple(
        make_pod(f"big-{i}")
        .gpu(4)
        .priority(priority)
        .labels(**{"scheduling.x-k8s.io/pod-group": "big"})
        .parsed()
        for i in range(members)
    )
    return Workload("default/big", "team", pods, members, True)


def cost(pod: Any) -> int:
    return eviction_cost(pod, NOW)


def nodes(*names: str) -> list[dict[str, Any]]:
    return [make_node(n).gpus(4).obj() for n in names]


def test_cheapest_victims_that_make_room_for_every_member() -> None:
    """Three full 4-GPU nodes; a 2×4-GPU gang needs two of them. Costs at 11:10: a1 checkpoints every
    1800 s since 10:00 → 4 × 600 = 2400; b1 started 11:05, never saved → 4 × 300 = 1200; c1 saved at
    11:09 → 4 × 60 = 240. Cheapest two: c1 + b1 = 1440; a1 stays."""
    s = scheduler(
        *nodes("a", "b", "c"),
        running("a1", "a", "10:00", **{"kubegpu.io/checkpoint-interval-seconds": "1800"}),
        running("b1", "b", "11:05"),
        running("c1", "c", "10:10", **{CKPT: "2026-12-02T11:09:00Z"}),
    )
    before = dict(s.cluster.placement)
    found = preempt_for_gang(s, preemptor(2), cost)
    assert found.ok
    assert sorted(p.name for u in found.victims for p in u.pods) == ["b1", "c1"]
    assert found.cost == 1440
    assert s.cluster.placement == before  # a dry run: nothing moved


def test_nothing_is_evicted_when_the_whole_gang_cannot_fit() -> None:
    """Two 4-GPU nodes cannot hold three 4-GPU members even empty: no victims at all."""
    s = scheduler(*nodes("a", "b"), running("a1", "a", "11:00"), running("b1", "b", "11:00"))
    found = preempt_for_gang(s, preemptor(3), cost)
    assert not found.ok and found.victims == []


def test_a_victim_gang_goes_whole_and_cheaper_bystanders_are_reprieved() -> None:
    """ddp runs on a and b (2 × 4 GPUs × 600 s = 4800), solo on c (4 × 300 = 1200). Splitting ddp
    (ddp-0 + solo = 3600) is not allowed; the gang of 2 needs two free nodes: solo is removed first
    (cheapest) but one node is not enough, then ddp whole; the reprieve puts solo back (a and b
    suffice). Victims: ddp-0 and ddp-1, 4800 GPU-seconds."""
    s = scheduler(
        *nodes("a", "b", "c"),
        running("ddp-0", "a", "11:00", gang="ddp"),
        running("ddp-1", "b", "11:00", gang="ddp"),
        running("solo", "c", "11:05"),
    )
    found = preempt_for_gang(s, preemptor(2), cost)
    assert found.ok
    assert [sorted(p.name for p in u.pods) for u in found.victims] == [["ddp-0", "ddp-1"]]
    assert found.cost == 4800


def test_pods_of_equal_or_higher_priority_are_never_victims() -> None:
    """b1 has the gang's own priority (100): only a1 (priority 0) may go, which frees one node of the
    two the gang needs, so nothing is evicted."""
    b1 = running("b1", "b", "11:05")
    b1["spec"]["priority"] = 100
    s = scheduler(*nodes("a", "b"), running("a1", "a", "11:00"), b1)
    found = preempt_for_gang(s, preemptor(2), cost)
    assert not found.ok and found.victims == []


def test_batch_session_admits_a_gang_by_preempting_and_reports_the_cost() -> None:
    """Through the admission cycle: the gang of 2 evicts c1 and b1 (1440 GPU-seconds) and lands on b
    and c; a1 keeps running."""
    queue = {"apiVersion": "kubegpu.io/v1alpha1", "kind": "GpuQueue", "metadata": {"name": "team"},
             "spec": {"nominalQuota": {"nvidia.com/gpu": "64"}}}  # fmt: skip
    group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": "big", "namespace": "default"}, "spec": {"minMember": 2}}  # fmt: skip
    members = [
        make_pod(f"big-{i}").gpu(4).priority(100)
        .labels(**{"scheduling.x-k8s.io/pod-group": "big", "kubegpu.io/queue": "team"}).obj()
        for i in range(2)
    ]  # fmt: skip
    objs = [
        queue, group, *nodes("a", "b", "c"),
        running("a1", "a", "10:00", **{"kubegpu.io/checkpoint-interval-seconds": "1800"}),
        running("b1", "b", "11:05"),
        running("c1", "c", "10:10", **{CKPT: "2026-12-02T11:09:00Z"}),
        *members,
    ]  # fmt: skip
    snap = build_snapshot([("t", o) for o in objs])
    queues, cohorts, groups, _ = parse_batch_objects(snap.batch_objects)
    engine = Engine(snap, kubegpu_profile())
    session = BatchSession(engine.scheduler, snap, queues, cohorts, groups, now=NOW)
    (decision,) = session.run()
    assert decision.admitted
    assert decision.evicted == {"default/b1": 1200, "default/c1": 240}
    assert sorted(decision.nodes.values()) == ["b", "c"]
    assert "default/a1" in engine.scheduler.cluster.placement


def test_without_preemption_the_gang_only_waits() -> None:
    s = scheduler(*nodes("a"), running("a1", "a", "11:00"))
    snap = build_snapshot([("t", o) for o in nodes("a")])
    session = BatchSession(s, snap, {}, {}, {}, now=NOW, preempt=False)
    decision = session.admit(preemptor(1))
    assert not decision.admitted and decision.evicted == {}
    assert "default/a1" in s.cluster.placement


def test_protect_nominal_keeps_another_queue_within_its_quota_safe() -> None:
    """Queue b runs one 4-GPU pod on its nominal 4 (not borrowing). A higher-priority 4-GPU gang of
    queue a needs that node: kube-scheduler's rule (priority alone) evicts b's pod; with
    ``protect_nominal`` (Kueue: only borrowing queues lose workloads to other queues) nothing goes."""

    def queue(name: str) -> dict[str, Any]:
        return {"apiVersion": "kubegpu.io/v1alpha1", "kind": "GpuQueue", "metadata": {"name": name},
                "spec": {"nominalQuota": {"nvidia.com/gpu": "4"}, "cohort": "org"}}  # fmt: skip

    b1 = running("b1", "a", "11:00")
    b1["metadata"]["labels"] = {"kubegpu.io/queue": "b"}
    for protect, evicted in ((False, {"default/b1": 4 * 600}), (True, {})):
        snap = build_snapshot([("t", o) for o in (queue("a"), queue("b"), *nodes("a"), b1)])
        queues, cohorts, groups, _ = parse_batch_objects(snap.batch_objects)
        engine = Engine(snap, kubegpu_profile())
        session = BatchSession(
            engine.scheduler, snap, queues, cohorts, groups, now=NOW, protect_nominal=protect
        )
        decision = session.admit(preemptor(1))
        assert decision.evicted == evicted
        assert decision.admitted is (not protect)


def test_no_pod_is_evicted_for_a_workload_that_still_would_not_fit() -> None:
    """Queue b borrows (8 GPUs on nominal 4); queue a, within its nominal 4, claims 4 GPUs, so reclaim
    would evict one of b's pods — but the claim's nodeSelector matches no node, so it cannot be placed
    anyway: the reclaim is undone, b keeps both pods and its quota usage."""

    def queue(name: str) -> dict[str, Any]:
        return {"apiVersion": "kubegpu.io/v1alpha1", "kind": "GpuQueue", "metadata": {"name": name},
                "spec": {"nominalQuota": {"nvidia.com/gpu": "4"}, "cohort": "org"}}  # fmt: skip

    borrowers = []
    for name in ("b1", "b2"):
        raw = running(name, "n", "11:00")
        raw["metadata"]["labels"] = {"kubegpu.io/queue": "b"}
        borrowers.append(raw)
    claim = make_pod("claim").gpu(4).labels(**{"kubegpu.io/queue": "a"}).node_selector(zone="nowhere").obj()
    snap = build_snapshot(
        [("t", o) for o in (queue("a"), queue("b"), make_node("n").gpus(8).obj(), *borrowers, claim)]
    )
    queues, cohorts, groups, _ = parse_batch_objects(snap.batch_objects)
    engine = Engine(snap, kubegpu_profile())
    session = BatchSession(engine.scheduler, snap, queues, cohorts, groups, now=NOW)
    (decision,) = session.run()
    assert not decision.admitted and decision.evicted == {}
    assert {"default/b1", "default/b2"} <= set(engine.scheduler.cluster.placement)
    assert session.book.usage["b"]["nvidia.com/gpu"] == 8000
