"""NodeAffinity's reasons: which nodeSelector entry or required term the node fails, and how to relax
the constraint or label the node (dry-run first, with the rollback)."""

from __future__ import annotations

import numpy as np

from kubegpu.explain.causes.base import Advice, Context, Hooks
from kubegpu.explain.explanation import NODE_HAS
from kubegpu.model import affinity
from kubegpu.model.gpu_facts import label_writer
from kubegpu.model.objects import Node, Pod
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.reasons import AffinityMismatch, AffinityTermsConflict, PreFilterExcluded, Reason


def affinity_evidence(ctx: Context, reason: object, idx: int) -> list[str]:
    pod, node = ctx.pod, ctx.engine.cluster.nodes[idx]
    keys = ctx.once((_label_keys,), lambda: _label_keys(pod))
    if keys is None:  # a term matches on the node's name (matchFields): no shorter key
        return _affinity_lines(pod, node)
    # the lines depend only on the node's values of the labels the selector and the terms name: thousands of
    # nodes share a few
    key = (affinity_evidence, *(node.labels.get(k) for k in keys))
    return list(ctx.once(key, lambda: _affinity_lines(pod, node)))


def affinity_evidence_many(ctx: Context, reason: object, idxs: list[int]) -> list[list[str]]:
    """``affinity_evidence`` on each node: nodes grouped by their values of the labels the pod's selector and
    terms read (one column gather per label), each group's lines made once and shared (never changed)."""
    keys = ctx.once((_label_keys,), lambda: _label_keys(ctx.pod))
    if not keys or not idxs:  # (a term on the node's name, or nothing read: node by node)
        return [affinity_evidence(ctx, reason, i) for i in idxs]
    cluster = ctx.engine.cluster
    rows = np.asarray(idxs, dtype=np.intp)
    codes = np.stack([cluster.label_column(k)[0][rows] for k in keys], axis=1)
    _, first, inverse = np.unique(codes, axis=0, return_index=True, return_inverse=True)
    lines = [affinity_evidence(ctx, reason, idxs[int(f)]) for f in first]
    return [lines[j] for j in inverse.ravel().tolist()]


def _label_keys(pod: Pod) -> tuple[str, ...] | None:
    """The label keys the pod's nodeSelector and required terms read; None when a term reads the name."""
    terms = pod.required_affinity or ()
    if any(t.match_fields for t in terms):
        return None
    return (*pod.node_selector, *(r.key for t in terms for r in t.match_expressions))


def _affinity_lines(pod: Pod, node: Node) -> list[str]:
    out = []
    for k, v in pod.node_selector.items():
        have = node.labels.get(k)
        if have != v:
            out.append(
                f"nodeSelector {k}={v}; {NODE_HAS}{k}={have}"
                if have is not None
                else f"nodeSelector {k}={v}; {NODE_HAS}no {k} label"
            )
    for i, term in enumerate(pod.required_affinity or ()):
        if affinity.term_matches(term, node.labels, node.name):
            continue
        for req in term.match_expressions:
            have = node.labels.get(req.key)
            if not affinity.requirement_matches(req, have):
                shown = f"{req.key}={have}" if have is not None else f"no {req.key} label"
                out.append(
                    f"required term {i}: {req.key} {req.operator} {list(req.values)}; {NODE_HAS}{shown}"
                )
    return out


def excluded_evidence(ctx: Context, reason: PreFilterExcluded, idx: int) -> list[str]:
    """PreFilter narrowed the nodes to none; NodeAffinity's name terms are the ones that narrow today."""
    return affinity_evidence(ctx, reason, idx) if names.NODE_AFFINITY in reason.plugins else []


CONSTRAINT_PITFALL = (
    "Every required constraint shrinks the pool the pod can use; hard constraints fragment the cluster."
)


def wanted_label(pod: Pod) -> tuple[str, str] | None:
    """The single label value the pod asks for, if its constraint is that simple (nodeSelector or one In)."""
    if pod.node_selector:
        return next(iter(sorted(pod.node_selector.items())))
    for term in pod.required_affinity or ():
        for req in term.match_expressions:
            if req.operator == "In" and len(req.values) == 1:
                return req.key, req.values[0]
    return None


def mismatch_advice(ctx: Context, reason: AffinityMismatch, nodes: list[str]) -> Advice:
    pod, first = ctx.pod, nodes[0]
    keys = sorted(
        {*pod.node_selector, *(r.key for t in pod.required_affinity or () for r in t.match_expressions)}
    )
    commands = [ctx.cmd(f"get nodes -L {','.join(keys)}")] if keys else []
    wanted = wanted_label(pod)
    writer = label_writer(wanted[0]) if wanted is not None else ""
    if wanted is not None and writer:  # a label that says what the node is: relabelling is no fix
        key, value = wanted
        return Advice(
            f"The pod asks for {key}={value}, a label {writer} writes from what a node is (and writes back if "
            "changed): relabelling a node does not make it one. Point the pod at a value the cluster's nodes "
            "carry (the command lists them), or add nodes that have it (their node pool or autoscaler).",
            CONSTRAINT_PITFALL,
            commands,
        )
    if wanted is not None:
        key, value = wanted
        node = ctx.engine.snapshot.node(first)
        old = node.labels.get(key) if node else None
        rollback = f"{key}={old} --overwrite" if old is not None else f"{key}-"
        commands += [
            ctx.cmd(f"label node {first} {key}={value} --overwrite --dry-run=server -o yaml"),
            ctx.cmd(f"label node {first} {key}={value} --overwrite   # only if {first} belongs in that pool"),
            ctx.cmd(f"label node {first} {rollback}   # rollback"),
        ]
    return Advice(
        "The pod's nodeSelector / required node affinity excludes these nodes. If the pod may run on them, "
        "relax the requirement (keep compatibility required, make performance preferred); if a node really "
        "belongs in the pod's pool, label it — dry-run first, keep the rollback.",
        CONSTRAINT_PITFALL,
        commands,
    )


def _selection(pod: Pod) -> str:
    """What ``affinity_evidence`` reads of the pod: its nodeSelector (in order: the lines follow it) and
    required terms."""
    return repr((pod.node_selector, pod.required_affinity))


HOOKS: dict[type[Reason], Hooks] = {
    AffinityMismatch: Hooks(affinity_evidence, mismatch_advice, affinity_evidence_many, pod_part=_selection),
    AffinityTermsConflict: Hooks(
        affinity_evidence, evidence_many=affinity_evidence_many, pod_part=_selection
    ),
    PreFilterExcluded: Hooks(excluded_evidence),
}
