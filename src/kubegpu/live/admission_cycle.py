"""Queue and gang admission cycles on the scheduling thread (``live.batch`` decides; this part binds the
admitted, preempts for a workload, and writes the decayed queue usage to GpuQueue status).

Owns: when an admission cycle runs and what its outcome writes. May not import ``live.scheduler``, nor
another face.
"""

from __future__ import annotations

import logging
import time

from kubegpu.backoff import POD_MAX_IN_UNSCHEDULABLE_S
from kubegpu.kube.client import MERGE_PATCH, ApiError
from kubegpu.live.batch import Admitted
from kubegpu.live.cache import InformerCache
from kubegpu.live.fair_usage import status_path
from kubegpu.live.state import REASON_SCHEDULER_ERROR, REASON_UNSCHEDULABLE, utc_now

log = logging.getLogger(__name__)


class AdmissionCycle(InformerCache):
    def _admit_batch(self) -> None:
        """One queue admission cycle (``live.batch``) when something it depends on changed — at most once
        per initial backoff — or after pods waited ``POD_MAX_IN_UNSCHEDULABLE_S`` (as unschedulable pods)."""
        mono = time.monotonic()
        due = self._batch_dirty or mono - self._batch_last >= POD_MAX_IN_UNSCHEDULABLE_S
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
            cycle = self.batch.cycle(scheduler, self.pods, waiting, self.assumed, utc_now())
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
        for name, patch in self.batch.usage_to_record(self.pods, self.assumed, utc_now()):
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
