"""The CLI end to end: the README's main job, JSON/YAML shapes, and one-line errors for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubegpu.cli.main import cli
from kubegpu.testing.builders import make_node, make_pod


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubegpu", *args], capture_output=True, text=True, timeout=120
    )


def test_diagnose_demo_is_the_main_job() -> None:
    proc = run("diagnose", "--demo")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "0/9 nodes are available: 2 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint" in out
    assert "GPU node advertises no GPU resource" in out
    assert "Traceback" not in proc.stderr


def test_explain_json_has_the_documented_keys() -> None:
    result = CliRunner().invoke(cli, ["explain", "ml-train/llm-finetune-0", "--demo", "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {"pod", "schedulable", "node", "message", "nodes"} <= set(data)
    assert data["schedulable"] is False and data["node"] is None
    assert {"name", "plugin", "reasons"} <= set(data["nodes"][0])
    assert {n["plugin"] for n in data["nodes"]} == {"NodeResourcesFit", "TaintToleration", "NodeAffinity"}


def test_every_kubectl_line_names_a_namespace() -> None:
    result = CliRunner().invoke(cli, ["diagnose", "--demo", "-o", "json"])
    data = json.loads(result.output)
    commands = [c for p in data["pending"] for g in p["groups"] for c in g["commands"]]
    commands += [c for f in data["findings"] for c in f["commands"]]
    kubectl = [c for c in commands if c.startswith("kubectl")]
    assert kubectl and all(c.startswith("kubectl -n ") for c in kubectl)
    # a proposed change is preceded by its server-side dry run
    labels = [c for c in kubectl if " label node " in c]
    assert labels and "--dry-run=server" in labels[0]


def test_schedule_with_new_pods_writes_the_resulting_snapshot(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["demo", "export", str(tmp_path)]).exit_code == 0
    out = tmp_path / "after.yaml"
    result = runner.invoke(
        cli,
        ["schedule", "--snapshot", str(tmp_path / "cluster.yaml"), "--pods", str(tmp_path / "new-pods.yaml"),
         "-o", "yaml", "--write", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = yaml.safe_load(result.stdout)
    assert {r["pod"] for r in data["rejected"]} == {
        "notebook-gpu",
        "half-gpu",
        "request-only",
        "request-below-limit",
    }
    results = {r["pod"]: r for r in data["results"]}
    assert results["ml-train/single-gpu-debug"]["node"] in ("gpu-train-01", "gpu-train-02")
    written = yaml.safe_load(out.read_text())
    pods = {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o
        for o in written["items"]
        if o["kind"] == "Pod"
    }
    assert "ml-infer/whisper-0" not in pods  # evicted by urgent-eval's preemption
    assert pods["ml-train/urgent-eval"]["spec"]["nodeName"] == "gpu-train-01"
    stuck = pods["ml-train/llm-finetune-0"]["status"]["conditions"][-1]
    assert (stuck["type"], stuck["status"], stuck["reason"]) == ("PodScheduled", "False", "Unschedulable")


def test_bad_snapshot_gives_one_line_errors_and_still_reports(tmp_path: Path) -> None:
    good = [make_node("n1").gpus(8).obj(), make_pod("p").ns("team").gpu(9).obj()]
    bad = make_pod("broken").ns("team").obj()
    bad["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "lots"}}
    (tmp_path / "a.yaml").write_text(yaml.safe_dump_all([*good, bad]))
    (tmp_path / "b.yaml").write_text("kind: [unclosed\n")
    proc = run("explain", "team/p", "--snapshot", str(tmp_path), "-o", "json")
    assert proc.returncode == 0
    errors = sorted(proc.stderr.strip().splitlines())
    assert len(errors) == 2 and "Traceback" not in proc.stderr
    assert errors[0].startswith(
        f"error: {tmp_path / 'a.yaml'}: Pod team/broken: spec.containers[0].resources.limits[nvidia.com/gpu]:"
    )
    assert errors[1].startswith(f"error: {tmp_path / 'b.yaml'}: invalid YAML at line 2, column 1")
    assert json.loads(proc.stdout)["message"].startswith(
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    )
    assert run("explain", "team/p", "--snapshot", str(tmp_path), "--strict").returncode == 2


def test_missing_file_and_missing_pod_are_one_line_errors(tmp_path: Path) -> None:
    proc = run("diagnose", "--snapshot", str(tmp_path / "nope.yaml"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: {tmp_path / 'nope.yaml'}: no such file or directory"
    proc = run("explain", "x/y", "--demo")
    assert (
        proc.returncode == 1
        and proc.stderr.strip() == "Error: pod x/y is not in the snapshot (embedded demo cluster)"
    )


def test_quota_and_queues_say_when_the_snapshot_has_none(tmp_path: Path) -> None:
    """No ResourceQuota and no GpuQueue: one line each saying so (and what to add to the `kubectl get`),
    not an empty table, which reads as a failure to read them."""
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump_all([make_node("n").gpus(1).obj(), make_pod("p").gpu(1).obj()]))
    quota = CliRunner().invoke(cli, ["quota", "--snapshot", str(path)])
    assert quota.exit_code == 0, quota.output
    assert quota.output.startswith("ResourceQuota: none in the snapshot (add resourcequotas")
    queues = CliRunner().invoke(cli, ["queues", "--snapshot", str(path)])
    assert queues.exit_code == 0, queues.output
    assert "queues: none defined (no GpuQueue in the snapshot)" in queues.output
    assert "┃ queue ┃" not in queues.output


def test_diagnose_node_says_what_is_wrong_with_it_and_what_it_rejects() -> None:
    """The demo's gpu-infer-02 carries GFD's labels (nvidia.com/gpu.present=true, gpu.count=4) but no device
    plugin registered its GPUs: ``--node`` says it has no GPU resource, the critical finding about it with
    its commands, and the Pending pods it rejects per reason (most first). From the demo's pods (pool
    ``inference``): llm-finetune-0 and urgent-eval require pool training, llm-70b-int4 selects inference-mig
    (3 by node affinity); vllm-6b7c9d-q9r4s asks nvidia.com/gpu, which the node has none of, and embed-server
    the misspelt nvidia.com/gpus (1 each); the other Pending pods fit elsewhere."""
    result = CliRunner().invoke(cli, ["diagnose", "--demo", "--node", "gpu-infer-02"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1] == "gpu-infer-02: pool inference, product NVIDIA-L40S, Ready"
    assert lines[2] == "  no GPU resource in status.capacity"
    assert lines[3].startswith(
        "  critical: GPU node advertises no GPU resource — nvidia.com/gpu.present=true"
    )
    assert "    $ kubectl -n default get pods -A -o wide --field-selector spec.nodeName=gpu-infer-02" in lines
    at = lines.index("  rejects 5 Pending GPU pod(s)")
    counts = [int(line.split(":")[0]) for line in lines[at + 1 :]]
    assert counts == sorted(counts, reverse=True) and sum(counts) == 5
    assert lines[at + 1].startswith("    3: node(s) didn't match Pod's node affinity/selector, e.g. ")
    assert {line.split(", e.g. ")[0] for line in lines[at + 2 :]} == {
        "    1: Insufficient nvidia.com/gpu",
        "    1: Insufficient nvidia.com/gpus",
    }


def test_many_refused_objects_print_the_first_twenty_and_a_count(tmp_path: Path) -> None:
    """25 Events whose names the API server refuses (uppercase: not an RFC 1123 subdomain,
    k8s.io/apimachinery/pkg/api/validation/objectmeta.go NameIsDNSSubdomain) beside a good node: stderr names
    the first 20 one per line, then one line counting the other 5; -o json's inputErrors lists all 25, and
    the answer still reads the node."""
    items: list[dict[str, Any]] = [make_node("gpu-0").gpus(8).obj()]
    items += [
        {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"gpu-0.Starting{i}", "namespace": "default"},
         "involvedObject": {"kind": "Node", "name": "gpu-0"}, "reason": "Starting", "message": "Starting kubelet."}
        for i in range(25)
    ]  # fmt: skip
    path = tmp_path / "events.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    proc = run("diagnose", "--snapshot", str(path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 21
    assert all("gpu-0.Starting" in line and "metadata.name: Invalid value" in line for line in lines[:20])
    assert lines[20] == "error: … and 5 more input object(s) refused (-o json lists each under inputErrors)"
    assert "25 input object(s) could not be read" in proc.stdout and "1 GPU nodes" in proc.stdout
    as_json = run("diagnose", "--snapshot", str(path), "-o", "json")
    assert len(json.loads(as_json.stdout)["inputErrors"]) == 25
