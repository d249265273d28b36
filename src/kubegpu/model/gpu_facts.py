"""GPU facts read off pods and nodes that several layers share (R5.1, R5.3, R17.4): the GPU taint key,
GFD label keys, the pool labels (configured, then the providers' own), and whether a pod tolerates the GPU taint."""

from __future__ import annotations

from collections.abc import Mapping

from kubegpu.model.objects import Pod

GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
# the seed's example of a platform-maintained hardware-pool label
DEFAULT_POOL_LABEL = "accelerator.example.com/pool"
# The node-pool labels real providers set, in the order they are tried when the configured label is
# absent: Karpenter (karpenter.sh/nodepool), GKE (cloud.google.com/gke-nodepool), EKS managed node groups
# (eks.amazonaws.com/nodegroup), AKS (kubernetes.azure.com/agentpool); the instance type last, as a
# stand-in that at least groups identical machines.
POOL_LABELS = (
    "karpenter.sh/nodepool",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "kubernetes.azure.com/agentpool",
    "node.kubernetes.io/instance-type",
)


def node_pool(labels: Mapping[str, str], configured: str = DEFAULT_POOL_LABEL) -> str:
    """The node's pool: the configured label's value, else the first well-known pool label it carries."""
    value = labels.get(configured)
    if value:
        return value
    return next((labels[k] for k in POOL_LABELS if labels.get(k)), "")


def tolerates_gpu_taint(pod: Pod) -> bool:
    """Does any toleration cover the GPU-node taint key (or every key)?"""
    return any(t.key == GPU_TAINT_KEY or (not t.key and t.operator == "Exists") for t in pod.tolerations)
