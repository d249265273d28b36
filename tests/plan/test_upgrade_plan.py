"""``plan upgrade`` (issue 10, R15): scope, canary, drain checks, the canary window by the core, the runbook.

Upstream facts pinned down: the GPU Operator's ClusterPolicy (``clusterpolicies.nvidia.com``, instance
``cluster-policy``) holds ``/spec/devicePlugin/version`` and ``/spec/driver/version``; its DaemonSets are
``nvidia-device-plugin-daemonset`` / ``nvidia-driver-daemonset`` (label ``app=<name>``); kubectl drain
refuses bare pods and emptyDir users with its own messages; a cordoned node takes no new pods.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from click.testing import CliRunner

from kubegpu.cli.main import cli
from kubegpu.model.snapshot import build_snapshot
from kubegpu.plan.node_ops import DRAIN_LOCAL_STORAGE, DRAIN_UNMANAGED
from kubegpu.plan.upgrade import plan_upgrade
from kubegpu.testing.builders import make_node, make_pod

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
DRIVER_IMAGE = "nvcr.io/nvidia/driver:550.90.07-ubuntu22.04"


def operand(name: str, ds: str, node: str, image: str) -> dict[str, Any]:
    raw = make_pod(f"{ds}-{name}").ns("gpu-operator").owner("DaemonSet", ds).on(node).obj()
    raw["spec"]["containers"][0]["image"] = image
    return raw


def cluster() -> Any:
    """n1 is full (job 2 GPUs since 10:00, a bare pod, an emptyDir pod); n2 runs web (1 GPU since 11:00,
    a PDB allowing 0 disruptions); p2 (2 GPUs) is Pending and fits only n2 today."""
    cache = make_pod("cache").gpu(1).owner("ReplicaSet", "cache-1").on("n1").obj()
    cache["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}  # fmt: skip
    objs = [
        make_node("n1").gpus(4).label("pool", "train").obj(), make_node("n2").gpus(4).label("pool", "train").obj(),
        make_pod("job").gpu(2).owner("Job", "j").on("n1", started="2026-12-02T10:00:00Z").obj(),
        make_pod("dbg").gpu(1).on("n1").obj(), cache,
        make_pod("web").gpu(1).labels(app="web").owner("ReplicaSet", "web-1").on("n2", started="2026-12-02T11:00:00Z").obj(),
        make_pod("p2").gpu(2).owner("Job", "p").obj(), pdb,
        operand("a", "nvidia-device-plugin-daemonset", "n1", PLUGIN_IMAGE),
        operand("b", "nvidia-device-plugin-daemonset", "n2", PLUGIN_IMAGE),
        operand("c", "nvidia-driver-daemonset", "n1", DRIVER_IMAGE),
        operand("d", "nvidia-driver-daemonset", "n2", DRIVER_IMAGE),
    ]  # fmt: skip
    s = build_snapshot([("t", o) for o in objs])
    assert not s.errors, s.errors
    return s


def test_scope_canary_and_the_canary_window_effect() -> None:
    s = cluster()
    change = plan_upgrade(s, [s.node("n1"), s.node("n2")], "device-plugin", "v0.18.0", NOW)
    # n2 runs 1 GPU pod, n1 runs 3: n2 is the canary
    assert change.node == "n2"
    assert (
        change.details["canary_reason"] == "n2 runs 1 GPU pod(s) with 1.0 GPU-hours at risk, the least of 2"
    )
    scope = change.details["scope"]
    assert (scope["from"], scope["to"]) == ("v0.17.0", "v0.18.0")
    assert scope["gpu_pods"] == {"n1": ["default/job (Job/j)", "default/dbg (bare)", "default/cache (ReplicaSet/cache-1)"],
                                 "n2": ["default/web (ReplicaSet/web-1)"]}  # fmt: skip
    assert sorted(scope["component_pods"]) == ["gpu-operator/nvidia-device-plugin-daemonset-a",
                                               "gpu-operator/nvidia-device-plugin-daemonset-b"]  # fmt: skip
    effect = change.details["effect"]
    # n2 cordoned: 8 schedulable GPUs → 4 (all on the full n1); p2 loses its only node; web has nowhere to go
    assert effect["capacity"] == {"nvidia.com/gpu": {"before": 8, "after": 4}}
    full = "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) were unschedulable."
    assert effect["newly_pending"] == [{"pod": "default/p2", "before": "n2", "message": full}]
    [web] = effect["evicted"]
    assert (web["pod"], web["lands"], web["message"], web["gpu_hours_at_risk"]) == (
        "default/web",
        None,
        full,
        1.0,
    )


def test_drain_checks_name_kubectls_refusals_pdbs_and_checkpoints() -> None:
    s = cluster()
    change = plan_upgrade(s, [s.node("n1"), s.node("n2")], "device-plugin", "v0.18.0", NOW)
    text = "\n".join(change.warnings)
    assert f"n1: drain refuses: {DRAIN_UNMANAGED}: default/dbg" in text
    assert f"n1: drain refuses: {DRAIN_LOCAL_STORAGE}: default/cache" in text
    # drain_outcome's wording: disruptionsAllowed 0, so the Eviction API refuses web (it used to say "evicts 1")
    assert (
        "n2: PodDisruptionBudget default/web allows 0 disruption(s): the Eviction API refuses default/web"
        in text
    )
    assert "no checkpoint recorded for GPU pods default/web" in text
    assert "--force" not in " ".join(c for st in change.steps for c in st.commands)


def test_device_plugin_runbook_order_and_rollback() -> None:
    s = cluster()
    change = plan_upgrade(s, [s.node("n1"), s.node("n2")], "device-plugin", "v0.18.0", NOW)
    titles = [st.title for st in change.steps]
    assert titles[:4] == [
        "Back up the ClusterPolicy, DaemonSets, Helm values and history, image digests and Nodes",
        "Hold the rollout: operand DaemonSets OnDelete, no automatic driver upgrades",
        "Set device-plugin devicePlugin.version v0.17.0 → v0.18.0",
        "Canary n2: cordon (moves nothing)",
    ]
    # per node: cordon → drain → upgrade → verify → test pods → uncordon, canary first
    per_node = [t.split(":")[0].removeprefix("Canary ") for t in titles[3:-1]]
    assert per_node[:6] == ["n2"] * 6 and per_node[6:] == ["n1"] * 6
    backups = change.steps[0].commands
    assert (
        "kubectl -n gpu-operator get clusterpolicies.nvidia.com cluster-policy -o yaml > cluster-policy-before.yaml"
        in backups
    )
    assert "helm -n gpu-operator get values gpu-operator -o yaml > gpu-operator-values-before.yaml" in backups
    patch = ('kubectl -n gpu-operator patch clusterpolicies.nvidia.com cluster-policy --type=json '
             '-p=\'[{"op":"replace","path":"/spec/devicePlugin/version","value":"v0.18.0"}]\'')  # fmt: skip
    assert change.steps[2].commands[:2] == (f"{patch} --dry-run=server", patch)
    assert change.steps[5].commands == (
        "kubectl -n gpu-operator delete pod -l app=nvidia-device-plugin-daemonset --field-selector spec.nodeName=n2 --dry-run=server",
        "kubectl -n gpu-operator delete pod -l app=nvidia-device-plugin-daemonset --field-selector spec.nodeName=n2",
    )
    assert change.rollback[0].commands[1] == patch.replace("v0.18.0", "v0.17.0")
    for st in (*change.steps, *change.rollback):
        for c in st.commands:
            if c.startswith("kubectl"):
                assert c.startswith("kubectl -n "), c


def test_driver_version_is_read_without_the_os_suffix() -> None:
    s = cluster()
    change = plan_upgrade(s, [s.node("n1"), s.node("n2")], "driver", "570.172.08", NOW)
    assert change.details["scope"]["from"] == "550.90.07"
    assert '"path":"/spec/driver/version","value":"570.172.08"' in change.steps[2].commands[1]
    assert "-l app=nvidia-driver-daemonset" in change.steps[5].commands[1]


def test_operator_upgrade_goes_through_helm_with_server_dry_run_and_rollback() -> None:
    s = cluster()
    change = plan_upgrade(s, [s.node("n1"), s.node("n2")], "gpu-operator", "v25.10.1", NOW)
    crds, helm = change.steps[1], change.steps[2]
    assert crds.commands[0] == ("kubectl -n gpu-operator apply -f https://raw.githubusercontent.com/NVIDIA/gpu-operator/"
                                "refs/tags/v25.10.1/deployments/gpu-operator/crds/nvidia.com_clusterpolicies.yaml --dry-run=server")  # fmt: skip
    assert helm.commands[0].endswith("--dry-run=server") and helm.commands[1] == helm.commands[
        0
    ].removesuffix(" --dry-run=server")
    assert (
        "helm -n gpu-operator upgrade gpu-operator nvidia/gpu-operator --version v25.10.1 -f gpu-operator-values-before.yaml"
        in helm.commands[1]
    )
    # the revision comes from the file the backup step wrote, not a <REVISION> placeholder (QA defect 9)
    rev = '"$(cat gpu-operator-revision-before.txt)"'
    assert change.rollback[0].commands == (f"helm -n gpu-operator rollback gpu-operator {rev} --dry-run",
                                           f"helm -n gpu-operator rollback gpu-operator {rev}")  # fmt: skip


def test_test_pods_for_the_canary_validate_against_the_schema() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    s = cluster()
    change = plan_upgrade(s, [s.node("n1"), s.node("n2")], "device-plugin", "v0.18.0", NOW)
    manifests = change.details["verify_manifests"]["n2"]
    assert [m["metadata"]["name"] for m in manifests] == ["verify-n2-single-gpu", "verify-n2-multi-gpu"]
    assert manifests[1]["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "4"}}
    for m in manifests:
        kubernetes_validate.validate(m, "1.34.0", strict=True)


def test_cli_selects_the_pool_on_the_demo() -> None:
    result = CliRunner().invoke(cli, ["plan", "upgrade", "--pool", "training", "--component", "device-plugin",
                                      "--to", "v0.18.0", "--demo", "-o", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["details"]["nodes"] == ["gpu-train-01", "gpu-train-02", "gpu-reserved-01", "gpu-reserved-02"]
    missing = CliRunner().invoke(cli, ["plan", "upgrade", "--pool", "nope", "--component", "driver", "--to", "1",
                                       "--demo"])  # fmt: skip
    assert missing.exit_code != 0 and "no node has label accelerator.example.com/pool=nope" in str(
        missing.exception
    )


def test_the_hold_is_released_to_the_chart_defaults_and_other_pools_are_named() -> None:
    s = cluster()
    change = plan_upgrade(s, [s.node("n1")], "driver", "570.172.08", NOW)
    release = change.steps[-1]
    # the GPU Operator chart: daemonsets.updateStrategy "RollingUpdate", driver.upgradePolicy.autoUpgrade true
    assert release.commands[1] == (
        "kubectl -n gpu-operator patch clusterpolicies.nvidia.com cluster-policy --type=merge "
        '-p=\'{"spec":{"daemonsets":{"updateStrategy":"RollingUpdate"},"driver":{"upgradePolicy":{"autoUpgrade":true}}}}\''
    )
    assert any(
        w.startswith("the ClusterPolicy is cluster-wide: GPU nodes outside the pool (n2)")
        for w in change.warnings
    )
    assert any("drain.force: true" in w for w in change.warnings)


def test_operator_upgrade_past_v25_10_warns_of_carried_over_validator_values() -> None:
    """NVIDIA/gpu-operator#1968: `helm upgrade` v25.3.4 → v25.10.1 with the old values left every operand's
    validator init container backing off on gpu-operator-validator:v25.10.1; the maintainer: "Starting in
    25.10.0, we consolidated the gpu-operator and gpu-operator-validator images into a single image" (PR 1483).
    The runbook reuses the values it backed up (-f), so it must say to drop the validator image values."""
    validator = "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.3.4"
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
          "metadata": {"name": "nvidia-device-plugin-daemonset", "namespace": "gpu-operator"},
          "spec": {"selector": {"matchLabels": {"app": "nvidia-device-plugin-daemonset"}},
                   "template": {"metadata": {"labels": {"app": "nvidia-device-plugin-daemonset"}},
                                "spec": {"initContainers": [{"name": "toolkit-validation", "image": validator}],
                                         "containers": [{"name": "nvidia-device-plugin", "image": PLUGIN_IMAGE}]}}}}  # fmt: skip
    s = build_snapshot([("t", make_node("n1").gpus(4).obj()), ("t", ds)])
    assert not s.errors, s.errors
    later = plan_upgrade(s, [s.node("n1")], "gpu-operator", "v25.10.1", NOW)
    (said,) = [w for w in later.warnings if "gpu-operator-validator" in w]
    assert "validator.repository / validator.image / validator.version" in said
    assert "gpu-operator-values-before.yaml" in said and validator in said
    same_layout = plan_upgrade(s, [s.node("n1")], "gpu-operator", "v25.3.5", NOW)
    assert not [w for w in same_layout.warnings if "gpu-operator-validator" in w]
