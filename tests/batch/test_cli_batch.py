"""`kubegpu queues` and `kubegpu quota` on the demo (R8, R14)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kubegpu.cli.main import cli


def test_queues_on_the_demo_admit_and_explain() -> None:
    result = CliRunner().invoke(cli, ["queues", "--demo", "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    # costs are measured at the snapshot's newest pod timestamp (data-prep, created 07:45)
    assert data["now"] == "2026-12-02T07:45:00+00:00"
    queues = {q["queue"]: q for q in data["queues"]}
    # research: 4 single-GPU rl-sweep pods running, nominal 4
    assert queues["research"]["used"] == {"nvidia.com/gpu": "4"}
    decisions = {d["workload"]: d for d in data["decisions"]}
    urgent = decisions["ml-train/urgent-eval"]
    assert urgent["admitted"] and urgent["nodes"] == {"ml-train/urgent-eval": "gpu-train-01"}
    # whisper-0 (1 GPU) started 2026-12-01T03:00 and never checkpointed: 28h45m = 103500 GPU-seconds
    assert urgent["evicted"] == {"ml-infer/whisper-0": 103500}
    assert not decisions["ml-train/llm-finetune-0"]["admitted"]


def test_quota_what_if_never_evicts() -> None:
    result = CliRunner().invoke(
        cli, ["quota", "--demo", "-o", "json", "--set", "research/gpu-quota:requests.nvidia.com/gpu=2"]
    )
    assert result.exit_code == 0, result.output
    (row,) = [r for r in json.loads(result.output)["quotas"] if r["namespace"] == "research"]
    assert (row["used"], row["hard"], row["whatIf"]) == ("4", "4", "2")
    assert "no running pod is evicted" in row["effect"]
