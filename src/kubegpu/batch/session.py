"""One admission cycle over the queues: fair order, quota with borrowing, gang placement (R8, R14.2).

Order (Kueue's entryOrdering under fair sharing, ``entry_order``): among queues with pending workloads,
a head within its queue's nominal quota before one that would borrow, then the queue with the lowest
weighted dominant share (DRF) — of decayed historical usage where a cohort sets
``admissionFairSharing`` (``batch.fair_share``, advanced by the session's clock ``now``) — then the head
of higher priority, then the older head; inside a queue, higher priority, then earlier creation. A
workload is admitted only if its queue's quota (with cohort borrowing) allows it *and* the core can
place all of it now — there is no "admitted but Pending". A workload that cannot go is skipped
for this cycle (best-effort FIFO) with the reason recorded, and its queue's next workload is tried.
A queue within its nominal quota that is blocked by what cohort queues borrowed reclaims it first
(evicting borrowers' workloads whole). A single pod that does not fit may preempt through the
profile's PostFilter (with the kubegpu profile: gang-whole, checkpoint-aware); a gang that does not
fit preempts all-or-nothing (``batch.gang_preemption``); the victims leave the cluster and their
queues get the quota back, and the decision reports the GPU-seconds each lost. With
``protect_nominal`` only queues that borrow lose workloads to another queue's preemption (Kueue's
rule against flapping); by default priority alone decides, as in kube-scheduler. With
``preempt=False`` nothing is ever evicted (no reclaim, no preemption).

The simulator keeps one session for a whole replay: ``arrive`` adds a workload, ``finished`` takes a
departed pod's quota back, ``admit`` tries one workload.
Workloads in a queue that no ``GpuQueue`` defines are placed without quota, and say so.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubegpu.batch import gang
from kubegpu.batch.fair_share import ConsumedUsage, History
from kubegpu.batch.gang_preemption import preempt_for_gang
from kubegpu.batch.objects import Cohort, PodGroup, Queue
from kubegpu.batch.quota import QuotaBook
from kubegpu.batch.workloads import Workload, workloads
from kubegpu.model.objects import Pod
from kubegpu.model.podgroup import eviction_cost
from kubegpu.model.quantity import exact_sum, format_milli
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
    pdb_violations: int = 0  # victim units of a gang's preemption that break a PodDisruptionBudget

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload.key, "queue": self.workload.queue, "admitted": self.admitted,
            "reason": self.reason or None, "nodes": self.nodes, "position": self.position,
            "pods": len(self.workload.pods), "minMember": self.workload.min_member,
            "borrowed": {r: format_milli(r.removeprefix("requests."), v) for r, v in self.borrowed.items()},
            "evicted": self.evicted, "gpuSecondsLost": sum(self.evicted.values()),
            "pdbViolations": self.pdb_violations,
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
        preempt: bool = True,
        protect_nominal: bool = False,
        history: History | None = None,
    ) -> None:
        """``history``: decayed usage kept from an earlier session (``ConsumedUsage``), else the queues'
        recorded status seeds it."""
        self.scheduler = scheduler
        self._now = now or datetime.now(UTC)
        self.preempt = preempt
        self.protect_nominal = protect_nominal
        self.all: dict[str, Workload] = {w.key: w for w in workloads(snapshot.pods, groups)}
        self.book = QuotaBook(queues, cohorts).charge_admitted(self.all.values())
        self.book.consumed = ConsumedUsage(queues, cohorts, self.book.usage, self._now, history)
        self.owner = {p.key: w for w in self.all.values() for p in w.pods}
        self.refresh_totals()

    @property
    def now(self) -> datetime:
        """The session's clock: eviction costs are measured and decayed usage is advanced to it (the
        simulator sets it to its simulated time, so nothing here reads the wall clock in a replay)."""
        return self._now

    @now.setter
    def now(self, value: datetime) -> None:
        assert self.book.consumed is not None
        self.book.consumed.advance(value, self.book.usage)  # the usage held since the last tick
        self._now = value

    def refresh_totals(self) -> None:
        """Cluster totals for DRF shares (again after nodes come or go)."""
        cluster = self.scheduler.cluster
        self.totals = {r: exact_sum(cluster.allocatable[:, cluster.col[r]]) for r in cluster.resources}

    def arrive(self, w: Workload) -> None:
        """A workload joins (the simulator's arrivals and requeued victims)."""
        self.all[w.key] = w
        for p in w.pods:
            self.owner[p.key] = w

    def finished(self, pod: Pod) -> None:
        """A running pod left: its queue gets the quota back; a workload with no pods left is forgotten."""
        w = self.owner.pop(pod.key, None)
        if w is None:
            return
        if w.queue in self.book.queues:
            self.book.charge(w.queue, pod.requests, sign=-1)
        if not any(p.key in self.owner for p in w.pods):
            self.all.pop(w.key, None)

    def pending(self) -> dict[str, list[Workload]]:
        by_queue: dict[str, list[Workload]] = {}
        for w in self.all.values():
            if not w.admitted and not any(p.node_name for p in w.pods):
                by_queue.setdefault(w.queue, []).append(w)
        for ws in by_queue.values():
            ws.sort(key=lambda w: (-w.priority, w.created, w.key))
        return by_queue

    def run(self) -> list[Decision]:
        """Decide every pending workload."""
        return list(self.decide())

    def decide(self) -> Iterator[Decision]:
        """The decisions one at a time, each made when the previous one has been taken: a caller that
        stops early (the live scheduler, after a decision that preempts) leaves the rest undecided, with
        nothing charged for them."""
        queues = self.pending()
        position = {w.key: i + 1 for ws in queues.values() for i, w in enumerate(ws)}
        while any(queues.values()):
            name = min(
                (q for q, ws in queues.items() if ws),
                key=lambda q: self.entry_order(queues[q][0], queues[q][0].created),
            )
            w = queues[name].pop(0)
            yield self.admit(w, position[w.key])

    def entry_order(self, head: Workload, created: str | float) -> tuple[bool, float, int, str | float, str]:
        """Where ``head``'s queue ranks among queues when ``head`` (created at ``created``) is its first
        workload: Kueue's entryOrdering under fair sharing (``pkg/scheduler/scheduler.go``): heads within
        their queue's nominal quota before heads that would borrow, then the lower dominant share, then
        the head of higher priority, then the older head (FIFO); the queue name only for exact ties."""
        q = head.queue
        share = self.book.dominant_share(q, self.totals)
        return (self.book.borrows(q, head.requests), share, -head.priority, created, q)

    def admit(self, w: Workload, position: int = 0) -> Decision:
        """Quota (reclaiming borrowed capacity if allowed), then all-or-nothing placement, then
        preemption. Evictions stand only if the workload is then admitted: otherwise the cluster journal
        and the quota book go back as they were (no pod is evicted for a workload that still waits)."""
        cluster = self.scheduler.cluster
        mark = cluster.mark()
        usage = {q: dict(u) for q, u in self.book.usage.items()}
        decision = self._admit(w, position)
        if not decision.admitted and decision.evicted:
            cluster.rollback(mark)
            self.book.usage = usage
            decision.evicted = {}
        return decision

    def _admit(self, w: Workload, position: int) -> Decision:
        managed = w.queue in self.book.queues
        check = self.book.check(w.queue, w.requests) if managed else None
        reclaimed: dict[str, int] = {}
        if check is not None and not check.fits:
            reclaimed = self._reclaim_for(w) if self.preempt else {}
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
        violations = 0
        if not placement.ok and self.preempt:
            if w.gang:
                more, violations = self._preempt_for_gang(w)
            else:
                more = self._preempt_for(w.pods[0])
            evicted.update(more)
            if len(evicted) > len(reclaimed):
                placement = gang.place(self.scheduler, w)
        if not placement.ok:
            reason = placement.explanation if w.gang else placement.failed[0][1]
            return Decision(w, False, reason, position=position, evicted=evicted)
        if managed:
            self.book.charge(w.queue, w.requests)
            assert self.book.consumed is not None
            self.book.consumed.admitted(w.queue, w.requests)
        note = "" if managed else f"queue {w.queue!r} is not defined: no queue quota applies"
        return Decision(
            w, True, note, {p.key: n for p, n, _ in placement.placed}, position,
            dict(check.borrowing or {}) if check is not None else {}, evicted, violations,
        )  # fmt: skip

    def _reclaim_for(self, w: Workload) -> dict[str, int]:
        """Reclaim: a queue below its nominal quota takes back what cohort queues borrowed from it.

        Candidates are admitted workloads of queues using more than their nominal quota in the same
        cohort tree, lowest priority first, then the cheapest to evict (GPU-seconds since checkpoint);
        whole workloads are evicted (a gang whole), and only while the borrower stays at or above its
        nominal quota and the claimant stays within its own."""
        if self.book.borrows(w.queue, w.requests):
            return {}
        managed = self.book.managed(w.queue)
        tree = {q.name for q in self.book.tree(w.queue)} - {w.queue}
        cluster = self.scheduler.cluster
        # cost the pods as they run in the cluster (started, checkpoint annotations), not as they
        # arrived: a workload's own record may predate its start
        candidates = [
            (v, [cluster.pods_on[cluster.placement[p.key]][p.key] for p in v.pods]) for v in self.all.values()
            if v.queue in tree and all(p.key in cluster.placement for p in v.pods)
        ]  # fmt: skip
        candidates.sort(
            key=lambda c: (c[0].priority, sum(eviction_cost(p, self.now) for p in c[1]), c[0].key)
        )
        costs: dict[str, int] = {}
        for victim, running in candidates:
            if self.book.check(w.queue, w.requests).fits:
                break
            borrowed = self.book.borrowed(victim.queue)
            if not any(
                victim.requests.get(r, 0) and borrowed.get(r, 0) >= victim.requests[r] for r in managed
            ):
                continue  # evicting it would push its queue below nominal: not borrowed capacity
            for pod in running:
                cluster.remove_pod(pod)
                costs[pod.key] = eviction_cost(pod, self.now)
            self.book.charge(victim.queue, victim.requests, sign=-1)
        return costs

    def _evict(self, victim: Pod) -> int:
        """Remove a victim from the cluster, give its queue the quota back; returns its GPU-seconds lost."""
        self.scheduler.cluster.remove_pod(victim)
        owner = self.owner.get(victim.key)
        if owner is not None and owner.queue in self.book.queues:
            self.book.charge(owner.queue, victim.requests, sign=-1)
        return eviction_cost(victim, self.now)

    def _protected(self, victim: Pod, claimant: str) -> bool:
        """With ``protect_nominal``, a pod of another queue that is within its nominal quota is not a
        victim (Kueue's rule: only borrowing queues lose workloads to other queues, which keeps
        preemption from flapping); without it, priority alone decides, as in kube-scheduler."""
        if not self.protect_nominal:
            return False
        owner = self.owner.get(victim.key)
        if owner is None or owner.queue == claimant or owner.queue not in self.book.queues:
            return False
        return not self.book.borrowed(owner.queue)

    def _preempt_for_gang(self, w: Workload) -> tuple[dict[str, int], int]:
        """All-or-nothing preemption for a gang: evict the cheapest victims only if all of it then fits;
        returns what each victim cost and how many victim units break a PodDisruptionBudget."""
        found = preempt_for_gang(
            self.scheduler, w, lambda p: eviction_cost(p, self.now), lambda p: self._protected(p, w.queue)
        )
        return {p.key: self._evict(p) for unit in found.victims for p in unit.pods}, found.pdb_violations

    def _preempt_for(self, pod: Pod) -> dict[str, int]:
        """Run the profile's PostFilter (preemption) for ``pod``; evict the victims it names, give their
        quota back, and return what each cost in GPU-seconds."""
        result = self.scheduler.schedule_one(pod, assume=False, preempt=True)
        claimant = self.owner[pod.key].queue if pod.key in self.owner else ""
        if not result.victims or any(self._protected(v, claimant) for v in result.victims):
            return {}
        return {victim.key: self._evict(victim) for victim in result.victims}
