"""Replay mode: timed arrivals through kube-scheduler's queue (backoff 1 s doubling to 10 s, move on a
cluster event, 5-minute unschedulable flush on a 30 s loop), node events, preemption with checkpoint
loss, the batch layer's queues and gangs, and Job chains. Expected values are worked by hand from
those rules on one- or two-node clusters."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from kubegpu.batch.objects import QUEUE_LABEL, PodGroup, Queue
from kubegpu.model.podgroup import CHECKPOINT_INTERVAL_ANNOTATION, KUBEGPU_GROUP_LABEL
from kubegpu.model.resources import GPU_MILLI
from kubegpu.scheduler.plugins import names
from kubegpu.sim.openb import TracePod, to_node
from kubegpu.sim.openb_replay import packing_factory, sim_pods
from kubegpu.sim.replay import BatchSetup, NodeEvent, Replay, ReplayReport, SimPod
from tests.sim.builders import node, pod


def gpu_pod(name: str, created: int, deleted: int, scheduled: int | None = None) -> TracePod:
    return TracePod(name, 1000, 1024, 1, 1000, None, "LS", "Running", created, deleted, scheduled)


def sim(name: str, arrival: float, duration: float, gpus: int = 1, priority: int = 0, **kw: object) -> SimPod:
    p = replace(pod(name, gpus), priority=priority)
    return SimPod(p, arrival, duration, **kw)  # type: ignore[arg-type]


def run(nodes: list[tuple[str, int]], pods: list[SimPod], **kw: object) -> Replay:
    factory = packing_factory("BestFit", None, kw.pop("preemption", None))  # type: ignore[arg-type]
    r = Replay([to_node(node(n, g)) for n, g in nodes], pods, factory, **kw)  # type: ignore[arg-type]
    return r


def test_openb_pods_wait_for_a_departure_and_late_ones_give_up() -> None:
    """One node, one GPU. a: 0 → 100 (holds the GPU). b arrives at 10 (in the trace it ran 110 → 140,
    30 s), fails, waits in unschedulablePods; a's departure at 100 moves it (its 1 s backoff is long
    over) and it runs 100 → 130: wait 90 s. c arrives at 20 and is deleted at its trace deletion time
    50 while still waiting: given up."""
    pods = [gpu_pod("a", 0, 100, 0), gpu_pod("b", 10, 140, 110), gpu_pod("c", 20, 50, 20)]
    replay = run([("n", 1)], sim_pods(pods))
    r = replay.run()
    assert (r.pods, r.placed, r.given_up, r.delayed) == (3, 2, 1, 1)
    assert sorted(r.waits) == [0, 90]
    # the GPU is busy 0 → 130 of the 140 s run (b's trace deletion is the last event)
    assert r.mean_allocation_pct == pytest.approx(100 * 130 / 140)


def test_a_pod_freed_during_its_backoff_waits_for_the_one_second_flush() -> None:
    """a holds the only GPU 0 → 10.2. b arrives at 10, fails (attempt 1: backoff until 11). a leaves
    at 10.2: b moves to backoffQ (backoff not over), the 1 s backoff flush makes it active at 11."""
    r = run([("n", 1)], [sim("a", 0, 10.2), sim("b", 10, 5)]).run()
    assert sorted(r.waits) == [0, pytest.approx(1.0)]


def test_unschedulable_pod_is_retried_by_the_five_minute_flush_until_it_gives_up() -> None:
    """b needs 2 GPUs on a 1-GPU node and is deleted at 1000. Attempts: 0 (arrival); nothing moves it,
    so the 30 s flush loop retries it once it was unschedulable for more than 300 s: 330, 660 (630
    is exactly 300 s after 330, not more), 990; deleted at 1000."""
    r = run([("n", 1)], [sim("b", 0, 5, gpus=2, deadline=1000)]).run()
    assert r.attempts == 4 and r.given_up == 1 and r.placed == 0


def test_cordon_blocks_and_uncordon_moves_the_waiting_pod() -> None:
    """The only node is cordoned at 0; p arrives at 1 and fails (node(s) were unschedulable); the
    uncordon at 50 is a move event: p starts at 50."""
    events = [NodeEvent(0, "cordon", "n"), NodeEvent(50, "uncordon", "n")]
    r = run([("n", 1)], [sim("p", 1, 10)], node_events=events).run()
    assert r.waits == [49]


def test_node_added_later_takes_the_pod_that_fits_nowhere_else() -> None:
    """p needs 2 GPUs; the cluster has one 1-GPU node until a 2-GPU node is added at 100."""
    big = to_node(node("big", 2))
    r = run([("n", 1)], [sim("p", 0, 10, gpus=2)], node_events=[NodeEvent(100, "add", "big", big)]).run()
    assert r.waits == [100]


def test_node_removal_evicts_and_the_pod_restarts_elsewhere_losing_work() -> None:
    """p (100 s of work, no checkpoint) starts at 0 on n1 or n2 (a seeded tie-break). Removing the
    other node changes nothing (p leaves at 100); removing p's node at 20 evicts it: it loses the 20 s
    it ran (1 GPU × 20 s), is recreated and runs 100 s again on the remaining node, leaving at 120."""
    runs = [
        run([("n1", 1), ("n2", 1)], [sim("p", 0, 100)], node_events=[NodeEvent(20, "remove", n)]).run()
        for n in ("n1", "n2")
    ]
    evicted = [r for r in runs if r.node_removal_evictions]
    kept = [r for r in runs if not r.node_removal_evictions]
    assert len(evicted) == 1 and len(kept) == 1
    assert (evicted[0].node_removal_gpu_seconds_lost, evicted[0].horizon_s) == (20, 120)
    assert kept[0].horizon_s == 100


def test_priority_preemption_loses_only_the_work_since_the_checkpoint() -> None:
    """One GPU. low (priority 0, 100 s of work, checkpoint every 30 s, default 30 s grace) starts at 0;
    high (priority 10, 20 s) arrives at 40: DefaultPreemption evicts low, which loses 40 mod 30 = 10 s
    (10 GPU-seconds), keeps 30 s of work and needs 70 more. low terminates 40 → 70 holding the GPU; its
    deletion at 70 moves high (1 s backoff long over) and creates low's replacement; high goes first
    (PrioritySort) and runs 70 → 90 (pending 30 s); the replacement fails at 70, is moved by that
    departure (its 1 s backoff from 70 is over) and runs its 70 s of work 90 → 160."""
    low = sim("low", 0, 100)
    low = replace(
        low, pod=replace(low.pod, annotations={**low.pod.annotations, CHECKPOINT_INTERVAL_ANNOTATION: "30"})
    )
    r = run(
        [("n", 1)], [low, sim("high", 40, 20, priority=10)], preemption=names.DEFAULT_PREEMPTION, preempt=True
    ).run()
    assert (r.evictions, r.gpu_seconds_lost) == (1, 10)
    assert r.horizon_s == 160
    assert sorted(r.waits) == [0, 30]


def test_batch_mode_places_a_gang_whole_and_the_lower_share_queue_first() -> None:
    """Two 1-GPU nodes. A gang of two 1-GPU pods (queue a) and a single 1-GPU pod (queue b) arrive at
    0. Both queues use nothing, so DRF ties and the name decides (a): the gang takes both GPUs at
    once, b waits until the gang's pods leave at 10."""

    def member(name: str, queue: str, gang: str = "") -> SimPod:
        s = sim(name, 0, 10)
        labels = {QUEUE_LABEL: queue, **({KUBEGPU_GROUP_LABEL: gang} if gang else {})}
        return replace(s, pod=replace(s.pod, labels=labels))

    pods = [member("g0", "a", "g"), member("g1", "a", "g"), member("solo", "b")]
    setup = BatchSetup(
        {q: Queue(q, nominal={GPU_MILLI: 2_000_000}) for q in ("a", "b")},
        {},
        {"openb/g": PodGroup("openb", "g", 2)},
    )
    r = run([("n1", 1), ("n2", 1)], pods, mode="batch", batch=setup).run()
    assert sorted(r.waits) == [0, 0, 10]
    assert r.waits_by_queue["b"] == [10]


def test_half_a_gang_never_holds_a_gpu_in_batch_mode() -> None:
    """Gang of three 1-GPU pods on two 1-GPU nodes: it can never fit; the single pod behind it in the
    same queue still gets a GPU at once (no partial hold), and the gang is given up at its deadline."""

    def member(name: str, gang: str = "") -> SimPod:
        s = sim(name, 0, 10, deadline=500)
        labels = {QUEUE_LABEL: "a", **({KUBEGPU_GROUP_LABEL: gang} if gang else {})}
        return replace(s, pod=replace(s.pod, labels=labels, priority=5 if gang else 0))

    pods = [member("g0", "g"), member("g1", "g"), member("g2", "g"), member("solo")]
    setup = BatchSetup(
        {"a": Queue("a", nominal={GPU_MILLI: 9_000_000})}, {}, {"openb/g": PodGroup("openb", "g", 3)}
    )
    r = run([("n1", 1), ("n2", 1)], pods, mode="batch", batch=setup).run()
    assert r.placed == 1 and r.waits == [0]
    assert r.given_up == 3


def queued(name: str, queue: str, arrival: float, duration: float, priority: int = 0) -> SimPod:
    s = sim(name, arrival, duration, priority=priority)
    return replace(s, pod=replace(s.pod, labels={QUEUE_LABEL: queue}))


def batch_run(nodes: list[tuple[str, int]], pods: list[SimPod], queues: tuple[str, ...]) -> ReplayReport:
    setup = BatchSetup({q: Queue(q, nominal={GPU_MILLI: 9_000_000}) for q in queues}, {}, {})
    return run(
        nodes, pods, mode="batch", batch=setup, preempt=True, preemption=names.CHECKPOINT_AWARE_PREEMPTION
    ).run()


def test_batch_mode_breaks_equal_shares_by_head_priority_then_age_not_queue_name() -> None:
    """Kueue's entryOrdering under fair sharing: at equal dominant share the head of higher priority goes
    first, then the older head. One 1-GPU node, x (queue c) runs 0 → 10.
    - a1 (queue a, priority 0) arrives at 5 and b1 (queue b, priority 0) at 2: at 10 every share is 0
      and b1 is older: b1 runs 10 → 20 (pending 8 s), a1 20 → 30 (pending 15 s).
    - hi (queue z, priority 10) and lo (queue a, priority 0), both at 40: hi first although "a" < "z"."""
    r = batch_run(
        [("n", 1)],
        [
            queued("x", "c", 0, 10),
            queued("a1", "a", 5, 10),
            queued("b1", "b", 2, 10),
            queued("lo", "a", 40, 10),
            queued("hi", "z", 40, 10, priority=10),
        ],
        ("a", "b", "c", "z"),
    )
    assert r.waits_by_queue == {"c": [0], "b": [8], "a": [15, 10], "z": [0]}


def test_a_preempted_workload_keeps_its_place_by_creation_time() -> None:
    """Kueue requeues a workload evicted by preemption at its creation timestamp. One 1-GPU node, one
    queue. low (priority 0, 1000 s, no checkpoint, grace 30 s) runs from 0; mid (priority 0, 5 s)
    arrives at 20 and waits; high (priority 10, 50 s) arrives at 30 and preempts low, which terminates
    30 → 60; high runs 60 → 110. Then low's workload (created 0) goes before mid (created 20): it runs
    its 1000 s again 110 → 1110, and mid 1110 → 1115 (pending 1090 s)."""
    r = batch_run(
        [("n", 1)],
        [queued("low", "q", 0, 1000), queued("mid", "q", 20, 5), queued("high", "q", 30, 50, priority=10)],
        ("q",),
    )
    assert r.evictions == 1
    assert sorted(r.waits) == [0, 30, 1090]
    assert r.horizon_s == 1115


def test_job_chain_runs_completions_with_parallelism() -> None:
    """A Job with parallelism 1 and completions 2 on a 2-GPU node: the second pod is created when the
    first completes at 30, so both start without waiting but the run ends at 60."""
    first = sim("job-0", 0, 30)
    second = sim("job-1", 0, 30, after=first.pod.key)
    r = run([("n", 2)], [first, second]).run()
    assert r.waits == [0, 0] and r.horizon_s == 60


def test_same_seed_same_replay() -> None:
    pods = [sim(f"p{i}", i * 3, 50 + (i * 7) % 40, gpus=1 + i % 2) for i in range(30)]
    a = run([("n1", 2), ("n2", 4), ("n3", 1)], pods, seed=7).run()
    b = run([("n1", 2), ("n2", 4), ("n3", 1)], pods, seed=7).run()
    assert a.waits == b.waits and a.attempts == b.attempts and a.series == b.series
    assert not math.isnan(a.mean_allocation_pct)


def test_a_replay_at_one_instant_shows_no_time_weighted_figures() -> None:
    """A snapshot's pending pods all arrive at t=0 and never leave: no time passes, so the time-weighted
    rows are not applicable ("—") rather than a misleading 0 %; the counts still hold (one of the two
    1-GPU pods fits the 1-GPU node)."""
    r = run([("n", 1)], [sim("a", 0, math.inf), sim("b", 0, math.inf)]).run()
    rows = dict(r.rows())
    assert (rows["placed"], rows["still pending at the end"]) == ("1", "1")
    assert rows["GPU allocated, time-weighted (%)"] == "—"
    assert rows["pending pods, time-weighted mean / max"] == "— / 1"
    assert rows["fragment amount, time-weighted (% of GPUs)"] == "—"
