"""PodTopologySpread: DoNotSchedule constraints filter, ScheduleAnyway constraints score.

Mirrors kube-scheduler ``plugins/podtopologyspread`` (``common.go``, ``filtering.go``, ``scoring.go``; the
texts are the same in 1.30–1.37). For each constraint of the pod (with ``matchLabelKeys`` merged), the
nodes counted are those carrying *every* constraint's ``topologyKey`` and admitted by its inclusion
policies (``nodeAffinityPolicy`` Honor by default: the pod's nodeSelector/required node affinity;
``nodeTaintsPolicy`` Ignore by default; both GA-on in every supported minor); each distinct value among
them is a domain, counting the non-terminating pods of the pod's namespace the selector matches.

Filter, per node and constraint in order: a node without the ``topologyKey`` label is
``node(s) didn't match pod topology spread constraints (missing required label)``
(UnschedulableAndUnresolvable); else with ``skew = count(node's domain) + (1 if the pod matches its own
selector) − min over domains`` (the minimum is 0 while there are fewer domains than ``minDomains``), a
skew above ``maxSkew`` is ``node(s) didn't match pod topology spread constraints`` (Unschedulable:
evicting pods may help). Worked example: zones a (2 matching pods) and b (0), maxSkew 1, the pod matches:
a gives 2 + 1 − 0 = 3 > 1 (rejected), b gives 0 + 1 − 0 = 1 (fits).

Score (ScheduleAnyway): over the feasible nodes that carry every key, ``Σ count·log(size + 2) + maxSkew − 1``
per constraint (size: domains among them, or their number for ``kubernetes.io/hostname``, whose count is
the node's own pods), rounded; NormalizeScore maps ``100·(max + min − s) / max`` and 0 for nodes lacking a
key. Not modelled: the cluster-default constraints (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway)
for pods without their own, whose selector comes from the Services, ReplicaSets, ReplicationControllers
and StatefulSets selecting the pod (``helper.DefaultSelector``), objects a snapshot does not carry; they
change only scores, and ``explain`` says so.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import Any, ClassVar, Final

import numpy as np
import numpy.typing as npt

from kubegpu.model.objects import Pod, SpreadConstraint
from kubegpu.model.pod_affinity import spread_counts, spread_selector, spread_self_match
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.framework import MAX_NODE_SCORE, Codes, CycleState, Handle, ReasonIds, Rows, Scores
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.plugins.node_affinity import required_mask
from kubegpu.scheduler.plugins.taint_toleration import first_untolerated
from kubegpu.scheduler.pod_groups import Counts, LabelGroup
from kubegpu.scheduler.reasons import SpreadLabelMissing, SpreadSkew
from kubegpu.scheduler.status import SKIP, SUCCESS, Code, Status

Mask = npt.NDArray[np.bool_]
HOSTNAME: Final = "kubernetes.io/hostname"
NO_DOMAIN: Final = 2**31 - 1  # upstream's critical path starts at math.MaxInt32
SCORE_KEY: Final = "PreScorePodTopologySpread"


def constraints_of(pod: Pod, action: str) -> tuple[SpreadConstraint, ...]:
    return tuple(c for c in pod.spread_constraints if c.when_unsatisfiable == action)


class Domains:
    """One constraint's domains over ``cluster``: label ids per node, pods counted per node."""

    def __init__(self, cluster: ClusterState, pod: Pod, c: SpreadConstraint) -> None:
        self.c = c
        self.ids, self.values = cluster.label_column(c.topology_key)
        sel = spread_selector(c, pod.labels)
        self.self_match = spread_self_match(sel, pod.labels)

        def counts(g: LabelGroup) -> bool:
            return spread_counts(sel, g.namespace, pod.namespace, g.labels, g.terminating)

        hint = sel.match_labels[0] if sel is not None and sel.match_labels else None
        self.per_node: Counts = cluster.groups.count_where(("spread", pod.namespace, sel), counts, hint)


def eligible(cluster: ClusterState, pod: Pod, c: SpreadConstraint, every_key: Mask) -> Mask:
    """Nodes whose pods count for ``c``: every constraint's key present, and ``c``'s inclusion policies."""
    ok = every_key.copy()
    rows = np.arange(len(cluster), dtype=np.intp)
    if c.node_affinity_policy in ("", "Honor"):
        ok &= required_mask(pod, cluster, rows)
    if c.node_taints_policy == "Honor":
        per_set = np.array(
            [first_untolerated(t, pod.tolerations) is None for t in cluster.taint_sets], dtype=bool
        )
        ok &= per_set[cluster.taint_set_id]
    return ok


def every_key_mask(cluster: ClusterState, constraints: tuple[SpreadConstraint, ...]) -> Mask:
    ok = np.ones(len(cluster), dtype=bool)
    for c in constraints:
        ok &= cluster.label_column(c.topology_key)[0] >= 0
    return ok


class PodTopologySpread:
    name: ClassVar[str] = names.POD_TOPOLOGY_SPREAD

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._handle = handle
        self._skew = handle.reasons.intern((SpreadSkew(),))
        self._missing = handle.reasons.intern((SpreadLabelMissing(),))

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterState
    ) -> tuple[frozenset[str] | None, Status]:
        return None, (SUCCESS if constraints_of(pod, "DoNotSchedule") else SKIP)

    def sign(self, pod: Pod) -> Hashable | None:
        return None if constraints_of(pod, "DoNotSchedule") else ()

    def filter_batch(
        self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows
    ) -> tuple[Codes, ReasonIds]:
        constraints = constraints_of(pod, "DoNotSchedule")
        codes = np.zeros(len(rows), dtype=np.int8)
        reasons = np.zeros(len(rows), dtype=np.int32)
        every = every_key_mask(cluster, constraints)
        for c in constraints:
            d = Domains(cluster, pod, c)
            ok = eligible(cluster, pod, c, every)
            n_values = len(d.values)
            present = np.bincount(d.ids[ok], minlength=n_values) > 0
            matched = np.bincount(d.ids[ok], weights=d.per_node[ok], minlength=n_values).astype(np.int64)
            domains = int(present.sum())
            low = int(matched[present].min()) if domains else NO_DOMAIN
            if domains < (c.min_domains or 1):
                low = 0
            open_ = codes == 0
            ids = d.ids[rows]
            missing = open_ & (ids < 0)
            codes[missing], reasons[missing] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE, self._missing
            count = np.where(ids >= 0, matched[np.where(ids >= 0, ids, 0)] if n_values else 0, 0)
            skewed = open_ & (ids >= 0) & (count + int(d.self_match) - low > c.max_skew)
            codes[skewed], reasons[skewed] = Code.UNSCHEDULABLE, self._skew
        return codes, reasons

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        codes, reasons = self.filter_batch(state, pod, node.cluster, np.array([node.idx], dtype=np.intp))
        if codes[0] == 0:
            return SUCCESS
        return Status(Code(int(codes[0])), self._handle.reasons.reasons(int(reasons[0])))

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Status:
        constraints = constraints_of(pod, "ScheduleAnyway")
        if not constraints or not len(cluster):
            return SKIP
        every = every_key_mask(cluster, constraints)
        ignored = ~every[rows]
        kept = rows[~ignored]
        parts = []
        for c in constraints:
            d = Domains(cluster, pod, c)
            if c.topology_key == HOSTNAME:
                size = len(kept)
                per_row = d.per_node[rows]
            else:
                in_feasible = np.zeros(max(len(d.values), 1), dtype=bool)
                in_feasible[d.ids[kept][d.ids[kept] >= 0]] = True
                size = int(in_feasible.sum())
                ok = eligible(cluster, pod, c, every) & (d.ids >= 0)
                per_value = np.bincount(d.ids[ok], weights=d.per_node[ok], minlength=len(in_feasible))
                ids = d.ids[rows]
                per_row = np.where(ids >= 0, per_value[np.where(ids >= 0, ids, 0)], 0).astype(np.int64)
            parts.append((d.ids[rows] >= 0, per_row, math.log(size + 2), c.max_skew - 1))
        state.write(SCORE_KEY, (rows, ignored, parts))
        return SUCCESS

    def score_batch(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Scores:
        scored_rows, ignored, parts = state.read(SCORE_KEY)
        if np.array_equal(scored_rows, rows):
            pos: Any = slice(None)
        else:
            at = {int(r): i for i, r in enumerate(scored_rows)}
            pos = np.array([at[int(r)] for r in rows], dtype=np.intp)
        total = np.zeros(len(scored_rows), dtype=np.float64)
        for has, per_row, weight, base in parts:
            total += np.where(has, per_row.astype(np.float64) * weight + float(base), 0.0)
        rounded = np.floor(total + 0.5).astype(np.int64)  # math.Round: half away from zero (non-negative)
        rounded[ignored] = 0
        out: Scores = rounded[pos]
        return out

    def score(self, state: CycleState, pod: Pod, node: NodeView) -> int:
        return int(self.score_batch(state, pod, node.cluster, np.array([node.idx], dtype=np.intp))[0])

    def normalize(self, state: CycleState, pod: Pod, scores: Scores) -> Scores:
        _, ignored, _ = state.read(SCORE_KEY)
        valid = scores[~ignored]
        lo = int(valid.min()) if valid.size else 0
        hi = max(int(valid.max()), 0) if valid.size else 0
        out = np.full_like(scores, MAX_NODE_SCORE) if hi == 0 else MAX_NODE_SCORE * (hi + lo - scores) // hi
        out[ignored] = 0
        return out
