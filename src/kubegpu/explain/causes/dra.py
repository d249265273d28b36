"""DynamicResources reasons (``cannot allocate all claims``): per node and request, the DRA explainer's numbers.

The plugin's reasons are plain ``Message`` values carrying upstream's text; only ``cannot allocate all
claims`` has device-level evidence. Per node, each request of the pod's unallocated claims (and, where a
class serves one of its extended resources and the node's device plugin does not, the special claim's
requests) as ``explain.dra.explain_request`` counts it: devices in reach, admitted by the class and by
the selectors (the first rejecting clause of one rejected device), held by whom, free, short; the fix.
With the minor's DRA gates (device taints, partitionable devices, consumable capacity): per request the
devices a taint, the pool's counters or the device's capacity refuse, one with its values; per claim the
devices the allocator refused only in combination (``allocation_refusals``: counters or a shared device's
capacity the claim's other devices already take, a constraint), with values; per ``distinctAttribute``
the free devices by value. Advice: the nearest node (fewest devices short) and its fix. The slice index,
the device holders and the pod's resolved claims are the same for every node: made once per pod
(``Context.once``), not per node.
"""

from __future__ import annotations

from kubegpu.explain.causes.base import Advice, Context, Hooks
from kubegpu.explain.dra import (
    RequestOnNode,
    State,
    allocation_refusals,
    claims_state,
    explain_request,
    fix,
    holders,
    nearest,
    own_claims,
)
from kubegpu.explain.dra_inventory import empty_gpu_slices, empty_slice_text
from kubegpu.explain.shared_evidence import store_for
from kubegpu.model.dra import ResourceClaim
from kubegpu.model.names import COMPUTE_DOMAIN_CLASS_PREFIX, NVIDIA_DRA_DRIVER
from kubegpu.model.objects import Node
from kubegpu.scheduler.dra_allocator import REFUSED_CONSTRAINT, SliceIndex, slice_index
from kubegpu.scheduler.dra_capacity import Features
from kubegpu.scheduler.dra_extended import ClassResolver, extended_requests
from kubegpu.scheduler.plugins.dynamic_resources import CANNOT_ALLOCATE, resolve_claims
from kubegpu.scheduler.reasons import DeviceClassMissing, Message, Reason


def _index(ctx: Context) -> SliceIndex:
    return ctx.once((_index,), lambda: slice_index(ctx.engine.snapshot.dra, _features(ctx)))


def _state(ctx: Context) -> State:
    return ctx.once((_state,), lambda: claims_state(ctx.engine.snapshot.dra, _features(ctx)))


def _unallocated(ctx: Context) -> tuple[list[ResourceClaim], ClassResolver]:
    """The pod's claims not yet allocated, and the classes' extended-resource mapping."""

    def make() -> tuple[list[ResourceClaim], ClassResolver]:
        dra = ctx.engine.snapshot.dra
        claims, _ = resolve_claims(ctx.pod, dra)
        return [c for c in claims if c.allocated is None], ClassResolver(dra.classes)

    return ctx.once((_unallocated,), make)


def _claims(ctx: Context, node: Node) -> list[ResourceClaim]:
    """The pod's unallocated claims, plus the special claim this node would need (KEP-5004)."""
    unallocated, resolver = _unallocated(ctx)
    out = list(unallocated)
    need = [r for r in resolver.mapped(ctx.pod.requests) if node.allocatable.get(r, 0) == 0]
    if need and ctx.engine.framework.handle.behaviour.dra_extended_resource:
        reqs = extended_requests(ctx.pod, need, resolver)
        served = ", ".join(need)
        special = ResourceClaim(ctx.pod.namespace, f"{ctx.pod.name} ({served})", requests=reqs)
        _labels(ctx)[special.key] = f"the extended-resource claim ({served})"  # named by what it serves
        out.append(special)
    return out


def _labels(ctx: Context) -> dict[str, str]:
    """How the evidence names each of the pod's claims: by the pod's own name for it (``pod claim gpu``:
    ``spec.resourceClaims[].name``), whether generated from a template or named (the explanation's
    ``claims`` says which ResourceClaim each is), the special claim by the resources it serves (added by
    ``_claims``, which makes it). Nothing of
    the claims' or the pod's own names: pods whose claims ask alike read alike, so ``diagnose`` can explain
    them once (``explain.diagnose.explain_many``)."""

    def make() -> dict[str, str]:
        own = own_claims(ctx.pod, ctx.engine.snapshot.dra)
        return {key: f"pod claim {ref}" for ref, key in own.items()}

    return ctx.once((_labels,), make)


def label(ctx: Context, key: str) -> str:
    """``_labels``' name of the claim ``key`` (``claim <key>`` for one the pod does not reference)."""
    return _labels(ctx).get(key) or f"claim {key}"


def _features(ctx: Context) -> Features:
    return Features.for_minor(ctx.engine.framework.handle.behaviour.minor)


def _rows(ctx: Context, node: Node) -> list[tuple[ResourceClaim, RequestOnNode]]:
    """Each request's explanation on ``node`` (once per node: evidence and advice both read it)."""
    dra = ctx.engine.snapshot.dra
    index, held = _index(ctx), ctx.once((holders,), lambda: holders(dra))
    rows: list[tuple[ResourceClaim, RequestOnNode]] = ctx.once(
        (_rows, node.name),
        lambda: [
            (
                c,
                explain_request(
                    c, sub, node, dra, index, held, _features(ctx), _state(ctx), label(ctx, c.key)
                ),
            )
            for c in _claims(ctx, node)
            for req in c.requests
            for sub in req.alternatives
        ],
    )
    return rows


def _line(ctx: Context, claim: ResourceClaim, r: RequestOnNode) -> str:
    want = "all" if r.wanted < 0 else str(r.wanted)
    parts = [f"{r.in_reach} device(s) in reach", f"class admits {r.class_admits}",
             f"selectors admit {r.selector_admits}", f"free {len(r.free)}"]  # fmt: skip
    if r.held:
        parts.append("held: " + ", ".join(f"{d} by {c}" for d, c in sorted(r.held.items())))
    if r.refused:
        parts.append("refused: " + "; ".join(f"{d}: {why}" for d, (_, why) in sorted(r.refused.items())))
    if r.rejected and r.selector_admits:  # with none admitted the fix quotes the rejecting clause itself
        d, why = next(iter(r.rejected.items()))
        parts.append(f"e.g. {d}: {why}")
    return f"{label(ctx, claim.key)} request {r.request} wants {want}: {'; '.join(parts)} → {fix(r)}"


def _constraint_lines(ctx: Context, node: Node, rows: list[tuple[ResourceClaim, RequestOnNode]]) -> list[str]:
    """Per ``matchAttribute``: the free admitted devices of its requests by attribute value, and how many
    one value must give (the requests' counts), since each request alone may fit while together they do not."""
    f = _features(ctx)
    by_name = {(d.name): d for p in _index(ctx).pools(node.name, node.labels, f.partitionable, f.pool_check)
               for s in p.slices for d in s.devices}  # fmt: skip
    out = []
    for claim in dict.fromkeys(c for c, _ in rows):
        for m in claim.constraints:
            attr = m.match_attribute or m.distinct_attribute
            mine = [r for c, r in rows if c is claim and (not m.requests or r.request in m.requests
                                                           or r.request.partition("/")[0] in m.requests)]  # fmt: skip
            values: dict[str, set[str]] = {}
            for r in mine:
                for name in r.free:
                    v = by_name[name].attributes.get(attr) if name in by_name else None
                    values.setdefault(
                        "absent" if v is None else str(v[1] if isinstance(v, tuple) else v), set()
                    ).add(name)
            need = sum(max(r.wanted, 1) for r in mine)
            counts = ", ".join(f"{v}: {len(n)}" for v, n in sorted(values.items())) or "none"
            rule = "must share one value" if m.match_attribute else "must all have different values"
            kind = "matchAttribute" if m.match_attribute else "distinctAttribute"
            out.append(f"{label(ctx, claim.key)} {kind} {attr} over "
                       f"{', '.join(r.request for r in mine)}: {need} device(s) {rule}; free "
                       f"devices by value: {counts}")  # fmt: skip
    return out


def _together(
    ctx: Context, node: Node, rows: list[tuple[ResourceClaim, RequestOnNode]]
) -> list[tuple[str, str, str, str]]:
    """(claim, request, device, why) for the devices the allocator refused only together with the claims'
    other devices (alone refusals are on the request's line; a constraint's are counted per value by
    ``_constraint_lines``), with values."""
    dra = ctx.engine.snapshot.dra
    alone = {(c.key, r.request, d) for c, r in rows for d in r.refused}
    got = ctx.once(  # an allocator search over the node's devices: once per node (evidence, advice)
        (_together, node.name),
        lambda: allocation_refusals(_claims(ctx, node), node, dra, _features(ctx), _state(ctx), _index(ctx)),
    )
    return [(c, r, d, why) for (c, r, d), (kind, why) in sorted(got.items())
            if kind != REFUSED_CONSTRAINT and (c, r, d) not in alone]  # fmt: skip


def evidence(ctx: Context, reason: Message, idx: int) -> list[str]:
    if reason.text != CANNOT_ALLOCATE:
        return []
    node = ctx.engine.cluster.nodes[idx]
    rows = _rows(ctx, node)
    return (
        [_line(ctx, c, r) for c, r in rows]
        + _constraint_lines(ctx, node, rows)
        + [
            f"{label(ctx, c)} request {r}: {d} refused together with the claim's other devices: {why}"
            for c, r, d, why in _together(ctx, node, rows)
        ]
    )


def advice(ctx: Context, reason: Message, nodes: list[str]) -> Advice:
    if reason.text != CANNOT_ALLOCATE:
        return Advice()
    by_name = {n.name: n for n in ctx.engine.cluster.nodes}
    per_node = {name: [r for _, r in _rows(ctx, by_name[name])] for name in nodes}
    best = nearest(per_node)
    if not best:
        # a fact of the snapshot, asked for each Pending pod's reason: read once per engine
        empty = store_for(ctx.engine).fact((empty_gpu_slices,), lambda: empty_gpu_slices(ctx.engine.snapshot))
        here = [n for n in nodes if n in empty]
        if here:
            return Advice(
                empty_slice_text(here[0], empty[here[0]]) + ".",
                "",
                [ctx.cmd(f"get resourceslices --field-selector spec.nodeName={here[0]} -o yaml")],
            )
        return Advice(
            "No ResourceSlice of a matching driver reaches these nodes: is the DRA driver's kubelet plugin "
            "running there?",
            "",
            [ctx.cmd("get resourceslices -o wide"), ctx.cmd("get deviceclasses")],
        )
    short = [r for r in per_node[best] if r.short]
    constrained = [c for c in _claims(ctx, by_name[best]) if c.constraints]
    together = [] if short else _together(ctx, by_name[best], _rows(ctx, by_name[best]))
    if together:
        c, r, d, why = together[0]
        text = (
            f"every request fits alone, but together they do not: {d} for {label(ctx, c)} request {r}: {why}"
        )
    elif not short and constrained:
        ms = [m for c in constrained for m in c.constraints]
        attrs = ", ".join(m.match_attribute or m.distinct_attribute for m in ms)
        if all(m.match_attribute for m in ms):
            rule, lack = "share one value of", "no value has enough free devices"
        else:
            rule, lack = "satisfy the constraints on", "the free devices do not have enough values for that"
        text = (f"every request fits alone, but the devices of {label(ctx, constrained[0].key)} must {rule} {attrs} and "
                f"{lack} (the evidence counts them per value)")  # fmt: skip
    else:
        text = fix((short or per_node[best])[0])
    return Advice(
        f"Nearest: {best}: {text}",
        "A claim is all-or-nothing with the pod's other claims: every request must fit on one node.",
        [
            ctx.cmd(f"get resourceslices --field-selector spec.nodeName={best} -o yaml"),
            ctx.cmd("get resourceclaims -o wide"),
        ],
    )


def class_missing_advice(ctx: Context, reason: DeviceClassMissing, nodes: list[str]) -> Advice:
    """A claim names a DeviceClass the cluster does not have: every node refuses it alike."""
    classes = sorted(ctx.engine.snapshot.dra.classes)
    have = f"the cluster has {', '.join(classes)}" if classes else "the cluster has no DeviceClass at all"
    nvidia = ""
    if reason.device_class == NVIDIA_DRA_DRIVER and any(
        c.startswith(COMPUTE_DOMAIN_CLASS_PREFIX) for c in classes
    ):
        # NVIDIA's chart makes its GPU class only with its GPU part on (chart PR #185's resources.gpus.enabled;
        # dra-driver-nvidia-gpu#338 and #438: compute-domain classes alone; NVIDIA/aicr#138 sets both values)
        nvidia = (
            " NVIDIA's DRA driver is installed with its GPU part off: its chart created the compute-domain classes "
            f"but creates {NVIDIA_DRA_DRIVER} only with the Helm value resources.gpus.enabled=true (and, in the "
            "releases that have it, gpuResourcesEnabledOverride=true): upgrade the release with them set."
        )
    return Advice(
        f"No DeviceClass {reason.device_class} exists for request {reason.request} ({have}). Fix the claim's "
        "(or its ResourceClaimTemplate's) deviceClassName, or install the DRA driver whose chart creates "
        f"{reason.device_class}.{nvidia}",
        "The API server accepts a claim naming a class that does not exist; the pod waits in the scheduler "
        "until the class appears, whatever the nodes have.",
        [ctx.cmd("get deviceclasses"), ctx.cmd("get resourceclaims,resourceclaimtemplates -o yaml")],
    )


HOOKS: dict[type[Reason], Hooks] = {
    Message: Hooks(evidence, advice),
    DeviceClassMissing: Hooks(advice=class_missing_advice),
}
