"""A gang as preemptor (issue 6): all of the gang fits after the evictions or nothing is evicted; the
cheapest victims by GPU-time lost since their last checkpoint; a victim gang is evicted whole;
PodDisruptionBudgets weighed as kube-scheduler's DefaultPreemption weighs them (fewest violations
first, never forbidden); reclaim costs victims as they run.

Costs are worked by hand with ``eviction_cost``: GPUs × seconds since the last checkpoint (or since
start without one), measured at 11:10."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubegpu.batch.gang_preemption import preempt_for_gang
from kubegpu.batch.objects import parse_batch_objects
from kubegpu.batch.session import BatchSession
from kubegpu.batch.workloads import Workload
from kubegpu.cli.main import cli
from kubegpu.explain.engine import Engine
from kubegpu.model.parse import parse_pod
from kubegpu.model.podgroup import eviction_cost
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.assembly import SchedulerSpec
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
    return Engine(snap, SchedulerSpec(kubegpu_profile())).scheduler


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


def pending_gang() -> list[dict[str, Any]]:
    """Queue team (64 GPUs), PodGroup big (minMember 2) and its two pending 4-GPU members (priority 100)."""
    queue = {"apiVersion": "kubegpu.io/v1alpha1", "kind": "GpuQueue", "metadata": {"name": "team"},
             "spec": {"nominalQuota": {"nvidia.com/gpu": "64"}}}  # fmt: skip
    group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": "big", "namespace": "default"}, "spec": {"minMember": 2}}  # fmt: skip
    members = [
        make_pod(f"big-{i}").gpu(4).priority(100)
        .labels(**{"scheduling.x-k8s.io/pod-group": "big", "kubegpu.io/queue": "team"}).obj()
        for i in range(2)
    ]  # fmt: skip
    return [queue, group, *members]


def test_batch_session_admits_a_gang_by_preempting_and_reports_the_cost() -> None:
    """Through the admission cycle: the gang of 2 evicts c1 and b1 (1440 GPU-seconds) and lands on b
    and c; a1 keeps running."""
    objs = [
        *pending_gang(), *nodes("a", "b", "c"),
        running("a1", "a", "10:00", **{"kubegpu.io/checkpoint-interval-seconds": "1800"}),
        running("b1", "b", "11:05"),
        running("c1", "c", "10:10", **{CKPT: "2026-12-02T11:09:00Z"}),
    ]  # fmt: skip
    snap = build_snapshot([("t", o) for o in objs])
    queues, cohorts, groups, _ = parse_batch_objects(snap.batch_objects)
    engine = Engine(snap, SchedulerSpec(kubegpu_profile()))
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
        engine = Engine(snap, SchedulerSpec(kubegpu_profile()))
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
    engine = Engine(snap, SchedulerSpec(kubegpu_profile()))
    session = BatchSession(engine.scheduler, snap, queues, cohorts, groups, now=NOW)
    (decision,) = session.run()
    assert not decision.admitted and decision.evicted == {}
    assert {"default/b1", "default/b2"} <= set(engine.scheduler.cluster.placement)
    assert session.book.usage["b"]["nvidia.com/gpu"] == 8000


def pdb(name: str, allowed: int, **match: str) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": match}, "minAvailable": 1},
            "status": {"disruptionsAllowed": allowed}}  # fmt: skip


def three_full_nodes(*pdbs: dict[str, Any]) -> Scheduler:
    """The first test's cluster (costs a1 2400, b1 1200, c1 240), pods labelled app=<node>, tier=batch."""
    pods = [
        running("a1", "a", "10:00", **{"kubegpu.io/checkpoint-interval-seconds": "1800"}),
        running("b1", "b", "11:05"),
        running("c1", "c", "10:10", **{CKPT: "2026-12-02T11:09:00Z"}),
    ]
    for p in pods:
        p["metadata"]["labels"] = {"app": p["spec"]["nodeName"], "tier": "batch"}
    return scheduler(*nodes("a", "b", "c"), *pods, *pdbs)


def test_a_pdb_steers_the_gang_to_victims_that_break_no_budget() -> None:
    """kube-scheduler prefers fewer PDB violations before anything else (pickOneNodeForPreemption's
    first criterion). c1 is covered by a PDB allowing 0 disruptions: evicting it would violate, so the
    non-violating units go first — b1 (1200), then a1 (2400) — and the gang fits on a and b: 3600
    GPU-seconds instead of 1440, no violation."""
    s = three_full_nodes(pdb("keep-c", 0, app="c"))
    found = preempt_for_gang(s, preemptor(2), cost)
    assert found.ok
    assert sorted(p.name for u in found.victims for p in u.pods) == ["a1", "b1"]
    assert (found.cost, found.pdb_violations) == (3600, 0)


def test_pdb_violations_are_avoided_not_forbidden() -> None:
    """Every pod is under a PDB allowing 0 disruptions: all three units are violating, so the choice
    falls back to cost — c1 + b1 (1440) — and the two violating victims are counted, as upstream's
    numViolatingVictim counts them."""
    s = three_full_nodes(pdb("all", 0, tier="batch"))
    found = preempt_for_gang(s, preemptor(2), cost)
    assert found.ok
    assert sorted(p.name for u in found.victims for p in u.pods) == ["b1", "c1"]
    assert (found.cost, found.pdb_violations) == (1440, 1 + 1)


def test_a_pdb_allowance_is_spent_in_eviction_order() -> None:
    """One PDB over all three allowing 1 disruption. filterPodsWithPDBViolation walks the units in the
    order they would be evicted (cheapest first): c1 spends the allowance (non-violating), b1 and a1
    would drive it below zero (violating). c1 is removed first, is not enough alone, then b1 (the
    cheaper violating unit): victims c1 + b1, one violation."""
    s = three_full_nodes(pdb("one", 1, tier="batch"))
    found = preempt_for_gang(s, preemptor(2), cost)
    assert sorted(p.name for u in found.victims for p in u.pods) == ["b1", "c1"]
    assert found.pdb_violations == 1


def test_batch_session_reports_the_pdb_violations_of_a_gang_preemption(tmp_path: Path) -> None:
    """Through the admission cycle, the decision carries the count (JSON ``pdbViolations``), and
    ``kubegpu queues`` prints it."""
    victims = [
        running("b1", "b", "11:05"),
        running("c1", "c", "10:10", **{CKPT: "2026-12-02T11:09:00Z"}),
    ]
    for p in victims:
        p["metadata"]["labels"] = {"tier": "batch"}
    objs = [*pending_gang(), *nodes("b", "c"), *victims, pdb("all", 0, tier="batch")]
    snap = build_snapshot([("t", o) for o in objs])
    queues, cohorts, groups, _ = parse_batch_objects(snap.batch_objects)
    session = BatchSession(
        Engine(snap, SchedulerSpec(kubegpu_profile())).scheduler, snap, queues, cohorts, groups, now=NOW
    )
    (decision,) = session.run()
    assert decision.admitted and decision.evicted == {"default/b1": 1200, "default/c1": 240}
    assert decision.to_dict()["pdbViolations"] == 2
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(objs), encoding="utf-8")
    out = CliRunner().invoke(cli, ["queues", "--snapshot", str(path), "--now", "2026-12-02T11:10:00Z"]).output
    assert "(1440 GPU-seconds lost, 2 PodDisruptionBudget violation(s))" in " ".join(out.split())


def test_reclaim_ranks_borrowers_by_their_cost_at_the_decision() -> None:
    """As the simulator drives the session: workloads arrive unstarted and are admitted with their start
    time. Queue b (nominal 0) borrows both GPUs of queue a (nominal 2): p2 started 10:00 checkpointing
    every 1800 s, p1 started 10:50 without checkpoints. At 11:10 a claims 1 GPU back. Costs then:
    p2 = 1 × (4200 mod 1800) = 600, p1 = 1 × 1200 = 1200 → p2 goes. (Costing the arrival records,
    which have no start time, reads 0 for both and the name would pick p1.)"""
    objs = [
        {"apiVersion": "kubegpu.io/v1alpha1", "kind": "GpuCohort", "metadata": {"name": "org"}},
        *({"apiVersion": "kubegpu.io/v1alpha1", "kind": "GpuQueue", "metadata": {"name": q},
           "spec": {"cohort": "org", "nominalQuota": {"nvidia.com/gpu": n}}} for q, n in (("a", "2"), ("b", "0"))),
        make_node("n").gpus(2).obj(),
    ]  # fmt: skip
    snap = build_snapshot([("t", o) for o in objs])
    queues, cohorts, groups, _ = parse_batch_objects(snap.batch_objects)
    session = BatchSession(
        Engine(snap, SchedulerSpec(kubegpu_profile())).scheduler, snap, queues, cohorts, groups, now=NOW
    )

    def job(name: str, queue: str, **annotations: str) -> Workload:
        raw = make_pod(name).gpu(1).labels(**{"kubegpu.io/queue": queue}).obj()
        raw["metadata"]["annotations"] = annotations
        return Workload(f"default/{name}", queue, (parse_pod(raw, "t"),))

    for w, started in (
        (job("p2", "b", **{"kubegpu.io/checkpoint-interval-seconds": "1800"}), "10:00"),
        (job("p1", "b"), "10:50"),
    ):
        at = datetime.fromisoformat(f"2026-12-02T{started}:00+00:00")
        session.now = at
        session.arrive(w)
        pods = tuple(replace(p, start_time=at.strftime("%Y-%m-%dT%H:%M:%SZ")) for p in w.pods)
        assert session.admit(replace(w, pods=pods)).admitted
    session.now = NOW
    claim = job("claim", "a")
    session.arrive(claim)
    decision = session.admit(claim)
    assert decision.admitted and decision.evicted == {"default/p2": 600}
