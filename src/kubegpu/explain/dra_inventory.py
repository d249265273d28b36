"""The DRA devices a cluster publishes and who holds them: for the report's GPU map and the cluster exporter.

A device counts once, from the newest generation of its resource pool (``SliceIndex.pools``' rule); it is
held by the claim whose ``status.allocation`` names it (admin access takes nothing), and through the claim
by the pods in its ``status.reservedFor``. NVIDIA's driver (``gpu.nvidia.com``) types its devices with the
``type`` attribute: ``gpu`` devices sit on GPU ``index``, ``mig`` devices on GPU ``parentIndex`` with their
``profile``. Imports the model only.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubegpu.model.dra import DraObjects, ResourceSlice
from kubegpu.model.names import NVIDIA_DRA_DRIVER
from kubegpu.model.snapshot import ClusterSnapshot


@dataclass(frozen=True, slots=True)
class DraDevice:
    driver: str
    pool: str
    name: str
    node: str  # "" for a device of a network slice (nodeSelector, allNodes)
    kind: str  # NVIDIA's "gpu" | "mig", else "" (another driver's device)
    gpu_index: int  # the physical GPU (index, or parentIndex of a MIG device); -1 unknown
    profile: str  # MIG profile ("1g.10gb"), "" otherwise
    claim: str  # "ns/name" of the allocated claim holding it, ""
    pods: tuple[str, ...]  # the pods the claim is reserved for

    @property
    def device_id(self) -> str:
        return f"{self.driver}/{self.pool}/{self.name}"

    @property
    def holder(self) -> str:
        """Who to show on the device: its first pod, else the claim (allocated, no pod reserved yet)."""
        return self.pods[0] if self.pods else self.claim


def _newest(slices: list[ResourceSlice]) -> list[ResourceSlice]:
    top: dict[tuple[str, str], int] = {}
    for s in slices:
        top[(s.driver, s.pool)] = max(top.get((s.driver, s.pool), s.generation), s.generation)
    return [s for s in slices if s.generation == top[(s.driver, s.pool)]]


def _int(v: object) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else -1


def devices(snapshot: ClusterSnapshot) -> list[DraDevice]:
    """Every published device with its holder, in slice then device order."""
    dra: DraObjects = snapshot.dra
    uid_to_pod = {p.uid: p.key for p in snapshot.pods if p.uid}
    held: dict[tuple[str, str, str], tuple[str, tuple[str, ...]]] = {}
    for c in dra.claims.values():
        pods = tuple(uid_to_pod.get(u, "") for u in c.reserved_for)
        for got in c.allocated or ():
            if not got.admin_access:
                held[got.device_id] = (c.key, tuple(p for p in pods if p))
    out = []
    for s in sorted(_newest(dra.slices), key=lambda s: s.name):
        for d in s.devices:
            a = d.attributes
            kind = str(a.get(f"{s.driver}/type", "")) if s.driver == NVIDIA_DRA_DRIVER else ""
            index = _int(a.get(f"{s.driver}/parentIndex" if kind == "mig" else f"{s.driver}/index"))
            claim, pods = held.get((s.driver, s.pool, d.name), ("", ()))
            profile = str(a.get(f"{s.driver}/profile", "")) if kind == "mig" else ""
            out.append(DraDevice(s.driver, s.pool, d.name, s.node_name, kind, index, profile, claim, pods))
    return out


def pool_counts(
    snapshot: ClusterSnapshot, pool_label: str, unpooled: str
) -> dict[tuple[str, str], tuple[int, int]]:
    """(kubegpu pool of the device's node, driver) → (devices, allocated); network devices go to ``unpooled``."""
    pool_of = {n.name: n.labels.get(pool_label, "") or unpooled for n in snapshot.nodes}
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for d in devices(snapshot):
        key = (pool_of.get(d.node, unpooled), d.driver)
        total, allocated = out.get(key, (0, 0))
        out[key] = (total + 1, allocated + (1 if d.claim else 0))
    return out
