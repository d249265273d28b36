"""`kubegpu inspect` (R16): changes between two snapshots, not points; exit codes for cron/CI."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubegpu.cli.main import cli
from kubegpu.explain.inspect import inspect
from kubegpu.model.snapshot import build_snapshot
from kubegpu.testing.builders import make_node, make_pod

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def plugin_pod(node: str, ready: bool) -> dict[str, Any]:
    raw = (
        make_pod(f"nvidia-device-plugin-{node}")
        .ns("gpu-operator")
        .owner("DaemonSet", "nvidia-device-plugin-daemonset")
        .on(node)
        .obj()
    )
    raw["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return raw


def snap(*objs: dict[str, Any]) -> Any:
    return build_snapshot([("t", o) for o in objs])


def test_changes_since_the_previous_snapshot() -> None:
    before = snap(make_node("n1").gpus(8).obj(), make_node("n2").gpus(8).obj(),
                  plugin_pod("n1", True), plugin_pod("n2", True))  # fmt: skip
    after = snap(
        make_node("n1").gpus(8).allocatable(nvidia_com__gpu=6).obj(),
        plugin_pod("n1", True),
        make_pod("waiting").gpu(4).created("2026-12-02T11:00:00Z").obj(),
    )  # fmt: skip
    report = inspect(after, NOW, before)
    titles = [f.title for f in report.findings]
    assert "GPU node disappeared" in titles  # n2
    changed = next(f for f in report.findings if f.title == "GPU allocatable changed on n1")
    assert changed.severity == "critical"
    assert changed.detail.startswith("nvidia.com/gpu 8 → 6: devices dropped out")
    assert any(
        f.title == "fewer device plugin pods Ready" and "2 → 1 Ready" in f.detail for f in report.findings
    )
    # Pending since 11:00, an hour at 12:00: over the 10-minute threshold
    assert "1 GPU pod(s) Pending longer than 10 min" in titles
    assert "Pending GPU pods growing" in titles
    assert report.exit_code == 2


def test_a_clean_cluster_exits_zero(tmp_path: Path) -> None:
    path = tmp_path / "now.yaml"
    path.write_text(yaml.safe_dump_all([make_node("n1").gpus(8).obj(), make_pod("p").gpu(1).on("n1").obj()]))
    result = CliRunner().invoke(
        cli, ["inspect", "--snapshot", str(path), "--previous", str(path), "--now", "2026-12-02T12:00:00Z"]
    )
    assert result.exit_code == 0, result.output


def test_a_snapshot_without_timestamps_is_inspected_at_the_current_time(tmp_path: Path) -> None:
    """Hand-written manifests carry no creationTimestamp/startTime; inspect and plan drain used to stop
    with an error blaming --now. Now they measure from the wall clock and say so on stderr."""
    node, pod = make_node("n1").gpus(8).obj(), make_pod("p").gpu(1).on("n1").obj()
    for key in ("creationTimestamp",):
        pod["metadata"].pop(key, None)
    pod["status"].pop("startTime", None)
    path = tmp_path / "bare.yaml"
    path.write_text(yaml.safe_dump_all([node, pod]))
    for args in (["inspect"], ["plan", "drain", "n1"]):
        result = CliRunner().invoke(cli, [*args, "--snapshot", str(path), "-o", "json"])
        assert result.exit_code == 0, (args, result.output)
        assert "no pod in the snapshot carries a creationTimestamp" in result.stderr
    bad = CliRunner().invoke(cli, ["inspect", "--snapshot", str(path), "--now", "yesterday"])
    assert bad.exit_code == 2
    assert "not an RFC 3339 time: 'yesterday'" in bad.output


def test_many_findings_of_one_title_share_a_panel_past_thirty(tmp_path: Path) -> None:
    """40 GPU-labelled nodes advertise no GPU and 3 are NotReady: 43 findings, past the 30 panels inspect
    shows one by one, so one panel per title (the first finding's detail, the count, the names cut at 20);
    --all shows each, and -o json names every one either way."""
    objs = []
    for i in range(40):
        raw = make_node(f"dark{i:02d}").obj()
        raw["metadata"]["labels"].update({"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "8"})
        objs.append(raw)
    for i in range(3):
        raw = make_node(f"down{i}").gpus(8).obj()
        raw["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]
        objs.append(raw)
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    args = ["inspect", "--snapshot", str(path), "--now", "2026-12-02T12:00:00Z"]
    grouped = CliRunner().invoke(cli, args, terminal_width=150)
    assert grouped.exit_code == 2
    assert grouped.output.count("critical: GPU node advertises no GPU resource") == 1
    assert "40 findings of this title; the first one's detail (--all: each one):" in grouped.output
    assert "3 findings of this title" in grouped.output and "+20 more (-o json)" in grouped.output
    assert len(grouped.output.splitlines()) < 60
    each = CliRunner().invoke(cli, [*args, "--all"], terminal_width=150)
    assert each.output.count("critical: GPU node advertises no GPU resource") == 40
    as_json = CliRunner().invoke(cli, [*args, "-o", "json"])
    titles = [f["title"] for f in json.loads(as_json.output)["findings"]]
    assert titles.count("GPU node advertises no GPU resource") == 40
