"""Queue and gang admission for the live scheduler (issue 6 through issue 9; R8, R9.1, R14.2).

A pod of this scheduler that names a queue (label ``kubegpu.io/queue``) or belongs to a pod group
(``model.podgroup.group_key``: Volcano's annotation, coscheduling's label, ``kubegpu.io/pod-group``) is
not scheduled on its own: it waits here, and each admission cycle hands every waiting workload to one
``batch.session.BatchSession`` over the live cluster state. The session's rules are the batch layer's,
unchanged: queues in DRF order, each queue's quota with cohort borrowing, then all-or-nothing
placement through the scheduling core (``batch.gang.place``). This module only feeds the session from
the informers' objects and turns its decisions into work for the scheduler:

* an admitted workload → its members' placements (node, device IDs), all decided in this one cycle and
  still assumed in the state; the scheduler issues their bindings only then, one member after another;
* a workload that waits → per pod, the session's reason prefixed with the queue position
  (``queue <q>, position <i> of <n>: <reason>``): the quota shortfall, the gang's explanation (how many
  members fit, where, and the core's message for the first that did not), or the core's FitError;
  a gang with fewer members than ``minMember`` also says when a namespace ResourceQuota is what keeps
  the missing ones from being created.

Members already bound count toward their gang, as in Volcano (bound tasks are "ready" for the gang
plugin) and coscheduling (assigned pods count toward ``minMember`` at Permit): a gang whose binding
broke off part-way retries only its unbound members, needing ``minMember`` minus the bound ones.

Preemption and reclaim are the session's too (gang-whole, cheapest GPU-seconds first; reclaim of what
cohort queues borrowed). The session decides them on the state's journal; live, at most one workload per
cycle preempts: the decisions before it stand, the first one that evicts becomes a ``Preempting`` (its
victims to evict through the Eviction API, its members to nominate to the nodes it was placed on), and
the workloads after it are left undecided until the next cycle (they would be decided on a state that no
longer holds the victims). Its entry penalty for fair sharing is withdrawn: it is charged once, in the
cycle that admits it into the room its victims left, as Kueue charges at admission. Until its victims
are gone the workload is not tried again (so nothing is evicted twice);
then it is placed into the room its nominations keep. As kube-scheduler's ``PodEligibleToPreemptOthers``,
a workload whose members are nominated to a node where a lower-priority pod is terminating waits too:
that keeps a restarted scheduler (which lost the in-memory list of victims) from preempting again while
the victims of the previous one shut down. (With a checkpoint deadline the scheduler evicts them through
``live.checkpoint``'s handshake; ``evicting`` holds the workload back all the same.)

Decayed queue usage (``batch.fair_share``) is handed from one cycle's session to the next and sampled
for the GpuQueue status (``live.fair_usage``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubegpu.batch.objects import QUEUE_LABEL, Cohort, PodGroup, Queue, parse_batch_objects
from kubegpu.batch.session import BatchSession
from kubegpu.batch.workloads import Workload, workloads
from kubegpu.errors import InputError
from kubegpu.kube.informer import SYNC
from kubegpu.kube.live import listed_path
from kubegpu.live.fair_usage import UsageHistory, status_patch
from kubegpu.model.objects import Pod, PodKey, ResourceQuota
from kubegpu.model.parse_policy import parse_resource_quota
from kubegpu.model.podgroup import group_key
from kubegpu.model.quantity import format_milli
from kubegpu.model.resources import is_gpu
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.device_ledger import Assignment
from kubegpu.scheduler.schedule_one import Scheduler

log = logging.getLogger(__name__)

RESOURCE_QUOTAS = listed_path("ResourceQuota")  # the collection path the ResourceQuota informer lists


@dataclass(frozen=True)
class Admitted:
    """A workload the session admitted: every member's node and device IDs, assumed in the state."""

    workload: str
    members: tuple[tuple[Pod, str, Assignment | None], ...]


@dataclass(frozen=True)
class Waiting:
    pod: Pod
    message: str


@dataclass(frozen=True)
class Preempting:
    """A workload admitted only by evicting ``victims`` (pod key → GPU-seconds lost): evict them, nominate
    the members to their nodes, and try it again once the victims are gone."""

    workload: str
    queue: str
    members: tuple[tuple[Pod, str], ...]
    victims: dict[str, int]


@dataclass
class Cycle:
    """One admission cycle's outcome."""

    admitted: list[Admitted] = field(default_factory=list)
    waiting: list[Waiting] = field(default_factory=list)
    preempting: Preempting | None = None


def is_batch_pod(pod: Pod) -> bool:
    """Admitted through the queues: it names a queue or belongs to a pod group."""
    return QUEUE_LABEL in pod.labels or group_key(pod) is not None


class BatchAdmission:
    """The batch objects the informers deliver, and one admission cycle over the waiting pods."""

    def __init__(self) -> None:
        self.raw: dict[str, dict[str, dict[str, Any]]] = {}  # collection path → ns/name → object
        self.quotas: dict[str, ResourceQuota] = {}  # namespace/name → ResourceQuota
        self.queues: dict[str, Queue] = {}
        self.cohorts: dict[str, Cohort] = {}
        self.groups: dict[str, PodGroup] = {}
        self.evicting: dict[str, set[str]] = {}  # workload key → its victims, until they are gone
        self.usage = UsageHistory()  # decayed queue usage carried from one cycle to the next
        self._stale = False  # objects changed since they were last parsed

    def apply(self, path: str, event_type: str, items: list[dict[str, Any]]) -> None:
        """One informer event for the collection at ``path`` (``SYNC``: the full list replacing it). The
        objects are parsed at the next cycle, once however many events came (PodGroup controllers
        update their status often)."""
        store = self.raw.setdefault(path, {})
        if event_type == SYNC:
            store.clear()
        for raw in items:
            metadata = raw.get("metadata")
            meta = metadata if isinstance(metadata, dict) else {}
            key = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
            if event_type == "DELETED":
                store.pop(key, None)
            else:
                store[key] = raw
        self._stale = True

    def _parse(self) -> None:
        """Queues, cohorts, pod groups and ResourceQuotas from the stored objects; bad ones are logged
        (naming the object and field) and left out."""
        self._stale = False
        self.quotas = {}
        for key, raw in self.raw.get(RESOURCE_QUOTAS, {}).items():
            try:
                self.quotas[key] = parse_resource_quota(raw, "watch")
            except InputError as exc:
                log.warning("ignoring ResourceQuota: %s", exc)
        objects: list[tuple[str, Mapping[str, Any]]] = [
            ("watch " + path, raw)
            for path, store in sorted(self.raw.items())
            if path != RESOURCE_QUOTAS
            for raw in store.values()
        ]
        self.queues, self.cohorts, self.groups, errors = parse_batch_objects(objects)
        for error in errors:
            log.warning("ignoring %s", error)

    def cycle(
        self,
        scheduler: Scheduler,
        pods: Mapping[PodKey, Pod],
        waiting: list[Pod],
        assumed: Mapping[PodKey, tuple[Pod, str]],
        now: datetime,
    ) -> Cycle:
        """Admit what the session admits among ``waiting`` (pending batch pods of this scheduler).

        ``pods`` are every pod the informer holds and ``assumed`` the ones bound by this scheduler that
        the watch has not shown yet: together they are what the queues already use."""
        running = self.running(pods, assumed)
        snapshot = ClusterSnapshot(pods=running)
        session = BatchSession(
            scheduler, snapshot, self.queues, self.cohorts, self.groups, now, history=self.usage.kept
        )
        bound = Counter(group_key(p) for p in running)
        out = Cycle()
        self._arrive(session, workloads(waiting, self.groups), pods, bound, out)
        pending = {q: len(ws) for q, ws in session.pending().items()}
        devices = scheduler.cluster.devices.assignments
        assert session.book.consumed is not None
        for decision in session.decide():
            w = decision.workload
            placed = [p for p in w.pods if p.key in decision.nodes]
            if decision.admitted and decision.evicted:
                nodes = tuple((p, decision.nodes[p.key]) for p in placed)
                out.preempting = Preempting(w.key, w.queue, nodes, decision.evicted)
                self.evicting[w.key] = set(decision.evicted)
                # admitted only once its victims are gone, in a later cycle that charges the entry penalty
                session.book.consumed.admitted(w.queue, w.requests, sign=-1)
                break  # the later ones would count on the victims' room: left undecided, tried next cycle
            if decision.admitted:
                out.admitted.append(
                    Admitted(w.key, tuple((p, decision.nodes[p.key], devices.get(p.key)) for p in placed))
                )
                reason = (
                    f"{w.key}: placed {len(placed)} of {len(w.pods)} members; this one did not fit with them"
                )
                out.waiting += [Waiting(p, reason) for p in w.pods if p.key not in decision.nodes]
                continue
            message = (
                f"queue {w.queue}, position {decision.position} of {pending[w.queue]}: {decision.reason}"
            )
            notes = self._quota_blocks_members(w, bound[w.key])
            if w.gang and bound[w.key]:
                notes.append(f"{bound[w.key]} of its members are bound already and count toward minMember")
            for note in notes:  # a new sentence after a FitError's closing period, else a clause
                message += f" {note[0].upper()}{note[1:]}." if message.endswith(".") else f"; {note}"
            out.waiting += [Waiting(p, message) for p in w.pods]
        self.usage.keep(session.book.consumed)  # with the entry penalties of what it admitted
        return out

    def running(self, pods: Mapping[PodKey, Pod], assumed: Mapping[PodKey, tuple[Pod, str]]) -> list[Pod]:
        """The batch pods holding quota: bound (or assumed by this scheduler) and not finished; the stored
        batch objects parsed first when they changed."""
        if self._stale:
            self._parse()
        running = [p for p in pods.values() if p.node_name and not p.is_terminal and is_batch_pod(p)]
        return running + [dataclasses.replace(p, node_name=n) for p, n in assumed.values() if is_batch_pod(p)]

    def usage_to_record(
        self, pods: Mapping[PodKey, Pod], assumed: Mapping[PodKey, tuple[Pod, str]], now: datetime
    ) -> list[tuple[str, dict[str, Any]]]:
        """(queue, status merge patch) for each decayed queue due a sample (``live.fair_usage``)."""
        if self._stale:
            self._parse()
        due = self.usage.due(self.queues, self.cohorts, now)
        if not due:
            return []  # the common case, every loop: no pass over the pods
        usage = self.usage.sample(self.queues, self.cohorts, self.groups, self.running(pods, assumed), now)
        return [(name, status_patch(usage.consumed[name], usage.updated[name])) for name in due]

    def _arrive(
        self,
        session: BatchSession,
        pending: list[Workload],
        pods: Mapping[PodKey, Pod],
        bound: Counter[str | None],
        out: Cycle,
    ) -> None:
        """Hand the session the workloads it may try now: not those whose victims are still leaving (the
        ones this scheduler evicted, or lower-priority pods terminating on their members' nominated
        nodes); the rest of a partly bound gang needs ``minMember`` minus its bound members."""
        terminating: dict[str, list[Pod]] = {}
        for p in pods.values():
            if p.node_name and p.deletion_timestamp and not p.is_terminal:
                terminating.setdefault(p.node_name, []).append(p)
        for w in pending:
            nominated = {p.nominated_node_name for p in w.pods if p.nominated_node_name}
            leaving = {v.key for n in nominated for v in terminating.get(n, ()) if v.priority < w.priority}
            victims = sorted({k for k in self.evicting.get(w.key, ()) if k in pods} | leaving)
            if victims:
                note = f"queue {w.queue}: waiting for {len(victims)} preempted pods to leave: {', '.join(victims)}"
                out.waiting += [Waiting(p, note) for p in w.pods]
                continue
            self.evicting.pop(w.key, None)
            if w.gang and bound[w.key]:
                w = dataclasses.replace(w, min_member=max(w.min_member - bound[w.key], 1))
            session.arrive(w)
        seen = {w.key for w in pending}
        self.evicting = {k: v for k, v in self.evicting.items() if k in seen}  # forget deleted workloads

    def _quota_blocks_members(self, w: Workload, bound: int) -> list[str]:
        """For a gang short of members: the namespace ResourceQuotas that refuse one more member now
        (R8.1: quota caps what may be created, so the missing members never reach this scheduler)."""
        original = self.groups.get(w.key)
        if not w.gang or original is None or len(w.pods) + bound >= original.min_member:
            return []
        member = w.pods[0]
        notes = []
        for q in sorted(self.quotas.values(), key=lambda q: q.name):
            if q.namespace != member.namespace:
                continue
            for resource, want in sorted(member.requests.items()):
                name = f"requests.{resource}"
                hard = q.hard.get(name)
                if not is_gpu(resource) or hard is None or q.used.get(name, 0) + want <= hard:
                    continue
                notes.append(
                    f"ResourceQuota {q.namespace}/{q.name} has {name} used {format_milli(resource, q.used.get(name, 0))} "
                    f"of hard {format_milli(resource, hard)}, so a missing member asking for "
                    f"{format_milli(resource, want)} is refused at creation (exceeded quota)"
                )  # fmt: skip
        return notes
