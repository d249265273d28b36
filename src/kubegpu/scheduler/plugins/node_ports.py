"""NodePorts: a pod's ``hostPort`` must not collide with one already used on the node.

Mirrors kube-scheduler 1.34 ``plugins/nodeports``: same port and protocol on an overlapping host IP
(``0.0.0.0`` overlaps everything). Rejection is Unschedulable: evicting the holder frees the port.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, ClassVar, Final

from kubegpu.model.objects import Pod
from kubegpu.scheduler.cluster import NodeView
from kubegpu.scheduler.framework import CycleState, Handle
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.reasons import HostPortConflict
from kubegpu.scheduler.status import SKIP, SUCCESS, Status, unschedulable

REASON: Final = HostPortConflict()


class NodePorts:
    name: ClassVar[str] = names.NODE_PORTS
    sign_from_spec: ClassVar[bool] = True  # ``sign`` reads the pod's spec only (Framework.signed_prefix)
    pre_filter_from_spec: ClassVar[bool] = True  # (Framework.run_pre_filter: kept per pod)
    filter_errors: ClassVar[bool] = False  # (``Framework.filter_rows``: no ERROR to look for)

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        pass

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: object
    ) -> tuple[frozenset[str] | None, Status]:
        return None, SUCCESS if pod.host_ports else SKIP

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        used = node.host_ports
        if any(want.conflicts(have) for want in pod.host_ports for have in used):
            return unschedulable(REASON)
        return SUCCESS

    def sign(self, pod: Pod) -> Hashable:
        return pod.host_ports
