"""Replay mode: pods arrive, queue, run and leave in simulated time, through the one scheduling core.

Discrete events in time order — at equal times: departures and deletions of terminated pods, node
events, arrivals, give-ups — then
the scheduling queue's periodic flushes, then the scheduler drains activeQ (cycles take no simulated
time). Two ways to take work from the queue, over the same ``SchedulingQueue`` (kube-scheduler's
activeQ / backoffQ / unschedulablePods, ``sim.schedqueue``):

- ``kube``: every pod is its own entry, popped in PrioritySort order and given one cycle
  (``Scheduler.schedule_one``), preempting through the profile's PostFilter when ``preempt`` is on;
- ``batch``: entries are workloads (a pod, or a gang), one queue per team; the next queue is the one
  with the lowest weighted dominant share, and an attempt is one admission by ``batch.BatchSession``
  (quota with cohort borrowing, all-or-nothing gang placement, and with ``preempt`` reclaim,
  checkpoint-aware preemption and gang preemption).

A failed attempt waits in unschedulablePods; a pod deletion (departure, eviction), a node added or a
node uncordoned moves every waiting entry back (to backoffQ while its backoff lasts). An evicted pod
does no more useful work from the eviction: it restarts from its last checkpoint, losing the GPU-time
since it (``model.podgroup.eviction_cost``), and that work is added back to what it still has to run.
Its controller recreates it when it is deleted.

Termination (``kube`` mode): a preemption victim gets ``metadata.deletionTimestamp`` and keeps its node's
resources (GPU devices included) for its ``spec.terminationGracePeriodSeconds`` (API default 30 s); it is
deleted after that, which is a pod-deletion move event. The preemptor is not retried on the spot: it
fails its cycle nominated to the node (``status.nominatedNodeName``), so pods of its priority or lower
leave that room to it (the core's two-pass nominated-pods filter), and while a lower-priority victim
still terminates there it may not preempt again (DefaultPreemption's ``PodEligibleToPreemptOthers``). Its
pending time therefore includes the victims' grace period. A victim chosen again while terminating is
not evicted twice (upstream skips the deletion of a pod already being deleted). Pods of a removed node
go with the node at once (nothing is left to hold), and so does a pod terminating there.

In ``batch`` mode ``batch.BatchSession`` evicts (reclaim, checkpoint-aware and gang preemption) and
admits the workload into the room in one step, as a Kueue-style admission reserves it: the victims
terminate for their grace period (their GPUs still count as allocated, their replacements come at their
deletion), and the admitted pods, placed at once so nothing else takes the room, start together when
the last pod terminating on their nodes is deleted; their pending time runs to that start.

DRA claims are released as the resourceclaim controller releases them when a pod completes or is deleted
(``sim.claim_controller``). A pod still pending at its deadline is given up (deleted) and counted.
Pending time is measured from arrival to first start. Deterministic for a seed: the only randomness is the scheduler's tie-break RNG.
"""

import heapq
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import numpy as np

from kubegpu.batch.objects import QUEUE_LABEL
from kubegpu.batch.session import BatchSession
from kubegpu.batch.workloads import Workload
from kubegpu.errors import ConfigError
from kubegpu.model.objects import Node, Pod
from kubegpu.model.podgroup import gpu_milli_of, group_key, rfc3339, seconds_at_risk
from kubegpu.model.quantity import exact_sum
from kubegpu.model.resources import NVIDIA_GPU
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.gpu_shapes import MILLI
from kubegpu.sim.claim_controller import ClaimController
from kubegpu.sim.replay_inputs import (
    EPOCH,
    NODE_ACTIONS,
    BatchSetup,
    NodeEvent,
    SchedulerFactory,
    SimPod,
    pod_class,
    preemption_plugin,
)
from kubegpu.sim.replay_report import ReplayReport, Sample, _thin, write_series
from kubegpu.sim.schedqueue import SchedulingQueue

__all__ = [
    "EPOCH", "NODE_ACTIONS", "BatchSetup", "NodeEvent", "Replay", "ReplayReport", "Sample",
    "SchedulerFactory", "SimPod", "pod_class", "preemption_plugin", "write_series",
]  # fmt: skip

# GONE: a terminating pod's grace period is over; START: a batch admission's pods may start
DEPART, GONE, START, NODE, ARRIVE, GIVE_UP = 0, 1, 2, 3, 4, 5


@dataclass
class _Run:
    pod: Pod
    start: float
    token: int
    node: str  # where it runs (node names survive a cluster rebuild, rows do not)
    end: float = math.inf  # terminating: when its grace period is over


class Replay:
    """One replay. ``run()`` returns the report; the object is spent afterwards."""

    def __init__(
        self,
        nodes: Sequence[Node],
        pods: Sequence[SimPod],
        make_scheduler: SchedulerFactory,
        *,
        mode: str = "kube",
        preempt: bool = False,
        batch: BatchSetup | None = None,
        node_events: Sequence[NodeEvent] = (),
        seed: int = 0,
        label: str = "",
        series_points: int = 240,
        arrival_window: bool = False,
        bound: Sequence[Pod] = (),
        epoch: datetime = EPOCH,
    ) -> None:
        """``arrival_window``: time-weighted figures cover first to last arrival only (not the drain
        after it, which for a trace with months-long pods would dilute them); else the whole run."""
        if mode not in ("kube", "batch"):
            raise ConfigError(f"replay mode must be 'kube' or 'batch', not {mode!r}")
        if mode == "batch" and batch is None:
            raise ConfigError("replay mode 'batch' needs queues (BatchSetup)")
        keys = [p.pod.key for p in pods]
        if len(set(keys)) != len(keys):
            raise ConfigError("replay: pod names must be unique")
        self.mode, self.preempt, self.seed = mode, preempt, seed
        self.make_scheduler = make_scheduler
        self.nodes = list(nodes)
        self.sims: dict[str, SimPod] = {p.pod.key: p for p in pods}
        self.arrival: dict[str, float] = {p.pod.key: p.arrival for p in pods}
        self.followers: dict[str, list[str]] = {}
        for p in pods:
            if p.after is not None:
                if p.after not in self.sims:
                    raise ConfigError(f"replay: {p.pod.key} follows {p.after}, which is not in the workload")
                self.followers.setdefault(p.after, []).append(p.pod.key)
        self.series_points = series_points
        self.arrival_window = arrival_window
        self.epoch = epoch  # simulated time 0 (a snapshot's "now", so its pods' start times count)
        self.report = ReplayReport(label=label, pods=len(pods))
        self._rebuilds = 0
        self.scheduler, self.ledger = make_scheduler(self.nodes, seed)
        self.claims = ClaimController()  # DRA claims released when their pods are done
        self.claims.attach(self.scheduler)
        self.queue = SchedulingQueue(order_by_creation=mode == "batch")
        self.events: list[tuple[float, int, int, object]] = []
        self._seq = 0
        self.work: dict[str, float] = {p.pod.key: float(p.duration) for p in pods}  # seconds still to run
        self.running: dict[str, _Run] = {}
        self.terminating: dict[str, _Run] = {}  # evicted, deletionTimestamp set, resources still held
        self.binding: dict[str, _Run] = {}  # batch: admitted and placed, waiting for victims to terminate
        self.started: set[str] = set()
        self.allocated = 0
        # the cluster's real changes (starts, departures, evictions, node events) — not the clock, which
        # dry runs and rolled-back admissions also move
        self.version = 0
        self.failed_at: dict[Hashable, int] = {}  # equivalence key → version at a failed attempt
        # entries: a pod key (kube) or a workload key (batch) → its workload
        self.units: dict[str, Workload] = {}
        self.session: BatchSession | None = None
        if mode == "batch":
            assert batch is not None
            # a snapshot's running pods are admitted workloads: their queues are charged for them
            self.session = BatchSession(
                self.scheduler,
                ClusterSnapshot(pods=list(bound)),
                batch.queues,
                batch.cohorts,
                batch.groups,
                now=epoch,
                preempt=preempt,
                protect_nominal=batch.protect_nominal,
            )
        self.batch = batch
        for p in pods:
            if p.after is None:
                self._push(p.arrival, ARRIVE, p.pod.key)
        for ev in node_events:
            self._push(ev.time, NODE, ev)
        for pod in bound:
            self._bind(pod)

    def _bind(self, pod: Pod) -> None:
        """A pod already running on its node when the replay starts (a snapshot's): it stays to the end."""
        cluster = self.scheduler.cluster
        idx = cluster.index.get(pod.node_name)
        if idx is None:
            raise ConfigError(f"replay: {pod.key} is bound to {pod.node_name}, which is not in the cluster")
        cluster.add_pod(pod, idx)
        cluster.journal.clear()
        key = pod.key
        # if evicted (preemption, node removal), its controller recreates it unbound
        self.sims[key] = SimPod(replace(pod, node_name=""), 0.0, math.inf)
        self.arrival[key], self.work[key] = 0.0, math.inf
        self.started.add(key)
        self.running[key] = _Run(pod, 0.0, 0, pod.node_name)
        self.allocated += gpu_milli_of(pod)

    # ---- events -------------------------------------------------------------------------------------

    def _push(self, t: float, kind: int, payload: object) -> None:
        self._seq += 1
        heapq.heappush(self.events, (t, kind, self._seq, payload))

    def _workload_of(self, key: str) -> tuple[str, Workload | None]:
        """Arrivals become queue entries: a pod alone, or (batch mode) its gang once it has minMember pods."""
        pod = self.sims[key].pod
        if self.mode == "kube":
            return key, Workload(key, "", (pod,))
        assert self.batch is not None
        gang = group_key(pod)
        queue = self.batch.queue_of(pod)
        if gang is None:
            return key, Workload(key, queue, (pod,))
        earlier = self.units.get(gang)
        if earlier is not None and any(p.key in self.started for p in earlier.pods):
            return pod.key, Workload(pod.key, queue, (pod,))  # a member arriving after its gang started
        members = (*(earlier.pods if earlier else ()), pod)
        group = self.batch.groups.get(gang)
        return gang, Workload(gang, queue, members, group.min_member if group else 1, True)

    def _arrive(self, key: str, t: float) -> None:
        entry, w = self._workload_of(key)
        assert w is not None
        self.units[entry] = w
        if self.session is not None:
            self.session.arrive(w)
        sim = self.sims[key]
        if sim.deadline is not None and sim.deadline > t:
            self._push(sim.deadline, GIVE_UP, key)
        if entry in self.queue:
            return  # another member of a gang already waiting
        if len(w.pods) >= w.min_member:
            self.queue.add(entry, w.queue, w.priority, t)

    def _give_up(self, key: str) -> None:
        if key in self.started or key in self.binding:
            return
        entry = group_key(self.sims[key].pod) if self.mode == "batch" else None
        entry = entry or key
        w = self.units.get(entry)
        if w is None or any(p.key in self.started or p.key in self.binding for p in w.pods):
            return
        if self.batch is not None:
            self.report.given_up_by_queue[w.queue] = self.report.given_up_by_queue.get(w.queue, 0) + 1
        for p in w.pods:
            self.report.given_up += 1
            kind = pod_class(p)
            self.report.given_up_by_class[kind] = self.report.given_up_by_class.get(kind, 0) + 1
        self.queue.remove(entry)
        self.units.pop(entry, None)
        if self.session is not None:
            self.session.all.pop(entry, None)

    def _depart(self, key: str, token: int, t: float) -> None:
        run = self.running.get(key)
        if run is None or run.token != token:
            return  # evicted meanwhile: this departure belongs to an earlier run
        del self.running[key]
        self.version += 1
        self.scheduler.cluster.remove_pod(run.pod)
        self.claims.pod_done(run.pod)
        self.allocated -= gpu_milli_of(run.pod)
        if self.session is not None:
            self.session.finished(run.pod)
        self.queue.move_all(t)
        for follower in self.followers.get(key, ()):
            self.arrival[follower] = t
            self._push(t, ARRIVE, follower)

    def _node_event(self, ev: NodeEvent, t: float) -> None:
        self.version += 1
        cluster = self.scheduler.cluster
        idx = cluster.index.get(ev.node)
        if ev.action in ("cordon", "uncordon"):
            if idx is None:
                raise ConfigError(f"node event at {t:g} s: {ev.action} {ev.node}: no such node")
            cluster.set_unschedulable(idx, ev.action == "cordon")
            if ev.action == "uncordon":
                self.queue.move_all(t)
            return
        if ev.action == "add":
            assert ev.spec is not None
            if idx is not None:
                raise ConfigError(f"node event at {t:g} s: add {ev.node}: the node exists already")
            self._rebuild([*cluster.nodes, ev.spec])
            self.queue.move_all(t)
            return
        if idx is None:
            raise ConfigError(f"node event at {t:g} s: remove {ev.node}: no such node")
        lost = 0
        gone = [k for k, run in self.terminating.items() if run.node == ev.node]
        for key in gone:
            self._deleted(self.terminating.pop(key).pod, t)  # already evicted: it goes with the node
        for pod in list(cluster.pods_on[idx].values()):
            if pod.key in gone:
                continue
            if pod.key in self.binding:  # admitted, not started: deleted and recreated, nothing lost
                self.claims.pod_done(pod)
                self._requeue(self.binding.pop(pod.key).pod, t)
                continue
            lost += self._evicted(pod.key, t, grace=False)
            self.report.node_removal_evictions += 1
        self.report.node_removal_gpu_seconds_lost += lost
        self._rebuild([n for n in cluster.nodes if n.name != ev.node])
        self.queue.move_all(t)

    def _rebuild(self, nodes: list[Node]) -> None:
        """A new cluster state over ``nodes`` holding the running pods where they run (node rows are fixed
        in ``ClusterState``, so adding or removing a node rebuilds it)."""
        old, old_ledger = self.scheduler.cluster, self.ledger
        self._rebuilds += 1
        self.scheduler, self.ledger = self.make_scheduler(nodes, self.seed + self._rebuilds)
        self.claims.attach(self.scheduler)
        cluster = self.scheduler.cluster
        # batch victims were taken off the cluster state by the session already: they stay off
        still_placed = [r for r in self.terminating.values() if r.pod.key in old.placement]
        for run in (*self.running.values(), *self.binding.values(), *still_placed):
            idx = cluster.index[run.node]
            held = old_ledger.held.get(run.pod.key) if old_ledger is not None else None
            if self.ledger is not None and held is not None:
                _, gpus, milli = held
                self.ledger.assign(run.pod, idx, gpus, milli)
            cluster.add_pod(run.pod, idx, old.devices.assignments.get(run.pod.key))
        # preemptors keep their nominations to the nodes that remain
        for key, row in old.nominated_to.items():
            name = old.nodes[row].name
            if name in cluster.index:
                cluster.nominate(old.nominated[row][key], name)
        cluster.journal.clear()
        self.failed_at.clear()
        if self.session is not None:
            self.session.scheduler = self.scheduler
            self.session.refresh_totals()

    def at(self, t: float) -> datetime:
        return self.epoch + timedelta(seconds=t)

    def stamp(self, t: float) -> str:
        """Simulated time ``t`` as an API timestamp (``startTime``, ``deletionTimestamp``)."""
        return rfc3339(self.at(t))

    # ---- starting and evicting ----------------------------------------------------------------------

    def _start(self, pod: Pod, t: float) -> None:
        key = pod.key
        self._seq += 1
        self.version += 1
        cluster = self.scheduler.cluster
        self.running[key] = _Run(pod, t, self._seq, cluster.nodes[cluster.placement[key]].name)
        self.claims.pod_bound(pod)
        if math.isfinite(self.work[key]):
            self._push(t + self.work[key], DEPART, (key, self._seq))
        self.allocated += gpu_milli_of(pod)
        if key not in self.started:
            self.started.add(key)
            wait = t - self.arrival[key]
            self.report.placed += 1
            self.report.waits.append(wait)
            queue = self.batch.queue_of(pod) if self.batch is not None else pod.labels.get(QUEUE_LABEL, "")
            self.report.waits_by_queue.setdefault(queue, []).append(wait)
            if wait > 0:
                self.report.delayed += 1

    def _evicted(self, key: str, t: float, *, grace: bool = True) -> int:
        """A running pod is evicted at ``t``: it goes back to its last checkpoint. With ``grace`` it
        terminates, its GPUs still held, and is deleted and recreated after its grace period; else (its
        node went) at once. A pod still on the cluster state stays there, terminating, until its deletion
        (the batch session takes its victims off at once). Returns the GPU-seconds lost."""
        run = self.running.pop(key)
        self.version += 1
        lost_s = seconds_at_risk(run.pod, self.at(t))
        self.work[key] -= (t - run.start) - lost_s  # the checkpointed part is kept
        if not grace:
            self._deleted(run.pod, t)
            return gpu_milli_of(run.pod) * lost_s // MILLI
        run.pod = replace(run.pod, deletion_timestamp=self.stamp(t))
        if key in self.scheduler.cluster.placement:
            self.scheduler.cluster.update_pod(run.pod)
        run.end = t + run.pod.termination_grace_period_seconds
        self.terminating[key] = run
        # pushed even for a zero grace period: the deletion then comes after the preemptor's cycle has
        # ended, so it moves the preemptor like any deletion during a cycle (to backoffQ)
        self._push(run.end, GONE, (key, run.token))
        return gpu_milli_of(run.pod) * lost_s // MILLI

    def _gone(self, key: str, token: int, t: float) -> None:
        """A terminating pod's grace period is over: it is deleted, its resources are freed and its
        controller recreates it."""
        run = self.terminating.get(key)
        if run is None or run.token != token:
            return  # went with its node meanwhile
        del self.terminating[key]
        self.version += 1
        if key in self.scheduler.cluster.placement:  # a batch victim left the cluster state at eviction
            self.scheduler.cluster.remove_pod(run.pod)
        self._deleted(run.pod, t)
        self.queue.move_all(t)

    def _deleted(self, pod: Pod, t: float) -> None:
        """An evicted pod is gone from the cluster: its GPUs and DRA claims are freed, its replacement queued."""
        self.claims.pod_done(pod)
        self.allocated -= gpu_milli_of(pod)
        self._requeue(pod, t)

    def _requeue(self, pod: Pod, t: float) -> None:
        template = self.sims[pod.key].pod
        if self.mode == "kube":
            self.units[pod.key] = Workload(pod.key, "", (template,))
            self.queue.add(pod.key, "", template.priority, t)
            return
        assert self.session is not None and self.batch is not None
        entry = group_key(template) or pod.key
        queue = self.batch.queue_of(template)
        earlier = self.units.get(entry)
        if earlier is not None and entry in self.queue:
            members = (*earlier.pods, template)
            w = Workload(entry, queue, members, len(members), earlier.gang)
        else:
            w = Workload(entry, queue, (template,), 1, group_key(template) is not None)
        self.units[entry] = w
        self.session.arrive(w)
        if entry not in self.queue:  # Kueue requeues an evicted workload at its creation time, not now
            self.queue.add(entry, queue, w.priority, t, self._created(w))

    # ---- attempts -----------------------------------------------------------------------------------

    def _memo_key(self, w: Workload) -> Hashable | None:
        """Attempts that cannot differ: same queue, pod signatures, priority and minMember against the
        same cluster version. (With preemption this assumes a failure does not hinge on the victims'
        costs at that moment — costs only rank victims — except that reclaim's cost order decides which
        borrowers go first; a retry at a later time is then skipped, not re-ranked.)"""
        sigs = tuple(self.scheduler.framework.signature(p) for p in w.pods)
        if any(s is None for s in sigs):
            return None
        # a nominated pod filters and preempts differently from a twin without the nomination
        nominations = tuple(self.scheduler.cluster.nominated_to.get(p.key) for p in w.pods)
        return (w.queue, sigs, w.priority, w.min_member, nominations)

    def _attempt(self, entry: str, t: float) -> bool:
        w = self.units[entry]
        self.report.attempts += 1
        key = self._memo_key(w)
        if key is not None and self.failed_at.get(key) == self.version:
            return False  # same pods, same cluster (and quota usage): the same failure
        started = tuple(replace(p, start_time=self.stamp(t)) for p in w.pods)
        ok = self._attempt_kube(started[0], t) if self.mode == "kube" else self._attempt_batch(w, started, t)
        if not ok and key is not None:
            self.failed_at[key] = self.version
        return ok

    def _attempt_kube(self, pod: Pod, t: float) -> bool:
        """One cycle. A preemption fails the cycle: the victims start terminating and the pod waits,
        nominated to their node, for their deletion to move it back to the queue."""
        result = self.scheduler.schedule_one(pod, preempt=self.preempt)
        for victim in result.victims:
            if victim.key in self.terminating:
                continue  # already being deleted: no second deletion, no second loss
            self.report.gpu_seconds_lost += self._evicted(victim.key, t)
            self.report.evictions += 1
        if result.scheduled:
            self._start(pod, t)
        return result.scheduled

    def _attempt_batch(self, w: Workload, pods: tuple[Pod, ...], t: float) -> bool:
        assert self.session is not None and self.batch is not None
        r = self.report
        decision = self.session.admit(replace(w, pods=pods))
        for victim_key in decision.evicted:
            if victim_key in self.binding:  # admitted, not started yet: recreated, nothing lost
                self._requeue(self.binding.pop(victim_key).pod, t)
                lost = 0
            else:
                lost = self._evicted(victim_key, t)
            r.gpu_seconds_lost += lost
            r.evictions += 1
            queue = self.batch.queue_of(self.sims[victim_key].pod)
            r.evictions_by_queue[queue] = r.evictions_by_queue.get(queue, 0) + 1
            r.gpu_seconds_lost_by_queue[queue] = r.gpu_seconds_lost_by_queue.get(queue, 0) + lost
        if decision.evicted:
            self.queue.move_all(t)
        if decision.admitted:
            r.admitted_by_queue[w.queue] = r.admitted_by_queue.get(w.queue, 0) + 1
            # the session placed the workload in room that victims on those nodes still hold: it starts
            # (a gang whole) once the last of them is deleted
            nodes = set(decision.nodes.values())
            ready = max((v.end for v in self.terminating.values() if v.node in nodes), default=t)
            for p in pods:
                if p.key not in decision.nodes:  # a gang admitted with minMember placed: this one waits
                    self._late_member(p, t)
                elif ready > t:
                    self._seq += 1
                    self.binding[p.key] = _Run(p, ready, self._seq, decision.nodes[p.key])
                    self._push(ready, START, (p.key, self._seq))
                else:
                    self._start(p, t)
        return decision.admitted

    def _late_member(self, pod: Pod, t: float) -> None:
        """A member left out when its gang was admitted with ``minMember`` placed: its quota charge goes
        back and it waits as a pod of a started gang does (``_workload_of``), on its own."""
        assert self.session is not None and self.batch is not None
        self.session.finished(pod)
        template = self.sims[pod.key].pod
        w = self.units[pod.key] = Workload(pod.key, self.batch.queue_of(template), (template,))
        self.session.arrive(w)
        self.queue.add(pod.key, w.queue, w.priority, t, self._created(w))

    def _created(self, w: Workload) -> float:
        """When ``w`` was created: its first pod's arrival (a requeue keeps it, as Kueue's queue order)."""
        return min(self.arrival[p.key] for p in w.pods)

    def _bound(self, key: str, token: int, t: float) -> None:
        """A batch admission's pod whose node's victims are gone starts."""
        run = self.binding.get(key)
        if run is None or run.token != token:
            return  # evicted or its node removed meanwhile
        del self.binding[key]
        pod = replace(run.pod, start_time=self.stamp(t))  # eviction costs count from the real start
        self.scheduler.cluster.update_pod(pod)
        self._start(pod, t)

    def _choose(self, names: list[str]) -> str:
        """Batch mode: the queue whose head the session's (Kueue's) entry order ranks first goes next."""
        session = self.session
        assert session is not None
        heads = {q: self.queue.head(q) for q in names}
        return min(names, key=lambda q: session.entry_order(self.units[heads[q].key], heads[q].created))

    def _set_now(self, t: float) -> None:
        now = self.at(t)
        self.scheduler.framework.handle.clock = lambda: now  # plugins that price time see simulated time
        if self.session is not None:
            self.session.now = now

    # ---- the loop -----------------------------------------------------------------------------------

    def _capacity(self) -> int:
        cluster = self.scheduler.cluster
        col = cluster.col.get(NVIDIA_GPU)
        return exact_sum(cluster.allocatable[:, col]) if col is not None else 0

    def run(self) -> ReplayReport:
        r = self.report
        r.capacity_milli = self._capacity()
        choose = self._choose if self.mode == "batch" else None
        start = min((e[0] for e in self.events), default=0.0)
        window_end = math.inf
        if self.arrival_window:
            window_end = max((e[0] for e in self.events if e[1] == ARRIVE), default=start)
        last = start
        samples: list[Sample] = []
        rows = None
        if self.ledger is not None and self.ledger.typical is not None:
            r.frag_area = 0.0
        while True:
            # with no event left the cluster never changes again: only pods already moved to backoffQ
            # (by the last change) still deserve their attempt
            flush = self.queue.next_flush() if len(self.queue) else None
            if self.events:
                t = self.events[0][0] if flush is None else min(self.events[0][0], flush)
            elif flush is not None and self.queue.counts["backoff"]:
                t = flush
            else:
                break
            span = min(t, window_end) - min(last, window_end)
            if span > 0:
                r.allocated_area += span * self.allocated
                r.pending_area += span * len(self.queue)
                if r.frag_area is not None and self.ledger is not None:
                    rows = np.arange(len(self.scheduler.cluster), dtype=np.intp)
                    r.frag_area += span * float(self.ledger.node_frag(rows).sum())
            last = t
            self._set_now(t)
            while self.events and self.events[0][0] == t:
                _, kind, _, payload = heapq.heappop(self.events)
                if kind in (DEPART, GONE, START):  # (pod key, run token)
                    assert isinstance(payload, tuple)
                    on = self._depart if kind == DEPART else self._gone if kind == GONE else self._bound
                    on(str(payload[0]), int(payload[1]), t)
                elif kind == NODE:
                    assert isinstance(payload, NodeEvent)
                    self._node_event(payload, t)
                    r.capacity_milli = max(r.capacity_milli, self._capacity())
                elif kind == ARRIVE:
                    self._arrive(str(payload), t)
                else:
                    self._give_up(str(payload))
            self.queue.flush(t)
            while (e := self.queue.pop(choose)) is not None:
                self.queue.done(e, t, self._attempt(e.key, t))
            c = self.queue.counts
            r.max_pending = max(r.max_pending, len(self.queue))
            samples.append(Sample(t, c["active"], c["backoff"], c["unschedulable"], self.allocated))
        r.horizon_s = min(window_end, last) - start
        waiting = [self.units[e.key] for e in self.queue.waiting() if e.key in self.units]
        r.still_pending = sum(len(w.pods) for w in waiting)
        if self.batch is not None:
            for w in waiting:
                r.waiting_by_queue[w.queue] = r.waiting_by_queue.get(w.queue, 0) + 1
            seen = {self.batch.queue_of(s.pod) for s in self.sims.values()}
            r.queues = sorted(set(self.batch.queues) | seen)
        r.series = _thin(samples, self.series_points)
        return r
