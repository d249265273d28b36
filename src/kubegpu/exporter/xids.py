"""The last XID per GPU and the health it implies, fed by the node agent's NVML event watcher (R13.3, R16).

``XidLog.on_event`` is handed to ``kubegpu.node.health.NvmlHealthWatcher``; the collector reads
``counters()`` for ``DCGM_FI_DEV_XID_ERRORS`` (a gauge with the *last* XID code, 0 until one is seen,
as DCGM reports it) and ``apply()`` to mark devices Unhealthy by ``kubegpu.devices.apply_health_event``,
the same rule the device plugin uses. An event that names no GPU applies to every GPU. The watcher's
"could not register" event (XID -1) is no XID: it marks health but never becomes the gauge's value.

Must not: call NVML.
"""

from __future__ import annotations

import threading

from kubegpu.devices import NodeInventory, apply_health_event
from kubegpu.devices import dcgm_fields as F
from kubegpu.devices.health import HealthChecks, HealthEvent


class XidLog:
    """Thread-safe record of every health event since the exporter started."""

    def __init__(self, disable_healthchecks: str = "") -> None:
        self._lock = threading.Lock()
        self._events: list[HealthEvent] = []
        self._checks = HealthChecks.parse(disable_healthchecks)  # (parsed once, not per event)

    def on_event(self, event: HealthEvent) -> None:
        with self._lock:
            self._events.append(event)

    def counters(self, inv: NodeInventory) -> dict[str, dict[str, float]]:
        """GPU UUID -> {DCGM_FI_DEV_XID_ERRORS: last XID, or 0 when none was seen}."""
        with self._lock:
            events = list(self._events)
        last: dict[str, int] = {g.uuid: 0 for g in inv.devices}
        for e in events:
            if e.xid < 0:
                continue
            for uuid in last if e.uuid is None else [e.uuid]:
                if uuid in last:
                    last[uuid] = e.xid
        return {uuid: {F.XID_ERRORS.name: float(xid)} for uuid, xid in last.items()}

    def apply(self, inv: NodeInventory) -> NodeInventory:
        """The inventory with every recorded event's health effect applied."""
        with self._lock:
            events = list(self._events)
        for e in events:
            inv = apply_health_event(inv, e, self._checks)
        return inv
