"""Raw ``spec.affinity.podAffinity`` / ``podAntiAffinity`` and ``spec.topologySpreadConstraints`` → model.

Part of ``kubegpu.model.parse`` (kept apart so the pod parser stays readable); validation follows the API
server's (``ValidatePodAffinityTerm``, ``validateTopologySpreadConstraints``): a pod the API server would
refuse is one clear input error naming the field, never a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kubegpu.errors import InputError
from kubegpu.model.objects import LabelSelector, PodAffinity, PodAffinityTerm, SpreadConstraint
from kubegpu.model.resources import ResourceList

Raw = Mapping[str, Any]


class ParseContext(Protocol):
    """What ``parse.ParseContext`` offers (the parser passes itself in; this module never imports it)."""

    def fail(self, field: str, problem: str) -> InputError: ...
    def mapping(self, value: Any, field: str) -> Raw: ...
    def seq(self, value: Any, field: str) -> list[Any]: ...
    def string(self, value: Any, field: str, *, required: bool = False) -> str: ...
    def integer(self, value: Any, field: str, default: int = 0) -> int: ...
    def resources(self, value: Any, field: str) -> ResourceList: ...

    @property
    def validate(self) -> bool: ...


# parse.parse_label_selector, passed in by the caller
Selector = Callable[[Any, Any, str], LabelSelector | None]

WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
INCLUSION_POLICIES = ("Honor", "Ignore")
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _keys(ctx: ParseContext, value: Any, field: str) -> tuple[str, ...]:
    return tuple(ctx.string(k, f"{field}[{i}]", required=True) for i, k in enumerate(ctx.seq(value, field)))


def _term(ctx: ParseContext, selector: Selector, raw: Any, field: str, weight: int = 0) -> PodAffinityTerm:
    t = ctx.mapping(raw, field)
    return PodAffinityTerm(
        topology_key=ctx.string(t.get("topologyKey"), f"{field}.topologyKey", required=True),
        selector=selector(ctx, t.get("labelSelector"), f"{field}.labelSelector"),
        namespaces=_keys(ctx, t.get("namespaces"), f"{field}.namespaces"),
        namespace_selector=selector(ctx, t.get("namespaceSelector"), f"{field}.namespaceSelector"),
        match_label_keys=_keys(ctx, t.get("matchLabelKeys"), f"{field}.matchLabelKeys"),
        mismatch_label_keys=_keys(ctx, t.get("mismatchLabelKeys"), f"{field}.mismatchLabelKeys"),
        weight=weight,
    )


def _terms(
    ctx: ParseContext, selector: Selector, section: Raw, field: str
) -> tuple[tuple[PodAffinityTerm, ...], tuple[PodAffinityTerm, ...]]:
    required = tuple(
        _term(ctx, selector, t, f"{field}.{REQUIRED}[{i}]")
        for i, t in enumerate(ctx.seq(section.get(REQUIRED), f"{field}.{REQUIRED}"))
    )
    preferred = []
    for i, w in enumerate(ctx.seq(section.get(PREFERRED), f"{field}.{PREFERRED}")):
        f = f"{field}.{PREFERRED}[{i}]"
        w = ctx.mapping(w, f)
        weight = ctx.integer(w.get("weight"), f"{f}.weight")
        if not 1 <= weight <= 100:
            raise ctx.fail(f"{f}.weight", f"must be in the range 1-100, got {weight}")
        preferred.append(_term(ctx, selector, w.get("podAffinityTerm"), f"{f}.podAffinityTerm", weight))
    return required, tuple(preferred)


def pod_affinity(ctx: ParseContext, selector: Selector, affinity: Raw) -> PodAffinity:
    """``spec.affinity``'s pod affinity and anti-affinity (``affinity`` is the ``spec.affinity`` mapping)."""
    aff = ctx.mapping(affinity.get("podAffinity"), "spec.affinity.podAffinity")
    anti = ctx.mapping(affinity.get("podAntiAffinity"), "spec.affinity.podAntiAffinity")
    required, preferred = _terms(ctx, selector, aff, "spec.affinity.podAffinity")
    anti_required, anti_preferred = _terms(ctx, selector, anti, "spec.affinity.podAntiAffinity")
    return PodAffinity(required, preferred, anti_required, anti_preferred)


def spread_constraints(ctx: ParseContext, selector: Selector, spec: Raw) -> tuple[SpreadConstraint, ...]:
    out: list[SpreadConstraint] = []
    for i, c in enumerate(ctx.seq(spec.get("topologySpreadConstraints"), "spec.topologySpreadConstraints")):
        f = f"spec.topologySpreadConstraints[{i}]"
        c = ctx.mapping(c, f)
        max_skew = ctx.integer(c.get("maxSkew"), f"{f}.maxSkew")
        if max_skew <= 0:
            raise ctx.fail(f"{f}.maxSkew", f"must be greater than zero, got {max_skew}")
        when = ctx.string(c.get("whenUnsatisfiable"), f"{f}.whenUnsatisfiable", required=True)
        if when not in WHEN_UNSATISFIABLE:
            raise ctx.fail(
                f"{f}.whenUnsatisfiable", f"unsupported value {when!r}: must be one of {WHEN_UNSATISFIABLE}"
            )
        min_domains = None
        if c.get("minDomains") is not None:
            min_domains = ctx.integer(c.get("minDomains"), f"{f}.minDomains")
            if min_domains <= 0 or when != "DoNotSchedule":
                raise ctx.fail(
                    f"{f}.minDomains", "must be greater than zero and needs whenUnsatisfiable: DoNotSchedule"
                )
        policies = []
        for name in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            p = ctx.string(c.get(name), f"{f}.{name}")
            if p and p not in INCLUSION_POLICIES:
                raise ctx.fail(f"{f}.{name}", f"unsupported value {p!r}: must be one of {INCLUSION_POLICIES}")
            policies.append(p)
        out.append(
            SpreadConstraint(
                max_skew=max_skew,
                topology_key=ctx.string(c.get("topologyKey"), f"{f}.topologyKey", required=True),
                when_unsatisfiable=when,
                selector=selector(ctx, c.get("labelSelector"), f"{f}.labelSelector"),
                min_domains=min_domains,
                node_affinity_policy=policies[0],
                node_taints_policy=policies[1],
                match_label_keys=_keys(ctx, c.get("matchLabelKeys"), f"{f}.matchLabelKeys"),
            )
        )
    for i, sc in enumerate(out):  # ValidateSpreadConstraintNotRepeat: reported at the first of the two
        pair = (sc.topology_key, sc.when_unsatisfiable)
        if any((o.topology_key, o.when_unsatisfiable) == pair for o in out[i + 1 :]):
            raise ctx.fail(
                f"spec.topologySpreadConstraints[{i}].{{topologyKey, whenUnsatisfiable}}",
                f'Duplicate value: "{{{pair[0]}, {pair[1]}}}"',
            )
    return tuple(out)
