"""The live scheduler's shared state and names (``live.scheduler`` is the loop that fills it).

Owns: the configuration, the well-known names of the loop (watched kinds, the ``BOUND`` outcome, pod
reasons), the attributes every part reads, and the writes every part makes (leadership check, the
``FailedScheduling`` record, events, clearing a nomination). May not import the other parts of the
scheduler (``live.assumed``, ``live.binder``, ``live.preemption``, ``live.cache``,
``live.admission_cycle``) nor any other face.
"""

from __future__ import annotations

import datetime as dt
import logging
import queue
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kubegpu.backoff import POD_INITIAL_BACKOFF_S, POD_MAX_BACKOFF_S
from kubegpu.kube.client import ApiError, KubeApi
from kubegpu.kube.leader import LeaderElector, LeaseConfig
from kubegpu.live.batch import BatchAdmission
from kubegpu.live.checkpoint import Handshakes
from kubegpu.live.events import EventRecorder, PodRef
from kubegpu.live.metrics import SchedulerMetrics
from kubegpu.live.queue import SchedulingQueue
from kubegpu.model.default_spread import SpreadOwners
from kubegpu.model.objects import Node, Pod, PodDisruptionBudget, PodKey, PriorityClass
from kubegpu.model.podgroup import rfc3339
from kubegpu.model.volumes import VolumeObjects
from kubegpu.scheduler.messages import truncate_event_message
from kubegpu.scheduler.schedule_one import Scheduler

log = logging.getLogger(__name__)

DEFAULT_SCHEDULER_NAME = "kubegpu"
WATCHED_KINDS = (
    "Node", "Pod", "PriorityClass", "PodDisruptionBudget", "ResourceQuota", "GpuQueue", "GpuCohort", "PodGroup",
    # the storage plugins' objects (model.volumes), kept in ``volumes``
    "PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSINode", "CSIDriver", "CSIStorageCapacity",
    # PodTopologySpread's default selector (model.default_spread), kept in ``spread_owners``
    "Service", "ReplicationController", "ReplicaSet", "StatefulSet",
)  # fmt: skip
# always watched; scheduling also waits for every other watched kind (LiveScheduler.scheduling_synced)
REQUIRED_KINDS = frozenset({"Node", "Pod"})
# Kinds the batch admission keeps (``live.batch``); their events travel as ``BATCH + <collection path>``
# (two PodGroup APIs share a kind name), and admission cycles wait for all of them to sync.
BATCH_KINDS = frozenset({"ResourceQuota", "GpuQueue", "GpuCohort", "PodGroup"})
BATCH = "batch:"
REASON_UNSCHEDULABLE = "Unschedulable"  # v1.PodReasonUnschedulable
REASON_SCHEDULER_ERROR = "SchedulerError"  # v1.PodReasonSchedulerError
BOUND = "Bound"  # not a kind: a binding cycle's outcome, sent back to the scheduling loop


@dataclass
class LiveConfig:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    profile: str = "default"  # or "kubegpu": device-level placement, device IDs recorded on the pod
    identity: str = field(default_factory=socket.gethostname)
    leader_elect: bool = True
    lease: LeaseConfig = field(default_factory=LeaseConfig)
    initial_backoff_s: float = POD_INITIAL_BACKOFF_S
    max_backoff_s: float = POD_MAX_BACKOFF_S
    min_watch_timeout_s: int = 300
    seed: int = 0
    checkpoint_deadline_s: float = 0.0  # > 0: ask victims to checkpoint, evict after it or the deadline
    kube_version: str | None = None  # the kube-scheduler minor reproduced (scheduler.versions); None: newest


def pod_path(namespace: str, name: str, sub: str = "") -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}" + (f"/{sub}" if sub else "")


class SchedulerState:
    """The live scheduler's state and the writes every part makes; the loop (``live.scheduler``) fills
    it, the parts below it in the class chain (assumed pods, binder, preemption, informer cache,
    admission cycles) each own one concern and read or change it on the scheduling thread only."""

    api: KubeApi
    config: LiveConfig
    metrics: SchedulerMetrics
    stop: threading.Event
    lost_lease: threading.Event
    events: queue.Queue[tuple[str, str, list[dict[str, Any]]]]
    queue: SchedulingQueue
    nodes: dict[str, Node]
    pods: dict[PodKey, Pod]
    pod_conditions: dict[PodKey, tuple[str, str, str, str]]  # PodScheduled as stored
    priority_classes: dict[str, PriorityClass]
    pdbs: dict[str, PodDisruptionBudget]
    volumes: VolumeObjects
    spread_owners: SpreadOwners
    assumed: dict[PodKey, tuple[Pod, str]]  # bound by us, not yet seen bound by the watch
    synced: set[str]
    batch_synced: frozenset[str] | set[str]
    scheduler: Scheduler | None
    _nodes_dirty: bool
    recorder: EventRecorder
    handshakes: Handshakes | None
    _resumed: bool
    _binder: ThreadPoolExecutor
    elector: LeaderElector | None
    batch: BatchAdmission
    batch_waiting: set[PodKey]
    dra_left: set[str]  # UIDs of our pods with ResourceClaims, told once that they are left unplaced
    _batch_dirty: bool
    _batch_last: float
    _usage_leader: bool

    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader()

    def _unnominate(self, key: PodKey) -> None:
        if self.scheduler is not None:
            self.scheduler.cluster.unnominate(key)

    def _release(self, key: PodKey, *, move: bool) -> None:
        cluster = self.scheduler.cluster if self.scheduler is not None else None
        if cluster is not None and key in cluster.placement:
            cluster.remove_pod(cluster.pods_on[cluster.placement[key]][key])
            if move:  # freed capacity may let unschedulable pods fit (AssignedPodDelete)
                self.queue.move_all()

    def _clear_nomination(self, pod: Pod) -> None:
        """Remove ``status.nominatedNodeName`` (a strategic-merge null); a failure is logged, not fatal."""
        try:
            self.api.patch(
                pod_path(pod.namespace, pod.name, "status"), {"status": {"nominatedNodeName": None}}
            )
        except ApiError as exc:
            log.warning("clearing the nomination of %s failed: %s", pod.key, exc)

    def _record_failure(
        self, pod: Pod, message: str, reason: str, nominated: str = "", clear_nomination: bool = False
    ) -> None:
        """Upstream ``handleSchedulingFailure``: the Warning event, then the PodScheduled=False condition
        (with ``nominatedNodeName`` set, or removed with a null when the nomination is cleared)."""
        if not self.is_leader():
            return
        self._event(pod, "Warning", "FailedScheduling", "Scheduling", truncate_event_message(message))
        old = self.pod_conditions.get(pod.key, ("", "", "", ""))
        if old[:3] == ("False", reason, message) and not nominated and not clear_nomination:
            return
        transition = old[3] if old[0] == "False" and old[3] else rfc3339(utc_now())
        status: dict[str, Any] = {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "lastProbeTime": None,
                    "lastTransitionTime": transition,
                    "reason": reason,
                    "message": message,
                }
            ]
        }
        if nominated:
            status["nominatedNodeName"] = nominated
        elif clear_nomination:
            status["nominatedNodeName"] = None
        try:
            self.api.patch(pod_path(pod.namespace, pod.name, "status"), {"status": status})
        except ApiError as exc:
            log.warning("updating the PodScheduled condition of %s failed: %s", pod.key, exc)
            return
        self.pod_conditions[pod.key] = ("False", reason, message, transition)

    def _event(self, pod: Pod, event_type: str, reason: str, action: str, note: str) -> None:
        self.recorder.record(PodRef(pod.namespace, pod.name, pod.uid), event_type, reason, action, note)


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def meta_str(raw: dict[str, Any], key: str) -> str:
    metadata = raw.get("metadata")
    value = metadata.get(key) if isinstance(metadata, dict) else None
    return value if isinstance(value, str) else ""
