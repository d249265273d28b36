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
from kubegpu.scheduler.framework import MAX_NODE_SCORE, CycleState, Handle, Rows, Scores, score_one
from kubegpu.scheduler.gpu_ledger import (
    MAX_SPEC_CPU,
    MAX_SPEC_GPU,
    MILLI,
    GpuShape,
    GpuShareLedger,
    pod_shape,
)
from kubegpu.scheduler.gpu_share import sharing_ledger
from kubegpu.scheduler.node_cache import NodeCache
from kubegpu.scheduler.status import SUCCESS, Status

RANDOM: Final = "RandomScore"
DOT_PRODUCT: Final = "DotProductScore"
GPU_CLUSTERING: Final = "GpuClusteringScore"
GPU_PACKING: Final = "GpuPackingScore"
BEST_FIT: Final = "BestFitScore"


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
        out: Scores = self._cache.values(shape, rows, lambda stale: self.node_scores(shape, stale))
        return out

    def node_scores(self, shape: GpuShape, rows: Rows) -> Scores:
        """The policy's score of each of ``rows`` for a pod of ``shape``, from the rows' current state."""
        raise NotImplementedError


class RandomScore(_LedgerScore):
    name: ClassVar[str] = RANDOM

    def score_batch(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Scores:
        out = np.zeros(len(rows), dtype=np.int64)
        out[self.handle.rng.integers(len(rows))] = MAX_NODE_SCORE
        return out


class DotProductScore(_LedgerScore):
    name: ClassVar[str] = DOT_PRODUCT

    def node_scores(self, shape: GpuShape, rows: Rows) -> Scores:
        gpu_free = self.ledger.gpu_left[rows].sum(axis=1)
        cpu_free = self.ledger.cpu_left(rows)
        cpu_term = (cpu_free / MAX_SPEC_CPU) * (shape.cpu / MAX_SPEC_CPU)
        gpu_term = (gpu_free / MAX_SPEC_GPU) * (shape.total_milli / MAX_SPEC_GPU)
        scores: Scores = np.trunc(MAX_NODE_SCORE * (1 - (cpu_term + gpu_term) / 2)).astype(np.int64)
        return scores


class GpuClusteringScore(_LedgerScore):
    name: ClassVar[str] = GPU_CLUSTERING

    def node_scores(self, shape: GpuShape, rows: Rows) -> Scores:
        if not shape.count:
            return np.zeros(len(rows), dtype=np.int64)
        counts = self.ledger.kind_counts(rows)  # [K, kinds]
        kind = self.ledger.kind_of(shape)
        # a pod asking more GPUs than any node has is a kind no node holds (its column would not exist)
        same = counts[:, kind] > 0 if kind < counts.shape[1] else np.zeros(len(rows), dtype=np.bool_)
        kinds = np.count_nonzero(counts, axis=1)
        # bands 3 (only the pod's kind), 2 (its kind among others), 1 (empty), 0 (other kinds), in integer
        # arithmetic: ``np.select``'s fixed cost (~15 µs) is most of a call over a cycle's few stale rows
        band = same * (2 + (kinds == 1)) + (~same & (kinds == 0))
        free = self.ledger.gpu_left[rows].sum(axis=1)
        quarter = MAX_NODE_SCORE // 4
        scores: Scores = quarter * (MAX_SPEC_GPU - free) // MAX_SPEC_GPU + quarter * band
        return scores


class GpuPackingScore(_LedgerScore):
    name: ClassVar[str] = GPU_PACKING

    def node_scores(self, shape: GpuShape, rows: Rows) -> Scores:
        if not shape.count:
            return np.zeros(len(rows), dtype=np.int64)
        left = self.ledger.gpu_left[rows]
        count = self.ledger.gpu_count[rows]
        full_free = (left == MILLI).sum(axis=1)
        # GPUs the pod would use: least free first, among those with enough free (padding never fits)
        ordered = np.sort(left, axis=1)
        ok = ordered >= shape.milli
        used = ok & (np.cumsum(ok, axis=1) <= shape.count)
        full_used = (used & (ordered == MILLI)).sum(axis=1)
        free_pct = np.where(used, ordered * 100 // MILLI, 0).sum(axis=1)
        idle_node = np.maximum(MAX_NODE_SCORE // 3 - full_free, full_free)
        new_gpus = np.maximum(MAX_NODE_SCORE // 2 - full_used, MAX_NODE_SCORE // 3)
        shared = np.maximum(MAX_NODE_SCORE - free_pct // 10, MAX_NODE_SCORE // 2)
        out: Scores = np.where(full_free == count, idle_node, np.where(full_used > 0, new_gpus, shared))
        return out


class BestFitScore(_LedgerScore):
    name: ClassVar[str] = BEST_FIT

    def node_scores(self, shape: GpuShape, rows: Rows) -> Scores:
        gpu_free = self.ledger.gpu_left[rows].sum(axis=1)
        cpu_free = self.ledger.cpu_left(rows)
        cpu_waste = (cpu_free - shape.cpu) / MAX_SPEC_CPU
        gpu_waste = (gpu_free - shape.total_milli) / MAX_SPEC_GPU
        scores: Scores = np.trunc((1.0 - (cpu_waste * 0.5 + gpu_waste * 0.5)) * MAX_NODE_SCORE).astype(
            np.int64
        )
        return scores

    def normalize(self, state: CycleState, pod: Pod, scores: Scores) -> Scores:
        """The simulator's ``NormalizeScore``: min–max to [0, 100] (all 0 when every score is equal)."""
        if not scores.size:
            return scores
        low, high = int(scores.min()), int(scores.max())
        if high == low:
            return np.zeros_like(scores)
        out: Scores = (scores - low) * MAX_NODE_SCORE // (high - low)
        return out
