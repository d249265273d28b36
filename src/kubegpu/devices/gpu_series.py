"""kubegpu's own per-GPU and per-container series (name, HELP) that the node exporter publishes.

The names live here, below both the exporter (which writes them) and ``kubegpu.explain.device_metrics``
(which queries Prometheus for them), so explaining a Pending pod reads the names without loading the
exporter's gRPC, ``prometheus_client`` and NVML imports.

Must not: import anything; these are plain strings.
"""

POD_MEMORY = (
    "kubegpu_pod_gpu_memory_used_bytes",
    "GPU memory used by a container's processes (NVML per-process used memory, summed per container; bytes).",
)
POD_SM = (
    "kubegpu_pod_gpu_sm_utilization_percent",
    "Percent of one NVML sample period (1/6 s to 1 s, by GPU) in which a kernel of the container's process"
    " ran on this GPU: each process's newest nvmlDeviceGetProcessUtilization sample of the last 5 s, summed"
    " per container; absent when NVML has no such sample.",
)
UNATTRIBUTED_MEMORY = (
    "kubegpu_gpu_unattributed_memory_used_bytes",
    "GPU memory used by processes that no pod on this node owns (bytes).",
)
ALLOCATED = (
    "kubegpu_gpu_allocated_containers",
    "Containers kubelet assigned this device to (Pod Resources API); above 1 on a time-sliced GPU.",
)
PROCESSES = ("kubegpu_gpu_processes", "Compute processes NVML lists on this GPU.")
SINCE_PROCESS = (
    "kubegpu_gpu_seconds_since_process",
    "Seconds since a compute process was last seen on this GPU (counted from the exporter's start).",
)
PRESSURE = (
    "kubegpu_gpu_memory_pressure_ratio",
    "On a GPU held by several containers: memory of all its processes divided by the card's memory.",
)
HEALTHY = (
    "kubegpu_gpu_healthy",
    "1 when the device is Healthy for the device plugin (no critical XID seen), else 0.",
)
SOURCE_UP = ("kubegpu_exporter_source_up", "1 when the exporter's last read of this input succeeded, else 0.")
