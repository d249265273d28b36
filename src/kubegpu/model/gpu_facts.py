"""GPU facts read off pods and nodes that several layers share (R5.1, R5.3, R17.4): the GPU taint key,
GFD label keys, the default pool label, and whether a pod tolerates the GPU taint."""

from __future__ import annotations

from kubegpu.model.objects import Pod

GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
# the seed's example of a platform-maintained hardware-pool label
DEFAULT_POOL_LABEL = "accelerator.example.com/pool"


def tolerates_gpu_taint(pod: Pod) -> bool:
    """Does any toleration cover the GPU-node taint key (or every key)?"""
    return any(t.key == GPU_TAINT_KEY or (not t.key and t.operator == "Exists") for t in pod.tolerations)
