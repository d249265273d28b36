"""GKE's GPU taint on a pod that requests no GPU (vllm-project/aibrix#909, fixture gke-gpu-taint-cpu-helper.yaml).

GKE taints GPU nodes nvidia.com/gpu=present:NoSchedule and runs the ExtendedResourceToleration admission plugin
(kubernetes/kubernetes#55839, plugin/pkg/admission/extendedresourcetoleration), which adds a toleration for an
extended resource's taint only to pods requesting that resource. A helper pod that must share the GPU pod's node
(aibrix's kvcache, by required pod affinity) requests none and so needs the toleration in its own template: the
PR's fix. Telling it to request a GPU would be wrong."""

from __future__ import annotations

from pathlib import Path

from tests.realcases.cases import explain


def test_gpu_taint_on_a_pod_without_gpu_request_aibrix_909(tmp_path: Path) -> None:
    exp = explain(tmp_path, "gke-gpu-taint-cpu-helper", "default/deepseek-coder-7b-kvcache-7c984cdff8-xq5pk")
    taint = next(g for g in exp.groups if "untolerated taint" in g.reason)
    assert (
        "add a toleration (key: nvidia.com/gpu, operator: Equal, value: present, effect: NoSchedule)"
        in taint.fix
    )
    assert "the pod must also request nvidia.com/gpu" not in taint.pitfall
    assert "ExtendedResourceToleration" in taint.pitfall and "requests no GPU" in taint.pitfall
