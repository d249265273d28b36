"""Dynamic Resource Allocation objects (``resource.k8s.io``) as typed values, and their parsers.

Owns DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate and a pod's ``spec.resourceClaims``
/ ``status.resourceClaimStatuses``. ``resource.k8s.io/v1`` (GA in 1.34) is the model; ``v1beta2`` has the
same shape and ``v1beta1`` (1.32–1.33 clusters) is read by conversion: its requests carry the class and
selectors directly (v1 puts them under ``exactly``) and its devices hold attributes under ``basic``.
Imports nothing but the model; CEL evaluation lives in ``kubegpu.scheduler.dra_cel``.

Attribute and capacity names are stored fully qualified (``domain/id``): an unqualified name takes the
driver's domain, as ``k8s.io/dynamic-resource-allocation/cel`` (``parseQualifiedName``) does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubegpu.model.dra_binding import Binding, DeviceConditions, parse_binding, parse_device_conditions
from kubegpu.model.dra_capacity import CapacityPolicy, Counters, consumed_capacity, counters, policy, quantity
from kubegpu.model.dra_capacity import qualify as qualify  # the one rule; its users import it from here
from kubegpu.model.dra_taints import DeviceTaintRule, parse_device_taint_rule, parse_device_taints
from kubegpu.model.names import DRA_EXTENDED_CLAIM_ANNOTATION
from kubegpu.model.objects import NodeSelectorTerm, OwnerRef, Taint
from kubegpu.model.parse import _Ctx, _meta, parse_node_selector

GROUP = "resource.k8s.io"
VERSIONS = ("v1", "v1beta2", "v1beta1")
KINDS = frozenset(
    {"DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "DeviceTaintRule"}
)
ALLOCATION_MODES = ("ExactCount", "All")
# Kubernetes' bounds (k8s.io/api/resource/v1 types.go): AllocationResultsMaxSize; DeviceTaintsMaxLength
ALLOCATION_RESULTS_MAX = 32
RESERVED_FOR_MAX = 256  # ResourceClaimReservedForMaxSize: CanBeReserved is len(reservedFor) < this

AttrValue = int | bool | str | tuple[str, str]  # ("version", "1.2.3") marks a semver attribute


@dataclass(frozen=True, slots=True)
class DeviceToleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """``resourceclaim.ToleratesTaint`` (same rule as the core toleration, effects NoSchedule/NoExecute)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


@dataclass(frozen=True, slots=True)
class Device:
    name: str
    attributes: Mapping[str, AttrValue]  # qualified name → value
    capacity: Mapping[str, Fraction]  # qualified name → exact quantity
    capacity_text: Mapping[str, str]  # as written, for messages
    taints: tuple[Taint, ...] = ()
    # partitionable devices (KEP-4815): the counters this device takes from its pool's shared counter sets
    consumes_counters: Counters = ()
    # consumable capacity (KEP-5075): the device may be shared by several allocations, each consuming
    # part of its capacity (qualified name → policy)
    allow_multiple: bool = False
    request_policy: Mapping[str, CapacityPolicy] = field(default_factory=dict)
    binding: Binding | None = None  # bindingConditions & co. (KEP-5007)
    # per-device node selection (KEP-4815, ``perDeviceNodeSelection`` slices): the nodes the device reaches
    node_name: str = ""
    node_selector: tuple[NodeSelectorTerm, ...] | None = None
    all_nodes: bool = False


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: str = ""
    node_selector: tuple[NodeSelectorTerm, ...] | None = None
    all_nodes: bool = False
    devices: tuple[Device, ...] = ()
    source: str = ""
    shared_counters: Counters = ()  # spec.sharedCounters (a slice holds devices or counter sets)
    per_device_node_selection: bool = False  # each device says which nodes it reaches (KEP-4815)


@dataclass(frozen=True, slots=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...] = ()  # CEL expressions
    extended_resource_name: str = ""
    created: str = ""  # metadata.creationTimestamp (RFC 3339): newer wins a shared extendedResourceName
    source: str = ""


@dataclass(frozen=True, slots=True)
class DeviceSubRequest:
    name: str
    device_class_name: str
    selectors: tuple[str, ...] = ()
    allocation_mode: str = "ExactCount"
    count: int = 1
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: tuple[tuple[str, Fraction], ...] = ()  # capacity.requests (name as written, amount)


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """A request: ``exactly`` one kind of device, or ``first_available`` alternatives in order."""

    name: str
    exactly: DeviceSubRequest | None
    first_available: tuple[DeviceSubRequest, ...] = ()
    admin_access: bool = False

    @property
    def alternatives(self) -> tuple[DeviceSubRequest, ...]:
        """The sub-requests tried in order: ``exactly`` alone, else ``first_available``."""
        return (self.exactly,) if self.exactly is not None else self.first_available


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    """``spec.devices.constraints[]``: every device allocated for ``requests`` (all the claim's requests when
    empty; a name may be ``request`` or ``request/subrequest``) has the same value of ``match_attribute``
    (fully qualified, ``domain/id``), or, with ``distinct_attribute`` set instead (KEP-5075), pairwise
    different values of it."""

    requests: tuple[str, ...]
    match_attribute: str
    distinct_attribute: str = ""


@dataclass(frozen=True, slots=True)
class AllocatedDevice:
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool = False
    share_id: str = ""  # set when the device allows multiple allocations (KEP-5075)
    consumed: tuple[tuple[str, Fraction], ...] = ()  # consumedCapacity (qualified name, amount)
    binding: Binding | None = None  # the device's binding conditions, as the allocator copied them

    @property
    def device_id(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.device)


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    namespace: str
    name: str
    uid: str = ""
    owners: tuple[OwnerRef, ...] = ()
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    deleting: bool = False
    allocated: tuple[AllocatedDevice, ...] | None = None  # status.allocation.devices.results
    allocation_node_selector: tuple[NodeSelectorTerm, ...] | None = None
    allocated_at: str = ""  # status.allocation.allocationTimestamp (RFC 3339)
    device_conditions: DeviceConditions = ()  # status.devices (model.dra_binding)
    reserved_for: tuple[str, ...] = ()  # consumer UIDs
    extended_resource: bool = False  # the scheduler's special claim for extended resources (KEP-5004)
    source: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class ResourceClaimTemplate:
    namespace: str
    name: str
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    source: str = ""


@dataclass(frozen=True, slots=True)
class PodClaimRef:
    """One ``spec.resourceClaims`` entry: exactly one of claim name or template name is set."""

    name: str
    claim_name: str = ""
    template_name: str = ""


@dataclass(frozen=True, slots=True)
class PodClaims:
    uid: str
    refs: tuple[PodClaimRef, ...]
    statuses: Mapping[str, str | None]  # status.resourceClaimStatuses: pod claim name → generated claim name

    def claim_name(self, ref: PodClaimRef) -> str:
        """The ResourceClaim a pod's claim entry names: its own ``resourceClaimName``, else the one generated from
        its template (``status.resourceClaimStatuses``); "" when none is known yet."""
        return ref.claim_name or self.statuses.get(ref.name) or ""


@dataclass
class DraObjects:
    """Every DRA object of a snapshot. Empty for clusters without DRA (the usual case), which keeps the
    CEL library unimported."""

    classes: dict[str, DeviceClass] = field(default_factory=dict)
    slices: list[ResourceSlice] = field(default_factory=list)
    claims: dict[str, ResourceClaim] = field(default_factory=dict)  # "ns/name"
    templates: dict[str, ResourceClaimTemplate] = field(default_factory=dict)
    pod_claims: dict[str, PodClaims] = field(default_factory=dict)  # pod "ns/name"
    taint_rules: list[DeviceTaintRule] = field(default_factory=list)  # DeviceTaintRule objects (KEP-5055)

    def __bool__(self) -> bool:
        return bool(
            self.classes
            or self.slices
            or self.claims
            or self.templates
            or self.pod_claims
            or self.taint_rules
        )

    def add(self, raw: Mapping[str, Any], source: str) -> None:
        """Parse one DRA object (raises ``InputError`` naming file, object and field)."""
        kind = raw.get("kind")
        if kind == "DeviceClass":
            dc = parse_device_class(raw, source)
            self.classes[dc.name] = dc
        elif kind == "ResourceSlice":
            self.slices.append(parse_resource_slice(raw, source))
        elif kind == "ResourceClaim":
            c = parse_resource_claim(raw, source)
            self.claims[c.key] = c
        elif kind == "DeviceTaintRule":
            self.taint_rules.append(parse_device_taint_rule(raw, source))
        elif kind == "ResourceClaimTemplate":
            t = parse_resource_claim_template(raw, source)
            self.templates[f"{t.namespace}/{t.name}"] = t

    def add_pod(self, raw: Mapping[str, Any], source: str) -> None:
        """Record a pod's claim references (only pods that have some)."""
        parsed = parse_pod_claims(raw, source)
        if parsed is not None:
            key, claims = parsed
            self.pod_claims[key] = claims


def _version(ctx: _Ctx, raw: Mapping[str, Any]) -> str:
    api = raw.get("apiVersion")
    if api is None:
        return "v1"
    for v in VERSIONS:
        if api == f"{GROUP}/{v}":
            return v
    raise ctx.fail(
        "apiVersion", f"unsupported {api!r}: kubegpu reads {', '.join(GROUP + '/' + v for v in VERSIONS)}"
    )


def _selectors(ctx: _Ctx, value: Any, field: str) -> tuple[str, ...]:
    out = []
    for i, s in enumerate(ctx.seq(value, field)):
        cel = ctx.mapping(ctx.mapping(s, f"{field}[{i}]").get("cel"), f"{field}[{i}].cel")
        if not cel:
            raise ctx.fail(f"{field}[{i}]", "only CEL selectors exist: expected 'cel'")
        out.append(ctx.string(cel.get("expression"), f"{field}[{i}].cel.expression", required=True))
    return tuple(out)


def parse_device_class(raw: Mapping[str, Any], source: str = "") -> DeviceClass:
    ctx = _Ctx(source, raw)
    _version(ctx, raw)
    meta, _, name = _meta(ctx, raw, namespaced=False)
    spec = ctx.mapping(raw.get("spec"), "spec")
    return DeviceClass(
        name=name,
        selectors=_selectors(ctx, spec.get("selectors"), "spec.selectors"),
        extended_resource_name=ctx.string(spec.get("extendedResourceName"), "spec.extendedResourceName"),
        created=ctx.string(meta.get("creationTimestamp"), "metadata.creationTimestamp"),
        source=source,
    )


def _attribute(ctx: _Ctx, value: Any, field: str) -> AttrValue:
    v = ctx.mapping(value, field)
    kinds = [k for k in ("int", "bool", "string", "version") if v.get(k) is not None]
    if len(kinds) != 1:
        raise ctx.fail(field, "exactly one of int, bool, string, version must be set")
    k = kinds[0]
    if k == "int":
        return ctx.integer(v["int"], f"{field}.int")
    if k == "bool":
        if not isinstance(v["bool"], bool):
            raise ctx.fail(f"{field}.bool", f"expected a boolean, got {v['bool']!r}")
        return bool(v["bool"])
    # an empty string is a value (validation.go validateDeviceAttribute counts set pointers; v1.34.4): dranet
    # publishes alias: {string: ""} (google/dranet#30); a version must parse as semver, so it cannot be empty
    text = ctx.string(v[k], f"{field}.{k}", required=k == "version")
    return ("version", text) if k == "version" else text


def _device(ctx: _Ctx, value: Any, field: str, driver: str, v1beta1: bool) -> Device:
    d = ctx.mapping(value, field)
    name = ctx.string(d.get("name"), f"{field}.name", required=True)
    body = d
    body_field = field
    if v1beta1:
        body_field = f"{field}.basic"
        body = ctx.mapping(d.get("basic"), body_field)
    attrs: dict[str, AttrValue] = {}
    for k, v in ctx.mapping(body.get("attributes"), f"{body_field}.attributes").items():
        attrs[qualify(str(k), driver)] = _attribute(ctx, v, f"{body_field}.attributes[{k}]")
    cap: dict[str, Fraction] = {}
    cap_text: dict[str, str] = {}
    policies: dict[str, CapacityPolicy] = {}
    for k, v in ctx.mapping(body.get("capacity"), f"{body_field}.capacity").items():
        f = f"{body_field}.capacity[{k}]"
        q = ctx.mapping(v, f).get("value")
        cap[qualify(str(k), driver)] = quantity(ctx, q, f"{f}.value")
        cap_text[qualify(str(k), driver)] = str(q)
        pol = policy(ctx, ctx.mapping(v, f).get("requestPolicy"), f"{f}.requestPolicy")
        if pol is not None:
            policies[qualify(str(k), driver)] = pol
    return Device(
        name,
        attrs,
        cap,
        cap_text,
        parse_device_taints(ctx, body.get("taints"), f"{body_field}.taints"),
        consumes_counters=counters(
            ctx, body.get("consumesCounters"), f"{body_field}.consumesCounters", "counterSet"
        ),
        allow_multiple=body.get("allowMultipleAllocations") is True,
        request_policy=policies,
        binding=parse_binding(ctx, body, body_field),
        node_name=ctx.string(body.get("nodeName"), f"{body_field}.nodeName"),
        node_selector=parse_node_selector(ctx, body.get("nodeSelector"), f"{body_field}.nodeSelector"),
        all_nodes=body.get("allNodes") is True,
    )


_PER_DEVICE = {  # validateDevice's texts (v1.36.3), keyed by the slice's perDeviceNodeSelection
    True: "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` "
    "is set to true in the ResourceSlice spec",
    False: "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to "
    "true in the ResourceSlice spec",
}


def parse_resource_slice(raw: Mapping[str, Any], source: str = "") -> ResourceSlice:
    ctx = _Ctx(source, raw)
    v1beta1 = _version(ctx, raw) == "v1beta1"
    _, _, name = _meta(ctx, raw, namespaced=False)
    spec = ctx.mapping(raw.get("spec"), "spec")
    driver = ctx.string(spec.get("driver"), "spec.driver", required=True)
    pool = ctx.mapping(spec.get("pool"), "spec.pool")
    node_name = ctx.string(spec.get("nodeName"), "spec.nodeName")
    all_nodes, per_device = spec.get("allNodes") is True, spec.get("perDeviceNodeSelection") is True
    terms = parse_node_selector(ctx, spec.get("nodeSelector"), "spec.nodeSelector")
    # validation.go validateResourceSliceSpec / validateDevice (v1.36.3), with its texts
    if sum((bool(node_name), all_nodes, terms is not None, per_device)) != 1:
        raise ctx.fail(
            "spec",
            "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
        )
    devices = tuple(
        _device(ctx, d, f"spec.devices[{i}]", driver, v1beta1)
        for i, d in enumerate(ctx.seq(spec.get("devices"), "spec.devices"))
    )
    for i, d in enumerate(devices):
        selected = sum((bool(d.node_name), d.all_nodes, d.node_selector is not None))
        if selected != (1 if per_device else 0):
            raise ctx.fail(f"spec.devices[{i}]", _PER_DEVICE[per_device])
    return ResourceSlice(
        name=name,
        driver=driver,
        pool=ctx.string(pool.get("name"), "spec.pool.name", required=True),
        generation=ctx.integer(pool.get("generation"), "spec.pool.generation"),
        slice_count=ctx.integer(pool.get("resourceSliceCount"), "spec.pool.resourceSliceCount", 1),
        node_name=node_name,
        node_selector=terms,
        all_nodes=all_nodes,
        devices=devices,
        source=source,
        shared_counters=counters(ctx, spec.get("sharedCounters"), "spec.sharedCounters", "name"),
        per_device_node_selection=per_device,
    )


def _tolerations(ctx: _Ctx, value: Any, field: str) -> tuple[DeviceToleration, ...]:
    out = []
    for i, t in enumerate(ctx.seq(value, field)):
        t = ctx.mapping(t, f"{field}[{i}]")
        out.append(
            DeviceToleration(
                key=ctx.string(t.get("key"), f"{field}[{i}].key"),
                operator=ctx.string(t.get("operator"), f"{field}[{i}].operator") or "Equal",
                value=ctx.string(t.get("value"), f"{field}[{i}].value"),
                effect=ctx.string(t.get("effect"), f"{field}[{i}].effect"),
            )
        )
    return tuple(out)


def _sub_request(ctx: _Ctx, r: Mapping[str, Any], field: str, name: str) -> DeviceSubRequest:
    mode = ctx.string(r.get("allocationMode"), f"{field}.allocationMode") or "ExactCount"
    if mode not in ALLOCATION_MODES:
        raise ctx.fail(
            f"{field}.allocationMode", f"unsupported value {mode!r}: must be one of {ALLOCATION_MODES}"
        )
    count = ctx.integer(r.get("count"), f"{field}.count", 1)
    if mode == "ExactCount" and count < 1:
        raise ctx.fail(f"{field}.count", f"must be greater than zero, got {count}")
    return DeviceSubRequest(
        name=name,
        device_class_name=ctx.string(r.get("deviceClassName"), f"{field}.deviceClassName", required=True),
        selectors=_selectors(ctx, r.get("selectors"), f"{field}.selectors"),
        allocation_mode=mode,
        count=count,
        tolerations=_tolerations(ctx, r.get("tolerations"), f"{field}.tolerations"),
        capacity=tuple(
            (str(k), quantity(ctx, v, f"{field}.capacity.requests[{k}]"))
            for k, v in ctx.mapping(
                ctx.mapping(r.get("capacity"), f"{field}.capacity").get("requests"),
                f"{field}.capacity.requests",
            ).items()
        ),
    )


def _constraints(ctx: _Ctx, devices: Mapping[str, Any], field: str) -> tuple[DeviceConstraint, ...]:
    out = []
    for i, c in enumerate(ctx.seq(devices.get("constraints"), f"{field}.devices.constraints")):
        f = f"{field}.devices.constraints[{i}]"
        c = ctx.mapping(c, f)
        key = "distinctAttribute" if c.get("distinctAttribute") is not None else "matchAttribute"
        if c.get("distinctAttribute") is not None and c.get("matchAttribute") is not None:
            raise ctx.fail(f, 'exactly one of "matchAttribute" or "distinctAttribute" is required')
        attr = ctx.string(c.get(key), f"{f}.{key}", required=True)
        if "/" not in attr:  # API validation: a fully qualified name
            raise ctx.fail(f"{f}.{key}", f"must be a fully qualified name (domain/id), got {attr!r}")
        names = tuple(
            ctx.string(r, f"{f}.requests[{j}]", required=True)
            for j, r in enumerate(ctx.seq(c.get("requests"), f"{f}.requests"))
        )
        if key == "distinctAttribute":
            out.append(DeviceConstraint(names, "", attr))
        else:
            out.append(DeviceConstraint(names, attr))
    return tuple(out)


def _requests(
    ctx: _Ctx, spec: Mapping[str, Any], field: str, v1beta1: bool
) -> tuple[tuple[DeviceRequest, ...], tuple[DeviceConstraint, ...]]:
    """The requests and constraints of a claim spec (``config`` is opaque to allocation)."""
    devices = ctx.mapping(spec.get("devices"), f"{field}.devices")
    out = []
    for i, r in enumerate(ctx.seq(devices.get("requests"), f"{field}.devices.requests")):
        f = f"{field}.devices.requests[{i}]"
        r = ctx.mapping(r, f)
        name = ctx.string(r.get("name"), f"{f}.name", required=True)
        alts = ctx.seq(r.get("firstAvailable"), f"{f}.firstAvailable")
        exactly_raw = r if v1beta1 and not alts else r.get("exactly")
        exactly = None
        admin = False
        if exactly_raw is not None:
            ef = f if v1beta1 else f"{f}.exactly"
            em = ctx.mapping(exactly_raw, ef)
            exactly = _sub_request(ctx, em, ef, name)
            admin = em.get("adminAccess") is True
        first = tuple(
            _sub_request(
                ctx,
                ctx.mapping(a, f"{f}.firstAvailable[{j}]"),
                f"{f}.firstAvailable[{j}]",
                f"{name}/"
                + ctx.string(ctx.mapping(a, "").get("name"), f"{f}.firstAvailable[{j}].name", required=True),
            )
            for j, a in enumerate(alts)
        )
        if (exactly is None) == (not first):
            raise ctx.fail(f, "exactly one of exactly, firstAvailable must be set")
        out.append(DeviceRequest(name, exactly, first, admin))
    return tuple(out), _constraints(ctx, devices, field)


def parse_resource_claim(raw: Mapping[str, Any], source: str = "") -> ResourceClaim:
    ctx = _Ctx(source, raw)
    v1beta1 = _version(ctx, raw) == "v1beta1"
    meta, ns, name = _meta(ctx, raw, namespaced=True)
    owners = tuple(
        OwnerRef(
            kind=ctx.string(o.get("kind"), f"metadata.ownerReferences[{i}].kind"),
            name=ctx.string(o.get("name"), f"metadata.ownerReferences[{i}].name"),
            uid=ctx.string(o.get("uid"), f"metadata.ownerReferences[{i}].uid"),
            controller=o.get("controller") is True,
        )
        for i, o in enumerate(
            ctx.mapping(x, f"metadata.ownerReferences[{j}]")
            for j, x in enumerate(ctx.seq(meta.get("ownerReferences"), "metadata.ownerReferences"))
        )
    )
    status = ctx.mapping(raw.get("status"), "status")
    alloc_raw = status.get("allocation")
    allocated, alloc_sel, allocated_at = None, None, ""
    if alloc_raw is not None:
        alloc = ctx.mapping(alloc_raw, "status.allocation")
        results = []
        devs = ctx.mapping(alloc.get("devices"), "status.allocation.devices")
        for i, r in enumerate(ctx.seq(devs.get("results"), "status.allocation.devices.results")):
            f = f"status.allocation.devices.results[{i}]"
            r = ctx.mapping(r, f)
            results.append(
                AllocatedDevice(
                    request=ctx.string(r.get("request"), f"{f}.request", required=True),
                    driver=ctx.string(r.get("driver"), f"{f}.driver", required=True),
                    pool=ctx.string(r.get("pool"), f"{f}.pool", required=True),
                    device=ctx.string(r.get("device"), f"{f}.device", required=True),
                    admin_access=r.get("adminAccess") is True,
                    share_id=ctx.string(r.get("shareID"), f"{f}.shareID"),
                    consumed=consumed_capacity(ctx, r, f),
                    binding=parse_binding(ctx, r, f),
                )
            )
        allocated = tuple(results)
        alloc_sel = parse_node_selector(ctx, alloc.get("nodeSelector"), "status.allocation.nodeSelector")
        allocated_at = ctx.string(alloc.get("allocationTimestamp"), "status.allocation.allocationTimestamp")
    reserved = tuple(
        ctx.string(ctx.mapping(r, f"status.reservedFor[{i}]").get("uid"), f"status.reservedFor[{i}].uid")
        for i, r in enumerate(ctx.seq(status.get("reservedFor"), "status.reservedFor"))
    )
    requests, constraints = _requests(ctx, ctx.mapping(raw.get("spec"), "spec"), "spec", v1beta1)
    annotations = ctx.mapping(meta.get("annotations"), "metadata.annotations")
    return ResourceClaim(
        namespace=ns,
        name=name,
        uid=ctx.string(meta.get("uid"), "metadata.uid"),
        owners=owners,
        requests=requests,
        constraints=constraints,
        deleting=bool(meta.get("deletionTimestamp")),
        allocated=allocated,
        allocation_node_selector=alloc_sel,
        allocated_at=allocated_at,
        device_conditions=parse_device_conditions(ctx, status),
        reserved_for=reserved,
        extended_resource=annotations.get(DRA_EXTENDED_CLAIM_ANNOTATION) == "true",
        source=source,
    )


def parse_resource_claim_template(raw: Mapping[str, Any], source: str = "") -> ResourceClaimTemplate:
    ctx = _Ctx(source, raw)
    v1beta1 = _version(ctx, raw) == "v1beta1"
    _, ns, name = _meta(ctx, raw, namespaced=True)
    spec = ctx.mapping(ctx.mapping(raw.get("spec"), "spec").get("spec"), "spec.spec")
    requests, constraints = _requests(ctx, spec, "spec.spec", v1beta1)
    return ResourceClaimTemplate(ns, name, requests, constraints, source)


def parse_pod_claims(raw: Mapping[str, Any], source: str = "") -> tuple[str, PodClaims] | None:
    """A pod's ``spec.resourceClaims`` and ``status.resourceClaimStatuses``; None when it has none."""
    ctx = _Ctx(source, raw)
    spec = ctx.mapping(raw.get("spec"), "spec")
    entries = ctx.seq(spec.get("resourceClaims"), "spec.resourceClaims")
    if not entries:
        return None
    meta, ns, name = _meta(ctx, raw, namespaced=True)
    refs = []
    for i, e in enumerate(entries):
        f = f"spec.resourceClaims[{i}]"
        e = ctx.mapping(e, f)
        refs.append(
            PodClaimRef(
                name=ctx.string(e.get("name"), f"{f}.name", required=True),
                claim_name=ctx.string(e.get("resourceClaimName"), f"{f}.resourceClaimName"),
                template_name=ctx.string(
                    e.get("resourceClaimTemplateName"), f"{f}.resourceClaimTemplateName"
                ),
            )
        )
    statuses: dict[str, str | None] = {}
    status = ctx.mapping(raw.get("status"), "status")
    for i, s in enumerate(ctx.seq(status.get("resourceClaimStatuses"), "status.resourceClaimStatuses")):
        f = f"status.resourceClaimStatuses[{i}]"
        s = ctx.mapping(s, f)
        statuses[ctx.string(s.get("name"), f"{f}.name", required=True)] = (
            ctx.string(s.get("resourceClaimName"), f"{f}.resourceClaimName") or None
        )
    return f"{ns}/{name}", PodClaims(ctx.string(meta.get("uid"), "metadata.uid"), tuple(refs), statuses)
