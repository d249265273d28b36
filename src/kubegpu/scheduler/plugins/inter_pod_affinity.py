"""InterPodAffinity: required pod affinity and anti-affinity filter (the incoming pod's terms and the
running pods' anti-affinity against it); preferred terms, and running pods' terms, score.

Mirrors kube-scheduler ``plugins/interpodaffinity`` (``filtering.go``, ``scoring.go``; the same in
1.30–1.37 outside the 1.37 alpha ``InterPodAffinityHostnameFastPath``, off by default, which reaches the
same verdicts). Filter, per node, in this order (the first failure is the node's reason):

1. every required affinity term's ``topologyKey`` must be a node label and the node's domain must hold a
   pod matching *all* the terms, else ``node(s) didn't match pod affinity rules``
   (UnschedulableAndUnresolvable) — unless no such pod exists anywhere and the pod matches its own terms
   (the first pod of a group may start it);
2. no pod matching a required anti-affinity term may run in the node's domain of that term, else
   ``node(s) didn't match pod anti-affinity rules`` (Unschedulable: preemption may help);
3. no running pod whose required anti-affinity selects the incoming pod may run in the node's domain of
   that term, else ``node(s) didn't satisfy existing pods anti-affinity rules`` (Unschedulable).

PreFilter skips the plugin when the pod has no required terms and no running pod's anti-affinity selects
it. Score: per topology domain, + weight for each running pod a preferred affinity term selects, − weight
for preferred anti-affinity, + ``hardPodAffinityWeight`` (1) for each running pod whose required affinity
selects the incoming pod, ± weight for running pods' preferred terms that select it; a node scores its
domains' sum; NormalizeScore scales min..max to 0..100. Counts come from ``ClusterState.groups`` at call
time, so preemption's dry runs and nominated pods are seen as upstream's AddPod/RemovePod see them.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, ClassVar, Final

import numpy as np
import numpy.typing as npt

from kubegpu.model.objects import Pod, PodAffinityTerm, PodKey
from kubegpu.model.pod_affinity import term_matches, term_selector
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.framework import (
    MAX_NODE_SCORE,
    Codes,
    CycleState,
    Handle,
    ReasonIds,
    Rows,
    Scores,
)
from kubegpu.scheduler.plugin_calls import filter_one, score_one
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.pod_groups import AffinityGroup, Counts, LabelGroup, domain_counts
from kubegpu.scheduler.reasons import ExistingAntiAffinityHit, PodAffinityUnmet, PodAntiAffinityHit
from kubegpu.scheduler.status import SKIP, SUCCESS, Code, Status

Mask = npt.NDArray[np.bool_]
SCORE_KEY: Final = "PreScoreInterPodAffinity"


def domain_mask(cluster: ClusterState, key: str, counts: Counts) -> tuple[Mask, Mask, bool]:
    """(nodes carrying label ``key``, nodes whose domain of ``key`` holds a counted pod, whether any
    domain does)."""
    ids, values = cluster.label_column(key)
    dom = domain_counts(counts, ids, len(values))
    has = ids >= 0
    hit = has & (dom[np.where(has, ids, 0)] > 0) if len(values) else np.zeros(len(ids), dtype=bool)
    return has, hit, bool(dom.sum() > 0)


class PodTerms:
    """The rule applied to one cluster: which running pods a term selects, cached per group."""

    def __init__(self, cluster: ClusterState, label_keys: bool) -> None:
        self.cluster = cluster
        self.label_keys = label_keys

    def selects(self, term: PodAffinityTerm, owner_ns: str, owner_labels: Mapping[str, str], ns: str,
                labels: Mapping[str, str]) -> bool:  # fmt: skip
        if term.selector is None or any(labels.get(k) != v for k, v in term.selector.match_labels):
            return False  # the common case, decided without building the merged selector
        sel = term_selector(term, owner_labels, self.label_keys)
        return term_matches(term, sel, owner_ns, ns, labels, self.cluster.namespace_labels)

    def _key(self, tag: str, pod: Pod, terms: tuple[PodAffinityTerm, ...]) -> Hashable:
        return (tag, pod.namespace, tuple(sorted(pod.labels.items())), terms, self.label_keys)

    def count_all(self, pod: Pod, terms: tuple[PodAffinityTerm, ...]) -> Counts:
        """Per node, running pods that every one of ``pod``'s ``terms`` selects."""

        def ok(g: LabelGroup) -> bool:
            return all(self.selects(t, pod.namespace, pod.labels, g.namespace, g.labels) for t in terms)

        hint = next(
            (t.selector.match_labels[0] for t in terms if t.selector and t.selector.match_labels), None
        )
        return self.cluster.groups.count_where(self._key("all", pod, terms), ok, hint)

    def existing_terms(self, pod: Pod, tag: str) -> list[tuple[AffinityGroup, Counts, PodAffinityTerm, int]]:
        """Running pods' terms that select ``pod``: (group, its pods per node, term, sign) for ``tag``
        ``anti`` (required anti-affinity) or ``score`` (required affinity +, preferred ±)."""
        groups = self.cluster.groups

        def terms_of(g: AffinityGroup) -> list[tuple[PodAffinityTerm, int]]:
            a = g.affinity
            if tag == "anti":
                return [(t, 1) for t in a.anti_required]
            return [*((t, 0) for t in a.required), *((t, 1) for t in a.preferred),
                    *((t, -1) for t in a.anti_preferred)]  # fmt: skip

        def matching(g: AffinityGroup) -> list[tuple[PodAffinityTerm, int]]:
            return [
                (t, s)
                for t, s in terms_of(g)
                if self.selects(t, g.namespace, g.labels, pod.namespace, pod.labels)
            ]

        out: list[tuple[AffinityGroup, Counts, PodAffinityTerm, int]] = []
        for aid in groups.affinity_groups_where(
            pod.labels, lambda g: True
        ):  # each group's terms matched once
            g = groups.affinity_groups[aid]
            found = matching(g)
            if found:
                counts = groups.affinity_counts(aid)
                out.extend((g, counts, t, s) for t, s in found)
        return out


class InterPodAffinity:
    name: ClassVar[str] = names.INTER_POD_AFFINITY

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._handle = handle
        self._label_keys = handle.behaviour.pod_affinity_label_keys
        self.hard_weight = int(args.get("hardPodAffinityWeight", 1))
        self.ignore_existing_preferred = bool(args.get("ignorePreferredTermsOfExistingPods", False))
        self._ids = [handle.reasons.intern((r,)) for r in (PodAffinityUnmet(), PodAntiAffinityHit(),
                                                           ExistingAntiAffinityHit())]  # fmt: skip
        self._fresh: PodKey | None = None  # the pod whose filter result depends on domains (not cacheable)
        self._labelled_for: tuple[ClusterState, Counts] | None = None

    def _labelled(self, cluster: ClusterState) -> Counts:
        """1 for nodes with any label (upstream skips a running pod whose node has none), per cluster."""
        if self._labelled_for is None or self._labelled_for[0] is not cluster:
            self._labelled_for = (cluster, np.array([bool(n.labels) for n in cluster.nodes], dtype=np.int64))
        return self._labelled_for[1]

    def terms(self, cluster: ClusterState) -> PodTerms:
        return PodTerms(cluster, self._label_keys)

    # --- filter -------------------------------------------------------------------------------------

    def existing_anti(self, pod: Pod, cluster: ClusterState) -> tuple[Mask, bool]:
        """Nodes in a domain where a running pod's required anti-affinity selects ``pod``; whether any."""
        per_key: dict[str, Counts] = {}
        for _, counts, t, _ in self.terms(cluster).existing_terms(pod, "anti"):
            per_key[t.topology_key] = per_key.get(t.topology_key, 0) + counts
        blocked = np.zeros(len(cluster), dtype=bool)
        found = False
        for key, counts in per_key.items():
            _, hit, any_ = domain_mask(cluster, key, counts)
            blocked |= hit
            found |= any_
        return blocked, found

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterState
    ) -> tuple[frozenset[str] | None, Status]:
        a = pod.pod_affinity
        self._fresh = None
        if not a.required and not a.anti_required and not self.existing_anti(pod, cluster)[1]:
            return None, SKIP
        self._fresh = pod.key
        return None, SUCCESS

    def sign(self, pod: Pod) -> Hashable | None:
        return (
            None
            if pod.key == self._fresh or pod.pod_affinity.required or pod.pod_affinity.anti_required
            else ()
        )

    def failures(self, pod: Pod, cluster: ClusterState) -> tuple[Mask, Mask, Mask]:
        """Per node: (affinity unmet, anti-affinity hit, existing pods' anti-affinity hit)."""
        n = len(cluster)
        terms = self.terms(cluster)
        a = pod.pod_affinity
        unmet = np.zeros(n, dtype=bool)
        if a.required:
            matching = terms.count_all(pod, a.required)
            missing = np.zeros(n, dtype=bool)
            exist = np.ones(n, dtype=bool)
            any_pod = False
            for t in a.required:
                has, hit, any_ = domain_mask(cluster, t.topology_key, matching)
                missing |= ~has
                exist &= hit
                any_pod |= any_
            own = all(
                terms.selects(t, pod.namespace, pod.labels, pod.namespace, pod.labels) for t in a.required
            )
            unmet = missing | (~exist & (any_pod or not own))
        anti = np.zeros(n, dtype=bool)
        for t in a.anti_required:
            counts = terms.count_all(pod, (t,))
            anti |= domain_mask(cluster, t.topology_key, counts)[1]
        existing, _ = self.existing_anti(pod, cluster)
        return unmet, anti, existing

    def filter_batch(
        self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows
    ) -> tuple[Codes, ReasonIds]:
        return self._codes(*(m[rows] for m in self.failures(pod, cluster)))

    def removal_stable(
        self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows
    ) -> tuple[Codes, ReasonIds, Mask]:
        """``filter_batch`` over ``rows`` and where that status stays the same with any of the row's own pods
        removed (the rest of the cluster unchanged), for preemption's dry runs: the rows where the required
        affinity is unmet, which ``Filter`` reports before either anti-affinity check, and for a pod with no
        required affinity the rows that pass. Such a row lacks a
        term's topology label (read off the node alone), or no pod matching every term runs in its domains,
        so none runs on the row itself: removing its pods leaves ``affinityCounts`` as they were (upstream
        ``RemovePod`` → ``updateWithPod`` counts a pod only if it matches every term), and with them the
        domain check and the first-pod rule (no matching pod anywhere)."""
        unmet, anti, existing = (m[rows] for m in self.failures(pod, cluster))
        codes, reasons = self._codes(unmet, anti, existing)
        if pod.pod_affinity.required:
            return codes, reasons, unmet
        # no required affinity: a row that passes has no pod in its domains matching an anti-affinity term
        # and none whose anti-affinity selects the pod; removing the row's pods only lowers those counts
        # (upstream ``RemovePod`` → ``updateWithPod`` subtracts), so it still passes
        return codes, reasons, unmet | (codes == Code.SUCCESS)

    def _codes(self, unmet: Mask, anti: Mask, existing: Mask) -> tuple[Codes, ReasonIds]:
        """Per row, the first failure of ``Filter``'s order: unmet affinity, then anti-affinity, then
        existing pods' anti-affinity."""
        codes = np.zeros(len(unmet), dtype=np.int8)
        reasons = np.zeros(len(unmet), dtype=np.int32)
        codes[existing], reasons[existing] = Code.UNSCHEDULABLE, self._ids[2]
        codes[anti], reasons[anti] = Code.UNSCHEDULABLE, self._ids[1]
        codes[unmet], reasons[unmet] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE, self._ids[0]
        return codes, reasons

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        return filter_one(self, self._handle.reasons, state, pod, node)

    # --- score --------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Status:
        a = pod.pod_affinity
        if self.ignore_existing_preferred and not (a.preferred or a.anti_preferred):
            return SKIP
        terms = self.terms(cluster)
        labelled = self._labelled(cluster)
        topo: dict[str, Counts] = {}
        touched = False

        def add(key: str, counts: Counts, weight: int) -> None:
            nonlocal touched
            ids, values = cluster.label_column(key)
            dom = domain_counts(counts * labelled, ids, len(values))
            if dom.any():
                touched = True
                topo[key] = topo.get(key, np.zeros(len(values), dtype=np.int64)) + weight * dom

        for t in a.preferred:
            add(t.topology_key, terms.count_all(pod, (t,)), t.weight)
        for t in a.anti_preferred:
            add(t.topology_key, terms.count_all(pod, (t,)), -t.weight)
        for _, counts, t, sign in terms.existing_terms(pod, "score"):
            if sign == 0 and self.hard_weight > 0:
                add(t.topology_key, counts, self.hard_weight)
            elif sign:
                add(t.topology_key, counts, sign * t.weight)
        if not touched:
            return SKIP
        state.write(SCORE_KEY, topo)
        return SUCCESS

    def score_batch(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Scores:
        total = np.zeros(len(rows), dtype=np.int64)
        for key, per_value in state.read(SCORE_KEY).items():
            ids = cluster.label_column(key)[0][rows]
            total += np.where(ids >= 0, per_value[np.where(ids >= 0, ids, 0)], 0)
        return total

    def score(self, state: CycleState, pod: Pod, node: NodeView) -> int:
        return score_one(self, state, pod, node)

    def normalize(self, state: CycleState, pod: Pod, scores: Scores) -> Scores:
        """Upstream's float min-max scaling: ``int64(100 * ((s - min) / (max - min)))``."""
        if not scores.size:
            return scores
        lo, hi = int(scores.min()), int(scores.max())
        if hi == lo:
            return np.zeros_like(scores)
        frac = (scores - lo).astype(np.float64) / float(hi - lo)
        return (float(MAX_NODE_SCORE) * frac).astype(np.int64)
