"""A trace replayed onto a cluster snapshot (e.g. ``--kube``): the nodes it would meet there now.

(The replay's input types, pods, node events and batch objects, are ``sim.replay_inputs``.)

``kubegpu simulate --kube`` replays an openb trace onto the free capacity of a live cluster instead of
the trace's own node list: per schedulable node, allocatable minus what the pods bound to it request
(whole GPUs of ``nvidia.com/gpu``; MIG and shared resources are not modelled by the replay), shaped as
the replay's nodes are (``kubegpu.io/gpu-milli`` = free GPUs × 1000, ``nvidia.com/gpu.product`` kept).
Cordoned nodes take no new pods and are left out; taints are dropped (the trace's pods are taken to
tolerate the cluster's GPU taint, as the mutating webhook makes GPU pods do). The trace's GPU-model
constraints name Alibaba's models, which a live cluster does not have, so ``without_gpu_models`` drops
them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from kubegpu.model.gpu_facts import GPU_PRODUCT_LABEL
from kubegpu.model.names import HOSTNAME_LABEL
from kubegpu.model.objects import Node
from kubegpu.model.resources import CPU, MEMORY, NVIDIA_GPU, PODS
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.gpu_shapes import GPU_MILLI_RESOURCE, MILLI
from kubegpu.sim.openb import TracePod


def free_capacity_nodes(snapshot: ClusterSnapshot) -> list[Node]:
    """The snapshot's schedulable nodes with only their free capacity, in the replay's node shape."""
    used: dict[str, dict[str, int]] = {}
    for pod in snapshot.pods:
        if pod.node_name and not pod.is_terminal:
            held = used.setdefault(pod.node_name, {PODS: 0})
            held[PODS] += MILLI
            for resource, amount in pod.requests.items():
                held[resource] = held.get(resource, 0) + amount
    nodes = []
    for node in snapshot.nodes:
        if node.unschedulable:
            continue
        held = used.get(node.name, {})

        def free(resource: str, node: Node = node, held: dict[str, int] = held) -> int:
            return max(node.allocatable.get(resource, 0) - held.get(resource, 0), 0)

        gpus = free(NVIDIA_GPU) // MILLI
        allocatable = {
            CPU: free(CPU),
            MEMORY: free(MEMORY),
            PODS: free(PODS),
            NVIDIA_GPU: gpus * MILLI,
            GPU_MILLI_RESOURCE: gpus * MILLI * MILLI,
        }
        labels = {HOSTNAME_LABEL: node.name}
        if gpus:
            labels["nvidia.com/gpu.count"] = str(gpus)
            if GPU_PRODUCT_LABEL in node.labels:
                labels[GPU_PRODUCT_LABEL] = node.labels[GPU_PRODUCT_LABEL]
        nodes.append(
            Node(
                name=node.name,
                labels=labels,
                capacity=dict(allocatable),
                allocatable=allocatable,
                source=node.source,
            )
        )
    return nodes


def without_gpu_models(trace: Sequence[TracePod]) -> list[TracePod]:
    return [dataclasses.replace(p, gpu_spec=None) for p in trace]
