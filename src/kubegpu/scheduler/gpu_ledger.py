"""The GPU-share ledger: per-GPU free milli-GPU beside the cluster, and fragmentation (R9.2, R14.1).

A GPU-sharing pod asks for a share of ONE physical GPU (``gpu_milli`` < 1000, as in Alibaba's openb
trace and the open-gpu-share scheduler plugin); a whole-GPU pod asks for ``n`` GPUs of 1000 milli each.
``ClusterState`` counts a node's total milli-GPU in the ``kubegpu.io/gpu-milli`` column, so
NodeResourcesFit rejects nodes without enough in total; whether the request fits *per GPU* needs the
free milli-GPU of every physical GPU, which ``GpuShareLedger`` keeps as ``gpu_left[N, G]`` (G = the most
GPUs on any node; rows of smaller nodes are padded with 0, which no GPU request fits).

Pod shapes and the target workload (typical pods) are ``gpu_shapes``'.

The ledger is a sibling of ``ClusterState``, not part of it, and listens to it (``ClusterState.listeners``):
GpuShare's Reserve records a pod's GPUs and Unreserve releases them; every pod the cluster removes (a
departure, an eviction, a preemption dry run) frees its GPUs here, and a journal rollback that re-adds it
gives it back the same GPUs (``pod_removed`` / ``pod_added``), so a preemption dry run leaves the ledger
as it found it.

Fragmentation (Weng et al., ATC '23, §4; the simulator's ``NodeGpuShareFragAmount``): for a target
workload of typical pod shapes with popularity p_t, a node's fragment amount is Σ_t p_t · F_t, where F_t
is the node's free milli-GPU that shape t cannot use: the free milli on GPUs with less free than the
shape's per-GPU milli when the shape fits (CPU and enough GPUs), otherwise all free milli-GPU (CPU-only
shapes and shapes whose GPU model the node lacks see every free GPU as fragment).

A packing run reads the ledger a few times per pod on one node or a handful (a scheduling cycle's stale
rows, the placed node), so numpy's per-call cost, not per-row work, is what a cycle pays here: one-node
reads take a plain index, and per-GPU counts are looked up in a table by free value.

Owns the ledger and its arithmetic; imports the model, ``errors``, the scheduler's cluster state and
framework types and ``gpu_shapes`` only (the GpuShare plugin, in ``gpu_share``, imports this module, never
the reverse).
"""

from __future__ import annotations

import functools
from bisect import bisect_right
from typing import Final

import numpy as np
import numpy.typing as npt

from kubegpu.errors import ConfigError
from kubegpu.model.names import GPU_PRODUCT_LABEL
from kubegpu.model.objects import Pod, PodKey
from kubegpu.model.resources import CPU, NVIDIA_GPU
from kubegpu.scheduler.cluster import CPU_MEMORY_COLUMNS, ClusterState
from kubegpu.scheduler.framework import Rows
from kubegpu.scheduler.gpu_shapes import MILLI, FloatArray, GpuShape, IntArray, TypicalPods, is_share

# open-gpu-share's normalisation constants (MaxSpecCpu, MaxSpecGpu): the largest openb node.
MAX_SPEC_CPU: Final = 128_000
MAX_SPEC_GPU: Final = 8_000

# rows of the ledger, or one node's index: the per-call cost on numpy's tiny arrays is the work of a
# packing cycle, so the ledger's one-node reads take a plain index (no gather; a node's value comes
# back one dimension lower) through the same code as many rows
RowsOrNode = Rows | int


class GpuShareLedger:
    """Per node and physical GPU: free milli-GPU; per placed GPU pod: its node, GPUs and milli per GPU.

    With a target workload it also caches every node's fragment amount (recomputed only for nodes that
    changed), which is what makes a fragmentation reading after every pod cheap."""

    def __init__(self, cluster: ClusterState, typical: TypicalPods | None = None) -> None:
        self.cluster = cluster
        n = len(cluster)
        col = cluster.col.get(NVIDIA_GPU)
        self.gpu_count: IntArray = (
            cluster.allocatable[:, col] // MILLI if col is not None else np.zeros(n, dtype=np.int64)
        )
        width = max(int(self.gpu_count.max()) if n else 0, 1)
        # free milli per GPU (columns past a node's GPU count stay 0)
        self.gpu_left: IntArray = np.where(np.arange(width)[None, :] < self.gpu_count[:, None], MILLI, 0)
        models: dict[str, int] = {}
        self.model_id = np.array(
            [
                models.setdefault(node.labels.get(GPU_PRODUCT_LABEL, ""), len(models))
                for node in cluster.nodes
            ],
            dtype=np.intp,
        )
        self.model_names = list(models)
        self.held: dict[PodKey, tuple[int, tuple[int, ...], int]] = {}
        # GPUs of pods the cluster removed, so that a journal rollback re-adding them restores the same GPUs
        self._released: dict[PodKey, tuple[int, tuple[int, ...], int]] = {}
        cluster.listeners.append(self)
        # GPU pods per node by kind (0 = sharing, k = k whole GPUs): GpuClustering's node "affinities"
        self._kinds: IntArray = np.zeros((n, width + 1), dtype=np.int64)
        self.typical = typical
        # per-node fragment amount × the target's scale (an integer), valid for every node not in
        # ``_stale``: the nodes whose inputs (CPU requested, free milli per GPU) changed since, which the
        # ledger hears of itself (its listener calls and its own ``assign``/``release``/``_recount``), so
        # that a reading where nothing changed (a failed pod) costs no scan of the cluster
        self._frag: IntArray = np.zeros(n, dtype=np.int64)
        self._stale: set[int] = set()  # (every node joins at the first ``_recount``, below)
        self._frag_sum = 0  # Σ ``_frag`` over every node (a Python int: exact)
        # What one GPU with v free milli adds to a node's per-shape counts, per v in 0..MILLI (the range
        # the ledger keeps; ``assign`` refuses to leave it): [fit_t (v ≥ milli_t) for each typical shape t,
        # below_t (v when v < milli_t, else 0), v]. A node's counts are the sum over its GPUs (padding
        # columns are GPUs with 0 free), and moving one GPU from v to w adds row w less row v: one
        # integer rule for every count, looked up instead of recomputed (tiny arrays: per-call cost).
        shapes = len(typical) if typical is not None else 0
        free = np.arange(MILLI + 1, dtype=np.int64)
        tm = typical.milli if typical is not None else np.zeros(0, dtype=np.int64)
        fit = free[:, None] >= tm[None, :]
        self._by_free: IntArray = np.concatenate(
            [fit, np.where(fit, 0, free[:, None]), free[:, None]], axis=1, dtype=np.int64
        )
        self._shapes = shapes
        self._changes: dict[tuple[int, int], IntArray] = {}  # (free before, after) → its row change
        # per node: the counts, the sum of ``_by_free`` over its GPUs (``counts`` reads them as parts)
        self._counts: IntArray = np.zeros((n, 2 * shapes + 1), dtype=np.int64)
        # per node: free milli per GPU sorted ascending (the padding zeros first): the k-th most free GPU
        # is column width − k, which is all the Filter and the simulator's ``Sub`` need of the order
        self._sorted: IntArray = np.zeros_like(self.gpu_left)
        self._need: IntArray = np.zeros((n, shapes), dtype=np.int64)
        # FGD's last one-node share scores (``gpu_share.share_scores_one``: its stamp, values, scores), kept
        # here so that they live and die with the state they were computed on
        self.last_share: tuple[tuple[int, ...], list[int], list[int]] | None = None
        if typical is not None:
            gpu_shape = typical.milli > 0
            node_access = (
                typical.access(self.model_names)[:, self.model_id] & gpu_shape[:, None]
            ).T  # [N, T]
            # [N, T]: the GPUs shape t needs on node n, or more than any node has where it may not use them
            # (a count of fitting GPUs never exceeds ``width``): one comparison for both conditions
            self._need = np.where(node_access, typical.count, width + 1)
        self._one = _OneNode(self, typical) if typical is not None else None
        self._recount(np.arange(n, dtype=np.intp))

    @property
    def gpus_needed(self) -> IntArray:
        """[N, T]: the GPUs typical shape t needs on node n, or more than any node has where it may not use
        that node's GPU model (read-only: the ledger's own)."""
        view: IntArray = self._need.view()
        view.flags.writeable = False
        return view

    def cpu_left(self, rows: RowsOrNode) -> IntArray:
        return self.left(rows, CPU)

    def left(self, rows: RowsOrNode, resource: str) -> IntArray:
        """Allocatable minus requested ``resource`` on ``rows``."""
        c = self.cluster.col[resource]
        # the column first: then ``rows`` is a 1-D gather (a [rows, c] pair index costs more per call)
        out: IntArray = self.cluster.allocatable[:, c][rows] - self.cluster.requested[:, c][rows]
        return out

    def _recount(self, rows: Rows) -> None:
        """Refresh the sorted free milli and per-shape counts of ``rows`` from ``gpu_left``, after their
        GPUs changed (``assign``/``release`` move one node's counts by kept rows instead)."""
        left = self.gpu_left.take(
            rows, axis=0
        )  # a copy (``gpu_left[node]`` would be a view), sorted in place
        self._counts[rows] = self._by_free.take(left, axis=0).sum(axis=-2)
        left.sort(axis=-1)
        self._sorted[rows] = left
        if self._one is not None:
            self._stale.update(rows.tolist())

    def counts_of(self, gpu_left: IntArray) -> tuple[IntArray, IntArray, IntArray]:
        """Per row of ``gpu_left[K, G]`` (or of one node's ``[G]``; free milli in 0..MILLI) and typical shape:
        GPUs with enough free milli for the shape, free milli on the GPUs without; and free milli in all."""
        self._typical()
        return self._parts(self._by_free[gpu_left].sum(axis=-2))

    def _parts(self, counts: IntArray) -> tuple[IntArray, IntArray, IntArray]:
        """``counts[K, 2T + 1]`` (sums of ``_by_free`` rows; or one node's ``[2T + 1]``) as (fit, below, total)."""
        t = self._shapes
        return counts[..., :t], counts[..., t : 2 * t], counts[..., 2 * t]

    def combine(
        self,
        rows: RowsOrNode,
        cpu_left: IntArray,
        fit: IntArray,
        below: IntArray,
        total: IntArray,
    ) -> IntArray:
        """Σ_t weight_t · F_t from per-shape counts, an exact integer (the fragment amount × the target's
        ``scale``): F_t = ``below`` where shape t fits (model, GPUs, CPU), else all free milli-GPU
        (``total``). Integer sums are exact in any order, so a node's value never depends on which other rows are
        computed with it (a float matrix product's does: BLAS sums a row in an order that depends on how
        many rows there are and on the CPU's kernel)."""
        fits = self.satisfied(rows, cpu_left, fit)
        out: IntArray = np.where(fits, below, total[..., None]).dot(self._typical().weight)  # int64: exact
        return out

    def milli(self, weighted: IntArray) -> FloatArray:
        """``combine`` values as milli-GPU: one division each, correctly rounded."""
        out: FloatArray = np.divide(weighted, self._typical().scale, dtype=np.float64)
        return out

    def milli_of(self, weighted: int) -> float:
        """A sum of ``combine`` values (a Python int, any size) as milli-GPU: Python's int division is the
        exact quotient rounded once, as ``milli``'s (whose operands are exact in float64, below 2**53)."""
        return weighted / self._typical().scale

    def satisfied(self, rows: RowsOrNode, cpu_left: IntArray, fit: IntArray) -> npt.NDArray[np.bool_]:
        """[K, T]: shape t fits row k (a GPU model it may use, enough GPUs that fit it, enough CPU)."""
        cpu = self._typical().cpu
        # (``take``: a gather of whole rows costs less per call than ``[rows]``; a 0-d CPU needs no new axis)
        out: npt.NDArray[np.bool_] = fit >= self._need.take(rows, axis=0)
        out &= (cpu_left[:, None] if cpu_left.ndim else cpu_left) >= cpu
        return out

    def counts(self, rows: RowsOrNode) -> tuple[IntArray, IntArray, IntArray]:
        """The cached per-shape counts of ``rows``: GPUs that fit each shape, free milli on GPUs that do
        not, and free milli in all."""
        return self._parts(self._counts.take(rows, axis=0))

    def frag(self, rows: RowsOrNode) -> IntArray:
        """Fragment amount (popularity-weighted, × scale: ``combine``) of ``rows`` in their current state."""
        return self.combine(rows, self.cpu_left(rows), *self.counts(rows))

    def frag_of(self, rows: Rows, cpu_left: IntArray, gpu_left: IntArray) -> FloatArray:
        """Fragment amount (milli-GPU) of ``rows`` if they had ``cpu_left[K]`` and ``gpu_left[K, G]`` (the
        reference the incremental forms below are held equal to). Free milli outside 0..MILLI is refused."""
        if gpu_left.size and (int(gpu_left.min()) < 0 or int(gpu_left.max()) > MILLI):
            raise ValueError(f"free milli-GPU per GPU must be within 0..{MILLI}")
        return self.milli(self.combine(rows, cpu_left, *self.counts_of(gpu_left)))

    def share_candidates(self, rows: Rows, cpu: int, milli: int) -> tuple[Rows, IntArray, IntArray]:
        """For a sharing pod (``cpu``, ``milli`` on ONE GPU): every distinct free value v ≥ ``milli`` on each
        row, as (position in ``rows``, v, fragment amount × scale after the pod lands on a GPU with v free). GPUs
        with equal free milli give equal results, and only that GPU and the CPU change, so the cached
        per-shape counts are adjusted rather than recomputed."""
        pos, value = self.share_moves(rows, milli)
        node = _one(rows)
        return pos, value, self.after_share(rows[pos] if node is rows else node, value, cpu, milli)

    def after_share(self, rows: RowsOrNode, value: IntArray, cpu: int, milli: int) -> IntArray:
        """Fragment amount × scale of each row (or of one node, per value) after a sharing pod of ``cpu``
        and ``milli`` lands on one of its GPUs with ``value`` free: that GPU goes from v to v − milli."""
        return self.combine(rows, self.cpu_left(rows) - cpu, *self.share_counts(rows, value, milli))

    def share_counts(
        self, rows: RowsOrNode, value: IntArray, milli: int
    ) -> tuple[IntArray, IntArray, IntArray]:
        """The per-shape counts (``counts``) of each row, or of one node per value, after one of its GPUs
        goes from ``value`` free to ``value − milli``: that GPU's table row out, its new row in."""
        self._typical()
        counts = self._counts.take(rows, axis=0) - self._by_free.take(value, axis=0)
        counts += self._by_free.take(value - milli, axis=0)
        return self._parts(counts)

    def share_moves(self, rows: Rows, milli: int) -> tuple[Rows, IntArray]:
        """Where a sharing pod of ``milli`` can go, one entry per distinct free value v ≥ ``milli`` on each
        row (GPUs with equal free milli are equivalent): (position in ``rows``, v)."""
        node = _one(rows)
        ordered = self._sorted.take(node, axis=0)
        take = ordered >= milli
        take[..., 1:] &= ordered[..., 1:] != ordered[..., :-1]  # the first GPU of each free value
        if node is rows:
            pos, col = take.nonzero()
            return pos, ordered[pos, col]
        (col,) = take.nonzero()
        return np.zeros(len(col), dtype=np.intp), ordered[col]

    def frag_after_sub(self, rows: Rows, shape: GpuShape) -> IntArray:
        """Fragment amount (× scale) of each row after the simulator's ``NodeResource.Sub``: the pod's GPUs taken from
        the GPUs with the least sufficient free milli first (only the multiset of free values matters)."""
        node = _one(rows)
        out = self.combine(node, self.cpu_left(node) - shape.cpu, *self.counts_after_sub(node, shape))
        return out if node is rows else out[None]

    def counts_after_sub(self, rows: RowsOrNode, shape: GpuShape) -> tuple[IntArray, IntArray, IntArray]:
        """The per-shape counts (``counts``) of ``rows`` after ``NodeResource.Sub`` of ``shape``: unchanged
        without GPUs; whole GPUs take ``count`` fully free GPUs (each from 1000 free, which fits every
        shape, to 0); otherwise the GPUs after it (``left_after_sub``), recounted."""
        fit, below, total = self.counts(rows)
        if not shape.count:
            return fit, below, total
        if shape.milli == MILLI:
            return fit - shape.count, below, total - shape.count * MILLI
        return self.counts_of(self.left_after_sub(rows, shape))

    def sub_taken(self, rows: RowsOrNode, shape: GpuShape) -> tuple[IntArray, npt.NDArray[np.bool_]]:
        """Free milli per GPU of ``rows`` (sorted ascending) and the GPUs the simulator's
        ``NodeResource.Sub`` of ``shape`` takes: its ``count`` GPUs with the least sufficient free milli
        (padding columns, 0 free, never suffice)."""
        gl = self._sorted[rows]
        ok = gl >= shape.milli
        return gl, ok & (np.cumsum(ok, axis=-1) <= shape.count)

    def sub_taken_one(self, idx: int, shape: GpuShape) -> list[int]:
        """``sub_taken`` of one node in Python ints: the free milli of the GPUs it takes."""
        return [v for v in self._sorted[idx].tolist() if v >= shape.milli][: shape.count]

    def left_after_sub(self, rows: RowsOrNode, shape: GpuShape) -> IntArray:
        """Free milli per GPU of ``rows`` (sorted ascending) after ``NodeResource.Sub`` of ``shape``."""
        gl, take = self.sub_taken(rows, shape)
        out: IntArray = gl - shape.milli * take
        return out

    def _typical(self) -> TypicalPods:
        if self.typical is None:
            raise ConfigError("fragmentation needs a target workload (typical pods) in the GpuShare ledger")
        return self.typical

    @functools.cached_property
    def empty_kind(self) -> IntArray:
        """Per node, its kind when empty: nodes of one GPU model with equal allocatable CPU and memory and
        equal GPU counts (numbered by first appearance), alike in every state the ledger measures while
        nothing is requested of them (``untouched``)."""
        alike = np.column_stack(
            (self.model_id, self.cluster.allocatable[:, CPU_MEMORY_COLUMNS], self.gpu_count)
        ).astype(np.int64)
        kinds: dict[bytes, int] = {}
        return np.array([kinds.setdefault(row.tobytes(), len(kinds)) for row in alike], dtype=np.intp)

    def untouched(self, rows: Rows) -> npt.NDArray[np.bool_]:
        """Which of ``rows`` have no CPU or memory requested and every GPU free: such nodes of one
        ``empty_kind`` are in the same state."""
        out: npt.NDArray[np.bool_] = (
            self.cluster.requested.take(rows, axis=0)[:, CPU_MEMORY_COLUMNS] == 0
        ).all(axis=1)
        out &= self._counts[:, -1][rows] == self.gpu_count.take(rows) * MILLI
        return out

    def node_frag_weighted(self, rows: Rows) -> IntArray:
        """Current fragment amount × scale of ``rows``, recomputing only the nodes that changed."""
        if self._stale:
            self._refresh_frag()
        out: IntArray = self._frag[rows]
        return out

    def node_frag_one(self, idx: int) -> int:
        """``node_frag_weighted`` of one node, a Python int."""
        if self._stale:
            self._refresh_frag()
        return int(self._frag[idx])

    def _refresh_frag(self) -> None:
        """Recompute the cached fragment amount of the nodes that changed, keeping the exact sum over
        every node (``cluster_frag``) in step: a few nodes (the usual case: one pod's) in Python ints,
        many (the first reading) in one batch."""
        stale, self._stale = self._stale, set()  # (swapped: a change heard meanwhile waits in the new set)
        one = self._one
        if one is not None and len(stale) <= _ONE_BY_ONE:
            frag = self._frag
            for idx in stale:
                value = one.weighted(idx, self._cpu_left_one(idx), self._counts[idx].tolist())
                self._frag_sum += value - int(frag[idx])
                frag[idx] = value
        else:
            rows = np.fromiter(stale, dtype=np.intp, count=len(stale))
            fresh = self.frag(rows)
            self._frag_sum += int(fresh.sum()) - int(self._frag[rows].sum())
            self._frag[rows] = fresh

    def _cpu_left_one(self, idx: int) -> int:
        cluster = self.cluster
        c = cluster.col[CPU]
        return int(cluster.allocatable[idx, c]) - int(cluster.requested[idx, c])

    def cluster_frag(self) -> float:
        """The fragment amount (milli-GPU) of the whole cluster, the sum over every node: the
        exact integer sum, kept up to date node by node (only the nodes that changed are recomputed and
        re-added), divided once (a ledger without typical pods has nothing stale, and ``milli_of`` refuses)."""
        if self._stale:
            self._refresh_frag()
        return self.milli_of(self._frag_sum)

    def share_after_one(self, idx: int, cpu: int, milli: int) -> list[tuple[int, int]]:
        """``share_candidates`` of one node in Python ints: (v, fragment amount × scale after the pod
        lands on a GPU with v free) per distinct free value v ≥ ``milli``, ascending."""
        one = self._one_node()
        values = sorted({v for v in self.gpu_left[idx].tolist() if v >= milli})
        if not values:
            return []
        counts, cpu_left = self._counts[idx], self._cpu_left_one(idx) - cpu
        return [
            (v, one.weighted(idx, cpu_left, (counts + self._step(v, v - milli)).tolist())) for v in values
        ]

    def after_sub_one(self, idx: int, shape: GpuShape) -> int:
        """``frag_after_sub`` of one node, a Python int."""
        if shape.count and shape.milli != MILLI:  # a share of one GPU: recounted (FGD scores those per GPU)
            return int(self.frag_after_sub(np.array([idx], dtype=np.intp), shape)[0])
        one = self._one_node()  # no GPUs, or ``count`` whole ones (``counts_after_sub``)
        counts: list[int] = self._counts[idx].tolist()
        return one.weighted(idx, self._cpu_left_one(idx) - shape.cpu, counts, shape.count)

    def _one_node(self) -> _OneNode:
        if self._one is None:
            self._typical()  # raises: no target workload
            raise AssertionError("a ledger with typical pods has its one-node tables")
        return self._one

    def node_frag(self, rows: Rows) -> FloatArray:
        """Current fragment amount (milli-GPU) of each of ``rows``."""
        return self.milli(self.node_frag_weighted(rows))

    def cpu_left_of(self, rows: RowsOrNode) -> IntArray | int:
        """``cpu_left`` of ``rows``, or of one node as a Python int."""
        return self._cpu_left_one(rows) if isinstance(rows, int) else self.cpu_left(rows)

    def free_milli_of(self, rows: RowsOrNode) -> IntArray | int:
        """Free milli-GPU in all of each of ``rows`` (or of one node, a Python int): the kept total."""
        if isinstance(rows, int):
            return int(self._counts[rows, -1])
        out: IntArray = self._counts[:, -1][rows]
        return out

    def sorted_left(self, rows: RowsOrNode) -> IntArray:
        """Free milli per GPU of ``rows`` (or one node), sorted ascending (padding zeros first)."""
        out: IntArray = self._sorted[rows]
        return out

    @staticmethod
    def kind_of(shape: GpuShape) -> int:
        return gpu_kind(shape.count, shape.milli)

    def kind_counts(self, rows: RowsOrNode) -> IntArray:
        out: IntArray = self._kinds[rows]
        return out

    def assign(self, pod: Pod, idx: int, gpus: tuple[int, ...], milli: int) -> None:
        left: list[int] = self.gpu_left[idx].tolist()
        for g in gpus:
            if not 0 <= left[g] - milli <= MILLI:  # the per-GPU counts are looked up by free value
                raise ValueError(
                    f"{pod.key}: GPU {g} of node {idx} has {left[g]} milli-GPU free, not {milli}"
                )
        self.held[pod.key] = (idx, gpus, milli)
        self._kinds[idx, gpu_kind(len(gpus), milli)] += 1
        self._move(idx, left, gpus, -milli)

    def _move(self, idx: int, left: list[int], gpus: tuple[int, ...], change: int) -> None:
        """Node ``idx``'s ``gpus`` (of ``left``, its free milli per GPU) gain ``change`` free milli each:
        ``_recount`` of one node, its counts moved by each GPU's table row out and new row in (GPUs moving
        between the same two values together: an exact integer update, so equal to a recount)."""
        moves: dict[tuple[int, int], int] = {}
        row = self.gpu_left[idx]
        for g in gpus:
            old = left[g]
            left[g] = row[g] = old + change
            moves[old, old + change] = moves.get((old, old + change), 0) + 1
        counts = self._counts[idx]
        for move, times in moves.items():
            step = self._step(*move)
            counts += step if times == 1 else step * times
        left.sort()
        self._sorted[idx] = left
        if self._one is not None:
            self._stale.add(idx)

    def _step(self, old: int, new: int) -> IntArray:
        """What one GPU going from ``old`` free milli to ``new`` adds to its node's counts: its table row
        out, its new row in (kept: a run meets the same few moves over and over)."""
        changes = self._changes
        step = changes.get((old, new))
        if step is None:
            if len(changes) >= _CHANGES_KEPT:
                changes.clear()
            step = changes[old, new] = self._by_free[new] - self._by_free[old]
        return step

    def release(self, pod: Pod) -> int | None:
        """Give back the pod's GPUs; returns its node index (None for a pod without GPUs here)."""
        held = self.held.pop(pod.key, None)
        if held is None:
            return None
        idx, gpus, milli = held
        self._kinds[idx, gpu_kind(len(gpus), milli)] -= 1
        self._move(idx, self.gpu_left[idx].tolist(), gpus, milli)
        return idx

    def pod_added(self, pod: Pod, idx: int, restored: bool = False) -> None:
        """A rollback re-added a pod the cluster had removed (``restored``): it gets its GPUs back. A pod
        placed by a cycle was recorded at Reserve already; any other add (a nominated pod counted in a
        filter's first pass, a pod that once left coming back) holds no GPUs here."""
        if self._one is not None:
            self._stale.add(idx)  # its CPU requested changed
        if restored and pod.key not in self.held:
            earlier = self._released.pop(pod.key, None)
            if earlier is not None and earlier[0] == idx:
                self.assign(pod, idx, earlier[1], earlier[2])

    def pod_removed(self, pod: Pod, idx: int) -> None:
        """The cluster removed a pod (departure, eviction or a preemption dry run): free its GPUs."""
        if self._one is not None:
            self._stale.add(idx)
        held = self.held.get(pod.key)
        if held is not None:
            self._released[pod.key] = held
            self.release(pod)

    def fits(self, rows: Rows | int, shape: GpuShape) -> npt.NDArray[np.bool_]:
        """open-gpu-share's Filter: ``count`` GPUs each with at least ``milli`` free (``misfits`` negated;
        ``rows``: an array, or one node index)."""
        ok: npt.NDArray[np.bool_] = ~self.misfits(rows, shape)
        return ok

    def misfits(self, rows: Rows | int, shape: GpuShape) -> npt.NDArray[np.bool_]:
        """The rows open-gpu-share's Filter rejects: the node's ``count``-th most free GPU has less than
        ``milli`` free. No GPU asked: none; more GPUs than any node has: all."""
        width = self._sorted.shape[1]
        if not 0 < shape.count <= width:
            out: npt.NDArray[np.bool_] = np.full(np.shape(rows), shape.count > width)
            return out
        kth = self._sorted[:, width - shape.count]  # the column first: then ``rows`` is a 1-D gather
        bad: npt.NDArray[np.bool_] = kth[rows] < shape.milli
        return bad

    def exclusive_gpus(self, idx: int, shape: GpuShape) -> tuple[int, ...]:
        """``AllocateExclusiveGpuId``: the first ``count`` fully free GPUs by index."""
        free = [g for g, left in enumerate(self.gpu_left[idx].tolist()) if left == MILLI]
        return tuple(free[: shape.count])


def _one(rows: Rows) -> RowsOrNode:
    """One row as its node index (read without gathers, values one dimension lower), else ``rows``."""
    return int(rows[0]) if len(rows) == 1 else rows


def gpu_kind(count: int, milli: int) -> int:
    """A GPU pod's kind for GpuClustering's per-node counts: 0 for a sharing pod, else its GPU count."""
    return 0 if is_share(count, milli) else count


# stale nodes refreshed one by one in Python ints; more (the first reading: every node) in one batch
_ONE_BY_ONE: Final = 16
# GPU moves (free before, after) whose change of the counts is kept (beyond: forgotten, recomputed)
_CHANGES_KEPT: Final = 4096


class _OneNode:
    """The ledger's fragment arithmetic for ONE node in Python ints: the same integers as ``combine``
    over a gather of rows (held equal in tests/sim/test_gpu_ledger.py), without numpy's per-call cost on
    arrays of one row, which is what a packing cycle's few one-node reads would pay.

    Per GPU model: the weight of every shape (each counts all free milli, less its ``below − total`` where
    it fits), and the shapes the model may fit grouped by (milli per GPU, GPUs needed): a group's
    shapes share their fit count and ``below`` (both read the milli alone), so where the group fits by
    GPU, the shapes that fit are those asking at most the free CPU, a prefix of the group sorted by CPU
    (one bisection, and their summed weight), not one test per shape."""

    def __init__(self, ledger: GpuShareLedger, typical: TypicalPods) -> None:
        t = len(typical)
        self.below = t  # offset of the ``below`` part in a node's counts list
        access = typical.access(ledger.model_names) & (typical.milli > 0)[:, None]  # [T, M]
        weight, cpu, count = typical.weight.tolist(), typical.cpu.tolist(), typical.count.tolist()
        milli = typical.milli.tolist()
        every = sum(weight)
        # per model: (Σ weight, per group: a member k (its counts' column), GPUs needed, the members'
        # CPU ascending, the running sums of their weights from 0)
        self.by_model: list[tuple[int, tuple[tuple[int, int, list[int], list[int]], ...]]] = []
        for m in range(len(ledger.model_names)):
            groups: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
            for k in range(t):
                if access[k, m]:
                    groups.setdefault((milli[k], count[k]), []).append((cpu[k], weight[k], k))
            entries = []
            for (_, need), members in groups.items():
                members.sort()
                sums = [0]
                for _, w, _ in members:
                    sums.append(sums[-1] + w)
                entries.append((members[0][2], need, [c for c, _, _ in members], sums))
            self.by_model.append((every, tuple(entries)))
        self.model_of: list[int] = ledger.model_id.tolist()

    def weighted(self, idx: int, cpu_left: int, counts: list[int], taken: int = 0) -> int:
        """``combine`` of node ``idx`` with ``cpu_left`` and ``counts`` (its ``[fit…, below…, total]``)
        less ``taken`` fully free GPUs (``counts_after_sub`` of whole GPUs: each fitted every shape, so
        every fit count and the total lose them; nothing below changes)."""
        every, groups = self.by_model[self.model_of[idx]]
        total, b = counts[-1] - taken * MILLI, self.below
        out = every * total
        for k, need, cpus, sums in groups:
            if counts[k] >= need + taken:
                fits = sums[
                    bisect_right(cpus, cpu_left)
                ]  # the weight of the group's shapes with cpu ≤ cpu_left
                if fits:
                    out += fits * (counts[b + k] - total)
        return out
