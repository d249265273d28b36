"""Cases rebuilt from public reports (each fixture's header cites its issue) where a GPU Operator operand's
own state keeps a node dark: labels and pods the operator's components set. Expected values come from the
threads and the upstream source named in each test, not from kubegpu's output."""

from __future__ import annotations

from tests.realcases.test_autoscale_init import first_step
from tests.realcases.test_realcases import case, finding, fixes, pending


def test_mig_manager_paused_deploy_labels_gpu_operator_2833() -> None:
    """NVIDIA/gpu-operator#2833: the MIG manager set every nvidia.com/gpu.deploy.* label to
    paused-for-mig-change and nvidia.com/mig.config.state=pending, then stopped, so the device plugin
    DaemonSet no longer selects the node. mig-parted pkg/mig/reconfigure/reconfigure.go: Run sets the state
    pending, shutdownKubernetesGPUClients writes maybeSetPaused's "paused-for-mig-change", and only setState /
    restartKubernetesGPUClients put "true" back. The cause is the MIG manager's, not a label to add by hand."""
    data = case("gpu-operator-mig-paused")
    f = finding(data, "GPU node advertises no GPU resource")
    assert "NVIDIA's MIG manager" in f["detail"]
    assert "nvidia.com/mig.config=all-1g.5gb (nvidia.com/mig.config.state=pending)" in f["detail"]
    # where to look first: the manager's own pod on the node, read-only
    assert "kubectl -n gpu-operator logs nvidia-mig-manager-7kq2p --tail=200" in f["commands"]
    assert "kubectl label node" not in f["detail"]
    p = pending(data, "ml/infer-mig")
    assert "MIG manager" in fixes(p)
    assert "MIG manager" in first_step("gpu-operator-mig-paused")
