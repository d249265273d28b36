"""Cases rebuilt from public reports (each fixture's header cites its issue) where a GPU Operator operand's
own state keeps a node dark: labels and pods the operator's components set. Expected values come from the
threads and the upstream source named in each test, not from kubegpu's output."""

from __future__ import annotations

from typing import Any

from tests.realcases.cases import case, finding, first_step, fixes, pending


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


def test_cuda_validator_crashloop_on_a_lit_node_gpu_operator_1947() -> None:
    """NVIDIA/gpu-operator#1947: the node advertises its GPU (the device plugin runs), but the GPU Operator's
    CUDA check crash-loops ("CUDA driver version is insufficient for CUDA runtime version"). The validator's
    workload pod is gpu-operator validator/manifests/cuda-workload-validation.yaml (app=nvidia-cuda-validator,
    init container cuda-validation running vectorAdd). kubelet's CrashLoopBackOff message is only its back-off
    (kuberuntime_manager.go doBackOff: "back-off %s restarting failed container=%s pod=%s"): the failure is in
    lastState.terminated and must be what is shown."""
    f = finding(
        case("gpu-operator-cuda-validator-crash"), "GPU stack pod failing on a node that advertises GPUs"
    )
    assert f["objects"] == ["pod/nvidia-gpu-operator/nvidia-cuda-validator-q6m4x", "node/gpu-worker-0"]
    said = [
        "init container cuda-validation is CrashLoopBackOff (restarts 5)",
        "CUDA driver version is insufficient for CUDA runtime version",  # lastState.terminated.message
        "cudaErrorInsufficientDriver",
    ]
    assert [s for s in said if s not in f["detail"]] == []
    # not kubelet's back-off text, nor the main container that only waits for the init container
    assert (
        "back-off 2m40s" not in f["detail"] and "nvidia-cuda-validator is PodInitializing" not in f["detail"]
    )
    assert (
        f["commands"][0]
        == "kubectl -n nvidia-gpu-operator logs nvidia-cuda-validator-q6m4x --all-containers --tail=100"
    )


def test_kubelet_counts_devices_of_gone_pods_kubernetes_130145() -> None:
    """kubernetes/kubernetes#130145: default-scheduler pods keep failing UnexpectedAdmissionError "requested
    number of devices unavailable for nvidia.com/gpu. Requested:1, Available: 0" on a node whose registered GPUs
    are all healthy and mostly unrequested; kubelet's devicemanager kept devices in allocatedDevices after a
    failed devicesToAllocate (fix kubernetes/kubernetes#130172), restarting kubelet cleared it. The numbers the
    snapshot holds (allocatable 8 = capacity, 2 requested on the node) rule out the other readings."""
    f = finding(
        case("kubelet-stale-device-count"),
        "kubelet rejected 2 GPU pods at admission (UnexpectedAdmissionError)",
    )
    assert (
        "gpu-node-07: 8 allocatable, all healthy, 2 requested by the pods bound there, 6 free" in f["detail"]
    )
    assert "kubernetes#130145" in f["detail"] and "restarted" in f["detail"]
    # HAMi-core#110's pods were placed by hami-scheduler, which counts by its own rules: no such reading there
    hami = finding(
        case("hami-admission-devices-unavailable"),
        "kubelet rejected default/gpu-workload-short at admission (UnexpectedAdmissionError)",
    )
    assert "kubernetes#130145" not in hami["detail"]


def test_chart_affinity_with_no_nfd_or_gfd_k8s_device_plugin_607() -> None:
    """NVIDIA/k8s-device-plugin#607: the v0.15.0-rc.2 chart's required node affinity (values.yaml: NFD's
    feature.node.kubernetes.io/pci-10de.present, cpu-model.vendor_id, or nvidia.com/gpu.present=true "to force a
    GPU deployment") matches no node when neither NFD nor GFD runs (gfd.enabled: false by default); the user's fix
    was `kubectl label node node${i} nvidia.com/gpu.present=true`. The advice says so, with its dry run and rollback."""
    f = finding(case("device-plugin-no-label-setter"), "GPU node advertises no GPU resource")
    assert "none of Node Feature Discovery's worker, GPU Feature Discovery runs in the cluster" in f["detail"]
    assert "label the GPU nodes nvidia.com/gpu.present=true" in f["detail"]
    cmds = f["commands"]
    dry = cmds.index(
        "kubectl -n nvidia-device-plugin label node node1 nvidia.com/gpu.present=true --dry-run=server"
    )
    assert cmds[dry + 1] == "kubectl -n nvidia-device-plugin label node node1 nvidia.com/gpu.present=true"
    assert cmds[dry + 2].startswith(
        "kubectl -n nvidia-device-plugin label node node1 nvidia.com/gpu.present-"
    )


def test_nothing_pending_but_gpu_work_failing_is_the_first_step() -> None:
    """Neither NVIDIA/gpu-operator#1947 (the CUDA validator crash-looping) nor kubernetes/kubernetes#130145
    (Job pods refused by kubelet, replaced and refused again) has a Pending GPU pod; "nothing is blocked" read
    as an all-clear on both."""
    assert first_step("gpu-operator-cuda-validator-crash") == (
        "no Pending GPU pod is blocked, but look at the warning: GPU stack pod failing on a node that advertises GPUs"
    )
    assert first_step("kubelet-stale-device-count").endswith(
        "kubelet rejected 2 GPU pods at admission (UnexpectedAdmissionError)"
    )


def test_driver_image_not_found_is_the_first_step_gpu_operator_1623() -> None:
    """NVIDIA/gpu-operator#1623 (v25.3.2, GKE COS 121): nvidia-driver-daemonset's image
    nvcr.io/nvidia/driver:570.148.08-cos121 does not exist (kubelet: "... not found"), so the driver, and
    after it the validator and the device plugin (both wait on /run/nvidia/validations), never start. The
    validator DaemonSet (assets/state-operator-validation, nvidia-operator-validator) is not a device plugin:
    it must not be named one. The first step reads the driver pod."""
    data = case("gpu-operator-driver-image-notfound")
    f = finding(data, "GPU node advertises no GPU resource")
    why = f["detail"].split("Why: ", 1)[1]
    assert why.startswith("the NVIDIA driver (nvidia/nvidia-driver-daemonset) is not ready")
    assert "nvcr.io/nvidia/driver:570.148.08-cos121: not found" in why
    assert "device plugin (nvidia/nvidia-operator-validator)" not in f["detail"]
    assert "the GPU Operator's validator (nvidia/nvidia-operator-validator)" in f["detail"]
    assert f["commands"][0] == "kubectl -n nvidia describe pod nvidia-driver-daemonset-h8x2k"
    assert "570.148.08-cos121: not found" in first_step("gpu-operator-driver-image-notfound")


def test_validator_toolkit_crash_is_named_not_the_waiting_plugin_gpu_operator_1374() -> None:
    """NVIDIA/gpu-operator#1374 (v25.3.0): nvidia-operator-validator's toolkit-validation crash-loops
    (exit 1, 20 restarts); the device plugin and dcgm-exporter pods only wait in their toolkit-validation init
    containers for the toolkit-ready file the validator writes. cmd/nvidia-validator/main.go Toolkit.validate
    runs nvidia-smi "to check if container run with toolkit injected files"; the thread's fix was CDI
    (cdi.enabled/cdi.default). dcgm-exporter carries the validator image in its init container
    (assets/state-dcgm-exporter/0800_daemonset.yaml) but registers no GPU: it is no device plugin."""
    data = case("gpu-operator-validator-toolkit-crash")
    f = finding(data, "GPU node advertises no GPU resource")
    why = f["detail"].split("Why: ", 1)[1]
    assert why.startswith(
        "the GPU Operator's validator (gpu-operator/nvidia-operator-validator) is not ready on gpu-worker-1: "
        "pod gpu-operator/nvidia-operator-validator-qpv7s: init container toolkit-validation is CrashLoopBackOff"
    )
    assert "runs nvidia-smi" in why and "cdi.enabled" in why
    assert "nvidia-dcgm-exporter" not in f["detail"]
    assert f["commands"][:2] == [
        "kubectl -n gpu-operator logs nvidia-operator-validator-qpv7s -c toolkit-validation --previous",
        "kubectl -n gpu-operator describe pod nvidia-operator-validator-qpv7s",
    ]
    assert "nvidia-operator-validator" in first_step("gpu-operator-validator-toolkit-crash")


def test_split_validator_image_after_v25_10_gpu_operator_1968() -> None:
    """NVIDIA/gpu-operator#1968: after upgrading to v25.10.1 the operands' new pods back off pulling
    nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.10.1. The maintainer: "Starting in 25.10.0, we
    consolidated the gpu-operator and gpu-operator-validator images into a single image" (PR 1483), so values
    naming the old validator image are the cause; an older validator tag is a plain pull failure."""
    from kubegpu.explain.operand_hints import image_hint

    data = case("gpu-operator-validator-image-v25-10")
    f = finding(data, "GPU node advertises no GPU resource")
    assert "from GPU Operator v25.10.0 the validator is in the operator's own image" in f["detail"]
    assert "validator.repository / validator.image" in first_step("gpu-operator-validator-image-v25-10")
    assert image_hint("nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.3.4") == ""
    assert image_hint("nvcr.io/nvidia/cloud-native/gpu-operator-validator:26.7.0") != ""
    assert image_hint("nvcr.io/nvidia/gpu-operator:v25.10.1") == ""


def test_operator_waits_for_nfd_pci_label_gpu_operator_423() -> None:
    """NVIDIA/gpu-operator#423: only the GPU Operator's NFD worker DaemonSet exists and the GPU node lacks
    feature.node.kubernetes.io/pci-10de.present; the operator makes its DaemonSets only for nodes with one of
    its gpuNodeLabels (controllers/state_manager.go: pci-10de, pci-0302_10de, pci-0300_10de). "Install the
    GPU Operator" is wrong there: it is installed and waits for NFD's label."""
    data = case("gpu-operator-nfd-label-missing")
    f = finding(data, "GPU node advertises no GPU resource")
    assert "has none of feature.node.kubernetes.io/pci-10de.present=true" in f["detail"]
    assert "nfd-master" in f["detail"]
    assert "or the GPU Operator)" not in f["detail"]
    assert f["commands"] == [
        "kubectl -n gpu-operator get pods -o wide",
        "kubectl -n default get node ip-10-0-2-41.ec2.internal --show-labels",
    ]
    assert "pci-10de.present" in first_step("gpu-operator-nfd-label-missing")


def test_crashing_plugin_is_read_from_its_previous_log_k8s_device_plugin_1132() -> None:
    """NVIDIA/k8s-device-plugin#1132: the plugin container exits 1 at start ("error starting plugins: unable to
    load config: unable to validate flags: using MPS requires --mps-root to be specified"), which only its log
    says: kubelet keeps the exited instance's log for `kubectl logs --previous`. That is the first step."""
    f = finding(case("device-plugin-mps-root"), "GPU node advertises no GPU resource")
    assert (
        "container nvidia-device-plugin-ctr is CrashLoopBackOff (restarts 7): Error exit code 1"
        in f["detail"]
    )
    assert f["commands"][0] == (
        "kubectl -n kube-system logs nvidia-device-plugin-daemonset-1-d4kvt -c nvidia-device-plugin-ctr --previous"
    )


def test_unresolvable_cdi_device_of_a_running_gpu_pod_nvidia_container_toolkit_1239() -> None:
    """NVIDIA/nvidia-container-toolkit#1239: a pod given the node's T4 (device plugin, GPU Operator with
    cdi.enabled) fails at container creation: "failed to inject CDI devices: unresolvable CDI devices
    management.nvidia.com/gpu=GPU-e78e68c0-...", the generated management spec holding only "all".
    container-device-interface pkg/cdi/cache.go InjectDevices returns that error for a device name no spec in
    the spec directories defines. No pod is Pending, so "nothing is blocked" hid a GPU held by a pod that
    never runs."""
    data = case("cdi-device-unresolvable")
    f = finding(data, "GPU pod cannot start: its CDI device is unknown on the node")
    assert f["objects"] == ["pod/default/cuda-test", "node/rke2-gpu"]
    assert (
        "unresolvable CDI devices management.nvidia.com/gpu=GPU-e78e68c0-4e6a-737e-f9cc-4223fe50aead"
        in f["detail"]
    )
    assert "holds 1 nvidia.com/gpu on rke2-gpu" in f["detail"]
    assert "GPU pod cannot start" in first_step("cdi-device-unresolvable")


def test_operand_and_cdi_findings_of_one_cluster_are_each_case_s_own_stack_pods_first() -> None:
    """Both cases in one snapshot, the CDI case (NVIDIA/nvidia-container-toolkit#1239) read first: each finding
    is the one its own case gives (their pods and nodes do not touch), and the GPU stack pod's
    (NVIDIA/gpu-operator#1947) is listed before the GPU pod's, whatever order the pods come in."""
    from kubegpu.explain import device_plugin
    from kubegpu.explain.findings_operands import operand_findings
    from kubegpu.sources import load_files
    from tests.realcases.cases import HERE

    def found(*names: str) -> list[Any]:
        snap = load_files(*(HERE / f"{n}.yaml" for n in names))
        assert not snap.errors, [e.one_line() for e in snap.errors]
        return operand_findings(snap, device_plugin.check_nodes(snap))

    cdi, operand = found("cdi-device-unresolvable"), found("gpu-operator-cuda-validator-crash")
    assert [f.title for f in cdi] == ["GPU pod cannot start: its CDI device is unknown on the node"]
    assert [f.title for f in operand] == ["GPU stack pod failing on a node that advertises GPUs"]
    assert found("cdi-device-unresolvable", "gpu-operator-cuda-validator-crash") == operand + cdi
