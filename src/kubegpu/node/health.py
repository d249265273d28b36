"""NVML health watcher and monitor: XID events to the plugins, and quiet devices back to Healthy (R3.3, R16).

``NvmlHealthWatcher`` runs one thread that registers every GPU for ``nvmlEventTypeXidCriticalError`` and
waits on the event set, as the NVIDIA device plugin's ``checkHealth`` does. What an event *means*
(application XIDs that leave the GPU healthy, ``DP_DISABLE_HEALTHCHECKS``, MIG instances, when a device
may come back) is decided by ``kubegpu.devices.health``; this module only turns NVML events into values
and runs the clock. As upstream v0.20.0 ``internal/rm/health.go``: a GPU that cannot register for events
is marked Unhealthy (``HealthEvent(uuid, xid=NO_EVENTS_XID)``) unless NVML answers NotSupported, which
is only a warning; a wait on the event set that fails other than by timing out marks every device
Unhealthy (``HealthEvent(None, xid=WAIT_FAILED_XID)``).

``HealthMonitor`` sits between the watcher and the plugins: it forwards every event, keeps the
``Recovery`` state, and on each tick probes the devices that have been quiet long enough, returning
those that answer to Healthy (upstream has no way back short of a restart).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kubegpu.devices.health import (
    DEFAULT_CHECKS,
    NO_EVENTS_XID,
    WAIT_FAILED_XID,
    DeviceKey,
    HealthChecks,
    HealthEvent,
    Recovery,
)
from kubegpu.devices.inventory import NodeInventory
from kubegpu.node.discovery import load_pynvml, text_of

log = logging.getLogger(__name__)


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
            except nvml.NVMLError_NotSupported:
                log.warning("Device %s is too old to support healthchecking.", uuid)  # upstream's words
            except nvml.NVMLError as exc:
                log.warning("GPU %s cannot report XID events (%s): marking it Unhealthy", uuid, exc)
                self._on_event(HealthEvent(uuid=uuid, xid=NO_EVENTS_XID))

    def _wait_once(self, nvml: Any, event_set: Any) -> None:
        try:
            data = nvml.nvmlEventSetWait_v2(event_set, self._wait_ms)
        except nvml.NVMLError_Timeout:
            return
        except nvml.NVMLError as exc:
            log.warning("waiting for NVML events failed: %s; marking all devices Unhealthy", exc)
            self._on_event(HealthEvent(uuid=None, xid=WAIT_FAILED_XID))
            # upstream waits again at once; a pause keeps a wait that keeps failing from spinning a core
            self._stop.wait(min(self._wait_ms / 1000, 1.0))
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


def nvml_probe(key: DeviceKey) -> bool:
    """Whether NVML still answers for the device's GPU: its handle, PCI info and memory info.

    These are the queries that fail once a GPU fell off the bus (XID 79) or needs a reset (NVML then
    answers GpuIsLost / ResetRequired), so a GPU that answers them is fit to be advertised again. A MIG
    device is probed through its GPU: NVML's GPU-instance queries want privileges the agent runs without.
    """
    nvml = load_pynvml()
    try:
        nvml.nvmlInit()
    except nvml.NVMLError:
        return False
    try:
        h = nvml.nvmlDeviceGetHandleByUUID(key[0])
        nvml.nvmlDeviceGetPciInfo(h)
        nvml.nvmlDeviceGetMemoryInfo(h)
    except nvml.NVMLError as exc:
        log.info("probe of %s failed: %s", key, exc)
        return False
    finally:
        nvml.nvmlShutdown()
    return True


class HealthMonitor:
    """Forwards health events to the plugins and brings quiet devices back after a successful probe.

    ``report`` and ``recover`` fan out to every plugin (``DevicePluginServer.report``/``.recover``);
    ``probe`` and ``clock`` are injectable so tests run on virtual time without NVML.
    """

    def __init__(
        self,
        inventory: NodeInventory,
        report: Callable[[HealthEvent], object],
        recover: Callable[[DeviceKey], object],
        quiet_seconds: float | None,
        probe: Callable[[DeviceKey], bool] = nvml_probe,
        clock: Callable[[], float] = time.monotonic,
        checks: HealthChecks = DEFAULT_CHECKS,
    ) -> None:
        self._inventory = inventory
        self._checks = checks
        self._report = report
        self._recover = recover
        self._probe = probe
        self._clock = clock
        self._recovery = Recovery(quiet_seconds)
        self._lock = threading.Lock()

    def on_event(self, event: HealthEvent) -> None:
        """Record ``event`` (restarting its devices' quiet period) and pass it to the plugins."""
        # One lock around state and fan-out keeps plugins seeing events and recoveries in one order.
        with self._lock:
            self._recovery = self._recovery.after_event(self._inventory, event, self._clock(), self._checks)
            self._report(event)

    def tick(self) -> list[DeviceKey]:
        """Probe every device quiet for the whole period; return those brought back to Healthy."""
        with self._lock:
            faults = self._recovery.last_fault
            due = [(key, faults[key]) for key in self._recovery.due(self._clock())]
        healed = []
        for key, fault_at in due:
            # Probing talks to NVML and may take a while, so it runs unlocked; events keep arriving.
            ok = self._probe(key)
            with self._lock:
                if self._recovery.last_fault.get(key) != fault_at:
                    continue  # a new XID arrived while probing: its quiet period starts again
                self._recovery = self._recovery.probed(key, ok, self._clock())
                if ok:
                    where = key[0] if key[1] is None else f"{key[0]} GPU instance {key[1]}"
                    log.warning("%s was quiet and answers NVML again: Healthy", where)
                    self._recover(key)
                    healed.append(key)
        return healed

    def run(self, done: threading.Event, interval: float = 1.0) -> None:
        """Tick every ``interval`` seconds until ``done`` is set (the agent runs this in a thread)."""
        while not done.wait(interval):
            self.tick()
