"""Plans for label / taint / drain (issue 10): scope, effect by the core, runbook lines, and the effect
confirmed by applying the change to the snapshot and scheduling again (R5.3, R5.4, R14.4, R15.3)."""

from __future__ import annotations

from dataclasses import replace

from tests.plan.confirm import changed, settle
from tests.plan.snapshots import GPU_TAINT, NOW, snap

from kubegpu import sources
from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.model.objects import Taint
from kubegpu.plan.node_ops import plan_drain, plan_label, plan_taint
from kubegpu.testing.builders import make_node, make_pod


def test_noexecute_taint_evicts_intolerant_pods_and_names_the_daemonset() -> None:
    ds = make_pod("agent").ns("kube-system").owner("DaemonSet", "log-agent").on("n1").obj()
    s = snap(
        make_node("n1").gpus(2).obj(), make_node("n2").gpus(2).obj(),
        make_pod("job").gpu(1).owner("Job", "train").on("n1", started="2026-12-02T10:00:00Z").obj(), ds,
        make_pod("ok").gpu(1).tolerate("maint", operator="Exists").on("n1").obj(),
    )  # fmt: skip
    change = plan_taint(s, [s.node("n1")], Taint("maint", "", "NoExecute"), False, NOW)
    effect = change.details["effect"]
    assert [e["pod"] for e in effect["evicted"]] == ["default/job", "kube-system/agent"]
    job = effect["evicted"][0]
    # 1 GPU since 10:00, no checkpoint: 2 GPU-hours; the Job recreates it on n2
    assert (job["gpu_hours_at_risk"], job["lands"]) == (2.0, "n2")
    assert change.details["scope"] == {
        "daemonsets_not_tolerating": ["kube-system/log-agent"],
        "unchanged": [],
    }
    assert change.steps[1].commands == (
        "kubectl -n default taint node n1 maint:NoExecute --dry-run=server",
        "kubectl -n default taint node n1 maint:NoExecute",
    )
    assert change.rollback[0].commands[-1] == "kubectl -n default taint node n1 maint:NoExecute-"


def test_taint_with_an_existing_key_and_effect_follows_kubectls_overwrite_rule() -> None:
    """kubectl matches taints by key and effect; a different value needs --overwrite, or it refuses with
    "Node n1 already has maint taint(s) with same effect(s) and --overwrite is false"
    (kubernetes/kubectl pkg/cmd/taint/taint.go updateTaints, CheckIfTaintsAlreadyExists). The rollback must
    put n1's old value back, not delete the taint; n2 already has the taint as asked, so nothing runs there."""
    s = snap(
        make_node("n1").gpus(2).taint("maint", "old", "NoSchedule").obj(),
        make_node("n2").gpus(2).taint("maint", "new", "NoSchedule").obj(),
        make_node("n3").gpus(2).obj(),
    )
    change = plan_taint(
        s, [s.node("n1"), s.node("n2"), s.node("n3")], Taint("maint", "new", "NoSchedule"), False, NOW
    )
    applied = [c for step in change.steps[1:] for c in step.commands if " taint node " in c]
    assert applied == [
        "kubectl -n default taint node n1 maint=new:NoSchedule --overwrite --dry-run=server",
        "kubectl -n default taint node n1 maint=new:NoSchedule --overwrite",
        "kubectl -n default taint node n3 maint=new:NoSchedule --dry-run=server",
        "kubectl -n default taint node n3 maint=new:NoSchedule",
    ]
    assert change.rollback[0].commands == (
        "kubectl -n default taint node n1 maint=old:NoSchedule --overwrite --dry-run=server",
        "kubectl -n default taint node n1 maint=old:NoSchedule --overwrite",
        "kubectl -n default taint node n3 maint:NoSchedule- --dry-run=server",
        "kubectl -n default taint node n3 maint:NoSchedule-",
    )
    assert change.details["scope"]["unchanged"] == ["n2"]
    assert change.summary == "add taint maint=new:NoSchedule on 2 node(s)"
    assert any("n1 (maint=old:NoSchedule)" in w for w in change.warnings)


def test_taint_removal_rollback_restores_each_nodes_own_value() -> None:
    """`kubectl taint node N key:Effect-` removes whatever value N had; undoing it must re-add that value
    (here "a" and "b"), and a node without the taint is left out (kubectl would fail: taint not found)."""
    s = snap(
        make_node("n1").gpus(2).taint("maint", "a", "NoExecute").obj(),
        make_node("n2").gpus(2).taint("maint", "b", "NoExecute").obj(),
        make_node("n3").gpus(2).obj(),
    )
    change = plan_taint(
        s, [s.node("n1"), s.node("n2"), s.node("n3")], Taint("maint", "", "NoExecute"), True, NOW
    )
    assert [c for c in change.rollback[0].commands if "dry-run" not in c] == [
        "kubectl -n default taint node n1 maint=a:NoExecute",
        "kubectl -n default taint node n2 maint=b:NoExecute",
    ]
    assert change.details["scope"]["unchanged"] == ["n3"]


def test_noschedule_taint_evicts_nothing_but_sends_pending_pods_elsewhere() -> None:
    s = snap(make_node("n1").gpus(2).obj(), make_pod("p").gpu(2).obj())
    change = plan_taint(s, [s.node("n1")], GPU_TAINT, False, NOW)
    effect = change.details["effect"]
    assert effect["evicted"] == []
    assert effect["newly_pending"] == [{
        "pod": "default/p", "before": "n1",
        "message": "0/1 nodes are available: 1 node(s) had untolerated taint(s).",
    }]  # fmt: skip


def test_canary_is_the_node_with_least_at_risk() -> None:
    s = snap(
        make_node("busy").gpus(4).obj(), make_node("quiet").gpus(4).obj(),
        make_pod("a").gpu(1).on("busy").obj(), make_pod("b").gpu(1).on("busy").obj(),
    )  # fmt: skip
    change = plan_label(s, [s.node("busy"), s.node("quiet")], "pool", "train", NOW)
    assert change.node == "quiet"
    assert change.details["canary_reason"].startswith("quiet runs 0 GPU pod(s)")


def test_label_rollback_restores_the_old_value() -> None:
    s = snap(make_node("n").label("pool", "infer").obj())
    change = plan_label(s, [s.node("n")], "pool", "train", NOW)
    assert change.rollback[0].commands == (
        "kubectl -n default label node n pool=infer --overwrite --dry-run=server",
        "kubectl -n default label node n pool=infer --overwrite",
    )


def test_relabelling_what_a_component_writes_is_warned_about() -> None:
    """nvidia.com/gpu.product is GPU Feature Discovery's (k8s-device-plugin docs/gpu-feature-discovery/
    README.md, "Generated Labels"): it writes the hardware's value back, so the plan warns; a pool label
    people set gets no such warning."""
    s = snap(
        make_node("n").gpus(8).label("nvidia.com/gpu.product", "NVIDIA-A10G").label("pool", "infer").obj()
    )
    change = plan_label(s, [s.node("n")], "nvidia.com/gpu.product", "NVIDIA-B200", NOW)
    assert any(
        w.startswith("nvidia.com/gpu.product is written by GPU Feature Discovery") for w in change.warnings
    )
    assert not any("written by" in w for w in plan_label(s, [s.node("n")], "pool", "train", NOW).warnings)


def test_drain_counts_pdb_refusals_and_lost_capacity() -> None:
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}, "status": {"disruptionsAllowed": 0}}  # fmt: skip
    s = snap(
        make_node("n1").gpus(4).obj(), make_node("n2").gpus(4).obj(),
        make_pod("web").gpu(1).labels(app="web").owner("ReplicaSet", "web-1").on("n1").obj(), pdb,
    )  # fmt: skip
    change = plan_drain(s, [s.node("n1")], NOW)
    assert any(
        w.startswith(
            "n1: PodDisruptionBudget default/web allows 0 disruption(s): the Eviction API refuses default/web"
        )
        for w in change.warnings
    )
    # n1 cordoned: 8 schedulable GPUs → 4; disruptionsAllowed 0: the Eviction API refuses web, so it stays
    # (an earlier version of this test had it evicted and landing on n2, which the API server never allows)
    assert change.details["effect"]["capacity"] == {"nvidia.com/gpu": {"before": 8, "after": 4}}
    assert change.details["effect"]["evicted"] == []
    assert change.details["scope"]["pods_staying"] == ["default/web"]


def test_demo_taint_removal_prediction_is_confirmed_by_applying_it() -> None:
    """plan taint …- on the reserved nodes predicts llm-finetune-0 becomes schedulable; applying the change
    to the snapshot and explaining the pod again confirms it."""
    demo = sources.load_demo()
    targets = [demo.node("gpu-reserved-01"), demo.node("gpu-reserved-02")]
    change = plan_taint(demo, targets, GPU_TAINT, True, NOW)
    predicted = {row["pod"]: row["node"] for row in change.details["effect"]["newly_schedulable"]}
    assert "ml-train/llm-finetune-0" in predicted
    applied = replace(
        demo, nodes=[replace(n, taints=()) if n.name.startswith("gpu-reserved") else n for n in demo.nodes]
    )
    exp = explain_pod(Engine(applied), applied.pod("ml-train/llm-finetune-0"))  # type: ignore[arg-type]
    assert exp.schedulable and exp.node in ("gpu-reserved-01", "gpu-reserved-02")


def test_demo_label_prediction_is_confirmed_by_applying_it() -> None:
    """plan label accelerator.example.com/pool=inference gpu-train-01. By hand: the pending
    ml-infer/vllm-6b7c9d-q9r4s (1 GPU, nodeSelector pool=inference) has no room today (gpu-infer-01: 3 of
    allocatable 3 used; gpu-infer-02 advertises no GPU); gpu-train-01 (8 GPUs, 5 used by rl-sweep-1/2,
    bert-eval-0/1, whisper-0, no taint) joins the pool with 3 free, so the pod becomes schedulable there. No
    pending pod loses a node (llm-finetune-0 wants 4 GPUs in pool training: none has 4 free untainted before
    either), nothing is evicted (a label moves no running pod) and no capacity changes. Applying the label
    to the snapshot and running kube-scheduler's queue again confirms exactly that."""
    demo = sources.load_demo()
    change = plan_label(demo, [demo.node("gpu-train-01")], "accelerator.example.com/pool", "inference", NOW)  # type: ignore[list-item]
    effect = change.details["effect"]
    assert effect["newly_schedulable"] == [{"pod": "ml-infer/vllm-6b7c9d-q9r4s", "node": "gpu-train-01"}]
    assert (effect["newly_pending"], effect["evicted"], effect["capacity"]) == ([], [], {})
    assert any("bert-eval-0" in w and "IgnoredDuringExecution" in w for w in change.warnings)
    # the runbook's canary line, applied to the snapshot
    line = change.steps[1].commands[-1]
    assert (
        line
        == "kubectl -n default label node gpu-train-01 accelerator.example.com/pool=inference --overwrite"
    )
    key, _, value = line.split()[6].partition("=")
    applied = replace(demo, nodes=[replace(n, labels={**n.labels, key: value}) if n.name == "gpu-train-01" else n
                                   for n in demo.nodes])  # fmt: skip

    assert changed(settle(demo), settle(applied)) == {
        r["pod"]: r["node"] for r in effect["newly_schedulable"]
    }


def test_plan_commands_on_the_demo() -> None:
    import json

    from click.testing import CliRunner

    from kubegpu.cli.main import cli

    runner = CliRunner()
    for args in (
        [
            "plan",
            "taint",
            "nvidia.com/gpu=present:NoSchedule-",
            "--selector",
            "accelerator.example.com/pool=training",
        ],
        ["plan", "label", "accelerator.example.com/pool=training", "gpu-infer-01"],
        ["plan", "drain", "gpu-train-02"],
    ):
        result = runner.invoke(cli, [*args, "--demo", "-o", "json"])
        assert result.exit_code == 0, result.output
        data = json.loads(result.output)
        commands = [c for step in data["steps"] + data["rollback"] for c in step["commands"]]
        assert all(c.startswith("kubectl -n ") for c in commands)
        mutating = [c for c in commands if " get " not in c]
        # every change comes as its server-side dry run, immediately followed by the real command
        assert all(a == b + " --dry-run=server" for a, b in zip(mutating[::2], mutating[1::2], strict=True))
