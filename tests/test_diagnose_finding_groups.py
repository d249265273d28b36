"""diagnose's one-line findings list on a multi-tenant cluster (and inspect's past its panels): one check's
findings about many objects (a ReplicaSet per namespace refused by its namespace's ResourceQuota) are one
line with their count and a few of them, grouped by what made them (``Finding.check``, ``subject``,
``many``), not by their titles' text; ``--all`` and ``-o json`` keep every finding.

The refusal's shape is tests/realcases/replicaset-exceeded-quota.yaml's
(https://github.com/ministryofjustice/cloud-platform/issues/590): the ReplicaSet's status condition
``ReplicaFailure``/``FailedCreate`` whose message is the pod creation's error (kubernetes
pkg/controller/replicaset/replica_set_utils.go, calculateStatus: ``NewReplicaSetCondition(
apps.ReplicaSetReplicaFailure, v1.ConditionTrue, "FailedCreate", manageReplicasErr.Error())``), the quota
admission's ``exceeded quota: NAME, requested: …, used: …, limited: …`` (staging/src/k8s.io/apiserver/pkg/
admission/plugin/resourcequota/controller.go, checkRequest).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubegpu.cli.main import cli
from kubegpu.cli.summary_view import DETAIL_NODES
from kubegpu.explain.finding_kinds import finding_kinds
from kubegpu.explain.findings import find
from kubegpu.explain.inspect import CHANGED, inspect
from kubegpu.model.snapshot import build_snapshot
from kubegpu.testing.builders import make_node

GPU_KEY = "requests.nvidia.com/gpu"
# (namespace, ReplicaSet) refused by the namespace's full GPU quota, in the order diagnose sorts them
REFUSED = [
    ("team-a", "train-5d9f7c"),
    ("team-b", "infer-6c8b4d"),
    ("team-c", "train-7f6d5b"),
    ("team-d", "batch-84c9f"),
]


def _quota(ns: str, hard: str = "8", used: str = "8") -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpu-quota", "namespace": ns},
        "spec": {"hard": {GPU_KEY: hard}}, "status": {"hard": {GPU_KEY: hard}, "used": {GPU_KEY: used}},
    }  # fmt: skip


def _refused(ns: str, name: str, kind: str = "ReplicaSet", message: str = "") -> dict[str, Any]:
    error = message or (
        f'pods "{name}-x7k2p" is forbidden: exceeded quota: gpu-quota, requested: {GPU_KEY}=1, '
        f"used: {GPU_KEY}=8, limited: {GPU_KEY}=8"
    )
    return {
        "apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": 3},
        "status": {"replicas": 2, "conditions": [
            {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": error}]},
    }  # fmt: skip


def _fleet(extra: list[dict[str, Any]] | None = None, refused: list[tuple[str, str]] = REFUSED) -> list[Any]:
    """Enough GPU nodes for the grouped view (more than ``DETAIL_NODES``), no Pending pod, and per
    namespace of ``refused`` a full GPU quota and the ReplicaSet it refuses."""
    objs: list[Any] = [make_node(f"gpu-{i:02d}").gpus(8).obj() for i in range(DETAIL_NODES + 1)]
    for ns, name in refused:
        objs += [_quota(ns), _refused(ns, name)]
    return objs + (extra or [])


def _write(tmp_path: Path, objs: list[Any]) -> str:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    return str(path)


def _findings_block(output: str) -> list[str]:
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Findings ("))
    end = next(i for i, line in enumerate(lines) if line.startswith("Detail: "))
    return lines[start:end]


def test_replicasets_refused_by_their_quotas_are_one_line_with_a_count_and_examples(tmp_path: Path) -> None:
    path = _write(tmp_path, _fleet())
    result = CliRunner().invoke(cli, ["diagnose", "--snapshot", path], terminal_width=400)
    assert result.exit_code == 0, result.output
    block = _findings_block(result.output)
    assert block[0] == "Findings (8):"  # 4 refused ReplicaSets + 4 full quotas, each still counted
    shown = ", ".join(f"{ns}/{name}" for ns, name in REFUSED[:3])
    assert block[1] == (
        f"  critical: 4 ReplicaSets cannot create their pods: ResourceQuota exceeded ({shown}, +1 more; --all)"
    )
    # the quotas that refuse them: a check of its own, a warning, so after the critical line
    namespaces = ", ".join(ns for ns, _ in REFUSED[:3])
    assert (
        block[2] == f"  warning: 4 namespaces with their GPU quota exhausted ({namespaces}, +1 more; --all)"
    )
    assert len(block) == 3
    assert not any("cannot create its pods" in line for line in block)  # no finding's own line


def test_all_and_json_still_list_every_refused_replicaset(tmp_path: Path) -> None:
    path = _write(tmp_path, _fleet())
    each = CliRunner().invoke(cli, ["diagnose", "--snapshot", path, "--all"], terminal_width=400)
    assert each.exit_code == 0, each.output
    for ns, name in REFUSED:
        assert f"ReplicaSet {ns}/{name} cannot create its pods: ResourceQuota exceeded" in each.output
        assert f"GPU quota exhausted in {ns}" in each.output
    as_json = json.loads(CliRunner().invoke(cli, ["diagnose", "--snapshot", path, "-o", "json"]).output)
    titles = [f["title"] for f in as_json["findings"]]
    assert titles[:4] == [
        f"ReplicaSet {ns}/{name} cannot create its pods: ResourceQuota exceeded" for ns, name in REFUSED
    ]
    assert sorted(titles[4:]) == [f"GPU quota exhausted in {ns}" for ns, _ in REFUSED]
    # the grouping's fields are the view's, not the JSON's: each finding keeps the keys it had
    assert {tuple(f) for f in as_json["findings"]} == {
        ("severity", "layer", "title", "objects", "detail", "commands", "pitfall")
    }
    assert as_json["findings"][0]["objects"] == [
        "replicaset/team-a/train-5d9f7c",
        "resourcequota/team-a/gpu-quota",
    ]


def test_a_single_refused_replicaset_reads_as_before(tmp_path: Path) -> None:
    path = _write(tmp_path, _fleet(refused=REFUSED[:1]))
    block = _findings_block(
        CliRunner().invoke(cli, ["diagnose", "--snapshot", path], terminal_width=400).output
    )
    assert block[1:] == [
        "  critical: ReplicaSet team-a/train-5d9f7c cannot create its pods: ResourceQuota exceeded "
        "(replicaset/team-a/train-5d9f7c, resourcequota/team-a/gpu-quota)",
        "  warning: GPU quota exhausted in team-a (resourcequota/team-a/gpu-quota)",
    ]


def test_another_cause_or_kind_is_another_line(tmp_path: Path) -> None:
    """A StatefulSet refused by the same kind of quota is a line of StatefulSets; ReplicaSets whose quota
    wants cpu set (``failed quota: NAME: must specify …``, podEvaluator.Constraints; tests/realcases/
    statefulset-failed-quota.yaml) are their own line; a refusal that is no quota's (its cause is its
    message) stays a finding of its own, one per ReplicaSet."""
    must = 'pods "{}-q" is forbidden: failed quota: cpu-quota: must specify limits.cpu for: main'
    runtime = 'pods "{}-r" is forbidden: pod rejected: RuntimeClass "nvidia" not found'
    extra = [
        _refused("team-e", "db", kind="StatefulSet"), _quota("team-e"),
        _refused("team-f", "web-1", message=must.format("web-1")),
        _refused("team-g", "web-2", message=must.format("web-2")),
        _refused("team-h", "gpu-1", message=runtime.format("gpu-1")),
        _refused("team-i", "gpu-2", message=runtime.format("gpu-2")),
    ]  # fmt: skip
    path = _write(tmp_path, _fleet(extra))
    block = _findings_block(
        CliRunner().invoke(cli, ["diagnose", "--snapshot", path], terminal_width=400).output
    )
    # in the findings' order (by kind, namespace and name), each line where its first finding is
    assert [line.split(" (")[0] for line in block if "cannot create" in line] == [
        "  critical: 4 ReplicaSets cannot create their pods: ResourceQuota exceeded",
        "  critical: 2 ReplicaSets cannot create their pods: ResourceQuota needs cpu/memory set",
        "  critical: ReplicaSet team-h/gpu-1 cannot create its pods",
        "  critical: ReplicaSet team-i/gpu-2 cannot create its pods",
        "  critical: StatefulSet team-e/db cannot create its pods: ResourceQuota exceeded",
    ]


def test_limitranges_alike_in_namespaces_are_one_line_and_their_amounts_apart() -> None:
    """LimitRanges whose Container item defaults nvidia.com/gpu (LimitRanger, plugin/pkg/admission/
    limitranger/admission.go: the default limit goes to every container that sets none; tests/
    test_findings_limits.py checks it on kube-apiserver 1.37.2): three with a default of 8 are one line,
    one of 2 another."""

    def limit_range(ns: str, gpus: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits", "namespace": ns},
            "spec": {"limits": [{"type": "Container", "default": {"nvidia.com/gpu": gpus}}]},
        }  # fmt: skip

    objs = [limit_range(ns, "8") for ns in ("t1", "t2", "t3")] + [limit_range("t4", "2")]
    snap = build_snapshot([("lr.yaml", o) for o in objs])
    findings = [f for f in find(snap) if f.objects[0].startswith("limitrange/")]
    assert len(findings) == 4
    kinds = finding_kinds(findings)
    assert [(k.heading(), k.named) for k in kinds] == [
        (("warning", "3 LimitRanges give every container 8 nvidia.com/gpu by default"), ["t1/limits", "t2/limits", "t3/limits"]),
        (("warning", "LimitRange t4/limits gives every container 2 nvidia.com/gpu by default"), ["limitrange/t4/limits"]),
    ]  # fmt: skip
    # a view that shows each kind's detail (the HTML report, --node) keeps each finding its own kind
    assert len(finding_kinds(findings, same_title=False)) == 4


def test_inspect_changes_about_many_objects_are_one_kind_each() -> None:
    """``inspect`` against the last snapshot: three GPU nodes whose Ready condition went False (the kubelet's
    node status, https://kubernetes.io/docs/reference/node/node-status/#condition) and two GPU quotas past
    90% are, past the panels it shows one by one, a kind each: "3 GPU nodes became NotReady" naming the
    nodes, "2 quotas crossed 90% of requests.nvidia.com/gpu" naming the quotas."""

    def node(name: str, ready: bool) -> dict[str, Any]:
        raw = make_node(name).gpus(8).obj()
        raw["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
        return raw

    names, spaces = ["n1", "n2", "n3"], ["q1", "q2"]
    before = build_snapshot(
        [("b", node(n, True)) for n in names] + [("b", _quota(ns, used="0")) for ns in spaces]
    )
    after = build_snapshot([("a", node(n, False)) for n in names] + [("a", _quota(ns)) for ns in spaces])
    report = inspect(after, datetime(2026, 12, 2, 12, 0, tzinfo=UTC), before)
    kinds = {k.heading(): k.named for k in finding_kinds(report.findings) if k.first.check == CHANGED}
    assert kinds == {
        ("critical", "3 GPU nodes became NotReady"): names,
        ("warning", f"2 quotas crossed 90% of {GPU_KEY}"): [f"{ns}/gpu-quota" for ns in spaces],
    }
    # each is still its own finding, as -o json lists them
    assert sum(f.title.endswith("became NotReady") for f in report.findings) == 3
