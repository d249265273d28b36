"""The GpuShare plugin: per-GPU Filter and the Reserve that picks a pod's physical GPUs (R9.2, R14.1).

``GpuShare`` is the Filter (per-GPU fit against ``GpuShareLedger``, batch and cached per equivalence
class) and the Reserve that picks the physical GPUs — by best fit, at random, or by the policy's own
choice (FGD's fragmentation gradient) — and records them in the ledger, the way open-gpu-share's Reserve
updates its cache. The ledger and the fragment arithmetic live in ``gpu_ledger``, pod shapes and the
target workload in ``gpu_shapes``.

Owns the plugin, the GPU selectors and FGD's scoring: the score function of a decrease
(``fgd_scores``, read from its steps), a node's scores (``fgd_node_scores``: batch, or node by node in
Python ints for a few rows) and a sharing pod's per-GPU scores (``share_scores``, ``share_scores_one``,
which FGD's GPU choice at Reserve reads); imports the ledger and shapes modules, the model, ``errors``
and the scheduler's cluster state, framework types, reasons and statuses.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Hashable, Mapping
from typing import Any, ClassVar, Final

import numpy as np
import numpy.typing as npt

from kubegpu.errors import ConfigError
from kubegpu.model.objects import Pod
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.framework import Codes, CycleState, Handle, ReasonIds, Rows
from kubegpu.scheduler.gpu_ledger import GpuShareLedger
from kubegpu.scheduler.gpu_shapes import FloatArray, GpuShape, IntArray, pod_shape
from kubegpu.scheduler.reasons import GpuRequestInvalid, GpuShareNoFit
from kubegpu.scheduler.status import SKIP, SUCCESS, Code, Status, unresolvable

GPU_SHARE: Final = "GpuShare"
REASON_GPU_SHARE: Final = GpuShareNoFit()
_UNSCHEDULABLE: Final = np.int8(Code.UNSCHEDULABLE)


# (ledger, node index, shape, rng) -> the GPU a sharing pod gets
GpuSelector = Callable[["GpuShareLedger", int, GpuShape, np.random.Generator], int]


def select_best_fit(ledger: GpuShareLedger, idx: int, shape: GpuShape, rng: np.random.Generator) -> int:
    """``allocateGpuIdBasedOnBestFit``: the GPU with the least free milli that still fits (lowest index on ties)."""
    fitting = ((left, g) for g, left in enumerate(ledger.gpu_left[idx].tolist()) if left >= shape.milli)
    return min(fitting, default=(0, 0))[1]


def select_random(ledger: GpuShareLedger, idx: int, shape: GpuShape, rng: np.random.Generator) -> int:
    """``allocateGpuIdBasedOnRandomFit``: uniformly among the GPUs that fit."""
    cand = [g for g, left in enumerate(ledger.gpu_left[idx].tolist()) if left >= shape.milli]
    return cand[rng.integers(len(cand))]


def select_min_frag(ledger: GpuShareLedger, idx: int, shape: GpuShape, rng: np.random.Generator) -> int:
    """FGD's GPU choice: the GPU whose use gives the highest (truncated) FGD score, lowest index on ties."""
    left: list[int] = ledger.gpu_left[idx].tolist()
    fitting = {v for v in left if v >= shape.milli}
    if len(fitting) == 1:  # the GPUs that fit all have one free value, so one score: the first of them
        return left.index(fitting.pop())
    # FGD's Score has usually just computed them for this node (``share_scores_one`` keeps the last node's)
    score_of = dict(zip(*share_scores_one(ledger, idx, shape), strict=True))
    per_gpu = [score_of.get(v, -1) for v in left]
    return per_gpu.index(max(per_gpu))  # the first best, as ``argmax``


def share_scores(ledger: GpuShareLedger, rows: Rows, shape: GpuShape) -> tuple[Rows, IntArray, IntArray]:
    """FGD's score of a sharing pod on each choice of GPU on each of ``rows`` (GPUs with equal free milli
    are equivalent): per distinct free value v ≥ ``milli`` of a row's GPUs, (position in ``rows``, v,
    ``fgd_scores`` of the row's fragment decrease, exact integers divided once)."""
    before = ledger.node_frag_weighted(rows)  # fragment amounts × scale: exact integers, so Δ is divided once
    pos, values, after = ledger.share_candidates(rows, shape.cpu, shape.milli)
    return pos, values, fgd_scores(ledger.milli(before[pos] - after))


def share_scores_one(ledger: GpuShareLedger, idx: int, shape: GpuShape) -> tuple[list[int], list[int]]:
    """``share_scores`` of one node in Python ints (the same integers, the same score function): its
    distinct free values v ≥ ``milli`` and their scores. FGD's Score and its GPU choice at Reserve both
    read it; the last answer is kept with the ledger, keyed by the node's cluster version (which never
    repeats, and moves with every pod the node gains or loses), so Reserve takes Score's answer for the
    node it scored in the same cycle, never one from another state."""
    stamp = (idx, int(ledger.cluster.version[idx]), shape.cpu, shape.milli)
    last = ledger.last_share
    if last is not None and last[0] == stamp:
        return last[1], last[2]
    before = ledger.node_frag_one(idx)
    moves = ledger.share_after_one(idx, shape.cpu, shape.milli)
    values = [v for v, _ in moves]
    scores = fgd_scores_of(ledger, [before - after for _, after in moves])
    ledger.last_share = (stamp, values, scores)  # one assignment: a matching triple
    return values, scores


def fgd_node_scores(ledger: GpuShareLedger, rows: Rows, shape: GpuShape) -> IntArray:
    """FGD's score of each of ``rows`` for a pod of ``shape``: a sharing pod's best GPU on the node
    (-1 where none fits), else the score of the node after the simulator's ``Sub``. A few rows (one for
    a sharing pod) are computed node by node in Python ints (``share_scores_one``, ``after_sub_one``),
    more in one batch: the same integers either way, so the same scores."""
    if shape.is_share:  # each node scores its best GPU
        if len(rows) == 1:
            return np.array(
                [max(share_scores_one(ledger, int(rows[0]), shape)[1], default=-1)], dtype=np.int64
            )
        pos, _, scores = share_scores(ledger, rows, shape)
        best = np.full(len(rows), -1, dtype=np.int64)
        np.maximum.at(best, pos, scores)  # (numpy ≥ 2: as fast as any other per-row maximum here)
        return best
    if len(rows) <= _NODE_BY_NODE:
        deltas = [ledger.node_frag_one(i) - ledger.after_sub_one(i, shape) for i in rows.tolist()]
        return np.array(fgd_scores_of(ledger, deltas), dtype=np.int64)
    before = ledger.node_frag_weighted(rows)  # fragment amounts × scale: exact integers, so Δ is divided once
    return fgd_scores(ledger.milli(before - ledger.frag_after_sub(rows, shape)))


# rows up to this many are scored node by node in Python ints, more in one numpy batch (whose fixed cost
# per call is what a few rows would pay); a sharing pod's candidates cost more each: one node only
# (measured over an openb run: one node ~22 µs by node, 2–3 nodes ~65 µs, a batch of up to 10 ~52 µs)
_NODE_BY_NODE: Final = 3


def fgd_scores(delta: FloatArray) -> IntArray:
    """``int64(sigmoid(Δ/1000) · 100)``, Δ = fragment decrease in milli-GPU; the conversion truncates, as
    Go's ``int64()`` (the sigmoid is positive). For Δ below −709,000 the exponent is held at 709, where
    e^709 is finite and already makes the score 0, the sigmoid's limit: no overflow, nothing to silence.
    Read from the score's steps (``_steps``: one binary search per row, the same integers as computing
    it); a NaN scores 101, outside [0, 100], which the framework refuses, as any bad score."""
    steps = _steps()
    if steps is None:
        return _computed(delta)
    out: IntArray = steps[0].searchsorted(delta, side="right")  # (numpy sorts NaN last: 101)
    return out


def _computed(delta: FloatArray) -> IntArray:
    """The score's definition, computed (``fgd_scores``)."""
    x: FloatArray = np.minimum(delta / -1000.0, 709.0)
    np.exp(x, out=x)
    x += 1.0
    scores: IntArray = (100.0 / x).astype(np.int64)
    return scores


def fgd_scores_of(ledger: GpuShareLedger, weighted: list[int]) -> list[int]:
    """``fgd_scores`` of fragment decreases given × scale (``combine``'s exact integers), each divided
    once (``milli_of``: the same float as ``milli``'s), in Python: a bisection of the steps per value."""
    deltas = [ledger.milli_of(w) for w in weighted]
    steps = _steps()
    if steps is None:
        out: list[int] = _computed(np.array(deltas, dtype=np.float64)).tolist()
        return out
    least = steps[1]
    return [bisect_right(least, d) if d == d else _NAN_SCORE for d in deltas]


def _steps() -> tuple[FloatArray, list[float]] | None:
    """Per score s = 1 … 100, the least float Δ whose computed score (``_computed``) is at least s, as an
    array (a NaN last) and a list; the score of Δ is then how many of them are ≤ Δ. The score is a
    monotone function of Δ (division, ``minimum``, ``exp``, addition and truncation all are), so each
    step is found by bisection over the floats in order (``_order_key``), at first use. None (every
    score computed) where the float functions here are not monotone after all: the bisection's answers
    are checked against computed scores on every float within ``_CHECKED`` of each step."""
    if _STEPS:
        return _STEPS[0]
    s = np.arange(1, 101)
    ends = _order_key(np.array([-np.inf, np.inf]))
    low = np.full(100, ends[0], dtype=np.uint64)  # scores < s
    high = np.full(100, ends[1], dtype=np.uint64)  # scores ≥ s (Δ = +∞ scores 100)
    while (high - low > 1).any():
        mid = low + (high - low) // 2
        ok = _computed(_of_order_key(mid)) >= s
        high, low = np.where(ok, mid, high).astype(np.uint64), np.where(ok, low, mid).astype(np.uint64)
    least = _of_order_key(high)
    offsets = np.arange(2 * _CHECKED + 1, dtype=np.uint64) - np.uint64(_CHECKED)  # (wraps: added back)
    near = _of_order_key((high[:, None] + offsets).astype(np.uint64).ravel())
    agree = bool((least.searchsorted(near, side="right") == _computed(near)).all())
    _STEPS.append((np.append(least, np.nan), least.tolist()) if agree else None)
    return _STEPS[0]


def _order_key(x: FloatArray) -> npt.NDArray[np.uint64]:
    """Unsigned integers in the order of the floats ``x`` (no NaN): a float's bits with the sign bit set
    for x ≥ +0.0, all bits flipped below (−0.0 just before +0.0: the same score)."""
    bits = x.view(np.uint64)
    out: npt.NDArray[np.uint64] = np.where(np.signbit(x), ~bits, bits | np.uint64(1 << 63))
    return out


def _of_order_key(key: npt.NDArray[np.uint64]) -> FloatArray:
    """The floats of ``_order_key`` values."""
    bits = np.where(key >> np.uint64(63) == 1, key & np.uint64((1 << 63) - 1), ~key)
    out: FloatArray = bits.view(np.float64)
    return out


_STEPS: list[tuple[FloatArray, list[float]] | None] = []  # found at first use (``_steps``)
_CHECKED: Final = 64  # floats checked on each side of each step (``_steps``)
_NAN_SCORE: Final = 101  # a NaN's score: outside [0, 100], refused by the framework's check


SELECTORS: Final[dict[str, GpuSelector]] = {
    "best": select_best_fit,
    "random": select_random,
    "fgd": select_min_frag,
}


def sharing_ledger(plugin: str, handle: Handle) -> GpuShareLedger:
    """The handle's GPU-share ledger, which ``plugin`` needs (a packing profile built without one fails)."""
    ledger = handle.sharing
    if not isinstance(ledger, GpuShareLedger):
        raise ConfigError(f"{plugin}: needs a GPU-share ledger (the handle's sharing); none was given")
    return ledger


class GpuShare:
    """Filter + Reserve for fractional and whole GPUs against the ledger (open-gpu-share's semantics).

    The ledger is the handle's ``sharing`` (a ``GpuShareLedger`` over the scheduler's cluster). Args:
    ``selection`` (``best`` | ``random`` | ``fgd``: how Reserve picks the GPU of a sharing pod; whole-GPU
    pods get the first fully free GPUs by index, as in the simulator)."""

    name: ClassVar[str] = GPU_SHARE
    sign_from_spec: ClassVar[bool] = True  # ``sign`` reads the pod's spec only (Framework.signed_prefix)
    pre_filter_from_spec: ClassVar[bool] = True  # (Framework.run_pre_filter: kept per pod)
    filter_errors: ClassVar[bool] = False  # (``Framework.filter_rows``: no ERROR to look for)

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        ledger = sharing_ledger(GPU_SHARE, handle)
        selection = str(args.get("selection", "best"))
        if selection not in SELECTORS:
            raise ConfigError(f"{GPU_SHARE}: selection must be one of {sorted(SELECTORS)}, not {selection!r}")
        self.ledger = ledger
        self._select = SELECTORS[selection]
        self._handle = handle
        self._reason = handle.reasons.intern((REASON_GPU_SHARE,))
        self._reason_id = np.int32(self._reason)
        self._no_reasons: ReasonIds = np.zeros(len(ledger.cluster), dtype=np.int32)
        self._no_reasons.flags.writeable = False  # handed out in slices: nobody may write them

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: object
    ) -> tuple[frozenset[str] | None, Status]:
        shape = pod_shape(pod)
        if shape.problem:  # no node can help: the pod's request and annotation must change
            return None, unresolvable(GpuRequestInvalid(shape.problem))
        return None, SUCCESS if shape.count else SKIP

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        if self.ledger.fits(node.idx, pod_shape(pod)):
            return SUCCESS
        return Status(Code.UNSCHEDULABLE, (REASON_GPU_SHARE,))

    def filter_batch(
        self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows
    ) -> tuple[Codes, ReasonIds]:
        bad = self.ledger.misfits(rows, pod_shape(pod))
        if not np.count_nonzero(bad) and len(rows) <= len(self._no_reasons):  # (every row fits: most calls)
            codes: Codes = bad.view(np.int8)  # all 0, as the reasons: no products to compute
            return codes, self._no_reasons[: len(rows)]
        return bad * _UNSCHEDULABLE, bad * self._reason_id

    def sign(self, pod: Pod) -> Hashable:
        shape = pod_shape(pod)
        return (shape.count, shape.milli, shape.problem)  # (a refused pod is no CPU-only pod's equal)

    def reserve(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        shape = pod_shape(pod)
        if not shape.count:
            return SUCCESS
        if shape.is_share:
            gpus: tuple[int, ...] = (self._select(self.ledger, node.idx, shape, self._handle.rng),)
        else:
            gpus = self.ledger.exclusive_gpus(node.idx, shape)
        self.ledger.assign(pod, node.idx, gpus, shape.milli)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: Pod, node: NodeView) -> None:
        self.ledger.release(pod)
