"""Which NVML events make a device Unhealthy, the inventory after one, and the way back (R3.3, R13.3, R16).

Mirrors the NVIDIA device plugin's ``checkHealth``: an XID critical-error event marks its GPU Unhealthy
unless the XID is an application error that leaves the GPU usable (13 graphics engine exception,
31 GPU memory page fault, 43 GPU stopped processing, 45 preemptive cleanup, 68 video processor
exception, 109 context switch timeout), or the operator skipped it through ``DP_DISABLE_HEALTHCHECKS``,
as v0.20.0 ``internal/rm/health.go`` reads it: a comma-separated, case-insensitive list in which an
element ``all`` or ``xids`` disables health checks entirely (``health_checks_disabled``: no watcher at all)
and numbers skip those XIDs too. ``DP_ENABLE_HEALTHCHECKS`` (v0.18.0+) lists XIDs that count even so
(the application XIDs included), ``all`` every XID; it overrides a skipped number but, as upstream's
``IsAllDisabled``, not a disabling ``all``. An event without a UUID, and an NVML wait that fails other
than by timing out, mark every device Unhealthy, as upstream does; a GPU that cannot register for events
is Unhealthy unless NVML says NotSupported (upstream: "too old to support healthchecking", a warning,
the device stays Healthy). An event that names a GPU instance on a MIG-enabled GPU marks only that MIG
device.

Beyond upstream (which keeps a device Unhealthy until the plugin restarts), ``Recovery`` returns a device
to Healthy once no critical XID has hit it for a quiet period and a probe of it succeeds. It is a pure
state machine over a caller's clock (``now`` in seconds), so tests drive it with virtual time;
``kubegpu.node.health.HealthMonitor`` runs it against NVML.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from kubegpu.devices.inventory import GpuDevice, Health, NodeInventory

APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68, 109})
# Reported for a GPU that cannot register for XID events (upstream marks it Unhealthy). No XID is
# negative, so no skip list contains it; and since such a GPU reports no events, a quiet period proves
# nothing about it: ``Recovery`` never brings it back.
NO_EVENTS_XID = -1
# Reported with no UUID when waiting on the event set fails other than by timing out (upstream marks every
# device Unhealthy: "Error waiting for event: …; Marking all devices as unhealthy").
WAIT_FAILED_XID = -2
_ALL = "all"  # the element of a list that stands for every XID

# A device health is tracked for: (GPU UUID, None) for a whole GPU, (GPU UUID, GPU-instance id) for a
# MIG device.
DeviceKey = tuple[str, int | None]


@dataclass(frozen=True, slots=True)
class HealthEvent:
    """One health-relevant NVML event (``nvmlEventTypeXidCriticalError``) or NVML failure."""

    uuid: str | None  # GPU UUID, None when NVML could not say which GPU
    xid: int
    gpu_instance: int | None = None  # GPU-instance id of a MIG device, when NVML gives one

    @property
    def reason(self) -> str:
        if self.xid == NO_EVENTS_XID:
            return "cannot register for XID events"
        if self.xid == WAIT_FAILED_XID:
            return "waiting for NVML events failed"
        return f"XID {self.xid}"


def _xid_list(value: str) -> set[int | str]:
    """upstream ``newHealthCheckXIDs``: ``{"all"}`` when an element is ``all`` or ``xids``, else the numbers
    (malformed elements ignored)."""
    out: set[int | str] = set()
    for part in value.lower().split(","):
        item = part.strip()
        if item in (_ALL, "xids"):
            return {_ALL}
        if item.isdigit():
            out.add(int(item))
    return out


@dataclass(frozen=True, slots=True)
class HealthChecks:
    """``DP_DISABLE_HEALTHCHECKS`` and ``DP_ENABLE_HEALTHCHECKS``, parsed once (upstream ``newHealthCheckXIDs``)
    and carried as one value to every place that judges an event."""

    disabled: frozenset[int | str] = frozenset()
    enabled: frozenset[int | str] = frozenset()

    @classmethod
    def parse(cls, disable_healthchecks: str = "", enable_healthchecks: str = "") -> HealthChecks:
        return cls(frozenset(_xid_list(disable_healthchecks)), frozenset(_xid_list(enable_healthchecks)))

    @property
    def all_off(self) -> bool:
        """Whether no health check runs at all (upstream ``IsAllDisabled``: ``checkHealth`` returns at once):
        the disable list has ``all``/``xids`` and the enable list does not have ``all``."""
        return _ALL in self.disabled and _ALL not in self.enabled

    def critical(self, xid: int) -> bool:
        """Whether this XID marks a device Unhealthy (upstream ``getDisabledHealthCheckXids`` and
        ``IsDisabled``). The negative markers (``NO_EVENTS_XID``, ``WAIT_FAILED_XID``) are in no list: they
        count unless checks are off."""
        if self.all_off:
            return False
        if _ALL in self.enabled or xid in self.enabled:
            return True
        return xid not in APPLICATION_XIDS and xid not in self.disabled


DEFAULT_CHECKS: Final = HealthChecks()  # neither variable set


def health_checks_disabled(disable_healthchecks: str, enable_healthchecks: str = "") -> bool:
    """``HealthChecks.all_off`` of the two variables' values."""
    return HealthChecks.parse(disable_healthchecks, enable_healthchecks).all_off


def xid_is_critical(xid: int, disable_healthchecks: str = "", enable_healthchecks: str = "") -> bool:
    """``HealthChecks.critical`` of the two variables' values."""
    return HealthChecks.parse(disable_healthchecks, enable_healthchecks).critical(xid)


def apply_health_event(
    inv: NodeInventory, event: HealthEvent, checks: HealthChecks = DEFAULT_CHECKS
) -> NodeInventory:
    """The inventory after ``event``; unchanged when the event does not affect health."""
    if not checks.critical(event.xid):
        return inv
    devices = tuple(_mark(g, event) if event.uuid is None or g.uuid == event.uuid else g for g in inv.devices)
    return dataclasses.replace(inv, devices=devices)


def _mark(g: GpuDevice, event: HealthEvent) -> GpuDevice:
    if g.mig_enabled and event.gpu_instance is not None:
        migs = tuple(
            dataclasses.replace(m, health=Health.UNHEALTHY) if m.gi_id == event.gpu_instance else m
            for m in g.mig_devices
        )
        return dataclasses.replace(g, mig_devices=migs)
    return dataclasses.replace(g, health=Health.UNHEALTHY, health_reason=event.reason)


def affected_devices(inv: NodeInventory, event: HealthEvent) -> tuple[DeviceKey, ...]:
    """The devices ``event`` marks (by the rules of ``apply_health_event``), critical or not."""
    keys: list[DeviceKey] = []
    for g in inv.devices:
        if event.uuid is not None and g.uuid != event.uuid:
            continue
        if g.mig_enabled and event.gpu_instance is not None:
            keys.extend((g.uuid, m.gi_id) for m in g.mig_devices if m.gi_id == event.gpu_instance)
        else:
            keys.append((g.uuid, None))
    return tuple(keys)


def mark_healthy(inv: NodeInventory, key: DeviceKey) -> NodeInventory:
    """The inventory with the device ``key`` Healthy again (and its GPU's XID reason cleared)."""
    uuid, gi = key

    def heal(g: GpuDevice) -> GpuDevice:
        if g.uuid != uuid:
            return g
        if gi is None:
            return dataclasses.replace(g, health=Health.HEALTHY, health_reason="")
        migs = tuple(
            dataclasses.replace(m, health=Health.HEALTHY) if m.gi_id == gi else m for m in g.mig_devices
        )
        return dataclasses.replace(g, mig_devices=migs)

    return dataclasses.replace(inv, devices=tuple(heal(g) for g in inv.devices))


@dataclass(frozen=True, slots=True)
class Recovery:
    """Unhealthy devices that may come back, each with the time of the last critical XID that hit it.

    ``quiet_seconds`` is how long a device must go without a critical XID before it is probed;
    ``None`` keeps upstream's behaviour (never recover). A critical XID during the quiet period starts
    it again; a failed probe also starts it again, so a broken GPU is probed once per period, not in a
    tight loop.
    """

    quiet_seconds: float | None
    last_fault: Mapping[DeviceKey, float] = field(default_factory=dict)

    def after_event(
        self,
        inv: NodeInventory,
        event: HealthEvent,
        now: float,
        checks: HealthChecks = DEFAULT_CHECKS,
    ) -> Recovery:
        """The state after ``event`` arrived at ``now``; unchanged for XIDs that do not mark devices."""
        if not checks.critical(event.xid):
            return self
        keys = affected_devices(inv, event)
        faults = dict(self.last_fault)
        if event.xid == NO_EVENTS_XID:
            for key in keys:
                faults.pop(key, None)
        else:
            faults.update(dict.fromkeys(keys, now))
        return dataclasses.replace(self, last_fault=faults)

    def due(self, now: float) -> tuple[DeviceKey, ...]:
        """Devices quiet for the whole period, to be probed now."""
        if self.quiet_seconds is None:
            return ()
        quiet = self.quiet_seconds
        return tuple(k for k, t in self.last_fault.items() if now - t >= quiet)

    def probed(self, key: DeviceKey, ok: bool, now: float) -> Recovery:
        """The state after probing ``key`` at ``now``: forgotten (Healthy) when ``ok``, else a new period."""
        faults = dict(self.last_fault)
        if ok:
            faults.pop(key, None)
        elif key in faults:
            faults[key] = now
        return dataclasses.replace(self, last_fault=faults)
