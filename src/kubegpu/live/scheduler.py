"""``kubegpu scheduler``: a second scheduler on a live cluster, driven by the scheduling core (R5, R8, R11).

It schedules the pods whose ``spec.schedulerName`` is its profile's name and leaves every other pod to
its own scheduler. The decisions are the core's (``Scheduler.schedule_one``: the same filters, scores,
preemption and ``FailedScheduling`` text as ``kubegpu schedule`` offline); this module only keeps the
core's ``ClusterState`` current and writes the outcome back the way kube-scheduler 1.34 does:

* **informers**: one ``Reflector`` per kind (Nodes, Pods, PriorityClasses, PodDisruptionBudgets,
  ResourceQuotas, and the batch CRDs: GpuQueues, GpuCohorts, both PodGroup APIs) lists then watches;
  their events are applied on the scheduling thread between cycles, so the core's state is never touched
  concurrently. Node changes rebuild the ``ClusterState`` (its node rows are fixed) before
  the next cycle; pod changes are applied incrementally (``add_pod`` / ``remove_pod``).
* **assume, then bind**: a chosen pod is assumed on its node in the state (the core does it), then
  ``POST pods/<name>/binding`` (``Binding{metadata{namespace,name,uid}, target{kind: Node, name}}`` as
  the DefaultBinder sends it). The assumed pod stays accounted until the watch shows it bound; a bind
  error forgets it (``remove_pod``), records the failure like upstream's ``handleBindingCycleError``
  (``running Bind plugin "DefaultBinder": <API error>``, reason ``SchedulerError``) and retries the pod
  after its backoff. 429 and 5xx answers carrying ``Retry-After`` are retried inside the request first
  (client-go does the same). The binding runs on binder threads, as kube-scheduler's binding cycle runs
  in a goroutine: the next cycle starts while it is in flight, and its outcome is applied back on the
  scheduling thread. The API server refuses a second binding of a bound pod (409), so no pod is ever
  bound twice.
* **outcome**: on success the ``Normal`` event ``Scheduled`` / ``Binding`` /
  ``Successfully assigned <ns>/<pod> to <node>``; on failure the ``Warning`` event ``FailedScheduling`` /
  ``Scheduling`` whose note is the message cut by ``truncate_event_message`` (1024 bytes), and a
  strategic-merge status patch setting ``PodScheduled=False`` with reason ``Unschedulable`` and the full
  message (skipped when the condition already says exactly that, as ``podutil.UpdatePodCondition``).
  Events are ``events.k8s.io/v1`` from ``reportingController: <scheduler name>``, written off the
  scheduling thread by ``kubegpu.live.events`` as kube-scheduler's event broadcaster does.
* **preemption**: the core's victims are evicted through the Eviction API (``policy/v1``, so the API
  server enforces PDBs), each gets upstream's ``Preempted`` event, and the preemptor's
  ``status.nominatedNodeName`` is set.
* **checkpoint handshake** (``--checkpoint-deadline SECONDS``, ``live.checkpoint``): instead of
  evicting at once, the victims are annotated ``kubegpu.io/checkpoint-requested`` and the preemptor is
  nominated; a victim is evicted when it reports ``kubegpu.io/last-checkpoint-time`` at or after the
  request, or when the deadline passes; a new leader rebuilds the waits from those annotations and the
  preemptor's nomination (``Handshakes.resume``). Every preemption's cost (GPU-seconds lost since each
  victim's last checkpoint) is logged and counted in ``/metrics``.
* **leadership**: with leader election on, nothing is bound, evicted or patched unless this replica holds
  the Lease (checked before every write); losing it ends the process (exit code 1), as kube-scheduler.
* **devices** (``--profile kubegpu``): the core's GpuDeviceFit picks device IDs at Reserve; they travel
  as the Binding's ``kubegpu.io/allocated-devices`` annotation (``{container: {resource: [ids]}}``),
  which the API server copies onto the pod in the same write that sets ``nodeName``.

* **queues and gangs** (``live.batch``): pods naming a queue or in a pod group are admitted by the batch
  layer's ``BatchSession`` in admission cycles; an admitted gang's members are all placed in one cycle
  before any Binding is posted, one member after another, and a failed member stops the rest (their
  placements are forgotten, the gang retried counting the bound members). A workload the session admits
  only by preempting has its victims evicted through the Eviction API and its members nominated; with
  ``--checkpoint-deadline`` through the handshake, victim gangs evicted whole. Decayed queue usage is
  carried across cycles and written to the GpuQueue status every sampling interval (``live.fair_usage``).
* **nominations**: pending pods of this scheduler with ``status.nominatedNodeName`` (and the nominations
  the core's preemption makes, before the API echoes them) are the core's nominator
  (``ClusterState.nominate``): later cycles of pods with no higher priority leave their room to them.
  As upstream's ``UpdateNominatedPod``, an update where neither the old nor the new object names a node
  keeps the in-memory nomination; a preemption whose candidates are gone clears ``nominatedNodeName``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import queue
import socket
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kubegpu.devices.node_devices import NodeDevices, node_devices
from kubegpu.errors import InputError
from kubegpu.explain.engine import plugin_config_for
from kubegpu.kube.client import MERGE_PATCH, ApiError, KubeApi
from kubegpu.kube.informer import SYNC, Reflector
from kubegpu.kube.leader import LeaderElector, LeaseConfig
from kubegpu.kube.live import BATCH_LISTED_KINDS, LISTED_KINDS, ListedKind
from kubegpu.live.batch import Admitted, BatchAdmission, Preempting, is_batch_pod
from kubegpu.live.checkpoint import CHECKPOINT_REQUESTED_ANNOTATION, Eviction, Handshakes, Wait
from kubegpu.live.events import EventRecorder, PodRef
from kubegpu.live.fair_usage import status_path
from kubegpu.live.metrics import SchedulerMetrics
from kubegpu.live.queue import INITIAL_BACKOFF_S, MAX_BACKOFF_S, MAX_IN_UNSCHEDULABLE_S, SchedulingQueue
from kubegpu.model.objects import Node, Pod, PodDisruptionBudget, PodKey, PriorityClass
from kubegpu.model.parse import parse_node, parse_pdb, parse_pod, parse_priority_class
from kubegpu.model.podgroup import eviction_cost, group_key, rfc3339
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.device_ledger import ALLOCATION_ANNOTATION, Assignment
from kubegpu.scheduler.framework import Framework
from kubegpu.scheduler.messages import truncate_event_message
from kubegpu.scheduler.registry import in_tree_registry, profile_named
from kubegpu.scheduler.schedule_one import Scheduler, ScheduleResult

log = logging.getLogger(__name__)

DEFAULT_SCHEDULER_NAME = "kubegpu"
WATCHED_KINDS = (
    "Node", "Pod", "PriorityClass", "PodDisruptionBudget", "ResourceQuota", "GpuQueue", "GpuCohort", "PodGroup"
)  # fmt: skip
REQUIRED_KINDS = frozenset({"Node", "Pod"})  # scheduling waits for these caches to sync
# Kinds the batch admission keeps (``live.batch``); their events travel as ``BATCH + <collection path>``
# (two PodGroup APIs share a kind name), and admission cycles wait for all of them to sync.
BATCH_KINDS = frozenset({"ResourceQuota", "GpuQueue", "GpuCohort", "PodGroup"})
BATCH = "batch:"
GANG_MEMBER_FAILED = "GangMemberFailed"  # not an API reason: a member not bound because another failed
DEFAULT_BINDER = "DefaultBinder"
REASON_UNSCHEDULABLE = "Unschedulable"  # v1.PodReasonUnschedulable
REASON_SCHEDULER_ERROR = "SchedulerError"  # v1.PodReasonSchedulerError
BOUND = "Bound"  # not a kind: a binding cycle's outcome, sent back to the scheduling loop
BIND_WORKERS = 16


@dataclass
class LiveConfig:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    profile: str = "default"  # or "kubegpu": device-level placement, device IDs recorded on the pod
    identity: str = field(default_factory=socket.gethostname)
    leader_elect: bool = True
    lease: LeaseConfig = field(default_factory=LeaseConfig)
    initial_backoff_s: float = INITIAL_BACKOFF_S
    max_backoff_s: float = MAX_BACKOFF_S
    min_watch_timeout_s: int = 300
    seed: int = 0
    checkpoint_deadline_s: float = 0.0  # > 0: ask victims to checkpoint, evict after it or the deadline


def pod_path(namespace: str, name: str, sub: str = "") -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}" + (f"/{sub}" if sub else "")


class LiveScheduler:
    """The scheduling loop; ``run()`` blocks until ``stop`` is set (0) or the lease is lost (1)."""

    def __init__(self, api: KubeApi, config: LiveConfig, metrics: SchedulerMetrics | None = None) -> None:
        self.api = api
        self.config = config
        self.metrics = metrics or SchedulerMetrics(config.scheduler_name)
        self.stop = threading.Event()
        self.lost_lease = threading.Event()
        self.events: queue.Queue[tuple[str, str, list[dict[str, Any]]]] = queue.Queue()
        self.queue = SchedulingQueue(config.initial_backoff_s, config.max_backoff_s)
        self.nodes: dict[str, Node] = {}
        self.pods: dict[PodKey, Pod] = {}
        self.pod_conditions: dict[PodKey, tuple[str, str, str, str]] = {}  # PodScheduled as stored
        self.priority_classes: dict[str, PriorityClass] = {}
        self.pdbs: dict[str, PodDisruptionBudget] = {}
        self.assumed: dict[PodKey, tuple[Pod, str]] = {}  # bound by us, not yet seen bound by the watch
        self.synced: set[str] = set()
        self.scheduler: Scheduler | None = None
        self._nodes_dirty = True
        self.recorder = EventRecorder(api, config.scheduler_name)
        self.handshakes = (
            Handshakes(config.checkpoint_deadline_s) if config.checkpoint_deadline_s > 0 else None
        )
        self._resumed = False  # handshakes rebuilt from the API since this replica became leader
        self._binder = ThreadPoolExecutor(max_workers=BIND_WORKERS, thread_name_prefix="binder")
        self.elector: LeaderElector | None = None
        if config.leader_elect:
            self.elector = LeaderElector(api, config.identity, config.lease, self.stop, self._on_lost_lease)
        self.batch = BatchAdmission()
        # Pending pods of ours that wait for queue admission. Never assumed as well: a member leaves it as
        # it is assumed (_bind_admitted), a pod's events are ignored while it is assumed, a failed
        # binding is forgotten before its pod comes back, and the single-pod path only assumes pods
        # popped from self.queue, which holds none of these.
        self.batch_waiting: set[PodKey] = set()
        self._batch_dirty = False
        self._batch_last = 0.0  # monotonic time of the last admission cycle
        self._usage_leader = False  # decayed usage seeded from status since this replica became leader
        watched = [k for k in (*LISTED_KINDS, *BATCH_LISTED_KINDS) if k.kind in WATCHED_KINDS]
        # what an admission cycle waits for: the scheduling caches and every batch kind's
        self.batch_synced = REQUIRED_KINDS | {k.path for k in watched if k.kind in BATCH_KINDS}
        self.reflectors = [
            Reflector(
                api, listed, self._sink_for(listed), self.stop, min_watch_timeout_s=config.min_watch_timeout_s
            )
            for listed in watched
        ]

    # -- process lifecycle --------------------------------------------------------------------------

    def run(self) -> int:
        threads = [
            threading.Thread(target=r.run, name=f"reflector-{r.listed.kind}", daemon=True)
            for r in self.reflectors
        ]
        if self.elector is not None:
            threads.append(threading.Thread(target=self.elector.run, name="leader-election", daemon=True))
        for t in threads:
            t.start()
        self.metrics.healthy = True
        try:
            while not self.stop.is_set():
                self.step(wait_s=0.2)  # bounds how long a SIGTERM waits
        finally:
            self.stop.set()
            self._binder.shutdown(wait=True, cancel_futures=True)
            self.recorder.close()
        return 1 if self.lost_lease.is_set() else 0

    def _on_lost_lease(self) -> None:
        self.lost_lease.set()
        self.stop.set()

    def _on_event(self, kind: str, event_type: str, items: list[dict[str, Any]]) -> None:
        self.events.put((kind, event_type, items))

    def _sink_for(self, listed: ListedKind) -> Callable[[str, str, list[dict[str, Any]]], None]:
        if listed.kind not in BATCH_KINDS:
            return self._on_event
        return lambda _kind, event_type, items: self.events.put((BATCH + listed.path, event_type, items))

    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader()

    # -- one step of the loop -----------------------------------------------------------------------

    def step(self, wait_s: float) -> None:
        """Apply pending informer events, then run at most one scheduling cycle (or wait for work)."""
        self._drain_events(block_s=0.0)
        self._advance_handshakes()
        self._record_usage()
        self._admit_batch()
        pod = self.queue.pop() if self.synced >= REQUIRED_KINDS and self.is_leader() else None
        self._publish_depths()
        if pod is None:
            ready_in = self.queue.next_ready_in()
            self._drain_events(block_s=wait_s if ready_in is None else min(wait_s, ready_in))
            return
        self._schedule(pod)

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
                listed = {f"{_meta(o, 'namespace')}/{_meta(o, 'name')}" for o in items}
                for key in [k for k in self.pods if k not in listed]:
                    self._delete_pod(key)
            for raw in items:
                self._apply_pod(event_type, raw)
        elif kind == "PriorityClass":
            if event_type == SYNC:
                self.priority_classes.clear()
            for raw in items:
                self._apply_simple(
                    raw, event_type, self.priority_classes, parse_priority_class, _meta(raw, "name")
                )
        elif kind == "PodDisruptionBudget":
            if event_type == SYNC:
                self.pdbs.clear()
            for raw in items:
                pdb_key = f"{_meta(raw, 'namespace')}/{_meta(raw, 'name')}"
                self._apply_simple(raw, event_type, self.pdbs, parse_pdb, pdb_key)
            if self.scheduler is not None:
                self.scheduler.framework.handle.pdbs = list(self.pdbs.values())
        if event_type == SYNC:
            self.synced.add(kind)

    def _apply_simple(
        self, raw: dict[str, Any], event_type: str, store: dict[str, Any], parse: Callable[..., Any], key: str
    ) -> None:
        if event_type == "DELETED":
            store.pop(key, None)
            return
        try:
            store[key] = parse(raw, "watch")
        except InputError as exc:
            log.warning("ignoring %s", exc)
            store.pop(key, None)

    def _apply_nodes(self, event_type: str, items: list[dict[str, Any]]) -> None:
        if event_type == SYNC:
            self.nodes.clear()
        for raw in items:
            name = _meta(raw, "name")
            if event_type == "DELETED":
                self.nodes.pop(name, None)
                continue
            try:
                self.nodes[name] = parse_node(raw, "watch")
            except InputError as exc:
                log.warning("ignoring node: %s", exc)
                self.nodes.pop(name, None)
        # ClusterState's node rows are fixed: rebuild before the next cycle. A node change may let
        # unschedulable pods fit (upstream NodeAdd/NodeUpdate queueing hints, simplified to "any").
        self._nodes_dirty = True
        self._batch_dirty = True
        self.queue.move_all()

    def _apply_pod(self, event_type: str, raw: dict[str, Any]) -> None:
        key = PodKey(f"{_meta(raw, 'namespace')}/{_meta(raw, 'name')}")
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
            self.queue.remove(key)
            self.batch_waiting.discard(key)
            self._unnominate(key)
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
                    for ev in self.handshakes.updated(pod, _now()):
                        self._evict_waited(ev)
            return
        if key in self.assumed:
            return  # an event older than our successful binding; the binding's event follows
        if pod.is_terminal or pod.deletion_timestamp or pod.scheduling_gates:
            self.queue.remove(key)
            self.batch_waiting.discard(key)
            self._unnominate(key)
        elif pod.scheduler_name == self.config.scheduler_name and is_batch_pod(pod):
            self.queue.remove(key)  # it may have joined a queue or group since
            self.batch_waiting.add(key)
            if old is None or _admission_inputs(old) != _admission_inputs(pod):
                self._batch_dirty = True  # not for status-only updates (our own condition patches)
        elif pod.scheduler_name == self.config.scheduler_name:
            self.batch_waiting.discard(key)
            self.queue.add(pod)
            self._update_nomination(old, pod)

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

    def _unnominate(self, key: PodKey) -> None:
        if self.scheduler is not None:
            self.scheduler.cluster.unnominate(key)

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
            cluster.add_pod(pod, target)

    def _release(self, key: PodKey, *, move: bool) -> None:
        cluster = self.scheduler.cluster if self.scheduler is not None else None
        if cluster is not None and key in cluster.placement:
            cluster.remove_pod(cluster.pods_on[cluster.placement[key]][key])
            if move:  # freed capacity may let unschedulable pods fit (AssignedPodDelete)
                self.queue.move_all()

    def _ensure_scheduler(self) -> Scheduler:
        if self.scheduler is None or self._nodes_dirty:
            placed = [p for p in self.pods.values() if p.node_name and not p.is_terminal]
            placed += [dataclasses.replace(pod, node_name=node) for pod, node in self.assumed.values()]
            cluster = ClusterState(list(self.nodes.values()), placed, self._device_models())
            self._seed_nominations(cluster)
            profile = profile_named(self.config.profile, self.config.scheduler_name)
            framework = Framework(profile, in_tree_registry(), list(self.pdbs.values()))
            self.scheduler = Scheduler(framework, cluster, seed=self.config.seed)
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

    # -- one scheduling cycle and its outcome -------------------------------------------------------

    def _schedule(self, pod: Pod) -> None:
        scheduler = self._ensure_scheduler()
        start = time.perf_counter()
        try:
            result = scheduler.schedule_one(pod, assume=True, preempt=True)
        except (
            Exception
        ) as exc:  # a plugin error aborts the cycle (upstream: an Error status), not the process
            log.exception("scheduling %s failed", pod.key)
            self._record_failure(pod, str(exc), REASON_SCHEDULER_ERROR)
            self.queue.requeue_backoff(pod)
            self.metrics.observe_attempt("error", time.perf_counter() - start)
            return
        if result.node is not None:
            self._bind(pod, result.node, result.allocation, start)  # the attempt is observed when it ends
            return
        self._unschedulable(pod, result)
        self.metrics.observe_attempt("unschedulable", time.perf_counter() - start)

    def _bind(self, pod: Pod, node: str, allocation: Assignment | None, start: float) -> None:
        """Start the binding cycle on a binder thread (upstream runs it in a goroutine) so the next pod's
        cycle does not wait for the API server; the outcome comes back as a ``BOUND`` event."""
        if not self.is_leader():
            self._forget(pod)
            self.queue.requeue_backoff(pod)
            self.metrics.observe_attempt("error", time.perf_counter() - start)
            return
        binding = self._assume_binding(pod, node, allocation)
        self._binder.submit(self._post_binding, pod, node, binding, start)

    def _assume_binding(self, pod: Pod, node: str, allocation: Assignment | None) -> dict[str, Any]:
        """Record ``pod`` as assumed on ``node`` until the watch shows it bound; its Binding object."""
        metadata: dict[str, Any] = {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid}
        assumed = pod
        if allocation:
            # The API server copies a Binding's annotations onto the pod in the same write that sets
            # nodeName, so the device choice and the node land together (or not at all).
            annotation = json.dumps(allocation, sort_keys=True, separators=(",", ":"))
            metadata["annotations"] = {ALLOCATION_ANNOTATION: annotation}
            assumed = dataclasses.replace(
                pod, annotations={**pod.annotations, ALLOCATION_ANNOTATION: annotation}
            )
        self.assumed[pod.key] = (assumed, node)
        return {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"kind": "Node", "name": node},
        }

    def _post_binding(self, pod: Pod, node: str, binding: dict[str, Any], start: float) -> ApiError | None:
        """Binder thread: POST the Binding (leadership re-checked first), report back to the loop."""
        path = pod_path(pod.namespace, pod.name, "binding")
        error: ApiError | None = None
        if not self.is_leader():
            error = ApiError(0, "NotLeader", "this replica no longer holds the lease", "POST", path)
        else:
            try:
                self.api.post(path, binding)
            except ApiError as exc:
                error = exc
        self.events.put((BOUND, "", [{"pod": pod, "node": node, "error": error, "start": start}]))
        return error

    def _post_gang_bindings(self, members: list[tuple[Pod, str, dict[str, Any]]], start: float) -> None:
        """Binder thread: a gang's Bindings one after another; after a failure the remaining members are
        not posted (reported as ``GangMemberFailed``) so the loop forgets their placements."""
        failed: tuple[Pod, ApiError] | None = None
        for pod, node, binding in members:
            if failed is None:
                error = self._post_binding(pod, node, binding, start)
                failed = (pod, error) if error is not None else None
                continue
            path = pod_path(pod.namespace, pod.name, "binding")
            why = f"gang member {failed[0].key}'s binding failed ({failed[1].message or failed[1].reason})"
            skipped = ApiError(0, GANG_MEMBER_FAILED, why, "POST", path)
            self.events.put((BOUND, "", [{"pod": pod, "node": node, "error": skipped, "start": start}]))

    def _bind_done(self, pod: Pod, node: str, error: ApiError | None, start: float) -> None:
        """The binding cycle's outcome, on the scheduling thread (upstream ``handleBindingCycleError``)."""
        if error is None:
            self.queue.remove(pod.key)
            log.info("bound %s to %s", pod.key, node)
            note = f"Successfully assigned {pod.namespace}/{pod.name} to {node}"
            self._event(pod, "Normal", "Scheduled", "Binding", note)
            self.metrics.observe_attempt("scheduled", time.perf_counter() - start)
            return
        self.metrics.observe_attempt("error", time.perf_counter() - start)
        log.warning("binding %s to %s failed: %s", pod.key, node, error)
        if pod.key not in self.assumed:
            return  # the watch already showed the pod bound (or deleted): nothing to undo or retry
        self._forget(pod)
        if error.status == 404:
            return  # the pod is gone; its DELETED event follows
        if error.reason == GANG_MEMBER_FAILED:
            message = f"not bound: {error.message}; the gang is retried"
        else:
            message = f'running Bind plugin "{DEFAULT_BINDER}": {error.message or error.reason}'
        self._record_failure(pod, message, REASON_SCHEDULER_ERROR)
        if is_batch_pod(pod):
            self.batch_waiting.add(pod.key)
            self._batch_dirty = True
        else:
            self.queue.requeue_backoff(pod)

    def _forget(self, pod: Pod) -> None:
        """Undo the core's assume (upstream ``Cache.ForgetPod``)."""
        self.assumed.pop(pod.key, None)
        self._release(pod.key, move=False)

    def _admit_batch(self) -> None:
        """One queue admission cycle (``live.batch``) when something it depends on changed — at most once
        per initial backoff — or after pods waited ``MAX_IN_UNSCHEDULABLE_S`` (as unschedulable pods)."""
        mono = time.monotonic()
        due = self._batch_dirty or mono - self._batch_last >= MAX_IN_UNSCHEDULABLE_S
        if (
            not self.batch_waiting or not due or mono - self._batch_last < self.config.initial_backoff_s
            or not self.synced >= self.batch_synced or not self.is_leader()
        ):  # fmt: skip
            return
        self._batch_dirty = False
        self._batch_last = mono
        scheduler = self._ensure_scheduler()
        start = time.perf_counter()
        waiting = [self.pods[k] for k in sorted(self.batch_waiting) if k in self.pods]
        try:
            cycle = self.batch.cycle(scheduler, self.pods, waiting, self.assumed, _now())
        except Exception as exc:  # a plugin error aborts the cycle, not the process
            log.exception("queue admission failed")
            self._nodes_dirty = True  # the session may have left placements in the state: rebuild it
            for pod in waiting:
                self._record_failure(pod, str(exc), REASON_SCHEDULER_ERROR)
            return
        for gang in cycle.admitted:
            self._bind_admitted(gang, start)
        if cycle.preempting is not None:
            self._preempt_for_workload(cycle.preempting)
        elapsed = time.perf_counter() - start
        for item in cycle.waiting:
            self._record_failure(item.pod, item.message, REASON_UNSCHEDULABLE)
            self.metrics.observe_attempt("unschedulable", elapsed)

    def _record_usage(self) -> None:
        """Leader only: write each decayed queue's consumed usage to its GpuQueue status every sampling
        interval (``live.fair_usage``); a new leader first forgets what it kept and seeds from status."""
        if not self.is_leader():
            self._usage_leader = False
            return
        if not self.synced >= self.batch_synced:
            return
        if not self._usage_leader:
            self._usage_leader = True
            self.batch.usage.reset()
        for name, patch in self.batch.usage_to_record(self.pods, self.assumed, _now()):
            try:
                self.api.patch(status_path(name), patch, MERGE_PATCH)
            except ApiError as exc:
                log.warning("recording the consumed usage of GpuQueue %s failed: %s", name, exc)
                continue
            afs = patch["status"]["fairSharing"]["admissionFairSharingStatus"]
            log.info(
                "GpuQueue %s: consumed %s as of %s", name,
                ", ".join(f"{r}={q}" for r, q in afs["consumedResources"].items()), afs["lastUpdate"],
            )  # fmt: skip

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
            preempting.workload, preempting.queue, preempting.members, victims, _now(), time.monotonic()
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

    def _bind_admitted(self, gang: Admitted, start: float) -> None:
        """Bind an admitted workload: every member's placement was decided in this cycle (and is assumed);
        only now are the Bindings issued, in one binder task that stops at the first failure."""
        if not self.is_leader():
            for pod, _, _ in gang.members:
                self._forget(pod)
            return
        members = [
            (pod, node, self._assume_binding(pod, node, devices)) for pod, node, devices in gang.members
        ]
        for pod, _, _ in members:
            self.batch_waiting.discard(pod.key)
        log.info("admitted %s: %s", gang.workload, ", ".join(f"{p.key}→{n}" for p, n, _ in gang.members))
        self._binder.submit(self._post_gang_bindings, members, start)

    def _unschedulable(self, pod: Pod, result: ScheduleResult) -> None:
        nominated = ""
        clear = result.clears_nomination and bool(pod.nominated_node_name)
        wait = self.handshakes.waits.get(pod.key) if self.handshakes is not None else None
        if wait is not None:
            # its victims are checkpointing: keep the room, start no second preemption
            if self.scheduler is not None:
                self.scheduler.cluster.nominate(pod, wait.node)
            clear = False
        elif result.victims and result.nominated_node and self.is_leader():
            if self.handshakes is not None:
                nominated = self._request_checkpoints(pod, result)
            else:
                nominated = self._preempt(pod, result)
            if not nominated:  # an eviction was refused: the core's nomination does not hold
                self._unnominate(pod.key)
        self._record_failure(pod, result.message, REASON_UNSCHEDULABLE, nominated, clear)
        self.queue.requeue_unschedulable(pod)

    def _preempt(self, pod: Pod, result: ScheduleResult) -> str:
        """Evict the victims through the Eviction API; the nominated node if every eviction went through."""
        now = _now()
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
        wait = self.handshakes.start(pod, result.nominated_node, result.victims, _now(), time.monotonic())
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
                self.pods.values(), self.config.scheduler_name, _now(), time.monotonic(), _workload_of
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
        for ev in self.handshakes.due(_now(), time.monotonic()):
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

    def _clear_nomination(self, pod: Pod) -> None:
        """Remove ``status.nominatedNodeName`` (a strategic-merge null); a failure is logged, not fatal."""
        try:
            self.api.patch(
                pod_path(pod.namespace, pod.name, "status"), {"status": {"nominatedNodeName": None}}
            )
        except ApiError as exc:
            log.warning("clearing the nomination of %s failed: %s", pod.key, exc)

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
        transition = old[3] if old[0] == "False" and old[3] else rfc3339(_now())
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

    def _publish_depths(self) -> None:
        depths = self.queue.depths()
        # pods waiting for queue admission wait for a cluster event, as unschedulablePods do
        depths["unschedulable"] += len(self.batch_waiting)
        self.metrics.set_queue_depths(depths)
        self.metrics.set_leader(self.is_leader())


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


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


def _admission_inputs(pod: Pod) -> tuple[Any, ...]:
    """What a queue admission decision reads from a pending pod (a change of only its status is none)."""
    return (pod.labels, pod.annotations, pod.requests, pod.priority, pod.scheduling_gates, pod.uid)


def _meta(raw: dict[str, Any], key: str) -> str:
    metadata = raw.get("metadata")
    value = metadata.get(key) if isinstance(metadata, dict) else None
    return value if isinstance(value, str) else ""


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
