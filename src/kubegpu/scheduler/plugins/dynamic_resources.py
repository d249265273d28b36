"""DynamicResources: a pod's ResourceClaims must be allocatable on the node (kube-scheduler 1.34).

Mirrors ``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go``: PreEnqueue and
PreFilter resolve the pod's claims (``resourceclaim.Name``: a template claim is found through
``status.resourceClaimStatuses``, must exist, must not be being deleted, and must be controlled by the
pod); PreFilter rejects a claim already reserved by the maximum number of consumers and a request whose
DeviceClass does not exist, and builds the allocator over the claims that are not allocated yet;
Filter rejects a node an allocated claim's ``nodeSelector`` excludes, then asks the allocator for all
unallocated claims at once; PostFilter answers as upstream's would before any API write; Reserve keeps
the chosen devices so later pods in the same run see them in use (and a shared claim allocated).

Extended resources served by DRA (``scheduler.dra_extended``, where ``Behaviour.dra_extended_resource``):
PreFilter adds the pod's special claim (the one a prior cycle created, found by its annotation and owner,
or an in-memory one without requests); Filter (upstream ``filterExtendedResources``) rejects a node when a
prior cycle's special claim still exists (``cannot schedule extended resource claim``; PostFilter then
reports ``deletion of ResourceClaim completed``) or when a resource is neither in the node's allocatable
nor served by a class (``cannot fit resource``), and otherwise allocates the node's variant of the claim
together with the pod's own claims.

Every rejection is UnschedulableAndUnresolvable (upstream ``statusUnschedulable``), so preemption never
helps a DRA rejection. Statuses carry these reason strings (one constant each below). The DRA objects
come from the framework handle (``Handle.dra``, a ``model.dra.DraObjects``: the snapshot's, set by
``scheduler.assembly``); the plugin is in the default profile from 1.34 (``scheduler.versions``). The
allocator's features (device taints, partitionable devices, consumable capacity) are the minor's default
gates (``versions.DRA_GATES``); args: ``deviceTaints`` overrides the DRADeviceTaints gate. Imports model
and scheduler only.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, ClassVar, Final

from kubegpu.model.affinity import term_matches
from kubegpu.model.dra import RESERVED_FOR_MAX, DraObjects, ResourceClaim
from kubegpu.model.dra_binding import binding_failure
from kubegpu.model.objects import NodeSelectorTerm, Pod, Requirement
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.dra_allocator import (
    TIMED_OUT,
    AllocationError,
    Allocator,
    DeviceId,
    Result,
    SliceIndex,
    slice_index,
)
from kubegpu.scheduler.dra_capacity import Features, allocated_state
from kubegpu.scheduler.dra_extended import (
    IN_MEMORY_NAME,
    ClassResolver,
    extended_requests,
    is_dra_extended_name,
)
from kubegpu.scheduler.framework import (
    CycleState,
    Diagnosis,
    Handle,
    PostFilterResult,
    Rows,
    Scores,
    default_normalize,
)
from kubegpu.scheduler.reasons import DeviceClassMissing, Message
from kubegpu.scheduler.status import SKIP, SUCCESS, Code, Status, unresolvable

DYNAMIC_RESOURCES: Final = "DynamicResources"
STATE_KEY: Final = DYNAMIC_RESOURCES

# Upstream texts (dynamicresources.go; resourceclaim/resourceclaim.go; assumecache NotFoundError).
CANNOT_ALLOCATE: Final = "cannot allocate all claims"
NOT_AVAILABLE: Final = "resourceclaim not available on the node"
IN_USE: Final = "resourceclaim in use"
FIRST_AVAILABLE_MAX: Final = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize
NO_NEW_CLAIMS: Final = "no new claims to deallocate"
# PostFilter after another plugin's PreFilter rejection (1.34+): no state was written, and cs.Read's
# framework.ErrNotFound ("not found") ends PostFilter as an error, so DefaultPreemption never runs
STATE_NOT_FOUND: Final = "not found"
DEALLOCATED: Final = "deallocation of ResourceClaim completed"
STILL_NOT: Final = "still not schedulable"
NOT_CREATED: Final = 'pod "{pod}": ResourceClaim not created yet'
UNSUPPORTED: Final = 'pod "{pod}", spec.resourceClaim "{claim}": none of the supported fields are set'
NOT_FOUND: Final = 'could not find ResourceClaim "{key}"'
DELETING: Final = 'resourceclaim "{name}" is being deleted'
NOT_OWNER: Final = "ResourceClaim {claim} was not created for pod {pod} (pod is not owner)"
STALE_EXTENDED: Final = "cannot schedule extended resource claim"
CANNOT_FIT: Final = "cannot fit resource"
DELETED: Final = "deletion of ResourceClaim completed"


def _binding_failed(c: ResourceClaim) -> bool:
    """Upstream Filter's ``isClaimReadyForBinding`` error (``model.dra_binding.binding_failure``). (The
    binding timeout needs the clock: not modelled.)"""
    return binding_failure(c.allocated or (), c.device_conditions) is not None


def resolve_claims(pod: Pod, dra: DraObjects) -> tuple[list[ResourceClaim], str]:
    """Upstream ``foreachPodResourceClaim``: the pod's claims in spec order, or the first problem's text.
    A template entry whose status names no claim (the controller decided none is needed) is skipped."""
    pc = dra.pod_claims.get(pod.key)
    if pc is None:
        return [], ""
    out: list[ResourceClaim] = []
    for ref in pc.refs:
        check_owner = False
        if ref.claim_name:
            name = ref.claim_name
        elif ref.template_name:
            if ref.name not in pc.statuses:
                return out, NOT_CREATED.format(pod=pod.key)
            generated = pc.statuses[ref.name]
            if generated is None:
                continue
            name, check_owner = generated, True
        else:
            return out, UNSUPPORTED.format(pod=pod.key, claim=ref.name)
        claim = dra.claims.get(f"{pod.namespace}/{name}")
        if claim is None:
            return out, NOT_FOUND.format(key=f"{pod.namespace}/{name}")
        if claim.deleting:
            return out, DELETING.format(name=claim.name)
        uid = pod.uid or pc.uid
        if check_owner and not any(o.controller and o.uid == uid and o.kind == "Pod" for o in claim.owners):
            return out, NOT_OWNER.format(claim=claim.key, pod=pod.key)
        out.append(claim)
    return out, ""


@dataclass
class _State:
    claims: list[ResourceClaim] = field(default_factory=list)
    node_selectors: dict[int, tuple[Any, ...]] = field(default_factory=dict)  # allocated claim → terms
    allocator: Allocator | None = None
    results: dict[str, list[Result]] = field(default_factory=dict)  # node → allocation (Filter's cache)
    unavailable: set[int] = field(default_factory=set)
    # allocated claims whose device binding failed (a True bindingFailureCondition): unavailable on every node
    binding_failed: set[int] = field(default_factory=set)
    special: ResourceClaim | None = None  # the special claim for extended resources (also last in claims)
    to_allocate: list[ResourceClaim] = field(default_factory=list)  # the pod's own unallocated claims
    in_use: set[DeviceId] = field(default_factory=set)
    shared: dict[DeviceId, dict[str, Fraction]] = field(default_factory=dict)  # consumed by allocated shares
    by_requests: dict[Hashable, Allocator] = field(
        default_factory=dict
    )  # special claim's requests → allocator


class DynamicResources:
    name: ClassVar[str] = DYNAMIC_RESOURCES

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.dra: DraObjects = handle.dra
        features = Features.for_minor(handle.behaviour.minor)
        if "deviceTaints" in args:
            features = replace(features, device_taints=bool(args["deviceTaints"]))
        self.features = features
        self._extended = handle.behaviour.dra_extended_resource
        self._resolver: ClassResolver | None = None
        # "no new claims to deallocate" for a pod without claims: 1.34–1.36 (scheduler.versions)
        self._no_claims_text = handle.behaviour.dra_no_claims_text
        self._index: SliceIndex | None = None
        # Claims this run allocated, as upstream's assume cache holds them until the API write: Reserve
        # leaves them pending, the cluster placing the pod (``pod_added``) commits them; a cycle that
        # only asks (``assume=False``) therefore leaves no trace.
        self.assumed: dict[str, tuple[Result, str, str]] = {}  # claim key → (result, node, pod uid)
        self._pending: dict[str, tuple[list[Result], str]] = {}  # pod key → (results, node)

    def index(self) -> SliceIndex:
        if self._index is None:
            self._index = slice_index(self.dra, self.features)
        return self._index

    def resolver(self) -> ClassResolver:
        if self._resolver is None:
            self._resolver = ClassResolver(self.dra.classes)
        return self._resolver

    def special_claim(self, pod: Pod) -> ResourceClaim | None:
        """Upstream ``preFilterExtendedResources``: None unless a class serves one of the pod's extended
        resources; then the special claim a prior cycle created, or an in-memory one without requests."""
        if not self._extended or not self.dra.classes or not self.resolver().mapped(pod.requests):
            return None
        for c in self.dra.claims.values():
            owned = any(o.controller and o.name == pod.name and o.uid == pod.uid for o in c.owners)
            if c.extended_resource and c.namespace == pod.namespace and owned:
                return c
        return ResourceClaim(pod.namespace, IN_MEMORY_NAME, extended_resource=True)

    def _filter_extended(self, s: _State, pod: Pod, node: NodeView) -> tuple[ResourceClaim | None, Status]:
        """Upstream ``filterExtendedResources``: the node's variant of the special claim (None when the node's
        device plugin covers every resource), or a rejection."""
        special = s.special
        if special is None:
            return None, SUCCESS
        if special.requests:
            return None, unresolvable(Message(STALE_EXTENDED))
        allocatable = node.node.allocatable
        resolver = self.resolver()
        need = []
        for r, q in sorted(pod.requests.items()):
            if not q or not is_dra_extended_name(r):
                continue
            if resolver.get(r) is not None and allocatable.get(r, 0) == 0:
                need.append(r)
            elif r not in allocatable:
                return None, unresolvable(Message(CANNOT_FIT))
        if not need:
            return None, SUCCESS
        return replace(special, requests=extended_requests(pod, need, resolver)), SUCCESS

    def claim_view(self, claim: ResourceClaim) -> ResourceClaim:
        """The claim as the assume cache sees it: allocated and reserved if this run reserved it."""
        got = self.assumed.get(claim.key)
        if got is None:
            return claim
        result, node, uid = got
        term = NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", (node,)),))
        return replace(
            claim,
            allocated=result.devices,
            allocation_node_selector=(term,),
            reserved_for=(*claim.reserved_for, uid),
        )

    def changed_claims(self) -> dict[str, ResourceClaim]:
        """The snapshot's claims this run allocated or reserved, as the assume cache holds them ("ns/name" →
        claim): what PreBind would have written (``snapshot_writer``)."""
        return {k: self.claim_view(c) for k in self.assumed if (c := self.dra.claims.get(k)) is not None}

    def in_use(self) -> tuple[set[DeviceId], dict[DeviceId, dict[str, Fraction]]]:
        """``allocated_state`` over the claims as the assume cache sees them, plus the special claims this
        run made."""
        results = [d for c in self.dra.claims.values() for d in self.claim_view(c).allocated or ()]
        for key, (result, _, _) in self.assumed.items():  # special claims this run made
            if key not in self.dra.claims:
                results.extend(result.devices)
        return allocated_state(results, self.features)

    def pre_enqueue(self, pod: Pod) -> Status:
        """Upstream ``PreEnqueue``: the pod stays out of the active queue, with no event, while this fails."""
        _, problem = resolve_claims(pod, self.dra)
        return unresolvable(Message(problem)) if problem else SUCCESS

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterState
    ) -> tuple[frozenset[str] | None, Status]:
        if (
            self not in cluster.listeners
        ):  # the cluster's own list: an id() could be reused by a later cluster
            cluster.listeners.append(self)
        s = _State()
        state.write(STATE_KEY, s)
        claims, problem = resolve_claims(pod, self.dra)
        if problem:
            return None, unresolvable(Message(problem))
        special = self.special_claim(pod)
        if not claims and special is None:
            return None, SKIP
        claims = [self.claim_view(c) for c in claims]
        if special is not None:
            s.special = special = self.claim_view(special)
            claims.append(special)
        to_allocate = []
        for i, c in enumerate(claims):
            if c.allocated is not None:
                if len(c.reserved_for) >= RESERVED_FOR_MAX and pod.uid not in c.reserved_for:
                    return None, unresolvable(Message(IN_USE))
                if c.allocation_node_selector is not None:
                    s.node_selectors[i] = c.allocation_node_selector
                if self.features.binding and _binding_failed(c):
                    s.binding_failed.add(i)
                continue
            if c is special:  # validated per node in Filter
                continue
            to_allocate.append(c)
            for req in c.requests:
                subs = req.alternatives
                for sub in subs:
                    if sub.device_class_name not in self.dra.classes:
                        return None, unresolvable(DeviceClassMissing(sub.name, sub.device_class_name))
        s.claims = claims
        s.to_allocate = to_allocate
        if to_allocate or (special is not None and special.allocated is None):
            s.in_use, s.shared = self.in_use()
            try:
                s.allocator = self._allocator(s, None)
            except AllocationError as exc:
                return None, Status(Code.ERROR, (Message(str(exc)),))
        return None, SUCCESS

    def _allocator(self, s: _State, node_claim: ResourceClaim | None) -> Allocator:
        """The allocator for the pod's claims plus, when a node needs one, that node's special claim (one
        allocator per distinct set of special requests: nodes differ only in which resources they lack)."""
        key = node_claim.requests if node_claim is not None else None
        got = s.by_requests.get(key)
        if got is None:
            claims = [*s.to_allocate, *((node_claim,) if node_claim is not None else ())]
            got = s.by_requests[key] = Allocator(
                claims, self.dra.classes, self.index(), s.in_use, self.features, s.shared
            )
        return got

    def sign(self, pod: Pod) -> Hashable | None:
        """Pods without claims never fail this Filter (one class); pods with claims are evaluated fresh,
        since their answer depends on the claims' state, not on pod fields alone."""
        if pod.key in self.dra.pod_claims or (
            self._extended and self.dra.classes and self.resolver().mapped(pod.requests)
        ):
            return None
        return ()

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        s: _State | None = state.get(STATE_KEY)
        if s is None or not s.claims:
            return SUCCESS
        n = node.node
        node_claim, st = self._filter_extended(s, pod, node)
        if not st.is_success:
            return st
        if node_claim is None and s.special is not None and len(s.claims) == 1:
            s.results[n.name] = []  # only extended resources, all from this node's device plugin
            return SUCCESS
        bad = [
            i
            for i, terms in s.node_selectors.items()
            if not any(term_matches(t, n.labels, n.name) for t in terms)
        ]
        bad += sorted(s.binding_failed.difference(bad))  # unavailable wherever it is allocated
        got: list[Result] | None = None
        if s.allocator is not None and (s.to_allocate or node_claim is not None):
            try:
                got = self._allocator(s, node_claim).allocate(n.name, n.labels)
            except AllocationError as exc:
                if str(exc) == TIMED_OUT:
                    return unresolvable(Message(TIMED_OUT))
                return Status(Code.ERROR, (Message(str(exc)),))
            if got is None:
                return unresolvable(Message(CANNOT_ALLOCATE))
        if bad:
            s.unavailable.update(bad)
            return unresolvable(Message(NOT_AVAILABLE))
        if s.allocator is not None:
            s.results[n.name] = got or []
        return SUCCESS

    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        """Upstream PostFilter. In 1.34 a pod without claims also gets ``no new claims to deallocate``
        (its state holds no claims), which is why every FailedScheduling message of a 1.34 scheduler
        reads ``… no new claims to deallocate, preemption: …``."""
        s: _State | None = state.get(STATE_KEY)
        if (
            s is None
        ):  # an earlier PreFilter rejected the pod: upstream's getStateData fails (framework.ErrNotFound)
            return None, Status(Code.ERROR, (Message(STATE_NOT_FOUND),))
        if not s.claims:
            return None, Status(Code.UNSCHEDULABLE, (Message(NO_NEW_CLAIMS),) if self._no_claims_text else ())
        for i in sorted(s.unavailable):
            c = s.claims[i]
            if c is s.special:
                continue
            if not c.reserved_for or (len(c.reserved_for) == 1 and c.reserved_for[0] == pod.uid):
                # Upstream writes the deallocation here; kubegpu reports it, it does not write.
                return None, Status(Code.UNSCHEDULABLE, (Message(DEALLOCATED),))
        if s.special is not None and s.special.name != IN_MEMORY_NAME:
            return None, Status(Code.UNSCHEDULABLE, (Message(DELETED),))  # upstream deletes the stale claim
        return None, Status(Code.UNSCHEDULABLE, (Message(STILL_NOT),) if self._no_claims_text else ())

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Status:
        """Upstream has no PreScore; its Score is 0 on every node for a pod without claims, which normalizes
        to 0: skipping the plugin for such a pod gives the same totals."""
        s: _State | None = state.get(STATE_KEY)
        return SUCCESS if s is not None and s.claims else SKIP

    def score(self, state: CycleState, pod: Pod, node: NodeView) -> int:
        """Upstream ``Score`` (1.35+, weight 2 in the default profile; ``scheduler.versions``): for each claim
        request with ``firstAvailable`` alternatives, 8 − i when the i-th alternative was allocated on the
        node (``FirstAvailableDeviceRequestMaxSize`` − i, ``computeScore``), summed; 0 without claims.
        Claims allocated in an earlier cycle count with their recorded allocation (1.37's ``computeScore``;
        1.35–1.36 releases before the cherry-picks of kubernetes#139017 index those by position instead and
        fail the pod, kubernetes#139016: kubegpu does not copy that, ``explain.unverified`` says so)."""
        s: _State | None = state.get(STATE_KEY)
        if s is None or not s.claims:
            return 0
        results = s.results.get(node.name)
        if results is None:
            return 0
        fresh = iter(results)
        total = 0
        for claim in s.claims:
            devices = claim.allocated if claim.allocated is not None else next(fresh, None)
            chosen = {d.request for d in (devices.devices if isinstance(devices, Result) else devices or ())}
            for req in claim.requests:
                for i, sub in enumerate(req.first_available):
                    if sub.name in chosen:  # model.dra names subrequests "<request>/<subrequest>" already
                        total += FIRST_AVAILABLE_MAX - i
        return total

    def normalize(self, state: CycleState, pod: Pod, scores: Scores) -> Scores:
        return default_normalize(scores, reverse=False)

    def reserve(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        s: _State | None = state.get(STATE_KEY)
        if s is None or s.allocator is None:
            return SUCCESS
        results = s.results.get(node.name)
        if results is None:
            return Status(Code.ERROR, (Message("claim allocation not found for node"),))
        self._pending[pod.key] = (results, node.name)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: Pod, node: NodeView) -> None:
        self._pending.pop(pod.key, None)

    def pod_added(self, pod: Pod, idx: int, restored: bool = False) -> None:
        got = self._pending.pop(pod.key, None)
        if got is not None:
            for r in got[0]:
                claim = r.claim
                if claim.name == IN_MEMORY_NAME:  # PreBind creates it as <pod>-extended-resources-<random>
                    claim = replace(claim, name=f"{pod.name}-extended-resources")
                    r = Result(claim, r.devices)
                self.assumed[claim.key] = (r, got[1], pod.uid)

    def pod_removed(self, pod: Pod, idx: int) -> None:
        """Claims stay allocated when a pod goes: the claim controller deallocates them later, and
        preemption does not free DRA devices in 1.34."""
