"""NodeResourcesBalancedAllocation: prefer nodes whose CPU and memory would be used in equal fractions.

Mirrors kube-scheduler 1.34 ``noderesources/balanced_allocation.go``: score = (1 − std of the
requested/allocatable fractions) × 100, using plain (not non-zero-defaulted) requests, fractions capped
at 1; a best-effort pod (no CPU or memory request) is skipped in PreScore, as upstream does.
Worked example: a node at 50% CPU and 10% memory after placement scores (1 − |0.5 − 0.1| / 2) × 100 = 80.
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

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Status:
        if all(pod.requests.get(r.name, 0) == 0 for r in self.resources):
            return SKIP
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeView) -> int:
        alloc, req = ra.node_allocatable_and_requested(
            pod, node.cluster, node.idx, self.resources, use_requested=True
        )
        return ra.balanced_one(req, alloc)

    def score_batch(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Scores:
        alloc, req = ra.allocatable_and_requested(pod, cluster, rows, self.resources, use_requested=True)
        return ra.balanced(req, alloc)
