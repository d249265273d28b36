"""VolumeBinding: a pod's PersistentVolumeClaims must be bound, or bindable, to volumes the node can reach.

Mirrors kube-scheduler's ``plugins/volumebinding`` (``volume_binding.go`` PreFilter/Filter, ``binder.go``
``GetPodVolumeClaims``/``FindPodVolumes``), the same in 1.30–1.37 except one text (PR #129887, 1.33:
``node(s) had volume node affinity conflict`` → ``node(s) didn't match PersistentVolume's node affinity``,
rendered per minor by ``scheduler.reasons``).

PreFilter (``podHasPVCs``): a claim that does not exist (``persistentvolumeclaim "x" not found``; for a
generic ephemeral volume ``waiting for ephemeral volume controller …``), is Lost, is being deleted or (ephemeral)
is not controlled by the pod rejects the pod on every node (UnschedulableAndUnresolvable). A claim that is not
fully bound (``spec.volumeName`` plus the ``pv.kubernetes.io/bind-completed`` annotation) and is not a
WaitForFirstConsumer claim without a volume name is "unbound immediate": ``pod has unbound immediate
PersistentVolumeClaims``. Filter, per node: bound claims' PVs must exist (``… bound to non-existent pv(s)``) and
their node affinity must match; each WaitForFirstConsumer claim needs an available matching PV whose node
affinity matches (``FindMatchingVolume``), else a class that provisions (not ``kubernetes.io/no-provisioner``)
onto the node's topology (``allowedTopologies``) with room there (``checkVolumeProvisions``/
``hasEnoughCapacity``: when the provisioner is a CSIDriver with ``storageCapacity: true``, a CSIStorageCapacity of
the class whose nodeTopology selects the node and whose maximumVolumeSize, else capacity, holds the request, else
``node(s) did not have enough free storage``); a claim already given a node (``volume.kubernetes.io/
selected-node``) fits that node only. The claims to provision are checked in order and the first that fails
decides (no provisioner or topology: a bind conflict; no room: not enough storage). Reasons keep upstream's
order; all are UnschedulableAndUnresolvable.

Score (KEP-4049 StorageCapacityScoring; ``pkg/features/kube_features.go``: alpha and off in 1.33–1.36 — 1.32
has the older VolumeCapacityPriority, alpha and off — beta and on by default in 1.37, ``Behaviour.
storage_capacity_scoring``): per feasible node, the PVs FindPodVolumes matched to the pod's WaitForFirstConsumer
claims (static bindings) grouped by the PV's class, each class scored ``shape(requested·100 / capacity)``
(bytes, rounded up; a class over capacity or of capacity 0 gets ``shape(100)``) and the node the rounded mean
(``scorer.go``). With no static binding and StorageCapacityScoring on (1.33+ when enabled; 1.37 by default),
the volumes to provision instead: per class, the requests summed against the ``capacity`` (not
maximumVolumeSize) of the CSIStorageCapacity ``hasEnoughCapacity`` chose for the last of them (``Score``: "cannot
be +="); a claim checked without one (no CSIDriver opting in, no request) is left out. ``shape``
(``VolumeBindingArgs``, the ``pluginConfig`` arg) defaults to utilization 0 → score 10, 100 → 0
(``apis/config/v1/defaults.go``), each score ×10 and interpolated linearly between points
(``helper.BuildBrokenLinearFunction``): the emptier PV wins. The default profile weighs it 1.

Not modelled (said by ``explain``): in-tree PVs translated to CSI topology. A snapshot without CSIDrivers or
CSIStorageCapacities is checked as if no driver opted in (``explain`` says so).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import numpy as np

from kubegpu.errors import ConfigError
from kubegpu.model import volumes as vol
from kubegpu.model.objects import Pod
from kubegpu.scheduler import resource_allocation as ra
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.framework import MAX_NODE_SCORE, CycleState, Handle, Rows
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.plugins.volume_objects import checkable, claim_volumes
from kubegpu.scheduler.reasons import (
    CLAIM_DELETING,
    CLAIM_LOST,
    CLAIM_NOT_FOUND,
    CLAIM_NOT_OWNED,
    EPHEMERAL_NOT_CREATED,
    UNBOUND_IMMEDIATE,
    ClaimProblem,
    Message,
    Reason,
    VolumeBindConflict,
    VolumeMissing,
    VolumeNodeConflict,
    VolumeNoSpace,
)
from kubegpu.scheduler.status import SKIP, SUCCESS, Status, unresolvable

STATE_KEY: Final = names.VOLUME_BINDING
NODES_KEY: Final = f"{names.VOLUME_BINDING}/nodes"  # node name → its Delayed, filled by Filter, read by Score
# SetDefaults_VolumeBindingArgs when StorageCapacityScoring is on: (utilization, score), scores ×10
DEFAULT_SHAPE: Final = ((0, 100), (100, 0))
Shape = tuple[tuple[int, int], ...]
# kubegpu's live scheduler writes no PV bindings (upstream's PreBind): it refuses such pods with this text
NO_BINDER: Final = (
    "kubegpu does not bind volumes: claim(s) {} wait for their first consumer; use kube-scheduler"
)


@dataclass(frozen=True)
class PodClaims:
    """``PodVolumeClaims``: the pod's bound claims and its unbound WaitForFirstConsumer claims."""

    bound: tuple[vol.Claim, ...]
    delayed: tuple[vol.Claim, ...]


def claim_problem(pod: Pod, objects: vol.VolumeObjects) -> ClaimProblem | None:
    """``podHasPVCs``: the first claim the pod cannot use at all, as upstream's PreFilter reports it."""
    for v in claim_volumes(pod):
        claim = objects.claims.get(f"{pod.namespace}/{v.claim}")
        ephemeral = v.kind == "ephemeral"
        if claim is None:
            return ClaimProblem(EPHEMERAL_NOT_CREATED if ephemeral else CLAIM_NOT_FOUND, v.claim)
        if claim.phase == "Lost":
            return ClaimProblem(CLAIM_LOST, claim.name, claim.volume_name)
        if claim.deleting:
            return ClaimProblem(CLAIM_DELETING, claim.name)
        if ephemeral and (not pod.uid or claim.controller_uid != pod.uid):
            return ClaimProblem(CLAIM_NOT_OWNED, claim.name, namespace=pod.namespace, pod=pod.name)
    return None


def delayed_binding(claim: vol.Claim, objects: vol.VolumeObjects) -> bool:
    """``IsDelayBindingMode``: the claim's class exists and waits for the first consumer."""
    cls = objects.classes.get(claim.storage_class) if claim.storage_class else None
    return cls is not None and cls.binding_mode == vol.WAIT_FOR_FIRST_CONSUMER


def sort_claims(pod: Pod, objects: vol.VolumeObjects) -> tuple[PodClaims, bool]:
    """``GetPodVolumeClaims``: (bound and delayed claims, whether any claim is unbound immediate)."""
    bound, delayed, immediate = [], [], False
    for v in claim_volumes(pod):
        claim = objects.claims[f"{pod.namespace}/{v.claim}"]
        if claim.fully_bound:
            bound.append(claim)
        elif delayed_binding(claim, objects) and not claim.volume_name:
            delayed.append(claim)
        else:  # prebound claims count as unbound immediate, as upstream says
            immediate = True
    return PodClaims(tuple(bound), tuple(delayed)), immediate


Provision = tuple[vol.Claim, "vol.CsiStorageCapacity | None"]  # DynamicProvision: claim, NodeCapacity


@dataclass(frozen=True)
class Delayed:
    """``FindPodVolumes``' verdict on the delayed claims for one node."""

    satisfied: bool  # unboundVolumesSatisfied
    sufficient: bool = True  # sufficientStorage
    bindings: tuple[tuple[vol.Claim, vol.Volume], ...] = ()  # StaticBindings
    provisions: tuple[Provision, ...] = ()  # DynamicProvisions (only when every claim can be provisioned)


def check_provisions(
    to_provision: list[vol.Claim], objects: vol.VolumeObjects, labels: Mapping[str, str]
) -> tuple[bool, bool, tuple[Provision, ...]]:
    """``checkVolumeProvisions``: (provision satisfied, sufficient storage, the provisions); the first claim
    that fails returns at once."""
    out: list[Provision] = []
    for claim in to_provision:
        cls = objects.classes[claim.storage_class]  # a delayed claim's class exists (delayed_binding)
        if cls.provisioner in ("", vol.NO_PROVISIONER) or not vol.topology_allows(cls, labels):
            return False, True, ()
        enough, cap = vol.capacity_for(objects, cls, claim, labels)
        if not enough:
            return True, False, ()
        out.append((claim, cap))
    return True, True, tuple(out)


def match_delayed(
    claims: PodClaims, objects: vol.VolumeObjects, node_name: str, labels: Mapping[str, str]
) -> Delayed:
    """``FindPodVolumes`` for the delayed claims on one node."""
    to_match = []
    for claim in claims.delayed:
        selected = claim.annotations.get(vol.SELECTED_NODE)
        if selected is None:
            to_match.append(claim)
        elif selected != node_name:
            return Delayed(False)  # the fast path returns at once
    chosen: set[str] = set()
    bindings: list[tuple[vol.Claim, vol.Volume]] = []
    satisfied = True
    to_provision = [c for c in claims.delayed if vol.SELECTED_NODE in c.annotations]
    for claim in sorted(to_match, key=lambda c: c.request):  # byPVCSize: smallest request first
        pv = vol.find_matching_volume(claim, objects.volumes_of_class(claim.storage_class), labels, chosen)
        if pv is None:
            satisfied = False
            to_provision.append(claim)
        else:
            chosen.add(pv.name)
            bindings.append((claim, pv))
    if not to_provision:
        return Delayed(satisfied, True, tuple(bindings))
    satisfied, sufficient, provisions = check_provisions(to_provision, objects, labels)
    return Delayed(satisfied, sufficient, tuple(bindings), provisions)


def node_reasons(
    claims: PodClaims, delayed: Delayed, objects: vol.VolumeObjects, labels: Mapping[str, str]
) -> tuple[Reason, ...]:
    """``FindPodVolumes``' reasons for one node, in upstream's order (node conflict, bind conflict, PV missing)."""
    bound_ok, pvs_found = True, True
    for claim in claims.bound:  # checkBoundClaims: the first bad claim decides
        pv = objects.volumes.get(claim.volume_name)
        if pv is None:
            pvs_found = False
            break
        if not vol.node_affinity_matches(pv, labels):
            bound_ok = False
            break
    out: list[Reason] = []
    if not bound_ok:
        out.append(VolumeNodeConflict())
    if not delayed.satisfied:
        out.append(VolumeBindConflict())
    if not delayed.sufficient:
        out.append(VolumeNoSpace())
    if not pvs_found:
        out.append(VolumeMissing())
    return tuple(out)


def parse_shape(args: Mapping[str, Any], where: str) -> Shape:
    """``VolumeBindingArgs.shape`` as ``validateFunctionShape`` accepts it, scores ×10; absent or empty: the
    default (SetDefaults_VolumeBindingArgs fills an empty shape before validation sees it)."""
    raw = args.get("shape")
    if raw is None or raw == []:
        return DEFAULT_SHAPE
    if not isinstance(raw, list):
        raise ConfigError(f"{where}.shape: Invalid value: must be a list of points (utilization, score)")
    out: list[tuple[int, int]] = []
    for i, point in enumerate(raw):
        got = []
        for name, hi in (("utilization", 100), ("score", ra.MAX_CUSTOM_PRIORITY_SCORE)):
            v = point.get(name, 0) if isinstance(point, Mapping) else None
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= hi:
                raise ConfigError(
                    f"{where}.shape[{i}].{name}: Invalid value: {v!r}: not in valid range [0, {hi}]"
                )
            got.append(v)
        u, score = got
        if out and out[-1][0] >= u:
            raise ConfigError(
                f"{where}.shape[{i}].utilization: Invalid value: {u}: values must be sorted in increasing order"
            )
        out.append((u, score * (MAX_NODE_SCORE // ra.MAX_CUSTOM_PRIORITY_SCORE)))
    return tuple(out)


def class_resources(delayed: Delayed) -> dict[str, list[int]]:
    """``Score``'s classResourceMap (StorageCapacityScoring on): class → [requested, capacity] in bytes, from
    the static bindings (the PV's class, capacities summed) or, without any, the provisions that found a
    CSIStorageCapacity (the claim's class, the last capacity object's ``capacity``: "cannot be +=")."""
    classes: dict[str, list[int]] = {}
    for claim, pv in delayed.bindings:
        c = classes.setdefault(pv.storage_class, [0, 0])
        c[0] += vol.bytes_of(claim.request)  # Quantity.Value(): milli-units rounded up
        c[1] += vol.bytes_of(pv.capacity)
    if delayed.bindings:
        return classes
    for claim, cap in delayed.provisions:
        if cap is None:
            continue
        c = classes.setdefault(claim.storage_class, [0, 0])
        # upstream reads Capacity.Value() (nil capacity: a nil dereference there; 0 here)
        c[1] = vol.bytes_of(cap.capacity or 0)
        c[0] += vol.bytes_of(claim.request)
    return classes


def capacity_score(classes: dict[str, list[int]], shape: Shape) -> int:
    """``buildScorerFunction`` (``scorer.go``): each class's utilization shaped, the node the rounded mean."""
    if not classes:
        return 0
    utilization = [
        100 if capacity == 0 or requested > capacity else requested * 100 // capacity
        for requested, capacity in classes.values()
    ]
    total = int(ra.broken_linear(shape)(np.array(utilization, dtype=np.int64)).sum())
    n = len(classes)
    return (2 * total + n) // (2 * n)  # math.Round of a non-negative mean


class VolumeBinding:
    name: ClassVar[str] = names.VOLUME_BINDING
    sign_from_spec: ClassVar[bool] = True  # ``sign`` reads the pod's spec only (Framework.signed_prefix)

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.objects = handle.volumes  # read in place: the live cache updates it
        self.binds = handle.binds_volumes
        # the scorer exists only with StorageCapacityScoring on (volume_binding.go New)
        self.scoring = handle.behaviour.storage_capacity_scoring
        self.shape = parse_shape(args, f"{self.name} args") if self.scoring else DEFAULT_SHAPE

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: object
    ) -> tuple[frozenset[str] | None, Status]:
        if not checkable(pod, self.objects):
            return None, SKIP
        problem = claim_problem(pod, self.objects)
        if problem is not None:
            return None, unresolvable(problem)
        claims, immediate = sort_claims(pod, self.objects)
        if immediate:
            return None, unresolvable(ClaimProblem(UNBOUND_IMMEDIATE))
        if claims.delayed and not self.binds:
            return None, unresolvable(Message(NO_BINDER.format(", ".join(c.name for c in claims.delayed))))
        state.write(STATE_KEY, claims)
        state.write(NODES_KEY, {})
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        claims = state.get(STATE_KEY)
        if claims is None:
            return SUCCESS
        reasons = node_reasons(claims, self._delayed(state, claims, node), self.objects, node.node.labels)
        return unresolvable(*reasons) if reasons else SUCCESS

    def _delayed(self, state: CycleState, claims: PodClaims, node: NodeView) -> Delayed:
        """``match_delayed`` on ``node``, once per cycle (upstream keeps Filter's ``podVolumesByNode`` in the
        cycle state for Score): it reads the claims, the storage objects and the node's labels, no pod."""
        by_node: dict[str, Delayed] = state.read(NODES_KEY)
        got = by_node.get(node.name)
        if got is None:
            got = by_node[node.name] = match_delayed(claims, self.objects, node.name, node.node.labels)
        return got

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Status:
        # a pod without delayed claims scores 0 everywhere upstream: skipping it changes no total
        claims = state.get(STATE_KEY)
        return SUCCESS if self.scoring and claims is not None and claims.delayed else SKIP

    def score(self, state: CycleState, pod: Pod, node: NodeView) -> int:
        delayed = self._delayed(state, state.read(STATE_KEY), node)
        return capacity_score(class_resources(delayed), self.shape)

    def sign(self, pod: Pod) -> Hashable | None:
        """A pod with claims is evaluated fresh (its answer depends on the claims, not only the pod)."""
        return None if any(True for _ in claim_volumes(pod)) else ()
