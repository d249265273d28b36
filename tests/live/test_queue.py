"""The live scheduling queue (kube-scheduler 1.34 ``PriorityQueue``), on a virtual clock.

Pins: PrioritySort pops the higher priority first, then the earlier creation; a failed pod's backoff is
``podInitialBackoffDuration`` (1 s) doubled per attempt up to ``podMaxBackoffDuration`` (10 s); an
unschedulable pod waits for a cluster event (``move_all``) and then still serves its backoff; it is
flushed after ``podMaxInUnschedulablePodsDuration`` (5 min) without one.
"""

from __future__ import annotations

from kubegpu.live.queue import SchedulingQueue
from kubegpu.model.objects import Pod
from tests.clock import ManualClock


def pod(name: str, priority: int = 0, created: str = "2026-12-03T00:00:00Z") -> Pod:
    return Pod(namespace="ml", name=name, priority=priority, creation_timestamp=created)


def test_pops_by_priority_then_creation_time() -> None:
    q = SchedulingQueue(clock=ManualClock(1000))
    q.add(pod("late", created="2026-12-03T00:00:09Z"))
    q.add(pod("early", created="2026-12-03T00:00:01Z"))
    q.add(pod("urgent", priority=1000, created="2026-12-03T00:00:10Z"))
    assert [p.name for p in iter(q.pop, None)] == ["urgent", "early", "late"]


def test_backoff_doubles_from_1s_to_a_10s_cap() -> None:
    clock = ManualClock(1000)
    q = SchedulingQueue(clock=clock)
    p = pod("flaky")
    q.add(p)
    waits = []
    for _ in range(6):
        assert q.pop() == p
        q.requeue_backoff(p)
        waits.append(q.next_ready_in())
        assert q.pop() is None  # still backing off
        clock.now += waits[-1]  # type: ignore[operator]
    assert waits == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_a_pod_retried_thousands_of_times_keeps_the_cap() -> None:
    """The 1,100th attempt still waits the 10 s cap (1 s * 2 ** 1099 does not convert to a float: the
    OverflowError would have ended the scheduling loop for a pod failing for hours). Upstream:
    kubernetes pkg/scheduler/backend/queue/backoff_queue.go ``calculateBackoffDuration`` doubles
    podInitialBackoff (DefaultPodInitialBackoffDuration, 1 s) and returns podMaxBackoff
    (DefaultPodMaxBackoffDuration, 10 s) as soon as the next doubling would pass it ("Use subtraction
    instead of addition or multiplication to avoid overflow"), however many the attempts."""
    clock = ManualClock(1000)
    q = SchedulingQueue(clock=clock)
    p = pod("stuck")
    q.add(p)
    for _ in range(1099):
        assert q.pop() == p
        q.requeue_backoff(p)
        clock.now += 10
    assert q.pop() == p
    q.requeue_backoff(p)
    assert q.next_ready_in() == 10.0


def test_unschedulable_pods_wait_for_a_cluster_event_then_their_backoff() -> None:
    clock = ManualClock(1000)
    q = SchedulingQueue(clock=clock)
    p = pod("big")
    q.add(p)
    q.pop()
    q.requeue_unschedulable(p)
    clock.now += 30
    assert q.pop() is None and q.depths() == {"active": 0, "backoff": 0, "unschedulable": 1}
    q.move_all()  # backoff (1 s) long expired: straight to active
    assert q.pop() == p
    q.requeue_unschedulable(p)
    q.move_all()  # second attempt: 2 s backoff not served yet
    assert q.depths() == {"active": 0, "backoff": 1, "unschedulable": 0}
    clock.now += 2
    assert q.pop() == p


def test_unschedulable_pods_are_flushed_after_five_minutes() -> None:
    clock = ManualClock(1000)
    q = SchedulingQueue(clock=clock)
    p = pod("stuck")
    q.add(p)
    q.pop()
    q.requeue_unschedulable(p)
    clock.now += 299
    assert q.pop() is None
    clock.now += 1
    assert q.pop() == p
