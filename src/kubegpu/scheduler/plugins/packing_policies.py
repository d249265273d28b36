"""The FGD paper's baseline placement policies as Score plugins over the GpuShare ledger (ATC '23, §6.1).

Each reproduces the published simulator's score, integer truncation included (milli-CPU and milli-GPU;
``MAX_SPEC_CPU`` = 128,000, ``MAX_SPEC_GPU`` = 8,000):

- ``RandomScore``: one feasible node, drawn uniformly, scores 100, the rest 0.
- ``DotProductScore`` (Tetris; merged GPU dimension, normalised by the largest node): free
  (cpu, GPU total) · request, each over the max spec, averaged; score ``int(100 · (1 − dot))``.
- ``GpuClusteringScore``: pods of one GPU kind (``share-gpu``, ``1-gpu``, ``2-gpu`` …) gather: a node
  holding only the pod's kind scores 75–100, the kind among others 50–75, an empty node 25–50, other
  kinds 0–25, each band ``25 · (8000 − free GPU milli) // 8000`` above its floor; CPU pods score 0.
- ``GpuPackingScore``: prefer sharing a used GPU (``max(100 − Σ free%/10, 50)``), then free GPUs of a
  used node (``max(50 − n, 33)``), then an idle node (``max(33 − free GPUs, free GPUs)``); CPU pods 0.
- ``BestFitScore``: ``int(100 · (1 − ½·(cpu free − cpu)/128000 − ½·(GPU free − GPU)/8000))``, then
  min–max normalised over the feasible nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

import numpy as np

from kubegpu.model.objects import Pod
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.framework import MAX_NODE_SCORE, CycleState, Handle, Rows, Scores
from kubegpu.scheduler.gpu_ledger import MAX_SPEC_CPU, MAX_SPEC_GPU, GpuShareLedger
from kubegpu.scheduler.gpu_shapes import MILLI, GpuShape, pod_shape
from kubegpu.scheduler.gpu_share import sharing_ledger
from kubegpu.scheduler.node_cache import NodeCache
from kubegpu.scheduler.plugin_calls import score_one
from kubegpu.scheduler.status import SUCCESS, Status

RANDOM: Final = "RandomScore"
DOT_PRODUCT: Final = "DotProductScore"
GPU_CLUSTERING: Final = "GpuClusteringScore"
GPU_PACKING: Final = "GpuPackingScore"
BEST_FIT: Final = "BestFitScore"


# rows up to this many are scored node by node in Python numbers, more in one batch of arrays (whose
# fixed cost per numpy call is what a few rows would pay)
_NODE_BY_NODE: Final = 3

# A rule's operand: an array over rows, or one node's Python number. Each policy's rule is written once
# for both: one node's score (most of a packing cycle's stale rows are one node) is then Python
# arithmetic, not a dozen numpy calls on arrays of one; int and float operations are IEEE/exact either
# way, so one node's score is the one the rule gives it among many rows.
Num = Any


class _LedgerScore:
    """Shared plumbing: the ledger, a no-op PreScore, the scalar score via the batch one, and the batch one
    via ``node_scores`` cached per pod shape and node (``node_cache``): every policy below but Random
    scores a node from that node's state and the pod's shape alone, in element-wise integer or float
    operations, so a node's score is the same whichever other rows are scored with it. (FGD and
    KubegpuCpuFrag cache theirs the same way; their popularity-weighted sums are exact integers.)"""

    name: ClassVar[str]

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.ledger: GpuShareLedger = sharing_ledger(self.name, handle)
        self.handle = handle
        self._cache = NodeCache(self.ledger.cluster, np.int64)

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Status:
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeView) -> int:
        return score_one(self, state, pod, node)

    def score_batch(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Scores:
        shape = pod_shape(pod)
        out: Scores = self._cache.values(self.key(shape), rows, lambda stale: self.node_scores(shape, stale))
        return out

    @staticmethod
    def key(shape: GpuShape) -> tuple[int, int]:
        """What of the pod's shape ``node_scores`` reads (the cache's key: pods that differ only in what
        the score does not read share the nodes' values). Here: CPU and total milli-GPU."""
        return shape.cpu, shape.total_milli

    def node_scores(self, shape: GpuShape, rows: Rows) -> Scores:
        """The policy's score of each of ``rows`` for a pod of ``shape``, from the rows' current state,
        truncated toward zero (Go's ``int64()``): a few rows node by node in Python numbers, more in one
        batch of arrays (the same rule, so the same scores)."""
        if len(rows) <= _NODE_BY_NODE:
            return np.array([int(self.values(shape, idx)) for idx in rows.tolist()], dtype=np.int64)
        out: Scores = self.values(shape, rows).astype(np.int64, copy=False)  # (a cast truncates, as np.trunc)
        return out

    def values(self, shape: GpuShape, rows: Rows | int) -> Num:
        """The policy's rule over ``rows`` (arrays) or one node (a Python number)."""
        raise NotImplementedError


class _GpuKindScore(_LedgerScore):
    """A policy that reads only the pod's GPU count and milli per GPU."""

    @staticmethod
    def key(shape: GpuShape) -> tuple[int, int]:
        return shape.count, shape.milli


class RandomScore(_LedgerScore):
    name: ClassVar[str] = RANDOM

    def score_batch(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Scores:
        out = np.zeros(len(rows), dtype=np.int64)
        out[self.handle.rng.integers(len(rows))] = MAX_NODE_SCORE
        return out


class DotProductScore(_LedgerScore):
    name: ClassVar[str] = DOT_PRODUCT

    def values(self, shape: GpuShape, rows: Rows | int) -> Num:
        return self.rule(shape, self.ledger.cpu_left_of(rows), self.ledger.free_milli_of(rows))

    @staticmethod
    def rule(shape: GpuShape, cpu_free: Num, gpu_free: Num) -> Num:
        cpu_term = (cpu_free / MAX_SPEC_CPU) * (shape.cpu / MAX_SPEC_CPU)
        gpu_term = (gpu_free / MAX_SPEC_GPU) * (shape.total_milli / MAX_SPEC_GPU)
        return MAX_NODE_SCORE * (1 - (cpu_term + gpu_term) / 2)


class GpuClusteringScore(_GpuKindScore):
    name: ClassVar[str] = GPU_CLUSTERING

    def values(self, shape: GpuShape, rows: Rows | int) -> Num:
        if not shape.count:  # CPU pods: 0
            return 0 if isinstance(rows, int) else np.zeros(len(rows), dtype=np.int64)
        kind = self.ledger.kind_of(shape)
        if isinstance(rows, int):
            held: list[int] = self.ledger.kind_counts(rows).tolist()
            # a pod asking more GPUs than any node has is a kind no node holds (it has no count)
            same: Num = kind < len(held) and held[kind] > 0
            kinds: Num = len(held) - held.count(0)
        else:
            counts = self.ledger.kind_counts(rows)  # [K, kinds]
            same = counts[:, kind] > 0 if kind < counts.shape[1] else np.zeros(len(rows), dtype=np.bool_)
            kinds = np.count_nonzero(counts, axis=1)
        return self.rule(same, kinds, self.ledger.free_milli_of(rows))

    @staticmethod
    def rule(same: Num, kinds: Num, free: Num) -> Num:
        """Bands 3 (only the pod's kind), 2 (its kind among others), 1 (empty), 0 (other kinds), in integer
        arithmetic (``np.select``'s fixed cost, ~15 µs, is most of a call over a cycle's few stale rows);
        a node holding the pod's kind is never empty, so the empty band needs no ``not same``."""
        band = same * (2 + (kinds == 1)) + (kinds == 0)
        quarter = MAX_NODE_SCORE // 4
        return quarter * (MAX_SPEC_GPU - free) // MAX_SPEC_GPU + quarter * band


class GpuPackingScore(_GpuKindScore):
    name: ClassVar[str] = GPU_PACKING

    def values(self, shape: GpuShape, rows: Rows | int) -> Num:
        if not shape.count:  # CPU pods: 0
            return 0 if isinstance(rows, int) else np.zeros(len(rows), dtype=np.int64)
        lg = self.ledger
        if isinstance(rows, int):
            full_free: Num = lg.sorted_left(rows).tolist().count(MILLI)
            used = lg.sub_taken_one(rows, shape)  # the GPUs the pod would use (the simulator's ``Sub``)
            full_used: Num = used.count(MILLI)
            free_pct: Num = sum(v * 100 // MILLI for v in used)
            return self.rule(full_free, int(lg.gpu_count[rows]), full_used, free_pct)
        left, chosen = lg.sub_taken(rows, shape)
        full = left == MILLI
        full_free, full_used = full.sum(axis=1), (chosen & full).sum(axis=1)
        free_pct = np.where(chosen, left * 100 // MILLI, 0).sum(axis=1)
        return self.rule(full_free, lg.gpu_count[rows], full_used, free_pct)

    @staticmethod
    def rule(full_free: Num, count: Num, full_used: Num, free_pct: Num) -> Num:
        idle_node = _maximum(MAX_NODE_SCORE // 3 - full_free, full_free)
        new_gpus = _maximum(MAX_NODE_SCORE // 2 - full_used, MAX_NODE_SCORE // 3)
        shared = _maximum(MAX_NODE_SCORE - free_pct // 10, MAX_NODE_SCORE // 2)
        return _where(full_free == count, idle_node, _where(full_used > 0, new_gpus, shared))


class BestFitScore(_LedgerScore):
    name: ClassVar[str] = BEST_FIT

    def values(self, shape: GpuShape, rows: Rows | int) -> Num:
        return self.rule(shape, self.ledger.cpu_left_of(rows), self.ledger.free_milli_of(rows))

    @staticmethod
    def rule(shape: GpuShape, cpu_free: Num, gpu_free: Num) -> Num:
        cpu_waste = (cpu_free - shape.cpu) / MAX_SPEC_CPU
        gpu_waste = (gpu_free - shape.total_milli) / MAX_SPEC_GPU
        return (1.0 - (cpu_waste * 0.5 + gpu_waste * 0.5)) * MAX_NODE_SCORE

    def normalize(self, state: CycleState, pod: Pod, scores: Scores) -> Scores:
        """The simulator's ``NormalizeScore``: min–max to [0, 100] (all 0 when every score is equal)."""
        if not scores.size:
            return scores
        low, high = int(np.minimum.reduce(scores)), int(np.maximum.reduce(scores))
        if high == low:
            return np.zeros_like(scores)
        out: Scores = scores - low
        out *= MAX_NODE_SCORE
        out //= high - low
        return out


def _maximum(a: Num, b: Num) -> Num:
    return np.maximum(a, b) if isinstance(a, np.ndarray) else max(a, b)


def _where(cond: Num, a: Num, b: Num) -> Num:
    return np.where(cond, a, b) if isinstance(cond, np.ndarray) else (a if cond else b)
