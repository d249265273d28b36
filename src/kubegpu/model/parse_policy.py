"""Raw cluster-policy objects (as the API server returns them) → typed model objects: ResourceQuotas,
LimitRanges (defaulted as the API server stores them), RuntimeClasses, PriorityClasses,
PodDisruptionBudgets and Namespaces. The same contract as ``model.parse``, whose parse context and
metadata rules they share: pure, and every problem an ``InputError`` naming source, object and field.

May not import: anything above the model.
"""

from __future__ import annotations

from kubegpu.model.objects import (
    LimitRange,
    LimitRangeItem,
    Namespace,
    PodDisruptionBudget,
    PriorityClass,
    ResourceQuota,
    RuntimeClass,
    ScopeRequirement,
)

# (the parse context and metadata reading are model.parse's, one place for both)
from kubegpu.model.parse import Raw, _Ctx, _meta, parse_label_selector


def parse_resource_quota(raw: Raw, source: str = "") -> ResourceQuota:
    ctx = _Ctx(source, raw)
    _, ns, name = _meta(ctx, raw, namespaced=True)
    spec = ctx.mapping(raw.get("spec"), "spec")
    status = ctx.mapping(raw.get("status"), "status")
    return ResourceQuota(
        namespace=ns,
        name=name,
        hard=ctx.resources(spec.get("hard"), "spec.hard"),
        used=ctx.resources(status.get("used"), "status.used"),
        scopes=tuple(str(s) for s in ctx.seq(spec.get("scopes"), "spec.scopes")),
        source=source,
        scope_selector=_scope_selector(ctx, spec),
    )


def _scope_selector(ctx: _Ctx, spec: Raw) -> tuple[ScopeRequirement, ...]:
    """``spec.scopeSelector.matchExpressions`` as written (validation allows only known scope names and
    operators on a stored quota; a name kubegpu does not know selects no pod, as upstream's
    ``podMatchesScopeFunc`` answers for scopes that are not a pod's, such as VolumeAttributesClass)."""
    field = "spec.scopeSelector.matchExpressions"
    selector = ctx.mapping(spec.get("scopeSelector"), "spec.scopeSelector")
    out = []
    for i, e in enumerate(ctx.seq(selector.get("matchExpressions"), field)):
        e = ctx.mapping(e, f"{field}[{i}]")
        out.append(
            ScopeRequirement(
                scope=ctx.string(e.get("scopeName"), f"{field}[{i}].scopeName", required=True),
                operator=ctx.string(e.get("operator"), f"{field}[{i}].operator", required=True),
                values=tuple(str(v) for v in ctx.seq(e.get("values"), f"{field}[{i}].values")),
            )
        )
    return tuple(out)


def parse_limit_range(raw: Raw, source: str = "") -> LimitRange:
    ctx = _Ctx(source, raw)
    _, ns, name = _meta(ctx, raw, namespaced=True)
    spec = ctx.mapping(raw.get("spec"), "spec")
    items = []
    for i, item in enumerate(ctx.seq(spec.get("limits"), "spec.limits")):
        item = ctx.mapping(item, f"spec.limits[{i}]")
        f = f"spec.limits[{i}]"
        kind = ctx.string(item.get("type"), f"{f}.type", required=True)
        default = ctx.resources(item.get("default"), f"{f}.default")
        default_request = ctx.resources(item.get("defaultRequest"), f"{f}.defaultRequest")
        high, low = ctx.resources(item.get("max"), f"{f}.max"), ctx.resources(item.get("min"), f"{f}.min")
        if kind == "Container":  # SetDefaults_LimitRangeItem (pkg/apis/core/v1/defaults.go v1.37.2)
            default = {**high, **default}  # no default limit: the max
            default_request = {**low, **default, **default_request}  # no default request: the limit, else min
        ratio = ctx.ratios(item.get("maxLimitRequestRatio"), f"{f}.maxLimitRequestRatio")
        items.append(LimitRangeItem(kind, default, default_request, high, low, ratio))
    return LimitRange(namespace=ns, name=name, limits=tuple(items), source=source)


def parse_runtime_class(raw: Raw, source: str = "") -> RuntimeClass:
    ctx = _Ctx(source, raw)
    _, _, name = _meta(ctx, raw, namespaced=False)
    overhead = ctx.mapping(raw.get("overhead"), "overhead")
    fixed = overhead.get("podFixed")
    ctx.resources(fixed, "overhead.podFixed")  # validated as the API server does
    sched = ctx.mapping(raw.get("scheduling"), "scheduling")
    tolerations = ctx.seq(sched.get("tolerations"), "scheduling.tolerations")
    return RuntimeClass(
        name=name,
        overhead=ctx.mapping(fixed, "overhead.podFixed") if fixed is not None else None,
        node_selector=ctx.str_map(sched.get("nodeSelector"), "scheduling.nodeSelector"),
        tolerations=tuple(ctx.mapping(t, f"scheduling.tolerations[{i}]") for i, t in enumerate(tolerations)),
    )


def parse_priority_class(raw: Raw, source: str = "") -> PriorityClass:
    ctx = _Ctx(source, raw)
    _, _, name = _meta(ctx, raw, namespaced=False)
    if "value" not in raw:
        raise ctx.fail("value", "required field is missing")
    return PriorityClass(
        name=name,
        value=ctx.integer(raw.get("value"), "value"),
        global_default=raw.get("globalDefault") is True,
        preemption_policy=ctx.string(raw.get("preemptionPolicy"), "preemptionPolicy")
        or "PreemptLowerPriority",
    )


def parse_pdb(raw: Raw, source: str = "") -> PodDisruptionBudget:
    ctx = _Ctx(source, raw)
    _, ns, name = _meta(ctx, raw, namespaced=True)
    spec = ctx.mapping(raw.get("spec"), "spec")
    status = ctx.mapping(raw.get("status"), "status")
    allowed = status.get("disruptionsAllowed")
    return PodDisruptionBudget(
        namespace=ns,
        name=name,
        selector=parse_label_selector(ctx, spec.get("selector"), "spec.selector"),
        min_available=spec.get("minAvailable"),
        max_unavailable=spec.get("maxUnavailable"),
        disruptions_allowed=ctx.integer(allowed, "status.disruptionsAllowed")
        if allowed is not None
        else None,
    )


def parse_namespace(raw: Raw, source: str = "") -> Namespace:
    ctx = _Ctx(source, raw)
    meta, _, name = _meta(ctx, raw, namespaced=False, label=True)
    return Namespace(name=name, labels=ctx.str_map(meta.get("labels"), "metadata.labels"))
