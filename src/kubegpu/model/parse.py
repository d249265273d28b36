"""Raw API objects (dicts as the API server returns them) → typed model objects.

Pure: no file or network I/O. Every problem raises ``InputError`` naming the source, the object
(``Pod team-a/train-0``) and the field path (``spec.containers[0].resources.limits[nvidia.com/gpu]``).
API-server defaulting that changes scheduling is applied here, as the API server would have applied it
before anything stored the object: a container limit without a request implies an equal request
(``SetDefaults_Pod``), pod-level requests default from the containers' or the pod-level limits
(``defaultPodRequests``), a missing ``status.allocatable`` defaults to ``status.capacity``
(``SetDefaults_NodeStatus``), and a toleration's empty operator means ``Equal``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from kubegpu.errors import InputError
from kubegpu.model import parse_parts, parse_pod_affinity
from kubegpu.model.objects import (
    Container,
    HostPort,
    LabelSelector,
    Node,
    NodeSelectorTerm,
    OwnerRef,
    Pod,
    PreferredTerm,
    PriorityClass,
    Requirement,
    Taint,
    Toleration,
)
from kubegpu.model.quantity import (
    CPU,
    MAX_MILLI,
    WHOLE_MAX,
    QuantityError,
    format_milli,
    saturation,
    to_milli_text,
)
from kubegpu.model.resources import ResourceList, is_extended, is_hugepages

Raw = Mapping[str, Any]

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _not_integer(q: object) -> bool:
    """``MilliValue() % 1000 != 0``; beyond int64 milli-units upstream's MilliValue() wraps or drops to 0
    (``ScaledValue``, quantity.go, apimachinery v0.37.2): kube-apiserver 1.37.2 stores nvidia.com/gpu 1e18
    (tests/fixtures/quantity). kubegpu does not model the wrapped remainder: a saturated amount passes."""
    milli = to_milli_text(CPU, q)
    return bool(milli % 1000) and not (milli == MAX_MILLI and saturation(CPU, q))


def _is_request(raw: Raw, key: str) -> bool:
    """A field the scheduler fits against a node: a pod's requests and overhead (a limit alone is not)."""
    is_pod = isinstance(raw, Mapping) and raw.get("kind") == "Pod"
    return is_pod and (".requests[" in key or key.startswith("spec.overhead["))


def describe(raw: Raw) -> str:
    """``Kind namespace/name`` (or ``Kind name``) for messages, tolerant of broken objects."""
    kind = (raw.get("kind") or "<no kind>") if isinstance(raw, Mapping) else "<not an object>"
    meta = raw.get("metadata") if isinstance(raw, Mapping) else None
    meta = meta if isinstance(meta, Mapping) else {}
    name = meta.get("name") or "<no name>"  # absent, null (`name:` cut short) or empty
    ns = meta.get("namespace")
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


# Where the notes of the objects being parsed go (``collect_notes``; ``build_snapshot`` gives the snapshot's):
# what was read but not counted as written, e.g. an amount beyond kubegpu's int64 column. A context
# variable, not a parameter of every parser, so the parsers keep one signature and threads stay apart.
_NOTES: ContextVar[list[str] | None] = ContextVar("kubegpu_parse_notes", default=None)


@contextmanager
def collect_notes(sink: list[str]) -> Iterator[None]:
    """Send the notes of every object parsed inside the block to ``sink``."""
    token = _NOTES.set(sink)
    try:
        yield
    finally:
        _NOTES.reset(token)


class _Ctx:
    """Carries where we are, so every error names source, object and field."""

    __slots__ = ("noted", "raw", "source", "validate")

    def __init__(self, source: str, raw: Raw, validate: bool = True) -> None:
        self.source = source
        self.raw = raw  # described only when something fails: most objects never do
        self.validate = validate  # False: the caller reported the API server's resource validation itself
        self.noted: int | None = None  # where this object's note is in the sink, once it has one

    @property
    def obj(self) -> str:
        return describe(self.raw)

    def fail(self, field: str, problem: str) -> InputError:
        return InputError(problem, source=self.source, obj=self.obj, field=field)

    def mapping(self, value: Any, field: str) -> Raw:
        if type(value) is dict:  # what JSON and YAML give: skip the ABC check (the load's hottest test)
            return value
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(field, f"expected an object, got {type(value).__name__}")
        return value

    def seq(self, value: Any, field: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(field, f"expected a list, got {type(value).__name__}")
        return value

    def string(self, value: Any, field: str, *, required: bool = False) -> str:
        if value is None or value == "":
            if required:
                raise self.fail(field, "required field is missing")
            return ""
        if not isinstance(value, str):
            raise self.fail(field, f"expected a string, got {type(value).__name__}")
        return value

    def integer(self, value: Any, field: str, default: int = 0) -> int:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(field, f"expected an integer, got {value!r}")
        return value

    def str_map(self, value: Any, field: str) -> dict[str, str]:
        out: dict[str, str] = {}
        if value is None:
            return out
        for k, v in self.mapping(value, field).items():
            if not isinstance(v, str):
                raise self.fail(f"{field}[{k}]", f"expected a string value, got {v!r}")
            out[str(k)] = v
        return out

    def resources(self, value: Any, field: str) -> ResourceList:
        """A resource list, validated as ``ValidateResourceQuantityValue`` does (pkg/apis/core/validation):
        no negative amount ("must be greater than or equal to 0"), and whole amounts of extended
        resources ("must be an integer": ``MilliValue() % 1000 != 0``, before any rounding)."""
        out: ResourceList = {}
        if value is None:
            return out
        for name, q in self.mapping(value, field).items():
            key = f"{field}[{name}]"
            try:
                amount = to_milli_text(str(name), q)
                if self.validate and amount < 0:
                    raise self.fail(key, f"Invalid value: {_shown(q)}: {NEGATIVE}")
                if self.validate and is_extended(str(name)) and _not_integer(q):
                    raise self.fail(key, f"Invalid value: {_shown(q)}: {NOT_INTEGER}")
                out[str(name)] = amount
            except QuantityError as exc:
                raise self.fail(key, str(exc)) from None
            if amount >= WHOLE_MAX or amount <= -WHOLE_MAX:  # at a column bound: perhaps saturated
                self._note_saturated(key, str(name), q)
        return out

    def ratios(self, value: Any, field: str) -> ResourceList:
        """Amounts kept exact in milli-units whatever the resource they name (a LimitRange's
        ``maxLimitRequestRatio``: limitRequestRatioConstraint reads ``enforced.MilliValue()``, so a memory
        ratio of 1.5 is 1500, not rounded up to a whole byte count of 2)."""
        out: ResourceList = {}
        for name, q in (self.mapping(value, field) if value is not None else {}).items():
            try:
                out[str(name)] = to_milli_text(CPU, q)
            except QuantityError as exc:
                raise self.fail(f"{field}[{name}]", str(exc)) from None
        return out

    def _note_saturated(self, key: str, name: str, q: object) -> None:
        """One note per object, naming each field whose amount kubegpu saturated (``quantity.saturation``)."""
        sink = _NOTES.get()
        if sink is None:
            return
        line = saturation(name, q, request=_is_request(self.raw, key))
        if line is None:
            return
        if self.noted is None:
            self.noted = len(sink)
            sink.append(f"{self.obj}: {key} {line}")
        else:
            sink[self.noted] += f"; {key} {line}"


# pkg/apis/core/validation's messages, here once (admission.validation reports them on raw manifests)
NEGATIVE = "must be greater than or equal to 0"  # apimachinery IsNegativeErrorMsg
NOT_INTEGER = "must be an integer"
LIMIT_REQUIRED = "Limit must be set for non overcommitable resources"


def request_limit_problem(name: str, limit_text: str, over: bool) -> str:
    """``ValidateResourceRequirements``' message for a request that differs from its limit (``over``: it is
    above it): extended resources and hugepages must equal theirs, others may not exceed it."""
    if not (is_extended(name) or is_hugepages(name)):
        return f"must be less than or equal to {name} limit of {limit_text}" if over else ""
    return f"must be equal to {name} limit of {limit_text}"


def _shown(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


# k8s.io/apimachinery/pkg/util/validation/validation.go: IsDNS1123Subdomain / IsDNS1123Label
_DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = _DNS_LABEL + r"(\." + _DNS_LABEL + ")*"
# matched whole (``fullmatch``): Go's ``$`` is the end of the text, Python's ``$`` also matches before a
# final newline, so "gpu\n" would pass as a name
_SUBDOMAIN_RE = re.compile(_DNS_SUBDOMAIN)
_LABEL_RE = re.compile(_DNS_LABEL)


def name_problem(name: str, *, label: bool = False) -> str:
    """The API server's complaint about an object name ("" when valid): a DNS-1123 subdomain (most kinds,
    ``NameIsDNSSubdomain``) or label (Namespace, ``ValidateNamespaceName``)."""
    limit, regex = (63, _LABEL_RE) if label else (253, _SUBDOMAIN_RE)
    if len(name) > limit:
        return f"must be no more than {limit} characters"
    if regex.fullmatch(name):
        return ""
    if label:
        return ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                f"start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                f"validation is '{_DNS_LABEL}')")  # fmt: skip
    return ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
            f"must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
            f"is '{_DNS_SUBDOMAIN}')")  # fmt: skip


# the namespace the API server gives a namespaced object written without one (kubectl's current context
# namespace, "default" unless set; a snapshot has no context)
DEFAULT_NAMESPACE = "default"


def namespace_of(meta: Mapping[str, Any]) -> str:
    """A namespaced object's namespace as the model keeps it (``DEFAULT_NAMESPACE`` when unset)."""
    ns = meta.get("namespace")
    return ns if isinstance(ns, str) and ns else DEFAULT_NAMESPACE


def _toleration_seconds(ctx: _Ctx, t: Raw, effect: str, field: str) -> int | None:
    """``tolerationSeconds`` (an int64; None when unset), which the API server only takes with effect
    NoExecute (pkg/apis/core/validation ValidateTolerations)."""
    if t.get("tolerationSeconds") is None:
        return None
    if effect != "NoExecute":
        raise ctx.fail(
            f"{field}.effect",
            f"Invalid value: {_shown(effect)}: effect must be 'NoExecute' when `tolerationSeconds` is set",
        )
    return ctx.integer(t.get("tolerationSeconds"), f"{field}.tolerationSeconds")


def _meta(ctx: _Ctx, raw: Raw, *, namespaced: bool, label: bool = False) -> tuple[Raw, str, str]:
    meta = ctx.mapping(raw.get("metadata"), "metadata")
    name = ctx.string(meta.get("name"), "metadata.name", required=True)
    problem = name_problem(name, label=label)
    if problem:
        raise ctx.fail("metadata.name", f"Invalid value: {_shown(name[:300])}: {problem}")
    ns = ctx.string(meta.get("namespace"), "metadata.namespace") or DEFAULT_NAMESPACE if namespaced else ""
    if namespaced and name_problem(ns, label=True):
        raise ctx.fail(
            "metadata.namespace", f"Invalid value: {_shown(ns[:300])}: {name_problem(ns, label=True)}"
        )
    return meta, ns, name


def parse_node(raw: Raw, source: str = "") -> Node:
    ctx = _Ctx(source, raw)
    meta, _, name = _meta(ctx, raw, namespaced=False)
    spec = ctx.mapping(raw.get("spec"), "spec")
    status = ctx.mapping(raw.get("status"), "status")
    taints = parse_taints(ctx, spec.get("taints"), "spec.taints")
    capacity = ctx.resources(status.get("capacity"), "status.capacity")
    allocatable = (
        ctx.resources(status.get("allocatable"), "status.allocatable")
        if status.get("allocatable") is not None
        else dict(capacity)
    )
    conditions = []
    ready = True
    for i, c in enumerate(ctx.seq(status.get("conditions"), "status.conditions")):
        c = ctx.mapping(c, f"status.conditions[{i}]")
        ctype = ctx.string(c.get("type"), f"status.conditions[{i}].type")
        cstatus = ctx.string(c.get("status"), f"status.conditions[{i}].status")
        conditions.append((ctype, cstatus, ctx.string(c.get("message"), f"status.conditions[{i}].message")))
        if ctype == "Ready":
            ready = cstatus == "True"
    unschedulable = spec.get("unschedulable", False)
    if not isinstance(unschedulable, bool):
        raise ctx.fail("spec.unschedulable", f"expected a boolean, got {unschedulable!r}")
    return Node(
        name=name,
        labels=ctx.str_map(meta.get("labels"), "metadata.labels"),
        annotations=ctx.str_map(meta.get("annotations"), "metadata.annotations"),
        taints=tuple(taints),
        unschedulable=unschedulable,
        capacity=capacity,
        allocatable=allocatable,
        ready=ready,
        conditions=tuple(conditions),
        source=source,
        images=parse_parts.images(ctx, status.get("images")),
    )


def parse_taints(ctx: _Ctx, value: Any, field: str) -> tuple[Taint, ...]:
    """A list of taints (a node's ``spec.taints``, a DRA device's ``taints``): key and effect required."""
    out = []
    for i, t in enumerate(ctx.seq(value, field)):
        t = ctx.mapping(t, f"{field}[{i}]")
        effect = ctx.string(t.get("effect"), f"{field}[{i}].effect", required=True)
        if effect not in TAINT_EFFECTS:
            raise ctx.fail(
                f"{field}[{i}].effect", f"unsupported value {effect!r}: must be one of {TAINT_EFFECTS}"
            )
        out.append(
            Taint(
                key=ctx.string(t.get("key"), f"{field}[{i}].key", required=True),
                value=ctx.string(t.get("value"), f"{field}[{i}].value"),
                effect=effect,
            )
        )
    return tuple(out)


def parse_node_selector(ctx: _Ctx, value: Any, field: str) -> tuple[NodeSelectorTerm, ...] | None:
    """A ``NodeSelector`` (``nodeSelectorTerms``, ORed); None when absent."""
    if value is None:
        return None
    raw_terms = ctx.seq(ctx.mapping(value, field).get("nodeSelectorTerms"), f"{field}.nodeSelectorTerms")
    return tuple(_term(ctx, t, f"{field}.nodeSelectorTerms[{i}]") for i, t in enumerate(raw_terms))


def _requirements(ctx: _Ctx, value: Any, field: str, operators: tuple[str, ...]) -> tuple[Requirement, ...]:
    out = []
    for i, r in enumerate(ctx.seq(value, field)):
        r = ctx.mapping(r, f"{field}[{i}]")
        op = ctx.string(r.get("operator"), f"{field}[{i}].operator", required=True)
        if op not in operators:
            raise ctx.fail(f"{field}[{i}].operator", f"unsupported value {op!r}: must be one of {operators}")
        values = tuple(str(v) for v in ctx.seq(r.get("values"), f"{field}[{i}].values"))
        out.append(Requirement(ctx.string(r.get("key"), f"{field}[{i}].key", required=True), op, values))
    return tuple(out)


def _term(ctx: _Ctx, value: Any, field: str) -> NodeSelectorTerm:
    t = ctx.mapping(value, field)
    return NodeSelectorTerm(
        match_expressions=_requirements(
            ctx, t.get("matchExpressions"), f"{field}.matchExpressions", SELECTOR_OPERATORS
        ),
        match_fields=_requirements(ctx, t.get("matchFields"), f"{field}.matchFields", SELECTOR_OPERATORS),
    )


def parse_label_selector(ctx: _Ctx, value: Any, field: str) -> LabelSelector | None:
    if value is None:
        return None
    sel = ctx.mapping(value, field)
    return LabelSelector(
        match_labels=tuple(sorted(ctx.str_map(sel.get("matchLabels"), f"{field}.matchLabels").items())),
        match_expressions=_requirements(
            ctx, sel.get("matchExpressions"), f"{field}.matchExpressions", LABEL_OPERATORS
        ),
    )


def _container(ctx: _Ctx, raw: Any, field: str, host_network: bool = False) -> Container:
    """One container; with ``host_network`` a port without ``hostPort`` takes its ``containerPort`` as the API
    server defaults it (pkg/apis/core/v1/defaults.go SetDefaults_Pod, defaultHostNetworkPorts)."""
    c = ctx.mapping(raw, field)
    res = ctx.mapping(c.get("resources"), f"{field}.resources")
    limits = ctx.resources(res.get("limits"), f"{field}.resources.limits")
    requests = ctx.resources(res.get("requests"), f"{field}.resources.requests")
    for name, amount in limits.items():  # SetDefaults_Pod: a limit alone implies the request
        requests.setdefault(name, amount)
    if ctx.validate:
        _requests_within_limits(ctx, f"{field}.resources", requests, limits)
    ports = []
    for i, p in enumerate(ctx.seq(c.get("ports"), f"{field}.ports")):
        p = ctx.mapping(p, f"{field}.ports[{i}]")
        host_port = ctx.integer(p.get("hostPort"), f"{field}.ports[{i}].hostPort")
        if host_port == 0 and host_network:
            host_port = ctx.integer(p.get("containerPort"), f"{field}.ports[{i}].containerPort")
        if host_port > 0:
            ports.append(
                HostPort(
                    port=host_port,
                    protocol=ctx.string(p.get("protocol"), f"{field}.ports[{i}].protocol") or "TCP",
                    ip=ctx.string(p.get("hostIP"), f"{field}.ports[{i}].hostIP"),
                )
            )
    security = ctx.mapping(c.get("securityContext"), f"{field}.securityContext")
    return Container(
        name=ctx.string(c.get("name"), f"{field}.name", required=True),
        requests=requests,
        limits=limits,
        host_ports=tuple(ports),
        restart_policy=ctx.string(c.get("restartPolicy"), f"{field}.restartPolicy"),
        privileged=security.get("privileged") is True,
        image=ctx.string(c.get("image"), f"{field}.image"),
    )


def parse_owner(ctx: _Ctx, meta: Raw) -> OwnerRef | None:
    """The controller among ``metadata.ownerReferences`` (``controller: true``), else the first one."""
    owner = None
    for i, o in enumerate(ctx.seq(meta.get("ownerReferences"), "metadata.ownerReferences")):
        o = ctx.mapping(o, f"metadata.ownerReferences[{i}]")
        if o.get("controller") is True or owner is None:
            owner = OwnerRef(
                str(o.get("kind", "")),
                str(o.get("name", "")),
                str(o.get("apiVersion", "")),
                o.get("controller") is True,
                str(o.get("uid", "")),
            )
    return owner


def parse_pod(
    raw: Raw,
    source: str = "",
    priority_classes: Mapping[str, PriorityClass] | None = None,
    *,
    validate_resources: bool = True,
) -> Pod:
    """Parse a Pod. ``priority_classes`` resolves ``priorityClassName`` when ``spec.priority`` is unset,
    as the Priority admission plugin does for pods that were never admitted (manifests).
    ``validate_resources=False``: the caller has reported ``ValidateResourceRequirements``' errors itself
    (``admission.validation``) and wants the pod read anyway, amounts rounded as the API server would."""
    ctx = _Ctx(source, raw, validate_resources)
    meta, ns, name = _meta(ctx, raw, namespaced=True)
    spec = ctx.mapping(raw.get("spec"), "spec")
    status = ctx.mapping(raw.get("status"), "status")
    raw_containers = ctx.seq(spec.get("containers"), "spec.containers")
    if not raw_containers:
        raise ctx.fail("spec.containers", "Required value")
    host_net = spec.get("hostNetwork") is True
    containers = tuple(
        _container(ctx, c, f"spec.containers[{i}]", host_net) for i, c in enumerate(raw_containers)
    )
    init = tuple(
        _container(ctx, c, f"spec.initContainers[{i}]", host_net)
        for i, c in enumerate(ctx.seq(spec.get("initContainers"), "spec.initContainers"))
    )
    tolerations = []
    for i, t in enumerate(ctx.seq(spec.get("tolerations"), "spec.tolerations")):
        t = ctx.mapping(t, f"spec.tolerations[{i}]")
        op = ctx.string(t.get("operator"), f"spec.tolerations[{i}].operator") or "Equal"
        if op not in ("Equal", "Exists"):
            raise ctx.fail(
                f"spec.tolerations[{i}].operator", f"unsupported value {op!r}: must be Equal or Exists"
            )
        effect = ctx.string(t.get("effect"), f"spec.tolerations[{i}].effect")
        if effect and effect not in TAINT_EFFECTS:
            raise ctx.fail(f"spec.tolerations[{i}].effect", f"unsupported value {effect!r}")
        tolerations.append(
            Toleration(
                key=ctx.string(t.get("key"), f"spec.tolerations[{i}].key"),
                operator=op,
                value=ctx.string(t.get("value"), f"spec.tolerations[{i}].value"),
                effect=effect,
                seconds=_toleration_seconds(ctx, t, effect, f"spec.tolerations[{i}]"),
            )
        )
    tolerations = parse_parts.default_tolerations(tolerations, bool(meta.get("uid")))
    affinity = ctx.mapping(spec.get("affinity"), "spec.affinity")
    node_aff = ctx.mapping(affinity.get("nodeAffinity"), "spec.affinity.nodeAffinity")
    required: tuple[NodeSelectorTerm, ...] | None = None
    req_field = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    if node_aff.get("requiredDuringSchedulingIgnoredDuringExecution") is not None:
        req = ctx.mapping(node_aff.get("requiredDuringSchedulingIgnoredDuringExecution"), req_field)
        required = tuple(
            _term(ctx, t, f"{req_field}.nodeSelectorTerms[{i}]")
            for i, t in enumerate(ctx.seq(req.get("nodeSelectorTerms"), f"{req_field}.nodeSelectorTerms"))
        )
    pref_field = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = []
    for i, p in enumerate(
        ctx.seq(node_aff.get("preferredDuringSchedulingIgnoredDuringExecution"), pref_field)
    ):
        p = ctx.mapping(p, f"{pref_field}[{i}]")
        preferred.append(
            PreferredTerm(
                weight=ctx.integer(p.get("weight"), f"{pref_field}[{i}].weight"),
                preference=_term(ctx, p.get("preference"), f"{pref_field}[{i}].preference"),
            )
        )
    priority_class_name = ctx.string(spec.get("priorityClassName"), "spec.priorityClassName")
    priority = spec.get("priority")
    preemption_policy = ctx.string(spec.get("preemptionPolicy"), "spec.preemptionPolicy")
    if priority is None and priority_classes:
        pc = (
            priority_classes.get(priority_class_name)
            if priority_class_name
            else next((p for p in priority_classes.values() if p.global_default), None)
        )
        if pc is not None:
            priority = pc.value
            preemption_policy = preemption_policy or pc.preemption_policy
    owner = parse_owner(ctx, meta)
    gates = tuple(
        str(ctx.mapping(g, f"spec.schedulingGates[{i}]").get("name", ""))
        for i, g in enumerate(ctx.seq(spec.get("schedulingGates"), "spec.schedulingGates"))
    )
    grace = ctx.integer(spec.get("terminationGracePeriodSeconds"), "spec.terminationGracePeriodSeconds", 30)
    if grace < 0:
        raise ctx.fail("spec.terminationGracePeriodSeconds", f"must be non-negative, got {grace}")
    scheduled = None
    ready = False
    for i, c in enumerate(ctx.seq(status.get("conditions"), "status.conditions")):
        c = ctx.mapping(c, f"status.conditions[{i}]")
        if c.get("type") == "PodScheduled":
            scheduled = (str(c.get("status", "")), str(c.get("reason", "")), str(c.get("message", "")))
        elif c.get("type") == "Ready":
            ready = c.get("status") == "True"
    pod_level = parse_parts.pod_level(ctx, spec)
    return Pod(
        namespace=ns,
        name=name,
        uid=ctx.string(meta.get("uid"), "metadata.uid"),
        creation_timestamp=ctx.string(meta.get("creationTimestamp"), "metadata.creationTimestamp"),
        labels=ctx.str_map(meta.get("labels"), "metadata.labels"),
        annotations=ctx.str_map(meta.get("annotations"), "metadata.annotations"),
        owner=owner,
        containers=containers,
        init_containers=init,
        overhead=ctx.resources(spec.get("overhead"), "spec.overhead"),
        pod_level_requests=parse_parts.pod_level_requests(
            ctx, pod_level, containers, init, _requests_within_limits
        ),
        pod_level_limits=pod_level[1],
        node_name=ctx.string(spec.get("nodeName"), "spec.nodeName"),
        scheduler_name=ctx.string(spec.get("schedulerName"), "spec.schedulerName") or "default-scheduler",
        priority=ctx.integer(priority, "spec.priority"),
        priority_class_name=priority_class_name,
        preemption_policy=preemption_policy or "PreemptLowerPriority",
        node_selector=ctx.str_map(spec.get("nodeSelector"), "spec.nodeSelector"),
        required_affinity=required,
        preferred_affinity=tuple(preferred),
        tolerations=tuple(tolerations),
        scheduling_gates=gates,
        host_network=host_net,
        pod_affinity=parse_pod_affinity.pod_affinity(ctx, parse_label_selector, affinity),
        spread_constraints=parse_pod_affinity.spread_constraints(ctx, parse_label_selector, spec),
        volumes=parse_parts.volumes(ctx, spec.get("volumes"), name),
        phase=ctx.string(status.get("phase"), "status.phase") or "Pending",
        deletion_timestamp=ctx.string(meta.get("deletionTimestamp"), "metadata.deletionTimestamp"),
        termination_grace_period_seconds=grace,
        deletion_grace_period_seconds=parse_parts.deletion_grace(ctx, meta),
        start_time=ctx.string(status.get("startTime"), "status.startTime"),
        nominated_node_name=ctx.string(status.get("nominatedNodeName"), "status.nominatedNodeName"),
        scheduled_condition=scheduled,
        ready=ready,
        source=source,
        container_states=parse_parts.container_states(ctx, status),
        status_requests=parse_parts.resize_requests(ctx, status, containers, init, spec),
        status_reason=ctx.string(status.get("reason"), "status.reason"),
        status_message=ctx.string(status.get("message"), "status.message"),
        active_deadline_seconds=parse_parts.active_deadline(ctx, spec),
        best_effort=parse_parts.best_effort(ctx, pod_level, status, containers, init),
    )


def _requests_within_limits(ctx: _Ctx, field: str, requests: ResourceList, limits: ResourceList) -> None:
    """``ValidateResourceRequirements``: a resource that cannot be overcommitted (extended resources and
    hugepages: not ``IsOvercommitAllowed``) needs a limit equal to its request; any other request may not
    exceed its limit."""
    for name, amount in requests.items():
        if name not in limits:
            if is_extended(name) or is_hugepages(name):
                raise ctx.fail(f"{field}.limits", f"Required value: {LIMIT_REQUIRED}")
            continue
        if amount != limits[name]:
            shown, limit = format_milli(name, amount), format_milli(name, limits[name])
            problem = request_limit_problem(name, limit, amount > limits[name])
            if problem:
                raise ctx.fail(f"{field}.requests", f'Invalid value: "{shown}": {problem}')
