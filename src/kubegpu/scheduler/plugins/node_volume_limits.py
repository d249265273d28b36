"""NodeVolumeLimits: CSI volumes attached to a node stay within the driver's limit in the node's CSINode.

Mirrors kube-scheduler's ``plugins/nodevolumelimits/csi.go``. PreFilter skips pods without claim volumes.
Filter: the pod's volumes are keyed ``driver/volumeHandle`` — a claim's bound PV's CSI source, else (unbound or
its PV missing) the claim's StorageClass provisioner with a handle unique to the claim; claims of missing
classes, non-CSI PVs and in-tree provisioners count for nothing. The node's pods' volumes are keyed the same
way; a volume they already use is not new. A driver whose ``spec.drivers[].allocatable.count`` the node's
CSINode gives is over its limit when used + new > count: ``node(s) exceed max volume count``
(Unschedulable: removing pods frees attachments).

Not modelled (said by ``explain``): VolumeAttachments (1.35+ also count attachments no pod accounts for),
in-tree volumes migrated to CSI, CSIDriver ``preventPodSchedulingIfMissing``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, ClassVar, Final

from kubegpu.model import volumes as vol
from kubegpu.model.objects import Pod
from kubegpu.scheduler.cluster import NodeView
from kubegpu.scheduler.framework import CycleState, Handle
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.plugins.volume_objects import checkable, claim_volumes
from kubegpu.scheduler.reasons import MaxVolumeCount
from kubegpu.scheduler.status import SKIP, SUCCESS, Status, unschedulable

IN_TREE_PREFIX = "kubernetes.io/"  # in-tree provisioners: counted only through CSI migration (not modelled)


def attachable(pod: Pod, objects: vol.VolumeObjects) -> dict[str, str]:
    """``filterAttachableVolumes``: unique volume name → CSI driver, for the pod's claims."""
    out: dict[str, str] = {}
    for v in claim_volumes(pod):
        claim = objects.claims.get(f"{pod.namespace}/{v.claim}")
        if claim is None:
            continue
        pv = objects.volumes.get(claim.volume_name) if claim.volume_name else None
        if pv is not None:
            if pv.csi is not None:
                out[f"{pv.csi[0]}/{pv.csi[1]}"] = pv.csi[0]
            continue
        cls = objects.classes.get(claim.storage_class) if claim.storage_class else None
        if cls is None or not cls.provisioner or cls.provisioner.startswith(IN_TREE_PREFIX):
            continue
        out[f"{cls.provisioner}/<new>-{claim.key}"] = cls.provisioner  # getCSIDriverInfoFromSC's handle
    return out


STATE_KEY: Final = names.NODE_VOLUME_LIMITS


class NodeVolumeLimits:
    name: ClassVar[str] = names.NODE_VOLUME_LIMITS
    sign_from_spec: ClassVar[bool] = True  # ``sign`` reads the pod's spec only (Framework.signed_prefix)

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.objects = handle.volumes  # read in place: the live cache updates it

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: object
    ) -> tuple[frozenset[str] | None, Status]:
        if not checkable(pod, self.objects):
            return None, SKIP
        state.write(STATE_KEY, attachable(pod, self.objects))  # the pod's volumes: the same on every node
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        new: dict[str, str] = state.read(STATE_KEY)
        csinode = self.objects.csinodes.get(node.name)
        if not new or csinode is None or not csinode.limits:
            return SUCCESS
        used: dict[str, str] = {}
        for p in node.pods:
            used.update(attachable(p, self.objects))
        count: dict[str, int] = {}
        for driver in used.values():
            count[driver] = count.get(driver, 0) + 1
        adding: dict[str, int] = {}
        for key, driver in new.items():
            if key not in used:
                adding[driver] = adding.get(driver, 0) + 1
        for driver, n in adding.items():
            limit = csinode.limits.get(driver)
            if limit is not None and count.get(driver, 0) + n > limit:
                return unschedulable(MaxVolumeCount())
        return SUCCESS

    def sign(self, pod: Pod) -> Hashable | None:
        return None if any(True for _ in claim_volumes(pod)) else ()
