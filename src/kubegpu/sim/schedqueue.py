"""kube-scheduler's scheduling queue in simulated time: activeQ, backoffQ and unschedulablePods.

Modelled on ``pkg/scheduler/backend/queue/scheduling_queue.go`` (1.34) with its defaults:

- a new entry goes to activeQ; the scheduler pops the entry its order ranks first (PrioritySort: higher
  priority, then the earlier queue timestamp);
- a failed attempt puts the entry in unschedulablePods, stamped with the attempt time; its backoff is
  ``podInitialBackoffDuration`` (1 s) doubled per attempt, capped at ``podMaxBackoffDuration`` (10 s);
- a cluster event that may make it schedulable (``MoveAllToActiveOrBackoffQueue``) moves every entry of
  unschedulablePods to backoffQ if its backoff has not expired yet, else to activeQ;
- ``flushBackoffQCompleted`` runs every second: entries whose backoff expired move to activeQ;
- ``flushUnschedulablePodsLeftover`` runs every 30 s: entries that stayed in unschedulablePods longer than
  ``podMaxInUnschedulablePodsDuration`` (5 min) move to backoffQ or activeQ.

The periodic flushes happen on their tick grid (every 1 s / every 30 s from time 0), so "expired at
12.3 s" means "active at 13 s", as in a running scheduler. Entries are opaque keys with a queue name, a
priority and a timestamp; the caller chooses which queue's head to pop (one queue for kube-scheduler,
one per team with DRF among them for the batch layer). Queueing hints are not modelled: every move
event moves every unschedulable entry.

With ``order_by_creation`` (the batch layer's queues, as Kueue's) an entry keeps its place by the time it
was created, which neither a failed attempt nor a requeue after preemption changes
(``workload.Ordering.GetQueueOrderTimestamp``: the creation timestamp); kube-scheduler's activeQ orders by
the time the entry last entered the queue or was tried. Backoff runs from the last attempt either way.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kubegpu.backoff import POD_INITIAL_BACKOFF_S, POD_MAX_BACKOFF_S, POD_MAX_IN_UNSCHEDULABLE_S, doubling

BACKOFF_FLUSH_PERIOD_S = 1.0  # flushBackoffQCompleted
UNSCHEDULABLE_FLUSH_PERIOD_S = 30.0  # flushUnschedulablePodsLeftover


def next_tick(t: float, period: float) -> float:
    """The first tick of a ``period`` grid at or after ``t``."""
    return math.ceil(t / period) * period


@dataclass
class Entry:
    key: str
    queue: str
    priority: int
    timestamp: float  # when it last entered the queue or was last tried
    created: float  # when its pod (Kueue: its workload) was created
    attempts: int = 0
    where: str = "active"  # active | backoff | unschedulable


class SchedulingQueue:
    def __init__(
        self,
        initial_backoff: float = POD_INITIAL_BACKOFF_S,
        max_backoff: float = POD_MAX_BACKOFF_S,
        max_in_unschedulable: float = POD_MAX_IN_UNSCHEDULABLE_S,
        order_by_creation: bool = False,
    ) -> None:
        self.order_by_creation = order_by_creation
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self.entries: dict[str, Entry] = {}
        self._seq = 0
        self._active: dict[str, list[tuple[int, float, int, str]]] = {}  # queue → heap
        self._backoff: list[tuple[float, int, str]] = []  # (flush time, seq, key)
        self._unschedulable: list[tuple[float, int, str]] = []  # (stamp, seq, key)
        self.counts = {"active": 0, "backoff": 0, "unschedulable": 0}

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: str) -> bool:
        return key in self.entries

    def _to_active(self, e: Entry) -> None:
        self.counts[e.where] -= 1
        e.where = "active"
        self.counts["active"] += 1
        self._seq += 1
        heapq.heappush(
            self._active.setdefault(e.queue, []), (-e.priority, self.order_of(e), self._seq, e.key)
        )

    def order_of(self, e: Entry) -> float:
        """The timestamp that ranks ``e`` among entries of equal priority."""
        return e.created if self.order_by_creation else e.timestamp

    def backoff_expiry(self, e: Entry) -> float:
        return e.timestamp + doubling(e.attempts, self.initial_backoff, self.max_backoff)

    def _to_active_or_backoff(self, e: Entry, now: float) -> None:
        expiry = self.backoff_expiry(e)
        if expiry > now:
            self.counts[e.where] -= 1
            e.where = "backoff"
            self.counts["backoff"] += 1
            self._seq += 1
            heapq.heappush(self._backoff, (next_tick(expiry, BACKOFF_FLUSH_PERIOD_S), self._seq, e.key))
        else:
            self._to_active(e)

    def add(self, key: str, queue: str, priority: int, now: float, created: float | None = None) -> None:
        """A new pending entry (a created pod, or a recreated victim): straight to activeQ. ``created``
        (default ``now``): when its pod or workload was created."""
        e = Entry(key, queue, priority, now, now if created is None else created, where="unschedulable")
        self.entries[key] = e
        self.counts["unschedulable"] += 1
        self._to_active(e)

    def remove(self, key: str) -> None:
        """The pod was deleted while pending (its heap slots are skipped when reached)."""
        e = self.entries.pop(key, None)
        if e is not None:
            self.counts[e.where] -= 1

    def active_queues(self) -> list[str]:
        """Queues whose activeQ holds a live entry, after dropping stale heap slots at their heads."""
        out = []
        for name, heap in self._active.items():
            while heap and not self._live(heap[0][3], "active"):
                heapq.heappop(heap)
            if heap:
                out.append(name)
        return out

    def head(self, queue: str) -> Entry:
        """The entry ``queue``'s activeQ ranks first (``queue`` as ``active_queues`` returned it)."""
        return self.entries[self._active[queue][0][3]]

    def _live(self, key: str, where: str) -> bool:
        e = self.entries.get(key)
        return e is not None and e.where == where

    def pop(self, choose: Callable[[list[str]], str] | None = None) -> Entry | None:
        """Take the head of activeQ (of the queue ``choose`` picks among non-empty ones) for an attempt."""
        names = self.active_queues()
        if not names:
            return None
        name = choose(names) if choose is not None else min(names)
        *_, key = heapq.heappop(self._active[name])
        e = self.entries[key]
        e.attempts += 1
        self.counts["active"] -= 1
        e.where = "popped"
        return e

    def done(self, e: Entry, now: float, scheduled: bool) -> None:
        """The attempt ended: a scheduled entry leaves, a failed one waits in unschedulablePods."""
        if scheduled:
            self.entries.pop(e.key, None)
            return
        if e.key not in self.entries:
            return  # deleted meanwhile
        e.timestamp = now
        e.where = "unschedulable"
        self.counts["unschedulable"] += 1
        self._seq += 1
        heapq.heappush(self._unschedulable, (now, self._seq, e.key))

    def move_all(self, now: float) -> None:
        """``MoveAllToActiveOrBackoffQueue``: a cluster event that may make waiting pods schedulable."""
        for e in list(self.entries.values()):
            if e.where == "unschedulable":
                self._to_active_or_backoff(e, now)

    def next_flush(self) -> float | None:
        """When the next periodic flush would move something (None: nothing is waiting for one)."""
        times = []
        while self._backoff and not self._live(self._backoff[0][2], "backoff"):
            heapq.heappop(self._backoff)
        if self._backoff:
            times.append(self._backoff[0][0])
        while self._unschedulable and not self._stamped(*self._unschedulable[0]):
            heapq.heappop(self._unschedulable)
        if self._unschedulable:
            # moved at the first 30 s tick strictly more than 5 min after it was stamped
            t = self._unschedulable[0][0] + self.max_in_unschedulable
            tick = next_tick(t, UNSCHEDULABLE_FLUSH_PERIOD_S)
            times.append(tick if tick > t else tick + UNSCHEDULABLE_FLUSH_PERIOD_S)
        return min(times) if times else None

    def flush(self, now: float) -> None:
        """Run the periodic flushes due by ``now``."""
        while self._backoff and self._backoff[0][0] <= now:
            _, _, key = heapq.heappop(self._backoff)
            e = self.entries.get(key)
            if e is not None and e.where == "backoff":
                self._to_active(e)
        if now % UNSCHEDULABLE_FLUSH_PERIOD_S:
            return
        limit = now - self.max_in_unschedulable
        while self._unschedulable and self._unschedulable[0][0] < limit:
            stamp, seq, key = heapq.heappop(self._unschedulable)
            if self._stamped(stamp, seq, key):
                self._to_active_or_backoff(self.entries[key], now)

    def _stamped(self, stamp: float, seq: int, key: str) -> bool:
        e = self.entries.get(key)
        return e is not None and e.where == "unschedulable" and e.timestamp == stamp

    def waiting(self) -> Iterable[Entry]:
        return self.entries.values()
