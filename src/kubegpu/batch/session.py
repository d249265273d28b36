"""One admission cycle over the queues: fair order, quota with borrowing, gang placement (R8, R14.2).

Order (Volcano's and Kueue's ideas, kube-scheduler's rules): among queues with pending workloads, the one
with the lowest weighted dominant share (DRF) goes next; inside a queue, higher priority, then earlier
creation. A workload is admitted only if its queue's quota (with cohort borrowing) allows it *and* the
core can place all of it now — there is no "admitted but Pending". A workload that cannot go is skipped
for this cycle (best-effort FIFO) with the reason recorded, and its queue's next workload is tried.
A queue within its nominal quota that is blocked by what cohort queues borrowed reclaims it first
(evicting borrowers' workloads whole). A single pod that does not fit may preempt through the profile's PostFilter (with the kubegpu profile:
gang-whole, checkpoint-aware); the victims leave the cluster and their queues get the quota back, and
the decision reports the GPU-seconds each lost.
Workloads in a queue that no ``GpuQueue`` defines are placed without quota, and say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubegpu.batch import gang
from kubegpu.batch.objects import Cohort, PodGroup, Queue
from kubegpu.batch.quota import QuotaBook
from kubegpu.batch.workloads import Workload, workloads
from kubegpu.model.objects import Pod
from kubegpu.model.podgroup import eviction_cost
from kubegpu.model.quantity import format_milli
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.schedule_one import Scheduler


@dataclass
class Decision:
    workload: Workload
    admitted: bool
    reason: str = ""
    nodes: dict[str, str] = field(default_factory=dict)  # pod key → node
    position: int = 0  # 1-based position in its queue when the cycle started
    borrowed: dict[str, int] = field(default_factory=dict)
    evicted: dict[str, int] = field(default_factory=dict)  # victim pod key → GPU-seconds lost

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload.key, "queue": self.workload.queue, "admitted": self.admitted,
            "reason": self.reason or None, "nodes": self.nodes, "position": self.position,
            "pods": len(self.workload.pods), "minMember": self.workload.min_member,
            "borrowed": {r: format_milli(r.removeprefix("requests."), v) for r, v in self.borrowed.items()},
            "evicted": self.evicted, "gpuSecondsLost": sum(self.evicted.values()),
        }  # fmt: skip


class BatchSession:
    def __init__(
        self,
        scheduler: Scheduler,
        snapshot: ClusterSnapshot,
        queues: Mapping[str, Queue],
        cohorts: Mapping[str, Cohort],
        groups: Mapping[str, PodGroup],
        now: datetime | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.now = now or datetime.now(UTC)
        self.all = workloads(snapshot.pods, groups)
        self.book = QuotaBook(queues, cohorts).charge_admitted(self.all)
        self.owner = {p.key: w for w in self.all for p in w.pods}
        cluster = scheduler.cluster
        self.totals = {r: int(cluster.allocatable[:, cluster.col[r]].sum()) for r in cluster.resources}

    def pending(self) -> dict[str, list[Workload]]:
        by_queue: dict[str, list[Workload]] = {}
        for w in self.all:
            if not w.admitted and not any(p.node_name for p in w.pods):
                by_queue.setdefault(w.queue, []).append(w)
        for ws in by_queue.values():
            ws.sort(key=lambda w: (-w.priority, w.created, w.key))
        return by_queue

    def run(self) -> list[Decision]:
        queues = self.pending()
        position = {w.key: i + 1 for ws in queues.values() for i, w in enumerate(ws)}
        decisions: list[Decision] = []
        while any(queues.values()):
            name = min(
                (q for q, ws in queues.items() if ws),
                key=lambda q: (self.book.dominant_share(q, self.totals) if q in self.book.queues else 0.0, q),
            )
            w = queues[name].pop(0)
            decisions.append(self._admit(w, position[w.key]))
        return decisions

    def _admit(self, w: Workload, position: int) -> Decision:
        managed = w.queue in self.book.queues
        check = self.book.check(w.queue, w.requests) if managed else None
        reclaimed: dict[str, int] = {}
        if check is not None and not check.fits:
            reclaimed = self._reclaim_for(w)
            check = self.book.check(w.queue, w.requests)
            if not check.fits:
                return Decision(
                    w,
                    False,
                    f"quota of queue {w.queue}: {check.reason}",
                    position=position,
                    evicted=reclaimed,
                )
        placement = gang.place(self.scheduler, w)
        evicted: dict[str, int] = dict(reclaimed)
        if not placement.ok and not w.gang:
            evicted.update(self._preempt_for(w.pods[0]))
            if len(evicted) > len(reclaimed):
                placement = gang.place(self.scheduler, w)
        if not placement.ok:
            reason = placement.explanation if w.gang else placement.failed[0][1]
            return Decision(w, False, reason, position=position, evicted=evicted)
        if managed:
            self.book.charge(w.queue, w.requests)
        note = "" if managed else f"queue {w.queue!r} is not defined: no queue quota applies"
        return Decision(
            w, True, note, {p.key: n for p, n, _ in placement.placed}, position,
            dict(check.borrowing or {}) if check is not None else {}, evicted,
        )  # fmt: skip

    def _reclaim_for(self, w: Workload) -> dict[str, int]:
        """Reclaim: a queue below its nominal quota takes back what cohort queues borrowed from it.

        Candidates are admitted workloads of queues using more than their nominal quota in the same
        cohort tree, lowest priority first, then the cheapest to evict (GPU-seconds since checkpoint);
        whole workloads are evicted (a gang whole), and only while the borrower stays at or above its
        nominal quota and the claimant stays within its own."""
        queue = self.book.queues[w.queue]
        managed = self.book.managed(w.queue)
        within_nominal = all(
            self.book.usage[w.queue].get(r, 0) + w.requests.get(r, 0) <= queue.nominal.get(r, 0)
            for r in managed if w.requests.get(r, 0)
        )  # fmt: skip
        if not within_nominal:
            return {}
        tree = {q.name for q in self.book.tree(w.queue)} - {w.queue}
        candidates = [
            v for v in self.all
            if v.queue in tree and all(p.key in self.scheduler.cluster.placement for p in v.pods)
        ]  # fmt: skip
        candidates.sort(key=lambda v: (v.priority, sum(eviction_cost(p, self.now) for p in v.pods), v.key))
        costs: dict[str, int] = {}
        for victim in candidates:
            if self.book.check(w.queue, w.requests).fits:
                break
            borrowed = self.book.borrowed(victim.queue)
            if not any(
                victim.requests.get(r, 0) and borrowed.get(r, 0) >= victim.requests[r] for r in managed
            ):
                continue  # evicting it would push its queue below nominal: not borrowed capacity
            for pod in victim.pods:
                self.scheduler.cluster.remove_pod(pod)
                costs[pod.key] = eviction_cost(pod, self.now)
            self.book.charge(victim.queue, victim.requests, sign=-1)
        return costs

    def _preempt_for(self, pod: Pod) -> dict[str, int]:
        """Run the profile's PostFilter (preemption) for ``pod``; evict the victims it names, give their
        quota back, and return what each cost in GPU-seconds."""
        result = self.scheduler.schedule_one(pod, assume=False, preempt=True)
        if not result.victims:
            return {}
        costs: dict[str, int] = {}
        for victim in result.victims:
            self.scheduler.cluster.remove_pod(victim)
            owner = self.owner.get(victim.key)
            if owner is not None and owner.queue in self.book.queues:
                self.book.charge(owner.queue, victim.requests, sign=-1)
            costs[victim.key] = eviction_cost(victim, self.now)
        return costs
