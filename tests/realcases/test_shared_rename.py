"""A pod asking for a GPU resource that the NVIDIA device plugin renamed: with time-slicing or MPS and
``renameByDefault: true`` the plugin registers each shared resource as ``<name>.shared``
(NVIDIA/k8s-device-plugin ``api/config/v1/replicas.go``: the rename of a replicated resource defaults to
the name plus ``.shared`` under ``renameByDefault``; docs "With CUDA Time-Slicing": "nvidia.com/gpu.shared").
The fix the thread found is the request's name, not a missing GPU node or device plugin.
"""

from __future__ import annotations

from kubegpu.explain.diagnose import diagnose
from kubegpu.explain.engine import Engine
from kubegpu.model.snapshot import build_snapshot
from kubegpu.testing.builders import make_node, make_pod
from tests.realcases.cases import assert_no_name_blame, case, fixes, pending


def test_plain_gpu_request_on_renamed_time_slicing_node_bottlerocket_4250() -> None:
    """bottlerocket-os/bottlerocket#4250: the Karpenter g5 node advertises only nvidia.com/gpu.shared; the
    pod asks for nvidia.com/gpu: 1; the thread's fix is the pod's commented-out nvidia.com/gpu.shared: 1."""
    data = case("ts-rename-shared")
    fix = fixes(pending(data, "default/gpu-workload-0"))
    assert "1 node(s) advertise nvidia.com/gpu.shared" in fix
    assert "Request nvidia.com/gpu.shared instead" in fix and "renameByDefault: false" in fix
    assert "looks like a GPU node" not in fix and "add GPU nodes" not in fix
    assert_no_name_blame(data)


def test_shared_request_where_the_plugin_does_not_rename() -> None:
    """The other way round: the pod asks for nvidia.com/gpu.shared (as written for a renaming cluster) on
    nodes whose plugin advertises plain nvidia.com/gpu: request nvidia.com/gpu, or turn the rename on."""
    snap = build_snapshot(
        [
            ("t", make_node("g").gpus(4).label("nvidia.com/gpu.present", "true").obj()),
            ("t", make_pod("p").gpu(1, "nvidia.com/gpu.shared").obj()),
        ]
    )
    data = diagnose(Engine(snap)).to_dict()
    fix = fixes(pending(data, "default/p"))
    assert "No node advertises nvidia.com/gpu.shared; 1 node(s) advertise nvidia.com/gpu" in fix
    assert "Request nvidia.com/gpu instead" in fix and "renameByDefault: true" in fix


def test_findings_on_renamed_time_slicing_node_device_plugin_321() -> None:
    """NVIDIA/k8s-device-plugin#321: time-slicing config with renameByDefault: true (api/config/v1 replicas.go
    renames a replicated resource to <name>.shared); the first nvidia.com/gpu pod kept running, the next stayed
    Pending. The findings said "No node in the snapshot looks like a GPU node: add GPU nodes" for both pods, and
    that the Running one "waits" for nvidia.com/gpu."""
    data = case("ts-rename-running-holder")
    by_pod = {f["objects"][0]: f for f in data["findings"] if f["objects"]}
    pending_f, holder = by_pod["pod/default/gpu-workload-2"], by_pod["pod/default/gpu-workload-1"]
    assert pending_f["severity"] == "critical"
    assert "the GPU nodes advertise nvidia.com/gpu.shared" in pending_f["title"]
    assert "Ask for nvidia.com/gpu.shared" in pending_f["detail"]
    assert holder["severity"] == "warning"
    assert holder["title"].startswith("pod holds nvidia.com/gpu")
    assert "keeps running" in holder["detail"]
    text = " ".join(f["title"] + " " + f["detail"] for f in data["findings"])
    assert "add GPU nodes" not in text and "waits for" not in text
