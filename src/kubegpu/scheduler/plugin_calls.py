"""A batch plugin's one-node calls: its scalar ``filter`` and ``score`` as its batch method over the node's
one row, so that the scalar and the batch answers cannot disagree.

Owns no scheduling rule; imports numpy, ``model.objects`` and the scheduler's cluster state, framework
types and statuses.
"""

from __future__ import annotations

import numpy as np

from kubegpu.model.objects import Pod
from kubegpu.scheduler.cluster import NodeView
from kubegpu.scheduler.framework import BatchFilterPlugin, BatchScorePlugin, CycleState, ReasonTable, Rows
from kubegpu.scheduler.status import SUCCESS, Code, Status


def one_row(node: NodeView) -> Rows:
    return np.array([node.idx], dtype=np.intp)


def filter_one(
    plugin: BatchFilterPlugin, reasons: ReasonTable, state: CycleState, pod: Pod, node: NodeView
) -> Status:
    """A batch plugin's scalar ``filter``: its ``filter_batch`` over the node's one row (the reverse of
    ``filter_each``), so the two cannot disagree."""
    codes, ids = plugin.filter_batch(state, pod, node.cluster, one_row(node))
    return SUCCESS if codes[0] == 0 else Status(Code(int(codes[0])), reasons.reasons(int(ids[0])))


def score_one(plugin: BatchScorePlugin, state: CycleState, pod: Pod, node: NodeView) -> int:
    """A batch plugin's scalar ``score``: its ``score_batch`` over the node's one row."""
    return int(plugin.score_batch(state, pod, node.cluster, one_row(node))[0])
