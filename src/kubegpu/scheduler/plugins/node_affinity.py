"""NodeAffinity: ``nodeSelector`` and required node affinity filter; preferred node affinity scores
(R5.1, R5.2: required = compatibility, unmet means Pending; preferred only scores).

Mirrors kube-scheduler 1.34 ``plugins/nodeaffinity``. PreFilter turns ``matchFields metadata.name In``
terms into a node-name set (``PreFilterResult``), so nodes outside it are reported as
``node(s) didn't satisfy plugin(s) [NodeAffinity]``; conflicting name terms give
``pod affinity terms conflict``. Filter rejects with ``node(s) didn't match Pod's node affinity/selector``
(UnschedulableAndUnresolvable). Score sums the weights of matching preferred terms; NormalizeScore scales
by the maximum. The rule itself lives in ``kubegpu.model.affinity``; the batch path evaluates it per
label column.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, ClassVar, Final

import numpy as np
import numpy.typing as npt

from kubegpu.model import affinity
from kubegpu.model.objects import NodeSelectorTerm, Pod, Requirement
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.framework import Codes, CycleState, Handle, ReasonIds, Rows, Scores, default_normalize
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.reasons import AffinityMismatch, AffinityTermsConflict
from kubegpu.scheduler.status import SKIP, SUCCESS, Code, Status, unresolvable

REASON_POD: Final = AffinityMismatch()
REASON_CONFLICT: Final = AffinityTermsConflict()

Mask = npt.NDArray[np.bool_]


def requirement_mask(req: Requirement, cluster: ClusterState, rows: Rows, *, field: bool = False) -> Mask:
    """``affinity.requirement_matches`` over many nodes at once, decided per distinct label value. ``In`` and
    ``NotIn`` (a pod pinned to a node by ``kubernetes.io/hostname`` or ``metadata.name``) look their values
    up instead: a label with a value per node would otherwise cost a test per node for every pod."""
    if field:  # ``metadata.name``, In or NotIn (``affinity.requirement_is_valid``): names are unique
        named = np.zeros(len(cluster), dtype=bool)
        named[[i for i in (cluster.index.get(v) for v in req.values) if i is not None]] = True
        hit = named[rows]
        return ~hit if req.operator == "NotIn" else hit
    ids, values = cluster.label_column(req.key)
    if req.operator in ("In", "NotIn"):
        listed = np.zeros(len(values) + 1, dtype=bool)  # the last: the label absent
        known = cluster.label_ids(req.key)
        listed[[i for i in (known.get(v) for v in req.values) if i is not None]] = True
        per_value = listed if req.operator == "In" else ~listed
        per_value[-1] = False  # (absent: below)
    else:
        per_value = np.array([affinity.requirement_matches(req, v) for v in values] + [False], dtype=bool)
    absent = affinity.requirement_matches(req, None)
    col = ids[rows]
    out = per_value[np.where(col >= 0, col, len(values))]
    if absent:
        out = out | (col < 0)
    return out


def term_mask(term: NodeSelectorTerm, cluster: ClusterState, rows: Rows) -> Mask:
    if term.is_empty or not all(affinity.requirement_is_valid(r) for r in term.match_expressions):
        return np.zeros(len(rows), dtype=bool)
    if not all(affinity.requirement_is_valid(r, field=True) for r in term.match_fields):
        return np.zeros(len(rows), dtype=bool)
    mask = np.ones(len(rows), dtype=bool)
    for r in term.match_expressions:
        mask &= requirement_mask(r, cluster, rows)
    for r in term.match_fields:
        mask &= requirement_mask(r, cluster, rows, field=True)
    return mask


def required_mask(pod: Pod, cluster: ClusterState, rows: Rows) -> Mask:
    mask = np.ones(len(rows), dtype=bool)
    for key, value in pod.node_selector.items():
        mask &= requirement_mask(Requirement(key, "In", (value,)), cluster, rows)
    if pod.required_affinity is not None:
        any_term = np.zeros(len(rows), dtype=bool)
        for term in pod.required_affinity:
            any_term |= term_mask(term, cluster, rows)
        mask &= any_term
    return mask


class NodeAffinity:
    name: ClassVar[str] = names.NODE_AFFINITY
    sign_from_spec: ClassVar[bool] = True  # ``sign`` reads the pod's spec only (Framework.signed_prefix)
    pre_filter_from_spec: ClassVar[bool] = True  # (Framework.run_pre_filter: kept per pod)
    # its Filter reads the node object alone, never the pods on it (upstream registers only Node events)
    filter_reads_pods: ClassVar[bool] = False
    filter_errors: ClassVar[bool] = False

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._reason_id = handle.reasons.intern((REASON_POD,))

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: object
    ) -> tuple[frozenset[str] | None, Status]:
        if pod.required_affinity is None and not pod.node_selector:
            return None, SKIP
        if not pod.required_affinity:
            return None, SUCCESS
        result: set[str] | None = None
        for term in pod.required_affinity:
            term_names: set[str] | None = None
            for r in term.match_fields:
                if r.key == affinity.NAME_FIELD and r.operator == "In":
                    term_names = set(r.values) if term_names is None else term_names & set(r.values)
            if term_names is None:
                return None, SUCCESS  # a term without a name constraint admits every node (terms are ORed)
            result = term_names if result is None else result | term_names
        if result is not None and not result:
            return None, unresolvable(REASON_CONFLICT)
        return (frozenset(result) if result else None), SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        if affinity.required_matches(pod, node.node.labels, node.name):
            return SUCCESS
        return unresolvable(REASON_POD)

    def sign(self, pod: Pod) -> Hashable:
        return (tuple(sorted(pod.node_selector.items())), pod.required_affinity)

    def filter_batch(
        self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows
    ) -> tuple[Codes, ReasonIds]:
        bad = ~required_mask(pod, cluster, rows)
        return (bad * np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)).astype(np.int8), (
            bad * self._reason_id
        ).astype(np.int32)

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Status:
        return SUCCESS if pod.preferred_affinity else SKIP

    def score(self, state: CycleState, pod: Pod, node: NodeView) -> int:
        return affinity.preferred_score(pod, node.node.labels, node.name)

    def score_batch(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Scores:
        total = np.zeros(len(rows), dtype=np.int64)
        for p in pod.preferred_affinity:
            if p.weight:
                total += term_mask(p.preference, cluster, rows) * p.weight
        return total

    def normalize(self, state: CycleState, pod: Pod, scores: Scores) -> Scores:
        return default_normalize(scores, reverse=False)
