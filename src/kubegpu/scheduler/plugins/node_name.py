"""NodeName: a pod that names ``spec.nodeName`` fits only that node.

Mirrors kube-scheduler 1.34 ``plugins/nodename``; rejection is UnschedulableAndUnresolvable.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, ClassVar

import numpy as np

from kubegpu.model.objects import Pod
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.framework import Codes, CycleState, Handle, ReasonIds, Rows
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.reasons import NodeNameMismatch
from kubegpu.scheduler.status import SUCCESS, Code, Status, unresolvable


class NodeName:
    name: ClassVar[str] = names.NODE_NAME
    sign_from_spec: ClassVar[bool] = True  # ``sign`` reads the pod's spec only (Framework.signed_prefix)
    # its Filter reads the node object alone, never the pods on it (upstream registers only Node events)
    filter_reads_pods: ClassVar[bool] = False
    filter_errors: ClassVar[bool] = False

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._reasons = handle.reasons

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        if not pod.node_name or pod.node_name == node.name:
            return SUCCESS
        return unresolvable(NodeNameMismatch(pod.node_name))

    def sign(self, pod: Pod) -> Hashable:
        return pod.node_name

    def filter_batch(
        self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows
    ) -> tuple[Codes, ReasonIds]:
        if not pod.node_name:
            return np.zeros(len(rows), dtype=np.int8), np.zeros(len(rows), dtype=np.int32)
        target = cluster.index.get(pod.node_name, -1)
        bad = rows != target
        reason_id = self._reasons.intern((NodeNameMismatch(pod.node_name),))
        return (bad * np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)).astype(np.int8), (bad * reason_id).astype(
            np.int32
        )
