"""Inter-pod affinity and topology spread matching: the one implementation of which pods a term or a
constraint selects (kube-scheduler's ``AffinityTerm.Matches`` and ``countPodsMatchSelector``).

- A pod affinity term selects pods in its namespaces (``namespaces``; the owning pod's namespace when both
  ``namespaces`` and ``namespaceSelector`` are absent) or in namespaces whose labels ``namespaceSelector``
  matches (``{}`` matches every namespace), whose labels ``labelSelector`` matches; an absent
  ``labelSelector`` selects nothing (``metav1.LabelSelectorAsSelector(nil)`` is ``labels.Nothing()``).
  Source: ``k8s.io/kube-scheduler/framework`` ``AffinityTerm.Matches`` / ``newAffinityTerm``.
- ``matchLabelKeys`` / ``mismatchLabelKeys`` (pod affinity; feature MatchLabelKeysInPodAffinity, beta and on
  by default from 1.31, GA in 1.33, ``pkg/features/kube_features.go``) add ``key In (value)`` /
  ``key NotIn (value)`` with the owning pod's value for each key it carries; the API server merges them
  into ``labelSelector`` at creation (``pkg/registry/core/pod/strategy.go`` ``applyMatchLabelKeysAndMismatchLabelKeys``),
  so merging again for a stored pod adds the same requirement twice, which changes nothing.
- A spread constraint counts pods of the incoming pod's namespace that are not terminating and that its
  selector (with ``matchLabelKeys`` merged as ``key: value``) matches; an empty selector counts nothing
  (``selector.Empty()`` in ``podtopologyspread/common.go``), and so does an absent one.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubegpu.model.objects import LabelSelector, PodAffinityTerm, Requirement, SpreadConstraint

Labels = Mapping[str, str]


def term_selector(term: PodAffinityTerm, owner_labels: Labels, label_keys: bool) -> LabelSelector | None:
    """The term's label selector with ``matchLabelKeys``/``mismatchLabelKeys`` merged (when ``label_keys``:
    the release has the feature) using the owning pod's labels."""
    sel = term.selector
    if sel is None or not label_keys or not (term.match_label_keys or term.mismatch_label_keys):
        return sel
    extra = tuple(
        Requirement(k, op, (owner_labels[k],))
        for keys, op in ((term.match_label_keys, "In"), (term.mismatch_label_keys, "NotIn"))
        for k in keys
        if k in owner_labels
    )
    return LabelSelector(sel.match_labels, sel.match_expressions + extra)


def term_namespaces(term: PodAffinityTerm, owner_namespace: str) -> frozenset[str]:
    if not term.namespaces and term.namespace_selector is None:
        return frozenset((owner_namespace,))
    return frozenset(term.namespaces)


def term_matches(
    term: PodAffinityTerm,
    selector: LabelSelector | None,
    owner_namespace: str,
    namespace: str,
    labels: Labels,
    namespace_labels: Mapping[str, Labels],
) -> bool:
    """Does ``term`` (of a pod in ``owner_namespace``; ``selector`` from ``term_selector``) select a pod
    in ``namespace`` with ``labels``? ``namespace_labels``: the cluster's namespaces (absent: no labels)."""
    in_ns = namespace in term_namespaces(term, owner_namespace) or (
        term.namespace_selector is not None
        and term.namespace_selector.matches(namespace_labels.get(namespace, {}))
    )
    return in_ns and selector is not None and selector.matches(labels)


def spread_selector(c: SpreadConstraint, pod_labels: Labels) -> LabelSelector | None:
    """The constraint's selector with ``matchLabelKeys`` merged as ``key: value`` of the incoming pod
    (``filterTopologySpreadConstraints``; on by default in every supported minor, beta since 1.27)."""
    sel = c.selector
    keys = tuple((k, pod_labels[k]) for k in c.match_label_keys if k in pod_labels)
    if sel is None or not keys:
        return sel
    return LabelSelector(tuple(sorted(set(sel.match_labels) | set(keys))), sel.match_expressions)


def is_empty(sel: LabelSelector | None) -> bool:
    """``labels.Selector.Empty()``: true for ``{}`` (matches everything), false for an absent selector."""
    return sel is not None and not sel.match_labels and not sel.match_expressions


def spread_counts(
    sel: LabelSelector | None, namespace: str, pod_namespace: str, labels: Labels, terminating: bool
) -> bool:
    """Does a pod (``namespace``, ``labels``) count for a constraint of a pod in ``pod_namespace``?"""
    if sel is None or is_empty(sel) or terminating or namespace != pod_namespace:
        return False
    return sel.matches(labels)


def spread_self_match(sel: LabelSelector | None, labels: Labels) -> bool:
    """``c.Selector.Matches(podLabels)`` for the incoming pod itself (``{}`` matches, absent does not)."""
    return sel is not None and sel.matches(labels)
