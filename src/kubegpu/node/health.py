"""NVML health watcher: XID critical-error events become ``HealthEvent``s for the plugins (R3.3, R16).

Runs one thread that registers every GPU for ``nvmlEventTypeXidCriticalError`` and waits on the event
set, as the NVIDIA device plugin's ``checkHealth`` does. What an event *means* (application XIDs that
leave the GPU healthy, ``DP_DISABLE_HEALTHCHECKS``, MIG instances) is decided by
``kubegpu.devices.health``; this module only turns NVML events into values. A GPU that cannot register
for events is marked Unhealthy, as upstream does, by reporting ``HealthEvent(uuid, xid=-1)``: no XID is
negative, so no skip list contains it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kubegpu.devices.health import HealthEvent
from kubegpu.node.discovery import load_pynvml, text_of

log = logging.getLogger(__name__)

REGISTRATION_FAILED_XID = -1


class NvmlHealthWatcher:
    """Calls ``on_event`` from a background thread for every XID critical error NVML reports."""

    def __init__(self, on_event: Callable[[HealthEvent], object], wait_ms: int = 5000) -> None:
        self._on_event = on_event
        self._wait_ms = wait_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="nvml-health", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        nvml = load_pynvml()
        nvml.nvmlInit()
        try:
            event_set = nvml.nvmlEventSetCreate()
            try:
                self._register(nvml, event_set)
                while not self._stop.is_set():
                    self._wait_once(nvml, event_set)
            finally:
                nvml.nvmlEventSetFree(event_set)
        finally:
            nvml.nvmlShutdown()

    def _register(self, nvml: Any, event_set: Any) -> None:
        for i in range(nvml.nvmlDeviceGetCount()):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            uuid = text_of(nvml.nvmlDeviceGetUUID(h))
            try:
                nvml.nvmlDeviceRegisterEvents(h, nvml.nvmlEventTypeXidCriticalError, event_set)
            except nvml.NVMLError as exc:
                log.warning("GPU %s cannot report XID events (%s): marking it Unhealthy", uuid, exc)
                self._on_event(HealthEvent(uuid=uuid, xid=REGISTRATION_FAILED_XID))

    def _wait_once(self, nvml: Any, event_set: Any) -> None:
        try:
            data = nvml.nvmlEventSetWait_v2(event_set, self._wait_ms)
        except nvml.NVMLError_Timeout:
            return
        except nvml.NVMLError as exc:
            log.warning("waiting for NVML events failed: %s", exc)
            return
        if data.eventType != nvml.nvmlEventTypeXidCriticalError:
            return
        try:
            uuid: str | None = text_of(nvml.nvmlDeviceGetUUID(data.device))
        except nvml.NVMLError:
            uuid = None  # upstream: an event naming no device marks every device Unhealthy
        gi = getattr(data, "gpuInstanceId", None)
        # NVML reports 0xFFFFFFFF when the event is not tied to a GPU instance.
        self._on_event(
            HealthEvent(uuid=uuid, xid=int(data.eventData), gpu_instance=gi if gi != 0xFFFFFFFF else None)
        )
