"""The scheduling framework: extension-point contracts, the profile, and the runtime that drives plugins.

Mirrors kube-scheduler 1.34 ``framework/interface.go`` and ``framework/runtime``: PreFilter → Filter →
PostFilter → PreScore → Score → NormalizeScore → Reserve → Permit → Bind, with a per-cycle
``CycleState``. Each contract below says what a plugin receives, which codes it may return and what the
framework then does.

Hot path: a Filter plugin may also implement ``filter_batch`` (same answers for many nodes at once, held
equal to the scalar method by property tests) and ``sign`` (its part of the pod's equivalence class);
a Score plugin may implement ``score_batch``. Reasons (``scheduler.reasons`` values) travel as interned
ids and become strings only when a message is formatted (``reasons.render``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from kubegpu.errors import ConfigError
from kubegpu.model.default_spread import SpreadOwners
from kubegpu.model.dra import DraObjects
from kubegpu.model.objects import Pod, PodDisruptionBudget
from kubegpu.model.volumes import VolumeObjects
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.reasons import PreFilterExcluded, Reason, render_all
from kubegpu.scheduler.status import SUCCESS, Code, Status
from kubegpu.scheduler.versions import Behaviour
from kubegpu.scheduler.versions import behaviour as behaviour_of

MAX_NODE_SCORE = 100
_SKIP = Code.SKIP
# compared with every batch plugin's codes: a numpy scalar, as an IntEnum member makes numpy look up
# dunder attributes on the enum class first (EnumType.__getattr__, ~3 µs per compare)
_ERROR = np.int8(Code.ERROR)
_NONE: npt.NDArray[Any] = np.empty(0, dtype=np.intp)  # read-only placeholder, never written
# Cycle-state key under which a Reserve plugin leaves the device IDs it chose (container → resource → IDs).
ALLOCATION_KEY = "kubegpu/allocation"
Rows = npt.NDArray[np.intp]
Scores = npt.NDArray[np.int64]
Codes = npt.NDArray[np.int8]
ReasonIds = npt.NDArray[np.int32]


class FilterError(Exception):
    """A Filter plugin returned an error: upstream ``RunFilterPlugins`` wraps it (``running %q filter plugin:
    %w``, framework.go v1.35.4-v1.37.2) and ``findNodesThatPassFilters`` ends the cycle with it (no FitError,
    no PostFilter); the pod keeps the text as its scheduling error."""


class CycleState:
    """Data plugins share within one scheduling cycle (upstream ``CycleState``); keys are plugin-owned."""

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        return self._data[key]

    def get(self, key: str) -> Any:
        return self._data.get(key)

    def written(self) -> dict[str, Any]:
        """Everything written so far (a copy): what a kept PreFilter outcome replays (``write_all``)."""
        return dict(self._data)

    def write_all(self, data: Mapping[str, Any]) -> None:
        self._data.update(data)


class ReasonTable:
    """Interns reason tuples so the hot path carries small integers; id 0 is "no reason" (success)."""

    def __init__(self) -> None:
        self._ids: dict[tuple[Reason, ...], int] = {(): 0}
        self._reasons: list[tuple[Reason, ...]] = [()]

    def intern(self, reasons: tuple[Reason, ...]) -> int:
        rid = self._ids.get(reasons)
        if rid is None:
            rid = len(self._reasons)
            self._ids[reasons] = rid
            self._reasons.append(reasons)
        return rid

    def reasons(self, rid: int) -> tuple[Reason, ...]:
        return self._reasons[rid]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Handle:
    """What plugins may use besides their arguments (upstream ``framework.Handle``, kept small): the state,
    the clock, the GPU-share ledger, the DRA and storage objects and the release reproduced.
    ``scheduler.assembly`` fills it."""

    reasons: ReasonTable
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    # the kube-scheduler release reproduced: its texts and the rules that changed between minors
    behaviour: Behaviour = field(default_factory=behaviour_of)
    framework: Framework | None = None
    cluster: ClusterState | None = None
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    # "now" for plugins that price time (CheckpointAwarePreemption), read once per cycle: UTC wall time
    # for a live scheduler, a fixed or simulated instant for reproducible offline runs
    clock: Callable[[], datetime] = utc_now
    # the ``gpu_ledger.GpuShareLedger`` over ``cluster`` (packing profiles); typed where it is read
    # (``gpu_share.sharing_ledger``), as gpu_share imports this module
    sharing: object | None = None
    # the DRA objects DynamicResources reads (slices, claims, device classes): the snapshot's
    dra: DraObjects = field(default_factory=DraObjects)
    # the storage plugins' PVCs, PVs, StorageClasses, CSINodes: the snapshot's (the live scheduler's cache,
    # read in place). Empty (nothing ``seen``): the storage plugins skip every pod and explain says so
    volumes: VolumeObjects = field(default_factory=VolumeObjects)
    # False (the live scheduler, which writes no PV bindings): VolumeBinding refuses the pods whose claims it
    # would have to bind, saying so, instead of binding the pod beside a claim nobody binds
    binds_volumes: bool = True
    # the Services and controllers PodTopologySpread's default selector reads: the snapshot's (the live
    # scheduler's cache, read in place). Empty: no default constraint has a selector
    spread_owners: SpreadOwners = field(default_factory=SpreadOwners)


@runtime_checkable
class PreFilterPlugin(Protocol):
    """PreFilter: computes per-pod state once per cycle. Returns ``(node_names, status)``:
    ``node_names`` (a set) narrows the nodes to evaluate, ``None`` means all nodes. Status SUCCESS
    continues; SKIP means this plugin's Filter is not run for the pod; UNSCHEDULABLE(_AND_UNRESOLVABLE)
    ends the cycle with the status applied to every node; ERROR aborts."""

    name: ClassVar[str]

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterState
    ) -> tuple[frozenset[str] | None, Status]: ...


@runtime_checkable
class FilterPlugin(Protocol):
    """Filter: may this node run the pod? SUCCESS, UNSCHEDULABLE (preemption may help),
    UNSCHEDULABLE_AND_UNRESOLVABLE (it cannot), ERROR (aborts the cycle). The first non-success per node
    is the node's status; later plugins are not asked about that node. Read only ``node``: during
    preemption it reflects a what-if state."""

    name: ClassVar[str]

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status: ...


@runtime_checkable
class BatchFilterPlugin(FilterPlugin, Protocol):
    """Optional fast path: ``filter_batch`` returns (codes, reason ids) for ``rows``, equal to ``filter``."""

    def filter_batch(
        self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows
    ) -> tuple[Codes, ReasonIds]: ...


@runtime_checkable
class SignPlugin(Protocol):
    """Upstream ``SignPlugin``: ``sign`` returns the pod fields the plugin's Filter reads (its part of the
    pod's equivalence class), or None when the pod must be evaluated fresh."""

    def sign(self, pod: Pod) -> Hashable | None: ...


# A SignPlugin whose ``sign`` reads only the pod's spec (never its name, key or any object beside the pod)
# and the plugin's own settings says so with a class attribute ``sign_from_spec = True``.


@dataclass(frozen=True)
class PostFilterResult:
    """What a PostFilter plugin did: the node the pod is nominated to and the pods it must evict. A
    rejecting plugin may return one with an empty node: the pod's nomination is to be cleared."""

    nominated_node: str
    victims: tuple[Pod, ...] = ()


@runtime_checkable
class PostFilterPlugin(Protocol):
    """PostFilter: runs only when no node fits. Returns (result or None, status); SUCCESS means the pod
    may fit after the plugin's action (preemption), anything else explains why not."""

    name: ClassVar[str]

    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]: ...


@runtime_checkable
class ScorePlugin(Protocol):
    """PreScore/Score/NormalizeScore. ``pre_score`` may return SKIP (plugin not scored for this pod).
    ``score`` returns an integer; after ``normalize`` every score lies in [0, 100] and is multiplied by
    the plugin's weight."""

    name: ClassVar[str]

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Status: ...

    def score(self, state: CycleState, pod: Pod, node: NodeView) -> int: ...


@runtime_checkable
class BatchScorePlugin(ScorePlugin, Protocol):
    def score_batch(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Scores: ...


@runtime_checkable
class NormalizeScorePlugin(ScorePlugin, Protocol):
    def normalize(self, state: CycleState, pod: Pod, scores: Scores) -> Scores: ...


@runtime_checkable
class ReservePlugin(Protocol):
    """Reserve claims per-node state for the chosen node (e.g. device IDs); ``unreserve`` must undo it
    and be idempotent. A non-success Reserve fails the cycle and every reserve plugin is unreserved."""

    name: ClassVar[str]

    def reserve(self, state: CycleState, pod: Pod, node: NodeView) -> Status: ...

    def unreserve(self, state: CycleState, pod: Pod, node: NodeView) -> None: ...


@runtime_checkable
class PermitPlugin(Protocol):
    """Permit: SUCCESS lets the pod bind, WAIT holds it (gangs), a rejection unreserves it."""

    name: ClassVar[str]

    def permit(self, state: CycleState, pod: Pod, node: NodeView) -> Status: ...


def default_normalize(scores: Scores, reverse: bool) -> Scores:
    """Upstream ``helper.DefaultNormalizeScore``: scale to [0, 100] by the maximum; optionally reversed."""
    max_count = int(scores.max()) if scores.size else 0
    if max_count == 0:
        return np.full_like(scores, MAX_NODE_SCORE) if reverse else scores
    out = MAX_NODE_SCORE * scores // max_count  # non-negative operands: Go truncation == floor
    return MAX_NODE_SCORE - out if reverse else out


@dataclass(frozen=True)
class PluginSpec:
    name: str
    weight: int = 0
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Profile:
    """A ``KubeSchedulerConfiguration`` profile: plugins in extension-point order with score weights."""

    scheduler_name: str = "default-scheduler"
    plugins: tuple[PluginSpec, ...] = ()
    percentage_of_nodes_to_score: int | None = None
    kube_version: str | None = None  # the release reproduced (``scheduler.versions``); None: the newest
    # what a KubeSchedulerConfiguration asked that kubegpu cannot reproduce (``scheduler.kube_config``)
    unmodelled: tuple[str, ...] = ()


PluginFactory = Callable[[Mapping[str, Any], Handle], object]


@dataclass
class Diagnosis:
    """Why no node fit: per-node statuses (explicit for evaluated nodes, one status for the rest)."""

    num_all_nodes: int
    codes: Codes
    plugins: npt.NDArray[np.int16]
    reason_ids: ReasonIds
    evaluated: npt.NDArray[np.bool_]
    absent: Status | None = None
    pre_filter_msg: str = ""
    post_filter_msg: str = ""


class Framework:
    """Builds plugins from a profile and runs the extension points in order."""

    def __init__(
        self,
        profile: Profile,
        registry: Mapping[str, PluginFactory],
        pdbs: list[PodDisruptionBudget] | None = None,
        *,
        sharing: object | None = None,
        clock: Callable[[], datetime] | None = None,
        dra: DraObjects | None = None,
        volumes: VolumeObjects | None = None,
        binds_volumes: bool = True,
        spread_owners: SpreadOwners | None = None,
    ) -> None:
        """Built by ``scheduler.assembly.assemble`` (tests build their own)."""
        self.profile = profile
        self.reasons = ReasonTable()
        self.handle = Handle(
            reasons=self.reasons,
            pdbs=list(pdbs or []),
            behaviour=behaviour_of(profile.kube_version),
            clock=clock or utc_now,
            sharing=sharing,
            dra=dra if dra is not None else DraObjects(),
            volumes=volumes if volumes is not None else VolumeObjects(),
            binds_volumes=binds_volumes,
            spread_owners=spread_owners if spread_owners is not None else SpreadOwners(),
        )
        self.plugins: list[object] = []
        self.weights: dict[str, int] = {}
        for spec in profile.plugins:
            factory = registry.get(spec.name)
            if factory is None:
                raise ConfigError(
                    f"profile {profile.scheduler_name!r}: plugin {spec.name!r} is not registered"
                )
            if spec.weight < 0:
                raise ConfigError(
                    f"profile {profile.scheduler_name!r}: plugin {spec.name!r}: weight must be >= 0"
                )
            self.plugins.append(factory(spec.args, self.handle))
            self.weights[spec.name] = spec.weight
        self.pre_filter_plugins = [p for p in self.plugins if isinstance(p, PreFilterPlugin)]
        # where every PreFilter reads the pod's spec alone and writes values nobody changes later
        # (``pre_filter_from_spec``), a pod keeps its PreFilter outcome (``Pod.derived``), replayed per cycle
        spec_pre = all(getattr(p, "pre_filter_from_spec", False) for p in self.pre_filter_plugins)
        self._pre_filter_owner: object | None = object() if spec_pre else None
        self.filter_plugins = [p for p in self.plugins if isinstance(p, FilterPlugin)]
        self.post_filter_plugins = [p for p in self.plugins if isinstance(p, PostFilterPlugin)]
        self.score_plugins = [
            p for p in self.plugins if isinstance(p, ScorePlugin) and self.weights[p.name] > 0
        ]
        self.reserve_plugins = [p for p in self.plugins if isinstance(p, ReservePlugin)]
        self.permit_plugins = [p for p in self.plugins if isinstance(p, PermitPlugin)]
        self.handle.framework = self
        # Protocol isinstance checks are slow; decide each plugin's fast paths once, not per cycle.
        self._batch_filter = [isinstance(p, BatchFilterPlugin) for p in self.filter_plugins]
        # the first filter whose verdict may change when pods come and go (``filter_reads_pods``, default
        # True); the ones before it read the node object alone, so their verdicts outlive pod changes
        self.first_pod_reader = next(
            (i for i, p in enumerate(self.filter_plugins) if getattr(p, "filter_reads_pods", True)),
            len(self.filter_plugins),
        )
        # whether a filter may answer ERROR (``filter_errors``, default True): only those rows are searched
        # for an error, which ends the cycle
        self._may_error = [getattr(p, "filter_errors", True) for p in self.filter_plugins]
        # per filter plugin: [-1, its index], read with a rejected-row mask as 0/1 (one gather)
        self._plugin_marks = [np.array([-1, i], dtype=np.int16) for i in range(len(self.filter_plugins))]
        self._signs = [isinstance(p, SignPlugin) for p in self.filter_plugins]
        # whether the signs are a function of the pod's spec and this profile alone (every signing filter
        # says ``sign_from_spec``): then a pod keeps them (a packing run's pods of one spec share them); a
        # fresh object per framework, so that no other framework's or process's value can match it
        spec_only = all(
            getattr(p, "sign_from_spec", False)
            for p, s in zip(self.filter_plugins, self._signs, strict=True)
            if s
        )
        self._sign_owner: object | None = object() if spec_only else None
        self._score_paths = [
            (p, isinstance(p, BatchScorePlugin), isinstance(p, NormalizeScorePlugin))
            for p in self.score_plugins
        ]

    def signature(self, pod: Pod) -> Hashable | None:
        """The pod's equivalence class for filtering: every filter plugin's ``sign``, or None if any opts out."""
        stop, signs = self.signed_prefix(pod)
        return signs if stop == len(self.filter_plugins) else None

    def signed_prefix(self, pod: Pod) -> tuple[int, Hashable]:
        """How many leading filter plugins sign the pod, and their signs: all of them, the pod's whole class
        (``signature``); fewer, a prefix class whose plugins' verdicts the pods of that class still share.
        Kept on the pod (``Pod.derived``) when every signing filter signs from the pod's spec alone."""
        if self._sign_owner is not None:
            return pod.derived(self._sign_owner, self._signed_prefix)
        return self._signed_prefix(pod)

    def _signed_prefix(self, pod: Pod) -> tuple[int, Hashable]:
        parts = []
        for p, signs in zip(self.filter_plugins, self._signs, strict=True):
            s = p.sign(pod) if signs else None  # type: ignore[attr-defined]
            if s is None:
                break
            parts.append(s)
        return len(parts), tuple(parts)

    def run_pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterState
    ) -> tuple[frozenset[str] | None, Status, set[str]]:
        """Upstream ``RunPreFilterPlugins``: intersects node-name results, stops at the first rejection.
        A pod's outcome is kept where every PreFilter says ``pre_filter_from_spec``: then its names, status,
        the filters it skips and what it wrote are replayed into ``state``."""
        if self._pre_filter_owner is None:
            return self._pre_filter(state, pod, cluster)
        names, status, narrowing, skip, written = pod.derived(
            self._pre_filter_owner, lambda p: self._pre_filter_kept(p, cluster)
        )
        state.skip_filter.update(skip)
        state.write_all(written)
        return names, status, set(narrowing)

    def _pre_filter_kept(
        self, pod: Pod, cluster: ClusterState
    ) -> tuple[frozenset[str] | None, Status, frozenset[str], frozenset[str], dict[str, Any]]:
        fresh = CycleState()
        names, status, narrowing = self._pre_filter(fresh, pod, cluster)
        return names, status, frozenset(narrowing), frozenset(fresh.skip_filter), fresh.written()

    def _pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterState
    ) -> tuple[frozenset[str] | None, Status, set[str]]:
        result: frozenset[str] | None = None
        narrowing: list[str] = []
        for p in self.pre_filter_plugins:
            names, status = p.pre_filter(state, pod, cluster)
            if status.code == _SKIP:
                state.skip_filter.add(p.name)
                continue
            if not status.is_success:
                return None, status.with_plugin(p.name), {p.name}
            if names is not None:
                narrowing.append(p.name)
                result = names if result is None else result & names
                if not result:
                    excluded = PreFilterExcluded(tuple(narrowing))
                    return (
                        None,
                        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (excluded,), p.name),
                        set(narrowing),
                    )
        return result, SUCCESS, set(narrowing)

    def filter_rows(
        self,
        state: CycleState,
        pod: Pod,
        cluster: ClusterState,
        rows: Rows,
        start: int = 0,
        stop: int | None = None,
    ) -> tuple[Codes, npt.NDArray[np.int16], ReasonIds]:
        """Run the filter plugins over ``rows``: per row the first rejecting plugin, its code and reasons.
        ``start``: begin at that plugin, for rows every earlier plugin is known to pass; ``stop``: end
        before that plugin (the rows passing so far are then to be continued from ``stop``)."""
        k = len(rows)
        plugins = self.filter_plugins
        end = len(plugins) if stop is None else min(stop, len(plugins))
        codes: Codes | None = None  # None while no plugin has rejected a row: every row is alive
        plugin_idx = reason_ids = alive = _NONE  # set with ``codes``; ``alive``: positions still passing
        for pi in range(start, end if k else start):  # no row: no plugin runs
            p = plugins[pi]
            if p.name in state.skip_filter:
                continue
            sub = rows if codes is None else rows[alive]
            if self._batch_filter[pi]:
                c, r = p.filter_batch(state, pod, cluster, sub)  # type: ignore[attr-defined]
            else:
                c, r = filter_each(p, self.reasons, state, pod, cluster, sub)
            if not np.count_nonzero(c):  # (``count_nonzero`` is C; ``.any()`` goes through Python wrappers)
                continue
            bad = c != 0
            if self._may_error[pi] and np.count_nonzero(c == _ERROR):
                first = int(np.flatnonzero(c == _ERROR)[0])  # the first node in the search's order
                text = "; ".join(self.reason_strings(int(r[first])))
                raise FilterError(f'running "{p.name}" filter plugin: {text}')
            if codes is None:  # the first rejections: this plugin's results are every row's
                codes = c.astype(np.int8)  # a copy: ``c`` may be the plugin's own
                plugin_idx = self._plugin_marks[pi][bad.view(np.int8)]  # pi where rejected, else -1
                reason_ids = (r * bad).astype(np.int32, copy=False)  # a passing row's reason is 0
                alive = (~bad).nonzero()[0]
            else:
                hit = alive[bad]
                codes[hit] = c[bad]
                plugin_idx[hit] = pi
                reason_ids[hit] = r[bad]
                alive = alive[~bad]
            if not alive.size:
                break
        if codes is None:
            return np.zeros(k, dtype=np.int8), np.full(k, -1, dtype=np.int16), np.zeros(k, dtype=np.int32)
        return codes, plugin_idx, reason_ids

    def run_filters(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        """The scalar reference: upstream ``RunFilterPlugins`` for one node, stopping at the first failure."""
        for p in self.filter_plugins:
            if p.name in state.skip_filter:
                continue
            s = p.filter(state, pod, node)
            if not s.is_success:
                return s.with_plugin(p.name)
        return Status(Code.SUCCESS)

    def run_filters_with_nominated(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        """Upstream ``RunFilterPluginsWithNominatedPods`` for one node: when pods of at least ``pod``'s
        priority are nominated to it, a first pass with them placed (their GPUs held in the device
        ledger too); only if that passes, the plain pass, whose answer then stands. Passing both is the
        conservative answer: a nominated pod may still land elsewhere."""
        cluster = node.cluster
        nominated = cluster.nominated_for(node.idx, pod)
        if not nominated:
            return self.run_filters(state, pod, node)
        with cluster.what_if():
            for p in nominated:
                cluster.add_pod(p, node.idx)
            status = self.run_filters(state, pod, node)
        if not status.is_success:
            return status
        return self.run_filters(state, pod, node)

    def run_scores(
        self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows
    ) -> tuple[Scores, dict[str, Scores]]:
        """PreScore, Score, NormalizeScore, weights; returns the totals and each plugin's weighted part."""
        total: Scores | None = None
        parts: dict[str, Scores] = {}
        for p, batch, normalizes in self._score_paths:
            if p.pre_score(state, pod, cluster, rows).code == _SKIP:
                continue
            if batch:
                s = p.score_batch(state, pod, cluster, rows)  # type: ignore[attr-defined]
            else:
                s = np.array([p.score(state, pod, cluster.view(int(i))) for i in rows], dtype=np.int64)
            if normalizes:
                s = p.normalize(state, pod, s)  # type: ignore[attr-defined]
            # outside [0, 100] in one compare: as unsigned, a negative score is above 100 too
            if np.count_nonzero(s.astype(np.int64, copy=False).view(np.uint64) > MAX_NODE_SCORE):
                raise RuntimeError(f"plugin {p.name} returned a score outside [0, {MAX_NODE_SCORE}]")
            weight = self.weights[p.name]
            weighted = s if weight == 1 else s * weight  # (never written to: ``s`` may be a plugin's cache)
            parts[p.name] = weighted
            total = weighted if total is None else total + weighted
        return (np.zeros(len(rows), dtype=np.int64) if total is None else total), parts

    def run_post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        """Upstream ``RunPostFilterPlugins``: the first success wins; rejections' reasons are collected."""
        reasons: list[Reason] = []
        rejector = ""
        kept: PostFilterResult | None = None  # the last result a rejecting plugin still returned
        for p in self.post_filter_plugins:
            result, status = p.post_filter(state, pod, diagnosis)
            if status.is_success:
                return result, status
            if status.code in (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.ERROR):  # an error ends it too
                return result, status.with_plugin(p.name)
            kept = result or kept
            reasons.extend(status.reasons)
            rejector = rejector or p.name
        return kept, Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)

    def reason_values(self, rid: int) -> tuple[Reason, ...]:
        return self.reasons.reasons(rid)

    @property
    def version(self) -> str:
        """The kube-scheduler minor this framework reproduces (``1.37``): every text is rendered for it."""
        return self.handle.behaviour.name

    def reason_strings(self, rid: int, version: str | None = None) -> tuple[str, ...]:
        """The interned reasons as kube-scheduler ``version`` (default: this framework's) prints them."""
        return render_all(self.reasons.reasons(rid), version or self.version)

    def plugin_name(self, idx: int) -> str:
        return self.filter_plugins[idx].name if idx >= 0 else ""


def filter_each(
    plugin: FilterPlugin, reasons: ReasonTable, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows
) -> tuple[Codes, ReasonIds]:
    """A plugin's scalar ``filter`` over ``rows``, in the batch result shape (codes, reason ids)."""
    codes = np.zeros(len(rows), dtype=np.int8)
    reason_ids = np.zeros(len(rows), dtype=np.int32)
    for j, idx in enumerate(rows):
        s = plugin.filter(state, pod, cluster.view(int(idx)))
        if not s.is_success:
            codes[j] = s.code
            reason_ids[j] = reasons.intern(s.reasons)
    return codes, reason_ids
