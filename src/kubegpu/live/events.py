"""Events about pods, written off the scheduling thread (client-go's ``events.EventBroadcaster``).

``EventRecorder.record`` only queues; a worker thread writes ``events.k8s.io/v1`` Events in order, as
kube-scheduler's broadcaster does, so a scheduling cycle never waits on an event write. An Event carries
``reportingController`` (the scheduler name), ``reportingInstance`` (``<controller>-<hostname>``),
``action``, ``reason``, ``regarding`` (the pod), ``note`` and ``type``, and is named
``<pod>.<unix nanoseconds in hex>``. A repeat of the same (pod, reason, note) PATCHes the first Event's
``series`` (``count``, ``lastObservedTime``) instead of creating another. Only the latest 10,000 series
are remembered, so a long-running scheduler does not grow without bound. Write failures are logged and
dropped: events are best effort, as upstream.
"""

from __future__ import annotations

import datetime as dt
import logging
import queue
import socket
import threading
import time
from dataclasses import dataclass

from kubegpu.kube.client import MERGE_PATCH, ApiError, KubeApi
from kubegpu.kube.leader import micro_time

log = logging.getLogger(__name__)

MAX_SERIES = 10_000


@dataclass(frozen=True)
class PodRef:
    namespace: str
    name: str
    uid: str


@dataclass(frozen=True)
class _Pending:
    pod: PodRef
    event_type: str
    reason: str
    action: str
    note: str


class EventRecorder:
    def __init__(self, api: KubeApi, controller: str) -> None:
        self.api = api
        self.controller = controller
        self.instance = f"{controller}-{socket.gethostname()}"
        self._queue: queue.Queue[_Pending | None] = queue.Queue()
        self._series: dict[tuple[str, str, str], tuple[str, int]] = {}
        self._thread = threading.Thread(target=self._run, name="event-recorder", daemon=True)
        self._thread.start()

    def record(self, pod: PodRef, event_type: str, reason: str, action: str, note: str) -> None:
        self._queue.put(_Pending(pod, event_type, reason, action, note))

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued (bounded by ``timeout``), then stop the worker."""
        self._queue.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            try:
                self._write(item)
            except ApiError as exc:
                log.warning(
                    "recording event %s for %s/%s failed: %s",
                    item.reason,
                    item.pod.namespace,
                    item.pod.name,
                    exc,
                )

    def _write(self, item: _Pending) -> None:
        now = dt.datetime.now(dt.UTC)
        pod = item.pod
        key = (pod.uid, item.reason, item.note)
        existing = self._series.get(key)
        collection = f"/apis/events.k8s.io/v1/namespaces/{pod.namespace}/events"
        if existing is not None:
            name, count = existing
            series = {"count": count + 1, "lastObservedTime": micro_time(now)}
            self.api.patch(f"{collection}/{name}", {"series": series}, MERGE_PATCH)
            self._series[key] = (name, count + 1)
            return
        name = f"{pod.name}.{time.time_ns():x}"
        event = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": pod.namespace},
            "eventTime": micro_time(now),
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": item.action,
            "reason": item.reason,
            "regarding": {
                "kind": "Pod",
                "apiVersion": "v1",
                "namespace": pod.namespace,
                "name": pod.name,
                "uid": pod.uid,
            },
            "note": item.note,
            "type": item.event_type,
        }
        self.api.post(collection, event)
        self._series[key] = (name, 1)
        if len(self._series) > MAX_SERIES:
            del self._series[next(iter(self._series))]
