"""Resource-allocation scoring shared by NodeResourcesFit and NodeResourcesBalancedAllocation.

Mirrors kube-scheduler 1.34 ``noderesources/resource_allocation.go`` and the strategy scorers
(``least_allocated.go``, ``most_allocated.go``, ``requested_to_capacity_ratio.go``,
``balanced_allocation.go``) operation for operation, in int64 where Go uses int64 (Python ``//`` only on
non-negative operands, so it agrees with Go's truncation) and float64 where Go uses float64.

Which "requested" a scorer sees: NodeResourcesFit's strategies use the node's *non-zero* requested CPU
and memory and the pod's requests with upstream's defaults (100m CPU, 200Mi memory per container that
sets none); BalancedAllocation uses the plain requests. An extended resource the pod does not request is
left out of the score, as upstream does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from kubegpu.model.objects import Pod
from kubegpu.model.quantity import MAX_MILLI
from kubegpu.model.resources import CPU, MEMORY, is_scalar
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import MAX_NODE_SCORE, Rows, Scores

MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100

Matrix = npt.NDArray[np.int64]
Scorer = Callable[[Matrix, Matrix, npt.NDArray[np.int64]], Scores]
Change = TypeVar("Change", int, Scores)  # one node's balance (the scalar references) or a batch's


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    name: str
    weight: int = 1


DEFAULT_RESOURCES = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


def allocatable_and_requested(
    pod: Pod, cluster: ClusterState, rows: Rows, resources: Sequence[ResourceSpec], *, use_requested: bool
) -> tuple[Matrix, Matrix]:
    """Per node and scored resource: (allocatable, node requested + pod request); zeros mean "skip"."""
    alloc, req, _ = _allocatable_requested(pod, cluster, rows, resources, use_requested, allocated=False)
    return alloc, req


def allocatable_requested_and_allocated(
    pod: Pod, cluster: ClusterState, rows: Rows, resources: Sequence[ResourceSpec], *, use_requested: bool
) -> tuple[Matrix, Matrix, Matrix]:
    """``allocatable_and_requested`` and the node's requests before the pod, upstream's ``allocated`` (0 where
    a resource is skipped): ``calculateNodeAllocatableRequest`` of 1.36+ returns all three."""
    return _allocatable_requested(pod, cluster, rows, resources, use_requested, allocated=True)


def _allocatable_requested(
    pod: Pod,
    cluster: ClusterState,
    rows: Rows,
    resources: Sequence[ResourceSpec],
    use_requested: bool,
    *,
    allocated: bool,
) -> tuple[Matrix, Matrix, Matrix]:
    """The columns of both: ``allocated`` (the third matrix) is built only when asked, since the other scorers
    read the first two per pod on every node; otherwise the third is ``req`` again."""
    pod_req = pod.requests if use_requested else pod.non_zero_requests
    allocs: list[npt.NDArray[np.int64]] = []
    reqs: list[npt.NDArray[np.int64]] = []
    befores: list[npt.NDArray[np.int64]] = []
    for spec in resources:
        amount = pod_req.get(spec.name, 0)
        col = cluster.col.get(spec.name)
        if col is None or (amount == 0 and is_scalar(spec.name)):
            allocs.append(np.zeros(len(rows), dtype=np.int64))
            reqs.append(allocs[-1])
            befores.append(allocs[-1])
            continue
        if spec.name == CPU and not use_requested:
            node_req = cluster.nonzero_cpu[rows]
        elif spec.name == MEMORY and not use_requested:
            node_req = cluster.nonzero_memory[rows]
        else:
            node_req = cluster.requested[:, col][rows]  # a column view, then rows: 2.5x faster
        a = cluster.allocatable[:, col][rows]
        allocs.append(a)
        # saturating (quantity.saturate): a node's total at the int64 bound plus the pod's would wrap
        total = np.minimum(node_req, MAX_MILLI - amount) + amount if amount > 0 else node_req + amount
        # upstream fills requested (and allocated) only where allocatable is non-zero
        full = bool(a.all())
        reqs.append(total if full else np.where(a != 0, total, 0))
        if allocated:
            befores.append(node_req if full else np.where(a != 0, node_req, 0))
    if not allocs:
        empty = np.zeros((len(rows), 0), dtype=np.int64)
        return empty, empty.copy(), empty.copy()
    # rows × resources, as transposed views of resources × rows (cheaper to build than np.stack)
    req = np.array(reqs).T
    return np.array(allocs).T, req, np.array(befores).T if allocated else req


def _share(part: Matrix, alloc: Matrix, scale: int) -> Matrix:
    """``part × scale // alloc`` for 0 ≤ part ≤ alloc. In int64 ``part × scale`` wraps once part passes
    ``MAX_MILLI // scale`` (~84 TiB of memory in milli-bytes, or any amount saturated at the column bound);
    kube-scheduler's int64 does wrap there (leastRequestedScore, v1.37.2), kubegpu does not model that and
    computes those rows exactly instead."""
    safe = np.maximum(alloc, 1)
    if part.size == 0 or int(part.max()) <= MAX_MILLI // scale:
        return part * scale // safe
    exact: Matrix = (part.astype(object) * scale // safe.astype(object)).astype(np.int64)
    return exact


def _weighted_mean(per_resource: Matrix, alloc: Matrix, weights: npt.NDArray[np.int64]) -> Scores:
    used = alloc != 0
    if used.all():  # every resource counts on every node (the usual case): one weight sum for all rows
        total = int(weights.sum())
        if total > 0:
            scores: Scores = (per_resource * weights).sum(axis=1) // total
            return scores
    weight_sum = (used * weights).sum(axis=1)
    node_score = (per_resource * used * weights).sum(axis=1)
    return np.where(weight_sum > 0, node_score // np.maximum(weight_sum, 1), 0)


def least_allocated(req: Matrix, alloc: Matrix, weights: npt.NDArray[np.int64]) -> Scores:
    """``leastRequestedScore``: (capacity − requested) × 100 / capacity, 0 when over capacity."""
    free = alloc - req
    per = np.where((alloc == 0) | (free < 0), 0, _share(np.maximum(free, 0), alloc, MAX_NODE_SCORE))
    return _weighted_mean(per, alloc, weights)


def most_allocated(req: Matrix, alloc: Matrix, weights: npt.NDArray[np.int64]) -> Scores:
    """``mostRequestedScore``: min(requested, capacity) × 100 / capacity."""
    per = np.where(alloc == 0, 0, _share(np.maximum(np.minimum(req, alloc), 0), alloc, MAX_NODE_SCORE))
    return _weighted_mean(per, alloc, weights)


def go_div(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64] | int) -> npt.NDArray[np.int64]:
    """Go's integer division (truncates toward zero), for operands that may be negative."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (np.asarray(b) < 0), -q, q)


def broken_linear(
    shape: Sequence[tuple[int, int]],
) -> Callable[[npt.NDArray[np.int64]], npt.NDArray[np.int64]]:
    """``helper.BuildBrokenLinearFunction`` over (utilization, score) points sorted by utilization."""

    def f(p: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        out = np.full(p.shape, shape[-1][1], dtype=np.int64)
        done = np.zeros(p.shape, dtype=bool)
        for i, (u, s) in enumerate(shape):
            here = ~done & (p <= u)
            if i == 0:
                out[here] = s
            else:
                u0, s0 = shape[i - 1]
                out[here] = s0 + go_div((s - s0) * (p[here] - u0), u - u0)
            done |= here
        return out

    return f


def requested_to_capacity_ratio(shape: Sequence[tuple[int, int]]) -> Scorer:
    """Scores scaled from the user's 0–10 shape to 0–100; only positive resource scores are averaged,
    and the average is rounded half away from zero (Go's ``math.Round``)."""
    scaled = [(u, s * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for u, s in shape]
    raw = broken_linear(scaled)

    def score(req: Matrix, alloc: Matrix, weights: npt.NDArray[np.int64]) -> Scores:
        util = np.where(
            (alloc == 0) | (req > alloc),
            MAX_UTILIZATION,
            _share(np.maximum(np.minimum(req, alloc), 0), alloc, MAX_UTILIZATION),
        )
        per = raw(util)
        counted = (alloc != 0) & (per > 0)
        weight_sum = (counted * weights).sum(axis=1)
        node_score = (per * counted * weights).sum(axis=1)
        mean = node_score / np.maximum(weight_sum, 1)
        rounded = np.floor(mean + 0.5).astype(np.int64)  # math.Round on non-negative values
        return np.where(weight_sum > 0, rounded, 0)

    return score


def balanced(req: Matrix, alloc: Matrix) -> Scores:
    """``balancedResourceScorer``: (1 − std of the used fractions) × 100, truncated like Go's int64()."""
    used = alloc != 0
    if alloc.shape[1] == 2 and used.all():  # the default (cpu, memory) on nodes that have both
        frac = np.minimum(req / alloc, 1.0)
        std2 = np.abs((frac[:, 0] - frac[:, 1]) / 2)
        return ((1 - std2) * MAX_NODE_SCORE).astype(np.int64)
    frac = np.where(used, req / np.where(used, alloc, 1), 0.0)
    frac = np.minimum(frac, 1.0)
    n = used.sum(axis=1)
    out = np.full(len(req), MAX_NODE_SCORE, dtype=np.int64)
    two = n == 2
    if two.any():
        f2 = frac[two][used[two]].reshape(-1, 2)
        std2 = np.abs((f2[:, 0] - f2[:, 1]) / 2)
        out[two] = ((1 - std2) * MAX_NODE_SCORE).astype(np.int64)
    many = n > 2
    for i in np.flatnonzero(many):
        vals = frac[i][used[i]]
        mean = vals.sum() / len(vals)
        std = float(np.sqrt(((vals - mean) ** 2).sum() / len(vals)))
        out[i] = int((1 - std) * MAX_NODE_SCORE)
    return out


def balance_change(with_pod: Change, without_pod: Change) -> Change:
    """1.36+ ``balancedResourceScorer`` (kubernetes PR #135573): the change the pod makes to the node's balance,
    ``MaxNodeScore/2 + (MaxNodeScore/2 + with_pod - without_pod)/2``. Both balances lie in [50, 100] (a std of
    fractions in [0, 1] is at most 0.5), so the dividend is never negative and ``//`` truncates as Go does."""
    half = MAX_NODE_SCORE // 2
    return half + (half + with_pod - without_pod) // 2


# --- Scalar references: the Go functions transcribed for one node; the batch versions above must agree. ---


def node_allocatable_and_requested(
    pod: Pod, cluster: ClusterState, idx: int, resources: Sequence[ResourceSpec], *, use_requested: bool
) -> tuple[list[int], list[int]]:
    """``calculateResourceAllocatableRequest`` for each scored resource of one node."""
    alloc, req, _ = node_allocatable_requested_and_allocated(
        pod, cluster, idx, resources, use_requested=use_requested
    )
    return alloc, req


def node_allocatable_requested_and_allocated(
    pod: Pod, cluster: ClusterState, idx: int, resources: Sequence[ResourceSpec], *, use_requested: bool
) -> tuple[list[int], list[int], list[int]]:
    """1.36+ ``calculateNodeAllocatableRequest`` for one node: allocatable, requested with the pod, and the
    node's requests before it (``allocated``), 0 for a skipped resource."""
    pod_req = pod.requests if use_requested else pod.non_zero_requests
    view = cluster.view(idx)
    alloc: list[int] = []
    req: list[int] = []
    before: list[int] = []
    for spec in resources:
        amount = pod_req.get(spec.name, 0)
        a = view.allocatable(spec.name)
        if (amount == 0 and is_scalar(spec.name)) or a == 0:
            alloc.append(0)
            req.append(0)
            before.append(0)
            continue
        if spec.name == CPU and not use_requested:
            node_req = int(cluster.nonzero_cpu[idx])
        elif spec.name == MEMORY and not use_requested:
            node_req = int(cluster.nonzero_memory[idx])
        else:
            node_req = view.requested(spec.name)
        alloc.append(a)
        req.append(node_req + amount)
        before.append(node_req)
    return alloc, req, before


def least_allocated_one(req: list[int], alloc: list[int], weights: Sequence[int]) -> int:
    node_score = weight_sum = 0
    for r, a, w in zip(req, alloc, weights, strict=True):
        if a == 0:
            continue
        node_score += (0 if r > a else (a - r) * MAX_NODE_SCORE // a) * w
        weight_sum += w
    return node_score // weight_sum if weight_sum else 0


def most_allocated_one(req: list[int], alloc: list[int], weights: Sequence[int]) -> int:
    node_score = weight_sum = 0
    for r, a, w in zip(req, alloc, weights, strict=True):
        if a == 0:
            continue
        node_score += min(r, a) * MAX_NODE_SCORE // a * w
        weight_sum += w
    return node_score // weight_sum if weight_sum else 0


def balanced_one(req: list[int], alloc: list[int]) -> int:
    import math

    fractions = [min(r / a, 1.0) for r, a in zip(req, alloc, strict=True) if a != 0]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)
