"""The live scheduling queue: active, backoff and unschedulable pods (kube-scheduler 1.34 ``PriorityQueue``).

* **active**: pods ready for a cycle, popped in the core's PrioritySort order
  (``kubegpu.scheduler.queue.priority_sort``: priority, then creation time, then arrival);
* **backoff**: pods whose last attempt failed, held until their backoff expires — 1 s doubled per
  attempt up to 10 s (``podInitialBackoffDuration`` / ``podMaxBackoffDuration``);
* **unschedulable**: pods no node could take; they wait for a cluster change that may help
  (``move_all``: a node added or updated, an assigned pod deleted) and are flushed anyway after 5 min
  (``podMaxInUnschedulablePodsDuration``), then pass through backoff like upstream.

Gated pods (``spec.schedulingGates``) are never queued by the caller. The queue is single-threaded: only
the scheduling loop touches it. Times come from an injected clock so tests need no sleeping.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass

from kubegpu.backoff import POD_INITIAL_BACKOFF_S, POD_MAX_BACKOFF_S, POD_MAX_IN_UNSCHEDULABLE_S, doubling
from kubegpu.model.objects import Pod, PodKey
from kubegpu.scheduler.queue import priority_sort


@dataclass
class _Entry:
    pod: Pod
    attempts: int = 0
    backoff_until: float = 0.0
    unschedulable_since: float = 0.0


class SchedulingQueue:
    def __init__(
        self,
        initial_backoff_s: float = POD_INITIAL_BACKOFF_S,
        max_backoff_s: float = POD_MAX_BACKOFF_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.initial_backoff_s = initial_backoff_s
        self.max_backoff_s = max_backoff_s
        self.clock = clock
        self._entries: dict[PodKey, _Entry] = {}
        self._active: dict[PodKey, None] = {}  # insertion-ordered set
        self._sorted: list[Pod] | None = None  # priority_sort of active, rebuilt only after changes
        self._backoff: list[tuple[float, int, PodKey]] = []  # heap of (ready time, seq, key)
        self._unschedulable: set[PodKey] = set()
        self._in_flight: set[PodKey] = set()  # popped, outcome not reported yet
        self._seq = 0

    def __contains__(self, key: PodKey) -> bool:
        return key in self._entries

    def depths(self) -> dict[str, int]:
        return {
            "active": len(self._active),
            "backoff": len(self._entries)
            - len(self._active)
            - len(self._unschedulable)
            - len(self._in_flight),
            "unschedulable": len(self._unschedulable),
        }

    def add(self, pod: Pod) -> None:
        """A new or updated pending pod: updates the stored copy; a new one goes straight to active.
        ``remove`` ends a pod's stay (bound, deleted, or assigned by someone else)."""
        entry = self._entries.get(pod.key)
        if entry is None:
            self._entries[pod.key] = _Entry(pod)
            self._activate(pod.key)
            return
        entry.pod = pod
        if pod.key in self._active:
            self._sorted = None

    def remove(self, key: PodKey) -> None:
        if self._entries.pop(key, None) is not None:
            if self._active.pop(key, 0) is None:
                self._sorted = None
            self._in_flight.discard(key)
            self._unschedulable.discard(key)  # a stale backoff heap item is skipped when popped

    def pop(self) -> Pod | None:
        """The next pod to schedule, or None; moves expired backoffs and flushes old unschedulables."""
        self._flush()
        if not self._active:
            return None
        if self._sorted is None:
            self._sorted = priority_sort(self._entries[k].pod for k in self._active)
            self._sorted.reverse()  # pop from the end
        pod = self._sorted.pop()
        del self._active[pod.key]
        self._in_flight.add(pod.key)
        return pod

    def requeue_unschedulable(self, pod: Pod) -> None:
        """A cycle found no node: wait for a cluster change (``move_all``)."""
        entry = self._attempted(pod)
        entry.unschedulable_since = self.clock()
        self._unschedulable.add(pod.key)

    def requeue_backoff(self, pod: Pod) -> None:
        """An error (e.g. a failed bind): retry after the pod's backoff."""
        entry = self._attempted(pod)
        self._push_backoff(pod.key, entry.backoff_until)

    def move_all(self) -> None:
        """A cluster change that may make unschedulable pods fit: back to active (or backoff)."""
        for key in list(self._unschedulable):
            self._release(key)

    def next_ready_in(self) -> float | None:
        """Seconds until a backoff expires (None when nothing waits there)."""
        while self._backoff and self._backoff[0][2] not in self._entries:
            heapq.heappop(self._backoff)
        if not self._backoff:
            return None
        return max(self._backoff[0][0] - self.clock(), 0.0)

    def _attempted(self, pod: Pod) -> _Entry:
        entry = self._entries.setdefault(pod.key, _Entry(pod))
        entry.pod = pod
        entry.attempts += 1
        delay = doubling(entry.attempts, self.initial_backoff_s, self.max_backoff_s)
        entry.backoff_until = self.clock() + delay
        self._active.pop(pod.key, None)
        self._in_flight.discard(pod.key)
        return entry

    def _release(self, key: PodKey) -> None:
        self._unschedulable.discard(key)
        entry = self._entries[key]
        if entry.backoff_until > self.clock():
            self._push_backoff(key, entry.backoff_until)
        else:
            self._activate(key)

    def _push_backoff(self, key: PodKey, ready: float) -> None:
        self._seq += 1
        heapq.heappush(self._backoff, (ready, self._seq, key))

    def _activate(self, key: PodKey) -> None:
        self._active[key] = None
        self._sorted = None

    def _flush(self) -> None:
        now = self.clock()
        while self._backoff and self._backoff[0][0] <= now:
            _, _, key = heapq.heappop(self._backoff)
            entry = self._entries.get(key)
            if (
                entry is not None
                and key not in self._unschedulable
                and key not in self._active
                and key not in self._in_flight
            ) and entry.backoff_until <= now:
                self._activate(key)
        for key in [
            k
            for k in self._unschedulable
            if now - self._entries[k].unschedulable_since >= POD_MAX_IN_UNSCHEDULABLE_S
        ]:
            self._release(key)
