"""Queue quota with cohorts: how much a queue may still take of each resource (R8.1, R14.2).

Each queue has a nominal quota per resource. Queues whose cohorts share a root pool their *lendable*
quota (``lendingLimit``, default all of the nominal): a queue's usage beyond its private part
(nominal − lendable) is drawn from that pool, and its usage above its own nominal — what it borrows —
may not exceed its ``borrowingLimit``. A resource no queue of a tree names is not managed by the queues
(its only limit is the cluster). Worked example: queues A and B in one cohort, each nominal 8 GPUs,
B lending at most 4: the pool is 8 + 4 = 12; with B idle, A may use 8 + 4 = 12; once B uses 6, B's
draw on the pool is 6 − (8 − 4) = 2, so A may use 12 − 2 = 10.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kubegpu.batch.fair_share import ConsumedUsage
from kubegpu.batch.objects import Cohort, Queue
from kubegpu.batch.workloads import Workload
from kubegpu.model.quantity import format_milli
from kubegpu.model.resources import ResourceList


def root_of(queue: Queue, cohorts: Mapping[str, Cohort]) -> str:
    """The root cohort of a queue's cohort tree ("" + queue name for a queue in no cohort)."""
    if not queue.cohort:
        return "queue:" + queue.name
    name, seen = queue.cohort, set()
    while name in cohorts and cohorts[name].parent and name not in seen:
        seen.add(name)
        name = cohorts[name].parent
    return name


@dataclass(frozen=True)
class QuotaCheck:
    fits: bool
    reason: str = ""
    resource: str = ""
    short_by: int = 0  # milli-units missing
    borrowing: ResourceList | None = None  # what the admission borrows, per resource


class QuotaBook:
    """Usage per queue, and the admission test against nominal quota, borrowing and lending limits."""

    def __init__(self, queues: Mapping[str, Queue], cohorts: Mapping[str, Cohort]) -> None:
        self.queues = dict(queues)
        self.cohorts = dict(cohorts)
        self.usage: dict[str, ResourceList] = {q: {} for q in queues}
        self.root = {q.name: root_of(q, cohorts) for q in queues.values()}
        # decayed historical usage, for queues whose cohort asks for it (set by the session, which owns
        # the clock)
        self.consumed: ConsumedUsage | None = None

    def tree(self, queue: str) -> list[Queue]:
        return [q for q in self.queues.values() if self.root[q.name] == self.root[queue]]

    def managed(self, queue: str) -> set[str]:
        return {r for q in self.tree(queue) for r in q.nominal}

    @staticmethod
    def lendable(q: Queue, resource: str) -> int:
        nominal = q.nominal.get(resource, 0)
        if q.lending_limit is None or resource not in q.lending_limit:
            return nominal
        return min(q.lending_limit[resource], nominal)

    def _pool_draw(self, q: Queue, resource: str, usage: int) -> int:
        private = q.nominal.get(resource, 0) - self.lendable(q, resource)
        return max(usage - private, 0)

    def check(self, queue: str, request: Mapping[str, int]) -> QuotaCheck:
        q = self.queues[queue]
        borrowing: ResourceList = {}
        for r in sorted(self.managed(queue)):
            want = request.get(r, 0)
            if want == 0:
                continue
            used = self.usage[queue].get(r, 0)
            new_usage = used + want
            borrowed = self._above_nominal(q, r, want)
            if borrowed > 0:
                limit = None if q.borrowing_limit is None else q.borrowing_limit.get(r)
                if limit is not None and borrowed > limit:
                    return QuotaCheck(False, f"{r}: would borrow {format_milli(r, borrowed)} but borrowingLimit is "
                                      f"{format_milli(r, limit)}", r, borrowed - limit)  # fmt: skip
                borrowing[r] = borrowed
            pool = sum(self.lendable(o, r) for o in self.tree(queue))
            draw = sum(
                self._pool_draw(o, r, self.usage[o.name].get(r, 0))
                for o in self.tree(queue)
                if o.name != queue
            )
            draw += self._pool_draw(q, r, new_usage)
            if draw > pool:
                return QuotaCheck(
                    False,
                    f"{r}: needs {format_milli(r, want)}, the queue uses {format_milli(r, used)} of nominal "
                    f"{format_milli(r, q.nominal.get(r, 0))} and its cohort has {format_milli(r, pool - (draw - want))} left to lend",
                    r, draw - pool,
                )  # fmt: skip
        return QuotaCheck(True, borrowing=borrowing)

    def borrows(self, queue: str, request: Mapping[str, int]) -> bool:
        """Whether admitting ``request`` takes ``queue`` above its nominal quota of a managed resource
        (Kueue's ``assignment.Borrows()``); False for a queue nobody defines."""
        q = self.queues.get(queue)
        if q is None:
            return False
        return any(
            self._above_nominal(q, r, request[r]) > 0 for r in self.managed(queue) if request.get(r, 0)
        )

    def _above_nominal(self, q: Queue, resource: str, want: int) -> int:
        """How far ``q``'s usage of ``resource`` plus ``want`` lies above its nominal quota (≤ 0: within)."""
        return self.usage[q.name].get(resource, 0) + want - q.nominal.get(resource, 0)

    def charge(self, queue: str, request: Mapping[str, int], sign: int = 1) -> None:
        usage = self.usage[queue]
        for r, v in request.items():
            usage[r] = usage.get(r, 0) + sign * v

    def charge_admitted(self, admitted: Iterable[Workload]) -> QuotaBook:
        """Charge every already-admitted workload to its queue (queues nobody defines are skipped)."""
        for w in admitted:
            if w.admitted and w.queue in self.queues:
                self.charge(w.queue, w.requests)
        return self

    def share_usage(self, queue: str) -> Mapping[str, float]:
        """What the fair share counts: the decayed consumed usage where configured, else current usage."""
        if self.consumed is not None and queue in self.consumed.decay:
            return self.consumed.consumed[queue]
        return self.usage[queue]

    def dominant_share(self, queue: str, totals: Mapping[str, int]) -> float:
        """DRF: the largest fraction of any cluster resource the queue holds (or, with decay, has
        consumed: ``batch.fair_share``), divided by its weight; 0 for a queue no GpuQueue defines (no
        quota applies to it)."""
        if queue not in self.queues:
            return 0.0
        usage = self.share_usage(queue)
        share = max((usage.get(r, 0) / t for r, t in totals.items() if t > 0), default=0.0)
        return share / self.queues[queue].weight

    def borrowed(self, queue: str) -> ResourceList:
        q = self.queues[queue]
        return {
            r: v - q.nominal.get(r, 0)
            for r, v in self.usage[queue].items()
            if v > q.nominal.get(r, 0) and r in self.managed(queue)
        }
