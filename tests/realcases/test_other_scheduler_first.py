"""For a pod another scheduler handles, the grouped view's cause and first step are the cause kubegpu
established from that scheduler's own rule when it has one, not "handled by <scheduler>", which says only who
decides (QA rounds 14-16 left the first step generic on each of these cases). The rules, as pinned by the
tests that read each note: KAI's MaxNodeResources miscount (kai-scheduler/KAI-Scheduler#1876, fixed by PR
#1852; pkg/scheduler/k8s_internal/predicates/maxNodeResources.go), KAI taking MIG-off nodes under the mixed
strategy for MIG nodes (KAI-Scheduler#1120; pkg/scheduler/api/node_info/node_info.go IsMIGEnabled,
PredicateByNodeResourcesType), HAMi's one-physical-GPU-per-vGPU rule (Project-HAMi/HAMi#602, the fixture;
pkg/scheduler/score.go ``int(k.Nums) > len(typeDevices)`` -> NodeInsufficientDevice) and a stale HAMi
NodeUnfitPod refusal (Project-HAMi/HAMi#1368)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubegpu.cli.main import cli
from tests.realcases.cases import HERE, diagnosed


def test_kai_max_node_miscount_leads_kai_1876() -> None:
    s = diagnosed(HERE / "kai-mig-mixed-max-node.yaml")["summary"]
    assert s["causes"] == [
        {
            "cause": "kai-scheduler's MaxNodeResources miscount: the nodes advertise what it says no node has",
            "pods": 1,
        }
    ]
    assert s["firstStep"].startswith(
        'kai-scheduler said "No node in the default node-pool has nvidia.com/mig-1g.5gb resources", yet r7525-gpu1'
    )
    assert "upgrade kai-scheduler" in s["firstStep"]


def test_kai_mig_off_nodes_lead_kai_1120(tmp_path: Path) -> None:
    fixture = HERE / "kai-mig-zero-leftover.yaml"
    s = diagnosed(fixture)["summary"]
    assert s["causes"][0]["cause"].startswith("kai-scheduler takes the MIG-off nodes")
    assert (
        "kubectl -n default label node gpu-node-01 node-role.kubernetes.io/mig-enabled=false --dry-run=server"
        in (s["firstStep"])
    )
    assert (
        "rollback: `kubectl -n default label node gpu-node-01 node-role.kubernetes.io/mig-enabled-`"
        in s["firstStep"]
    )
    # its GPU ask is KAI's annotation (gpu-fraction: "0.5"), not a request: the group says so, not ""
    assert s["groups"][0]["shape"] == "gpu-fraction=0.5"
    # a second GPU node without MIG resources: KAI can place the fraction there, so the MIG-off node is not
    # what keeps the pod Pending and no cause is claimed (the note still names the node)
    other = fixture.read_text(encoding="utf-8").split("---\n", 1)
    second = (
        other[0][other[0].index("apiVersion: v1") :]
        .replace("gpu-node-01", "gpu-node-02")
        .replace("    nvidia.com/mig.strategy: mixed\n", "")
        .replace(', nvidia.com/mig-1g.24gb: "0", nvidia.com/mig-2g.48gb: "0"', "")
    )
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text(other[0] + "---\n" + second + "---\n" + other[1], encoding="utf-8")
    s = diagnosed(mixed)["summary"]
    assert s["causes"][0]["cause"] == "handled by kai-scheduler"


def test_a_mixed_node_without_mig_resources_is_a_place_for_the_pod_kai_1120(tmp_path: Path) -> None:
    """A second GPU node labelled mig.strategy=mixed whose GPUs are all out of MIG mode advertises no
    nvidia.com/mig-* key at all ("mixed: MIG mode is not enabled on all GPUs on a node", NVIDIA GPU Operator docs
    gpu-operator-mig.html; GPUs not in MIG mode are advertised as nvidia.com/gpu, NVIDIA/gpu-operator#637). No
    KAI release takes it for a MIG node (pkg/scheduler/api/node_info/node_info.go IsMIGEnabled: the mig-enabled
    label, else a nvidia.com/mig-* key, v0.12.15-v0.13.4, or one with a count > 0, v0.14.0 on; maintainer in
    KAI-Scheduler#506: "the node having an nvidia.com/mig-* resource"), so the fraction can go there and the
    MIG-off node is not what keeps it Pending. Before, the cause counted that node as MIG-off (mixed, no
    non-zero mig-* count) while the note did not name it."""
    fixture = HERE / "kai-mig-zero-leftover.yaml"
    other = fixture.read_text(encoding="utf-8").split("---\n", 1)
    second = (
        other[0][other[0].index("apiVersion: v1") :]
        .replace("gpu-node-01", "gpu-node-02")
        .replace(', nvidia.com/mig-1g.24gb: "0", nvidia.com/mig-2g.48gb: "0"', "")
    )
    assert "nvidia.com/mig.strategy: mixed" in second and "nvidia.com/mig-1g" not in second
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text(other[0] + "---\n" + second + "---\n" + other[1], encoding="utf-8")
    out = diagnosed(mixed)
    assert out["summary"]["causes"][0]["cause"] == "handled by kai-scheduler"
    notes = out["pending"][0]["notes"]
    assert any(n.startswith("gpu-node-01: nvidia.com/mig.strategy=mixed") for n in notes), notes


def test_hami_vgpus_over_physical_leads_hami_602(tmp_path: Path) -> None:
    fixture = HERE / "hami-vgpu-count-over-physical.yaml"
    s = diagnosed(fixture)["summary"]
    assert s["causes"][0]["cause"] == (
        "hami-scheduler: more vGPUs in one container than any node has physical GPUs"
    )
    assert (
        "lists 1 physical GPU(s): hami-scheduler refuses the node (NodeInsufficientDevice)" in s["firstStep"]
    )
    assert "Ask for at most 1 in one container" in s["firstStep"]


def test_hami_stale_refusal_leads_hami_1368() -> None:
    s = diagnosed(HERE / "hami-node-unfit-stale.yaml")["summary"]
    assert s["causes"][0]["cause"].startswith("hami-scheduler's last refusal predates the node's state")
    assert "Project-HAMi/HAMi#1368" in s["firstStep"]


def test_explain_names_the_established_cause_kai_1876() -> None:
    res = CliRunner().invoke(
        cli,
        ["explain", "dynamo/qwen3-embedding-0-vllmdecodeworker-4p8dk", "--snapshot",
         str(HERE / "kai-mig-mixed-max-node.yaml")],
        terminal_width=400,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "cause: kai-scheduler's MaxNodeResources miscount" in res.output


def test_podgroup_event_is_what_the_cluster_said_kai_1876(tmp_path: Path) -> None:
    """KAI-Scheduler#1876 posted kai-scheduler's refusal as an event on the PodGroup (KAI
    pkg/scheduler/cache/status_updater/default_status_updater.go markPodGroupUnschedulable: reason
    Unschedulable on job.PodGroup); the pod had none of its own. kubegpu showed no "the cluster said" at all."""
    fixture = HERE / "kai-mig-mixed-max-node.yaml"
    pod = "dynamo/qwen3-embedding-0-vllmdecodeworker-4p8dk"
    res = CliRunner().invoke(cli, ["explain", pod, "--snapshot", str(fixture)], terminal_width=400)
    assert res.exit_code == 0, res.output
    assert (
        "the cluster said (event Unschedulable from kai-scheduler on PodGroup "
        "dynamo/qwen3-embedding-0-vllmdecodeworker): Unable to schedule podgroup: 2 Resources were not found"
    ) in res.output
    # named by the pod's pod-group-name annotation (KAI pkg/common/constants PodGroupAnnotationForPod)
    text = fixture.read_text(encoding="utf-8")
    named = text.replace(
        "labels: {kai.scheduler/queue: dynamo}",
        "labels: {kai.scheduler/queue: dynamo}\n  annotations: {pod-group-name: qwen3-embedding-0-vllmdecodeworker}",
    ).replace("dynamo/qwen3-embedding-0-vllmdecodeworker-4p8dk", "dynamo/another-pod")
    (tmp_path / "named.yaml").write_text(named, encoding="utf-8")
    res = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(tmp_path / "named.yaml"), "-o", "json"])
    observed = json.loads(res.stdout)["pending"][0]["observed"]
    assert observed["about"] == "PodGroup dynamo/qwen3-embedding-0-vllmdecodeworker"
    assert observed["reporter"] == "kai-scheduler"
    # another pod's PodGroup event (no annotation, the message names another pod) is not this pod's
    other = text.replace("dynamo/qwen3-embedding-0-vllmdecodeworker-4p8dk", "dynamo/another-pod")
    (tmp_path / "other.yaml").write_text(other, encoding="utf-8")
    res = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(tmp_path / "other.yaml"), "-o", "json"])
    assert json.loads(res.stdout)["pending"][0]["observed"] is None
