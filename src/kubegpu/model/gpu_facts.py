"""GPU facts read off pods and nodes that several layers share (R5.1, R5.3, R17.4): the pool of a node
(configured label, then the providers' own), whether a pod tolerates the GPU taint and whether it asks a GPU
in its own spec (``asks_gpu``: the one rule explain's findings and notes and the admission lint read). The taint key, GFD
label keys and the default pool label are defined in ``kubegpu.model.names`` and re-exported here for the
modules that import them from this one."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubegpu.model.names import (
    AKS_ACCELERATOR_LABEL,
    CLOUD_GPU_LABELS,
    HAMI_NODE_REGISTER_ANNOTATION,
    KAI_ANNOTATIONS,
    LABEL_WRITERS,
    TAINT_WRITERS,
    VOLCANO_NODE_REGISTER_ANNOTATION,
    VOLCANO_VGPU_PREFIX,
)
from kubegpu.model.names import DEFAULT_POOL_LABEL as DEFAULT_POOL_LABEL
from kubegpu.model.names import GPU_COUNT_LABEL as GPU_COUNT_LABEL
from kubegpu.model.names import GPU_PRESENT_LABEL as GPU_PRESENT_LABEL
from kubegpu.model.names import GPU_PRODUCT_LABEL as GPU_PRODUCT_LABEL
from kubegpu.model.names import GPU_TAINT_KEY as GPU_TAINT_KEY
from kubegpu.model.objects import Node, Pod
from kubegpu.model.resources import is_gpu

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


def label_writer(key: str) -> str:
    """Who writes node label ``key`` from what the node is (GPU Feature Discovery, the kubelet, the cloud
    provider, an autoscaler: ``names.LABEL_WRITERS``), or "" for a label people set."""
    return next((writer for prefix, writer in LABEL_WRITERS if key.startswith(prefix)), "")


def taint_writer(key: str) -> str:
    """Who puts node taint ``key`` on and takes it off (``names.TAINT_WRITERS``: Kubernetes' node lifecycle
    controller, the cloud provider, an autoscaler), or "" for a taint people set."""
    return next((w for k, w in TAINT_WRITERS if key == k or (k.endswith("/") and key.startswith(k))), "")


def node_pool(labels: Mapping[str, str], configured: str = DEFAULT_POOL_LABEL) -> str:
    """The node's pool: the configured label's value, else the first well-known pool label it carries."""
    value = labels.get(configured)
    if value:
        return value
    return next((labels[k] for k in POOL_LABELS if labels.get(k)), "")


def tolerates_gpu_taint(pod: Pod) -> bool:
    """Does any toleration cover the GPU-node taint key (or every key)?"""
    return any(t.key == GPU_TAINT_KEY or (not t.key and t.operator == "Exists") for t in pod.tolerations)


def kai_annotations(pod: Pod) -> dict[str, str]:
    """The pod's KAI GPU-share annotations (``gpu-fraction``, ``gpu-memory``: KAI docs/gpu-sharing)."""
    return {k: v for k, v in pod.annotations.items() if k in KAI_ANNOTATIONS}


def wants_gpu_elsewhere(pod: Pod) -> bool:
    """A GPU ask that is not an nvidia.com/* resource: KAI's share annotations, Volcano's vGPUs."""
    return bool(kai_annotations(pod)) or any(r.startswith(VOLCANO_VGPU_PREFIX) for r in pod.requests)


def requests_ask_gpu(requests: Mapping[str, int]) -> bool:
    """``requests`` (a pod's or one container's) ask a GPU: a non-zero NVIDIA GPU resource or a Volcano vGPU
    resource; the resource half of ``asks_gpu``, which ``gpu_access.gpu_containers`` reads per container."""
    return any((v and is_gpu(r)) or r.startswith(VOLCANO_VGPU_PREFIX) for r, v in requests.items())


def asks_gpu(pod: Pod) -> bool:
    """The pod asks a GPU in its own spec: an NVIDIA GPU resource, or another scheduler's GPU ask (a KAI
    share, whose container carries no nvidia.com/gpu by design: KAI docs/gpu-sharing; Volcano's
    ``volcano.sh/vgpu-*``). A DRA claim is the other way a pod is given a GPU; each caller reads it from what
    it has (explain from the snapshot's claims, the admission lint from the containers' claim references).
    Tolerating the GPU taint without either is the toleration-without-GPU pitfall (R17.4)."""
    return requests_ask_gpu(pod.requests) or bool(kai_annotations(pod))


def gpu_signs(node: Node) -> list[str]:
    """What marks ``node`` as a GPU node without its device plugin: GFD's labels, the providers' and
    autoscalers' GPU labels (``model.names.CLOUD_GPU_LABELS``, AKS ``accelerator=nvidia``) and the
    ``nvidia.com/gpu`` taint, each as ``key=value`` (or the taint) so a finding can quote it."""
    labels = node.labels
    signs = []
    if labels.get(GPU_PRESENT_LABEL) == "true":
        signs.append(f"{GPU_PRESENT_LABEL}=true")
    if labels.get(GPU_COUNT_LABEL, "0") not in ("", "0"):
        signs.append(f"{GPU_COUNT_LABEL}={labels[GPU_COUNT_LABEL]}")
    signs += [f"{k}={labels[k]}" for k in CLOUD_GPU_LABELS if labels.get(k, "") not in ("", "0", "false")]
    if labels.get(AKS_ACCELERATOR_LABEL, "").lower() == "nvidia":
        signs.append(f"{AKS_ACCELERATOR_LABEL}={labels[AKS_ACCELERATOR_LABEL]}")
    signs += [f"taint {t}" for t in node.taints if t.key == GPU_TAINT_KEY]
    return signs


def labelled_gpu_count(labels: Mapping[str, str]) -> int | None:
    """GPU Feature Discovery's ``nvidia.com/gpu.count``: the GPUs a node has, even where no device plugin
    advertises them; None when the label is absent or not a number."""
    text = labels.get(GPU_COUNT_LABEL, "")
    return int(text) if text.isdigit() else None


def hami_registered_gpus(node: Node) -> int | None:
    """How many physical GPUs HAMi's device plugin registered on ``node`` (its
    ``hami.io/node-nvidia-register`` annotation), None when absent or unreadable. HAMi writes it as JSON (a
    list of DeviceInfo, ``pkg/device/devices.go`` MarshalNodeDevices, read by UnMarshalNodeDevices) since the
    plugin's register.go moved to it; earlier releases wrote ``id,count,devmem,devcore,type,numa,health[,index,
    mode]`` entries each ended by ``:`` (EncodeNodeDevices / DecodeNodeDevices). hami-scheduler refuses a node
    for a container asking more vGPUs than this list holds (``pkg/scheduler/score.go``: ``int(k.Nums) >
    len(typeDevices)`` -> NodeInsufficientDevice)."""
    return _registered(node.annotations.get(HAMI_NODE_REGISTER_ANNOTATION, ""), (7, 9))


def volcano_registered_gpus(node: Node) -> int | None:
    """How many physical GPUs Volcano's vGPU device plugin registered on ``node`` (its
    ``volcano.sh/node-vgpu-register`` annotation), None when absent or unreadable. The Volcano scheduler's
    deviceshare plugin refuses a node for a container asking more ``volcano.sh/vgpu-number`` than this list
    holds (volcano pkg/scheduler/api/devices/nvidia/vgpu/utils.go checkNodeGPUSharingPredicateAndScore:
    ``int(val.Nums) > len(gs.Device)`` -> "no enough gpu cards on node <name>").

    Project-HAMi/volcano-vgpu-device-plugin's EncodeNodeDevices writes one ``id,count,devmem,type,health:``
    entry per GPU up to v1.9.4 and ``id,count,devmem,type,health,mode:`` from v1.10.0 (commit b24d45a), never
    JSON; volcano's decodeNodeDevices reads nothing from a value without ``:``, reads five fields before v1.12.0
    and refuses an entry of fewer than six from then (commit 4b8409bf4). So exactly entries of five or six
    fields are read; any other shape (JSON, other field counts) is unreadable."""
    text = node.annotations.get(VOLCANO_NODE_REGISTER_ANNOTATION, "").strip()
    if ":" not in text or text.startswith(("[", "{")):
        return None
    return _registered(text, (5, 6))


def hami_split_counts(node: Node) -> list[int] | None:
    """Per GPU HAMi's device plugin registered on ``node``, its split count: how many containers may share
    the card (the entry's ``count``, the plugin's deviceSplitCount, 10 by default in the chart's
    devicePlugin.deviceSplitCount; Project-HAMi/HAMi#587, #602). None when absent or unreadable."""
    entries = _entries(node.annotations.get(HAMI_NODE_REGISTER_ANNOTATION, ""), (7, 9))
    if entries is None:
        return None
    counts = []
    for e in entries:
        if isinstance(e, dict):
            counts.append(str(e.get("count", "")))
        elif isinstance(e, list) and len(e) > 1:
            counts.append(str(e[1]))
        else:
            return None  # a JSON list of something else: unreadable
    return [int(c) for c in counts] if all(c.isdigit() for c in counts) else None


def _registered(text: str, fields: tuple[int, ...]) -> int | None:
    """How many devices a device plugin's register annotation lists; None when empty or unreadable."""
    entries = _entries(text, fields)
    return None if entries is None else len(entries)


def _entries(text: str, fields: tuple[int, ...]) -> list[Any] | None:
    """A device plugin's register annotation: its JSON list (of objects), or its ``:``-ended entries of
    ``fields`` comma-separated values each (as lists of strings); None when empty or unreadable."""
    text = text.strip()
    if not text:
        return None
    if text.startswith("["):
        try:
            devices = json.loads(text)
        except ValueError:
            return None
        return devices if isinstance(devices, list) else None
    entries = [e.split(",") for e in text.split(":") if e]
    if not entries or any(len(e) not in fields for e in entries):
        return None
    return entries
