"""The conventions every new plan's runbook follows on the demo (R15, "Conventions every output follows"):
every kubectl line carries ``-n <namespace>``; every mutating kubectl or helm command is preceded by the
same command with ``--dry-run=server`` (helm rollback: ``--dry-run``); nothing uses ``--force``."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubegpu.cli.main import cli

MUTATING = (" apply ", " patch ", " delete ", " cordon ", " uncordon ", " drain ", " annotate ", " label ",
            " taint ", " create ", " upgrade ", " rollback ")  # fmt: skip

COMMANDS = [
    ["plan", "time-slicing", "gpu-infer-01", "--replicas", "2"],
    ["plan", "time-slicing", "gpu-infer-01", "--replicas", "4", "--rename"],
    ["plan", "quota", "ml-train/gpu-quota", "--hard", "requests.nvidia.com/gpu=16"],
    ["plan", "upgrade", "--pool", "training", "--component", "device-plugin", "--to", "v0.18.0"],
    ["plan", "dra-migration", "--pool", "inference", "--to", "dra"],
    ["plan", "dra-migration", "--pool", "inference", "--to", "dra", "--kube-version", "1.36"],
    ["plan", "dra-migration", "--pool", "inference", "--to", "device-plugin"],
    ["plan", "upgrade", "--pool", "training", "--component", "driver", "--to", "570.172.08"],
    ["plan", "upgrade", "--pool", "inference", "--component", "gpu-operator", "--to", "v25.10.1"],
    [
        "plan",
        "kubelet-policy",
        "--pool",
        "training",
        "--cpu-manager",
        "static",
        "--topology-manager",
        "single-numa-node",
    ],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[1:3]))
def test_dry_run_first_namespace_everywhere_no_force(args: list[str]) -> None:
    result = CliRunner().invoke(cli, [*args, "--demo", "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    for steps in (data["steps"], data["rollback"]):
        commands = [c for step in steps for c in step["commands"]]
        for i, c in enumerate(commands):
            assert "--force" not in c, c
            if c.startswith("kubectl"):
                assert c.startswith("kubectl -n "), c
            if not c.startswith(("kubectl", "helm")) or not any(m in c for m in MUTATING) or " get " in c:
                continue
            if c.endswith(("--dry-run=server", "--dry-run")):
                continue
            if " create " in c:  # the quota probe: a server dry run only, never created for real
                raise AssertionError(f"a create without a dry run: {c}")
            before = commands[i - 1] if i else ""
            assert before in (f"{c} --dry-run=server", f"{c} --dry-run"), f"{c!r} not preceded by its dry run"


@pytest.mark.parametrize(
    ("args", "cordoned", "other"),
    [
        (
            ["plan", "upgrade", "--pool", "training", "--component", "device-plugin", "--to", "v0.18.0"],
            "gpu-train-01",
            "gpu-train-02",
        ),
        (
            ["plan", "kubelet-policy", "--pool", "training", "--cpu-manager", "static"],
            "gpu-train-01",
            "gpu-train-02",
        ),
        (["plan", "time-slicing", "gpu-infer-01", "--replicas", "2"], "gpu-infer-01", None),
        (["plan", "dra-migration", "--pool", "inference", "--to", "dra"], "gpu-infer-01", None),
    ],
    ids=lambda a: " ".join(a[1:3]) if isinstance(a, list) else str(a),
)
def test_a_node_cordoned_before_the_plan_is_never_uncordoned_by_it(
    tmp_path: Any, args: list[str], cordoned: str, other: str | None
) -> None:
    """``kubectl uncordon`` sets spec.unschedulable=false whatever it was before (kubectl pkg/drain cordon.go
    ``CordonHelper.UpdateIfRequired``): a node an operator had cordoned must stay so after an upgrade, a
    kubelet policy change, a time-slicing or DRA switch (procedure.uncordon_step, the one place); the other
    nodes of the pool are reopened as before."""
    runner = CliRunner()
    assert runner.invoke(cli, ["demo", "export", str(tmp_path)]).exit_code == 0
    path = tmp_path / "cluster.yaml"
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for d in (o for doc in docs for o in doc.get("items", [doc])):  # (``demo export`` writes a v1 List)
        if d.get("kind") == "Node" and d["metadata"]["name"] == cordoned:
            d.setdefault("spec", {})["unschedulable"] = True
    path.write_text(yaml.safe_dump_all(docs))
    result = runner.invoke(cli, [*args, "--snapshot", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    assert f"uncordon {cordoned}" not in result.stdout
    assert f"{cordoned} was cordoned before this plan and stays cordoned" in result.stdout
    if other is not None:
        assert f"uncordon {other}" in result.stdout
