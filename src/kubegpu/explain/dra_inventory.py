"""The DRA devices a cluster publishes and who holds them: for the report's GPU map and the cluster exporter.

A device counts once, from the newest generation of its resource pool (``SliceIndex.pools``' rule); it is
held by the claim whose ``status.allocation`` names it (admin access takes nothing), and through the claim
by the pods in its ``status.reservedFor``. NVIDIA's driver (``gpu.nvidia.com``) types its devices with the
``type`` attribute: ``gpu`` devices sit on GPU ``index``, ``mig`` devices on GPU ``parentIndex`` with their
``profile``.

A free device of a partitionable pool (KEP-4815, ``DRAPartitionableDevices``) is not free when the shared
counters it consumes are already taken by the pool's allocated devices (a full GPU once one of its MIG
devices is allocated): the allocator's rule (``scheduler.dra_capacity.counters_left`` and
``device_counters_short``) gives the reason, kept in ``DraDevice.unavailable``. With the gate off the API
server drops ``sharedCounters`` / ``consumesCounters`` and no device consumes counters. A pool whose
counter sets are invalid (a set or counter a device names is missing) is skipped by the allocator: its
free devices say so. Imports the model and the scheduler's DRA rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubegpu.model.dra import DraObjects
from kubegpu.model.names import NVIDIA_DRA_DRIVER
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.dra_allocator import SliceIndex
from kubegpu.scheduler.dra_capacity import CounterSets, counters_left, device_counters_short


@dataclass(frozen=True, slots=True)
class DraDevice:
    driver: str
    pool: str
    name: str
    node: str  # "" for a network device (its slice's, or per device, nodeSelector / allNodes)
    kind: str  # NVIDIA's "gpu" | "mig", else "" (another driver's device)
    gpu_index: int  # the physical GPU (index, or parentIndex of a MIG device); -1 unknown
    profile: str  # MIG profile ("1g.10gb"), "" otherwise
    claim: str  # "ns/name" of the allocated claim holding it, ""
    pods: tuple[str, ...]  # the pods the claim is reserved for
    # why a device no claim holds still cannot be allocated ("" when it can): its pool's shared counters
    unavailable: str = ""

    @property
    def free(self) -> bool:
        return not self.claim and not self.unavailable

    @property
    def device_id(self) -> str:
        return f"{self.driver}/{self.pool}/{self.name}"

    @property
    def holder(self) -> str:
        """Who to show on the device: its first pod, else the claim (allocated, no pod reserved yet)."""
        return self.pods[0] if self.pods else self.claim


def _int(v: object) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else -1


def devices(snapshot: ClusterSnapshot, partitionable: bool = True) -> list[DraDevice]:
    """Every published device with its holder, per pool (driver, name order) in slice then device order.
    ``partitionable``: the minor's DRAPartitionableDevices gate (on by default from 1.36)."""
    dra: DraObjects = snapshot.dra
    uid_to_pod = {p.uid: p.key for p in snapshot.pods if p.uid}
    held: dict[tuple[str, str, str], tuple[str, tuple[str, ...]]] = {}
    for c in dra.claims.values():
        pods = tuple(uid_to_pod.get(u, "") for u in c.reserved_for)
        for got in c.allocated or ():
            if not got.admin_access:
                held[got.device_id] = (c.key, tuple(p for p in pods if p))
    out = []
    index = SliceIndex(dra.slices)  # newest generation of each pool, its counter slices with it
    for (drv, pool), slices in sorted(index.by_pool.items()):
        left: CounterSets = {}
        invalid = ""
        if partitionable:
            sets, device_slices, invalid = index.counters((drv, pool), slices[0].generation)
            left = counters_left(sets, device_slices, held)
        for s in sorted(slices, key=lambda s: s.name):
            for d in s.devices:
                a = d.attributes
                kind = str(a.get(f"{s.driver}/type", "")) if s.driver == NVIDIA_DRA_DRIVER else ""
                index_attr = f"{s.driver}/parentIndex" if kind == "mig" else f"{s.driver}/index"
                claim, pods = held.get((s.driver, s.pool, d.name), ("", ()))
                profile = str(a.get(f"{s.driver}/profile", "")) if kind == "mig" else ""
                why = ""
                if not claim and partitionable:
                    why = (
                        f"pool {drv}/{pool} is invalid: {invalid}"
                        if invalid
                        else device_counters_short(left, d)
                    )
                gpu = _int(a.get(index_attr))
                node = s.node_name or d.node_name  # per-device node selection: the device's own node
                out.append(DraDevice(s.driver, s.pool, d.name, node, kind, gpu, profile, claim, pods, why))
    return out


def pool_counts(
    snapshot: ClusterSnapshot, pool_label: str, unpooled: str, partitionable: bool = True
) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(kubegpu pool of the device's node, driver) → (devices, allocated, free); network devices go to
    ``unpooled``. A device neither allocated nor free is one its pool's shared counters no longer supply."""
    pool_of = {n.name: n.labels.get(pool_label, "") or unpooled for n in snapshot.nodes}
    out: dict[tuple[str, str], tuple[int, int, int]] = {}
    for d in devices(snapshot, partitionable):
        key = (pool_of.get(d.node, unpooled), d.driver)
        total, allocated, free = out.get(key, (0, 0, 0))
        out[key] = (total + 1, allocated + (1 if d.claim else 0), free + (1 if d.free else 0))
    return out
