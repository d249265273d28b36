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
  bound twice; a failed or unanswered binding reads the pod back before any retry (``live.binder``).
* **parts** (one concern each, chained as base classes on the one scheduling thread): ``live.state``
  (names, attributes, shared writes), ``live.assumed``, ``live.binder``, ``live.preemption``,
  ``live.cache`` (informer events), ``live.admission_cycle`` (queues and gangs); this module keeps the
  loop, the per-pod cycle and its unschedulable outcome.
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

import logging
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubegpu.kube.client import KubeApi
from kubegpu.kube.informer import Reflector
from kubegpu.kube.leader import LeaderElector
from kubegpu.kube.listed_kinds import BATCH_LISTED_KINDS, LISTED_KINDS
from kubegpu.live.admission_cycle import AdmissionCycle
from kubegpu.live.batch import BatchAdmission
from kubegpu.live.binder import BIND_WORKERS
from kubegpu.live.checkpoint import Handshakes
from kubegpu.live.events import EventRecorder
from kubegpu.live.metrics import SchedulerMetrics
from kubegpu.live.queue import SchedulingQueue
from kubegpu.live.state import (
    BATCH_KINDS,
    DEFAULT_SCHEDULER_NAME,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    REQUIRED_KINDS,
    WATCHED_KINDS,
    LiveConfig,
)
from kubegpu.model.default_spread import SpreadOwners
from kubegpu.model.objects import Node, Pod, PodDisruptionBudget, PodKey, PriorityClass
from kubegpu.model.volumes import VolumeObjects
from kubegpu.scheduler.schedule_one import Scheduler, ScheduleResult

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_SCHEDULER_NAME", "WATCHED_KINDS", "LiveConfig", "LiveScheduler"]


class LiveScheduler(AdmissionCycle):
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
        self.volumes = VolumeObjects()  # the storage plugins read it in place: events need no rebuild
        self.spread_owners = SpreadOwners()  # PodTopologySpread's default selector reads it in place too
        self.assumed: dict[PodKey, tuple[Pod, str]] = {}  # bound by us, not yet seen bound by the watch
        self.synced: set[str] = set()
        self._unsynced_said: frozenset[str] = frozenset()  # the missing caches last logged
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
        self.dra_left: set[str] = set()
        self._batch_dirty = False
        self._batch_last = 0.0  # monotonic time of the last admission cycle
        self._usage_leader = False  # decayed usage seeded from status since this replica became leader
        watched = [k for k in (*LISTED_KINDS, *BATCH_LISTED_KINDS) if k.kind in WATCHED_KINDS]
        # what an admission cycle waits for: the scheduling caches and every batch kind's
        self.batch_synced = REQUIRED_KINDS | {k.path for k in watched if k.kind in BATCH_KINDS}
        # scheduling waits for every cache it filters with, as kube-scheduler's WaitForCacheSync: without the
        # storage kinds a pod's unbound claim would go unchecked (an optional kind not served syncs empty)
        self.scheduling_synced = REQUIRED_KINDS | {k.kind for k in watched if k.kind not in BATCH_KINDS}
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

    # -- one step of the loop -----------------------------------------------------------------------

    def step(self, wait_s: float) -> None:
        """Apply pending informer events, then run at most one scheduling cycle (or wait for work)."""
        self._drain_events(block_s=0.0)
        self._advance_handshakes()
        self._record_usage()
        self._admit_batch()
        pod = self.queue.pop() if self._caches_synced() and self.is_leader() else None
        self._publish_depths()
        if pod is None:
            ready_in = self.queue.next_ready_in()
            self._drain_events(block_s=wait_s if ready_in is None else min(wait_s, ready_in))
            return
        self._schedule(pod)

    def _caches_synced(self) -> bool:
        """Every scheduling cache listed; while not, which are missing is logged once per change, as
        client-go's WaitForNamedCacheSync logs "Waiting for caches to sync for <name>"."""
        missing = self.scheduling_synced - self.synced
        if missing != self._unsynced_said:
            self._unsynced_said = frozenset(missing)
            if missing:
                log.info("waiting for caches to sync: %s", ", ".join(sorted(missing)))
        return not missing

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
            self._attempt_failed(pod, start)
            return
        if result.node is not None:
            self._bind(pod, result.node, result.allocation, start)  # the attempt is observed when it ends
            return
        self._unschedulable(pod, result)
        self.metrics.observe_attempt("unschedulable", time.perf_counter() - start)

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

    def _publish_depths(self) -> None:
        depths = self.queue.depths()
        # pods waiting for queue admission wait for a cluster event, as unschedulablePods do
        depths["unschedulable"] += len(self.batch_waiting)
        self.metrics.set_queue_depths(depths)
        self.metrics.set_leader(self.is_leader())
