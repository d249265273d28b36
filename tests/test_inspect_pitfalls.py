"""`kubegpu inspect` flags the pitfalls of R17 a single snapshot, or two, walk into (seed §17).

Each cluster is built by hand and the expected objects are worked out from it in the docstrings; the
device-metrics pitfalls (R17.2 requested-but-idle, R17.3 time-sliced memory) need Prometheus and are in
tests/test_inspect_prometheus.py.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubegpu.cli.main import cli
from kubegpu.explain.findings import Finding
from kubegpu.explain.inspect import inspect
from kubegpu.model.names import PITFALL_NAMES, pitfall_name
from kubegpu.model.snapshot import build_snapshot
from kubegpu.testing.builders import make_node, make_pod

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def snap(*objs: dict[str, Any]) -> Any:
    s = build_snapshot([("t", o) for o in objs])
    assert not s.errors
    return s


def pitfalls(findings: list[Finding], pitfall: str) -> list[tuple[str, list[str]]]:
    return [(f.title, f.objects) for f in findings if pitfall_name(f.pitfall) == pitfall]


def with_uid(raw: dict[str, Any], uid: str) -> dict[str, Any]:
    raw["metadata"]["uid"] = uid
    return raw


def test_r17_1_gpu_labels_without_allocatable_gpus() -> None:
    """no-plugin: GFD-style labels (gpu.present, gpu.count=8) but no nvidia.com/gpu in capacity: the plugin
    never registered. all-sick: 4 GPUs registered, allocatable 0: every one unhealthy. one-sick: 4 registered,
    3 allocatable: degraded but schedulable, not the pitfall."""
    s = snap(
        make_node("no-plugin").label("nvidia.com/gpu.present", "true").label("nvidia.com/gpu.count", "8").obj(),
        make_node("all-sick").gpus(4).allocatable(nvidia_com__gpu=0).obj(),
        make_node("one-sick").gpus(4).allocatable(nvidia_com__gpu=3).obj(),
    )  # fmt: skip
    found = inspect(s, NOW).findings
    assert pitfalls(found, "labels-without-gpus") == [
        ("GPU node advertises no GPU resource", ["node/no-plugin"]),
        ("GPU node has no allocatable GPU", ["node/all-sick"]),
    ]
    sick = next(
        f
        for f in found
        if pitfall_name(f.pitfall) == "labels-without-gpus" and f.objects == ["node/all-sick"]
    )
    assert (
        sick.severity == "critical" and "`nvidia-smi` answering on the host proves the driver" in sick.detail
    )
    # the degraded node keeps the plain warning, without a pitfall id
    assert [(f.title, f.pitfall) for f in found if f.objects == ["node/one-sick"]] == [
        ("allocatable GPUs below capacity", "")
    ]


def test_r17_4_tolerating_the_gpu_taint_without_requesting_a_gpu() -> None:
    """prep (ReplicaSet) tolerates nvidia.com/gpu and asks for no GPU: flagged. train tolerates and asks for
    one: fine. dcgm is a DaemonSet node agent, which must run on GPU nodes without a GPU: not flagged (as
    the admission lint's toleration-without-gpu rule excepts DaemonSets)."""
    s = snap(
        make_node("g").gpus(2).taint("nvidia.com/gpu", "present").obj(),
        make_pod("prep").owner("ReplicaSet", "prep-1").tolerate("nvidia.com/gpu", operator="Exists").on("g").obj(),
        make_pod("train").gpu(1).tolerate("nvidia.com/gpu", operator="Exists").on("g").obj(),
        make_pod("dcgm").ns("gpu-operator").owner("DaemonSet", "dcgm").tolerate("nvidia.com/gpu", operator="Exists")
        .on("g").obj(),
    )  # fmt: skip
    found = inspect(s, NOW).findings
    assert pitfalls(found, "toleration-without-gpu-request") == [
        ("pod tolerates the GPU taint but requests no GPU", ["pod/default/prep"])
    ]
    assert (
        "Fix: request nvidia.com/gpu"
        in next(f for f in found if pitfall_name(f.pitfall) == "toleration-without-gpu-request").detail
    )


def test_r17_5_free_gpus_scattered_over_nodes() -> None:
    """a and b have 4 GPUs with 2 taken each; c has 4 free but is cordoned. big (4 GPUs): 2 + 2 = 4 free on
    open nodes, at most 2 on one: the pitfall, naming a and b. small (2) fits on a or b; huge (6) exceeds
    even the total 4: neither is the pitfall."""
    s = snap(
        make_node("a").gpus(4).obj(), make_node("b").gpus(4).obj(), make_node("c").gpus(4).cordon().obj(),
        make_pod("x").gpu(2).on("a").obj(), make_pod("y").gpu(2).on("b").obj(),
        make_pod("big").gpu(4).owner("Job", "big").obj(),
        make_pod("small").gpu(2).obj(), make_pod("huge").gpu(6).obj(),
    )  # fmt: skip
    found = inspect(s, NOW).findings
    assert pitfalls(found, "gpus-scattered-over-nodes") == [
        ("default/big needs 4 nvidia.com/gpu on one node; the free ones are scattered",
         ["pod/default/big", "node/a", "node/b"]),
    ]  # fmt: skip
    detail = next(f for f in found if pitfall_name(f.pitfall) == "gpus-scattered-over-nodes").detail
    assert (
        detail.startswith("4 nvidia.com/gpu are free in total (a 2, b 2)")
        and "most free on any is 2" in detail
    )


def test_r17_6_a_deleted_pending_pod_comes_back_pending(tmp_path: Path) -> None:
    """Between the snapshots: StatefulSet train's Pending train-0 was deleted and came back under the same
    name with a new uid, Pending; ReplicaSet web-1's Pending web-1-abc was replaced by web-1-def, Pending.
    Job etl's Pending pod is the same pod (same uid) in both; the bare pod solo was deleted and nothing
    recreated it. Two findings: train and web-1."""
    before = [
        make_node("n").gpus(4).obj(),
        with_uid(make_pod("train-0").gpu(8).owner("StatefulSet", "train").obj(), "u1"),
        with_uid(make_pod("web-1-abc").gpu(8).owner("ReplicaSet", "web-1").obj(), "u2"),
        with_uid(make_pod("etl-x").gpu(8).owner("Job", "etl").obj(), "u3"),
        with_uid(make_pod("solo").gpu(8).obj(), "u4"),
    ]
    after = [
        make_node("n").gpus(4).obj(),
        with_uid(make_pod("train-0").gpu(8).owner("StatefulSet", "train").obj(), "u5"),
        with_uid(make_pod("web-1-def").gpu(8).owner("ReplicaSet", "web-1").obj(), "u6"),
        with_uid(make_pod("etl-x").gpu(8).owner("Job", "etl").obj(), "u3"),
    ]
    found = inspect(snap(*after), NOW, snap(*before)).findings
    assert pitfalls(found, "recreated-not-fixed") == [
        ("ReplicaSet default/web-1 recreated its deleted Pending pod, Pending again",
         ["replicaset/default/web-1", "pod/default/web-1-abc", "pod/default/web-1-def"]),
        ("StatefulSet default/train recreated its deleted Pending pod, Pending again",
         ["statefulset/default/train", "pod/default/train-0"]),
    ]  # fmt: skip
    # the same through the command, with the machine-readable id in -o json
    paths = []
    for name, objs in (("before", before), ("after", after)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump_all(objs))
        paths.append(str(path))
    result = CliRunner().invoke(cli, ["inspect", "--snapshot", paths[1], "--previous", paths[0],
                                      "--now", "2026-12-02T12:00:00Z", "-o", "json"])  # fmt: skip
    report = json.loads(result.stdout)
    assert sorted(f["objects"][0] for f in report["findings"] if f["pitfall"] == "recreated-not-fixed") == [
        "replicaset/default/web-1",
        "statefulset/default/train",
    ]
    # pitfalls are named for users; no internal requirement code reaches the JSON
    assert {f["pitfall"] for f in report["findings"]} <= {None, *PITFALL_NAMES.values()}
    assert all("requirement" not in f for f in report["findings"])
