"""What kubegpu cannot vouch for in one pod's verdict: everything the pod uses that the core does not model.

Each line names the thing and what it may change; a non-empty list marks the verdict unverified (``explain``'s
table and ``-o json``'s ``unverified``). Never silently optimistic: a pod using something not modelled is said
to, even when the modelled plugins let it through.
"""

from __future__ import annotations

from typing import Final

from kubegpu.explain.engine import Engine
from kubegpu.model import volumes as vol
from kubegpu.model.objects import Pod
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.plugins.node_volume_limits import attachable
from kubegpu.scheduler.plugins.volume_binding import delayed_binding
from kubegpu.scheduler.plugins.volume_objects import claim_volumes
from kubegpu.scheduler.versions import behaviour

# In-tree volume kinds CSI migration turns into CSI volumes that count against CSINode limits (csi.go
# checkAttachableInlineVolume): kubegpu reads no migration state, so these are not counted.
MIGRATABLE: Final = frozenset(
    {
        "awsElasticBlockStore",
        "gcePersistentDisk",
        "azureDisk",
        "azureFile",
        "cinder",
        "vsphereVolume",
        "portworxVolume",
    }
)

# The kinds 1.30's non-CSI volume limit plugins count (nodevolumelimits/non_csi.go: ebs, gcePD, azureDisk filters)
NON_CSI_LIMITED: Final = frozenset({"awsElasticBlockStore", "gcePersistentDisk", "azureDisk"})


def unverified(engine: Engine, pod: Pod) -> list[str]:
    out = [f"the pod uses {c}, which kubegpu does not evaluate" for c in pod.unmodelled_constraints]
    profile = engine.profile
    if pod.scheduler_name != profile.scheduler_name:
        out.append(
            f"the pod asks for scheduler {pod.scheduler_name!r}; kubegpu reproduces the profile "
            f"{profile.scheduler_name!r} (give that scheduler's KubeSchedulerConfiguration with --scheduler-config)"
        )
    out.extend(profile.unmodelled)
    out.extend(_volume_lines(engine, pod))
    return out


def _volume_lines(engine: Engine, pod: Pod) -> list[str]:
    objects = engine.snapshot.volumes
    claims = [v.claim for v in claim_volumes(pod)]
    out = []
    storage = [p for p in engine.profile.plugins if p.name == names.VOLUME_BINDING]
    if claims and storage and "PersistentVolumeClaim" not in objects.seen:
        out.append(
            f"the pod uses PersistentVolumeClaims {claims} but the snapshot holds none: volumes were not checked "
            f"(add {vol.RESOURCES} to the snapshot)"
        )
        return out
    inline = sorted({v.kind for v in pod.volumes if v.kind in MIGRATABLE})
    if inline:
        out.append(
            f"in-tree volumes {inline} count against CSI attach limits once migrated to CSI: not counted"
        )
    limited = sorted({v.kind for v in pod.volumes if v.kind in NON_CSI_LIMITED})
    if limited and behaviour(engine.profile.kube_version).non_csi_volume_limits:
        out.append(
            f"in-tree volumes {limited} count against EBSLimits/GCEPDLimits/AzureDiskLimits, in the default "
            "profile up to 1.30: not modelled"
        )
    delayed = [c for c in (objects.claims.get(f"{pod.namespace}/{n}") for n in claims)
               if c is not None and not c.volume_name and delayed_binding(c, objects)]  # fmt: skip
    if any(objects.classes[c.storage_class].provisioner not in ("", vol.NO_PROVISIONER) for c in delayed):
        out.append(
            "provisioning is taken to fit: the provisioner's free capacity (CSIStorageCapacity) is not modelled"
        )
    minor = behaviour(engine.profile.kube_version).minor
    if delayed and minor >= 37:
        out.append("VolumeBinding's score (StorageCapacityScoring, on by default from 1.37) is not modelled: "
                   "among feasible nodes the one chosen may differ")  # fmt: skip
    if minor >= 35 and attachable(pod, objects) and any(n.limits for n in objects.csinodes.values()):
        out.append("VolumeAttachments (counted by NodeVolumeLimits from 1.35) are not read: attach limits count "
                   "only the volumes of the node's pods")  # fmt: skip
    return out
