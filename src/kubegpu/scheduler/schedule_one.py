"""One scheduling cycle, and the ``Scheduler`` that runs cycles over a cluster state (R5, R9.1, R11.1).

Mirrors kube-scheduler 1.34 ``schedule_one.go``: PreFilter; Filter over the nodes in node-tree order
starting where the previous cycle stopped, until ``numFeasibleNodesToFind`` feasible nodes are found
(adaptive ``percentageOfNodesToScore``: 50% − N/125, at least 5% and at least 100 nodes); if none fits,
a ``FitError`` whose message is the exact ``FailedScheduling`` text, then PostFilter (preemption); else
Score the feasible nodes, pick the highest total (ties broken uniformly at random by an injected RNG,
as upstream's reservoir sampling does up to 1.34; ``tie_break="release"`` takes 1.35+'s heap order instead),
Reserve, Permit, and assume the pod on the node.

Equivalence classes: filter results are cached per pod signature (``Framework.signature``) over all
nodes with the cluster clock; the next pod of the same class recomputes only nodes whose generation
moved since, which is what makes 10,000 pods over 5,000 nodes cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from kubegpu.errors import ConfigError
from kubegpu.model.objects import Pod
from kubegpu.scheduler import messages
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.device_ledger import Assignment
from kubegpu.scheduler.framework import (
    ALLOCATION_KEY,
    Codes,
    CycleState,
    Diagnosis,
    FilterError,
    Framework,
    ReasonIds,
)
from kubegpu.scheduler.reasons import OutsidePreFilterResult
from kubegpu.scheduler.status import Code, Status

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


TIE_BREAKS = ("random", "release", "first")


def heap_top(total: npt.NDArray[np.int64]) -> int:
    """The position Go's ``container/heap`` puts on top of a max-heap of ``total`` built in this order: ``Init``
    sifts down from ``n/2 - 1`` to 0, a child replacing its parent only when strictly greater and the left child
    winning a tie between the two. From 1.35 kube-scheduler takes its host so (``Behaviour.heap_tie_break``):
    among equal totals not always the first in order, e.g. [1, 2, 9, 3, 9] gives 4 (the 9 at 4 rises to 1)."""
    n = len(total)
    best = (total == total.max()).nonzero()[0] if n else total
    if len(best) == 1:  # the top holds a highest total: a sole one needs no sifting (the common case per pod)
        return int(best[0])
    heap = total.tolist()
    pos = list(range(n))
    for start in range(n // 2 - 1, -1, -1):
        i = start
        while 2 * i + 1 < n:
            j = 2 * i + 1
            if j + 1 < n and heap[j + 1] > heap[j]:
                j += 1
            if not heap[j] > heap[i]:
                break
            heap[i], heap[j], pos[i], pos[j] = heap[j], heap[i], pos[j], pos[i]
            i = j
    return pos[0] if n else 0


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int | None) -> int:
    """Upstream ``numFeasibleNodesToFind`` (int32 arithmetic, truncating)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct == 0:
        pct = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * pct // 100, MIN_FEASIBLE_NODES_TO_FIND)


class _LazyMessage:
    """A ``str`` field that may be set to a function giving the text, called on the first read: a failed
    cycle's ``FitError`` text is built only when someone reads it (a packing run never does). The text
    depends only on the cycle's own ``Diagnosis`` and the append-only reason table, so it is the same
    whenever it is built."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}"

    def __get__(self, obj: Any, objtype: type | None = None) -> str:
        if obj is None:
            return ""  # the dataclass default
        value = obj.__dict__[self._slot]
        if not isinstance(value, str):
            value = obj.__dict__[self._slot] = value()
        return value  # type: ignore[no-any-return]

    def __set__(self, obj: Any, value: str | Callable[[], str]) -> None:
        obj.__dict__[self._slot] = value


@dataclass
class ScheduleResult:
    pod: Pod
    node: str | None = None
    message: _LazyMessage = _LazyMessage()
    diagnosis: Diagnosis | None = None
    nominated_node: str = ""
    clears_nomination: bool = False  # upstream's clearNominatedNode: drop the pod's nominatedNodeName
    victims: tuple[Pod, ...] = ()
    feasible_nodes: int = 0
    evaluated_nodes: int = 0
    scores: dict[str, int] = field(default_factory=dict)  # weighted score per plugin on the chosen node
    status: Status | None = None  # a Reserve/Permit rejection
    allocation: Assignment | None = None  # device IDs chosen at Reserve (kubegpu profile), per container

    @property
    def scheduled(self) -> bool:
        return self.node is not None

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with its message as text (a function giving it does not pickle)."""
        state = dict(self.__dict__)
        state["_message"] = self.message
        return state


@dataclass
class _CacheEntry:
    codes: Codes
    plugins: npt.NDArray[np.int16]
    reasons: ReasonIds
    clock: int
    stop: int | None = None  # the results of the filters before this one only (a prefix class)


@dataclass
class _FirstPass:
    """Cached first-pass (nominated pods placed) filter results per row, with what they were valid for."""

    codes: Codes
    plugins: npt.NDArray[np.int16]
    reasons: ReasonIds
    generation: npt.NDArray[np.int64]
    version: npt.NDArray[np.int64]

    @classmethod
    def empty(cls, n: int) -> _FirstPass:
        stale = np.full(n, -1, dtype=np.int64)
        return cls(
            np.zeros(n, dtype=np.int8), np.full(n, -1, dtype=np.int16), np.zeros(n, dtype=np.int32),
            stale, stale.copy(),
        )  # fmt: skip


class Scheduler:
    """Runs scheduling cycles of one profile over one ``ClusterState``."""

    def __init__(
        self,
        framework: Framework,
        cluster: ClusterState,
        seed: int = 0,
        use_cache: bool = True,
        tie_break: str = "random",
    ) -> None:
        """``tie_break``: ``random`` is upstream's intent among equally scored nodes (selectHost's reservoir
        sampling up to 1.34); ``release`` what the minor's binary does without extenders (``heap_top`` of the
        feasible nodes in the order found from 1.35, ``Behaviour.heap_tie_break``; random before); ``first``
        takes the first of them in node order, as the FGD paper's simulator (a kube-scheduler fork) evidently does."""
        if tie_break not in TIE_BREAKS:
            raise ConfigError(f"tie_break must be one of {', '.join(TIE_BREAKS)}, got {tie_break!r}")
        self.framework = framework
        self.cluster = cluster
        self.tie_break = tie_break
        self.rng = np.random.default_rng(seed)
        framework.handle.cluster = cluster
        framework.handle.rng = self.rng
        self.next_start_node_index = 0
        self.use_cache = use_cache
        self._cache: dict[Hashable, _CacheEntry] = {}
        # pods without a whole class (required pod affinity, DoNotSchedule spread): the verdicts of the
        # filters before the first one that cannot sign them, per class of those filters' signs
        self._prefix_cache: dict[Hashable, _CacheEntry] = {}
        self._nominated_cache: dict[tuple[Hashable, int], _FirstPass] = {}  # (class, priority) → rows

    def class_key(self, state: CycleState, pod: Pod) -> Hashable | None:
        """The pod's equivalence class for cached filter results (None: evaluate fresh)."""
        if not self.use_cache:
            return None
        signs = self.framework.signature(pod)
        return None if signs is None else (signs, frozenset(state.skip_filter))

    def filter_all(self, state: CycleState, pod: Pod) -> tuple[Codes, npt.NDArray[np.int16], ReasonIds]:
        """Filter results for every node (cached per equivalence class, refreshed where nodes changed)."""
        if self.use_cache:  # the signs once: a whole class, else a prefix class
            stop, signs = self.framework.signed_prefix(pod)
            key = (signs, frozenset(state.skip_filter))
            if stop == len(self.framework.filter_plugins):
                # a new class starts from the verdicts of the filters that read the node alone, shared by
                # the pods whose signs agree up to there (pods alike but for their requests, say)
                first = self.framework.first_pod_reader
                prefix = (signs[:first], key[1]) if 0 < first < stop else None  # type: ignore[index]
                entry = self._cached(state, pod, self._cache, key, None, prefix)
                return entry.codes, entry.plugins, entry.reasons
            if stop:
                return self._filter_after_prefix(state, pod, stop, key)
        all_rows = np.arange(len(self.cluster), dtype=np.intp)
        return self.framework.filter_rows(state, pod, self.cluster, all_rows)

    def _cached(
        self,
        state: CycleState,
        pod: Pod,
        cache: dict[Hashable, _CacheEntry],
        key: Hashable,
        stop: int | None,
        prefix: Hashable | None = None,
    ) -> _CacheEntry:
        """The class's cache entry, brought up to date (made on the class's first pod: with ``prefix``, the
        key of its node-only filters' prefix class, from that class's verdicts and the other filters over
        the rows they pass, which is what one pass over every filter gives per row)."""
        entry = cache.get(key)
        if entry is None:
            if prefix is not None:
                first = self.framework.first_pod_reader
                codes, plugins, reasons = self._filter_after_prefix(state, pod, first, prefix)
            else:
                all_rows = np.arange(len(self.cluster), dtype=np.intp)
                codes, plugins, reasons = self.framework.filter_rows(
                    state, pod, self.cluster, all_rows, stop=stop
                )
            entry = cache[key] = _CacheEntry(codes, plugins, reasons, self.cluster.clock, stop)
            return entry
        # ``.nonzero()[0]`` rather than ``np.flatnonzero`` here and on other hot 1-D paths: the same
        # indices without the wrappers' microsecond, which a cycle would pay several times
        dirty = (self.cluster.generation > entry.clock).nonzero()[0]
        if dirty.size:
            self._refilter(state, pod, entry, dirty)
        entry.clock = self.cluster.clock
        return entry

    def _filter_after_prefix(
        self, state: CycleState, pod: Pod, stop: int, key: Hashable
    ) -> tuple[Codes, npt.NDArray[np.int16], ReasonIds]:
        """The prefix class's shared verdicts, then the filters from ``stop`` on over the rows they
        passed: per row the first rejecting plugin, as one pass over every filter gives."""
        entry = self._cached(state, pod, self._prefix_cache, key, stop)
        codes, plugins, reasons = entry.codes.copy(), entry.plugins.copy(), entry.reasons.copy()
        alive = (codes == 0).nonzero()[0]
        if alive.size:
            c, p, r = self.framework.filter_rows(state, pod, self.cluster, alive, stop)
            codes[alive], plugins[alive], reasons[alive] = c, p, r
        return codes, plugins, reasons

    def _refilter(self, state: CycleState, pod: Pod, entry: _CacheEntry, dirty: npt.NDArray[np.intp]) -> None:
        """Bring ``entry`` up to date on the ``dirty`` rows. Where only pods changed on a node (its Node
        object did not), the filters before ``first_pod_reader`` still say what they said: a row one of
        them rejected keeps its result, and the others run from that plugin on."""
        start = self.framework.first_pod_reader
        if start:
            # rows no node-only filter rejected: plugin index -1 (passed) or ≥ start; as unsigned, -1 is
            # the largest value, so one compare says both
            keep = entry.plugins[dirty].view(np.uint16) >= start
            if self.cluster.last_node_change > entry.clock:  # some Node object changed: those run in full
                node_changed = self.cluster.node_generation[dirty] > entry.clock
                full = dirty[node_changed]
                c, p, r = self.framework.filter_rows(state, pod, self.cluster, full, stop=entry.stop)
                entry.codes[full], entry.plugins[full], entry.reasons[full] = c, p, r
                keep &= ~node_changed
            dirty = dirty[keep]
            if not dirty.size:
                return
        c, p, r = self.framework.filter_rows(state, pod, self.cluster, dirty, start, entry.stop)
        entry.codes[dirty], entry.plugins[dirty], entry.reasons[dirty] = c, p, r

    def with_nominated(
        self, state: CycleState, pod: Pod, plain: tuple[Codes, npt.NDArray[np.int16], ReasonIds]
    ) -> tuple[Codes, npt.NDArray[np.int16], ReasonIds]:
        """Upstream ``RunFilterPluginsWithNominatedPods`` over every node, given the plain pass (which is
        the second pass): rows with pods nominated at the pod's priority or higher run the first pass with
        them placed, and where it rejects, its status replaces the plain one. ``plain`` itself comes back
        when no row rejects. First-pass results are cached per equivalence class and priority, per row,
        valid while the row's generation and its nominations stay the same."""
        cluster = self.cluster
        if not cluster.nominated:
            return plain
        rows = np.flatnonzero(cluster.nominated_top >= pod.priority)
        if rows.size == 0:
            return plain
        key = self.class_key(state, pod)
        entry = self._nominated_cache.get((key, pod.priority)) if key is not None else None
        if entry is None:
            entry = _FirstPass.empty(len(cluster))
            if key is not None:
                self._nominated_cache[(key, pod.priority)] = entry
        fresh = (entry.generation[rows] == cluster.generation[rows]) & (
            entry.version[rows] == cluster.nominated_version[rows]
        )
        own = cluster.nominated_to.get(pod.key)  # the pod's own nomination is left out: not shareable
        if own is not None:
            fresh &= rows != own
        todo = rows[~fresh]
        if todo.size:
            with cluster.what_if():
                for i in todo:
                    for p in cluster.nominated_for(int(i), pod):
                        cluster.add_pod(p, int(i))
                c, pl, r = self.framework.filter_rows(state, pod, cluster, todo)
            entry.codes[todo], entry.plugins[todo], entry.reasons[todo] = c, pl, r
            entry.generation[todo] = cluster.generation[todo]
            entry.version[todo] = cluster.nominated_version[todo]
            if own is not None:
                entry.version[own] = -1
        hit = rows[entry.codes[rows] != 0]  # a failing first pass is the node's status
        if hit.size == 0:
            return plain
        codes, plugins, reasons = plain[0].copy(), plain[1].copy(), plain[2].copy()
        codes[hit], plugins[hit], reasons[hit] = entry.codes[hit], entry.plugins[hit], entry.reasons[hit]
        return codes, plugins, reasons

    def evaluate_nominated_node(self, state: CycleState, pod: Pod) -> npt.NDArray[np.intp] | None:
        """Upstream ``evaluateNominatedNode``: a pod nominated by an earlier preemption tries that node
        alone first; if it passes the filters (nominated pods of its priority or higher included) it is
        the only feasible node and no other node is evaluated."""
        cluster = self.cluster
        idx = cluster.index.get(cluster.nominated_node(pod))
        if idx is None:
            return None
        if self.framework.run_filters_with_nominated(state, pod, cluster.view(idx)).is_success:
            return np.array([idx], dtype=np.intp)
        return None

    def find_nodes_that_fit(
        self, state: CycleState, pod: Pod
    ) -> tuple[npt.NDArray[np.intp], Diagnosis | None, int]:
        """The feasible nodes found (at most ``numFeasibleNodesToFind``), the diagnosis when there is none
        (None otherwise: a cycle that found a node never reads it), and how many nodes the search
        rejected on its way."""
        n = len(self.cluster)
        names, status, narrowing = self.framework.run_pre_filter(state, pod, self.cluster)
        if not status.is_success:
            diagnosis = self._diagnosis(n)
            diagnosis.absent = status
            diagnosis.codes[:] = status.code
            diagnosis.pre_filter_msg = status.message(self.framework.version)
            return np.zeros(0, dtype=np.intp), diagnosis, 0
        fast = self.evaluate_nominated_node(state, pod)
        if fast is not None:
            return fast, None, 0
        codes, plugins, reasons = self.with_nominated(state, pod, self.filter_all(state, pod))
        if names is None:
            return self._search_all(codes, plugins, reasons)
        candidates = np.zeros(n, dtype=bool)
        for name in names:
            idx = self.cluster.index.get(name)
            if idx is not None:
                candidates[idx] = True
        diagnosis = self._diagnosis(n)
        diagnosis.absent = Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            (OutsidePreFilterResult(tuple(sorted(narrowing))),),
        )
        diagnosis.codes[~candidates] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        # the PreFilter's nodes in node order (upstream walks that list, not the node tree)
        order = np.flatnonzero(candidates)
        to_find = num_feasible_nodes_to_find(len(order), self.framework.profile.percentage_of_nodes_to_score)
        feasible_pos = np.flatnonzero(codes[order] == 0)
        if len(feasible_pos) > to_find:
            processed = int(feasible_pos[to_find - 1]) + 1
            feasible_pos = feasible_pos[:to_find]
        else:
            processed = len(order)
        seen = order[:processed]
        rejected = seen[codes[seen] != 0]
        self._advance(processed)
        if len(feasible_pos):
            return order[feasible_pos], None, len(rejected)
        self._record(diagnosis, codes, plugins, reasons, rejected)
        return order[feasible_pos], diagnosis, len(rejected)

    def _search_all(
        self, codes: Codes, plugins: npt.NDArray[np.int16], reasons: ReasonIds
    ) -> tuple[npt.NDArray[np.intp], Diagnosis | None, int]:
        """Every node in node-tree order from where the previous cycle stopped: the first
        ``numFeasibleNodesToFind`` feasible ones. Computed on the node indices (feasible ones sorted, then
        rotated to the start), never on a rotated copy of every row."""
        n = len(codes)
        start = self.next_start_node_index
        to_find = num_feasible_nodes_to_find(n, self.framework.profile.percentage_of_nodes_to_score)
        feasible = (codes == 0).nonzero()[0]
        total = len(feasible)
        cut = int(feasible.searchsorted(start)) if start else 0
        if total > to_find:  # the search stops at the to_find-th feasible node from ``start``
            tail = total - cut
            if tail >= to_find:  # found before wrapping around: a slice, no rotated copy
                feasible = feasible[cut : cut + to_find]
            else:
                feasible = np.concatenate((feasible[cut:], feasible[: to_find - tail]))
            processed = (int(feasible[-1]) - start) % n + 1
        else:
            if cut:
                feasible = np.concatenate((feasible[cut:], feasible[:cut]))
            processed = n
        self._advance(processed)
        if len(feasible):
            return feasible, None, processed - len(feasible)
        # none fits: every node was evaluated and rejected (the statuses copied: they may be the cache's)
        diagnosis = Diagnosis(
            num_all_nodes=n,
            codes=codes.copy(),
            plugins=plugins.copy(),
            reason_ids=reasons.astype(np.int32),
            evaluated=np.ones(n, dtype=bool),
        )
        return feasible, diagnosis, n

    def _advance(self, processed: int) -> None:
        n = len(self.cluster)
        if n:
            self.next_start_node_index = (self.next_start_node_index + processed) % n

    @staticmethod
    def _diagnosis(n: int) -> Diagnosis:
        return Diagnosis(
            num_all_nodes=n,
            codes=np.zeros(n, dtype=np.int8),
            plugins=np.full(n, -1, dtype=np.int16),
            reason_ids=np.zeros(n, dtype=np.int32),
            evaluated=np.zeros(n, dtype=bool),
        )

    def _record(
        self,
        diagnosis: Diagnosis,
        codes: Codes,
        plugins: npt.NDArray[np.int16],
        reasons: ReasonIds,
        rejected: npt.NDArray[np.intp] | slice,
    ) -> None:
        """The rejected nodes' statuses into ``diagnosis`` (copied: the arrays may be the cache's)."""
        diagnosis.evaluated[rejected] = True
        diagnosis.codes[rejected] = codes[rejected]
        diagnosis.plugins[rejected] = plugins[rejected]
        diagnosis.reason_ids[rejected] = reasons[rejected]

    def fit_error_message(self, diagnosis: Diagnosis) -> str:
        """``FitError.Error()`` for this diagnosis (PostFilter message included if set)."""
        explicit = diagnosis.evaluated & (diagnosis.codes != 0)
        ids, counts = np.unique(diagnosis.reason_ids[explicit], return_counts=True)
        reasons = [
            (r, int(c))
            for rid, c in zip(ids, counts, strict=True)
            for r in self.framework.reason_strings(int(rid))
        ]
        absent_nodes = diagnosis.num_all_nodes - int(explicit.sum())
        if (
            diagnosis.absent is not None
            and absent_nodes
            and self.framework.handle.behaviour.absent_nodes_counted
        ):
            reasons.extend((r, absent_nodes) for r in diagnosis.absent.texts(self.framework.version))
        return messages.fit_error_message(
            diagnosis.num_all_nodes, reasons, diagnosis.pre_filter_msg, diagnosis.post_filter_msg
        )

    def skips_pod_level(self, pod: Pod) -> bool:
        """Whether ``pod``'s pod-level ``spec.resources`` go unread: they count only where the release has
        PodLevelResources (on by default from 1.34). The 1.32-1.33 scheduler skips them (framework/types.go
        ``SkipPodLevelResources: !podLevelResourcesEnabled``, v1.33.13) and their API server drops them on create,
        1.30-1.31 have no such field: a pod read from a manifest (never admitted: no uid) that sets them is
        scheduled as those releases would see it. A pod the API server returned with the field was created with
        the gate on (alpha, set cluster-wide): its pod-level requests count."""
        return (
            bool(pod.pod_level_requests)
            and not pod.uid
            and not self.framework.handle.behaviour.pod_level_resources
        )

    def schedule_one(self, pod: Pod, *, assume: bool = True, preempt: bool = True) -> ScheduleResult:
        """Run one cycle for ``pod``. With ``assume`` the outcome is committed to the cluster state: on
        success the pod is placed, as the scheduler cache assumes a pod before binding, and its
        nomination dropped; on failure its nomination is set or cleared as upstream's failure handler
        updates the nominator. A manifest's pod-level ``spec.resources`` is left out where the release skips it (``skips_pod_level``)."""
        if self.skips_pod_level(pod):
            pod = replace(pod, pod_level_requests={}, pod_level_limits={})
        result = self._cycle(pod, assume, preempt)
        if assume:
            if result.scheduled or result.clears_nomination:
                self.cluster.unnominate(pod.key)
            elif result.nominated_node:
                self.cluster.nominate(pod, result.nominated_node)
        return result

    def _cycle(self, pod: Pod, assume: bool, preempt: bool) -> ScheduleResult:
        if not self.cluster.nodes:
            return ScheduleResult(
                pod, message=messages.NO_NODES_AVAILABLE_TO_SCHEDULE, clears_nomination=True
            )
        state = CycleState()
        try:
            feasible, diagnosis, rejected = self.find_nodes_that_fit(state, pod)
        except FilterError as exc:  # schedulingCycle: a non-FitError clears the nomination
            return ScheduleResult(pod, message=str(exc), clears_nomination=True)
        if diagnosis is not None:
            result = ScheduleResult(pod, diagnosis=diagnosis, evaluated_nodes=rejected)
            if preempt and self.framework.post_filter_plugins:
                post, status = self.framework.run_post_filter(state, pod, diagnosis)
                diagnosis.post_filter_msg = status.message(self.framework.version)
                if post is not None and status.is_success:
                    result.nominated_node = post.nominated_node
                    result.victims = post.victims
                elif post is not None:
                    result.clears_nomination = not post.nominated_node
            else:
                result.clears_nomination = True
            result.message = lambda: self.fit_error_message(diagnosis)
            return result
        if len(feasible) == 1:
            chosen, parts = int(feasible[0]), {}
        else:
            total, weighted = self.framework.run_scores(state, pod, self.cluster, feasible)
            if self.tie_break == "first":
                pick = int(total.argmax())  # the first of the highest
            elif self.tie_break == "release" and self.framework.handle.behaviour.heap_tie_break:
                pick = heap_top(total)
            else:
                best = (total == total.max()).nonzero()[0]
                pick = int(best[self.rng.integers(len(best))]) if len(best) > 1 else int(best[0])
            chosen = int(feasible[pick])
            parts = {name: int(s[pick]) for name, s in weighted.items()}
        view = self.cluster.view(chosen)
        for i, rp in enumerate(self.framework.reserve_plugins):
            status = rp.reserve(state, pod, view)
            if not status.is_success:
                for undo in reversed(self.framework.reserve_plugins[: i + 1]):
                    undo.unreserve(state, pod, view)
                return ScheduleResult(
                    pod,
                    status=status.with_plugin(rp.name),
                    message=status.message(self.framework.version),
                    clears_nomination=True,
                )
        for pp in self.framework.permit_plugins:
            status = pp.permit(state, pod, view)
            if status.is_rejected:
                for undo in reversed(self.framework.reserve_plugins):
                    undo.unreserve(state, pod, view)
                return ScheduleResult(
                    pod,
                    status=status.with_plugin(pp.name),
                    message=status.message(self.framework.version),
                    clears_nomination=True,
                )
        allocation = state.get(ALLOCATION_KEY)
        if assume:
            self.cluster.add_pod(pod, chosen, allocation)
        else:  # a cycle that only asks leaves no trace: what Reserve recorded beside the cluster is undone
            for undo in reversed(self.framework.reserve_plugins):
                undo.unreserve(state, pod, view)
        return ScheduleResult(
            pod,
            node=self.cluster.nodes[chosen].name,
            feasible_nodes=len(feasible),
            evaluated_nodes=rejected + len(feasible),
            scores=parts,
            allocation=allocation,
        )
