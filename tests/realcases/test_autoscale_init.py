"""Cases rebuilt from public reports (each fixture's header cites its issue) on GPU nodes that wait for
something outside the scheduler: an init container of the device plugin that never completes, and node
autoscalers (cluster-autoscaler, Karpenter) that said why they added no node. Expected values come from the
threads, not from kubegpu's output."""

from __future__ import annotations

from tests.realcases.test_realcases import case, finding, fixes, pending


def test_gke_nap_driver_installer_blocks_the_plugin_container_engine_accelerators_407() -> None:
    """GKE's nvidia-gpu-device-plugin pod sits at Init:0/2: its first init container, nvidia-driver-installer,
    runs and never completes ("GPU driver auto installation is disabled. Waiting for GPU driver libraries",
    GoogleCloudPlatform/container-engine-accelerators#407; the fix in #402: a driver version for the NAP pool).
    The containers after it only wait (PodInitializing): naming them as the fault blames the symptom."""
    data = case("gke-nap-driver-installer")
    f = finding(data, "GPU node advertises no GPU resource")
    assert "init container nvidia-driver-installer is still running" in f["detail"]
    assert "gke-gpu-driver-version" in f["detail"]
    # the waiting ones are named as waiting for it, not as the fault
    assert "init container partition-gpus is PodInitializing" not in f["detail"]
    assert "wait for it (PodInitializing)" in f["detail"]
    # the pod's advice carries it: no change to the pod helps
    p = pending(data, "ml/train-l4-6wq9z")
    assert "init container nvidia-driver-installer is still running" in fixes(p)
