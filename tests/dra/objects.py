"""DRA objects shaped as NVIDIA's DRA driver publishes them, for tests and the benchmark.

Device shape: the ``resource.k8s.io/v1`` ResourceSlice posted in kubernetes-sigs/dra-driver-nvidia-gpu
issue #719 (an AKS node with ``NVIDIA A100 80GB PCIe`` GPUs, driver 580.95.5): per device the attributes
``architecture``, ``brand``, ``cudaComputeCapability`` (version), ``cudaDriverVersion`` (version),
``driverVersion`` (version), ``index``, ``productName``, ``type`` (``gpu`` or ``mig``), ``uuid`` and the
capacity ``memory``; ``nodeName`` set, pool named after the node, generation 1, one slice.
DeviceClasses: the driver chart's ``gpu.nvidia.com`` / ``mig.nvidia.com`` selectors
(``device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'`` resp. ``'mig'``).

Partitionable devices (KEP-4815) as the driver's DynamicMIG path publishes them
(kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/partitions.go and its test): one counter set
per GPU named ``gpu-<i>-counter-set`` with ``multiprocessors``, ``copy-engines`` and one
``memory-slice-<k>`` counter per memory slice; the full GPU consumes the whole set, a MIG device
``gpu-<i>-mig-1g10gb-19-<start>`` consumes its multiprocessors, one copy engine and the memory slices of its
placement. Counter values: an H100 80GB (132 multiprocessors, 8 copy engines, 8 memory slices; 1g.10gb:
16 multiprocessors, one slice). Consumable capacity (KEP-5075): the driver's ``consumableShares=memory``
option (cmd/gpu-kubelet-plugin/consumable_shares.go): ``allowMultipleAllocations: true`` and the memory
capacity's requestPolicy ``default`` = the memory, ``validRange`` 1Mi..memory in 1Mi steps.
"""

from __future__ import annotations

from typing import Any

from kubegpu.testing.builders import make_node

API = "resource.k8s.io/v1"
DRIVER = "gpu.nvidia.com"
A100_80 = "NVIDIA A100 80GB PCIe"


def device_class(name: str, kind: str, extended: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selectors": [
            {
                "cel": {
                    "expression": f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{kind}'"
                }
            }
        ]
    }
    if extended:
        spec["extendedResourceName"] = extended
    return {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def gpu_classes() -> list[dict[str, Any]]:
    return [device_class("gpu.nvidia.com", "gpu"), device_class("mig.nvidia.com", "mig")]


def gpu_device(i: int, node: str, product: str = A100_80, memory: str = "80Gi") -> dict[str, Any]:
    return {
        "name": f"gpu-{i}",
        "attributes": {
            "architecture": {"string": "Ampere"},
            "brand": {"string": "Nvidia"},
            "cudaComputeCapability": {"version": "8.0.0"},
            "cudaDriverVersion": {"version": "13.0.0"},
            "driverVersion": {"version": "580.95.5"},
            "index": {"int": i},
            "productName": {"string": product},
            "type": {"string": "gpu"},
            "uuid": {"string": f"GPU-{node}-{i:04d}"},
        },
        "capacity": {"memory": {"value": memory}},
    }


def mig_device(
    gpu: int, j: int, node: str, profile: str = "1g.10gb", memory: str = "9728Mi"
) -> dict[str, Any]:
    return {
        "name": f"gpu-{gpu}-mig-{j}",
        "attributes": {
            "type": {"string": "mig"},
            "profile": {"string": profile},
            "parentIndex": {"int": gpu},
            "productName": {"string": A100_80},
            "parentUUID": {"string": f"GPU-{node}-{gpu:04d}"},
            "uuid": {"string": f"MIG-{node}-{gpu}-{j}"},
        },
        "capacity": {"memory": {"value": memory}},
    }


def node_slice(
    node: str,
    devices: list[dict[str, Any]],
    generation: int = 1,
    count: int = 1,
    name: str = "",
) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ResourceSlice",
        "metadata": {"name": name or f"{node}-{DRIVER}-x"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": count},
            "devices": devices,
        },
    }


def gpu_node(name: str, gpus: int, product: str = A100_80, memory: str = "80Gi") -> list[dict[str, Any]]:
    """A Node without ``nvidia.com/gpu`` (a DRA node) and its slice of ``gpus`` GPUs."""
    return [
        make_node(name).obj(),
        node_slice(name, [gpu_device(i, name, product, memory) for i in range(gpus)]),
    ]


# a request selector: devices of at least 80 GiB (an A100 80GB passes, an A100 40GB does not)
SELECTOR_80GI = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0"


def held_node(name: str, claim_name: str, big: bool, reserved: tuple[str, ...]) -> list[dict[str, Any]]:
    """A DRA node of 8 A100 (80 GB when ``big``, else 40 GB) whose GPUs 0–5 claim ``claim_name`` holds, reserved
    for the pod uids ``reserved`` (the benchmarks' clusters: 2 GPUs free per node)."""
    held = tuple(("gpu", f"gpu-{k}") for k in range(6))
    objs = gpu_node(name, 8, A100_80 if big else "NVIDIA A100-PCIE-40GB", "80Gi" if big else "40Gi")
    objs.append(claim(claim_name, request("gpu", count=6), status=allocated(name, *held, reserved=reserved)))
    return objs


def partitionable_node(node: str, migs: tuple[int, ...], gpu: int = 0) -> list[dict[str, Any]]:
    """A DRA node whose GPU ``gpu`` is published with its counter set (one slice) and, in a second slice of
    the same pool, the full GPU and 1g.10gb MIG devices placed at the memory slices ``migs``."""
    cs = f"gpu-{gpu}-counter-set"
    whole = {"multiprocessors": "132", "copy-engines": "8", **{f"memory-slice-{k}": "1" for k in range(8)}}
    full = gpu_device(gpu, node, "NVIDIA H100 80GB HBM3")
    full["consumesCounters"] = [{"counterSet": cs, "counters": {k: {"value": v} for k, v in whole.items()}}]
    devices = [full]
    for start in migs:
        d = mig_device(gpu, start, node)
        d["name"] = f"gpu-{gpu}-mig-1g10gb-19-{start}"
        d["attributes"]["productName"] = {"string": "NVIDIA H100 80GB HBM3"}
        d["consumesCounters"] = [
            {
                "counterSet": cs,
                "counters": {
                    "multiprocessors": {"value": "16"},
                    "copy-engines": {"value": "1"},
                    f"memory-slice-{start}": {"value": "1"},
                },
            }
        ]
        devices.append(d)
    counters = node_slice(node, [], count=2, name=f"{node}-{DRIVER}-counters")
    del counters["spec"]["devices"]
    counters["spec"]["sharedCounters"] = [
        {"name": cs, "counters": {k: {"value": v} for k, v in whole.items()}}
    ]
    return [make_node(node).obj(), counters, node_slice(node, devices, count=2)]


def shared_gpu_device(i: int, node: str, memory: str = "80Gi") -> dict[str, Any]:
    """A GPU the driver lets several claims share, each taking part of its memory (consumableShares=memory)."""
    d = gpu_device(i, node, memory=memory)
    d["allowMultipleAllocations"] = True
    d["capacity"]["memory"]["requestPolicy"] = {
        "default": memory,
        "validRange": {"min": "1Mi", "max": memory, "step": "1Mi"},
    }
    return d


def request(
    name: str,
    cls: str = "gpu.nvidia.com",
    count: int = 1,
    selectors: tuple[str, ...] = (),
    mode: str = "",
    capacity: dict[str, str] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls}
    if capacity:
        exactly["capacity"] = {"requests": capacity}
    if tolerations:
        exactly["tolerations"] = tolerations
    if mode:
        exactly["allocationMode"] = mode
    else:
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": exactly}


def claim(
    name: str,
    *requests: dict[str, Any],
    ns: str = "default",
    status: dict[str, Any] | None = None,
    owner_uid: str = "",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{name}"}
    if owner_uid:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": owner_uid, "controller": True}
        ]
    obj: dict[str, Any] = {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": {"devices": {"requests": list(requests)}},
    }
    if status:
        obj["status"] = status
    return obj


def generated(
    pod_name: str,
    *requests: dict[str, Any],
    template: str = "gpus",
    claim_name: str = "",
    owner_uid: str = "",
) -> list[dict[str, Any]]:
    """A pod whose claim ``gpu`` the claim controller made from ``template``: the claim (``claim_name``,
    default ``<pod>-gpu-x``), owned by the pod (``owner_uid``: another owner's uid, for a claim that is not
    the pod's own), and the pod, its ``status.resourceClaimStatuses`` naming the claim."""
    name = claim_name or f"{pod_name}-gpu-x"
    made = claim(name, *requests, owner_uid=owner_uid or f"uid-{pod_name}")
    made["metadata"]["ownerReferences"][0]["name"] = pod_name  # as the controller writes it
    return [made, pod(pod_name, ("gpu", "", template), statuses={"gpu": name})]


def allocated(node: str, *devices: tuple[str, str], reserved: tuple[str, ...] = ()) -> dict[str, Any]:
    """A claim status allocated on ``node`` (request, device) as kube-scheduler writes it."""
    return {
        "allocation": {
            "devices": {
                "results": [{"request": r, "driver": DRIVER, "pool": node, "device": d} for r, d in devices]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": u, "uid": u} for u in reserved],
    }


def pod(
    name: str, *claims: tuple[str, str, str], uid: str = "", statuses: dict[str, str | None] | None = None
) -> dict[str, Any]:
    """A pod with ``spec.resourceClaims`` entries (pod claim name, claim name, template name)."""
    refs = []
    for pname, cname, tname in claims:
        ref: dict[str, Any] = {"name": pname}
        if cname:
            ref["resourceClaimName"] = cname
        if tname:
            ref["resourceClaimTemplateName"] = tname
        refs.append(ref)
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": uid or f"uid-{name}"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "i",
                    "resources": {"requests": {"cpu": "1"}, "claims": [{"name": r["name"]} for r in refs]},
                }
            ],
            "resourceClaims": refs,
        },
    }
    if statuses is not None:
        obj["status"] = {
            "resourceClaimStatuses": [
                {"name": k, **({"resourceClaimName": v} if v else {})} for k, v in statuses.items()
            ]
        }
    return obj
