"""NodeResourcesBalancedAllocation: prefer nodes whose CPU and memory would be used in equal fractions.

Mirrors kube-scheduler 1.34 ``noderesources/balanced_allocation.go``: the balance is (1 − std of the
requested/allocatable fractions) × 100, using plain (not non-zero-defaulted) requests, fractions capped
at 1; a best-effort pod (no CPU or memory request) is skipped in PreScore, as upstream does.
Worked example: a node at 50% CPU and 10% memory after placement has balance (1 − |0.5 − 0.1| / 2) × 100 = 80.
Up to 1.35 that balance is the score; from 1.36 (kubernetes PR #135573, ``Behaviour.balance_change``) the score
is the change the pod makes, 50 + (50 + balance with the pod − balance without it) / 2: the node above, at
40% CPU and 10% memory before (balance 85), scores 50 + (50 + 80 − 85) // 2 = 72.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kubegpu.model.objects import Pod
from kubegpu.scheduler import resource_allocation as ra
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.framework import CycleState, Handle, Rows, Scores
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.status import SKIP, SUCCESS, Status


class BalancedAllocation:
    name: ClassVar[str] = names.BALANCED_ALLOCATION

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        specs = args.get("resources") or [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
        self.resources = tuple(ra.ResourceSpec(s["name"], int(s.get("weight", 1))) for s in specs)
        self._change = handle.behaviour.balance_change

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Status:
        if all(pod.requests.get(r.name, 0) == 0 for r in self.resources):
            return SKIP
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeView) -> int:
        if not self._change:
            alloc, req = ra.node_allocatable_and_requested(
                pod, node.cluster, node.idx, self.resources, use_requested=True
            )
            return ra.balanced_one(req, alloc)
        alloc, req, before = ra.node_allocatable_requested_and_allocated(
            pod, node.cluster, node.idx, self.resources, use_requested=True
        )
        return ra.balance_change(ra.balanced_one(req, alloc), ra.balanced_one(before, alloc))

    def score_batch(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Scores:
        if not self._change:
            alloc, req = ra.allocatable_and_requested(pod, cluster, rows, self.resources, use_requested=True)
            return ra.balanced(req, alloc)
        alloc, req, before = ra.allocatable_requested_and_allocated(
            pod, cluster, rows, self.resources, use_requested=True
        )
        return ra.balance_change(ra.balanced(req, alloc), ra.balanced(before, alloc))
