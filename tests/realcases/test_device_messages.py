"""The device plugin's refusal of several shared replicas, per plugin release and sharing mode, and kubelet's
admission of a HAMi pod, on cases rebuilt from public threads (each fixture's header cites its thread).

Expected texts come from upstream, checked against the tags of NVIDIA/k8s-device-plugin:
v0.12.0–v0.14.x ``internal/plugin/server.go`` Allocate: ``request for '%v: %v' too large: maximum request
size for shared resources is 1``; v0.15.0+ Allocate ``invalid allocation request for %q: %w`` around
``internal/rm/rm.go`` ValidateRequest's ``invalid request: maximum request size for shared resources is 1;
found %d``; MPS ignores failRequestsGreaterThanOne before v0.20.0 (PR #1762). kubelet's wrapper is
``Allocate failed due to %v, which is unexpected`` (the text NVIDIA/k8s-device-plugin#929 quotes).
"""

from __future__ import annotations

from pathlib import Path

from tests.realcases.cases import explain

KUBELET = "Allocate failed due to rpc error: code = Unknown desc = "


def release(tag: str) -> tuple[tuple[str, str], ...]:
    return (("k8s-device-plugin:v0.16.2", f"k8s-device-plugin:{tag}"),)


def test_mps_refusal_is_the_v0_16_text_and_says_mps_nvidia_929(tmp_path: Path) -> None:
    """NVIDIA/k8s-device-plugin#929 (v0.16.2, MPS, 10 replicas, a container asking for 10): the pod's
    message is the v0.15+ ValidateRequest text with "found 10", and the cause is MPS, which before v0.20.0
    refuses more than one replica whatever failRequestsGreaterThanOne says (rm.go v0.16.2) — not
    time-slicing."""
    exp = explain(tmp_path, "mps-request-gt-one", "default/infer-2gpu")
    assert exp.kubelet is not None and exp.kubelet["reason"] == "UnexpectedAdmissionError"
    assert exp.kubelet["message"] == (
        KUBELET
        + 'invalid allocation request for "nvidia.com/gpu": invalid request: maximum request size for '
        "shared resources is 1; found 10, which is unexpected"
    )
    evidence = exp.kubelet["evidence"]
    assert "(v0.16.2)" in evidence and "MPS" in evidence and "before v0.20.0" in evidence
    notes = " ".join(exp.notes)
    assert "time-slice" not in notes and "with MPS, 1 replica per container" in notes


def test_the_old_text_before_v0_15(tmp_path: Path) -> None:
    """The same container under a time-slicing plugin v0.14.5 with failRequestsGreaterThanOne (MPS came in
    v0.15.0): the v0.14 server.go Allocate text."""
    timeslicing = (
        ("sharing:\\n  mps:\\n", "sharing:\\n  timeSlicing:\\n    failRequestsGreaterThanOne: true\\n"),
        ("sharing-strategy: mps", "sharing-strategy: time-slicing"),
    )
    exp = explain(tmp_path, "mps-request-gt-one", "default/infer-2gpu", release("v0.14.5") + timeslicing)
    assert exp.kubelet is not None
    assert exp.kubelet["message"] == (
        KUBELET
        + "request for 'nvidia.com/gpu: 10' too large: maximum request size for shared resources is 1, "
        "which is unexpected"
    )
    assert "time-slices" in exp.kubelet["evidence"]


def test_mps_fail_false_is_honoured_only_from_v0_20(tmp_path: Path) -> None:
    """PR #1762 (v0.20.0): sharing.mps.failRequestsGreaterThanOne: false lets kubelet admit the container;
    v0.19.3's rm.go ignores it for MPS and still refuses, with the v0.15+ text."""
    relaxed = (("replicas: 10\\n", "replicas: 10\\n    failRequestsGreaterThanOne: false\\n"),)
    old = explain(tmp_path, "mps-request-gt-one", "default/infer-2gpu", release("v0.19.3") + relaxed)
    assert old.kubelet is not None and old.kubelet["message"].endswith("found 10, which is unexpected")
    new = explain(tmp_path, "mps-request-gt-one", "default/infer-2gpu", release("v0.20.0") + relaxed)
    assert new.kubelet is None


def test_newest_release_when_no_plugin_image(tmp_path: Path) -> None:
    """No plugin image in the snapshot: the v0.20.0 text, and the evidence says the release is assumed."""
    gone = (("nvcr.io/nvidia/k8s-device-plugin:v0.16.2", "example.com/other:latest"),)
    exp = explain(tmp_path, "mps-request-gt-one", "default/infer-2gpu", gone)
    assert exp.kubelet is not None and "found 10" in exp.kubelet["message"]
    assert "v0.20.0, assumed" in exp.kubelet["evidence"]


def test_hami_pod_gets_no_kubelet_rejection_hami_602(tmp_path: Path) -> None:
    """Project-HAMi/HAMi#602: nvidia.com/gpu: 2 + nvidia.com/gpumem on a node advertising only
    nvidia.com/gpu. kubelet drops extended resources the node does not advertise before its fit check
    (removeMissingExtendedResources, pkg/kubelet/lifecycle/predicate.go) and its device manager skips
    resources no plugin registers (isDevicePluginResource, pkg/kubelet/cm/devicemanager/manager.go): no
    admission error. HAMi's own limit (each vGPU of a container on a different physical GPU) is read from
    hami.io/node-nvidia-register: the thread's one T4 ("request devices nums cannot exceed the total number of
    devices on the node", request 2, node 1)."""
    exp = explain(tmp_path, "hami-vgpu-count-over-physical", "default/gpu-pod")
    assert exp.kubelet is None
    notes = " ".join(exp.notes)
    assert "would then fail it at admission" not in notes and "UnexpectedAdmissionError" not in notes
    assert "Insufficient nvidia.com/gpumem" not in notes
    assert "different physical GPU" in notes and "hami.io/node-nvidia-register" in notes
    assert "lists 1 physical GPU(s): hami-scheduler refuses the node (NodeInsufficientDevice)" in notes
    assert exp.allocation == []  # HAMi's device plugin chooses, which kubegpu does not model
