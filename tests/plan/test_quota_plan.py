"""``plan quota`` (issue 10, R8): scope, the API server's quota admission after the change, and the runbook.

Upstream behaviour pinned down: ResourceQuota admission runs only when a pod is created, so lowering
``hard`` below ``used`` evicts nothing and leaves Pending pods alone (R8.2); a replacement is checked with
the old pod's usage released; the rejection text is the API server's
``pods "<name>" is forbidden: exceeded quota: <quota>, requested: …, used: …, limited: …``.
Expected numbers are worked out by hand in each test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubegpu.cli.main import cli
from kubegpu.errors import InputError
from kubegpu.model.snapshot import build_snapshot
from kubegpu.plan.quota_change import plan_quota
from kubegpu.testing.builders import make_node, make_pod

QUOTA = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpu", "namespace": "team-a"},
         "spec": {"hard": {"requests.nvidia.com/gpu": "4"}}}  # fmt: skip


def team_a() -> Any:
    # used 4 = a (2, Running) + b (1, Running) + c (1, Pending): pending pods count, they exist
    s = build_snapshot([("t", o) for o in (
        make_node("n1").gpus(8).obj(), QUOTA,
        make_pod("a").ns("team-a").gpu(2).owner("ReplicaSet", "web-1").created("2026-12-01T01:00:00Z").on("n1").obj(),
        make_pod("b").ns("team-a").gpu(1).owner("Job", "train").created("2026-12-01T02:00:00Z").on("n1").obj(),
        make_pod("c").ns("team-a").gpu(1).owner("Job", "train2").created("2026-12-01T03:00:00Z").obj(),
        make_pod("other").ns("team-b").gpu(3).on("n1").obj(),
    )])  # fmt: skip
    assert not s.errors
    return s


def test_lowering_below_used_rejects_every_replacement_and_evicts_nothing() -> None:
    change = plan_quota(team_a(), "team-a", "gpu", {"requests.nvidia.com/gpu": 3000})
    scope = change.details["scope"]
    assert scope["resources"] == [{"resource": "requests.nvidia.com/gpu", "used": "4", "hard_before": "4",
                                   "hard_after": "3", "over_after": True}]  # fmt: skip
    assert scope["pods_counted"] == ["team-a/a", "team-a/b", "team-a/c"]
    assert scope["controllers"] == {"ReplicaSet/web-1": 1, "Job/train": 1, "Job/train2": 1}
    effect = change.details["effect"]
    assert effect["evicted"] == [] and effect["newly_pending"] == []
    # a's replacement: 4 - 2 released = 2 used, 2 + 2 > 3; b's and c's: 4 - 1 = 3 used, 3 + 1 > 3
    rows = {r["pod"]: r["message"] for r in effect["quota_rejections"]}
    assert rows == {
        "team-a/a": 'pods "a" is forbidden: exceeded quota: gpu, requested: requests.nvidia.com/gpu=2, '
        "used: requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=3",
        "team-a/b": 'pods "b" is forbidden: exceeded quota: gpu, requested: requests.nvidia.com/gpu=1, '
        "used: requests.nvidia.com/gpu=3, limited: requests.nvidia.com/gpu=3",
        "team-a/c": 'pods "c" is forbidden: exceeded quota: gpu, requested: requests.nvidia.com/gpu=1, '
        "used: requests.nvidia.com/gpu=3, limited: requests.nvidia.com/gpu=3",
    }
    assert all(r["starts"] for r in effect["quota_rejections"])  # under hard=4 each replacement fitted
    assert change.warnings[0].startswith(
        "usage is above the new limit of requests.nvidia.com/gpu: no running pod is evicted"
    )


def test_runbook_backs_up_diffs_dry_runs_applies_verifies_and_rolls_back() -> None:
    change = plan_quota(team_a(), "team-a", "gpu", {"requests.nvidia.com/gpu": 3000})
    assert [c for s in change.steps for c in s.commands] == [
        "kubectl -n team-a get resourcequota gpu -o yaml > gpu-before.yaml",
        "kubectl -n team-a describe resourcequota gpu",
        "kubectl -n team-a diff -f gpu-new.yaml",
        "kubectl -n team-a apply -f gpu-new.yaml --dry-run=server",
        "kubectl -n team-a apply -f gpu-new.yaml",
        "kubectl -n team-a describe resourcequota gpu",
        "kubectl -n team-a create -f gpu-probe.yaml --dry-run=server",
    ]
    # the probe asks for 1 GPU with 4 in use: refused, and kubectl wraps the API server's message
    assert change.details["probe_expected"] == (
        'Error from server (Forbidden): error when creating "gpu-probe.yaml": pods "quota-probe" is forbidden: '
        "exceeded quota: gpu, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=4, "
        "limited: requests.nvidia.com/gpu=3"
    )
    assert change.rollback[0].commands == (
        "kubectl -n team-a diff -f gpu-rollback.yaml",
        "kubectl -n team-a apply -f gpu-rollback.yaml --dry-run=server",
        "kubectl -n team-a apply -f gpu-rollback.yaml",
        "kubectl -n team-a describe resourcequota gpu",
    )
    manifests = change.details["manifests"]
    assert yaml.safe_load(manifests["gpu-new.yaml"])["spec"] == {"hard": {"requests.nvidia.com/gpu": "3"}}
    assert yaml.safe_load(manifests["gpu-rollback.yaml"])["spec"] == {
        "hard": {"requests.nvidia.com/gpu": "4"}
    }


def test_raising_admits_a_new_pod_that_is_refused_today() -> None:
    new = make_pod("d").ns("team-a").gpu(2).obj()
    change = plan_quota(team_a(), "team-a", "gpu", {"requests.nvidia.com/gpu": 6000}, [("d.yaml", new)])
    assert change.details["effect"]["quota_rejections"] == []  # 4 + 2 = 6 fits the new limit
    assert change.details["probe_expected"] == "pod/quota-probe created (server dry run)"
    lowered = plan_quota(team_a(), "team-a", "gpu", {"requests.nvidia.com/gpu": 5000}, [("d.yaml", new)])
    [row] = [r for r in lowered.details["effect"]["quota_rejections"] if r["kind"] == "new"]
    # 4 + 2 > 5: refused after, and it was refused before too (4 + 2 > 4)
    assert (row["pod"], row["starts"]) == ("team-a/d", False)
    assert row["message"] == ('pods "d" is forbidden: exceeded quota: gpu, requested: requests.nvidia.com/gpu=2, '
                              "used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=5")  # fmt: skip


def test_memory_quota_probe_specifies_what_the_quota_bounds() -> None:
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "mem", "namespace": "team-a"},
             "spec": {"hard": {"requests.memory": "8Gi", "requests.cpu": "8", "requests.nvidia.com/gpu": "2"}}}  # fmt: skip
    s = build_snapshot([("t", o) for o in (
        make_node("n1").gpus(8).obj(), quota,
        make_pod("a").ns("team-a").requests(cpu="2", memory="6Gi").owner("Job", "j").on("n1").obj(),
    )])  # fmt: skip
    change = plan_quota(s, "team-a", "mem", {"requests.memory": 4 * 1024**3 * 1000})
    probe = yaml.safe_load(change.details["manifests"]["mem-probe.yaml"])
    # 1Gi of the lowered resource, a little cpu (the quota bounds it too), no GPU (not changed)
    assert probe["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "100m", "memory": "1Gi"},
    }  # fmt: skip
    # 6Gi used + 1Gi > 4Gi
    assert change.details["probe_expected"].endswith(
        'pods "quota-probe" is forbidden: exceeded quota: mem, requested: requests.memory=1Gi, '
        "used: requests.memory=6Gi, limited: requests.memory=4Gi"
    )


def test_unknown_quota_names_the_known_ones() -> None:
    with pytest.raises(InputError, match=r"no ResourceQuota team-a/nope .*\(quotas: team-a/gpu\)"):
        plan_quota(team_a(), "team-a", "nope", {"requests.nvidia.com/gpu": 1000})


def test_manifests_validate_against_the_kubernetes_schema() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    change = plan_quota(team_a(), "team-a", "gpu", {"requests.nvidia.com/gpu": 3000})
    for text in change.details["manifests"].values():
        kubernetes_validate.validate(yaml.safe_load(text), "1.34.0", strict=True)


def test_cli_on_the_demo_and_bad_quantity() -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["plan", "quota", "ml-train/gpu-quota", "--hard", "requests.nvidia.com/gpu=16",
                                 "--demo", "-o", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    commands = [c for step in data["steps"] + data["rollback"] for c in step["commands"]]
    assert all(c.startswith("kubectl -n ml-train ") for c in commands)
    applies = [c for c in commands if " apply " in c]
    assert all(a == b + " --dry-run=server" for a, b in zip(applies[::2], applies[1::2], strict=True))
    bad = runner.invoke(
        cli, ["plan", "quota", "ml-train/gpu-quota", "--hard", "requests.nvidia.com/gpu=lots", "--demo"]
    )
    assert bad.exit_code != 0
    assert isinstance(bad.exception, InputError) and "--hard requests.nvidia.com/gpu=lots" in str(
        bad.exception
    )
