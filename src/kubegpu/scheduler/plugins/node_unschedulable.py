"""NodeUnschedulable: a cordoned node (``spec.unschedulable``) takes only pods that tolerate
``node.kubernetes.io/unschedulable:NoSchedule`` (R14.4, R15.3: cordon moves nothing, it only stops new pods).

Mirrors kube-scheduler 1.34 ``plugins/nodeunschedulable``; rejection is UnschedulableAndUnresolvable.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, ClassVar, Final

import numpy as np

from kubegpu.model.objects import Pod, Taint
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.framework import Codes, CycleState, Handle, ReasonIds, Rows
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.reasons import Cordoned
from kubegpu.scheduler.status import SUCCESS, Code, Status, unresolvable

REASON: Final = Cordoned()
UNSCHEDULABLE_TAINT: Final = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


class NodeUnschedulable:
    name: ClassVar[str] = names.NODE_UNSCHEDULABLE
    sign_from_spec: ClassVar[bool] = True  # ``sign`` reads the pod's spec only (Framework.signed_prefix)
    # its Filter reads the node object alone, never the pods on it (upstream registers only Node events)
    filter_reads_pods: ClassVar[bool] = False
    filter_errors: ClassVar[bool] = False

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._reason_id = handle.reasons.intern((REASON,))

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        if node.node.unschedulable and not pod.tolerates(UNSCHEDULABLE_TAINT):
            return unresolvable(REASON)
        return SUCCESS

    def sign(self, pod: Pod) -> Hashable:
        return pod.tolerates(UNSCHEDULABLE_TAINT)

    def filter_batch(
        self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows
    ) -> tuple[Codes, ReasonIds]:
        bad = cluster.unschedulable[rows] & (not pod.tolerates(UNSCHEDULABLE_TAINT))
        return (bad * np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)).astype(np.int8), (
            bad * self._reason_id
        ).astype(np.int32)
