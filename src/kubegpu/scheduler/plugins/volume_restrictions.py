"""VolumeRestrictions: in-tree disks a node's pods already mount, and ReadWriteOncePod claims in use.

Mirrors kube-scheduler's ``plugins/volumerestrictions/volume_restrictions.go``. PreFilter: a pod's
``persistentVolumeClaim`` that does not exist rejects it everywhere (``persistentvolumeclaim "x" not found``,
UnschedulableAndUnresolvable; this PreFilter runs before VolumeBinding's, so it is the one that says it); the
pod's ReadWriteOncePod claims already used by a scheduled pod are counted. Filter: a GCE PD (same ``pdName``,
not both read-only), AWS EBS (same ``volumeID``), iSCSI (same ``iqn``, not both read-only) or RBD (a shared
monitor, same pool and image, not both read-only) mounted by a pod on the node gives ``node(s) had no
available disk``; then any ReadWriteOncePod claim in use gives the RWOP text (per minor: PR #129145, 1.34).
Both are Unschedulable: preemption may remove the pod holding the disk or the claim. The count is kept
per node in PreFilter so a preemption dry run, which removes pods from the node it tries, sees the claim
freed when its user is among them (upstream's ``RemovePod`` extension).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from kubegpu.model import volumes as vol
from kubegpu.model.objects import Pod, PodVolume
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.framework import CycleState, Handle
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.reasons import CLAIM_NOT_FOUND, ClaimProblem, DiskConflict, ReadWriteOncePodInUse
from kubegpu.scheduler.status import SKIP, SUCCESS, Status, unresolvable, unschedulable

STATE_KEY: Final = names.VOLUME_RESTRICTIONS


@dataclass(frozen=True)
class RwopState:
    claims: frozenset[str]  # "ns/name" of the pod's ReadWriteOncePod claims
    total: int  # pods using them, cluster-wide, when PreFilter ran
    per_node: dict[int, int]  # the same per node


def disks_conflict(a: PodVolume, b: PodVolume) -> bool:
    """``isVolumeConflict`` for one pair of volumes."""
    if a.disk is None or b.disk is None or a.disk[0] != b.disk[0] or a.disk[1] != b.disk[1]:
        return False
    kind, _, monitors, read_only = a.disk
    both_ro = read_only and b.disk[3]
    if kind == "awsElasticBlockStore":
        return True
    if kind == "rbd":
        return bool(set(monitors) & set(b.disk[2])) and not both_ro
    return not both_ro


def rwop_users(pod_claims: frozenset[str], pods: list[Pod]) -> int:
    """Pods among ``pods`` that use any of the claims (``PodPVCKeys``: named claims only)."""
    return sum(
        1
        for p in pods
        for v in p.volumes
        if v.kind == "persistentVolumeClaim" and f"{p.namespace}/{v.claim}" in pod_claims
    )


class VolumeRestrictions:
    name: ClassVar[str] = names.VOLUME_RESTRICTIONS
    sign_from_spec: ClassVar[bool] = True  # ``sign`` reads the pod's spec only (Framework.signed_prefix)

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.objects = handle.volumes  # read in place: the live cache updates it

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterState
    ) -> tuple[frozenset[str] | None, Status]:
        needs_disk_check = any(v.disk is not None for v in pod.volumes)
        rwop: set[str] = set()
        if "PersistentVolumeClaim" in self.objects.seen:
            for v in pod.volumes:
                if v.kind != "persistentVolumeClaim":
                    continue
                claim = self.objects.claims.get(f"{pod.namespace}/{v.claim}")
                if claim is None:
                    return None, unresolvable(ClaimProblem(CLAIM_NOT_FOUND, v.claim))
                if vol.RWOP in claim.access_modes:
                    rwop.add(claim.key)
        per_node: dict[int, int] = {}
        if rwop:
            keys = frozenset(rwop)
            for idx, on_node in enumerate(cluster.pods_on):
                n = rwop_users(keys, list(on_node.values()))
                if n:
                    per_node[idx] = n
        total = sum(per_node.values())
        if not needs_disk_check and total == 0:
            return None, SKIP
        state.write(STATE_KEY, RwopState(frozenset(rwop), total, per_node))
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        mine = [v for v in pod.volumes if v.disk is not None]
        if mine and any(disks_conflict(a, b) for p in node.pods for b in p.volumes for a in mine):
            return unschedulable(DiskConflict())
        s: RwopState | None = state.get(STATE_KEY)
        if s is None or not s.claims:
            return SUCCESS
        now = s.total - s.per_node.get(node.idx, 0) + rwop_users(s.claims, node.pods)
        return unschedulable(ReadWriteOncePodInUse()) if now > 0 else SUCCESS

    def sign(self, pod: Pod) -> Hashable | None:
        """Pods with disks or claims are evaluated fresh: the answer depends on other pods' volumes."""
        return None if any(v.disk is not None or v.claim for v in pod.volumes) else ()
