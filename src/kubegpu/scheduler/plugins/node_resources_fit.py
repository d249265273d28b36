"""NodeResourcesFit: the node's free allocatable must cover the pod's effective request (R4.1, R9.1,
R11.2, R11.3, R17.2, R17.5).

Mirrors kube-scheduler 1.34 ``plugins/noderesources/fit.go``. Free = allocatable − the *requests* of the
pods already on the node (not utilisation). Reasons, in upstream order: ``Too many pods``,
``Insufficient cpu``, ``Insufficient memory``, ``Insufficient ephemeral-storage``, then
``Insufficient <name>`` for each extended/scalar resource. A node is UnschedulableAndUnresolvable when
the request exceeds its total allocatable (preemption cannot help); otherwise Unschedulable.
Worked example: allocatable ``nvidia.com/gpu: 8`` with 6 requested fits a 2-GPU pod, not a 4-GPU pod
(Unschedulable), and never a 9-GPU pod (Unresolvable).

Scoring strategies: LeastAllocated (default), MostAllocated, RequestedToCapacityRatio.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Final

import numpy as np
import numpy.typing as npt

from kubegpu.errors import ConfigError
from kubegpu.model.dra import DraObjects
from kubegpu.model.objects import Pod
from kubegpu.model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, is_extended, is_scalar
from kubegpu.scheduler import resource_allocation as ra
from kubegpu.scheduler.cluster import FEW_ROWS_PER_COLUMN, POD_UNITS, ClusterState, NodeView, columns
from kubegpu.scheduler.dra_extended import ClassResolver
from kubegpu.scheduler.framework import Codes, CycleState, Handle, ReasonIds, Rows, Scores
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.reasons import Insufficient, Reason, TooManyPods
from kubegpu.scheduler.status import SUCCESS, Code, Status

STATE_KEY: Final = "PreFilter" + names.NODE_RESOURCES_FIT
RequestKey = tuple[tuple[str, int], ...]  # a ``fit_request`` as its items: hashable


def insufficient_reason(resource: str, requested: int) -> Reason:
    return TooManyPods() if resource == PODS else Insufficient(resource, requested)


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    """Upstream ``InsufficientResource``: the evidence behind one reason (numbers in milli-units)."""

    resource: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool

    @property
    def reason(self) -> Reason:
        return insufficient_reason(self.resource, self.requested)


def fit_request(
    pod: Pod, ignored: frozenset[str] = frozenset(), ignored_groups: frozenset[str] = frozenset()
) -> dict[str, int]:
    """The resources Fit checks, in upstream order: cpu, memory, ephemeral-storage, then scalars by name."""
    return dict(shared_fit_request(pod, ignored, ignored_groups)[0])


def shared_fit_request(
    pod: Pod, ignored: frozenset[str], ignored_groups: frozenset[str]
) -> tuple[Mapping[str, int], RequestKey]:
    """``fit_request`` read-only and as its items, one pair for all pods of one request (a deployment's
    replicas, a trace's rows): what NodeResourcesFit keeps on each pod is a reference, not a copy."""
    shape = (tuple(pod.requests.items()), ignored, ignored_groups)
    out = _by_shape.get(shape)
    if out is None:
        if len(_by_shape) >= _BY_SHAPE_MAX:
            _by_shape.clear()
        request = _fit_request(pod, ignored, ignored_groups)
        out = _by_shape[shape] = (MappingProxyType(request), tuple(request.items()))
    return out


_UNSCHEDULABLE = np.int8(Code.UNSCHEDULABLE)
_UNRESOLVABLE = np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
_by_shape: dict[tuple[RequestKey, frozenset[str], frozenset[str]], tuple[Mapping[str, int], RequestKey]] = {}
_BY_SHAPE_MAX = 4096  # bounded: a long-running scheduler sees ever new shapes


def _fit_request(pod: Pod, ignored: frozenset[str], ignored_groups: frozenset[str]) -> dict[str, int]:
    req = pod.requests
    out = {r: req[r] for r in (CPU, MEMORY, EPHEMERAL_STORAGE) if req.get(r, 0) > 0}
    for r in sorted(req):
        if req[r] == 0 or not is_scalar(r):
            continue
        if is_extended(r) and (r in ignored or r.split("/", 1)[0] in ignored_groups):
            continue
        out[r] = req[r]
    return out


def insufficient_resources(request: Mapping[str, int], node: NodeView) -> list[InsufficientResource]:
    """``fitsRequest``: every resource the node cannot cover, with the numbers behind it."""
    out = []
    if node.pod_count + 1 > node.cluster.max_pods[node.idx]:
        out.append(InsufficientResource(PODS, 1, node.pod_count, int(node.cluster.max_pods[node.idx]), False))
    for r, amount in request.items():
        alloc, used = node.allocatable(r), node.requested(r)
        if amount > alloc - used:
            out.append(InsufficientResource(r, amount, used, alloc, amount > alloc))
    return out


PATTERN_BITS: Final = 12  # (pods, *request) columns up to which shortage patterns index a table (4096 ids)
_PATTERN_CODES: Final = np.full(1 << PATTERN_BITS, _UNSCHEDULABLE, dtype=np.int8)
_PATTERN_CODES[0] = 0  # no shortage: success


@dataclass(frozen=True, slots=True)
class _Vector:
    """One request's view of a cluster for the batch Filter: the columns of (pods, *request) and the
    amounts (``POD_UNITS`` for the pod itself: ``ClusterState.free`` counts pods in thousandths); per node,
    whether a resource is above its allocatable (the request is then unresolvable there: it is always
    short too, free being at most allocatable) and, with KEP-5004, which columns count (a delegated
    resource does not where the node's allocatable has none); the shortage pattern → reason id table."""

    cols: npt.NDArray[np.intp]
    amounts: npt.NDArray[np.int64]
    bit_values: npt.NDArray[np.int64]
    above_allocatable: npt.NDArray[np.bool_]
    delegated: npt.NDArray[np.bool_] | None
    pattern_ids: npt.NDArray[np.int32] | None  # 0: not interned yet; None: more columns than PATTERN_BITS
    # (amounts, pattern bits) laid over every column of ``free`` (the smallest int64 and no bit where the
    # request names none), for comparing whole rows; None where that cannot say the same (KEP-5004
    # delegation, a table-less width, a resource named ``pods`` sharing the pod count's column)
    wide: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None

    @classmethod
    def of(cls, cluster: ClusterState, request: Mapping[str, int], delegated: frozenset[str]) -> _Vector:
        cols, amounts = cluster.request_vector(request)
        alloc = cluster.allocatable[:, cols]
        above_each = amounts > alloc
        delegating = None
        if delegated and not delegated.isdisjoint(request):
            counts = np.ones((len(cluster), len(cols) + 1), dtype=bool)
            for j, r in enumerate(request, start=1):
                if r in delegated:
                    counts[:, j] = alloc[:, j - 1] > 0
            above_each &= counts[:, 1:]
            delegating = None if counts.all() else counts
        width = len(cols) + 1
        bits = np.int64(1) << np.arange(min(width, PATTERN_BITS), dtype=np.int64)
        above = np.asarray(above_each.any(axis=1), dtype=np.bool_)
        all_cols = np.concatenate(([cluster.col[PODS]], cols)).astype(np.intp)
        all_amounts = np.concatenate(([POD_UNITS], amounts)).astype(np.int64)
        wide = None
        if delegating is None and width <= PATTERN_BITS and len(set(all_cols.tolist())) == width:
            wide_amounts = np.full(cluster.free.shape[1], np.iinfo(np.int64).min, dtype=np.int64)
            wide_amounts[all_cols] = all_amounts
            wide_bits = np.zeros(cluster.free.shape[1], dtype=np.int64)
            wide_bits[all_cols] = bits
            wide = (wide_amounts, wide_bits)
        return cls(
            cols=all_cols,
            amounts=all_amounts,
            bit_values=bits,
            above_allocatable=above,
            delegated=delegating,
            pattern_ids=np.zeros(1 << width, dtype=np.int32) if width <= PATTERN_BITS else None,
            wide=wide,
        )


class NodeResourcesFit:
    name: ClassVar[str] = names.NODE_RESOURCES_FIT
    sign_from_spec: ClassVar[bool] = True  # ``sign`` reads the pod's spec only (Framework.signed_prefix)
    pre_filter_from_spec: ClassVar[bool] = True  # (Framework.run_pre_filter: kept per pod)
    filter_errors: ClassVar[bool] = False  # (``Framework.filter_rows``: no ERROR to look for)

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._reasons = handle.reasons
        # kubernetes PR #131345 (1.34): a request above the node's allocatable is unresolvable
        self._above_alloc_unresolvable = handle.behaviour.above_allocatable_unresolvable
        self.ignored = frozenset(args.get("ignoredResources", ()))
        self.ignored_groups = frozenset(args.get("ignoredResourceGroups", ()))
        # KEP-5004 (shouldDelegateResourceToDRA): where the release has it, a resource a DeviceClass serves
        # is left to DynamicResources on a node whose allocatable has none of it
        dra = handle.dra
        self.delegated: frozenset[str] = frozenset()
        if handle.behaviour.dra_extended_resource and isinstance(dra, DraObjects) and dra.classes:
            self.delegated = frozenset(ClassResolver(dra.classes).by_resource)
        self._owner = object()  # this plugin's values kept on pods (``Pod.derived``)
        # hot-path memos: request columns per cluster, interned reasons per (request, shortage pattern)
        self._vector_cluster: ClusterState | None = None
        self._vectors: dict[RequestKey, _Vector] = {}
        self._pattern_ids: dict[tuple[RequestKey, int], int] = {}
        strategy = dict(args.get("scoringStrategy") or {})
        self.strategy = strategy.get("type", "LeastAllocated")
        specs = strategy.get("resources") or [{"name": CPU, "weight": 1}, {"name": MEMORY, "weight": 1}]
        self.resources = tuple(ra.ResourceSpec(s["name"], int(s.get("weight", 1))) for s in specs)
        self._weights = np.array([s.weight for s in self.resources], dtype=np.int64)
        self._scorer: ra.Scorer
        if self.strategy == "LeastAllocated":
            self._scorer = ra.least_allocated
        elif self.strategy == "MostAllocated":
            self._scorer = ra.most_allocated
        elif self.strategy == "RequestedToCapacityRatio":
            rtc = strategy.get("requestedToCapacityRatio") or {}
            shape = [(int(p["utilization"]), int(p["score"])) for p in rtc.get("shape", [])]
            if not shape:
                raise ConfigError(
                    "NodeResourcesFit: scoringStrategy.requestedToCapacityRatio.shape is required"
                )
            self._scorer = ra.requested_to_capacity_ratio(sorted(shape))
        else:
            raise ConfigError(f"NodeResourcesFit: scoringStrategy.type: unsupported value {self.strategy!r}")

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: object
    ) -> tuple[frozenset[str] | None, Status]:
        state.write(STATE_KEY, self._fit(pod))
        return None, SUCCESS

    def _fit(self, pod: Pod) -> tuple[Mapping[str, int], RequestKey]:
        """The pod's ``fit_request`` and its items, kept on the pod (``Pod.derived``: they depend on its
        spec and this plugin's ignored resources alone)."""
        return pod.derived(self._owner, self._fit_of)

    def _fit_of(self, pod: Pod) -> tuple[Mapping[str, int], RequestKey]:
        return shared_fit_request(pod, self.ignored, self.ignored_groups)

    def _request(self, state: CycleState, pod: Pod) -> tuple[Mapping[str, int], RequestKey]:
        kept: tuple[Mapping[str, int], RequestKey] | None = state.get(STATE_KEY)
        return kept if kept is not None else self._fit(pod)

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        request = self._request(state, pod)[0]
        if self.delegated:
            request = {r: a for r, a in request.items() if r not in self.delegated or node.allocatable(r) > 0}
        short = insufficient_resources(request, node)
        if not short:
            return SUCCESS
        code = (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            if self._above_alloc_unresolvable and any(s.unresolvable for s in short)
            else Code.UNSCHEDULABLE
        )
        return Status(code, tuple(s.reason for s in short))

    def sign(self, pod: Pod) -> Hashable:
        return self._fit(pod)[1]

    def filter_batch(
        self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows
    ) -> tuple[Codes, ReasonIds]:
        request, key = self._request(state, pod)
        vec = self._vector(cluster, key, request)
        # one compare over the free matrix: the pod itself against the pods the node can still take
        # (POD_UNITS per pod), the request's amounts against their columns; upstream checks the pod count
        # first, so bit 0. Few rows: their whole rows against ``wide`` (one gather; columns the request
        # does not name compare against the smallest int64 and are never short)
        if vec.wide is not None and len(rows) < FEW_ROWS_PER_COLUMN * len(vec.cols):
            wide_amounts, bit_values = vec.wide
            short = wide_amounts > cluster.free.take(rows, axis=0)
        else:
            short = vec.amounts > columns(cluster.free, rows, vec.cols)
            if vec.delegated is not None:  # KEP-5004: left to DynamicResources where allocatable has none
                short &= vec.delegated[rows]
            bit_values = vec.bit_values
        if not np.count_nonzero(short):  # every row fits: nothing to intern
            return np.zeros(len(rows), dtype=np.int8), np.zeros(len(rows), dtype=np.int32)
        # per row, which of (pods, *request) is short, as bits; a pattern's reasons are interned on first
        # sight, the new patterns of one call in ascending order
        if vec.pattern_ids is None:  # too many columns for a table: one Python int per failing row
            failing = np.asarray(short.any(axis=1), dtype=np.bool_)
            reason_ids = np.zeros(len(rows), dtype=np.int32)
            per_row = [sum(1 << int(j) for j in row.nonzero()[0]) for row in short[failing]]
            ids = {p: self._pattern_id(key, p) for p in sorted(set(per_row))}
            reason_ids[failing] = [ids[p] for p in per_row]
            codes: Codes = failing.view(np.int8) * _UNSCHEDULABLE
        else:
            bits = short @ bit_values
            reason_ids = vec.pattern_ids[bits]
            if np.count_nonzero(reason_ids) != np.count_nonzero(bits):
                for pattern in sorted(set(bits[(bits > 0) & (reason_ids == 0)].tolist())):
                    vec.pattern_ids[pattern] = self._pattern_id(key, pattern)
                reason_ids = vec.pattern_ids[bits]
            codes = _PATTERN_CODES[bits]  # any shortage is Unschedulable (a table read: one gather)
        if self._above_alloc_unresolvable:  # a row with a request above allocatable is a failing row
            codes[vec.above_allocatable[rows]] = _UNRESOLVABLE
        return codes, reason_ids

    def _vector(self, cluster: ClusterState, key: RequestKey, request: Mapping[str, int]) -> _Vector:
        """The request's columns and what depends only on the nodes' allocatable, kept per request while
        the cluster is the same (columns are added, never moved; allocatable never changes)."""
        if cluster is not self._vector_cluster:
            self._vector_cluster, self._vectors = cluster, {}
        vector = self._vectors.get(key)
        if vector is None or (vector.wide is not None and len(vector.wide[0]) != cluster.free.shape[1]):
            # (made again when columns were added since: ``wide`` spans every column)
            if len(self._vectors) >= _BY_SHAPE_MAX:  # bounded: a vector holds per-node arrays
                self._vectors.clear()
            vector = self._vectors[key] = _Vector.of(cluster, request, self.delegated)
        return vector

    def _pattern_id(self, key: RequestKey, pattern: int) -> int:
        """The interned reasons for the resources short in ``pattern`` (bit 0: pods, bit j: the j-th of
        ``key``), in upstream order."""
        rid = self._pattern_ids.get((key, pattern))
        if rid is None:
            named = [(PODS, 1), *key]
            reasons = tuple(
                insufficient_reason(n, amount) for j, (n, amount) in enumerate(named) if pattern >> j & 1
            )
            rid = self._pattern_ids[(key, pattern)] = self._reasons.intern(reasons)
        return rid

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Status:
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeView) -> int:
        alloc, req = ra.node_allocatable_and_requested(
            pod, node.cluster, node.idx, self.resources, use_requested=False
        )
        weights = [s.weight for s in self.resources]
        if self.strategy == "LeastAllocated":
            return ra.least_allocated_one(req, alloc, weights)
        if self.strategy == "MostAllocated":
            return ra.most_allocated_one(req, alloc, weights)
        one = np.array([req], dtype=np.int64), np.array([alloc], dtype=np.int64)
        return int(self._scorer(one[0], one[1], self._weights)[0])

    def score_batch(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Scores:
        alloc, req = ra.allocatable_and_requested(pod, cluster, rows, self.resources, use_requested=False)
        return self._scorer(req, alloc, self._weights)
