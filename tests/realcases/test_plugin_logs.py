"""Which log a dark GPU node's Ready device plugin is read from: its own pod on the node and the plugin's own
container, as each deployment names it, decided from the DaemonSet kubegpu recognised (not from command text).

Container names, from the upstream manifests:
- NVIDIA's device plugin: ``nvidia-device-plugin-ctr`` (NVIDIA/k8s-device-plugin
  deployments/static/nvidia-device-plugin.yml, DaemonSet kube-system/nvidia-device-plugin-daemonset; the Helm
  chart's deployments/helm/nvidia-device-plugin/templates/daemonset-device-plugin.yml names it the same and adds
  ``nvidia-device-plugin-sidecar`` when it has a config map).
- The GPU Operator's: ``nvidia-device-plugin`` beside ``config-manager``, init containers ``toolkit-validation``
  (the validator image) and ``config-manager-init`` (NVIDIA/gpu-operator assets/state-device-plugin/
  0500_daemonset.yaml, DaemonSet nvidia-device-plugin-daemonset in the operator's namespace).
- A plugin kubegpu knows no container name of: every container. GKE's DaemonSet
  kube-system/nvidia-gpu-device-plugin-large-cos (as ``kubectl get ds -n kube-system`` lists it on GKE GPU node
  pools); its container's name and image here are stand-ins, GKE publishes no manifest.
The node carries GPU Feature Discovery's ``nvidia.com/gpu.present=true`` and advertises no ``nvidia.com/gpu``.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubegpu.explain import device_plugin
from kubegpu.model.snapshot import build_snapshot

NODE = "gpu-node-0"
VALIDATOR = "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.3.2"


def _ds(ns: str, name: str, init: list[dict[str, str]], containers: list[dict[str, str]]) -> dict[str, Any]:
    labels = {"name": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "initContainers": init,
                    "containers": containers,
                },
            },
        },
    }


def _ready_pod(ds: dict[str, Any], pod: str) -> dict[str, Any]:
    spec = ds["spec"]["template"]["spec"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod,
            "namespace": ds["metadata"]["namespace"],
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": ds["metadata"]["name"],
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": NODE,
            "initContainers": spec["initContainers"],
            "containers": spec["containers"],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": c["name"], "ready": True, "restartCount": 0, "state": {"running": {}}}
                for c in spec["containers"]
            ],
        },
    }


def _node() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE,
            "labels": {"kubernetes.io/hostname": NODE, "nvidia.com/gpu.present": "true"},
        },
        "status": {
            "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


NVIDIA_STATIC = _ds(
    "kube-system",
    "nvidia-device-plugin-daemonset",
    [],
    [{"name": "nvidia-device-plugin-ctr", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"}],
)
GPU_OPERATOR = _ds(
    "gpu-operator",
    "nvidia-device-plugin-daemonset",
    [{"name": "toolkit-validation", "image": VALIDATOR}, {"name": "config-manager-init", "image": VALIDATOR}],
    [
        {"name": "nvidia-device-plugin", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.3"},
        {"name": "config-manager", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.3"},
    ],
)
GKE = _ds(
    "kube-system",
    "nvidia-gpu-device-plugin-large-cos",
    [],
    [{"name": "nvidia-gpu-device-plugin", "image": "gke.gcr.io/nvidia-gpu-device-plugin:v1.0.25-gke.56"}],
)


@pytest.mark.parametrize(
    ("ds", "pod", "title", "command"),
    [
        (
            NVIDIA_STATIC,
            "nvidia-device-plugin-daemonset-8xq4d",
            "NVIDIA's device plugin",
            "kubectl -n kube-system logs nvidia-device-plugin-daemonset-8xq4d -c nvidia-device-plugin-ctr --tail=100",
        ),
        (
            GPU_OPERATOR,
            "nvidia-device-plugin-daemonset-k2l9s",
            "the GPU Operator's device plugin",
            "kubectl -n gpu-operator logs nvidia-device-plugin-daemonset-k2l9s -c nvidia-device-plugin --tail=100",
        ),
        (
            GKE,
            "nvidia-gpu-device-plugin-large-cos-5wz7n",
            "GKE's NVIDIA device plugin",
            "kubectl -n kube-system logs nvidia-gpu-device-plugin-large-cos-5wz7n --all-containers --tail=100",
        ),
    ],
)
def test_a_ready_plugin_on_a_dark_node_is_read_from_its_own_container(
    ds: dict[str, Any], pod: str, title: str, command: str
) -> None:
    snap = build_snapshot([("t.yaml", x) for x in (_node(), ds, _ready_pod(ds, pod))])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    chain = device_plugin.check_node(snap, next(n for n in snap.nodes if n.name == NODE))
    assert chain.dark
    assert chain.causes[0].startswith(
        f"{title} ({ds['metadata']['namespace']}/{ds['metadata']['name']}) is Ready"
    )
    assert command in chain.commands
    assert not [c for c in chain.commands if "<" in c]  # no placeholder for a pod the snapshot names
