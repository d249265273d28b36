"""The binding cycle: ``POST pods/<name>/binding`` on binder threads, its outcome applied back on the
scheduling thread (upstream ``bindingCycle`` / ``handleBindingCycleError``).

Owns: the binder threads' work, gang bindings, what a failed binding records. May not import the
preemption, cache or admission parts, nor another face.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kubegpu.kube.client import ApiError
from kubegpu.live.assumed import AssumedPods
from kubegpu.live.batch import is_batch_pod
from kubegpu.live.state import BOUND, REASON_SCHEDULER_ERROR, pod_path
from kubegpu.model.objects import Pod
from kubegpu.scheduler.device_ledger import Assignment

log = logging.getLogger(__name__)

GANG_MEMBER_FAILED = "GangMemberFailed"  # not an API reason: a member not bound because another failed
DEFAULT_BINDER = "DefaultBinder"
BIND_WORKERS = 16
# not an API reason: the read-back after a failed binding found the pod bound to another node
ALREADY_BOUND = "AlreadyBound"


class Binder(AssumedPods):
    def _bind(self, pod: Pod, node: str, allocation: Assignment | None, start: float) -> None:
        """Start the binding cycle on a binder thread (upstream runs it in a goroutine) so the next pod's
        cycle does not wait for the API server; the outcome comes back as a ``BOUND`` event."""
        if not self.is_leader():
            self._forget(pod)
            self._attempt_failed(pod, start)
            return
        binding = self._assume_binding(pod, node, allocation)
        self._binder.submit(self._post_binding, pod, node, binding, start)

    def _attempt_failed(self, pod: Pod, start: float) -> None:
        """A scheduling attempt that ended in an error (not a verdict): back off, count it."""
        self.queue.requeue_backoff(pod)
        self.metrics.observe_attempt("error", time.perf_counter() - start)

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
                error = self._read_back(pod, node, exc)
        self.events.put((BOUND, "", [{"pod": pod, "node": node, "error": error, "start": start}]))
        return error

    def _read_back(self, pod: Pod, node: str, error: ApiError) -> ApiError | None:
        """Binder thread, after a failed or unanswered POST: read the pod back so it is bound exactly once.
        A lost answer (a timeout, a dropped connection, a 5xx after the write) may hide a binding that
        happened: bound to ``node`` means ours went through (``None``: success, nothing to retry); bound
        anywhere else is ``ALREADY_BOUND`` (forgotten, never retried); unbound, gone, recreated or
        unreadable keeps the POST's error (a retry is safe: the API server answers 409 to a second
        binding of a bound pod)."""
        if error.status == 404:
            return error
        try:
            stored = self.api.get(pod_path(pod.namespace, pod.name))
        except ApiError as exc:
            log.warning("reading %s back after its binding failed: %s", pod.key, exc)
            return error
        meta, spec = stored.get("metadata"), stored.get("spec")
        uid = meta.get("uid") if isinstance(meta, dict) else None
        bound_to = spec.get("nodeName") if isinstance(spec, dict) else None
        if uid != pod.uid or not isinstance(bound_to, str) or not bound_to:
            return error
        if bound_to == node:
            log.info("binding %s: %s, but the pod is bound to %s: counted as bound", pod.key, error, node)
            return None
        why = f'pod {pod.name} is already assigned to node "{bound_to}"'
        return ApiError(error.status, ALREADY_BOUND, why, error.method, error.path)

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
        if error.reason == ALREADY_BOUND:
            return  # bound by someone else (another replica, by hand): its update event places it
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
