"""Node selector and node affinity matching (R5.1, R5.2): the one implementation of the rule.

Mirrors ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity``: ``spec.nodeSelector`` labels must
all match, then at least one ``nodeSelectorTerms`` entry must match (terms are ORed); inside a term all
``matchExpressions`` and ``matchFields`` must match (ANDed). An empty term matches nothing, and a term
with an unparsable requirement (``Gt`` with a non-integer, ``In`` without values) matches nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubegpu.model.objects import NodeSelectorTerm, Pod, Requirement

NAME_FIELD = "metadata.name"


def requirement_is_valid(req: Requirement, *, field: bool = False) -> bool:
    if field:
        return req.key == NAME_FIELD and req.operator in ("In", "NotIn") and len(req.values) == 1
    if req.operator in ("In", "NotIn"):
        return len(req.values) > 0
    if req.operator in ("Exists", "DoesNotExist"):
        return len(req.values) == 0
    if req.operator in ("Gt", "Lt"):
        return len(req.values) == 1 and _int64(req.values[0]) is not None
    return False


def _int64(text: str) -> int | None:
    try:
        v = int(text, 10)
    except ValueError:
        return None
    return v if -(2**63) <= v < 2**63 else None


def requirement_matches(req: Requirement, value: str | None) -> bool:
    """``labels.Requirement.Matches`` for a label that is ``value`` (None when absent)."""
    op = req.operator
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if value is None:
        return False
    have, want = _int64(value), _int64(req.values[0])
    if have is None or want is None:
        return False
    return have > want if op == "Gt" else have < want


def term_matches(term: NodeSelectorTerm, labels: Mapping[str, str], node_name: str) -> bool:
    if term.is_empty:
        return False
    if not all(requirement_is_valid(r) for r in term.match_expressions):
        return False
    if not all(requirement_is_valid(r, field=True) for r in term.match_fields):
        return False
    return all(requirement_matches(r, labels.get(r.key)) for r in term.match_expressions) and fields_match(
        term, node_name
    )


def fields_match(term: NodeSelectorTerm, node_name: str) -> bool:
    """Whether ``node_name`` meets every matchFields requirement of ``term`` (``metadata.name``, the one field
    upstream accepts)."""
    return all(requirement_matches(r, node_name) for r in term.match_fields)


def required_matches(pod: Pod, labels: Mapping[str, str], node_name: str) -> bool:
    """``GetRequiredNodeAffinity(pod).Match(node)``: nodeSelector AND any required term."""
    if any(labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    if pod.required_affinity is None:
        return True
    return any(term_matches(t, labels, node_name) for t in pod.required_affinity)


def preferred_score(pod: Pod, labels: Mapping[str, str], node_name: str) -> int:
    """Sum of the weights of the preferred terms this node matches (zero-weight terms are skipped)."""
    return sum(
        p.weight for p in pod.preferred_affinity if p.weight and term_matches(p.preference, labels, node_name)
    )
