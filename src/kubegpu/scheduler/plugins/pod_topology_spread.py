"""PodTopologySpread: DoNotSchedule constraints filter, ScheduleAnyway constraints score.

Mirrors kube-scheduler ``plugins/podtopologyspread`` (``common.go``, ``filtering.go``, ``scoring.go``,
``plugin.go``; the behaviour is the same in 1.30–1.37, only refactored). For each constraint of the pod (with
``matchLabelKeys`` merged), the nodes counted are those carrying *every* constraint's ``topologyKey`` and
admitted by its inclusion policies (``nodeAffinityPolicy`` Honor by default: the pod's nodeSelector/required
node affinity; ``nodeTaintsPolicy`` Ignore by default; both GA-on in every supported minor); each distinct
value among them is a domain, counting the non-terminating pods of the pod's namespace the selector matches.

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
key.

Default constraints (``plugin.go`` ``New``, ``common.go`` ``buildDefaultConstraints``): a pod with no
``topologySpreadConstraints`` of its own gets the profile's defaults — with ``defaultingType: System`` (the
default) ``kubernetes.io/hostname`` maxSkew 3 and ``topology.kubernetes.io/zone`` maxSkew 5, both
ScheduleAnyway; with ``List`` the args' ``defaultConstraints`` — all with the selector
``model.default_spread`` deduces from the Services and controllers selecting the pod (none when it is empty;
a default constraint's own ``matchLabelKeys`` are overwritten by it). System-defaulted scoring does not
require every key (``scoring.go`` ``requireAllTopologies``): no node is ignored, a node without the zone label
gets no zone term and counts, with every such node, in the domain of value "" (which also adds one to the
zone's size). The objects come from the snapshot through the handle (``Handle.spread_owners``); without them there are none.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import Any, ClassVar, Final

import numpy as np
import numpy.typing as npt

from kubegpu.errors import ConfigError
from kubegpu.model.names import HOSTNAME_LABEL, ZONE_LABEL
from kubegpu.model.objects import LabelSelector, Pod, SpreadConstraint, first_untolerated
from kubegpu.model.pod_affinity import spread_counts, spread_selector, spread_self_match
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
from kubegpu.scheduler.plugins.node_affinity import required_mask
from kubegpu.scheduler.pod_groups import Counts, LabelGroup
from kubegpu.scheduler.reasons import SpreadLabelMissing, SpreadSkew
from kubegpu.scheduler.status import SKIP, SUCCESS, Code, Status

Mask = npt.NDArray[np.bool_]
NO_DOMAIN: Final = 2**31 - 1  # upstream's critical path starts at math.MaxInt32
SCORE_KEY: Final = "PreScorePodTopologySpread"
SYSTEM: Final = "System"
LIST: Final = "List"
# plugin.go systemDefaultConstraints (1.30–1.37), in its order
SYSTEM_DEFAULTS: Final = (
    SpreadConstraint(3, HOSTNAME_LABEL, "ScheduleAnyway", None),
    SpreadConstraint(5, ZONE_LABEL, "ScheduleAnyway", None),
)
ACTIONS: Final = ("DoNotSchedule", "ScheduleAnyway")
# (constraint, its selector): the pod's own with matchLabelKeys merged, or a default with the deduced one
Bound = tuple[SpreadConstraint, LabelSelector | None]


def spread_defaults(args: Mapping[str, Any], where: str) -> tuple[tuple[SpreadConstraint, ...], bool]:
    """``PodTopologySpreadArgs``' default constraints and whether they are the system ones, checked as
    ``validation.ValidatePodTopologySpreadArgs`` does (1.30–1.37); ``ConfigError`` names ``where`` and the field."""

    def fail(field: str, problem: str) -> ConfigError:
        return ConfigError(f"{where}.{field}: {problem}")

    kind = args.get("defaultingType") or SYSTEM  # SetDefaults_PodTopologySpreadArgs
    raw = args.get("defaultConstraints") or []
    if kind not in (SYSTEM, LIST):
        raise fail("defaultingType", f'Unsupported value: {kind!r}: supported values: "{SYSTEM}", "{LIST}"')
    if not isinstance(raw, list):
        raise fail("defaultConstraints", f"expected a list, got {type(raw).__name__}")
    if kind == SYSTEM:
        if raw:
            raise fail("defaultingType", f'Invalid value: "{SYSTEM}": when .defaultConstraints are not empty')
        return SYSTEM_DEFAULTS, True
    out: list[SpreadConstraint] = []
    for i, c in enumerate(raw):
        f = f"defaultConstraints[{i}]"
        if not isinstance(c, Mapping):
            raise fail(f, f"expected an object, got {type(c).__name__}")
        skew, key, action = c.get("maxSkew"), c.get("topologyKey"), c.get("whenUnsatisfiable")
        if isinstance(skew, bool) or not isinstance(skew, int) or skew <= 0:
            raise fail(f"{f}.maxSkew", f"Invalid value: {skew!r}: not in valid range (0, inf)")
        if not isinstance(key, str) or not key:
            raise fail(f"{f}.topologyKey", "Required value: can not be empty")
        if action not in ACTIONS:
            raise fail(
                f"{f}.whenUnsatisfiable",
                f'Unsupported value: {action!r}: supported values: "{ACTIONS[0]}", "{ACTIONS[1]}"',
            )
        if c.get("labelSelector") is not None:
            raise fail(
                f"{f}.labelSelector",
                "Forbidden: constraint must not define a selector, as they deduced for each pod",
            )
        if any(o.topology_key == key and o.when_unsatisfiable == action for o in out):
            raise fail(f, f"Duplicate value: {{{key}, {action}}}")
        min_domains = c.get("minDomains")
        out.append(
            SpreadConstraint(
                skew, key, action, None,
                min_domains=min_domains if isinstance(min_domains, int) and not isinstance(min_domains, bool) else None,
                node_affinity_policy=str(c.get("nodeAffinityPolicy") or ""),
                node_taints_policy=str(c.get("nodeTaintsPolicy") or ""),
            )
        )  # fmt: skip
    return tuple(out), False


class Domains:
    """One constraint's domains over ``cluster``: label ids per node, pods counted per node."""

    def __init__(
        self, cluster: ClusterState, pod: Pod, c: SpreadConstraint, sel: LabelSelector | None
    ) -> None:
        self.c = c
        self.ids, self.values = cluster.label_column(c.topology_key)
        self.self_match = spread_self_match(sel, pod.labels)

        def counts(g: LabelGroup) -> bool:
            return spread_counts(sel, g.namespace, pod.namespace, g.labels, g.terminating)

        hint = sel.match_labels[0] if sel is not None and sel.match_labels else None
        self.per_node: Counts = cluster.groups.count_where(("spread", pod.namespace, sel), counts, hint)

    def ids_or_blank(self) -> npt.NDArray[np.int32]:
        """Value ids with an absent label read as the value "" (``node.Labels[key]`` in Go)."""
        blank = self.values.index("") if "" in self.values else len(self.values)
        return np.where(self.ids >= 0, self.ids, blank).astype(np.int32)


class Inclusion:
    """Nodes whose pods count, per distinct (nodeAffinityPolicy, nodeTaintsPolicy): computed once each."""

    def __init__(self, cluster: ClusterState, pod: Pod, base: Mask) -> None:
        self.cluster, self.pod, self.base = cluster, pod, base
        self._memo: dict[tuple[bool, bool], Mask] = {}

    def mask(self, c: SpreadConstraint) -> Mask:
        key = (c.node_affinity_policy in ("", "Honor"), c.node_taints_policy == "Honor")
        got = self._memo.get(key)
        if got is None:
            got = self.base.copy()
            cluster, pod = self.cluster, self.pod
            if key[0]:
                got &= required_mask(pod, cluster, np.arange(len(cluster), dtype=np.intp))
            if key[1]:
                per_set = np.array(
                    [first_untolerated(t, pod.tolerations) is None for t in cluster.taint_sets], dtype=bool
                )
                got &= per_set[cluster.taint_set_id]
            self._memo[key] = got
        return got


def every_key_mask(cluster: ClusterState, constraints: tuple[Bound, ...]) -> Mask:
    ok = np.ones(len(cluster), dtype=bool)
    for c, _ in constraints:
        ok &= cluster.label_column(c.topology_key)[0] >= 0
    return ok


class PodTopologySpread:
    name: ClassVar[str] = names.POD_TOPOLOGY_SPREAD

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._handle = handle
        self._skew = handle.reasons.intern((SpreadSkew(),))
        self._missing = handle.reasons.intern((SpreadLabelMissing(),))
        self.defaults, self.system = spread_defaults(args, f"{self.name} args")
        self.owners = handle.spread_owners  # read in place: the live cache updates it

    def constraints(self, pod: Pod, action: str) -> tuple[Bound, ...]:
        """``getConstraints`` / ``initPreScoreState``: the pod's own constraints of ``action`` when it has any
        (of either action), else the defaults of ``action`` with the deduced selector (none if it is empty)."""
        if pod.spread_constraints:
            return tuple(
                (c, spread_selector(c, pod.labels)) for c in pod.spread_constraints if c.when_unsatisfiable == action
            )  # fmt: skip
        defaults = tuple(c for c in self.defaults if c.when_unsatisfiable == action)
        sel = self.owners.default_selector(pod) if defaults else None
        return () if sel is None else tuple((c, sel) for c in defaults)

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterState
    ) -> tuple[frozenset[str] | None, Status]:
        return None, (SUCCESS if self.constraints(pod, "DoNotSchedule") else SKIP)

    def sign(self, pod: Pod) -> Hashable | None:
        return None if self.constraints(pod, "DoNotSchedule") else ()

    def filter_batch(
        self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows
    ) -> tuple[Codes, ReasonIds]:
        constraints = self.constraints(pod, "DoNotSchedule")
        codes = np.zeros(len(rows), dtype=np.int8)
        reasons = np.zeros(len(rows), dtype=np.int32)
        inclusion = Inclusion(cluster, pod, every_key_mask(cluster, constraints))
        for c, sel in constraints:
            d = Domains(cluster, pod, c, sel)
            ok = inclusion.mask(c)
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

    def removal_stable(
        self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows
    ) -> tuple[Codes, ReasonIds, Mask]:
        """``filter_batch`` over ``rows`` and where that status stays the same with any of the row's own pods
        removed (the rest of the cluster unchanged), for preemption's dry runs: every row but a skewed one.
        A missing label reads the node alone. A row that passes still passes: removing ``k`` counted pods
        from its domain lowers that domain's count by ``k`` and leaves the others and the set of domains
        (made of nodes, not pods) as they were, so the minimum either stays (the skew drops by ``k``) or
        becomes this domain's new count (the skew is the pod's own 0 or 1, never above ``maxSkew`` ≥ 1);
        upstream ``RemovePod`` → ``updateWithPod`` changes only that domain's count and its critical paths."""
        codes, reasons = self.filter_batch(state, pod, cluster, rows)
        return codes, reasons, codes != Code.UNSCHEDULABLE

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        return filter_one(self, self._handle.reasons, state, pod, node)

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Status:
        constraints = self.constraints(pod, "ScheduleAnyway")
        if not constraints or not len(cluster):
            return SKIP
        # scoring.go: only system-defaulted constraints let nodes lacking a key be scored
        require_all = bool(pod.spread_constraints) or not self.system
        every = every_key_mask(cluster, constraints) if require_all else np.ones(len(cluster), dtype=bool)
        ignored = ~every[rows]
        kept = rows[~ignored]
        inclusion = Inclusion(cluster, pod, every)
        parts = []
        for c, sel in constraints:
            d = Domains(cluster, pod, c, sel)
            if c.topology_key == HOSTNAME_LABEL:
                size = len(kept)
                per_row = d.per_node[rows]
            else:
                all_ids = d.ids if require_all else d.ids_or_blank()
                in_feasible = np.zeros(len(d.values) + 1, dtype=bool)
                in_feasible[all_ids[kept][all_ids[kept] >= 0]] = True
                size = int(in_feasible.sum())
                ok = inclusion.mask(c) & (all_ids >= 0)
                per_value = np.bincount(all_ids[ok], weights=d.per_node[ok], minlength=len(in_feasible))
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
        return score_one(self, state, pod, node)

    def normalize(self, state: CycleState, pod: Pod, scores: Scores) -> Scores:
        _, ignored, _ = state.read(SCORE_KEY)
        valid = scores[~ignored]
        lo = int(valid.min()) if valid.size else 0
        hi = max(int(valid.max()), 0) if valid.size else 0
        out = np.full_like(scores, MAX_NODE_SCORE) if hi == 0 else MAX_NODE_SCORE * (hi + lo - scores) // hi
        out[ignored] = 0
        return out
