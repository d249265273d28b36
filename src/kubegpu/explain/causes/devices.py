"""GpuDeviceFit's reason (``DeviceRefused``): the device-level evidence (free devices per NUMA node, the
shared-replica limit, …), recomputed for the node with the same choice, and advice per problem: each
refusal has its own layer at fault (kubelet's Topology Manager, the device plugin's sharing config, the
devices themselves) and so its own fix."""

from __future__ import annotations

from kubegpu.devices.sharing import SharingStrategy
from kubegpu.explain.causes.base import Advice, Context, Hooks
from kubegpu.explain.grants import plugin_version
from kubegpu.scheduler.device_ledger import choose
from kubegpu.scheduler.reasons import (
    NO_DEVICES,
    NUMA_UNALIGNED,
    REPLICAS_ON_FEWER_GPUS,
    SHARED_MORE_THAN_ONE,
    TOO_FEW_DEVICES,
    DeviceRefused,
    Reason,
)


def device_evidence(ctx: Context, reason: DeviceRefused, idx: int) -> list[str]:
    devices = ctx.engine.cluster.devices
    model = devices.models[idx]
    if model is None:
        return []
    # the refusal worded as the node's plugin release words it (the same verdict: a release refuses at
    # least what v0.20.0, the filter's model, refuses)
    _, refusal = choose(
        ctx.pod, model, devices.taken(idx), plugin_version=plugin_version(ctx.engine, model.node)
    )
    return [refusal.evidence] if refusal is not None else []


def _fix(reason: DeviceRefused) -> tuple[str, str]:
    res = ", ".join(reason.resources)
    if reason.problem == NUMA_UNALIGNED:
        return (
            f"kubelet's Topology Manager ({reason.policy}) admits a container only if its {res} sit on one NUMA "
            "node, and the free devices here are split across NUMA nodes. Ask for no more per container than one "
            "NUMA node holds, wait until one NUMA node has enough free, or use nodes whose policy allows wider "
            "affinity if locality does not matter for this job.",
            "kube-scheduler counts devices, not NUMA nodes: it would bind the pod here and kubelet would then "
            "fail it with TopologyAffinityError.",
        )
    if reason.problem == SHARED_MORE_THAN_ONE and reason.sharing == SharingStrategy.MPS:
        # internal/rm/rm.go ValidateRequest (v0.15-v0.19: MPS always refuses; v0.20.0, PR #1762: only while
        # failRequestsGreaterThanOne, default true); cmd/mps-control-daemon/mps/daemon.go sets the limits
        return (
            f"These nodes share {res} with MPS: the device plugin refuses a container asking for more than one "
            "replica (before v0.20.0 always; from v0.20.0 unless sharing.mps.failRequestsGreaterThanOne is false). "
            "Ask for 1 per container, or use nodes with whole GPUs if the job needs several.",
            "An MPS replica is a capped share of one GPU: the MPS control daemon limits each client to 1/replicas "
            "of the GPU's memory and active threads, per process and not per replica, so more replicas in one "
            "container add no memory or compute.",
        )
    if reason.problem == SHARED_MORE_THAN_ONE:
        return (
            f"These nodes time-slice {res} with failRequestsGreaterThanOne: the device plugin refuses a container "
            "asking for more than one replica. Ask for 1 per container, or use nodes with whole GPUs if the job "
            "needs several.",
            "A time-sliced replica is not a fraction of a GPU: more replicas in one container add no memory or "
            "compute.",
        )
    if reason.problem == REPLICAS_ON_FEWER_GPUS:
        return (
            f"The {res} replicas free here sit on fewer physical GPUs than the container asks for. Ask for 1 "
            "replica per container, or use nodes with whole GPUs.",
            "Replicas on one GPU share its memory and compute.",
        )
    if reason.problem == NO_DEVICES:
        return (
            f"The device plugin on these nodes advertises no {res} devices (the evidence lists what it does "
            f"advertise): request one of those, or run the pod where {res} is offered.",
            "",
        )
    assert reason.problem == TOO_FEW_DEVICES
    return (
        f"The node's count of {res} covers the request, but its device inventory has too few healthy free "
        "devices (the evidence gives the numbers): the count and the devices disagree. Check the devices' "
        "health and the device plugin on the node.",
        "",
    )


def device_advice(ctx: Context, reason: DeviceRefused, nodes: list[str]) -> Advice:
    fix, pitfall = _fix(reason)
    return Advice(fix, pitfall, [ctx.cmd(f"describe node {nodes[0]}")])


HOOKS: dict[type[Reason], Hooks] = {DeviceRefused: Hooks(device_evidence, device_advice)}
