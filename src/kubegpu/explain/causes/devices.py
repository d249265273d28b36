"""GpuDeviceFit's reason (``DeviceRefused``): the device-level evidence the refusal carries (free
devices per NUMA node, the shared-replica limit, …), recomputed for the node with the same choice."""

from __future__ import annotations

from kubegpu.explain.causes.base import Context, Hooks
from kubegpu.scheduler.device_ledger import choose
from kubegpu.scheduler.reasons import DeviceRefused, Reason


def device_evidence(ctx: Context, reason: DeviceRefused, idx: int) -> list[str]:
    devices = ctx.engine.cluster.devices
    model = devices.models[idx]
    if model is None:
        return []
    _, refusal = choose(ctx.pod, model, devices.taken(idx))
    return [refusal.evidence] if refusal is not None else []


HOOKS: dict[type[Reason], Hooks] = {DeviceRefused: Hooks(device_evidence)}
