"""GPU pod mutations for ``kubegpu webhook``'s ``/mutate``: what a GPU platform sets so users need not.

Each mutation is an RFC 6902 JSON Patch on a Pod being created, and each can be switched off
(``MutationOptions``):

* ``gpu-toleration``: kube-apiserver's ExtendedResourceToleration admission plugin, for GPU resources: a
  pod whose containers or init containers request (or limit) a GPU resource gets, per resource name in
  sorted order, the toleration ``{key: <resource>, operator: Exists, effect: NoSchedule}`` unless one
  with the same key, operator, value and effect is there (upstream's ``MatchToleration``). GPU nodes
  tainted ``nvidia.com/gpu:NoSchedule`` then take GPU pods and repel the rest (R5.3), without every
  manifest carrying the toleration.
* ``scheduler-name``: GPU pods in namespaces labelled ``kubegpu.io/scheduler=enabled`` go to kubegpu's
  scheduler: ``spec.schedulerName`` is set when it is empty or ``default-scheduler`` (a pod that names
  another scheduler keeps it). Needs the namespace labels (the webhook's API access).
* ``visible-devices``: in a GPU namespace (labelled ``kubegpu.io/gpu-namespace=true``, or any namespace
  for a pod that requests a GPU), every container that requests no GPU and sets no
  ``NVIDIA_VISIBLE_DEVICES`` gets ``NVIDIA_VISIBLE_DEVICES=void``. CUDA images set ``=all`` in their
  ENV, and with the NVIDIA container runtime that exposes every GPU of the node to a container the
  device plugin gave none; ``void`` makes the runtime behave as runc (neither GPUs nor driver
  capabilities), unlike ``none`` (no GPU, driver libraries still mounted). A value set by hand is left
  to the validating rule ``visible-devices``.

A namespace labelled ``kubegpu.io/admission=disabled`` gets no mutation, as it gets no validation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubegpu.admission.lint import GPU_NAMESPACE_LABEL, OPT_OUT_LABEL, OPT_OUT_VALUE
from kubegpu.model.resources import is_gpu

SCHEDULER_LABEL = "kubegpu.io/scheduler"
SCHEDULER_LABEL_VALUE = "enabled"
DEFAULT_SCHEDULER = "default-scheduler"
VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
VOID = "void"

Patch = list[dict[str, Any]]


@dataclass(frozen=True)
class MutationOptions:
    gpu_toleration: bool = True
    visible_devices: bool = True
    scheduler_name: str = ""  # empty: leave spec.schedulerName alone


def _gpu_resources(container: Mapping[str, Any]) -> set[str]:
    resources = container.get("resources") or {}
    names = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {r for r, v in names.items() if is_gpu(r) and str(v) not in ("0", "")}


def _containers(spec: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    return [
        (f"/spec/{key}/{i}", c)
        for key in ("initContainers", "containers")
        for i, c in enumerate(spec.get(key) or [])
        if isinstance(c, Mapping)
    ]


def _append(patch: Patch, path: str, exists: bool, value: dict[str, Any]) -> None:
    """Append ``value`` to the list at ``path`` (JSON Patch ``-``), or create the list when absent."""
    if exists:
        patch.append({"op": "add", "path": f"{path}/-", "value": value})
    else:
        patch.append({"op": "add", "path": path, "value": [value]})


def mutate_pod(
    pod: Mapping[str, Any], namespace_labels: Mapping[str, str] | None, options: MutationOptions
) -> Patch:
    """The JSON Patch for a Pod being created; ``namespace_labels`` None when they are unknown."""
    labels = namespace_labels or {}
    if labels.get(OPT_OUT_LABEL) == OPT_OUT_VALUE:
        return []
    spec: Mapping[str, Any] = pod.get("spec") or {}
    containers = _containers(spec)
    gpus = sorted(set().union(*(_gpu_resources(c) for _, c in containers)))
    patch: Patch = []
    if options.gpu_toleration and gpus:
        present = isinstance(spec.get("tolerations"), list)
        tolerations = [t for t in spec.get("tolerations") or [] if isinstance(t, Mapping)]
        for resource in gpus:
            if not any(
                (t.get("key", ""), t.get("operator", ""), t.get("value", ""), t.get("effect", ""))
                == (resource, "Exists", "", "NoSchedule")
                for t in tolerations
            ):
                _append(
                    patch,
                    "/spec/tolerations",
                    present,
                    {"key": resource, "operator": "Exists", "effect": "NoSchedule"},
                )
                present = True
    if (
        options.scheduler_name
        and gpus
        and labels.get(SCHEDULER_LABEL) == SCHEDULER_LABEL_VALUE
        and (spec.get("schedulerName") or DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER
    ):
        op = "replace" if "schedulerName" in spec else "add"
        patch.append({"op": op, "path": "/spec/schedulerName", "value": options.scheduler_name})
    if options.visible_devices and (gpus or labels.get(GPU_NAMESPACE_LABEL) == "true"):
        for path, c in containers:
            env = [e for e in c.get("env") or [] if isinstance(e, Mapping)]
            if _gpu_resources(c) or any(e.get("name") == VISIBLE_DEVICES for e in env):
                continue
            _append(
                patch, f"{path}/env", isinstance(c.get("env"), list), {"name": VISIBLE_DEVICES, "value": VOID}
            )
    return patch
