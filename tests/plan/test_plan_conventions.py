"""The conventions every new plan's runbook follows on the demo (R15, "Conventions every output follows"):
every kubectl line carries ``-n <namespace>``; every mutating kubectl or helm command is preceded by the
same command with ``--dry-run=server`` (helm rollback: ``--dry-run``); nothing uses ``--force``."""

from __future__ import annotations

import json

import pytest
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
