"""Preemption on a live cluster: victims evicted through the Eviction API (``policy/v1``, PDB-aware) with
upstream's ``Preempted`` event, or through the checkpoint handshake (``live.checkpoint``); queue
workloads' preemption; nominations set and cleared; each preemption's cost logged and counted.

Owns: evictions, checkpoint-request annotations, handshake progress. May not import the cache or
admission parts, nor another face.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Sequence

from kubegpu.kube.client import MERGE_PATCH, ApiError
from kubegpu.live.batch import Preempting, is_batch_pod
from kubegpu.live.binder import Binder
from kubegpu.live.checkpoint import CHECKPOINT_REQUESTED_ANNOTATION, Eviction, Wait
from kubegpu.live.state import REASON_UNSCHEDULABLE, pod_path, utc_now
from kubegpu.model.objects import Pod, PodKey
from kubegpu.model.podgroup import eviction_cost, group_key, rfc3339
from kubegpu.scheduler.schedule_one import ScheduleResult

log = logging.getLogger(__name__)


class Preemption(Binder):
    def _preempt_for_workload(self, preempting: Preempting) -> None:
        """Evict a workload's victims through the Eviction API and nominate its members to the nodes the
        session placed them on; the state is rebuilt from the API's view (the session took the victims
        out of it and placed the workload, neither of which has happened yet)."""
        self._nodes_dirty = True
        self._batch_dirty = True
        if self.handshakes is not None:
            self._request_workload_checkpoints(preempting)
            return
        evicted: dict[PodKey, int] = {}
        for key, cost in sorted(preempting.victims.items()):
            victim = self.pods.get(PodKey(key))
            if victim is None:
                continue
            if self._evict(victim, _preemptor_for(preempting.members, victim), victim.node_name):
                evicted[victim.key] = cost
                self.metrics.observe_victim(False, cost)
            else:  # refused (a PDB): it stays, and the workload is not held back waiting for it
                self.batch.evicting.get(preempting.workload, set()).discard(key)
        refused = {k for k in preempting.victims if PodKey(k) not in evicted}
        self._workload_preempted(
            preempting.workload, preempting.queue, preempting.members, evicted, set(), refused
        )

    def _workload_preempted(
        self,
        workload: str,
        queue_name: str,
        members: tuple[tuple[Pod, str], ...],
        evicted: dict[PodKey, int],
        checkpointed: set[PodKey],
        refused: set[str],
    ) -> None:
        """A workload's victims are evicted (as far as the API let us): log the cost, and nominate its
        members to their nodes, or say that every eviction was refused and nominate nothing."""
        log.info(
            "preemption for %s evicted %d of %d pods, %d GPU-seconds lost since their last checkpoints: %s",
            workload, len(evicted), len(evicted) + len(refused), sum(evicted.values()),
            _victim_costs(evicted, checkpointed),
        )  # fmt: skip
        prefix = f"queue {queue_name}: " if queue_name else ""
        if not evicted:  # every eviction refused: no room is coming, so none is held (no nomination)
            note = f"{prefix}preempting for {workload} was refused: {', '.join(sorted(refused))}"
            for pod, _ in members:
                self._unnominate(pod.key)
                self._record_failure(pod, note, REASON_UNSCHEDULABLE, clear_nomination=True)
            return
        note = f"{prefix}preempting {len(evicted)} pods to admit {workload}: " + ", ".join(sorted(evicted))
        self._nominate_members(members, note)

    def _nominate_members(self, members: tuple[tuple[Pod, str], ...], note: str) -> None:
        """Nominate a preempting workload's members to the nodes the session placed them on, each with
        ``note`` as its scheduling failure."""
        cluster = self.scheduler.cluster if self.scheduler is not None else None
        for pod, node in members:
            if cluster is not None:
                cluster.nominate(pod, node)  # carried into the rebuilt state until the API echoes it
            self._record_failure(pod, note, REASON_UNSCHEDULABLE, nominated=node)

    def _request_workload_checkpoints(self, preempting: Preempting) -> None:
        """The handshake for a queue workload: annotate every victim, nominate the members to their nodes,
        evict unit by unit later (``Handshakes.due``); the workload waits for its victims meanwhile."""
        assert self.handshakes is not None
        victims = tuple(v for k in sorted(preempting.victims) if (v := self.pods.get(PodKey(k))) is not None)
        if not victims:
            return
        wait = self.handshakes.start_workload(
            preempting.workload, preempting.queue, preempting.members, victims, utc_now(), time.monotonic()
        )
        self._annotate_checkpoint_request(victims, wait.requested_at)
        note = (
            f"queue {preempting.queue}: asked {len(victims)} pods to checkpoint before preempting them to "
            f"admit {preempting.workload}: " + ", ".join(v.key for v in victims)
        )
        self._nominate_members(preempting.members, note)
        log.info(
            "preempting for %s: asked %s to checkpoint within %.0f s",
            preempting.workload, ", ".join(v.key for v in victims), self.handshakes.deadline_s,
        )  # fmt: skip

    def _preempt(self, pod: Pod, result: ScheduleResult) -> str:
        """Evict the victims through the Eviction API; the nominated node if every eviction went through."""
        now = utc_now()
        costs: dict[PodKey, int] = {}
        evicted_all = True
        for victim in result.victims:
            if not self._evict(victim, pod, result.nominated_node):
                evicted_all = False
                break
            costs[victim.key] = eviction_cost(victim, now)
            self.metrics.observe_victim(False, costs[victim.key])
        self._report_cost(pod, result.nominated_node, costs, set())  # what was evicted is lost either way
        if not evicted_all:
            return ""
        self._clear_lower_nominations(pod, result.nominated_node)
        return result.nominated_node

    def _clear_lower_nominations(self, pod: Pod, node: str) -> None:
        """Upstream ``prepareCandidate``: pods of lower priority nominated to the node may no longer fit
        there; their ``nominatedNodeName`` is cleared (``ClearNominatedNodeName``, only where the object
        has one) so they look elsewhere. The watch's update then drops them from the nominator."""
        cluster = self.scheduler.cluster if self.scheduler is not None else None
        idx = cluster.index.get(node) if cluster is not None else None
        if cluster is None or idx is None:
            return
        for other in list(cluster.nominated.get(idx, {}).values()):
            stored = self.pods.get(other.key)
            if other.priority < pod.priority and stored is not None and stored.nominated_node_name:
                self._clear_nomination(stored)

    def _evict(self, victim: Pod, preemptor: Pod, node: str) -> bool:
        """One victim through the Eviction API (PDB-aware), with upstream's ``Preempted`` event."""
        eviction = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"namespace": victim.namespace, "name": victim.name},
        }
        try:
            self.api.post(pod_path(victim.namespace, victim.name, "eviction"), eviction)
        except ApiError as exc:
            log.warning("evicting %s for %s failed: %s", victim.key, preemptor.key, exc)
            return False
        note = f"Preempted by pod {preemptor.uid} on node {node}"
        self._event(victim, "Normal", "Preempted", "Preempting", note)
        return True

    def _request_checkpoints(self, pod: Pod, result: ScheduleResult) -> str:
        """Start the handshake: annotate the victims, nominate the preemptor, evict later."""
        assert self.handshakes is not None
        wait = self.handshakes.start(pod, result.nominated_node, result.victims, utc_now(), time.monotonic())
        self._annotate_checkpoint_request(result.victims, wait.requested_at)
        self._clear_lower_nominations(pod, wait.node)
        log.info(
            "preempting for %s on %s: asked %s to checkpoint within %.0f s",
            pod.key, wait.node, ", ".join(sorted(v.key for v in result.victims)), self.handshakes.deadline_s,
        )  # fmt: skip
        return wait.node

    def _annotate_checkpoint_request(self, victims: tuple[Pod, ...], requested_at: dt.datetime) -> None:
        # a failure is not fatal: the victim is evicted at the deadline all the same
        self._patch_checkpoint_request(victims, rfc3339(requested_at), "requesting a checkpoint of")

    def _patch_checkpoint_request(self, victims: Sequence[Pod], value: str | None, doing: str) -> None:
        """Merge-patch the request annotation on each victim (``None`` removes it); failures are logged."""
        patch = {"metadata": {"annotations": {CHECKPOINT_REQUESTED_ANNOTATION: value}}}
        for victim in victims:
            try:
                self.api.patch(pod_path(victim.namespace, victim.name), patch, MERGE_PATCH)
            except ApiError as exc:
                log.warning("%s %s failed: %s", doing, victim.key, exc)

    def _advance_handshakes(self) -> None:
        """Evict the victims whose deadline passed; close the waits with nothing left to evict. On becoming
        leader (a restart, a takeover) first rebuild the waits the API records (``Handshakes.resume``)."""
        if self.handshakes is None or not self.is_leader():
            self._resumed = False
            return
        if not self._resumed and "Pod" in self.synced:
            self._resumed = True
            for wait in self.handshakes.resume(
                self.pods.values(), self.config.scheduler_name, utc_now(), time.monotonic(), _workload_of
            ):
                if wait.workload:  # the workload waits for these victims, as after its own preemption
                    self.batch.evicting[wait.workload] = set(wait.victims)
                log.info(
                    "resumed checkpoint handshake for %s on %s: requested %s from %s; evicting within %.0f s",
                    wait.workload or wait.preemptor.key, ", ".join(sorted({n for _, n in wait.members} or {wait.node})),
                    rfc3339(wait.requested_at), ", ".join(sorted(wait.victims)),
                    max(wait.deadline - time.monotonic(), 0.0),
                )  # fmt: skip
        if not self.handshakes.waits:
            return
        for wait in list(self.handshakes.waits.values()):
            if wait.workload and not any(
                (p := self.pods.get(m.key)) is not None and not p.node_name for m, _ in wait.members
            ):  # every member deleted (or bound: not while it waits): nobody needs the room
                self._handshake_done(wait.key, "deleted")
        for ev in self.handshakes.due(utc_now(), time.monotonic()):
            self._evict_waited(ev)
        for key in list(self.handshakes.waits):
            self._handshake_done(key, "")

    def _evict_waited(self, ev: Eviction) -> None:
        if not self.is_leader():
            return
        if ev.wait.workload:
            if self._evict(ev.victim, _preemptor_for(ev.wait.members, ev.victim), ev.victim.node_name):
                self.metrics.observe_victim(ev.checkpointed, ev.lost_gpu_seconds)
            else:  # refused (a PDB): it stays, and the workload is not held back waiting for it
                ev.wait.refused.add(ev.victim.key)
                ev.wait.costs.pop(ev.victim.key, None)
                self.batch.evicting.get(ev.wait.workload, set()).discard(ev.victim.key)
            return  # the loop reports the wait once its whole unit is posted (``_advance_handshakes``)
        if self._evict(ev.victim, ev.wait.preemptor, ev.wait.node):
            self.metrics.observe_victim(ev.checkpointed, ev.lost_gpu_seconds)
            self._handshake_done(ev.wait.preemptor.key, "")
            return
        # refused (a PDB): the preemption is off, as an immediate one would be
        assert self.handshakes is not None
        self.handshakes.cancel(ev.wait.preemptor.key)
        self._withdraw_checkpoint_requests([ev.victim, *ev.wait.victims.values()])
        self._unnominate(ev.wait.preemptor.key)
        preemptor = self.pods.get(ev.wait.preemptor.key)
        if preemptor is not None:
            self._clear_nomination(preemptor)

    def _handshake_done(self, preemptor: str, why: str) -> None:
        """Report a finished wait (every victim evicted or gone); ``why`` cancels an unfinished one."""
        if self.handshakes is None:
            return
        wait: Wait | None = self.handshakes.cancel(preemptor) if why else self.handshakes.finished(preemptor)
        if wait is None:
            return
        if why and wait.victims:
            log.info(
                "checkpoint handshake for %s ended (%s) before evicting %s", preemptor, why, len(wait.victims)
            )
            self._withdraw_checkpoint_requests(list(wait.victims.values()))
        if wait.workload:
            if not why:
                self._workload_preempted(
                    wait.workload, wait.queue, wait.members, dict(wait.costs), wait.checkpointed,
                    set(wait.refused),
                )  # fmt: skip
            return
        self._report_cost(wait.preemptor, wait.node, wait.costs, wait.checkpointed)

    def _withdraw_checkpoint_requests(self, victims: list[Pod]) -> None:
        """Remove the request annotation from spared victims (a merge-patch null), so a restarted leader
        does not resume a wait that ended; a failure is logged, not fatal."""
        if self.is_leader():
            self._patch_checkpoint_request(victims, None, "withdrawing the checkpoint request of")

    def _report_cost(self, pod: Pod, node: str, costs: dict[PodKey, int], checkpointed: set[PodKey]) -> None:
        if not costs:
            return
        log.info(
            "preemption for %s on %s cost %d GPU-seconds since the victims' last checkpoints: %s",
            pod.key, node, sum(costs.values()), _victim_costs(costs, checkpointed),
        )  # fmt: skip


def _victim_costs(costs: dict[PodKey, int], checkpointed: set[PodKey]) -> str:
    """The preemption log's list of victims: ``<pod> <n> GPU-s``, ``(checkpointed)`` where it was."""
    return ", ".join(
        f"{k} {c} GPU-s{' (checkpointed)' if k in checkpointed else ''}" for k, c in sorted(costs.items())
    )


def _preemptor_for(members: tuple[tuple[Pod, str], ...], victim: Pod) -> Pod:
    """The member a victim makes room for (the one placed on its node), for the ``Preempted`` event."""
    return next((p for p, n in members if n == victim.node_name), members[0][0])


def _workload_of(pod: Pod) -> str | None:
    """The queue workload a pod belongs to (``batch.workloads``' key), None for a per-pod one."""
    return (group_key(pod) or pod.key) if is_batch_pod(pod) else None
