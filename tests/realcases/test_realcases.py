"""Cases rebuilt from public reports (each fixture's header cites its issue): kubegpu must name the cause
the thread found, and must not make the wrong claims it used to make on them (issue 21's "Why": blaming the
pod's resource name, "add a toleration" to the pod alone, a default-scheduler message for another
scheduler's pod, "did you mean" on HAMi/Volcano resources, no word of MIG, silence on FailedCreate).

Expected values come from the reports, not from kubegpu's output: the DaemonSet, taint, label, container
state and message each thread identified as the cause.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubegpu.batch.objects import parse_batch_objects
from kubegpu.cli.main import cli
from kubegpu.errors import InputError
from kubegpu.explain.diagnose import diagnose
from kubegpu.explain.engine import Engine
from kubegpu.sources import load_files
from tests.realcases.cases import (
    HERE,
    assert_no_name_blame,
    case,
    finding,
    fixes,
    pending,
)

# -- device plugin chain ------------------------------------------------------------------------------


def test_nfd_toleration_deadlock_k8s_device_plugin_1934() -> None:
    data = case("nfd-toleration-deadlock")
    f = finding(data, "GPU node advertises no GPU resource")
    # the plugin's affinity needs the NFD label; NFD's worker (Equal value=present) does not tolerate value true
    assert "kube-system/nvidia-device-plugin does not select" in f["detail"]
    assert "feature.node.kubernetes.io/pci-10de.present" in f["detail"]
    assert "Node Feature Discovery's worker" in f["detail"]
    assert "does not tolerate ip-10-0-1-23.ec2.internal's taint nvidia.com/gpu=true:NoSchedule" in f["detail"]
    assert f["severity"] == "critical"
    # the node is known by its EKS label and GPU taint, and appears in the node table
    assert [n["name"] for n in data["nodes"]] == ["ip-10-0-1-23.ec2.internal"]
    assert_no_name_blame(data)


def test_custom_taint_keeps_pod_and_plugin_off_k8s_device_plugin_421() -> None:
    data = case("custom-taint-gpu")
    p = pending(data, "default/gpu-pod")
    fix = fixes(p)
    assert (
        "keeps both this pod and the device plugin (kube-system/nvidia-device-plugin-daemonset) off dell-server"
        in fix
    )
    assert "a toleration on the pod alone would still find no GPU" in fix
    # the old one-sided advice is gone
    assert "otherwise leave them alone" not in fix
    # the pod's own PodScheduled message / event (from the report) is shown beside the prediction
    obs = p["observed"]
    assert obs["reporter"] == "default-scheduler" and "untolerated taint {gpu: }" in obs["message"]
    # the report's wording ("{gpu: }") is 1.2x's; the newest release says "untolerated taint(s)"
    assert obs["agrees"] is False and any("kube-scheduler 1." in w for w in obs["likelyReasons"])
    assert_no_name_blame(data)


def test_gpu_taint_repels_untolerating_plugin_k8s_device_plugin_68() -> None:
    data = case("gpu-taint-repels-plugin")
    f = finding(data, "GPU node advertises no GPU resource")
    assert "does not tolerate gpu-worker's taint nvidia.com/gpu:NoSchedule" in f["detail"]
    assert (
        "Add a toleration for nvidia.com/gpu (effect NoSchedule) to the DaemonSet's pod template"
        in f["detail"]
    )
    assert "cloud.google.com/gke-accelerator=nvidia-tesla-k80" in f["detail"]
    assert [n["name"] for n in data["nodes"]] == ["gpu-worker"]
    assert_no_name_blame(data)


def test_driver_init_crashloop_gpu_operator_258() -> None:
    data = case("gpu-operator-driver-crashloop")
    f = finding(data, "GPU node advertises no GPU resource")
    assert "the NVIDIA driver (gpu-operator-resources/nvidia-driver-daemonset) is not ready" in f["detail"]
    assert "init container k8s-driver-manager is CrashLoopBackOff (restarts 9)" in f["detail"]
    # the driver is named before the waiting device plugin
    assert f["detail"].index("NVIDIA driver") < f["detail"].index("device plugin (gpu-operator-resources")
    assert_no_name_blame(data)


def test_device_plugin_crashloop_gpu_operator_35() -> None:
    data = case("device-plugin-crashloop")
    f = finding(data, "GPU node advertises no GPU resource")
    assert "container nvidia-device-plugin-ctr is CrashLoopBackOff (restarts 12)" in f["detail"]
    assert "gpu-operator-resources/nvidia-device-plugin-daemonset-5crlk" in f["detail"]
    p = pending(data, "ml/train")
    assert "so no change to this pod helps" in fixes(p)
    assert_no_name_blame(data)


def test_hami_plugin_needs_gpu_on_label_hami_871() -> None:
    data = case("hami-device-plugin-no-label")
    f = finding(data, "GPU node advertises no GPU resource")
    assert (
        "kube-system/hami-device-plugin does not select worker-3090: its nodeSelector needs gpu=on"
        in f["detail"]
    )
    assert "(status: desired 0)" in f["detail"]
    assert "kubectl label node worker-3090 gpu=" in f["detail"]
    assert_no_name_blame(data)


def test_capacity_zero_with_mig_mixed_gpu_operator_442() -> None:
    data = case("gpu-capacity-zero")
    f = finding(data, "GPU node advertises no GPU resource")
    assert "nvidia.com/gpu capacity 0" in f["detail"]
    assert "MIG mode is on and no MIG instance exists" in f["detail"]
    # capacity 0 is not a count-label disagreement, and the pod's advice is not fragmentation
    assert "GPU count label disagrees with capacity" not in [x["title"] for x in data["findings"]]
    assert "scattered" not in fixes(pending(data, "default/cuda-test"))


def test_aks_spot_taints_keep_the_plugin_off_aks_4418() -> None:
    data = case("aks-spot-taints")
    f = finding(data, "GPU node advertises no GPU resource")
    # both Spot taints are untolerated by the plugin (it tolerates sku=gpu and nvidia.com/gpu only)
    assert (
        "does not tolerate aks-gpuspot-12345678-vmss000000's taints type=gpu-spot:NoSchedule, "
        "kubernetes.azure.com/scalesetpriority=spot:NoSchedule" in f["detail"]
    )
    assert f["detail"].startswith("accelerator=nvidia mark it a GPU node")
    # the AKS node appears in the node table under its agent pool
    assert [(n["name"], n["pool"]) for n in data["nodes"]] == [("aks-gpuspot-12345678-vmss000000", "gpuspot")]
    assert_no_name_blame(data)


def test_karpenter_node_without_any_device_plugin_karpenter_3862() -> None:
    data = case("karpenter-no-device-plugin")
    f = finding(data, "GPU node advertises no GPU resource")
    assert "karpenter.k8s.aws/instance-gpu-count=1" in f["detail"]
    assert "no device plugin DaemonSet is in the cluster" in f["detail"]
    assert "so no change to this pod helps" in fixes(pending(data, "default/inference"))
    assert_no_name_blame(data)


# -- other schedulers, gates, admission ---------------------------------------------------------------


def test_hami_scheduler_pod_is_hamis_hami_815() -> None:
    data = case("hami-scheduler-node-unregistered")
    p = pending(data, "default/gpu-pod")
    assert p["schedulerName"] == "hami-scheduler"
    assert p["handledBy"].startswith("handled by hami-scheduler (HAMi)")
    obs = p["observed"]
    assert (
        obs["reporter"] == "hami-scheduler"
        and obs["message"] == "0/1 nodes are available: 1 node unregistered."
    )
    assert any("written by hami-scheduler" in w for w in obs["likelyReasons"])
    # the fixture's node1 has no hami.io/node-nvidia-register annotation: what "unregistered" means to HAMi
    assert any("hami.io/node-nvidia-register annotation; node1 lacks it" in w for w in obs["likelyReasons"])


def test_hami_resources_on_default_scheduler_hami_536() -> None:
    data = case("hami-gpumem-default-scheduler")
    p = pending(data, "default/gpu-pod")
    notes = " ".join(p["notes"])
    assert "hami-scheduler never took this pod" in notes
    assert "HAMi's mutating webhook sets schedulerName hami-scheduler" in notes
    assert "only HAMi's hami-scheduler resolves it" in fixes(p)
    assert "pod requests a resource no node advertises" not in [f["title"] for f in data["findings"]]
    assert_no_name_blame(data)


def test_volcano_vgpu_pod_volcano_2907() -> None:
    data = case("volcano-vgpu")
    p = pending(data, "default/gpu-pod12")
    assert p["handledBy"].startswith("handled by volcano (Volcano)")
    # vgpu-memory is Volcano's own (2000 + 3000 MiB over two containers); vgpu-number (2 + 2) is advertised
    assert "volcano.sh/vgpu-memory=5000: Volcano's own resources" in " ".join(p["notes"])
    assert p["schedulable"] is True and p["node"] == "gpu-node"  # 4 of 10 vgpu-number fit
    assert p["observed"]["reporter"] == "volcano"
    assert not data["findings"]  # no "unknown resource" finding
    assert_no_name_blame(data)


def test_kai_gpu_fraction_pod_is_a_pending_gpu_pod_kai_65() -> None:
    data = case("kai-gpu-fraction")
    p = pending(data, "default/gpu-sharing")
    assert p["handledBy"].startswith("handled by kai-scheduler (KAI)")
    assert "gpu-fraction=0.1" in " ".join(p["notes"]) and "queue test" in " ".join(p["notes"])
    assert p["message"] == ""  # no default-scheduler message predicted
    assert "does not exist" not in " ".join(p["notes"])  # queue test is in the snapshot


def test_kai_pod_naming_a_missing_queue(tmp_path: Path) -> None:
    # the same pod, its label pointing at a queue the cluster lacks (KAI quickstart: pods need an existing queue)
    text_ = (
        (HERE / "kai-gpu-fraction.yaml")
        .read_text(encoding="utf-8")
        .replace("runai/queue: test", "runai/queue: tset")
    )
    (tmp_path / "c.yaml").write_text(text_, encoding="utf-8")
    data = diagnose(Engine(load_files(tmp_path / "c.yaml"))).to_dict()
    notes = " ".join(pending(data, "default/gpu-sharing")["notes"])
    assert "KAI queue tset does not exist (queues: default, test)" in notes


def test_extra_scheduling_gate_kueue_9482() -> None:
    data = case("extra-scheduling-gate")
    p = pending(data, "kueue-test/kueue-sleep-qw5hb")
    assert p["waiting"].startswith("waiting for admission by whatever removes the gate(s) test")
    assert "no FailedScheduling event is written" in p["waiting"]


def test_kueue_admitted_but_gated_kueue_11170() -> None:
    data = case("kueue-admitted-still-gated")
    p = pending(data, "research/trainer-0")
    assert p["waiting"].startswith(
        "waiting for admission by Kueue (LocalQueue gpu-queue → ClusterQueue cluster-queue)"
    )
    assert "Workload research/pod-trainer-0-3b1c2 is admitted: Kueue should remove the gate" in p["waiting"]


def test_kueue_quota_not_reserved_kueue_2391() -> None:
    data = case("kueue-quota-not-reserved")
    p = pending(data, "team-a/big-train")
    assert (
        "insufficient unused quota for nvidia.com/gpu in flavor default-flavor, 4 more needed" in p["waiting"]
    )
    # once admitted, the 4 GPUs fit on gpu-b (8 free): the node checks say so
    assert p["schedulable"] is True and p["node"] == "gpu-b"


# -- other schedulers' objects and events --------------------------------------------------------------


def test_hami_filtering_failed_is_what_the_cluster_said_hami_602() -> None:
    data = case("hami-vgpu-count-over-physical")
    p = pending(data, "default/gpu-pod")
    obs = p["observed"]
    # the thread's scheduler log: reason="FilteringFailed" message="no available node, all node scores do not
    # meet" (HAMi's extender, source hami-scheduler); the FailedScheduling of the same attempt only counts nodes
    assert (obs["source"], obs["reporter"], obs["reason"]) == ("event", "hami-scheduler", "FilteringFailed")
    assert obs["message"] == "no available node, all node scores do not meet"
    assert any("written by hami-scheduler" in w for w in obs["likelyReasons"])


def test_kai_unschedulable_event_is_what_the_cluster_said_kai_706() -> None:
    data = case("kai-gpu-memory-no-memory-label")
    obs = pending(data, "default/gpu-sharing")["observed"]
    assert (obs["reporter"], obs["reason"]) == ("kai-scheduler", "Unschedulable")
    assert obs["message"] == (
        "no nodes with enough resources were found: 1 node(s) didn't have enough resources: GPU memory."
    )


def test_kai_top_level_queue_event_kai_612() -> None:
    data = case("kai-top-level-queue")
    obs = pending(data, "default/train-pod")["observed"]
    # the report's two events: pod-grouper's PodGrouperWarning is no scheduling verdict; kai-scheduler's is
    assert (obs["reporter"], obs["reason"], obs["message"]) == (
        "kai-scheduler",
        "Unschedulable",
        "Unable to schedule pod",
    )


def test_the_other_schedulers_words_are_shown_by_explain() -> None:
    result = CliRunner().invoke(
        cli, ["explain", "default/gpu-pod", "--snapshot", str(HERE / "hami-vgpu-count-over-physical.yaml")]
    )
    assert result.exit_code == 0, result.output
    flat = " ".join(result.stdout.split())
    assert (
        "the cluster said (event FilteringFailed from hami-scheduler): no available node, all node scores do "
        "not meet" in flat
    )


def test_volcano_job_is_not_a_batch_v1_job_volcano_2814() -> None:
    snap = load_files(HERE / "volcano-inqueue-holds-queue.yaml")
    assert not snap.errors
    # the two vcjobs (batch.volcano.sh) are Volcano's, not Jobs of the batch/v1 Job controller
    assert [c for c in snap.records.controllers if c.kind == "Job"] == []
    assert snap.not_modelled == {("batch.volcano.sh", "Job"): 2}
    assert (
        snap.not_modelled_note() == "not modelled: 2 Job (batch.volcano.sh): they do not enter the diagnosis"
    )
    # Volcano's PodGroups and Queue are still read: the pending pod's gang and queue
    _, _, groups, errors = parse_batch_objects(snap.batch_objects)
    assert not errors and sorted(groups) == [
        "default/job-a-2b1c8f6e-0d7a-4c1e-9a51-1f0e6a3c7b10",
        "default/job-b-7e4d2a90-5b3f-4f8e-8c2d-6a9b0c1d2e3f",
    ]
    assert groups["default/job-a-2b1c8f6e-0d7a-4c1e-9a51-1f0e6a3c7b10"].queue == "default"
    assert [q["metadata"]["name"] for q in snap.records.queue_objects("Queue")] == ["default"]
    p = pending(case("volcano-inqueue-holds-queue"), "default/job-a-worker-0")
    assert p["queue"]["gang"]["minMember"] == 1 and p["queue"]["queue"] == "default"


def test_other_projects_crds_load_and_are_named_not_modelled() -> None:
    data = case("crds-not-modelled")  # asserts that nothing is an input error
    assert [p["pod"] for p in data["pending"]] == ["api-staging/gpu-pod-500mb-2"]
    snap = load_files(HERE / "crds-not-modelled.yaml")
    assert snap.not_modelled == {
        ("kai.scheduler", "SchedulingShard"): 1,
        ("kueue.x-k8s.io", "Topology"): 1,
        ("scheduling.run.ai", "PodGroup"): 1,
        ("karpenter.sh", "NodeClaim"): 1,
    }
    # KAI's PodGroup is not the Volcano / coscheduling PodGroup the batch layer reads
    assert snap.batch_objects == []
    assert parse_batch_objects(snap.batch_objects)[2] == {}


def test_crds_are_said_once_and_strict_still_exits_0() -> None:
    fixture = str(HERE / "crds-not-modelled.yaml")
    for command in (["diagnose"], ["inspect"], ["explain", "api-staging/gpu-pod-500mb-2"]):
        result = CliRunner().invoke(cli, [*command, "--snapshot", fixture, "--strict"])
        assert result.exit_code == 0, (command, result.output)
        notes = [line for line in result.stderr.splitlines() if "not modelled" in line]
        assert notes == [
            "note: not modelled: 1 SchedulingShard (kai.scheduler), 1 Topology (kueue.x-k8s.io), 1 PodGroup "
            "(scheduling.run.ai), 1 NodeClaim (karpenter.sh): they do not enter the diagnosis"
        ], command
        assert "error:" not in result.stderr


# -- quota at creation, MIG ---------------------------------------------------------------------------


def test_replicaset_exceeded_quota_moj_cloud_platform_590() -> None:
    data = case("replicaset-exceeded-quota")
    f = finding(
        data,
        "ReplicaSet offender-management-staging/allocation-manager-6597bc46dc cannot create its pods: ResourceQuota exceeded",
    )
    assert f["severity"] == "critical"
    assert "owned by Deployment allocation-manager" in f["detail"]
    assert "resourcequota/offender-management-staging/namespace-quota" in f["objects"]
    assert not data["pending"]


def test_statefulset_failed_quota_must_specify_hmcts_13765() -> None:
    """``failed quota: NAME: must specify …`` (podEvaluator.Constraints) is a quota refusal too: the
    finding names the quota and says what every container must set, not "exceeded"."""
    data = case("statefulset-failed-quota")
    f = finding(
        data,
        "StatefulSet fpl/fpl-case-service-pr-3308-es-master cannot create its pods: ResourceQuota needs cpu/memory set",
    )
    assert f["severity"] == "critical" and f["layer"] == "quota"
    assert "resourcequota/fpl/fpl-quota" in f["objects"]
    assert "every container and init container must set what it bounds" in f["detail"]
    assert "kubectl -n fpl describe resourcequota fpl-quota" in f["commands"]
    assert not data["pending"]


def test_whole_gpu_on_mig_node_names_profiles_cocalc_8161() -> None:
    data = case("mig-whole-gpu")
    fix = fixes(pending(data, "cocalc/notebook"))
    assert "a100-mig is MIG-partitioned: it offers mig-1g.5gb ×5, mig-2g.10gb ×1, not whole GPUs" in fix
    titles = [f["title"] for f in data["findings"]]
    assert titles == ["pod requests whole GPUs; every GPU is MIG-partitioned"]
    assert "nvidia.com/mig-1g.5gb, nvidia.com/mig-2g.10gb" in data["findings"][0]["detail"]
    assert_no_name_blame(data)


# -- input -----------------------------------------------------------------------------------------------


def test_pasted_describe_is_refused_with_the_command_to_run(tmp_path: Path) -> None:
    # the start of `kubectl describe pods` as pasted in NVIDIA/k8s-device-plugin#421
    pasted = tmp_path / "describe.txt"
    pasted.write_text(
        "Name:         gpu-pod\nNamespace:    default\nPriority:     0\nNode:         <none>\nLabels:       <none>\n"
        "Annotations:  <none>\nStatus:       Pending\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as err:
        load_files(pasted)
    line = err.value.one_line()  # the CLI prints this one line and exits 2 (cli.main's InputError handler)
    assert line.startswith(f"{pasted}: this is `kubectl describe` output")
    assert "kubectl get nodes,pods,daemonsets" in line


# -- kubelet admission and MIG-strategy findings ----------------------------------------------------------

ADMISSION = "kubelet rejected {pod} at admission (UnexpectedAdmissionError)"
MIG_INVALID = "MIG layout invalid for mig.strategy single"
OTHER_CASES = sorted(
    p.stem
    for p in HERE.glob("*.yaml")
    if p.stem
    not in (
        "reboot-admission",
        "mps-request-gt-one",
        "mig-single-invalid",
        "hami-admission-devices-unavailable",
        "kubelet-stale-device-count",
        "topology-affinity-h100-numa",  # (test_bound_pods)
        "gke-restart-outof-gpu",  # (test_bound_pods)
        "gpu-operator-validator-gpu-held",  # (test_unseen_cases)
        "kai-kubelet-outofmemory",  # (test_unseen_cases)
    )
)


def test_reboot_admission_error_is_final_kubernetes_125579() -> None:
    """kubernetes/kubernetes#125579 (fixture rebuilt from it): after a reboot kubelet re-admits a bare GPU pod
    before the device plugin re-registers; devicemanager's "no healthy devices present; cannot allocate
    unhealthy devices <res>" wrapped by the admit handler as "Allocate failed due to …, which is unexpected",
    reason UnexpectedAdmissionError (pkg/kubelet/lifecycle/predicate.go); the pod never recovers."""
    data = case("reboot-admission")
    f = finding(data, ADMISSION.format(pod="default/gpu-test"))
    assert f["severity"] == "critical"  # a bare pod: nothing brings it back
    assert (
        '"Allocate failed due to no healthy devices present; cannot allocate unhealthy devices nvidia.com/gpu, '
        'which is unexpected"' in f["detail"]
    )
    assert "gke-gpu-pool-1-3f2a9c1d-x7k2" in f["detail"]
    assert "kubelet does not admit it again" in f["detail"]
    assert "Bare pod: nothing re-creates it; delete it and create it again" in f["detail"]
    assert "node reboot or a device plugin restart" in f["detail"]
    assert "pod/default/gpu-test" in f["objects"] and "node/gke-gpu-pool-1-3f2a9c1d-x7k2" in f["objects"]


def test_mps_request_over_one_k8s_device_plugin_929() -> None:
    """NVIDIA/k8s-device-plugin#929 (fixture rebuilt from it): with MPS the plugin's Allocate refuses a request
    for more than one shared replica, "maximum request size for shared resources is 1; found 10"
    (internal/rm/rm.go, which ignores failRequestsGreaterThanOne for MPS); kubelet fails the pod at admission."""
    data = case("mps-request-gt-one")
    f = finding(data, ADMISSION.format(pod="default/infer-2gpu"))
    assert "maximum request size for shared resources is 1; found 10" in f["detail"]
    assert "more than one replica of a shared" in f["detail"]
    assert f["layer"] == "workload"
    assert "node reboot" not in f["detail"]


def test_mig_single_mixed_layout_gpu_operator_479() -> None:
    """NVIDIA/gpu-operator#479 (fixture rebuilt from it): mig.strategy=single with the all-balanced config
    (several profiles per GPU); GFD's newInvalidMigStrategyLabeler (k8s-device-plugin internal/lm/
    mig-strategy.go) labels <model>-MIG-INVALID with count/replicas/memory 0 and the plugin stops at
    "more than one MIG device type present on node" (internal/rm/device_map.go)."""
    data = case("mig-single-invalid")
    f = finding(data, MIG_INVALID)
    assert f["objects"] == ["node/a100-node-1"]
    for label in (
        "nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB-MIG-INVALID",
        "nvidia.com/gpu.count=0",
        "nvidia.com/mig.strategy=single",
        "nvidia.com/mig.config=all-balanced",
        "more than one MIG device type present on node",
        "mig.strategy=mixed",
        "one profile",
    ):
        assert label in f["detail"], label
    # the device plugin's own state is still reported beside it
    finding(data, "GPU node advertises no GPU resource")


@pytest.mark.parametrize("name", OTHER_CASES)
def test_other_cases_have_no_admission_or_mig_invalid_finding(name: str) -> None:
    """The other threads' clusters have no pod kubelet rejected and no MIG-INVALID node: neither finding."""
    titles = [f["title"] for f in case(name)["findings"]]
    assert not [t for t in titles if t.startswith("kubelet rejected") or t == MIG_INVALID], titles


def test_admission_rejections_group_and_follow_the_controller(tmp_path: Path) -> None:
    """kubernetes#125579's reboot with a Deployment's pods instead of a bare one (the thread's case at scale):
    alike rejections are one finding; a ReplicaSet replaces a Failed pod (FilterActivePods drops it), so it is
    a warning naming the ReplicaSet; a Running GPU pod and a Failed pod with another reason are not reported."""
    src = (HERE / "reboot-admission.yaml").read_text(encoding="utf-8")
    pod = src[
        src.index("apiVersion: v1\nkind: Pod\nmetadata:\n  name: gpu-test") : src.index(
            "---\napiVersion: v1\nkind: Event"
        )
    ]
    docs = [src[: src.index("---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: gpu-test")]]
    owner = "  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: infer-7d9f, controller: true, uid: u}]\n"
    for i in range(30):
        docs.append(pod.replace("name: gpu-test\n", f"name: infer-7d9f-{i:02d}\n" + owner, 1))
    running = pod.replace("name: gpu-test\n", "name: healthy\n", 1).replace("phase: Failed", "phase: Running")
    evicted = pod.replace("name: gpu-test\n", "name: evicted\n", 1).replace(
        "UnexpectedAdmissionError", "Evicted"
    )
    path = tmp_path / "many.yaml"
    path.write_text("---\n".join([*docs, running, evicted]), encoding="utf-8")
    snap = load_files(path)
    assert not snap.errors, [e.one_line() for e in snap.errors]
    data: dict[str, Any] = diagnose(Engine(snap)).to_dict()
    rejected = [f for f in data["findings"] if f["title"].startswith("kubelet rejected")]
    assert [f["title"] for f in rejected] == [
        "kubelet rejected 30 GPU pods at admission (UnexpectedAdmissionError)"
    ]
    f = rejected[0]
    assert f["severity"] == "warning"
    assert "Its ReplicaSet infer-7d9f creates a replacement" in f["detail"]
    assert "+18 more" in f["detail"]
    assert "pod/default/healthy" not in f["objects"] and "pod/default/evicted" not in f["objects"]
    assert len([o for o in f["objects"] if o.startswith("pod/")]) == 30
