"""GpuDeviceFit (kubegpu): place a pod only where its GPU devices can really be assigned (R3.2, R6, R9, R10.2).

kube-scheduler counts ``nvidia.com/gpu``; kubelet and the device plugin then pick device IDs, and can
still refuse the pod (``UnexpectedAdmissionError`` from the plugin, ``TopologyAffinityError`` from the
Topology Manager). This plugin runs the device choice of ``scheduler.device_ledger.choose`` at Filter
time so those pods never land there, and records the chosen IDs at Reserve so the pod and ``explain``
know which GPUs it gets. Arg ``replicaPolicy``: ``spread`` (default, the NVIDIA plugin's distributed
policy) or ``pack`` time-sliced replicas across physical GPUs. Rejections are kubegpu's own reasons, e.g.
``node(s) time-slice nvidia.com/gpu with failRequestsGreaterThanOne`` (unresolvable) or
``node(s) could not align nvidia.com/gpu on one NUMA node (topology manager single-numa-node)``.

It belongs to the ``kubegpu`` profile, after NodeResourcesFit. On nodes where whole GPUs and no NUMA
policy make the device choice equal to the count (``NodeDevices.simple``) it leaves the decision to
NodeResourcesFit and answers without a device search.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from kubegpu.errors import ConfigError
from kubegpu.model.objects import Pod
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.device_ledger import REPLICA_POLICIES, choose, container_requests
from kubegpu.scheduler.framework import (
    ALLOCATION_KEY,
    Codes,
    CycleState,
    Handle,
    ReasonIds,
    Rows,
    filter_each,
)
from kubegpu.scheduler.node_cache import NodeCache
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.status import SKIP, SUCCESS, Code, Status


class GpuDeviceFit:
    name: ClassVar[str] = names.GPU_DEVICE_FIT
    sign_from_spec: ClassVar[bool] = True  # ``sign`` reads the pod's spec only (Framework.signed_prefix)

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._reasons = handle.reasons
        # a node's verdict per pod GPU request (``sign``), kept until the node changes: pods that differ in
        # anything else (CPU, memory, selectors: each its own class) share the device search
        self._verdicts: NodeCache[np.int32] | None = None
        self.replica_policy = str(args.get("replicaPolicy", "spread"))
        if self.replica_policy not in REPLICA_POLICIES:
            raise ConfigError(
                f"GpuDeviceFit: replicaPolicy must be one of {REPLICA_POLICIES}, got {self.replica_policy!r}"
            )

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: object
    ) -> tuple[frozenset[str] | None, Status]:
        return None, SUCCESS if container_requests(pod) else SKIP

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        model = node.cluster.devices.models[node.idx]
        if model is None or model.simple:
            return SUCCESS  # whole GPUs, no NUMA policy: the count NodeResourcesFit checks is the whole story
        _, refusal = choose(pod, model, node.cluster.devices.taken(node.idx), self.replica_policy)
        if refusal is None:
            return SUCCESS
        return Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE if refusal.unresolvable else Code.UNSCHEDULABLE,
            (refusal.reason,),
        )

    def sign(self, pod: Pod) -> Hashable:
        return tuple((c, tuple(sorted(r.items()))) for c, r in container_requests(pod))

    def filter_batch(
        self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows
    ) -> tuple[Codes, ReasonIds]:
        codes = np.zeros(len(rows), dtype=np.int8)
        reason_ids = np.zeros(len(rows), dtype=np.int32)
        models = cluster.devices.models
        # only nodes where devices can differ from counts need the device search
        hard = np.array([(m := models[int(i)]) is not None and not m.simple for i in rows], dtype=bool)
        if hard.any():
            # ``filter`` reads the pod's container requests (its sign), the node's device model and the devices
            # its pods hold, nothing else: a function of the node's state per sign (``node_cache``)
            if self._verdicts is None or self._verdicts.cluster is not cluster:
                self._verdicts = NodeCache(cluster, np.int32, width=2)

            def search(stale: Rows) -> npt.NDArray[np.int32]:
                c, r = filter_each(self, self._reasons, state, pod, cluster, stale)
                return np.stack((c.astype(np.int32), r.astype(np.int32)), axis=1)

            found = self._verdicts.values(self.sign(pod), rows[hard], search)  # (this plugin's one policy)
            codes[hard], reason_ids[hard] = found[:, 0], found[:, 1]
        return codes, reason_ids

    def reserve(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        model = node.cluster.devices.models[node.idx]
        if model is None or not container_requests(pod):
            return SUCCESS
        assignment, refusal = choose(pod, model, node.cluster.devices.taken(node.idx), self.replica_policy)
        if refusal is not None:
            return Status(Code.UNSCHEDULABLE, (refusal.reason,))
        state.write(ALLOCATION_KEY, assignment)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: Pod, node: NodeView) -> None:
        state.write(ALLOCATION_KEY, None)
