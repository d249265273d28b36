"""NodeAffinity's reasons: which nodeSelector entry or required term the node fails, and how to relax
the constraint or label the node (dry-run first, with the rollback)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from kubegpu.explain.causes.base import Advice, Context, Hooks
from kubegpu.explain.explanation import NODE_HAS
from kubegpu.explain.kubectl import mutate
from kubegpu.explain.shared_evidence import store_for
from kubegpu.model import affinity
from kubegpu.model.gpu_facts import label_writer
from kubegpu.model.objects import Node, Pod
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.reasons import AffinityMismatch, AffinityTermsConflict, PreFilterExcluded, Reason


def affinity_evidence(ctx: Context, reason: object, idx: int) -> list[str]:
    return affinity_evidence_many(ctx, reason, [idx])[0]


def affinity_evidence_many(ctx: Context, reason: object, idxs: list[int]) -> list[list[str]]:
    """The evidence of each node of ``idxs``: nodes grouped by what of them the lines read (their values of
    the labels the pod's selector and terms name, one column gather per label; whether their name meets each
    term's matchFields), each group's lines made once and shared (never changed). A node whose value of a
    label is its own name (``kubernetes.io/hostname``) is told so without the name (``_affinity_lines``):
    a pod pinned to one node of 5,000 would otherwise have 4,999 lines of their own, each its node's name."""
    if not idxs:
        return []
    pod, cluster = ctx.pod, ctx.engine.cluster
    rows = np.asarray(idxs, dtype=np.intp)
    columns = [_label_codes(ctx, key)[rows] for key in ctx.once((_label_keys,), lambda: _label_keys(pod))]
    for term in pod.required_affinity or ():
        if term.match_fields:  # (a DaemonSet's pod: metadata.name In [its node])
            names = [cluster.nodes[i].name for i in idxs]
            columns.append(np.array([affinity.fields_match(term, n) for n in names], dtype=np.int32))
    if not columns:  # nothing of the node is read: the same lines everywhere
        lines = _affinity_lines(pod, cluster.nodes[idxs[0]])
        return [lines] * len(idxs)
    _, first, inverse = np.unique(np.stack(columns, axis=1), axis=0, return_index=True, return_inverse=True)
    made = [_affinity_lines(pod, cluster.nodes[idxs[int(f)]]) for f in first]
    return [made[j] for j in inverse.ravel().tolist()]


OWN_NAME = -2  # a label code: the node's value is its own name, and not a value the pod names


def _label_codes(ctx: Context, key: str) -> npt.NDArray[np.int32]:
    """The value ids of label ``key`` per node (``ClusterState.label_column``), ``OWN_NAME`` where the
    node's value is its name and the pod names no such value (for the key, in its selector or a term): the
    lines of those nodes read alike (``_affinity_lines``)."""
    ids, values = ctx.engine.cluster.label_column(key)
    own = store_for(ctx.engine).fact((_label_codes, key), lambda: _own_name_rows(ctx, ids, values))
    if not own.size:
        return ids
    wanted = {ctx.pod.node_selector.get(key, "")} | {
        v
        for t in ctx.pod.required_affinity or ()
        for r in t.match_expressions
        if r.key == key
        for v in r.values
    }
    index = ctx.engine.cluster.index  # (a row whose value is its own name: named by a value that is its name)
    named = [row for v in wanted if (row := index.get(v)) is not None and own[row]]
    codes = ids.copy()
    codes[own] = OWN_NAME
    if named:
        codes[named] = ids[named]
    return codes


def _own_name_rows(ctx: Context, ids: npt.NDArray[np.int32], values: list[str]) -> npt.NDArray[np.bool_]:
    """Per node, whether its value of a label (``ids`` into ``values``) is its own name; empty when none's is."""
    nodes = ctx.engine.cluster.nodes
    own = np.array([i >= 0 and values[i] == node.name for i, node in zip(ids.tolist(), nodes, strict=True)])
    return own if own.any() else np.zeros(0, dtype=np.bool_)


def _label_keys(pod: Pod) -> tuple[str, ...]:
    """The label keys the pod's nodeSelector and required terms read."""
    terms = pod.required_affinity or ()
    return (*pod.node_selector, *(r.key for t in terms for r in t.match_expressions))


def _shown(key: str, have: str | None, node: Node) -> str:
    """The node's reading of label ``key``: its value, or that the value is its own name (the lines of
    thousands of nodes read alike where a pod is pinned to one by hostname)."""
    if have is None:
        return f"no {key} label"
    return f"{key} equal to its name" if have == node.name else f"{key}={have}"


def _affinity_lines(pod: Pod, node: Node) -> list[str]:
    out = []
    for k, v in pod.node_selector.items():
        have = node.labels.get(k)
        if have != v:
            out.append(f"nodeSelector {k}={v}; {NODE_HAS}{_shown(k, have, node)}")
    for i, term in enumerate(pod.required_affinity or ()):
        if affinity.term_matches(term, node.labels, node.name):
            continue
        for req in term.match_expressions:
            have = node.labels.get(req.key)
            if not affinity.requirement_matches(req, have):
                out.append(
                    f"required term {i}: {req.key} {req.operator} {list(req.values)}; "
                    f"{NODE_HAS}{_shown(req.key, have, node)}"
                )
    return out


def excluded_evidence(ctx: Context, reason: PreFilterExcluded, idx: int) -> list[str]:
    """PreFilter narrowed the nodes to none; NodeAffinity's name terms are the ones that narrow today."""
    return excluded_evidence_many(ctx, reason, [idx])[0]


def excluded_evidence_many(ctx: Context, reason: PreFilterExcluded, idxs: list[int]) -> list[list[str]]:
    """``excluded_evidence`` of each node of ``idxs`` (a pod pinned by matchFields: every node but one)."""
    if names.NODE_AFFINITY in reason.plugins:
        return affinity_evidence_many(ctx, reason, idxs)
    return [[] for _ in idxs]


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
        dry, label = mutate(ctx.pod.namespace, f"label node {first} {key}={value} --overwrite", output="yaml")
        commands += [
            dry,
            f"{label}   # only if {first} belongs in that pool",
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
    PreFilterExcluded: Hooks(excluded_evidence, evidence_many=excluded_evidence_many),
}
