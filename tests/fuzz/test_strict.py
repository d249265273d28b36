"""``--strict`` means exit status 2 on every command that reads input, whenever an input was rejected.

One rejected object (a Node whose ``nvidia.com/gpu`` capacity is ``-1``: the API server refuses it,
``ValidateResourceQuantityValue``: "must be greater than or equal to 0") beside a valid node and a pending
GPU pod. Without ``--strict`` the snapshot commands say so on stderr (an ``error:`` line naming the file,
the object and the field) and answer for the rest (exit 0, or inspect's own 0/1); with ``--strict`` they
exit 2. Commands whose input errors always stop them (simulate, the node agent's readers) exit 2 with or
without the flag; ``lint --strict`` turns an object the API server would refuse into exit 2 (1 without).
Inputs that are read after the snapshot count too: ``schedule --pods``, ``inspect --previous``, a node's
device inventory annotation found while diagnosing.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from tests.fuzz.corpus import CONTEXT_NODE, H200, context, demo_objects
from tests.fuzz.runner import Outcome, run_cli, warm

BAD_FIELD = "status.capacity[nvidia.com/gpu]"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    warm()
    d = tmp_path_factory.mktemp("strict")
    demo = demo_objects()
    quota = next(o for o in demo if o["kind"] == "ResourceQuota")  # research/gpu-quota, for plan quota
    ctx = [*context(demo, ""), quota]
    bad = copy.deepcopy(ctx[0])
    bad["metadata"]["name"] = "gpu-bad"
    bad["status"]["capacity"]["nvidia.com/gpu"] = "-1"
    out = {"snap": d / "snap.yaml", "good": d / "good.yaml", "pods": d / "pods.yaml", "reading": d / "r.json",
           "work": d / "work.yaml", "mig": d / "mig.yaml"}  # fmt: skip
    out["snap"].write_text(yaml.safe_dump_all([*ctx, bad]), encoding="utf-8")
    out["good"].write_text(yaml.safe_dump_all(ctx), encoding="utf-8")
    pod = copy.deepcopy(ctx[1])
    pod["metadata"] = {"name": "new", "namespace": "ml-train"}
    pod.pop("status", None)
    pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "-4"  # invalid
    out["pods"].write_text(yaml.safe_dump(pod), encoding="utf-8")
    out["reading"].write_text((H200 / "nvml.json").read_text(encoding="utf-8")[:-40], encoding="utf-8")
    out["work"].write_text(yaml.safe_dump(pod), encoding="utf-8")
    out["mig"].write_text("version: v1\nmig-configs:\n  all-1g.18gb:\n  - devices: all\n    mig-enabled: true\n"
                          "    mig-devices: {1g.18gb: 7}\n", encoding="utf-8")  # fmt: skip
    return out


SNAPSHOT_COMMANDS = {
    "diagnose": ["diagnose"],
    "explain": ["explain", "ml-train/nccl-allreduce-2gpu"],
    "schedule": ["schedule"],
    "quota": ["quota"],
    "queues": ["queues"],
    "inspect": ["inspect"],
    "report": ["report", "-O", "/dev/null"],
    "plan label": ["plan", "label", "team=x", CONTEXT_NODE],
    "plan taint": ["plan", "taint", "team=x:NoSchedule", CONTEXT_NODE],
    "plan drain": ["plan", "drain", CONTEXT_NODE],
    "plan quota": ["plan", "quota", "research/gpu-quota", "--hard", "requests.nvidia.com/gpu=2"],
    "plan time-slicing": ["plan", "time-slicing", CONTEXT_NODE, "--replicas", "2"],
    "plan upgrade": [
        "plan",
        "upgrade",
        "--pool",
        "training",
        "--component",
        "device-plugin",
        "--to",
        "v0.17.0",
    ],
    "plan kubelet-policy": ["plan", "kubelet-policy", "--pool", "training", "--cpu-manager", "static"],
    "plan mig": ["plan", "mig", CONTEXT_NODE, "--config", "{mig}", "--config-name", "all-1g.18gb"],
}


def _error_named(out: Outcome, path: Path) -> bool:
    return any(line.startswith("error:") and str(path) in line and "Node gpu-bad" in line and BAD_FIELD in line
               for line in out.err.splitlines())  # fmt: skip


@pytest.mark.parametrize("name", sorted(SNAPSHOT_COMMANDS))
def test_a_rejected_snapshot_object_is_said_and_strict_exits_2(name: str, files: dict[str, Path]) -> None:
    args = [a.replace("{mig}", str(files["mig"])) for a in SNAPSHOT_COMMANDS[name]]
    lenient = run_cli([*args, "--snapshot", str(files["snap"])])
    strict = run_cli([*args, "--snapshot", str(files["snap"]), "--strict"])
    clean = run_cli([*args, "--snapshot", str(files["good"]), "--strict"])
    assert not (lenient.traceback or strict.traceback or clean.traceback), strict.err
    assert _error_named(lenient, files["snap"]) and _error_named(strict, files["snap"]), strict.err
    assert strict.code == 2
    # the option parser accepted the command line: a usage error is exit 2 too, so the clean run must pass
    assert clean.code in ((0, 1) if name == "inspect" else (0,)), clean.out + clean.err
    assert lenient.code in ((0, 1) if name == "inspect" else (0,)), lenient.err


def test_schedule_pods_that_the_api_server_refuses_make_strict_exit_2(files: dict[str, Path]) -> None:
    base = ["schedule", "--snapshot", str(files["good"]), "--pods", str(files["pods"])]
    lenient, strict = run_cli(base), run_cli([*base, "--strict"])
    assert lenient.code == 0 and strict.code == 2
    assert any(str(files["pods"]) in line and "must be greater than or equal to 0" in line
               for line in strict.err.splitlines() if line.startswith("error:")), strict.err  # fmt: skip
    missing = run_cli(
        ["schedule", "--snapshot", str(files["good"]), "--pods", "/nonexistent.yaml", "--strict"]
    )
    assert missing.code == 2 and "error: /nonexistent.yaml: no such file or directory" in missing.err


def test_inspect_previous_unreadable_is_said_and_strict_exits_2(files: dict[str, Path]) -> None:
    base = ["inspect", "--snapshot", str(files["good"]), "--previous", "/nonexistent.yaml"]
    lenient, strict = run_cli(base), run_cli([*base, "--strict"])
    assert "error: /nonexistent.yaml: no such file or directory" in lenient.err
    assert lenient.code in (0, 1) and strict.code == 2


def test_simulate_and_the_node_readers_exit_2_with_or_without_strict(files: dict[str, Path]) -> None:
    for extra in ([], ["--strict"]):
        sim = run_cli(
            ["simulate", "--snapshot", str(files["good"]), "--workload", str(files["work"]), *extra]
        )
        assert sim.code == 2 and str(files["work"]) in sim.err, sim.err
        bad_snap = run_cli(["simulate", "--snapshot", str(files["snap"]), *extra])
        assert bad_snap.code == 2 and "Node gpu-bad" in bad_snap.err, bad_snap.err
    for command in ("labels", "cdi", "discover"):
        out = run_cli(["node", command, "--backend", "recorded", "--reading", str(files["reading"])])
        assert out.code == 2 and str(files["reading"]) in out.err and "invalid JSON" in out.err, out.err


def test_lint_strict_exits_2_for_an_object_the_api_server_refuses(files: dict[str, Path]) -> None:
    lenient, strict = run_cli(["lint", str(files["pods"])]), run_cli(["lint", str(files["pods"]), "--strict"])
    assert lenient.code == 1 and strict.code == 2
    assert "must be greater than or equal to 0" in strict.out
