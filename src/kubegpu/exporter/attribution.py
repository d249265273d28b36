"""Which containers hold which device, and how much GPU memory each container uses (R13.1, R13.4).

Two joins, both pure:

* ``holders_by_device``: kubelet's Pod Resources assignments -> the GPU or MIG device each device ID
  names, as dcgm-exporter's PodMapper matches them (transformation/kubernetes.go): resources
  ``nvidia.com/gpu``, ``nvidia.com/mig-*`` and any extra names configured (``nvidia.com/gpu.shared``);
  IDs are GPU UUIDs, MIG UUIDs (``MIG-…``), time-slicing replicas ``<id>::<n>`` (the replica number
  becomes dcgm-exporter's ``vgpu`` label) or, under the device plugin's ``deviceIDStrategy: index``, GPU
  indexes. An ID that names no device NVML sees (another vendor's, or a GPU gone from the bus) matches
  nothing. Devices a container got through a DRA claim join the same map, each already resolved to its
  GPU or MIG UUID (``kubegpu.exporter.dra_devices``), their holders carrying the claim.
* ``per_container``: a per-process value (NVML's used memory; SM utilisation from
  ``nvmlDeviceGetProcessUtilization``) summed per container that owns the process (PID -> cgroup -> pod
  UID/container ID -> names). Values of processes no pod owns (host processes, pods kubelet no longer
  lists) are summed per GPU as unattributed, so the two always add up to what NVML listed. On a
  MIG-enabled GPU NVML lists processes on the parent GPU, so their values are attributed there.

Worked example (``shared/fixtures/nodes/h200-1gpu/two-processes``, t = 35.13 s): NVML lists pid 425 with
21 482 MiB and pid 451 with 119 786 MiB on one H200. If pid 425 runs in pod ``a`` and 451 in pod ``b``,
``a`` gets 21 482 MiB and ``b`` 119 786 MiB; dcgm-exporter's pod-labelled FB_USED gives both pods the
device's 141 897 MiB, except for its per-pod series with ``--kubernetes-virtual-gpus`` (4.5.3-4.8.2).

Must not: read files, sockets or NVML.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kubegpu.devices import NodeInventory, strip_annotation
from kubegpu.devices.sharing import GPU_RESOURCE, MIG_RESOURCE_PREFIX, REPLICA_SEPARATOR
from kubegpu.exporter.kubelet_pods import ContainerRef
from kubegpu.exporter.podresources import Assignment, ClaimDevice


@dataclass(frozen=True, slots=True)
class Holder:
    """A container that kubelet assigned a device (or one time-slicing replica of it) to."""

    ref: ContainerRef
    replica: str = ""  # "<n>" of "<id>::<n>"; "" for a whole device
    claim: ClaimDevice | None = None  # the DRA claim device it came through; None for a device plugin's


def is_gpu_resource(name: str, extra: Iterable[str] = ()) -> bool:
    return name == GPU_RESOURCE or name.startswith(MIG_RESOURCE_PREFIX) or name in extra


def holders_by_device(
    inv: NodeInventory,
    assignments: Iterable[Assignment],
    extra_resources: Iterable[str] = (),
    claim_devices: Mapping[ClaimDevice, str | None] | None = None,
) -> dict[str, tuple[Holder, ...]]:
    """GPU or MIG UUID -> the containers holding it, in kubelet's order: device-plugin assignments, then
    DRA claim devices (``claim_devices``: each with the UUID it resolved to, or None when it did not)."""
    extra = frozenset(extra_resources)
    by_id: dict[str, str] = {}
    for g in inv.devices:
        by_id[g.uuid] = g.uuid
        by_id[str(g.index)] = g.uuid
        for m in g.mig_devices:
            by_id[m.uuid] = m.uuid
    out: dict[str, list[Holder]] = defaultdict(list)
    for a in assignments:
        if not is_gpu_resource(a.resource, extra):
            continue
        for device_id in a.device_ids:
            uuid = by_id.get(strip_annotation(device_id))
            if uuid is None:
                continue
            _, _, replica = device_id.partition(REPLICA_SEPARATOR)
            holder = Holder(ContainerRef(a.namespace, a.pod, a.container), replica)
            if holder not in out[uuid]:
                out[uuid].append(holder)
    for claim, resolved in (claim_devices or {}).items():
        if resolved is not None:
            holder = Holder(ContainerRef(claim.namespace, claim.pod, claim.container), claim=claim)
            if holder not in out[resolved]:
                out[resolved].append(holder)
    return {uuid: tuple(holders) for uuid, holders in out.items()}


@dataclass(frozen=True, slots=True)
class PerContainer:
    """A per-process value summed per (GPU UUID, container) and, per GPU, what no known container owns."""

    by_container: dict[tuple[str, ContainerRef], float]
    unattributed: dict[str, float]


def per_container(
    by_gpu: Mapping[str, Mapping[int, float]], owner: Callable[[int], ContainerRef | None]
) -> PerContainer:
    """Sum ``by_gpu[uuid][pid]`` per owning container; ``owner`` maps a PID to its container."""
    by_container: dict[tuple[str, ContainerRef], float] = defaultdict(float)
    unattributed: dict[str, float] = {}
    for uuid, values in by_gpu.items():
        unattributed[uuid] = 0
        for pid, value in values.items():
            ref = owner(pid)
            if ref is None:
                unattributed[uuid] += value
            else:
                by_container[(uuid, ref)] += value
    return PerContainer(dict(by_container), unattributed)


def process_memory(inv: NodeInventory) -> dict[str, dict[int, float]]:
    """GPU UUID -> PID -> used bytes, for the processes whose memory NVML could tell."""
    out: dict[str, dict[int, float]] = {}
    for g in inv.devices:
        used: dict[int, float] = defaultdict(float)
        for p in g.processes:
            if (
                p.used_memory is not None
            ):  # None: NVML cannot see into it (permission, a MIG process from outside)
                used[p.pid] += p.used_memory
        out[g.uuid] = dict(used)
    return out
