"""The checkpoint handshake before preemption (issue 6 item 5, R14.3): ask, wait, then evict.

Preemption throws away the work a victim did since its last checkpoint. With a handshake deadline set
(``kubegpu scheduler --checkpoint-deadline SECONDS``), the live scheduler does not evict the victims it
chose at once: it annotates each with ``kubegpu.io/checkpoint-requested: <RFC 3339 time>`` and nominates
the preemptor to the node (so no pod of lower or equal priority takes the room meanwhile). A workload
that supports it writes a checkpoint and reports ``kubegpu.io/last-checkpoint-time`` (RFC 3339) on its
pod; a victim whose reported time is at or after the request is evicted right away, the rest when the
deadline passes. The eviction goes through the Eviction API as any preemption.

What a preemption cost is reported per victim when it is evicted: GPU-seconds lost since its last
checkpoint (``model.podgroup.eviction_cost``: the reported checkpoint time, else the periodic
``kubegpu.io/checkpoint-interval-seconds``, else everything since start), whether it checkpointed in
time, and the sum per preemption.

Restarts: the waits live in memory, but the API holds everything needed to rebuild them — each victim's
``kubegpu.io/checkpoint-requested`` time and node, and the preemptor's ``status.nominatedNodeName``. A
scheduler that becomes leader (a restart, or a standby taking over) rebuilds a wait per node and request
time from the pending pod of this scheduler nominated to that node with a priority above every victim's
(the highest, then the oldest, if several); the deadline counts from the original request, not from the
restart, and a victim that checkpointed while no scheduler ran is evicted at once. Annotated victims with
no such preemptor left are not evicted. A wait cancelled before its evictions (the preemptor bound
elsewhere or deleted, an eviction refused) removes the annotation from the victims it spared, so a
later leader does not mistake them for pending victims.

Queue and gang admission (``live.batch``) preempts for a whole workload: its wait (``start_workload``,
keyed ``workload:<ns/name>``) holds every victim the session chose, on whatever nodes, and the members
stay nominated to the nodes they were placed on. Victims are evicted by eviction unit, never split: a
victim gang (``model.podgroup.group_key``) goes when every member still running reported a fresh
checkpoint, or at the deadline, all its evictions posted together. On a restart such a wait is rebuilt
first: the victims annotated with one request time, and the pending queue or gang pods of this
scheduler nominated to one of their nodes with a priority above theirs (one workload: the highest,
then the oldest); the rest of the victims are resumed per node as above.

This module keeps the waits; ``live.scheduler`` drives it from its watch events and its loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from kubegpu.model.objects import Pod, PodKey
from kubegpu.model.podgroup import LAST_CHECKPOINT_ANNOTATION, eviction_cost, group_key, parse_time

CHECKPOINT_REQUESTED_ANNOTATION = "kubegpu.io/checkpoint-requested"
WORKLOAD_WAIT = "workload:"  # prefix of a workload's wait key; a pod key ("ns/name") never has a colon


def workload_wait(workload: str) -> str:
    return WORKLOAD_WAIT + workload


def unit_of(victim: Pod) -> str:
    """The eviction unit a victim belongs to: its gang, else itself."""
    return group_key(victim) or victim.key


@dataclass
class Wait:
    """One preemption waiting for its victims' checkpoints: for one pod (``node``: where it is nominated)
    or for a queue workload (``workload``, its ``members`` and their nodes; ``preemptor`` is its first)."""

    preemptor: Pod
    node: str
    requested_at: datetime  # second precision, as written in the annotation
    deadline: float  # monotonic seconds
    victims: dict[PodKey, Pod] = field(default_factory=dict)
    costs: dict[PodKey, int] = field(default_factory=dict)  # evicted victim → GPU-seconds lost
    checkpointed: set[PodKey] = field(default_factory=set)  # evicted after a fresh checkpoint
    workload: str = ""
    queue: str = ""
    members: tuple[tuple[Pod, str], ...] = ()
    refused: set[PodKey] = field(default_factory=set)  # evictions the API refused (a PDB)

    @property
    def key(self) -> str:
        return workload_wait(self.workload) if self.workload else self.preemptor.key

    def unit(self, victim: Pod) -> list[Pod]:
        """The victims still waiting that are evicted together with ``victim`` (a workload's victim gang
        whole; in a single pod's preemption each victim alone, as kube-scheduler evicts)."""
        if not self.workload:
            return [victim]
        unit = unit_of(victim)
        return [v for v in self.victims.values() if unit_of(v) == unit]

    def units(self) -> list[list[Pod]]:
        """Every waiting victim in its eviction unit (as ``unit`` groups them), units in the order of
        their first victim, in one pass over the victims."""
        if not self.workload:
            return [[v] for v in self.victims.values()]
        groups: dict[str, list[Pod]] = {}
        for v in self.victims.values():
            groups.setdefault(unit_of(v), []).append(v)
        return list(groups.values())


@dataclass(frozen=True)
class Eviction:
    """A victim to evict now, why (``checkpointed`` in time or not) and what it costs."""

    wait: Wait
    victim: Pod
    checkpointed: bool
    lost_gpu_seconds: int


def checkpointed_since(pod: Pod, requested_at: datetime) -> bool:
    """Did ``pod`` report a checkpoint at or after the request?"""
    last = parse_time(pod.annotations.get(LAST_CHECKPOINT_ANNOTATION, ""))
    return last is not None and last >= requested_at


class Handshakes:
    """Preemptions waiting on checkpoints, keyed by preemptor."""

    def __init__(self, deadline_s: float) -> None:
        self.deadline_s = deadline_s
        self.waits: dict[str, Wait] = {}  # preemptor pod key, or ``workload_wait(workload)``

    def start(self, preemptor: Pod, node: str, victims: tuple[Pod, ...], now: datetime, mono: float) -> Wait:
        requested = now.replace(microsecond=0)
        wait = Wait(preemptor, node, requested, mono + self.deadline_s, {v.key: v for v in victims})
        self.waits[preemptor.key] = wait
        return wait

    def start_workload(
        self,
        workload: str,
        queue: str,
        members: tuple[tuple[Pod, str], ...],
        victims: tuple[Pod, ...],
        now: datetime,
        mono: float,
    ) -> Wait:
        first, node = members[0]
        wait = Wait(
            first, node, now.replace(microsecond=0), mono + self.deadline_s, {v.key: v for v in victims},
            workload=workload, queue=queue, members=members,
        )  # fmt: skip
        self.waits[wait.key] = wait
        return wait

    def waiting_on(self, victim: PodKey) -> Wait | None:
        return next((w for w in self.waits.values() if victim in w.victims), None)

    def updated(self, victim: Pod, now: datetime) -> list[Eviction]:
        """A victim's new state: its unit's evictions when that completes the unit's fresh checkpoints."""
        wait = self.waiting_on(victim.key)
        if wait is None:
            return []
        wait.victims[victim.key] = victim
        unit = wait.unit(victim)
        if not all(checkpointed_since(v, wait.requested_at) for v in unit):
            return []
        return [self._take(wait, v, True, now) for v in unit]

    def due(self, now: datetime, mono: float) -> list[Eviction]:
        """Victims to evict now: units whose every member reported a fresh checkpoint (one resumed after a
        restart may have done so unseen) and, once a wait's deadline has passed, all the others."""
        out: list[Eviction] = []
        for wait in list(self.waits.values()):
            for unit in wait.units():
                fresh = all(checkpointed_since(u, wait.requested_at) for u in unit)
                if fresh or mono >= wait.deadline:
                    out += [self._take(wait, u, checkpointed_since(u, wait.requested_at), now) for u in unit]
        return out

    def resume(
        self,
        pods: Iterable[Pod],
        scheduler_name: str,
        now: datetime,
        mono: float,
        workload_of: Callable[[Pod], str | None],
    ) -> list[Wait]:
        """Rebuild the waits the API records (see the module docstring); returns the new ones.
        ``workload_of`` names the queue workload a pending pod belongs to (None: a per-pod one)."""
        waiting = {k for w in self.waits.values() for k in w.victims}
        victims: dict[datetime, list[Pod]] = {}
        preemptors: list[Pod] = []
        for pod in pods:
            if pod.is_terminal or pod.key in waiting:
                continue
            requested = parse_time(pod.annotations.get(CHECKPOINT_REQUESTED_ANNOTATION, ""))
            if pod.node_name and requested is not None:
                victims.setdefault(requested, []).append(pod)
            elif (
                not pod.node_name and pod.nominated_node_name and pod.scheduler_name == scheduler_name
                and not pod.deletion_timestamp and pod.key not in self.waits
            ):  # fmt: skip
                preemptors.append(pod)
        members: dict[str, list[Pod]] = {}
        for p in preemptors:
            if (w := workload_of(p)) is not None and workload_wait(w) not in self.waits:
                members.setdefault(w, []).append(p)
        out: list[Wait] = []
        for requested, all_victims in sorted(victims.items()):
            elapsed = (now - requested).total_seconds()
            deadline = mono - elapsed + self.deadline_s
            top = max(v.priority for v in all_victims)
            nodes = {v.node_name for v in all_victims}
            workloads = [
                (w, ps) for w, ps in members.items()
                if min(p.priority for p in ps) > top and any(p.nominated_node_name in nodes for p in ps)
            ]  # fmt: skip
            if workloads:
                name, ps = min(
                    workloads, key=lambda c: (-max(p.priority for p in c[1]), min(p.creation_timestamp for p in c[1]), c[0])
                )  # fmt: skip
                del members[name]
                ps.sort(key=lambda p: p.key)
                wait = Wait(
                    ps[0], ps[0].nominated_node_name, requested, deadline, {v.key: v for v in all_victims},
                    workload=name, members=tuple((p, p.nominated_node_name) for p in ps),
                )  # fmt: skip
                self.waits[wait.key] = wait
                out.append(wait)
                continue
            by_node: dict[str, list[Pod]] = {}
            for v in all_victims:
                by_node.setdefault(v.node_name, []).append(v)
            for node, on_node in sorted(by_node.items()):
                top = max(v.priority for v in on_node)
                candidates = [
                    p for p in preemptors
                    if p.nominated_node_name == node and p.priority > top and workload_of(p) is None
                    and p.key not in self.waits
                ]  # fmt: skip
                if not candidates:
                    continue
                preemptor = min(candidates, key=lambda p: (-p.priority, p.creation_timestamp, p.key))
                wait = Wait(preemptor, node, requested, deadline, {v.key: v for v in on_node})
                self.waits[wait.key] = wait
                out.append(wait)
        return out

    def _take(self, wait: Wait, victim: Pod, checkpointed: bool, now: datetime) -> Eviction:
        del wait.victims[victim.key]
        cost = eviction_cost(victim, now)
        wait.costs[victim.key] = cost
        if checkpointed:
            wait.checkpointed.add(victim.key)
        return Eviction(wait, victim, checkpointed, cost)

    def gone(self, victim: PodKey) -> None:
        """A victim left on its own (finished, deleted): nothing to evict."""
        wait = self.waiting_on(victim)
        if wait is not None:
            del wait.victims[victim]

    def finished(self, preemptor: str) -> Wait | None:
        """The preemptor's (or workload's) wait once no victim is left to evict (removed), else None."""
        wait = self.waits.get(preemptor)
        if wait is None or wait.victims:
            return None
        return self.waits.pop(preemptor)

    def cancel(self, preemptor: str) -> Wait | None:
        """The preemptor no longer needs the room (bound elsewhere, deleted, an eviction refused)."""
        return self.waits.pop(preemptor, None)
