"""FGD: Fragmentation Gradient Descent (Weng et al., USENIX ATC '23), a Score plugin over the GpuShare ledger.

For each feasible node the plugin computes the node's fragment amount over the target workload now and
after placing the pod (``gpu_share.fgd_node_scores``, from the ledger's kept counts), and scores the decrease Δ (milli-GPU) as
``int64(sigmoid(Δ / 1000) · 100)`` — the simulator's ``FGDScore``: the node whose fragmentation grows
least (or shrinks most) wins. A sharing pod (one GPU, < 1000 milli) is tried on every GPU of the node
that fits and the node scores its best GPU (lowest index on ties); GpuShare's Reserve with selection
``fgd`` then puts the pod on that GPU. Whole-GPU and CPU-only pods change the node as the simulator's
``NodeResource.Sub`` does (GPUs with the least sufficient free milli first).

Worked example: a 2-GPU node with free [1000, 500] and a target workload of one shape {1 GPU × 500
milli}: fragment 0 (both GPUs fit the shape). A 500-milli pod on GPU 0 leaves [500, 500], fragment 0,
Δ = 0, score 50; on GPU 1 it leaves [1000, 0], fragment 0, score 50 too, so GPU 0 (lowest index) is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

import numpy as np

from kubegpu.model.objects import Pod
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.framework import CycleState, Handle, Rows, Scores
from kubegpu.scheduler.gpu_shapes import GpuShape, pod_shape
from kubegpu.scheduler.gpu_share import fgd_node_scores, sharing_ledger
from kubegpu.scheduler.node_cache import GROUP_FROM, NodeCache, once_per_kind
from kubegpu.scheduler.plugin_calls import score_one
from kubegpu.scheduler.status import SUCCESS, Status

FGD: Final = "FGD"


class FragmentationGradientDescent:
    name: ClassVar[str] = FGD

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.ledger = sharing_ledger(FGD, handle)
        self.ledger._typical()  # fails at construction, not mid-run, when no target workload is set
        self._cache = NodeCache(self.ledger.cluster, np.int64)

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Status:
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeView) -> int:
        return score_one(self, state, pod, node)

    def score_batch(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Scores:
        """The rows' scores, cached per pod shape and node (``node_cache``): a node's score is element-wise
        arithmetic on that node's state and exact integer sums, so it is the same whichever rows are
        computed with it, and only nodes changed since the shape was last scored are recomputed."""
        shape = pod_shape(pod)
        key = (shape.cpu, shape.count, shape.milli)  # FGD's measure does not read memory
        out: Scores = self._cache.values(key, rows, lambda stale: self.node_scores(shape, stale))
        return out

    def node_scores(self, shape: GpuShape, rows: Rows) -> Scores:
        """``fgd_node_scores``; of many rows, the still empty ones once per ``GpuShareLedger.empty_kind``
        (a node's score reads its GPU model, free CPU and free milli per GPU alone; a shape first met in a
        run is scored on every feasible node, on the openb traces mostly empty ones)."""
        lg = self.ledger
        if len(rows) < GROUP_FROM:
            return fgd_node_scores(lg, rows, shape)
        return once_per_kind(
            rows, lg.untouched(rows), lg.empty_kind, lambda some: fgd_node_scores(lg, some, shape)
        )
