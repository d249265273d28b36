"""Cases rebuilt from public reports (each fixture's header cites its issue) on GPU nodes that wait for
something outside the scheduler: an init container of the device plugin that never completes, and node
autoscalers (cluster-autoscaler, Karpenter) that said why they added no node. Expected values come from the
threads, not from kubegpu's output."""

from __future__ import annotations

from click.testing import CliRunner

from kubegpu.cli.main import cli
from tests.realcases.cases import HERE, case, finding, first_step, fixes, pending


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


def test_cluster_autoscaler_gpu_group_at_zero_kubernetes_autoscaler_3869() -> None:
    """Cluster Autoscaler's NotTriggerScaleUp ("it wouldn't fit if a new node is added: 2 Insufficient
    nvidia.com/gpu, 1 max node group size reached", kubernetes/autoscaler#3869) is why no GPU node comes: the
    g4dn group at size 0 lacked the node-template tags (the thread's fix, via #3448). The scheduler's own event
    (JupyterHub's jhub-user-scheduler) stays the scheduler's word; the autoscaler's is read apart."""
    data = case("ca-scale-from-zero-gpu")
    p = pending(data, "jhub/jupyter-artpik")
    assert p["observed"]["reporter"] == "jhub-user-scheduler"
    said = p["autoscaler"]
    assert (said["reporter"], said["reason"]) == ("cluster-autoscaler", "NotTriggerScaleUp")
    meaning = " ".join(said["meaning"])
    assert "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu" in meaning
    assert "1 node group(s) are at their maximum size" in meaning
    assert "node-template/resources/nvidia.com/gpu" in first_step("ca-scale-from-zero-gpu")


def test_karpenter_event_is_not_the_schedulers_karpenter_provider_aws_5527() -> None:
    """Karpenter writes FailedScheduling too ("Failed to schedule pod, incompatible with nodepool ...",
    kubernetes-sigs/karpenter events.go), but it places no pod: kube-scheduler's own event is what the cluster
    said and matches the prediction's node reasons. Karpenter's text says the GPU NodePool's instance types fit
    but none had an offering (aws/karpenter-provider-aws#5527): capacity, not the pod."""
    data = case("karpenter-gpu-no-offering")
    p = pending(data, "default/llm-7d9c5b8f6-x2k4q")
    assert p["observed"]["reporter"] == "default-scheduler"
    assert not any("written by karpenter" in why for why in p["observed"]["likelyReasons"])
    said = p["autoscaler"]
    assert (said["reporter"], said["reason"]) == ("karpenter", "FailedScheduling")
    gpu, general = said["meaning"]
    assert gpu.startswith('NodePool "gpu"') and "offering (zone and capacity type)" in gpu
    assert general.startswith('NodePool "general-purpose"') and "outside its requirements" in general
    assert 'NodePool "gpu": instance types meet' in first_step("karpenter-gpu-no-offering")


def test_gpu_operator_plugin_waits_in_toolkit_validation_gpu_operator_378() -> None:
    """The GPU Operator's device plugin pod at Init:0/2: init container toolkit-validation runs "until [ -f
    /run/nvidia/validations/toolkit-ready ]" (NVIDIA/gpu-operator#378, no driver or toolkit pod in the posted
    list). The plugin's own containers only wait; what it waits for is the validator's toolkit-ready file."""
    data = case("gpu-operator-toolkit-validation-init")
    f = finding(data, "GPU node advertises no GPU resource")
    assert "init container toolkit-validation is still running" in f["detail"]
    assert "/run/nvidia/validations/toolkit-ready" in f["detail"]
    assert "container nvidia-device-plugin is PodInitializing" not in f["detail"]


def test_bare_rejected_pod_commands_dry_run_and_rollback_kubernetes_125579() -> None:
    """The bare pod kubelet rejected after a reboot (kubernetes/kubernetes#125579) must be deleted and created
    again; each change comes with its --dry-run=server form first and the way back, and the saved manifest is
    one the API server takes back: a create that sets metadata.resourceVersion is refused (k8s.io/apiserver
    pkg/storage errors.go errResourceVersionSetOnCreate), and a kept spec.nodeName binds the new pod to the
    same node without the scheduler."""
    data = case("reboot-admission")
    f = finding(data, "kubelet rejected default/gpu-test at admission (UnexpectedAdmissionError)")
    cmds = f["commands"]
    delete = cmds.index("kubectl -n default delete pod gpu-test")
    assert cmds[delete - 1] == "kubectl -n default delete pod gpu-test --dry-run=server"
    assert any(
        c.startswith("kubectl -n default get pod gpu-test -o yaml > gpu-test.yaml") for c in cmds[:delete]
    )
    create = next(i for i, c in enumerate(cmds) if c.startswith("kubectl -n default create -f gpu-test.yaml"))
    assert cmds[create] == "kubectl -n default create -f gpu-test.yaml --dry-run=server"
    assert create > delete
    edit = " ".join(cmds[delete:create])
    assert "metadata.resourceVersion" in edit and "spec.nodeName" in edit


def test_admission_devices_unavailable_hami_core_110() -> None:
    """kubelet's devicemanager refused the second HAMi pod: "requested number of devices unavailable for
    nvidia.com/gpu. Requested: 1, Available: 0" (Project-HAMi/HAMi-core#110; the text of devicesToAllocate,
    pkg/kubelet/cm/devicemanager/manager.go: healthy devices less those kubelet already assigned). The finding
    says what that count is and that it differed from the scheduler's, not a cause the thread did not find."""
    data = case("hami-admission-devices-unavailable")
    f = finding(data, "kubelet rejected default/gpu-workload-short at admission (UnexpectedAdmissionError)")
    assert "Requested: 1, Available: 0" in f["detail"]
    assert "healthy devices the plugin registered, less those it has already given to pods" in f["detail"]
    assert f["layer"] == "driver/device-plugin"
    assert "node reboot" not in f["detail"]


def test_diagnose_pod_on_a_rejected_pod_names_its_finding_hami_core_110() -> None:
    """`diagnose --pod` on the pod kubelet rejected (Failed, not Pending; Project-HAMi/HAMi-core#110) points to
    the finding that explains it instead of only saying it is not Pending."""
    result = CliRunner().invoke(
        cli,
        ["diagnose", "--snapshot", str(HERE / "hami-admission-devices-unavailable.yaml"), "--pod",
         "default/gpu-workload-short"],
    )  # fmt: skip
    assert result.exit_code == 2
    flat = " ".join(result.output.split())
    assert "kubelet rejected default/gpu-workload-short at admission (UnexpectedAdmissionError)" in flat


def test_node_rows_leave_out_what_hami_counts_itself_hami_core_110() -> None:
    """HAMi's nvidia.com/gpucores (a pod asks 30 and 70 here) is resolved by HAMi's scheduler, never advertised
    by a node: the node table showed it as "capacity 0, requested 30, free 0", a shortage that is none. Only
    the resources the node lists, or that the scheduler kubegpu models counts, have rows."""
    data = case("hami-admission-devices-unavailable")
    [node] = data["nodes"]
    assert list(node["gpu"]) == ["nvidia.com/gpu"]


def test_another_schedulers_pod_gets_the_common_checks_cause_when_they_fail_autoscaler_3869() -> None:
    """jhub-user-scheduler (a kube-scheduler run under another name, kubernetes/autoscaler#3869) handles the pod,
    and the checks every scheduler makes (resources, taints, selectors) refuse it on every node: the first
    step is their cause and fix, said under that scheduler's name, not only "handled by jhub-user-scheduler"."""
    step = first_step("ca-scale-from-zero-gpu")
    assert step.startswith(
        "handled by jhub-user-scheduler (a scheduler kubegpu does not model), but the checks every scheduler "
        "makes refuse it: No node advertises nvidia.com/gpu"
    )
