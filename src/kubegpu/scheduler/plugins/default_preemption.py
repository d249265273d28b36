"""DefaultPreemption: when no node fits, find nodes where evicting lower-priority pods would make the pod
fit, and nominate the one where that costs least (R14.2, R14.3: preemption is never free).

Mirrors kube-scheduler 1.34 ``plugins/defaultpreemption`` and ``framework/preemption``:
- a pod with ``preemptionPolicy: Never`` is not eligible (``not eligible due to preemptionPolicy=Never.``);
- only nodes whose status is Unschedulable are candidates; UnschedulableAndUnresolvable nodes (taints,
  affinity, request above allocatable) are ``Preemption is not helpful for scheduling``;
- on a node, every strictly-lower-priority pod is removed; if the pod still does not fit, that node's
  filter status is the answer (``No preemption victims found for incoming pod`` when nothing is lower);
  then victims are reprieved one by one, most important first, PDB-violating ones first, keeping as few
  victims as possible;
- the node is chosen by: fewest PDB violations, lowest highest-victim priority, lowest sum of victim
  priorities, fewest victims, latest start of the highest-priority victims, then first found.
Dry runs remove and re-add pods through the cluster journal and roll back; nothing is copied.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import numpy as np

from kubegpu.model.objects import Pod, PodDisruptionBudget
from kubegpu.scheduler import messages
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.framework import CycleState, Diagnosis, Handle, PostFilterResult, Rows
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.reasons import (
    Message,
    NoPreemptionVictims,
    NotEligible,
    PreemptionNotHelpful,
    Reason,
    render,
)
from kubegpu.scheduler.status import SUCCESS, Code, Status, unresolvable, unschedulable

NOT_ELIGIBLE_NEVER: Final = NotEligible("never")
NOT_ELIGIBLE_TERMINATING: Final = NotEligible("terminating")
NO_VICTIMS: Final = NoPreemptionVictims()
NOT_HELPFUL: Final = PreemptionNotHelpful()
PREFIX: Final = "preemption: "
NO_VICTIMS_STATUS: Final = unresolvable(NO_VICTIMS)
MAX_INT32 = 2**31 - 1
NOT_STARTED = "9999-12-31T23:59:59Z"  # upstream treats a pod without startTime as starting now


def start_time(pod: Pod) -> str:
    return pod.start_time or NOT_STARTED


ByNamespace = dict[str, list[tuple[int, PodDisruptionBudget]]]


def importance_key(pod: Pod) -> tuple[int, str]:
    """Sort key for ``util.MoreImportantPod``: higher priority first, then the earlier start."""
    return (-pod.priority, start_time(pod))


def split_by_pdb(
    pods: list[Pod], pdbs: list[PodDisruptionBudget], by_namespace: ByNamespace | None = None
) -> tuple[list[Pod], list[Pod]]:
    """``filterPodsWithPDBViolation``: walk pods in order, spending each matching PDB's allowance; a pod
    that drives any budget below zero is violating. For preemption a PDB with an empty selector matches
    nothing. ``by_namespace``: ``pdbs_by_namespace(pdbs)``, where the caller keeps it."""
    # what is left of each budget a pod met (its index in ``pdbs``), not a list over every PDB
    allowed: dict[int, int] = {}
    violating: list[Pod] = []
    ok: list[Pod] = []
    if by_namespace is None:
        by_namespace = pdbs_by_namespace(pdbs) if pods else {}
    for pod in pods:
        hit = False
        if pod.labels:
            for i, pdb in by_namespace.get(pod.namespace, ()):
                sel = pdb.selector
                if sel is None or not (sel.match_labels or sel.match_expressions):
                    continue
                if not sel.matches(pod.labels):
                    continue
                left = allowed[i] = allowed.get(i, pdb.disruptions_allowed or 0) - 1
                if left < 0:
                    hit = True
        (violating if hit else ok).append(pod)
    return violating, ok


def pdbs_by_namespace(pdbs: list[PodDisruptionBudget]) -> ByNamespace:
    """``pdbs`` grouped by namespace, in list order, each with its index in ``pdbs``: a pod meets only its
    own namespace's budgets."""
    grouped: ByNamespace = {}
    for i, pdb in enumerate(pdbs):
        grouped.setdefault(pdb.namespace, []).append((i, pdb))
    return grouped


@dataclass(frozen=True)
class Candidate:
    node: str
    victims: tuple[Pod, ...]
    pdb_violations: int


def earliest_start_of_highest(victims: tuple[Pod, ...]) -> str:
    top = max(v.priority for v in victims)
    return min(start_time(v) for v in victims if v.priority == top)


def pick_one(candidates: list[Candidate]) -> Candidate:
    """``pickOneNodeForPreemption``: each criterion keeps only the best; ties go to the next one."""
    criteria = (
        lambda c: -c.pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(v.priority + MAX_INT32 + 1 for v in c.victims),
        lambda c: -len(c.victims),
        lambda c: earliest_start_of_highest(c.victims),
    )
    remaining = candidates
    for score in criteria:
        best = max(score(c) for c in remaining)
        remaining = [c for c in remaining if score(c) == best]
        if len(remaining) == 1:
            break
    return remaining[0]


class DefaultPreemption:
    name: ClassVar[str] = names.DEFAULT_PREEMPTION

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle
        self.min_candidate_nodes_percentage = int(args.get("minCandidateNodesPercentage", 10))
        self.min_candidate_nodes_absolute = int(args.get("minCandidateNodesAbsolute", 100))
        # ``_fit_without_lower``'s answers per (priority, NodeResourcesFit's sign of the pod), per node with
        # the node's version they were read at, for one cluster: pods of one shape and priority ask alike
        self._fits: tuple[ClusterState | None, dict[tuple[int, Hashable], dict[int, tuple[int, Status]]]] = (
            None,
            {},
        )
        # ``_victims_by_fit``'s answers, kept the same way (and for one PDB list): pods alike but for what
        # only the other filters read (their labels, their anti-affinity) preempt alike on a settled node
        self._reprieves: tuple[object, dict[tuple[int, Hashable], dict[int, tuple[int, list[Pod], int]]]] = (
            None,
            {},
        )
        # the handle's PDBs per namespace (``pdbs_by_namespace``), for the list they were grouped from
        self._pdb_groups: tuple[list[PodDisruptionBudget] | None, int, ByNamespace] = (None, 0, {})

    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        result, status = self.preempt(state, pod, diagnosis)
        msg = status.message(self.handle.behaviour.name)
        if msg:
            return result, Status(status.code, (Message(PREFIX + msg),))
        return result, status

    def eligible(self, pod: Pod, diagnosis: Diagnosis) -> tuple[bool, Reason | None]:
        if pod.preemption_policy == "Never":
            return False, NOT_ELIGIBLE_NEVER
        cluster = self.handle.cluster
        assert cluster is not None
        idx = cluster.index.get(cluster.nominated_node(pod))  # this state's record, else the pod's status
        if idx is not None:
            if diagnosis.codes[idx] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, None
            if any(p.priority < pod.priority and p.deletion_timestamp for p in cluster.pods_on[idx].values()):
                return False, NOT_ELIGIBLE_TERMINATING
        return True, None

    def num_candidates(self, num_nodes: int) -> int:
        n = num_nodes * self.min_candidate_nodes_percentage // 100
        return min(max(n, self.min_candidate_nodes_absolute), num_nodes)

    def preempt(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        ok, why = self.eligible(pod, diagnosis)
        if not ok:
            assert why is not None
            return None, unschedulable(why)
        cluster = self.handle.cluster
        assert cluster is not None
        potential = np.flatnonzero(diagnosis.evaluated & (diagnosis.codes == Code.UNSCHEDULABLE))
        if diagnosis.absent is not None and diagnosis.absent.code == Code.UNSCHEDULABLE:
            potential = np.union1d(potential, np.flatnonzero(~diagnosis.evaluated))
        # each failed node's status, counted: equal statuses are rendered once for the histogram
        statuses: Counter[Status] = Counter()
        candidates: list[Candidate] = []
        # A node with no strictly-lower-priority pod answers "No preemption victims" whatever the order:
        # decide those in one array operation instead of one dry run each.
        no_victims = int((cluster.min_priority[potential] >= pod.priority).sum())
        if no_victims:
            statuses[NO_VICTIMS_STATUS] = no_victims
        potential = potential[cluster.min_priority[potential] < pod.priority]
        if len(potential):
            offset = int(self.handle.rng.integers(len(potential)))
            wanted = self.num_candidates(len(potential))
            decided: dict[int, Status] | None = None  # computed at the first node that fits with room freed
            # nodes whose later filters pass whatever is removed (``_decided_after_fit``)
            settled: set[int] = set()
            non_violating = 0  # candidates that violate no PodDisruptionBudget
            reading = self._fit_reading(pod)  # the pod's part of ``_fit_without_lower``, once per pod
            for k in range(len(potential)):
                idx = int(potential[(offset + k) % len(potential)])
                fit = (
                    self._fit_without_lower(state, pod, idx, reading)
                    if reading is not None and diagnosis.evaluated[idx]
                    else None
                )
                easy = False  # the pod fits with the lower pods gone, and only NodeResourcesFit reads them
                if fit is not None and fit.is_success:
                    if decided is None:
                        decided, settled = self._decided_after_fit(state, pod, potential)
                    fit = decided.get(idx)
                    easy = idx in settled
                if fit is not None:  # (the dry run's own answer, without the dry run)
                    statuses[fit] += 1
                    continue
                if easy:  # only NodeResourcesFit can refuse a reprieve there: no dry run
                    assert reading is not None
                    victims, violations, status = *self._victims_by_fit(state, pod, idx, reading), SUCCESS
                else:
                    victims, violations, status = self.select_victims_on_node(state, pod, idx)
                if status.is_success and victims:
                    candidates.append(Candidate(cluster.nodes[idx].name, tuple(victims), violations))
                    non_violating += violations == 0
                    if non_violating > 0 and len(candidates) >= wanted:
                        break
                else:
                    statuses[status] += 1
        # upstream returns non-violating candidates before violating ones; ties keep that order
        candidates = [c for c in candidates if c.pdb_violations == 0] + [
            c for c in candidates if c.pdb_violations
        ]
        if not candidates:
            version = self.handle.behaviour.name
            reasons = [(r, n) for s, n in statuses.items() for r in s.texts(version)]
            absent = diagnosis.num_all_nodes - statuses.total()
            if absent:
                reasons.append((render(NOT_HELPFUL, version), absent))
            # upstream returns NewPostFilterResultWithNominatedNode(""): any earlier nomination is dropped
            return PostFilterResult(""), unschedulable(
                Message(messages.fit_error_message(diagnosis.num_all_nodes, reasons))
            )
        best = self.pick(candidates)
        if not self.handle.behaviour.preemption_success_text:
            return PostFilterResult(best.node, best.victims), SUCCESS
        # kubernetes PR #140180 (1.37): the success says where and how many; before, it said nothing
        found = (
            f"found a potential placement for pod on node {best.node}, preempting {len(best.victims)} victims"
        )
        return PostFilterResult(best.node, best.victims), Status(Code.SUCCESS, (Message(found),))

    def pick(self, candidates: list[Candidate]) -> Candidate:
        """Choose among the nodes where preemption makes room (a hook for cost-aware variants)."""
        return pick_one(candidates)

    def _fit_reading(self, pod: Pod) -> tuple[Any, Hashable | None] | None:
        """NodeResourcesFit and its sign of ``pod`` (upstream's SignPlugin: what of the pod the filter reads)
        when ``_fit_without_lower`` may answer for the pod at all: only the filters of ``_BEFORE_FIT`` run
        before it and the pod asks no host ports; None otherwise."""
        fw = self.handle.framework
        assert fw is not None
        fit = None
        for plugin in fw.filter_plugins:
            if plugin.name == names.NODE_RESOURCES_FIT:
                fit = plugin
                break
            if plugin.name not in _BEFORE_FIT:
                return None
        if fit is None or pod.host_ports:
            return None
        signer = getattr(fit, "sign", None)
        return fit, (signer(pod) if signer is not None else None)

    def _fit_without_lower(
        self, state: CycleState, pod: Pod, idx: int, reading: tuple[Any, Hashable | None]
    ) -> Status | None:
        """NodeResourcesFit's status on node ``idx`` (one whose filters ran and refused the pod as
        Unschedulable) with every strictly-lower-priority pod removed, where it is the first filter that
        could fail: a failure is ``select_victims_on_node``'s answer there, read off the columns (no pod
        removed, put back, and its devices assigned again: at 5,000 nodes, hundreds of Pending pods that may
        preempt made millions of those); a success says the filters up to it pass. None where a filter
        before it could read the removed pods otherwise than as freed room (a nominated pod placed first,
        host ports asked, a filter outside ``_BEFORE_FIT``). Before NodeResourcesFit upstream's order has
        only those; they fail as UnschedulableAndUnresolvable, so on this node they passed, and they pass
        with pods removed (kubernetes/kubernetes pkg/scheduler/framework/preemption ``SelectVictimsOnNode``
        removes every lower-priority pod, then runs the filters; the first failing status is the node's)."""
        cluster = self.handle.cluster
        assert cluster is not None
        if cluster.nominated_for(idx, pod):
            return None
        fit, sign = reading  # (``_fit_reading``)
        if sign is not None:
            if self._fits[0] is not cluster or len(self._fits[1]) >= _FIT_SHAPES_MAX:
                self._fits = (cluster, {})
            seen = self._fits[1].setdefault((pod.priority, sign), {})
            version = int(cluster.version[idx])
            hit = seen.get(idx)
            if hit is not None and hit[0] == version:
                return hit[1]
        lower = [p for p in cluster.pods_on[idx].values() if p.priority < pod.priority]
        taken: dict[str, int] = {}
        for p in lower:
            for r, amount in p.requests.items():
                taken[r] = taken.get(r, 0) + amount
        status = fit.filter(state, pod, _Without(cluster, idx, taken, len(lower)))
        answer = SUCCESS if status.is_success else status
        if sign is not None:
            seen[idx] = (version, answer)
        return answer

    def _pdbs_grouped(self) -> ByNamespace:
        """``pdbs_by_namespace`` of the handle's PDBs, made again only when the list is another or has grown
        (every dry run splits its victims)."""
        pdbs = self.handle.pdbs
        if self._pdb_groups[0] is not pdbs or self._pdb_groups[1] != len(pdbs):
            self._pdb_groups = (pdbs, len(pdbs), pdbs_by_namespace(pdbs))
        return self._pdb_groups[2]

    def _victims_by_fit(
        self, state: CycleState, pod: Pod, idx: int, reading: tuple[Any, Hashable | None]
    ) -> tuple[list[Pod], int]:
        """``select_victims_on_node`` where every filter but NodeResourcesFit is known to pass whatever of the
        node's lower-priority pods are removed (``_decided_after_fit``'s settled nodes, and the pod fits with
        all of them removed): the same reprieve, PDB-violating pods first, in importance order, each kept
        where NodeResourcesFit still passes with it back, read off the columns (``_Without``) instead of
        removing and adding pods (upstream ``SelectVictimsOnNode``'s ``reprievePod``). Kept per (priority,
        NodeResourcesFit's sign of the pod) and node version, as ``_fit_without_lower``: what it reads."""
        cluster = self.handle.cluster
        assert cluster is not None
        fit, sign = reading  # (``_fit_reading``)
        seen: dict[int, tuple[int, list[Pod], int]] | None = None
        if sign is not None:
            kept_for, by_key = self._reprieves
            same = isinstance(kept_for, tuple) and kept_for[0] is cluster and kept_for[1] is self.handle.pdbs
            if not same or len(by_key) >= _FIT_SHAPES_MAX:
                self._reprieves = ((cluster, self.handle.pdbs), {})
            seen = self._reprieves[1].setdefault((pod.priority, sign), {})
            hit = seen.get(idx)
            if hit is not None and hit[0] == int(cluster.version[idx]):
                return list(hit[1]), hit[2]
        lower = sorted(
            (p for p in cluster.pods_on[idx].values() if p.priority < pod.priority), key=importance_key
        )
        taken: dict[str, int] = {}
        for p in lower:
            for r, amount in p.requests.items():
                taken[r] = taken.get(r, 0) + amount
        count = len(lower)
        violating, non_violating = split_by_pdb(lower, self.handle.pdbs, self._pdbs_grouped())
        victims: list[Pod] = []
        violations = 0
        for group, counts in ((violating, True), (non_violating, False)):
            for p in group:
                back = dict(taken)
                for r, amount in p.requests.items():
                    back[r] -= amount
                if fit.filter(state, pod, _Without(cluster, idx, back, count - 1)).is_success:
                    taken, count = back, count - 1  # reprieved: it stays
                else:
                    victims.append(p)
                    violations += counts
        if violating and non_violating:
            victims.sort(key=importance_key)
        if seen is not None:
            seen[idx] = (int(cluster.version[idx]), list(victims), violations)
        return victims, violations

    def _decided_after_fit(
        self, state: CycleState, pod: Pod, rows: Rows
    ) -> tuple[dict[int, Status], set[int]]:
        """Per node of ``rows``, the status the filters after NodeResourcesFit give with the node's
        lower-priority pods removed, where it is known without removing them: the first failing filter's
        status, taken from the filters' answers on the cluster as it is where each filter before it passes
        and each up to it says (``removal_stable``) that its answer holds whatever of the node's own pods
        are gone. Filters skipped by PreFilter pass; a filter without ``removal_stable`` ends the walk (its
        nodes and those after get dry runs). At 2,000 nodes, 69,000 of 80,000 dry runs for pods with
        required pod affinity ended in ``didn't match pod affinity rules``, which no lower-priority pod on
        the node could have met (upstream's comment in ``SelectVictimsOnNode``: affinity to victims is not
        supported). Second, the nodes every filter after NodeResourcesFit passes and would pass whatever of
        their own pods were removed (the walk reached the end): there only NodeResourcesFit can refuse the
        pod in a dry run (``_victims_by_fit``)."""
        cluster, fw = self.handle.cluster, self.handle.framework
        assert cluster is not None and fw is not None
        plugins = [p.name for p in fw.filter_plugins]
        out: dict[int, Status] = {}
        open_ = np.ones(len(rows), dtype=bool)  # every filter so far passes, and would with pods removed
        for plugin in fw.filter_plugins[plugins.index(names.NODE_RESOURCES_FIT) + 1 :]:
            if plugin.name in state.skip_filter:
                continue
            stable_answer = getattr(plugin, "removal_stable", None)
            if stable_answer is None:
                return out, set()
            codes, reason_ids, stable = stable_answer(state, pod, cluster, rows)
            failed = codes != Code.SUCCESS
            for j in (open_ & stable & failed).nonzero()[0]:
                status = Status(Code(int(codes[j])), self.handle.reasons.reasons(int(reason_ids[j])))
                out[int(rows[j])] = status.with_plugin(plugin.name)
            open_ &= stable & ~failed
            if not open_.any():
                return out, set()
        return out, set(rows[open_].tolist())

    def select_victims_on_node(self, state: CycleState, pod: Pod, idx: int) -> tuple[list[Pod], int, Status]:
        cluster, fw = self.handle.cluster, self.handle.framework
        assert cluster is not None and fw is not None
        mark, order = cluster.mark(), list(cluster.pods_on[idx])
        try:
            lower = sorted(
                (p for p in cluster.pods_on[idx].values() if p.priority < pod.priority), key=importance_key
            )
            if not lower:
                return [], 0, NO_VICTIMS_STATUS
            for p in lower:
                cluster.remove_pod(p)
            # the devices each held (and whether nobody recorded them): a reprieved pod never left them
            held = {p.key: (devices, assumed) for _, p, _, devices, assumed in cluster.journal[mark:]}
            view = cluster.view(idx)
            status = fw.run_filters_with_nominated(state, pod, view)
            if not status.is_success:
                return [], 0, status
            violating, non_violating = split_by_pdb(lower, self.handle.pdbs, self._pdbs_grouped())
            victims: list[Pod] = []
            violations = 0
            for group, counts in ((violating, True), (non_violating, False)):
                for p in group:
                    cluster.add_pod(p, idx, *held[p.key])
                    if not fw.run_filters_with_nominated(state, pod, view).is_success:
                        cluster.remove_pod(p)
                        victims.append(p)
                        violations += counts
            if violating and non_violating:
                victims.sort(key=importance_key)
            return victims, violations, SUCCESS
        finally:
            cluster.rollback(mark)
            cluster.restore_order(idx, order)


_FIT_SHAPES_MAX = 256  # bounded: a long replay meets ever new pod shapes

# the filters upstream runs before NodeResourcesFit (default order, pkg/scheduler/apis/config/v1
# getDefaultPlugins): none reads the node's pods but NodePorts, which removing pods only helps
_BEFORE_FIT: Final = frozenset(
    {names.NODE_UNSCHEDULABLE, names.NODE_NAME, names.TAINT_TOLERATION, names.NODE_AFFINITY, names.NODE_PORTS}
)


@dataclass(frozen=True, slots=True)
class _Without(NodeView):
    """Node ``idx`` as it would read with some of its pods removed: ``taken`` (their requests summed, as
    ``ClusterState`` charged them) less requested, ``count`` fewer pods."""

    taken: Mapping[str, int]
    count: int

    def requested(self, resource: str) -> int:
        return NodeView.requested(self, resource) - self.taken.get(resource, 0)

    @property
    def pod_count(self) -> int:
        return int(self.cluster.pod_count[self.idx]) - self.count
