"""kube-scheduler's scheduling queue in simulated time (``scheduling_queue.go``, 1.34 defaults):
podInitialBackoffDuration 1 s, podMaxBackoffDuration 10 s (doubling per attempt), unschedulable pods
flushed after 5 min by a 30 s loop, backoffQ flushed every 1 s, PrioritySort order."""

from __future__ import annotations

import pytest

from kubegpu.backoff import POD_INITIAL_BACKOFF_S, POD_MAX_BACKOFF_S, doubling
from kubegpu.sim.schedqueue import SchedulingQueue


@pytest.mark.parametrize(("attempts", "seconds"), [(1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (9, 10)])
def test_backoff_doubles_from_one_second_up_to_ten(attempts: int, seconds: float) -> None:
    """calculateBackoffDuration: 1 s for the first attempt, doubled per further attempt, capped at 10 s."""
    assert doubling(attempts, POD_INITIAL_BACKOFF_S, POD_MAX_BACKOFF_S) == seconds


def test_priority_sort_pops_higher_priority_then_earlier() -> None:
    q = SchedulingQueue()
    q.add("low", "", 0, now=0)
    q.add("high-late", "", 10, now=2)
    q.add("high-early", "", 10, now=1)
    popped = [q.pop(), q.pop(), q.pop()]
    assert [e.key for e in popped if e is not None] == ["high-early", "high-late", "low"]
    assert q.pop() is None


def test_failed_pod_waits_until_a_cluster_event_then_backs_off() -> None:
    """Failed at t=0 (attempt 1, backoff 1 s): an event at 0.5 s moves it to backoffQ (still backing
    off); the 1 s flush tick makes it active. Failed again at t=1 (attempt 2, backoff 2 s): an event
    at 5 s finds the backoff over and moves it straight to activeQ."""
    q = SchedulingQueue()
    q.add("p", "", 0, now=0)
    e = q.pop()
    assert e is not None and e.attempts == 1
    q.done(e, 0, scheduled=False)
    assert q.counts == {"active": 0, "backoff": 0, "unschedulable": 1}
    assert q.pop() is None
    q.move_all(0.5)
    assert q.counts["backoff"] == 1
    assert q.next_flush() == 1.0
    q.flush(1.0)
    e = q.pop()
    assert e is not None and e.attempts == 2
    q.done(e, 1.0, scheduled=False)
    q.move_all(5.0)
    assert q.counts == {"active": 1, "backoff": 0, "unschedulable": 0}


def test_backoff_expiry_between_ticks_waits_for_the_next_one_second_tick() -> None:
    """Failed at 2.3 s on its first attempt: backoff ends at 3.3 s; flushBackoffQCompleted runs every
    second, so the pod is active at 4 s."""
    q = SchedulingQueue()
    q.add("p", "", 0, now=2.3)
    e = q.pop()
    assert e is not None
    q.done(e, 2.3, scheduled=False)
    q.move_all(2.5)
    assert q.next_flush() == 4.0
    q.flush(3.9)
    assert q.counts["backoff"] == 1
    q.flush(4.0)
    assert q.counts["active"] == 1


def test_unschedulable_leftover_flush_after_five_minutes_on_the_30_second_grid() -> None:
    """Stamped at 10 s with no cluster event: flushUnschedulablePodsLeftover runs at 30 s multiples and
    moves pods unschedulable for more than 300 s: at the 300 s tick it has been 290 s (stays), at the
    330 s tick 320 s (moved; its backoff is long over, so to activeQ)."""
    q = SchedulingQueue()
    q.add("p", "", 0, now=10)
    e = q.pop()
    assert e is not None
    q.done(e, 10, scheduled=False)
    assert q.next_flush() == 330.0
    q.flush(300.0)
    assert q.counts["unschedulable"] == 1
    q.flush(330.0)
    assert q.counts["active"] == 1


def test_stamped_exactly_on_the_grid_waits_for_strictly_more_than_five_minutes() -> None:
    """Stamped at 0: at 300 s it has been exactly 300 s, not more → moved at 330 s."""
    q = SchedulingQueue()
    q.add("p", "", 0, now=0)
    e = q.pop()
    assert e is not None
    q.done(e, 0, scheduled=False)
    assert q.next_flush() == 330.0


def test_deleted_pod_leaves_every_queue_and_per_queue_choice() -> None:
    q = SchedulingQueue()
    q.add("a1", "a", 0, now=0)
    q.add("b1", "b", 5, now=0)
    q.add("a2", "a", 0, now=1)
    q.remove("a1")
    first = q.pop(lambda names: "a" if "a" in names else names[0])
    assert first is not None and first.key == "a2"
    assert len(q) == 2
    assert q.counts == {"active": 1, "backoff": 0, "unschedulable": 0}


def test_kueue_order_keeps_a_failed_entrys_place_by_creation_time() -> None:
    """Kueue orders a ClusterQueue by priority, then the workload's creation timestamp
    (``workload.Ordering.GetQueueOrderTimestamp``), which a failed attempt does not change; kube-scheduler
    re-stamps a failed pod with the attempt time, putting it behind pods that came meanwhile. ``early``
    (created 0) fails at 5; ``late`` is created at 3; after a cluster event at 20 (1 s backoff over):"""
    orders = {}
    for by_creation in (False, True):
        q = SchedulingQueue(order_by_creation=by_creation)
        q.add("early", "", 0, now=0)
        e = q.pop()
        assert e is not None
        q.done(e, 5, scheduled=False)
        q.add("late", "", 0, now=3)
        q.move_all(20)
        orders[by_creation] = [x.key for x in (q.pop(), q.pop()) if x is not None]
    assert orders == {False: ["late", "early"], True: ["early", "late"]}


def test_a_requeued_entry_ranks_by_the_creation_time_it_is_given() -> None:
    """A preempted workload requeued at 50 but created at 0 goes before one created at 10; the head of
    each queue is what ``head`` reports."""
    q = SchedulingQueue(order_by_creation=True)
    q.add("newer", "a", 0, now=10)
    q.add("requeued", "a", 0, now=50, created=0)
    q.add("other", "b", 0, now=20)
    assert [q.head(name).key for name in sorted(q.active_queues())] == ["requeued", "other"]
    first = q.pop(lambda names: "a")
    assert first is not None and first.key == "requeued"
