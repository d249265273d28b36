"""InterPodAffinity's and PodTopologySpread's reasons: the term or constraint, the pods it selects and
where they run (domain by domain, with counts), the skew a placement would make; advice from those
numbers (which domain is short, which pods block, how many domains exist against ``minDomains``).

Reads the cluster state and the pod (the reasons carry no data: the verdict is per domain, the numbers
come from the placed pods), through the same matching rule the plugins use (``model.pod_affinity``). What
does not depend on the node (the pods a term selects, per domain; the running pods whose anti-affinity
selects this pod; a constraint's counts) is worked out once per pod (``Context.once``), not per node.
"""

from __future__ import annotations

from collections import Counter

from kubegpu.explain.causes.base import Advice, Context, Hooks
from kubegpu.explain.wording import some_of
from kubegpu.model.objects import LabelSelector, Pod, PodAffinityTerm, SpreadConstraint
from kubegpu.model.pod_affinity import (
    spread_counts,
    spread_selector,
    spread_self_match,
    term_matches,
    term_selector,
)
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.plugins.pod_topology_spread import PodTopologySpread
from kubegpu.scheduler.reasons import (
    ExistingAntiAffinityHit,
    PodAffinityUnmet,
    PodAntiAffinityHit,
    Reason,
    SpreadLabelMissing,
    SpreadSkew,
)


def _sel(sel: LabelSelector | None) -> str:
    if sel is None:
        return "<none: selects nothing>"
    parts = [f"{k}={v}" for k, v in sel.match_labels]
    parts += [
        f"{r.key} {r.operator} {list(r.values)}" if r.values else f"{r.key} {r.operator}"
        for r in sel.match_expressions
    ]
    return "{" + ", ".join(parts) + "}" if parts else "{} (every pod)"


def _placed(cluster: ClusterState) -> list[tuple[Pod, int]]:
    return [(p, i) for i in range(len(cluster)) for p in cluster.pods_on[i].values()]


def _selected(ctx: Context, term: PodAffinityTerm) -> list[tuple[Pod, int]]:
    """Placed pods that the incoming pod's ``term`` selects, with their nodes."""
    return ctx.once((_selected, term), lambda: _select(ctx, term))


def _select(ctx: Context, term: PodAffinityTerm) -> list[tuple[Pod, int]]:
    pod, cluster = ctx.pod, ctx.engine.cluster
    keys = ctx.engine.framework.handle.behaviour.pod_affinity_label_keys
    sel = term_selector(term, pod.labels, keys)
    return [(p, i) for p, i in _placed(cluster)
            if term_matches(term, sel, pod.namespace, p.namespace, p.labels, cluster.namespace_labels)]  # fmt: skip


def _domains(ctx: Context, term: PodAffinityTerm) -> dict[str, list[str]]:
    """The pods ``term`` selects, by their node's value of the term's topology key."""
    return ctx.once(
        (_domains, term), lambda: _by_domain(ctx.engine.cluster, term.topology_key, _selected(ctx, term))
    )


def _by_domain(cluster: ClusterState, key: str, pods: list[tuple[Pod, int]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p, i in pods:
        v = cluster.nodes[i].labels.get(key)
        if v is not None:
            out.setdefault(v, []).append(p.name)
    return out


def affinity_evidence(ctx: Context, reason: PodAffinityUnmet, idx: int) -> list[str]:
    node = ctx.engine.cluster.nodes[idx]
    out = []
    for t in ctx.pod.pod_affinity.required:
        domains = _domains(ctx, t)
        where = "; ".join(f"{v}: {len(n)}" for v, n in sorted(domains.items())) or "none anywhere"
        have = node.labels.get(t.topology_key)
        at = (
            f"node's {t.topology_key}={have} holds {len(domains.get(have, []))}"
            if have is not None
            else f"node has no {t.topology_key} label"
        )
        out.append(
            f"required podAffinity {_sel(t.selector)} by {t.topology_key}: {at}; matching pods per domain: {where}"
        )
    return out


def anti_evidence(ctx: Context, reason: PodAntiAffinityHit, idx: int) -> list[str]:
    node = ctx.engine.cluster.nodes[idx]
    out = []
    for t in ctx.pod.pod_affinity.anti_required:
        have = node.labels.get(t.topology_key)
        names = _domains(ctx, t).get(have, []) if have else []
        if names:
            out.append(f"required podAntiAffinity {_sel(t.selector)} by {t.topology_key}: {t.topology_key}={have} "
                       f"already runs {len(names)}: {some_of(names)}")  # fmt: skip
    return out


def _blockers(ctx: Context, idx: int) -> list[tuple[Pod, PodAffinityTerm]]:
    """Running pods in node ``idx``'s domains whose required anti-affinity selects the incoming pod."""
    labels = ctx.engine.cluster.nodes[idx].labels
    return [
        (p, t)
        for p, t, v in ctx.once((_blockers,), lambda: _anti_holders(ctx))
        if labels.get(t.topology_key) == v
    ]


def _anti_holders(ctx: Context) -> list[tuple[Pod, PodAffinityTerm, str]]:
    """Every running pod whose required anti-affinity term selects the incoming pod, with the term and the
    value of its topology key on the pod's node (the domain it keeps the incoming pod out of)."""
    pod, cluster = ctx.pod, ctx.engine.cluster
    keys = ctx.engine.framework.handle.behaviour.pod_affinity_label_keys
    out = []
    for p, i in _placed(cluster):
        for t in p.pod_affinity.anti_required:
            v = cluster.nodes[i].labels.get(t.topology_key)
            if v is None:
                continue
            if term_matches(t, term_selector(t, p.labels, keys), p.namespace, pod.namespace, pod.labels,
                            cluster.namespace_labels):  # fmt: skip
                out.append((p, t, v))
    return out


def existing_evidence(ctx: Context, reason: ExistingAntiAffinityHit, idx: int) -> list[str]:
    return [f"pod {p.namespace}/{p.name} has required podAntiAffinity {_sel(t.selector)} by {t.topology_key}, "
            f"which selects this pod" for p, t in _blockers(ctx, idx)]  # fmt: skip


def _hard(ctx: Context) -> list[tuple[SpreadConstraint, LabelSelector | None]]:
    """The DoNotSchedule constraints the profile's PodTopologySpread applies to the pod: its own (with
    matchLabelKeys merged), else the ``List`` defaults with the deduced selector (``model.default_spread``)."""
    plugin = next((p for p in ctx.engine.framework.plugins if isinstance(p, PodTopologySpread)), None)
    if plugin is not None:
        return list(plugin.constraints(ctx.pod, "DoNotSchedule"))
    return [(c, spread_selector(c, ctx.pod.labels)) for c in ctx.pod.spread_constraints
            if c.when_unsatisfiable == "DoNotSchedule"]  # fmt: skip


def _what(ctx: Context, c: SpreadConstraint, sel: LabelSelector | None) -> str:
    own = any(c is o for o in ctx.pod.spread_constraints)
    return _sel(c.selector) if own else f"{_sel(sel)} (a default constraint of the scheduler configuration)"


def _spread(ctx: Context, c: SpreadConstraint, sel: LabelSelector | None) -> tuple[Counter[str], int]:
    """Matching pods per domain of ``c`` (every node carrying the key is a domain; inclusion policies are
    the plugin's business) and the minimum the skew is measured from. Read only: shared by every node."""
    return ctx.once((_spread, c, sel), lambda: _count_spread(ctx, c, sel))


def _count_spread(ctx: Context, c: SpreadConstraint, sel: LabelSelector | None) -> tuple[Counter[str], int]:
    pod, cluster = ctx.pod, ctx.engine.cluster
    counts: Counter[str] = Counter(
        {n.labels[c.topology_key]: 0 for n in cluster.nodes if c.topology_key in n.labels}
    )
    for p, i in _placed(cluster):
        v = cluster.nodes[i].labels.get(c.topology_key)
        if v is not None and spread_counts(
            sel, p.namespace, pod.namespace, p.labels, bool(p.deletion_timestamp)
        ):
            counts[v] += 1
    low = min(counts.values()) if counts else 0
    return counts, 0 if len(counts) < (c.min_domains or 1) else low


def skew_evidence(ctx: Context, reason: SpreadSkew, idx: int) -> list[str]:
    node = ctx.engine.cluster.nodes[idx]
    out = []
    for c, sel in _hard(ctx):
        if c.topology_key not in node.labels:
            continue
        counts, low = _spread(ctx, c, sel)
        v = node.labels[c.topology_key]
        own = int(spread_self_match(sel, ctx.pod.labels))
        skew = counts[v] + own - low
        if skew > c.max_skew:
            per = ", ".join(f"{d}={n}" for d, n in sorted(counts.items()))
            md = (
                f"; {len(counts)} domain(s) < minDomains {c.min_domains}: minimum taken as 0"
                if low == 0 and c.min_domains and len(counts) < c.min_domains
                else ""
            )
            out.append(f"spread {_what(ctx, c, sel)} by {c.topology_key} (maxSkew {c.max_skew}): {per}{md}; "
                       f"here {c.topology_key}={v}: {counts[v]} + {own} - {low} = skew {skew} > {c.max_skew}")  # fmt: skip
    return out


def missing_evidence(ctx: Context, reason: SpreadLabelMissing, idx: int) -> list[str]:
    node = ctx.engine.cluster.nodes[idx]
    return [f"node has no {c.topology_key} label, which spread constraint {_what(ctx, c, sel)} needs"
            for c, sel in _hard(ctx) if c.topology_key not in node.labels]  # fmt: skip


def affinity_advice(ctx: Context, reason: PodAffinityUnmet, nodes: list[str]) -> Advice:
    terms = ctx.pod.pod_affinity.required
    running = sum(len(_selected(ctx, t)) for t in terms)
    if running:  # where the selected pods are is where the pod may go: name it
        cluster = ctx.engine.cluster
        where = sorted({cluster.nodes[i].name for t in terms for _, i in _selected(ctx, t)})
        shown = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
        keys = ", ".join(sorted({t.topology_key for t in terms}))
        fix = (f"No pod the required podAffinity selects runs in these nodes' domains: the {running} pod(s) it selects run on "
               f"{shown}, so the pod may go only to nodes sharing their {keys}. To use these nodes, run a selected pod "
               "in their domain (or schedule the pods together), or make the term "
               "preferredDuringSchedulingIgnoredDuringExecution if co-location is a wish.")  # fmt: skip
    else:
        fix = ("No pod the required podAffinity selects runs in these nodes' domains (none runs anywhere: start the "
               "pods it depends on first). Or make the term preferredDuringSchedulingIgnoredDuringExecution if "
               "co-location is a wish.")  # fmt: skip
    sel = terms[0].selector if terms else None
    cmds = (
        [ctx.cmd(f"get pods -o wide -l {','.join(f'{k}={v}' for k, v in sel.match_labels)}")]
        if sel and sel.match_labels
        else []
    )
    return Advice(
        fix,
        "Affinity needs a matching pod already placed; a pod matching its own term may start a group only when none runs anywhere.",
        cmds,
    )


def anti_advice(ctx: Context, reason: PodAntiAffinityHit, nodes: list[str]) -> Advice:
    cluster = ctx.engine.cluster
    key = next((t.topology_key for t in ctx.pod.pod_affinity.anti_required), "")
    mine = sorted({cluster.nodes[cluster.index[n]].labels.get(key, "") for n in nodes} - {""})
    every = {n.labels[key] for n in cluster.nodes if key in n.labels}
    fix = (
        f"{key} {', '.join(mine)} already run(s) a pod the required podAntiAffinity excludes"
        + (f" ({len(every)} domain(s) exist, all taken)" if set(mine) >= every else "")
        + f": add nodes in a new {key}, lower the replica count, or make the term preferred."
    )
    label = _label_arg(ctx.pod.pod_affinity.anti_required)
    return Advice(
        fix,
        "Required anti-affinity caps replicas at one per domain.",
        [ctx.cmd(f"get pods -o wide -l {label}")] if label else [],
    )


def _label_arg(terms: tuple[PodAffinityTerm, ...]) -> str:
    sel = terms[0].selector if terms else None
    return ",".join(f"{k}={v}" for k, v in sel.match_labels) if sel else ""


def existing_advice(ctx: Context, reason: ExistingAntiAffinityHit, nodes: list[str]) -> Advice:
    idx = ctx.engine.cluster.index[nodes[0]]
    names = sorted({f"{p.namespace}/{p.name}" for p, _ in _blockers(ctx, idx)})
    fix = (f"Running pods keep this pod away with their own required anti-affinity: {some_of(names)}. Change "
           "their anti-affinity, or this pod's labels, if the two may share a domain.")  # fmt: skip
    return Advice(
        fix,
        "Anti-affinity is symmetric in effect: a running pod's term can reject newcomers that set none.",
        [],
    )


def skew_advice(ctx: Context, reason: SpreadSkew, nodes: list[str]) -> Advice:
    lines = []
    for c, sel in _hard(ctx):
        counts, low = _spread(ctx, c, sel)
        emptiest = sorted(d for d, n in counts.items() if n == min(counts.values())) if counts else []
        if c.min_domains and len(counts) < c.min_domains:
            lines.append(f"only {len(counts)} {c.topology_key} domain(s) exist, fewer than minDomains {c.min_domains}: "
                         f"label nodes in {c.min_domains - len(counts)} more, or lower minDomains")  # fmt: skip
        elif emptiest and (
            lacking := ctx.lacking(
                n for n in ctx.engine.cluster.nodes if n.labels.get(c.topology_key) in emptiest
            )
        ):
            honor = (
                "nodeAffinityPolicy Honor, the default,"
                if c.node_affinity_policy != "Ignore"
                else "with nodeAffinityPolicy set to Honor (it is Ignore),"
            )
            lines.append(
                f"{c.topology_key} {', '.join(emptiest)} hold(s) the fewest ({low}), yet no node there has "
                f"{lacking}: the pod can never land there, but its nodes still count. Restrict the pod to nodes "
                f"with {lacking} (a nodeSelector or required node affinity; {honor} then counts only their "
                "domains), or add such a node there"
            )
        elif emptiest:
            lines.append(
                f"{c.topology_key} {', '.join(emptiest)} hold(s) the fewest ({low}): free or add capacity there"
            )
    fix = "; ".join(lines) + ". Or raise maxSkew, or use whenUnsatisfiable: ScheduleAnyway."
    return Advice(
        fix,
        "Skew is measured against the emptiest eligible domain, which a full or tainted domain still is.",
        [],
    )


def missing_advice(ctx: Context, reason: SpreadLabelMissing, nodes: list[str]) -> Advice:
    keys = sorted({c.topology_key for c, _ in _hard(ctx)})
    return Advice(f"Label these nodes with {', '.join(keys)}, or keep the pod off them with node affinity.", "",
                  [f"kubectl get nodes -L {','.join(keys)}"])  # fmt: skip


HOOKS: dict[type[Reason], Hooks] = {
    PodAffinityUnmet: Hooks(affinity_evidence, affinity_advice),
    PodAntiAffinityHit: Hooks(anti_evidence, anti_advice),
    ExistingAntiAffinityHit: Hooks(existing_evidence, existing_advice),
    SpreadSkew: Hooks(skew_evidence, skew_advice),
    SpreadLabelMissing: Hooks(missing_evidence, missing_advice),
}
