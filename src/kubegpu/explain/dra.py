"""Why a pod's ResourceClaims cannot be allocated: per node, per request, per device; and mixed clusters.

The scheduling core says *that* a node failed (``cannot allocate all claims``); this module says *why*,
with the same pieces the allocator uses (``SliceIndex.pools``, ``compiled`` selectors, the devices in use)
so it never disagrees with it. Per node and request: the devices in reach, which the class admits,
which the request's selectors admit (and, for a rejected device, the first ``&&`` clause of the
expression that is false, with the attribute values it reads), which are held and by which claim, which
are tainted; with the minor's DRA gates (``scheduler.dra_capacity.Features``) which a device taint, the
pool's shared counters or the device's consumable capacity refuse, with the values (``refused``); then
how many are short, the nearest node, and the fix. ``allocation_refusals`` replays the allocator on a node
and returns what it refused while trying every combination (a counter set or a shared device's capacity
that two requests overdraw together, a ``distinctAttribute``), device by device. ``double_counting`` finds nodes
that publish GPUs through both the device plugin (``nvidia.com/gpu``) and NVIDIA's DRA driver.
Imports model and scheduler; no cluster client.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Final

from kubegpu.explain.findings import Finding
from kubegpu.explain.kubectl import kubectl, mutate
from kubegpu.model.dra import AttrValue, Device, DeviceSubRequest, DraObjects, ResourceClaim
from kubegpu.model.names import DEVICE_PLUGIN_DEPLOY_LABEL, NVIDIA_DRA_DRIVER
from kubegpu.model.objects import Node, Pod
from kubegpu.model.resources import NVIDIA_GPU
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.dra_allocator import (
    REFUSED_CAPACITY,
    REFUSED_COUNTERS,
    REFUSED_TAINT,
    AllocationError,
    Allocator,
    Candidate,
    DeviceId,
    SliceIndex,
    slice_index,
)
from kubegpu.scheduler.dra_capacity import Features, allocated_state, untolerated
from kubegpu.scheduler.dra_cel import CelError, compiled
from kubegpu.scheduler.dra_cel_ext import CelUnsupported

_REF = re.compile(r"""\.(attributes|capacity)\[\s*['"]([^'"]+)['"]\s*\]\.([A-Za-z_][A-Za-z0-9_]*)""")


def split_conjuncts(expression: str) -> list[str]:
    """The top-level ``&&`` clauses of a CEL expression (strings and brackets respected)."""
    out, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(expression):
        ch = expression[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and expression.startswith("&&", i):
            out.append(expression[start:i].strip())
            start = i + 2
            i += 1
        i += 1
    out.append(expression[start:].strip())
    return [c for c in out if c]


def _shown(v: AttrValue | str) -> str:
    return v[1] if isinstance(v, tuple) else repr(v)


def clause_values(clause: str, driver: str, device: Device) -> str:
    """``productName='NVIDIA A100 80GB PCIe'``-style values of the attributes a clause reads."""
    parts = []
    for kind, domain, ident in _REF.findall(clause):
        name = f"{domain}/{ident}"
        if kind == "attributes":
            parts.append(
                f"{ident}={_shown(device.attributes[name])}"
                if name in device.attributes
                else f"{ident} absent"
            )
        else:
            parts.append(
                f"{ident}={device.capacity_text[name]}" if name in device.capacity_text else f"{ident} absent"
            )
    return ", ".join(dict.fromkeys(parts))


def rejecting_clause(expression: str, driver: str, device: Device) -> str:
    """The first clause that is false (or errors) for ``device``, with the values it reads."""
    for clause in split_conjuncts(expression):
        try:
            ok = compiled(clause).matches(driver, device)
        except CelError as exc:
            return f"`{clause}` fails: {exc}"
        except CelUnsupported:
            continue  # not evaluated: counted as matching, as the allocator does
        if not ok:
            values = clause_values(clause, driver, device)
            return f"`{clause}` is false" + (f" ({values})" if values else "")
    return f"`{expression}` is false"


@dataclass
class RequestOnNode:
    request: str
    wanted: int  # -1 for All
    in_reach: int = 0
    class_admits: int = 0
    selector_admits: int = 0
    free: list[str] = field(default_factory=list)
    held: dict[str, str] = field(default_factory=dict)  # device → holding claim
    tainted: list[str] = field(default_factory=list)
    # device → (kind, why with values): a taint, counters or capacity (``Allocator.refusal``)
    refused: dict[str, tuple[str, str]] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)  # device → why (class or selector clause)

    @property
    def short(self) -> int:
        return max(0, (self.wanted if self.wanted >= 0 else 1) - len(self.free))


def own_claims(pod: Pod, dra: DraObjects) -> dict[str, str]:
    """The pod's name for each of its claims (``spec.resourceClaims[].name``) → the ResourceClaim's key
    ("ns/name"): a named claim's (``resourceClaimName``), a generated one's as
    ``status.resourceClaimStatuses`` records it (not made yet, or not needed: left out)."""
    pc = dra.pod_claims.get(pod.key)
    if pc is None:
        return {}
    out: dict[str, str] = {}
    for ref in pc.refs:
        name = ref.claim_name or (pc.statuses.get(ref.name) if ref.template_name else None)
        if name:
            out[ref.name] = f"{pod.namespace}/{name}"
    return out


def holders(dra: DraObjects) -> dict[DeviceId, str]:
    """Device → the claim whose allocation holds it (admin access aside)."""
    out: dict[DeviceId, str] = {}
    for c in dra.claims.values():
        for d in c.allocated or ():
            if not d.admin_access:
                out[d.device_id] = c.key
    return out


def explain_request(
    claim: ResourceClaim,
    sub: DeviceSubRequest,
    node: Node,
    dra: DraObjects,
    index: SliceIndex,
    held_by: Mapping[DeviceId, str],
    features: Features | None = None,
    state: State | None = None,
    label: str = "",
) -> RequestOnNode:
    """One request on one node; ``state``: ``claims_state(dra, features)``, made once by the caller for
    many nodes and requests (computed here when absent); ``label``: how the texts name the claim (``claim
    <namespace/name>`` when not given)."""
    r = RequestOnNode(sub.name, sub.count if sub.allocation_mode == "ExactCount" else -1)
    cls = dra.classes.get(sub.device_class_name)
    f = features or Features()
    in_use, shared = state if state is not None else claims_state(dra, f)
    probe = Allocator([], dra.classes, index, in_use, f, shared)
    for pool in index.pools(node.name, node.labels, f.partitionable, f.pool_check):
        if pool.invalid:
            for s in pool.slices:
                for d in s.devices:
                    r.in_reach += 1
                    r.rejected[d.name] = f"pool {pool.pool_id} is invalid: {pool.invalid}"
            continue
        for s in pool.slices:
            for d in s.devices:
                r.in_reach += 1
                why = _rejected_by(
                    cls.selectors if cls else (), s.driver, d, f"class {sub.device_class_name}"
                )
                if why:
                    r.rejected[d.name] = why
                    continue
                r.class_admits += 1
                why = _rejected_by(sub.selectors, s.driver, d, label or f"claim {claim.key}")
                if why:
                    r.rejected[d.name] = why
                    continue
                r.selector_admits += 1
                did = (s.driver, s.pool, d.name)
                holder = held_by.get(did)
                multi = probe.multi(d)
                if holder and holder != claim.key and not multi:
                    r.held[d.name] = holder
                    continue
                refused = probe.refusal(sub, Candidate(did, d, s, pool), {}, {})
                if refused is not None:
                    r.refused[d.name] = refused
                    if refused[0] == REFUSED_TAINT:
                        r.tainted.append(d.name)
                    continue
                if untolerated(d, sub) is not None:
                    r.tainted.append(d.name)  # listed, not refused: DRADeviceTaints is off in this minor
                r.free.append(d.name)
    return r


State = tuple[set[DeviceId], dict[DeviceId, dict[str, Fraction]]]


def claims_state(dra: DraObjects, f: Features) -> State:
    """The plugin's rule (``allocated_state``, as ``DynamicResources.in_use`` applies it) over the
    snapshot's claims as they are now: devices held whole, and the capacity consumable-capacity shares
    consume. Not cached here: the claim controller replaces claims in place, so a cache keyed on the
    object would go stale; callers memoise per pod (``Context.once``)."""
    return allocated_state((d for c in dra.claims.values() for d in c.allocated or ()), f)


def allocation_refusals(
    claims: list[ResourceClaim],
    node: Node,
    dra: DraObjects,
    f: Features,
    state: State | None = None,
    index: SliceIndex | None = None,
) -> dict[tuple[str, str, str], tuple[str, str]]:
    """What the allocator refused on ``node`` while searching (claim, request, device) → (kind, why):
    devices refused only in combination (counters or a shared capacity the claims' other devices already
    take, a constraint). Empty when the claims fit or an error stops the search. ``state``, ``index``: made
    once by the caller for many nodes (computed here when absent)."""
    in_use, shared = state if state is not None else claims_state(dra, f)
    alloc = Allocator(claims, dra.classes, index or slice_index(dra, f), in_use, f, shared)
    try:
        if alloc.allocate(node.name, node.labels) is not None:
            return {}
    except AllocationError:
        return {}
    return alloc.refusals


def _rejected_by(selectors: Iterable[str], driver: str, device: Device, owner: str) -> str:
    for i, expr in enumerate(selectors):
        try:
            if not compiled(expr).matches(driver, device):
                return f"{owner} selector #{i}: {rejecting_clause(expr, driver, device)}"
        except CelError as exc:
            return f"{owner} selector #{i}: CEL runtime error: {exc}"
        except CelUnsupported:
            # the allocator counts such a device as selected and ``explain.unverified`` names the selector
            continue
    return ""


def explain_claims(
    claims: list[ResourceClaim], nodes: list[Node], dra: DraObjects, features: Features | None = None
) -> dict[str, list[RequestOnNode]]:
    """Per node, each unallocated claim's requests (``firstAvailable``: every alternative, in order)."""
    index = slice_index(dra, features or Features())
    held_by = holders(dra)
    state = claims_state(dra, features or Features())
    out: dict[str, list[RequestOnNode]] = {}
    for n in nodes:
        rows = []
        for c in claims:
            if c.allocated is not None:
                continue
            for req in c.requests:
                for sub in req.alternatives:
                    rows.append(explain_request(c, sub, n, dra, index, held_by, features, state))
        out[n.name] = rows
    return out


def nearest(per_node: Mapping[str, list[RequestOnNode]]) -> str:
    """The node short of the fewest devices (ties: name order), or "" when no node has any in reach."""
    scored = [
        (sum(r.short for r in rows), name) for name, rows in per_node.items() if any(r.in_reach for r in rows)
    ]
    return min(scored)[1] if scored else ""


def fix(r: RequestOnNode) -> str:
    """What would make this request fit on the node."""
    if r.in_reach == 0:
        return "no ResourceSlice reaches this node: is the DRA driver's kubelet plugin running here?"
    if r.class_admits == 0:
        return f"the class admits none of the {r.in_reach} devices here: {next(iter(r.rejected.values()))}"
    if r.selector_admits == 0:
        return (
            f"the claim's selectors admit none of {r.class_admits} devices: {next(iter(r.rejected.values()))}"
        )
    if r.short and r.held:
        owners = sorted(set(r.held.values()))
        return f"{len(r.held)} matching device(s) are allocated to {', '.join(owners)}; free {r.short} more or ask for fewer"
    if r.short and r.refused:
        d, (kind, why) = next(iter(sorted(r.refused.items())))
        return f"{len(r.refused)} matching device(s) refused ({d}: {why}): {_REFUSAL_HINTS[kind]}"
    if r.short:
        return (
            f"only {len(r.free)} matching device(s) here, {r.short} short: ask for fewer or use a larger node"
        )
    return "fits on its own; the pod's other requests or claims take the devices it needs (all-or-nothing)"


DOUBLE_COUNTED: Final = "dra-double-counted"  # ``Finding.check`` of ``double_counting``
_REFUSAL_HINTS = {
    REFUSED_TAINT: "tolerate the taint in the request (spec.devices.requests[].exactly.tolerations) or clear "
    "it (a driver taints a device it found unhealthy)",
    REFUSED_COUNTERS: "allocated partitions of the same GPU hold its counters: free them or ask for a "
    "smaller partition",
    REFUSED_CAPACITY: "the device's capacity is taken by its other shares: ask for less or free a share",
}


def dra_users(snapshot: ClusterSnapshot, node: str) -> list[str]:
    """Pods on ``node`` whose devices come from DRA: their own claims, or a plain extended-resource request
    served through the scheduler's special claim (KEP-5004) allocated there."""
    on = {p.key for p in snapshot.pods_on(node)}
    users = {k for k in snapshot.dra.pod_claims if k in on}
    for c in snapshot.dra.claims.values():
        if c.extended_resource and c.allocated:
            users.update(
                f"{c.namespace}/{o.name}"
                for o in c.owners
                if o.kind == "Pod" and f"{c.namespace}/{o.name}" in on
            )
    return sorted(users)


def double_counting(snapshot: ClusterSnapshot) -> list[Finding]:
    """Nodes advertising GPUs through the device plugin AND NVIDIA's DRA driver: both stacks hand out the
    same physical GPUs, so a GPU can be given twice (one pod through ``nvidia.com/gpu``, one through a
    claim). Names both counts and which pods use which path on each such node, the fix and the pitfall.
    ``diagnose`` and ``inspect`` list these first (errors); none without DRA objects."""
    if not snapshot.dra.slices:
        return []
    dra_gpus: dict[str, list[str]] = {}
    for s in snapshot.dra.slices:
        if s.driver == NVIDIA_DRA_DRIVER and s.node_name:
            dra_gpus.setdefault(s.node_name, []).extend(
                d.name for d in s.devices if d.attributes.get(f"{NVIDIA_DRA_DRIVER}/type") == "gpu"
            )
    out = []
    for n in snapshot.nodes:
        plugin = n.allocatable.get(NVIDIA_GPU, 0) // 1000
        gpus = dra_gpus.get(n.name, [])
        if not plugin or not gpus:
            continue
        via_dra = dra_users(snapshot, n.name)
        via_plugin = [
            p.key
            for p in snapshot.pods_on(n.name)
            if p.requests.get(NVIDIA_GPU, 0) > 0 and p.key not in via_dra
        ]
        label = f"label node {n.name} {DEVICE_PLUGIN_DEPLOY_LABEL}"
        out.append(
            Finding(
                severity="critical",
                layer="driver/device-plugin",
                title=f"{n.name} advertises its GPUs twice: {plugin} through the device plugin and {len(gpus)} through the DRA driver",
                objects=[f"Node {n.name}", *(f"Pod {k}" for k in via_plugin + via_dra)],
                detail=(
                    f"device plugin ({NVIDIA_GPU}: {plugin}) is used by {', '.join(via_plugin) or 'no pod'}; "
                    f"DRA ({NVIDIA_DRA_DRIVER}: {', '.join(gpus)}) by {', '.join(via_dra) or 'no pod'}. Neither stack "
                    "sees the other's allocations, so the same GPU can be handed to two pods. "
                    f"Pitfall: the node looks like it has {plugin + len(gpus)} GPUs (allocatable plus slices) and "
                    "both schedulers' answers are right on their own; the overlap only shows as two containers "
                    "on one GPU (out-of-memory, Xid errors). Fix: one stack per node. Keep DRA here: turn the "
                    f"device plugin off on this node (GPU Operator label {DEVICE_PLUGIN_DEPLOY_LABEL}=false), after "
                    f"moving {', '.join(via_plugin) or 'its device-plugin pods'} (`kubegpu plan dra-migration` "
                    "prints the runbook); or keep the device plugin and stop the DRA driver's kubelet plugin here."
                ),
                requirement="",
                commands=[
                    f"kubectl -n default get resourceslices --field-selector spec.nodeName={n.name} -o yaml",
                    *mutate("default", f"{label}=false --overwrite"),
                    f"{kubectl('default', f'{label}-')}  # rollback",
                ],
                check=DOUBLE_COUNTED,
                subject=n.name,
                many="GPU nodes advertise their GPUs twice: through the device plugin and through the DRA driver",
            )
        )
    return out
