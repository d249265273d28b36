"""What kubegpu cannot vouch for in one pod's verdict: everything the pod uses that the core does not model.

Each line names the thing and what it may change; a non-empty list marks the verdict unverified (``explain``'s
table and ``-o json``'s ``unverified``). Never silently optimistic: a pod using something not modelled is said
to, even when the modelled plugins let it through.
"""

from __future__ import annotations

from typing import Final

from kubegpu.explain.dra_gates import claim_lines, slice_lines
from kubegpu.explain.dra_unverified import cel_lines, gate_off_line, taint_rule_line
from kubegpu.explain.engine import Engine
from kubegpu.model import default_spread
from kubegpu.model import volumes as vol
from kubegpu.model.dra import ResourceClaim
from kubegpu.model.objects import Pod
from kubegpu.model.resources import unmodelled_gpu_lines
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.plugins.dynamic_resources import resolve_claims
from kubegpu.scheduler.plugins.node_volume_limits import attachable
from kubegpu.scheduler.plugins.pod_topology_spread import spread_defaults
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


def unverified(engine: Engine, pod: Pod, scheduled: bool = True) -> tuple[list[str], int]:
    """What the pod's verdict rests on that kubegpu does not model, and how many of those lines (the last ones)
    may change only where a pod that fits lands, not whether it fits: the default spread's line where every
    default constraint is ScheduleAnyway (a score). The others may turn a fit into a refusal, which the headline
    must not call "schedulable now". ``scheduled``: the pod fits somewhere, so how the feasible nodes rank
    decides its node."""
    out = [f"the pod uses {c}, which kubegpu does not evaluate" for c in pod.unmodelled_constraints]
    out += unmodelled_gpu_lines(pod.requests)
    profile = engine.profile
    if pod.scheduler_name != profile.scheduler_name:
        out.append(
            f"the pod asks for scheduler {pod.scheduler_name!r}; kubegpu reproduces the profile "
            f"{profile.scheduler_name!r} (give that scheduler's KubeSchedulerConfiguration with --scheduler-config)"
        )
    out.extend(profile.unmodelled)
    out.extend(_volume_lines(engine, pod))
    out.extend(_dra_lines(engine, pod))
    spread, ranking = _default_spread_lines(engine, pod, scheduled)
    return out + spread, len(spread) if ranking else 0


def _dra_lines(engine: Engine, pod: Pod) -> list[str]:
    """DRA fields whose gate is off by default in the minor reproduced (``explain.dra_gates``)."""
    dra = engine.snapshot.dra
    if pod.key not in dra.pod_claims:
        return []
    claims, _ = resolve_claims(pod, dra)
    minor = behaviour(engine.profile.kube_version).minor
    return (
        gate_off_line(minor, bool(dra.pod_claims[pod.key].refs))
        + claim_lines(claims, minor)
        + slice_lines(dra, minor)
        + cel_lines(claims, dra.classes, dra.slices)
        + taint_rule_line(dra, claims, minor)
        + _mixed_claims_line(claims, minor)
    )


# kube-scheduler 1.35 added DynamicResources scoring (prioritized lists), whose computeScore paired the claims
# allocated in this cycle with the pod's claims by position: a pod with an allocated (shared) claim and an
# unallocated one failed Score ("number of allocations 1 is smaller than number of claims") and stayed Pending
# (kubernetes/kubernetes#139016); fixed by #139017, cherry-picked to release-1.35 (#139362) and release-1.36
# (#139363). Score runs only when several nodes pass the filters.
MIXED_CLAIMS_MINORS = (35, 36)


def _mixed_claims_line(claims: list[ResourceClaim], minor: int) -> list[str]:
    """The pod mixes allocated and unallocated claims on a minor whose early patch releases fail it in Score."""
    if minor not in MIXED_CLAIMS_MINORS or not claims:
        return []
    allocated = [c.key for c in claims if c.allocated is not None]
    if not allocated or len(allocated) == len(claims):
        return []
    return [
        f"the pod has allocated claim(s) ({', '.join(allocated)}) beside unallocated ones: kube-scheduler 1.{minor} "
        "releases without the fix of kubernetes#139016 (cherry-picks #139362 for 1.35, #139363 for 1.36) fail such "
        'a pod in Score when several nodes fit ("running Score plugins: plugin "DynamicResources" failed with: '
        'number of allocations N is smaller than number of claims") and it stays Pending; kubegpu scores it as '
        "the fixed releases do (check the cluster's patch release)"
    ]


def _default_spread_lines(engine: Engine, pod: Pod, scheduled: bool) -> tuple[list[str], bool]:
    """A pod without its own spread constraints is spread with the profile's defaults, whose selector comes
    from the Services and controllers selecting it: without those kinds it cannot be computed. ScheduleAnyway
    defaults (the system ones) only rank nodes, which matters only when the pod fits; the flag says the
    defaults only rank (no DoNotSchedule one)."""
    spec = next((p for p in engine.profile.plugins if p.name == names.POD_TOPOLOGY_SPREAD), None)
    if pod.spread_constraints or spec is None:
        return [], False
    defaults, _ = spread_defaults(spec.args, spec.name)
    refuses = any(c.when_unsatisfiable == "DoNotSchedule" for c in defaults)
    if not (refuses or (scheduled and spec.weight > 0 and defaults)):
        return [], False
    missing = default_spread.SpreadOwners.of(engine.snapshot.records).missing(pod)
    if not missing:
        return [], False
    return [
        f"PodTopologySpread's default constraints take their selector from the Services and controllers "
        f"selecting the pod, and the snapshot holds no {' or '.join(missing)} objects: the default spread could not "
        f"be computed, so the node ranking may differ (add {default_spread.RESOURCES} to the snapshot)"
    ], not refuses


def _capacity_kinds_missing(objects: vol.VolumeObjects, provisioners: set[str]) -> list[str]:
    """The kinds VolumeBinding's capacity check reads that the snapshot did not carry: without CSIDrivers no
    provisioner is known to track capacity; with one that does, its CSIStorageCapacities decide."""
    if not provisioners:
        return []
    if "CSIDriver" not in objects.seen:
        return (
            ["CSIDriver", "CSIStorageCapacity"] if "CSIStorageCapacity" not in objects.seen else ["CSIDriver"]
        )
    tracked = any(d.storage_capacity for p in provisioners if (d := objects.drivers.get(p)) is not None)
    return ["CSIStorageCapacity"] if tracked and "CSIStorageCapacity" not in objects.seen else []


def _volume_lines(engine: Engine, pod: Pod) -> list[str]:
    objects = engine.snapshot.volumes
    claims = [v.claim for v in claim_volumes(pod)]
    out = []
    storage = [p for p in engine.profile.plugins if p.name == names.VOLUME_BINDING]
    if claims and storage and "PersistentVolumeClaim" not in objects.seen:
        out.append(
            f"the pod uses PersistentVolumeClaims {', '.join(claims)} but the snapshot holds none: volumes were not checked "
            f"(add {vol.RESOURCES} to the snapshot)"
        )
        return out
    inline = sorted({v.kind for v in pod.volumes if v.kind in MIGRATABLE})
    if inline:
        out.append(
            f"in-tree volumes {', '.join(inline)} count against CSI attach limits once migrated to CSI: not counted"
        )
    limited = sorted({v.kind for v in pod.volumes if v.kind in NON_CSI_LIMITED})
    if limited and behaviour(engine.profile.kube_version).non_csi_volume_limits:
        out.append(
            f"in-tree volumes {', '.join(limited)} count against EBSLimits/GCEPDLimits/AzureDiskLimits, in the default "
            "profile up to 1.30: not modelled"
        )
    delayed = [c for c in (objects.claims.get(f"{pod.namespace}/{n}") for n in claims)
               if c is not None and not c.volume_name and delayed_binding(c, objects)]  # fmt: skip
    provisioners = {objects.classes[c.storage_class].provisioner for c in delayed} - {"", vol.NO_PROVISIONER}
    missing = _capacity_kinds_missing(objects, provisioners)
    if missing:
        scored = " and scored" if behaviour(engine.profile.kube_version).storage_capacity_scoring else ""
        out.append(f"the pod's claims are provisioned by {sorted(provisioners)} but the snapshot holds no "
                   f"{' or '.join(missing)} objects: the provisioner's free storage was not checked{scored} "
                   f"(add {vol.RESOURCES} to the snapshot)")  # fmt: skip
    minor = behaviour(engine.profile.kube_version).minor
    if minor >= 35 and attachable(pod, objects) and any(n.limits for n in objects.csinodes.values()):
        out.append("VolumeAttachments (counted by NodeVolumeLimits from 1.35) are not read: attach limits count "
                   "only the volumes of the node's pods")  # fmt: skip
    return out
