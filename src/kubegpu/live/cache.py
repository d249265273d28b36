"""The informer cache: informer events applied to the scheduler's view on the scheduling thread, and the
core's ``ClusterState`` kept current (rebuilt after node changes, pods added and removed one by one).

Owns: ``nodes``, ``pods``, ``priority_classes``, ``pdbs``, ``volumes`` (PVCs, PVs, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities),
``spread_owners`` (Services and controllers: PodTopologySpread's default selector), ``synced``, nominations seeded on a
rebuild, device models. May not import the admission part, nor another face.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
from collections.abc import Callable
from typing import Any

from kubegpu.devices.node_devices import NodeDevices, node_devices
from kubegpu.errors import InputError
from kubegpu.kube.informer import SYNC, apply_to_store, object_key
from kubegpu.kube.listed_kinds import ListedKind
from kubegpu.live.assumed import checked_record, reconcile_records
from kubegpu.live.batch import is_batch_pod
from kubegpu.live.preemption import Preemption
from kubegpu.live.state import BATCH, BATCH_KINDS, BOUND, REASON_UNSCHEDULABLE, utc_now
from kubegpu.model.default_spread import KINDS as SPREAD_KINDS
from kubegpu.model.objects import Pod, PodKey
from kubegpu.model.parse import parse_node, parse_pod
from kubegpu.model.parse_policy import parse_pdb, parse_priority_class
from kubegpu.model.volumes import KINDS as VOLUME_KINDS
from kubegpu.scheduler.assembly import SchedulerSpec, assemble, plugin_config_for
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.schedule_one import Scheduler

log = logging.getLogger(__name__)
# said (log, event, condition) for every pod of ours with spec.resourceClaims: it is never placed here
DRA_NOT_ALLOCATED = (
    "kubegpu's live scheduler does not allocate ResourceClaims (Dynamic Resource Allocation): it leaves "
    "this pod unplaced; give it spec.schedulerName: default-scheduler so kube-scheduler allocates its claims"
)


class InformerCache(Preemption):
    def _on_event(self, kind: str, event_type: str, items: list[dict[str, Any]]) -> None:
        self.events.put((kind, event_type, items))

    def _sink_for(self, listed: ListedKind) -> Callable[[str, str, list[dict[str, Any]]], None]:
        if listed.kind not in BATCH_KINDS:
            return self._on_event
        return lambda _kind, event_type, items: self.events.put((BATCH + listed.path, event_type, items))

    def _drain_events(self, block_s: float) -> None:
        try:
            item = self.events.get(timeout=block_s) if block_s > 0 else self.events.get_nowait()
        except queue.Empty:
            return
        while True:
            self._apply(*item)
            try:
                item = self.events.get_nowait()
            except queue.Empty:
                return

    # -- informer events -> state -------------------------------------------------------------------

    def _apply(self, kind: str, event_type: str, items: list[dict[str, Any]]) -> None:
        if kind == BOUND:
            self._bind_done(**items[0])
        elif kind.startswith(BATCH):
            path = kind.removeprefix(BATCH)
            self.batch.apply(path, event_type, items)
            self._batch_dirty = True
            if event_type == SYNC:
                self.synced.add(path)
            return
        elif kind == "Node":
            self._apply_nodes(event_type, items)
        elif kind == "Pod":
            if event_type == SYNC:
                listed = {object_key(o) for o in items}
                for key in [k for k in self.pods if k not in listed]:
                    self._delete_pod(key)
            for raw in items:
                self._apply_pod(event_type, raw)
        elif kind == "PriorityClass":
            apply_to_store(
                self.priority_classes, event_type, items, lambda raw: parse_priority_class(raw, "watch")
            )
        elif kind == "PodDisruptionBudget":
            apply_to_store(self.pdbs, event_type, items, lambda raw: parse_pdb(raw, "watch"))
            if self.scheduler is not None:
                self.scheduler.framework.handle.pdbs = list(self.pdbs.values())
        elif kind in VOLUME_KINDS:
            self._apply_storage(kind, event_type, items)
        elif kind in SPREAD_KINDS:
            for exc in self.spread_owners.apply(kind, event_type, items):
                log.warning("ignoring %s", exc)
        if event_type == SYNC:
            self.synced.add(kind)

    def _apply_storage(self, kind: str, event_type: str, items: list[dict[str, Any]]) -> None:
        if event_type == SYNC:
            self.volumes.clear(kind)
        for raw in items:
            self.volumes.remove(kind, object_key(raw))  # namespace/name for claims, name for the rest
            if event_type == "DELETED":
                continue
            try:
                self.volumes.add({**raw, "kind": kind}, "watch")
            except InputError as exc:
                log.warning("ignoring %s", exc)

    def _apply_nodes(self, event_type: str, items: list[dict[str, Any]]) -> None:
        apply_to_store(self.nodes, event_type, items, lambda raw: parse_node(raw, "watch"))
        # ClusterState's node rows are fixed: rebuild before the next cycle. A node change may let
        # unschedulable pods fit (upstream NodeAdd/NodeUpdate queueing hints, simplified to "any").
        self._nodes_dirty = True
        self._batch_dirty = True
        self.queue.move_all()

    def _apply_pod(self, event_type: str, raw: dict[str, Any]) -> None:
        key = PodKey(object_key(raw))
        if event_type == "DELETED":
            self._delete_pod(key)
            return
        try:
            pod = parse_pod(raw, "watch", self.priority_classes)
        except InputError as exc:
            log.warning("ignoring pod: %s", exc)
            self._delete_pod(key)
            return
        old = self.pods.get(key)
        if old is not None and old.uid != pod.uid:
            self._delete_pod(key)  # deleted and recreated under the same name
            old = None
        self.pods[key] = pod
        self.pod_conditions[key] = _scheduled_condition(raw)
        if pod.node_name:
            self._stop_waiting(key)
            self._handshake_done(key, "bound")
            self.assumed.pop(key, None)  # the watch confirms our binding (or shows someone else's)
            if pod.is_terminal:
                self._release(key, move=True)
                self._batch_dirty = True
                if self.handshakes is not None:
                    self.handshakes.gone(key)
            else:
                self._place(pod)
                if self.handshakes is not None:
                    for ev in self.handshakes.updated(pod, utc_now()):
                        self._evict_waited(ev)
            return
        if key in self.assumed:
            return  # an event older than our successful binding; the binding's event follows
        if pod.is_terminal or pod.deletion_timestamp or pod.scheduling_gates:
            self._stop_waiting(key)
        elif pod.scheduler_name == self.config.scheduler_name and _has_claims(raw):
            self._leave_dra_pod(pod)
        elif pod.scheduler_name == self.config.scheduler_name and is_batch_pod(pod):
            self.queue.remove(key)  # it may have joined a queue or group since
            self.batch_waiting.add(key)
            if old is None or _admission_inputs(old) != _admission_inputs(pod):
                self._batch_dirty = True  # not for status-only updates (our own condition patches)
        elif pod.scheduler_name == self.config.scheduler_name:
            self.batch_waiting.discard(key)
            self.queue.add(pod)
            self._update_nomination(old, pod)

    def _leave_dra_pod(self, pod: Pod) -> None:
        """A pod of ours with ``spec.resourceClaims``: the live scheduler does not allocate claims (it would
        have to write ``status.allocation`` and ``reservedFor`` as kube-scheduler does), so it never places
        the pod by CPU and memory alone: it says so once per pod (log, ``FailedScheduling`` event, the
        PodScheduled condition) and leaves it to kube-scheduler (docs/live.md)."""
        self.queue.remove(pod.key)
        self.batch_waiting.discard(pod.key)
        if pod.uid in self.dra_left or not self.is_leader():
            return
        self.dra_left.add(pod.uid)
        log.warning("%s: %s", pod.key, DRA_NOT_ALLOCATED)
        self._record_failure(pod, DRA_NOT_ALLOCATED, REASON_UNSCHEDULABLE)

    def _stop_waiting(self, key: PodKey) -> None:
        """The pod no longer waits for a node (bound, finished, deleting or gated): out of the queue, the
        batch admission's waiting set and the nominator."""
        self.queue.remove(key)
        self.batch_waiting.discard(key)
        self._unnominate(key)

    def _update_nomination(self, old: Pod | None, pod: Pod) -> None:
        """Upstream ``UpdateNominatedPod``: the object's ``nominatedNodeName`` wins when the old or the new
        object names one (added, changed, removed); otherwise an in-memory nomination is kept."""
        cluster = self.scheduler.cluster if self.scheduler is not None and not self._nodes_dirty else None
        if cluster is None:
            return  # the rebuild seeds nominations from the pods
        if pod.nominated_node_name or (old is not None and old.nominated_node_name):
            cluster.nominate(pod, pod.nominated_node_name)
        elif pod.key in cluster.nominated_to:
            cluster.nominate(pod, cluster.nodes[cluster.nominated_to[pod.key]].name)

    def _delete_pod(self, key: PodKey) -> None:
        self._unnominate(key)
        if self.handshakes is not None:
            self.handshakes.gone(key)
            self._handshake_done(key, "deleted")
        self.queue.remove(key)
        self.batch_waiting.discard(key)
        self._batch_dirty = True
        self.assumed.pop(key, None)
        self.pods.pop(key, None)
        self.pod_conditions.pop(key, None)
        self._release(key, move=True)

    def _place(self, pod: Pod) -> None:
        """Account an assigned pod on its node (once; rebuilds pick it up from ``self.pods``)."""
        cluster = self.scheduler.cluster if self.scheduler is not None and not self._nodes_dirty else None
        if cluster is None:
            return
        idx = cluster.placement.get(pod.key)
        target = cluster.index.get(pod.node_name)
        if idx is not None and idx == target:
            return
        if idx is not None:
            cluster.remove_pod(pod)
        if target is not None:
            held = cluster.devices.held[target]
            others = {r: {i: k for i, k in ids.items() if k != pod.key} for r, ids in held.items()}
            cluster.add_pod(checked_record(pod, cluster.devices.models[target], others), target)

    def _ensure_scheduler(self) -> Scheduler:
        if self.scheduler is None or self._nodes_dirty:
            # own records first (assumed: our Bindings carry them), then bound pods oldest first
            placed = [dataclasses.replace(pod, node_name=node) for pod, node in self.assumed.values()]
            bound = [
                p
                for p in self.pods.values()
                if p.node_name and not p.is_terminal and p.key not in self.assumed
            ]
            placed += sorted(bound, key=lambda p: (p.creation_timestamp, p.key))
            models = self._device_models()
            cluster = ClusterState(list(self.nodes.values()), reconcile_records(placed, models), models)
            self._seed_nominations(cluster)
            spec = SchedulerSpec(
                self.config.profile,
                self.config.scheduler_name,
                kube_version=self.config.kube_version,
                seed=self.config.seed,
                pdbs=tuple(self.pdbs.values()),
                volumes=self.volumes,
                binds_volumes=False,  # no PreBind here: pods whose claims need binding are refused, saying why
                spread_owners=self.spread_owners,
            )
            self.scheduler = assemble(spec, cluster)
            self._nodes_dirty = False
        return self.scheduler

    def _seed_nominations(self, cluster: ClusterState) -> None:
        """A rebuilt state's nominator: our pending pods' ``nominatedNodeName``, then the previous state's
        in-memory nominations the API has not echoed yet."""
        previous = self.scheduler.cluster if self.scheduler is not None else None
        for pod in self.pods.values():
            if pod.node_name or pod.scheduler_name != self.config.scheduler_name or pod.is_terminal:
                continue
            node = pod.nominated_node_name
            if not node and previous is not None and pod.key in previous.nominated_to:
                node = previous.nodes[previous.nominated_to[pod.key]].name
            if node:
                cluster.nominate(pod, node)

    def _device_models(self) -> dict[str, NodeDevices]:
        """Per node, the device model the kubegpu profile places devices on (the default profile only
        counts); a node whose model cannot be built stays count-only, as in ``explain``."""
        if self.config.profile != "kubegpu":
            return {}
        models: dict[str, NodeDevices] = {}
        for node in self.nodes.values():
            try:
                model = node_devices(node, plugin_config_for(node, {}))
            except InputError as exc:
                log.warning("node %s: no device model: %s", node.name, exc)
                continue
            if model is not None:
                models[node.name] = model
        return models


def _admission_inputs(pod: Pod) -> tuple[Any, ...]:
    """What a queue admission decision reads from a pending pod (a change of only its status is none)."""
    return (pod.labels, pod.annotations, pod.requests, pod.priority, pod.scheduling_gates, pod.uid)


def _has_claims(raw: dict[str, Any]) -> bool:
    spec = raw.get("spec")
    return isinstance(spec, dict) and bool(spec.get("resourceClaims"))


def _scheduled_condition(raw: dict[str, Any]) -> tuple[str, str, str, str]:
    """(status, reason, message, lastTransitionTime) of the stored PodScheduled condition."""
    status = raw.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for c in conditions if isinstance(conditions, list) else []:
        if isinstance(c, dict) and c.get("type") == "PodScheduled":
            return (
                str(c.get("status") or ""),
                str(c.get("reason") or ""),
                str(c.get("message") or ""),
                str(c.get("lastTransitionTime") or ""),
            )
    return ("", "", "", "")
