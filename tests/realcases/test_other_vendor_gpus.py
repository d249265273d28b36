"""A Pending pod asking for another vendor's GPU, which kubegpu does not model (it models NVIDIA's): diagnose
explains it and says so in one line, never hides it among the pods without GPUs, never counts it as an NVIDIA
GPU and never calls its resource name a misspelling.

Pods as the vendors publish them:
- AMD: the example ROCm/k8s-device-plugin's docs/index.md ("Example Workload") points to,
  https://github.com/ROCm/k8s-device-plugin/blob/master/example/pod/pytorch.yaml (``amd.com/gpu: 1`` in limits;
  the plugin "Exposes AMD GPUs as amd.com/gpu resources"; its Python command shortened here).
- Intel: the pod template of https://github.com/intel/intel-device-plugins-for-kubernetes/blob/main/demo/intelgpu-job.yaml
  (``gpu.intel.com/i915: 1``; cmd/gpu_plugin/README.md lists gpu.intel.com/i915, /xe and their *_monitoring
  resources).
Extended resources in limits only get the same requests (the API server's defaulting), so each pod requests 1.
Before, the AMD pod was counted as "Pending without GPUs" and "nothing is blocked", and ``explain`` told to fix a
misspelt name in the pod template.
"""

from __future__ import annotations

from typing import Any

import yaml

from kubegpu.explain.diagnose import diagnose
from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.model.resources import is_gpu
from kubegpu.model.snapshot import build_snapshot
from kubegpu.testing.builders import make_node

ROCM_PYTORCH, INTEL_JOB_POD = yaml.safe_load_all(
    """
apiVersion: v1
kind: Pod
metadata:
  name: pytorch-gpu-pod-example
  namespace: default
spec:
  restartPolicy: Never
  containers:
  - name: pytorch-gpu-container
    image: rocm/pytorch:latest
    command: [python3, "-c", "import torch; print(torch.cuda.is_available())"]
    resources:
      limits:
        amd.com/gpu: 1  # Request 1 AMD GPU
status:
  phase: Pending
---
apiVersion: v1
kind: Pod
metadata:
  name: intelgpu-demo-job-x7k2p
  namespace: default
  labels: {jobgroup: intelgpu-demo}
spec:
  restartPolicy: Never
  containers:
  - name: intelgpu-demo-job-1
    image: intelopencl/intel-opencl:ubuntu-20.10-ppa
    imagePullPolicy: IfNotPresent
    command: [clinfo]
    resources:
      limits:
        gpu.intel.com/i915: 1
status:
  phase: Pending
"""
)
NOT_MODELLED = "kubegpu models NVIDIA GPUs only"


def _snapshot(*objs: dict[str, Any]) -> Any:
    nodes = [make_node("nv-0").gpus(8).obj(), make_node("cpu-0").obj()]
    snap = build_snapshot([("t.yaml", o) for o in (*nodes, *objs)])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    return snap


def test_a_pending_amd_gpu_pod_is_explained_with_one_line_saying_it_is_not_modelled() -> None:
    snap = _snapshot(ROCM_PYTORCH)
    report = diagnose(Engine(snap)).to_dict()
    assert report["otherPending"] == 0  # not hidden among the pods that ask for no GPU
    [p] = [p for p in report["pending"] if p["pod"] == "default/pytorch-gpu-pod-example"]
    lines = [u for u in p["unverified"] if "amd.com/gpu" in u]
    assert len(lines) == 1 and NOT_MODELLED in lines[0] and "ROCm/k8s-device-plugin" in lines[0], p[
        "unverified"
    ]
    assert not p["schedulable"]
    fixes = " ".join(g["fix"] for g in p["groups"])
    assert "the name must match exactly" not in fixes and "Fix the pod template" not in fixes, fixes
    assert "ROCm/k8s-device-plugin" in fixes
    # not an NVIDIA GPU: the cluster's NVIDIA totals are the one node's 8, none requested
    assert not is_gpu("amd.com/gpu")
    assert report["totals"] == {"nvidia.com/gpu": {"capacity": 8, "allocatable": 8, "requested": 0}}


def test_an_intel_gpu_pod_that_fits_is_unverified_not_fine() -> None:
    """A node whose Intel plugin registered gpu.intel.com/i915: kube-scheduler's count lets the pod fit; kubegpu
    says it checked no more than that count."""
    intel = make_node("intel-0").obj()
    for field in ("capacity", "allocatable"):
        intel["status"][field]["gpu.intel.com/i915"] = "1"
    snap = _snapshot(intel, INTEL_JOB_POD)
    exp = explain_pod(Engine(snap), next(p for p in snap.pods if p.name == "intelgpu-demo-job-x7k2p"))
    assert exp.schedulable and exp.node == "intel-0", exp.message
    lines = [u for u in exp.unverified if "gpu.intel.com/i915" in u]
    assert len(lines) == 1 and NOT_MODELLED in lines[0], exp.unverified


def test_one_line_per_vendor_for_several_of_its_resources() -> None:
    """Intel's GPU Aware Scheduling pods ask for gpu.intel.com/i915 with gpu.intel.com/millicores (the GPU
    plugin's NFD hook labels a node gpu.intel.com/millicores = GPU count * 1000, which NFD's
    --resource-labels makes an extended resource; intel-device-plugins-for-kubernetes cmd/gpu_nfdhook README):
    one line names both."""
    pod = yaml.safe_load(yaml.safe_dump(INTEL_JOB_POD))
    pod["spec"]["containers"][0]["resources"]["limits"]["gpu.intel.com/millicores"] = 500
    snap = _snapshot(pod)
    exp = explain_pod(Engine(snap), snap.pods[0])
    lines = [u for u in exp.unverified if NOT_MODELLED in u]
    assert len(lines) == 1 and "gpu.intel.com/i915, gpu.intel.com/millicores" in lines[0], exp.unverified


def test_nvidia_resources_get_no_such_line() -> None:
    """nvidia.com/gpu (and its renamed shared form) is what kubegpu models."""
    pod = yaml.safe_load(yaml.safe_dump(ROCM_PYTORCH))
    pod["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": 1}
    snap = _snapshot(pod)
    exp = explain_pod(Engine(snap), snap.pods[0])
    assert not [u for u in exp.unverified if NOT_MODELLED in u], exp.unverified
