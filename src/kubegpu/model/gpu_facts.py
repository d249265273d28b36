"""GPU facts read off pods and nodes that several layers share (R5.1, R5.3, R17.4): whether a pod
tolerates the GPU taint. The taint key, GFD label keys and the default pool label are defined in
``kubegpu.model.names`` and re-exported here for the modules that import them from this one."""

from __future__ import annotations

from kubegpu.model.names import DEFAULT_POOL_LABEL as DEFAULT_POOL_LABEL
from kubegpu.model.names import GPU_COUNT_LABEL as GPU_COUNT_LABEL
from kubegpu.model.names import GPU_PRESENT_LABEL as GPU_PRESENT_LABEL
from kubegpu.model.names import GPU_PRODUCT_LABEL as GPU_PRODUCT_LABEL
from kubegpu.model.names import GPU_TAINT_KEY as GPU_TAINT_KEY
from kubegpu.model.objects import Pod


def tolerates_gpu_taint(pod: Pod) -> bool:
    """Does any toleration cover the GPU-node taint key (or every key)?"""
    return any(t.key == GPU_TAINT_KEY or (not t.key and t.operator == "Exists") for t in pod.tolerations)
