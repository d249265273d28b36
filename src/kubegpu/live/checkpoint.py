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

This module keeps the waits; ``live.scheduler`` drives it from its watch events and its loop.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from kubegpu.model.objects import Pod, PodKey
from kubegpu.model.podgroup import LAST_CHECKPOINT_ANNOTATION, eviction_cost, parse_time

CHECKPOINT_REQUESTED_ANNOTATION = "kubegpu.io/checkpoint-requested"


def rfc3339(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Wait:
    """One preemption waiting for its victims' checkpoints."""

    preemptor: Pod
    node: str
    requested_at: datetime  # second precision, as written in the annotation
    deadline: float  # monotonic seconds
    victims: dict[PodKey, Pod] = field(default_factory=dict)
    costs: dict[PodKey, int] = field(default_factory=dict)  # evicted victim → GPU-seconds lost
    checkpointed: set[PodKey] = field(default_factory=set)  # evicted after a fresh checkpoint


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
        self.waits: dict[PodKey, Wait] = {}

    def start(self, preemptor: Pod, node: str, victims: tuple[Pod, ...], now: datetime, mono: float) -> Wait:
        requested = now.replace(microsecond=0)
        wait = Wait(preemptor, node, requested, mono + self.deadline_s, {v.key: v for v in victims})
        self.waits[preemptor.key] = wait
        return wait

    def waiting_on(self, victim: PodKey) -> Wait | None:
        return next((w for w in self.waits.values() if victim in w.victims), None)

    def updated(self, victim: Pod, now: datetime) -> Eviction | None:
        """A victim's new state: its eviction when it has just reported a fresh checkpoint."""
        wait = self.waiting_on(victim.key)
        if wait is None:
            return None
        wait.victims[victim.key] = victim
        if not checkpointed_since(victim, wait.requested_at):
            return None
        return self._take(wait, victim, True, now)

    def due(self, now: datetime, mono: float) -> list[Eviction]:
        """Victims to evict now: those that reported a fresh checkpoint (one resumed after a restart may
        have done so unseen) and, once a wait's deadline has passed, all the others."""
        out: list[Eviction] = []
        for wait in list(self.waits.values()):
            for v in list(wait.victims.values()):
                if checkpointed_since(v, wait.requested_at):
                    out.append(self._take(wait, v, True, now))
                elif mono >= wait.deadline:
                    out.append(self._take(wait, v, False, now))
        return out

    def resume(self, pods: Iterable[Pod], scheduler_name: str, now: datetime, mono: float) -> list[Wait]:
        """Rebuild the waits the API records (see the module docstring); returns the new ones."""
        waiting = {k for w in self.waits.values() for k in w.victims}
        victims: dict[tuple[str, datetime], list[Pod]] = {}
        preemptors: list[Pod] = []
        for pod in pods:
            if pod.is_terminal or pod.key in waiting:
                continue
            requested = parse_time(pod.annotations.get(CHECKPOINT_REQUESTED_ANNOTATION, ""))
            if pod.node_name and requested is not None:
                victims.setdefault((pod.node_name, requested), []).append(pod)
            elif (
                not pod.node_name and pod.nominated_node_name and pod.scheduler_name == scheduler_name
                and not pod.deletion_timestamp and pod.key not in self.waits
            ):  # fmt: skip
                preemptors.append(pod)
        out: list[Wait] = []
        for (node, requested), on_node in sorted(victims.items()):
            top = max(v.priority for v in on_node)
            candidates = [p for p in preemptors if p.nominated_node_name == node and p.priority > top]
            if not candidates:
                continue
            preemptor = min(candidates, key=lambda p: (-p.priority, p.creation_timestamp, p.key))
            preemptors.remove(preemptor)
            elapsed = (now - requested).total_seconds()
            wait = Wait(
                preemptor, node, requested, mono - elapsed + self.deadline_s, {v.key: v for v in on_node}
            )
            self.waits[preemptor.key] = wait
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

    def finished(self, preemptor: PodKey) -> Wait | None:
        """The preemptor's wait once no victim is left to evict (removed), else None."""
        wait = self.waits.get(preemptor)
        if wait is None or wait.victims:
            return None
        return self.waits.pop(preemptor)

    def cancel(self, preemptor: PodKey) -> Wait | None:
        """The preemptor no longer needs the room (bound elsewhere, deleted, an eviction refused)."""
        return self.waits.pop(preemptor, None)
