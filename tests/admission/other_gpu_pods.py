"""GPU pods of other schedulers as kubegpu's webhooks see them, built from upstream's own objects.

KAI (kai-scheduler/KAI-Scheduler at d5bc503a146317e51037d89775d77172c6d12f71):

* ``kai_doc_pod``: docs/gpu-sharing/gpu-sharing.yaml, gpu-memory.yaml, gpu-sharing-non-default-container.yaml and
  gpu-sharing-init-container.yaml: annotations ``gpu-fraction`` / ``gpu-memory`` (and ``gpu-fraction-container-name``),
  ``schedulerName: kai-scheduler``, no GPU resource anywhere.
* ``kai_admitted``: that pod after KAI's mutating webhook (``mutating-kai-admission``: Pod CREATE only,
  pkg/operator/operands/admission/resources.go mutatingWCForKAIConfig), which runs before any validating webhook.
  Its gpusharing plugin (pkg/admission/webhook/v1alpha2/gpusharing/gpu_sharing.go Mutate) picks the share container
  (pkg/binder/common/gpu_access.go GetFractionContainerRef: the container ``gpu-fraction-container-name`` names,
  init containers first, else ``containers[0]``), writes the annotation ``runai/shared-gpu-configmap:
  <owner or pod name>-<7 random chars>-shared-gpu`` (pkg/binder/common/gpusharingconfigmap/config_map.go
  SetGpuCapabilitiesConfigMapName), and on that container sets ``NVIDIA_VISIBLE_DEVICES``, ``RUNAI_NUM_OF_GPUS`` and
  ``GPU_PORTION`` from ``configMapKeyRef`` keys of the same name in ConfigMap ``<prefix>-<index>`` (``-i<index>``
  for an init container; common/gpu_access.go AddGPUSharingEnvVars, common/env_vars.go AddEnvVarToContainer
  replaces an entry of the same name), adds ``envFrom: configMapRef <prefix>-<index>-evar, optional: false``
  (AddDirectEnvVarsConfigMapSource) and the volume ``<prefix>-<index>-vol`` (common/volumes.go
  SetConfigMapVolume). The ConfigMaps do not exist yet: the binder creates them and writes the reserved GPU into
  ``NVIDIA_VISIBLE_DEVICES`` before binding (pkg/binder/plugins/gpusharing/gpu_sharing.go PreBind,
  common/gpu_access.go SetNvidiaVisibleDevices).

HAMi (Project-HAMi/HAMi at 4707fb02c91c545bc7343ce26dba4c32919f9a3e): a GPU container asks ``nvidia.com/gpu``
(with ``nvidia.com/gpumem`` / ``gpucores``), its device list comes from the device plugin's Allocate answer
(pkg/device-plugin/nvidiadevice/nvinternal/plugin/server.go updateResponseForDeviceListEnvVar), and HAMi's webhook
appends ``NVIDIA_VISIBLE_DEVICES=none`` to a container without a GPU when ``overwriteEnv`` is on
(pkg/device/nvidia/device.go MutateAdmission; chart default ``scheduler.overwriteEnv: false``).

Volcano vGPU (Project-HAMi/volcano-vgpu-device-plugin README "Running VGPU Jobs"): ``volcano.sh/vgpu-*`` resources;
the device plugin answers Allocate with ``NVIDIA_VISIBLE_DEVICES`` (pkg/plugin/server.go at 4fb76ba, line 720); the
Volcano scheduler declares ``overwriteEnv`` (volcano-sh/volcano pkg/scheduler/api/devices/config/vgpu.go at
ed72c7c) but nothing sets an env from it.
"""

from __future__ import annotations

import copy
from typing import Any

KAI_CONFIGMAP_PREFIX = "gpu-sharing-x7k2q9p-shared-gpu"  # <pod name>-<7 random chars>-shared-gpu


def kai_doc_pod(example: str) -> dict[str, Any]:
    """One of KAI's docs/gpu-sharing examples (``fraction``, ``memory``, ``non-default``, ``init``)."""
    cuda = {"image": "nvidia/cuda:13.0.2-base-ubi8", "command": ["nvidia-smi"], "args": ["-L"]}
    annotations = {"memory": {"gpu-memory": "2000"}}.get(example, {"gpu-fraction": "0.5"})
    spec: dict[str, Any] = {
        "schedulerName": "kai-scheduler",
        "containers": [{"name": "gpu-workload", **cuda}],
    }
    if example == "non-default":
        annotations["gpu-fraction-container-name"] = "gpu-workload"
        busybox = {"image": "busybox", "args": ["sleep", "infinity"]}
        spec["containers"] = [
            {"name": "sidecar", **busybox},
            spec["containers"][0],
            {"name": "another-sidecar", **busybox},
        ]
    if example == "init":
        annotations["gpu-fraction-container-name"] = "gpu-init"
        spec["initContainers"] = [{"name": "gpu-init", **cuda}]
        spec["containers"] = [{"name": "main-app", "image": "ubuntu", "args": ["sleep", "infinity"]}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "gpu-sharing",
            "namespace": "team-a",
            "labels": {"kai.scheduler/queue": "default-queue"},
            "annotations": annotations,
        },
        "spec": spec,
    }


def kai_configmap(key: str, index: int) -> str:
    return f"{KAI_CONFIGMAP_PREFIX}-{'i' if key == 'initContainers' else ''}{index}"


def kai_admitted(pod: dict[str, Any], key: str = "containers", index: int = 0) -> dict[str, Any]:
    """``pod`` as KAI's gpusharing admission plugin leaves it, the share being ``spec[key][index]``."""
    out = copy.deepcopy(pod)
    out["metadata"]["annotations"]["runai/shared-gpu-configmap"] = KAI_CONFIGMAP_PREFIX
    configmap = kai_configmap(key, index)
    container = out["spec"][key][index]
    kept = [
        e
        for e in container.get("env", [])
        if e["name"] not in ("NVIDIA_VISIBLE_DEVICES", "RUNAI_NUM_OF_GPUS", "GPU_PORTION")
    ]
    container["env"] = kept + [
        {"name": name, "valueFrom": {"configMapKeyRef": {"key": name, "name": configmap}}}
        for name in ("NVIDIA_VISIBLE_DEVICES", "RUNAI_NUM_OF_GPUS", "GPU_PORTION")
    ]
    container.setdefault("envFrom", []).append(
        {"configMapRef": {"name": f"{configmap}-evar", "optional": False}}
    )
    out["spec"].setdefault("volumes", []).append(
        {"name": f"{configmap}-vol", "configMap": {"name": configmap}}
    )
    return out


def _with_sidecar(name: str, namespace: str, scheduler: str, gpu: dict[str, Any]) -> dict[str, Any]:
    sidecar = {"name": "log-shipper", "image": "fluent/fluent-bit:3.1"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedulerName": scheduler, "containers": [gpu, sidecar]},
    }


def volcano_vgpu_pod(namespace: str = "team-a") -> dict[str, Any]:
    """volcano-vgpu-device-plugin README "Running VGPU Jobs", with a CPU sidecar next to it."""
    vgpu = {"volcano.sh/vgpu-number": "2", "volcano.sh/vgpu-memory": "3000", "volcano.sh/vgpu-cores": "50"}
    container = {"name": "cuda-container", "image": "nvidia/cuda:9.0-devel", "resources": {"limits": vgpu}}
    return _with_sidecar("gpu-pod1", namespace, "volcano", container)


def hami_pod(overwrite_env: bool, namespace: str = "team-a") -> dict[str, Any]:
    """A container with HAMi's README "Device Virtualization" limits (``nvidia.com/gpu: 1``, ``nvidia.com/gpumem:
    3000``) and a CPU sidecar, as HAMi's webhook leaves the pod: the sidecar gets ``NVIDIA_VISIBLE_DEVICES=none``
    when ``overwriteEnv`` is on."""
    gpu = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "3000"}
    container = {"name": "ubuntu-container", "image": "ubuntu:22.04", "resources": {"limits": gpu}}
    pod = _with_sidecar("gpu-pod", namespace, "hami-scheduler", container)
    if overwrite_env:
        pod["spec"]["containers"][1]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"}]
    return pod
