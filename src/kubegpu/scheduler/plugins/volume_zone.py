"""VolumeZone: a bound claim's PersistentVolume zone/region labels must admit the node.

Mirrors kube-scheduler's ``plugins/volumezone/volume_zone.go``. PreFilter reads each ``persistentVolumeClaim``
volume (generic ephemeral volumes are not read here): a claim without a volume name needs a class (``PersistentVolumeClaim had no pv name and
storageClass name``), an existing one (``storageclass.storage.k8s.io "x" not found``), and is skipped when the
class waits for the first consumer, else ``PersistentVolume had no name``; a named PV must exist
(``persistentvolume "x" not found``). Every rejection there is UnschedulableAndUnresolvable. The PV's labels
``failure-domain.beta.kubernetes.io/zone``, ``…/region``, ``topology.kubernetes.io/zone`` and ``…/region``
(values joined by ``__`` for several zones) are the constraints. Filter: a node with none of those labels
passes; otherwise each constraint's key (or its GA form) must be on the node with one of the values, else
``node(s) had no available volume zone`` (UnschedulableAndUnresolvable).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, ClassVar, Final

from kubegpu.model import volumes as vol
from kubegpu.model.names import ZONE_LABEL
from kubegpu.model.objects import Pod
from kubegpu.scheduler.cluster import NodeView
from kubegpu.scheduler.framework import CycleState, Handle
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.reasons import (
    CLAIM_NOT_FOUND,
    CLASS_NOT_FOUND,
    NO_PV_NAME,
    NO_PV_NO_CLASS,
    PV_NOT_FOUND,
    ClaimProblem,
    VolumeZoneConflict,
)
from kubegpu.scheduler.status import SKIP, SUCCESS, Status, unresolvable

STATE_KEY: Final = names.VOLUME_ZONE
BETA_ZONE: Final = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION: Final = "failure-domain.beta.kubernetes.io/region"
ZONE: Final = ZONE_LABEL
REGION: Final = "topology.kubernetes.io/region"
TOPOLOGY_LABELS: Final = (BETA_ZONE, BETA_REGION, ZONE, REGION)
GA: Final = {BETA_ZONE: ZONE, BETA_REGION: REGION}

Topology = tuple[tuple[str, frozenset[str]], ...]


def zones(value: str) -> frozenset[str] | None:
    """``LabelZonesToSet``: ``a__b`` → {a, b}; an empty member makes the label unreadable (ignored)."""
    parts = [p.strip() for p in value.split("__")]
    return None if any(not p for p in parts) else frozenset(parts)


def pv_topology(pv: vol.Volume) -> Topology:
    out = []
    for key in TOPOLOGY_LABELS:
        if key in pv.labels:
            values = zones(pv.labels[key])
            if values is not None:
                out.append((key, values))
    return tuple(out)


def pod_topology(pod: Pod, objects: vol.VolumeObjects) -> tuple[Topology, ClaimProblem | None]:
    """``getPVbyPod``: the constraints of the pod's PVs, or the first problem."""
    out: list[tuple[str, frozenset[str]]] = []
    for v in pod.volumes:
        if v.kind != "persistentVolumeClaim":
            continue
        claim = objects.claims.get(f"{pod.namespace}/{v.claim}")
        if claim is None:
            return (), ClaimProblem(CLAIM_NOT_FOUND, v.claim)
        if not claim.volume_name:
            if not claim.storage_class:
                return (), ClaimProblem(NO_PV_NO_CLASS)
            cls = objects.classes.get(claim.storage_class)
            if cls is None:
                return (), ClaimProblem(CLASS_NOT_FOUND, other=claim.storage_class)
            if cls.binding_mode == vol.WAIT_FOR_FIRST_CONSUMER:
                continue
            return (), ClaimProblem(NO_PV_NAME)
        pv = objects.volumes.get(claim.volume_name)
        if pv is None:
            return (), ClaimProblem(PV_NOT_FOUND, other=claim.volume_name)
        out.extend(pv_topology(pv))
    return tuple(out), None


def zone_fits(topology: Topology, labels: Mapping[str, str]) -> bool:
    if not any(k in labels for k in TOPOLOGY_LABELS):
        return True
    for key, values in topology:
        value = labels.get(key, labels.get(GA.get(key, key)))
        if value is None or value not in values:
            return False
    return True


class VolumeZone:
    name: ClassVar[str] = names.VOLUME_ZONE
    sign_from_spec: ClassVar[bool] = True  # ``sign`` reads the pod's spec only (Framework.signed_prefix)

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.objects = handle.volumes  # read in place: the live cache updates it

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: object
    ) -> tuple[frozenset[str] | None, Status]:
        if "PersistentVolumeClaim" not in self.objects.seen:
            return None, SKIP
        topology, problem = pod_topology(pod, self.objects)
        if problem is not None:
            return None, unresolvable(problem)
        if not topology:
            return None, SKIP
        state.write(STATE_KEY, topology)
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        topology = state.get(STATE_KEY)
        if not topology or zone_fits(topology, node.node.labels):
            return SUCCESS
        return unresolvable(VolumeZoneConflict())

    def sign(self, pod: Pod) -> Hashable | None:
        claims = tuple(v.claim for v in pod.volumes if v.kind == "persistentVolumeClaim")
        return (pod.namespace, claims) if claims else ()
