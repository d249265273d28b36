"""The one rule for "is this a GPU pod": what ``diagnose`` explains, ``inspect`` counts as a waiting GPU pod
and the cluster exporter reports as a Pending GPU pod.

A pod is a GPU pod when it asks for any ``nvidia.com/*`` resource (a misspelt one too: it is often the
point) or another vendor's GPU resource (``resources.other_vendor_gpu``: explained, with the line that kubegpu
does not model it, rather than counted among the pods without GPUs), tolerates an ``nvidia.com/*`` taint, asks
another scheduler's GPU (Volcano vGPU, a KAI share: ``gpu_facts.wants_gpu_elsewhere``), or names a DRA
claim for a device of a GPU driver (``names.GPU_DRA_DRIVERS``: NVIDIA's, AMD's, Intel's, the DRA example
driver's). A claim is a GPU claim when its allocation's results name such a driver, or, unallocated, when
one of its requests (or its template's) asks for a DeviceClass (or adds a selector) whose CEL selector
names the driver as ``device.driver == "gpu.nvidia.com"`` — the form the drivers' own DeviceClasses use
(kubernetes-sigs/dra-driver-nvidia-gpu, deployments/helm DeviceClass ``gpu.nvidia.com``:
``device.driver == 'gpu.nvidia.com' && ...``; ROCm/k8s-gpu-dra-driver: ``device.driver == 'gpu.amd.com'``). A claim of another driver (a NIC, an
FPGA) does not make a GPU pod. A claim, template or class the snapshot lacks cannot be read: such a pod
counts as a GPU pod, so that ``diagnose`` explains it (it cannot schedule) instead of hiding it among the
pods that request no GPU.

Owns: that rule. May not import: faces, ``kubegpu.kube``.
"""

from __future__ import annotations

import re

from kubegpu.model.dra import DeviceRequest, DraObjects, ResourceClaim
from kubegpu.model.gpu_facts import asks_gpu, tolerates_gpu_taint, wants_gpu_elsewhere
from kubegpu.model.gpu_toleration import tolerates_without_gpu
from kubegpu.model.names import GPU_DRA_DRIVERS
from kubegpu.model.objects import Pod
from kubegpu.model.resources import other_vendor_gpu

# ``device.driver == "gpu.nvidia.com"`` (or another GPU driver) in either quote style and either operand order
_D = "(?:" + "|".join(re.escape(d) for d in GPU_DRA_DRIVERS) + ")"
_DRIVER_IS_GPU = re.compile(rf"""device\.driver\s*==\s*(['"]){_D}\1|(['"]){_D}\2\s*==\s*device\.driver""")


def is_gpu_pod(pod: Pod, dra: DraObjects | None = None) -> bool:
    """See the module docstring; without ``dra`` (no DRA objects read) only the pod's own fields count."""
    return (
        any(v and (r.startswith("nvidia.com/") or other_vendor_gpu(r)) for r, v in pod.requests.items())
        or any(t.key.startswith("nvidia.com/") for t in pod.tolerations)
        or wants_gpu_elsewhere(pod)
        or (dra is not None and claims_gpu(pod.key, dra))
    )


def asks_for_gpu(pod: Pod, dra: DraObjects) -> bool:
    """The pod is given a GPU some way: it asks one in its spec (``gpu_facts.asks_gpu``, the rule the admission
    lint reads too) or names a GPU claim. Tolerating the GPU taint without either is the toleration-without-GPU
    pitfall (``findings``, ``notes``)."""
    return asks_gpu(pod) or claims_gpu(pod.key, dra)


def idle_gpu_toleration(pod: Pod, dra: DraObjects, tolerates: bool | None = None) -> bool:
    """R17.4 (``gpu_toleration.tolerates_without_gpu``) for a parsed pod: it tolerates the GPU taint (``tolerates``,
    else ``gpu_facts.tolerates_gpu_taint``), ``asks_for_gpu`` is false, and it is neither a DaemonSet's pod nor in
    kube-system."""
    return tolerates_without_gpu(
        tolerates=tolerates_gpu_taint(pod) if tolerates is None else tolerates,
        given_gpu=asks_for_gpu(pod, dra),
        namespace=pod.namespace,
        daemonset=pod.owner is not None and pod.owner.kind == "DaemonSet",
    )


def claims_gpu(pod_key: str, dra: DraObjects) -> bool:
    """A claim the pod names is (or, unreadable, may be) for a device of a GPU driver."""
    pc = dra.pod_claims.get(pod_key)
    if pc is None:
        return False
    ns = pod_key.split("/", 1)[0]
    for ref in pc.refs:
        name = pc.claim_name(ref)
        claim = dra.claims.get(f"{ns}/{name}") if name else None
        if claim is not None:
            if gpu_claim(claim, dra):
                return True
            continue
        if ref.claim_name:
            return True  # the named claim is not in the snapshot: cannot tell, so not hidden
        template = dra.templates.get(f"{ns}/{ref.template_name}")
        if template is None or _requests_gpu(template.requests, dra):
            return True
    return False


def gpu_claim(claim: ResourceClaim, dra: DraObjects) -> bool:
    """The claim is for a device of a GPU driver: its allocation names one, or, not allocated, one of its
    requests asks for one (see the module docstring)."""
    if claim.allocated is not None:
        return any(d.driver in GPU_DRA_DRIVERS for d in claim.allocated)
    return _requests_gpu(claim.requests, dra)


def gpu_class(name: str, dra: DraObjects) -> bool:
    """The DeviceClass selects a GPU driver's devices, or is not in the snapshot (it may: counted as one)."""
    cls = dra.classes.get(name)
    return cls is None or any(_DRIVER_IS_GPU.search(s) for s in cls.selectors)


def _requests_gpu(requests: tuple[DeviceRequest, ...], dra: DraObjects) -> bool:
    for req in requests:
        for sub in req.alternatives:
            if any(_DRIVER_IS_GPU.search(s) for s in sub.selectors) or gpu_class(sub.device_class_name, dra):
                return True
    return False
