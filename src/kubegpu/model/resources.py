"""Resource names and resource lists as integer milli-units (R4.1, R11.2, R11.4).

A ``ResourceList`` maps the exact resource name (``nvidia.com/gpu``, ``nvidia.com/mig-1g.18gb``) to
milli-units. Helpers here are the only arithmetic on resource lists, so the sidecar/init-container
rule, quota sums and node accounting all add the same way.
"""

from __future__ import annotations

from kubegpu.model.names import GPU_MILLI as GPU_MILLI
from kubegpu.model.names import NVIDIA_GPU as NVIDIA_GPU
from kubegpu.model.names import OTHER_GPU_RESOURCES
from kubegpu.model.quantity import WHOLE_MAX, saturate

ResourceList = dict[str, int]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

NATIVE = frozenset({CPU, MEMORY, EPHEMERAL_STORAGE, PODS, "storage"})


def add(a: ResourceList, b: ResourceList) -> ResourceList:
    """``a + b`` per resource, each sum saturated at its column's bound (``quantity.saturate``): the API
    server stores amounts far beyond int64 milli-units (memory 8Ei), and a sum must not leave the column."""
    out = dict(a)
    for name, amount in b.items():
        total = out.get(name, 0) + amount
        out[name] = total if -WHOLE_MAX < total < WHOLE_MAX else saturate(name, total)
    return out


def maximum(a: ResourceList, b: ResourceList) -> ResourceList:
    out = dict(a)
    for name, amount in b.items():
        if amount > out.get(name, 0):
            out[name] = amount
    return out


def is_extended(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: a domain-prefixed name outside ``kubernetes.io/`` and not ``requests.``."""
    if name.startswith("requests.") or "/" not in name:
        return False
    domain = name.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


def is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def is_pod_level_resource(name: str) -> bool:
    """``resourcehelper.IsSupportedPodLevelResource`` (component-helpers resource/helpers.go, 1.32+): the
    names ``spec.resources`` may carry: cpu, memory and ``hugepages-*``."""
    return name in (CPU, MEMORY) or is_hugepages(name)


def is_scalar(name: str) -> bool:
    """``schedutil.IsScalarResourceName``: extended, hugepages, prefixed native or attachable volumes."""
    return (
        is_extended(name)
        or is_hugepages(name)
        or name.startswith("kubernetes.io/")
        or name.startswith("attachable-volumes-")
    )


def is_gpu(name: str) -> bool:
    """NVIDIA device-plugin resources: whole, renamed shared (``.shared``) and MIG (``mig-*``) GPUs."""
    return name.startswith(("nvidia.com/gpu", "nvidia.com/mig-"))


def other_vendor_gpu(name: str) -> str:
    """Whose device plugin registers ``name`` where it is another vendor's GPU (``names.OTHER_GPU_RESOURCES``),
    else "": kubegpu does not model such a GPU, and never counts it as an NVIDIA one (``is_gpu``)."""
    for known, plugin in OTHER_GPU_RESOURCES.items():
        if name == known or (known.endswith("/") and name.startswith(known)):
            return plugin
    return ""


def unmodelled_gpu_lines(requests: ResourceList) -> list[str]:
    """The line a pod requesting other vendors' GPUs gets in its explanation, one per vendor's plugin."""
    by_plugin: dict[str, list[str]] = {}
    for name in sorted(r for r, v in requests.items() if v):
        plugin = other_vendor_gpu(name)
        if plugin:
            by_plugin.setdefault(plugin, []).append(name)
    return [
        f"the pod requests {', '.join(names)}, registered by {plugin}: kubegpu models NVIDIA GPUs only, so it "
        "checks such a resource as a plain extended resource (kube-scheduler's NodeResourcesFit count) and not "
        "that plugin, its nodes or its devices"
        for plugin, names in by_plugin.items()
    ]


def gpu_requests(resources: ResourceList) -> ResourceList:
    return {k: v for k, v in resources.items() if is_gpu(k) and v}
