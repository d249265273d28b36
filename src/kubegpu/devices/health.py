"""Which NVML events make a device Unhealthy, and the inventory after one (R3.3, R13.3, R16).

Mirrors the NVIDIA device plugin's ``checkHealth``: an XID critical-error event marks its GPU Unhealthy
unless the XID is an application error that leaves the GPU usable (13 graphics engine exception,
31 GPU memory page fault, 43 GPU stopped processing, 45 preemptive cleanup, 68 video processor
exception), or the operator skipped it through ``DP_DISABLE_HEALTHCHECKS`` (``all`` or ``xids``
disables XID checks; a comma-separated list of numbers skips those XIDs too). An event without a UUID
marks every device Unhealthy, as upstream does. An event that names a GPU instance on a MIG-enabled GPU
marks only that MIG device. There is no way back to Healthy short of a new reading, as upstream.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kubegpu.devices.inventory import GpuDevice, Health, NodeInventory

APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68})


@dataclass(frozen=True, slots=True)
class HealthEvent:
    """One health-relevant NVML event (``nvmlEventTypeXidCriticalError``) or NVML failure."""

    uuid: str | None  # GPU UUID, None when NVML could not say which GPU
    xid: int
    gpu_instance: int | None = None  # GPU-instance id of a MIG device, when NVML gives one

    @property
    def reason(self) -> str:
        return f"XID {self.xid}"


def xid_is_critical(xid: int, disable_healthchecks: str = "") -> bool:
    """Whether this XID marks a device Unhealthy under the given ``DP_DISABLE_HEALTHCHECKS`` value."""
    value = disable_healthchecks.lower()
    if value == "all" or "xids" in value:
        return False
    extra = {int(part) for part in value.split(",") if part.strip().isdigit()}
    return xid not in APPLICATION_XIDS and xid not in extra


def apply_health_event(
    inv: NodeInventory, event: HealthEvent, disable_healthchecks: str = ""
) -> NodeInventory:
    """The inventory after ``event``; unchanged when the event does not affect health."""
    if not xid_is_critical(event.xid, disable_healthchecks):
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
