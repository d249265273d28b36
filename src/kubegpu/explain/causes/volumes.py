"""The storage plugins' reasons (VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits): the claim,
its PersistentVolume, the StorageClass and its binding mode, the PV's node affinity or zone against the node's
labels, the pod holding a disk or a ReadWriteOncePod claim, a CSI driver's attach limit. Advice comes from
those objects (which label, which claim, which class), never from the message text."""

from __future__ import annotations

from collections.abc import Iterator

from kubegpu.explain.causes.base import Advice, Context, Hooks
from kubegpu.explain.explanation import NODE_HAS
from kubegpu.model import volumes as vol
from kubegpu.model.objects import NodeSelectorTerm
from kubegpu.model.quantity import format_milli
from kubegpu.scheduler.plugins import volume_zone
from kubegpu.scheduler.plugins.node_volume_limits import attachable
from kubegpu.scheduler.plugins.volume_objects import claim_volumes
from kubegpu.scheduler.plugins.volume_restrictions import disks_conflict
from kubegpu.scheduler.reasons import (
    CLAIM_DELETING,
    CLAIM_LOST,
    CLAIM_NOT_FOUND,
    CLAIM_NOT_OWNED,
    CLASS_NOT_FOUND,
    EPHEMERAL_NOT_CREATED,
    PV_NOT_FOUND,
    UNBOUND_IMMEDIATE,
    ClaimProblem,
    DiskConflict,
    MaxVolumeCount,
    ReadWriteOncePodInUse,
    Reason,
    VolumeBindConflict,
    VolumeMissing,
    VolumeNodeConflict,
    VolumeNoSpace,
    VolumeZoneConflict,
)


def _objects(ctx: Context) -> vol.VolumeObjects:
    return ctx.engine.snapshot.volumes


def _claims(ctx: Context) -> Iterator[tuple[str, vol.Claim | None]]:
    objects = _objects(ctx)
    for v in claim_volumes(ctx.pod):
        yield v.claim, objects.claims.get(f"{ctx.pod.namespace}/{v.claim}")


def describe_claim(ctx: Context, claim: vol.Claim) -> str:
    cls = _objects(ctx).classes.get(claim.storage_class) if claim.storage_class else None
    mode = cls.binding_mode if cls else ("no class" if not claim.storage_class else "class not found")
    bound = f"volumeName {claim.volume_name}" if claim.volume_name else "no volumeName"
    done = "" if not claim.volume_name or claim.fully_bound else f" (no {vol.BIND_COMPLETED} annotation)"
    cls_name = claim.storage_class or '""'
    return f"PersistentVolumeClaim {claim.key}: phase {claim.phase}, storageClassName {cls_name} ({mode}), {bound}{done}"


def _terms(terms: tuple[NodeSelectorTerm, ...]) -> str:
    return " OR ".join(
        " AND ".join(
            f"{r.key} {r.operator} {list(r.values)}" for r in (*t.match_expressions, *t.match_fields)
        )
        for t in terms
    )


def claim_evidence(ctx: Context, reason: ClaimProblem, idx: int) -> list[str]:
    return [describe_claim(ctx, c) if c else f"PersistentVolumeClaim {ctx.pod.namespace}/{name}: not found"
            for name, c in _claims(ctx)]  # fmt: skip


_CLAIM_FIX = {
    CLAIM_NOT_FOUND: "Create the claim the pod names, or fix spec.volumes[].persistentVolumeClaim.claimName.",
    EPHEMERAL_NOT_CREATED: "The ephemeral volume controller (kube-controller-manager) has not created the claim yet.",
    CLAIM_LOST: "The claim's PersistentVolume is gone (phase Lost): restore the PV or recreate the claim.",
    CLAIM_DELETING: "The claim is being deleted: wait for it to go and recreate it, or remove the pod's reference.",
    CLAIM_NOT_OWNED: "A claim of the ephemeral volume's name exists but belongs to another pod: delete or rename it.",
    UNBOUND_IMMEDIATE: "An Immediate claim must be bound before scheduling: check the provisioner and the PV "
    "controller's events on the claim, or use a WaitForFirstConsumer class so the scheduler picks the node first.",
    PV_NOT_FOUND: "The claim names a PersistentVolume that does not exist: restore it or recreate the claim.",
    CLASS_NOT_FOUND: "The claim's StorageClass does not exist: create it or fix storageClassName.",
}


def claim_advice(ctx: Context, reason: ClaimProblem, nodes: list[str]) -> Advice:
    claims = list(_claims(ctx))
    name = reason.claim or next((n for n, _ in claims), "")
    fix = _CLAIM_FIX.get(reason.problem, "Give the claim a StorageClass or a volume.")
    claim = next((c for n, c in claims if n == name), None)
    cls = _objects(ctx).classes.get(claim.storage_class) if claim is not None else None
    if reason.problem == UNBOUND_IMMEDIATE and cls is not None and cls.provisioner == vol.NO_PROVISIONER:
        # nothing will ever provision it (kubeflow/kubeflow#5082: "PV provisioner not working"): only a PV helps
        fix = (f"The claim's StorageClass {cls.name} has no provisioner ({vol.NO_PROVISIONER}): no volume will be "
               "made for it. Create a PersistentVolume it matches (its class, access modes and at least its "
               "size), or give the claim a class whose provisioner runs.")  # fmt: skip
    return Advice(
        fix,
        "A PreFilter rejection applies to every node: no node change helps, only the claim.",
        [ctx.cmd(f"describe pvc {name}"), ctx.cmd("get pvc,pv -o wide")],
    )


def _bound_pvs(ctx: Context) -> Iterator[tuple[vol.Claim, vol.Volume | None]]:
    for _, c in _claims(ctx):
        if c is not None and c.fully_bound:
            yield c, _objects(ctx).volumes.get(c.volume_name)


def node_conflict_evidence(ctx: Context, reason: VolumeNodeConflict, idx: int) -> list[str]:
    labels = ctx.engine.cluster.nodes[idx].labels
    out = []
    for c, pv in _bound_pvs(ctx):
        if pv is not None and not vol.node_affinity_matches(pv, labels):
            keys = {r.key for t in pv.node_affinity or () for r in t.match_expressions}
            have = ", ".join(f"{k}={labels[k]}" if k in labels else f"no {k}" for k in sorted(keys))
            out.append(f"claim {c.name} is bound to PV {pv.name}, which requires {_terms(pv.node_affinity or ())}; "
                       f"{NODE_HAS}{have}")  # fmt: skip
    return out


def node_conflict_advice(ctx: Context, reason: VolumeNodeConflict, nodes: list[str]) -> Advice:
    pv = next((p for _, p in _bound_pvs(ctx) if p is not None and p.node_affinity), None)
    where = f"nodes matching {_terms(pv.node_affinity or ())}" if pv else "the node the volume lives on"
    # none of them could ever hold the pod: freeing them cannot help (opendatahub-io/odh-manifests#259)
    lacking = (
        ctx.lacking(n for n in ctx.engine.cluster.nodes if vol.node_affinity_matches(pv, n.labels))
        if pv
        else ""
    )
    step = (
        f"none of them has {lacking}: add a node with it there, or move the data to where such nodes are"
        if lacking
        else "free one of those nodes (taints, resources) or move the data"
    )
    tail = (
        "a bound CSI volume stays in its topology (a zonal disk in its zone)"
        if pv and pv.csi
        else "a bound local volume never follows the pod"
    )
    return Advice(
        f"The pod's volume can only be used on {where}: {step}; {tail}.",
        "Deleting the pod does not help: the claim stays bound to the same PV.",
        [f"kubectl get pv {pv.name} -o jsonpath='{{.spec.nodeAffinity}}'" if pv else ctx.cmd("get pv")],
    )


def bind_conflict_evidence(ctx: Context, reason: VolumeBindConflict, idx: int) -> list[str]:
    objects, node = _objects(ctx), ctx.engine.cluster.nodes[idx]
    out = []
    for _, c in _claims(ctx):
        if c is None or c.fully_bound or c.volume_name:
            continue
        cls = objects.classes.get(c.storage_class)
        selected = c.annotations.get(vol.SELECTED_NODE)
        if selected is not None and selected != node.name:
            out.append(f"claim {c.name} was already given node {selected} ({vol.SELECTED_NODE})")
            continue
        pv = vol.find_matching_volume(c, objects.volumes_of_class(c.storage_class), node.labels, set())
        if pv is not None:
            continue
        avail = [v for v in objects.volumes_of_class(c.storage_class) if v.phase == "Available"]
        fits = [v.name for v in avail if vol.node_affinity_matches(v, node.labels)]
        big = [v.name for v in avail if v.capacity >= c.request]
        prov = cls.provisioner if cls else ""
        out.append(f"claim {c.name} (class {c.storage_class}, WaitForFirstConsumer): {len(avail)} Available PV(s) of "
                   f"the class, reachable from this node: {fits or 'none'}, large enough: {big or 'none'}; "
                   f"provisioner {prov or 'none'}"
                   + (" (cannot provision)" if prov in ("", vol.NO_PROVISIONER) else
                      "" if cls is None or vol.topology_allows(cls, node.labels) else " (allowedTopologies excludes the node)"))  # fmt: skip
    return out


def bind_conflict_advice(ctx: Context, reason: VolumeBindConflict, nodes: list[str]) -> Advice:
    return Advice(
        "No Available PersistentVolume of the claim's class is large enough and reachable from these nodes, and "
        "the class cannot provision one there: create a matching PV (capacity, access modes, node affinity) "
        "or use a class with a provisioner.",
        "A PV that is Released (its old claim deleted) is not Available: it is not reused until cleaned.",
        [ctx.cmd("get pv -o wide"), ctx.cmd("get storageclass")],
    )


def _size(milli: int | None) -> str:
    return "unset" if milli is None else format_milli("storage", milli)


def no_space_evidence(ctx: Context, reason: VolumeNoSpace, idx: int) -> list[str]:
    """Per claim to provision whose driver tracks capacity: its request against every CSIStorageCapacity of
    its class that the node reaches (the limit compared: maximumVolumeSize, else capacity)."""
    objects, node = _objects(ctx), ctx.engine.cluster.nodes[idx]
    out = []
    for _, c in _claims(ctx):
        cls = objects.classes.get(c.storage_class) if c is not None and not c.volume_name else None
        if c is None or cls is None or cls.binding_mode != vol.WAIT_FOR_FIRST_CONSUMER:
            continue
        enough, _ = vol.capacity_for(objects, cls, c, node.labels)
        if enough:
            continue
        caps = [k for k, cap in objects.capacities.items() if cap.storage_class == cls.name]
        reach = [f"{k} (maximumVolumeSize {_size(cap.maximum_volume_size)}, capacity {_size(cap.capacity)})"
                 for k in caps if (cap := objects.capacities[k]).node_topology is not None
                 and cap.node_topology.matches(node.labels)]  # fmt: skip
        out.append(f"claim {c.name} requests {_size(c.request)} of class {cls.name}, provisioned by {cls.provisioner} "
                   f"(CSIDriver storageCapacity: true); CSIStorageCapacity reachable from this node: "
                   f"{', '.join(reach) or 'none'} ({len(caps)} of the class in all)")  # fmt: skip
    return out


def no_space_advice(ctx: Context, reason: VolumeNoSpace, nodes: list[str]) -> Advice:
    return Advice(
        "The CSI driver reports too little free storage for the claim in these nodes' topology: free space in "
        "the storage pool, request a smaller volume, or use nodes whose pool has room.",
        "The CSIStorageCapacity objects are published by the driver's external-provisioner; stale ones clear "
        "when it republishes.",
        ["kubectl get csistoragecapacities -A -o wide", "kubectl get csidrivers -o yaml"],
    )


def missing_evidence(ctx: Context, reason: VolumeMissing, idx: int) -> list[str]:
    return [f"claim {c.name} is bound to PV {c.volume_name}, which does not exist" for c, pv in _bound_pvs(ctx)
            if pv is None]  # fmt: skip


def disk_evidence(ctx: Context, reason: DiskConflict, idx: int) -> list[str]:
    mine = [v for v in ctx.pod.volumes if v.disk is not None]
    return [f"pod {p.key} on the node mounts {b.disk[0]} {b.disk[1]} too" for p in ctx.engine.cluster.view(idx).pods
            for b in p.volumes for a in mine if b.disk is not None and disks_conflict(a, b)]  # fmt: skip


def rwop_evidence(ctx: Context, reason: ReadWriteOncePodInUse, idx: int) -> list[str]:
    rwop = {c.key for _, c in _claims(ctx) if c is not None and vol.RWOP in c.access_modes}
    out = []
    for i in range(len(ctx.engine.cluster)):
        for p in ctx.engine.cluster.view(i).pods:
            for v in p.volumes:
                if v.kind == "persistentVolumeClaim" and f"{p.namespace}/{v.claim}" in rwop:
                    out.append(f"claim {v.claim} (ReadWriteOncePod) is used by pod {p.key} on "
                               f"{ctx.engine.cluster.nodes[i].name}")  # fmt: skip
    return out


def rwop_advice(ctx: Context, reason: ReadWriteOncePodInUse, nodes: list[str]) -> Advice:
    return Advice(
        "A ReadWriteOncePod claim admits one pod in the whole cluster: stop the pod using it (a rolling update "
        "with maxSurge deadlocks on it), or use ReadWriteOnce if pods on one node may share it.",
        "Only a higher-priority pod can preempt the holder.",
        [ctx.cmd("get pods -o wide")],
    )


def zone_evidence(ctx: Context, reason: VolumeZoneConflict, idx: int) -> list[str]:
    labels = ctx.engine.cluster.nodes[idx].labels
    out = []
    for c, pv in _bound_pvs(ctx):
        for key, values in volume_zone.pv_topology(pv) if pv else ():
            have = labels.get(key, labels.get(volume_zone.GA.get(key, key)))
            if have not in values:
                out.append(f"claim {c.name}: PV {pv.name if pv else ''} is in {key}={sorted(values)}; {NODE_HAS}"
                           f"{have if have is not None else f'no {key} label'}")  # fmt: skip
    return out


def limit_evidence(ctx: Context, reason: MaxVolumeCount, idx: int) -> list[str]:
    objects, view = _objects(ctx), ctx.engine.cluster.view(idx)
    csinode = objects.csinodes.get(view.name)
    used: dict[str, str] = {}
    for p in view.pods:
        used.update(attachable(p, objects))
    out = []
    for driver in sorted(set(attachable(ctx.pod, objects).values())):
        limit = csinode.limits.get(driver) if csinode else None
        n = sum(1 for d in used.values() if d == driver)
        out.append(f"CSINode {view.name}: driver {driver} allows {limit} volume(s); pods on the node use {n}")
    return out


def limit_advice(ctx: Context, reason: MaxVolumeCount, nodes: list[str]) -> Advice:
    return Advice(
        "The nodes hold as many volumes of the driver as their CSINode allows: add nodes, use instance types "
        "with more attachments, or put several pods' data on one volume.",
        "The limit counts attachments, not size: small volumes fill it as fast as large ones.",
        [f"kubectl get csinode {nodes[0]} -o yaml"],
    )


HOOKS: dict[type[Reason], Hooks] = {
    ClaimProblem: Hooks(claim_evidence, claim_advice),
    VolumeNodeConflict: Hooks(node_conflict_evidence, node_conflict_advice),
    VolumeBindConflict: Hooks(bind_conflict_evidence, bind_conflict_advice),
    VolumeNoSpace: Hooks(no_space_evidence, no_space_advice),
    VolumeMissing: Hooks(missing_evidence),
    DiskConflict: Hooks(disk_evidence),
    ReadWriteOncePodInUse: Hooks(rwop_evidence, rwop_advice),
    VolumeZoneConflict: Hooks(zone_evidence),
    MaxVolumeCount: Hooks(limit_evidence, limit_advice),
}
