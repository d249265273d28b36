"""diagnose at scale (issue 25): pools from real providers' labels, one evaluation per equivalence class,
and the grouped view (headline, groups by shape and cause, bounded output) on a generated cluster."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubegpu.cli import render, summary_view
from kubegpu.cli.main import cli
from kubegpu.cli.summary_view import headline
from kubegpu.explain.diagnose import diagnose, equivalence_key, explain_many
from kubegpu.explain.engine import Engine
from kubegpu.explain.explanation import NODE_HAS, Explanation, NodeEvidence
from kubegpu.explain.pending import explain_pod
from kubegpu.explain.summary import pod_ask, summarize
from kubegpu.model.gpu_facts import DEFAULT_POOL_LABEL, node_pool
from kubegpu.model.snapshot import build_snapshot
from kubegpu.testing.builders import make_node, make_pod
from tests.scale_fleet import generator
from tests.summaries import summary_of


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        # Karpenter v1 NodePool label (karpenter.sh docs, "Well-Known Labels")
        ({"karpenter.sh/nodepool": "gpu"}, "gpu"),
        # GKE: every node carries cloud.google.com/gke-nodepool=<pool name>
        (
            {"cloud.google.com/gke-nodepool": "train", "node.kubernetes.io/instance-type": "a3-highgpu-8g"},
            "train",
        ),
        # EKS managed node groups: eks.amazonaws.com/nodegroup
        ({"eks.amazonaws.com/nodegroup": "p5"}, "p5"),
        # AKS: kubernetes.azure.com/agentpool
        ({"kubernetes.azure.com/agentpool": "gpupool"}, "gpupool"),
        # no pool label at all: the instance type groups identical machines
        ({"node.kubernetes.io/instance-type": "p5.48xlarge"}, "p5.48xlarge"),
        # the configured label wins over every provider label
        ({DEFAULT_POOL_LABEL: "training", "cloud.google.com/gke-nodepool": "default-pool"}, "training"),
        ({}, ""),
    ],
)
def test_pool_is_read_from_the_labels_real_clusters_carry(labels: dict[str, str], expected: str) -> None:
    assert node_pool(labels) == expected


def test_configured_pool_label_is_used_first() -> None:
    assert node_pool({"team": "a", "karpenter.sh/nodepool": "x"}, "team") == "a"


def test_equivalent_pending_pods_share_one_evaluation(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = [make_node("n1").gpus(2).obj(), make_node("n2").gpus(2).obj()]
    twins = [make_pod(f"replica-{i}").ns("team-a").gpu(4).obj() for i in range(3)]
    other = make_pod("solo").ns("team-b").gpu(4).obj()  # another namespace: its own class
    nominated = make_pod("nom").ns("team-a").gpu(4).obj()
    nominated["status"]["nominatedNodeName"] = "n1"
    snap = build_snapshot([("t.yaml", o) for o in [*nodes, *twins, other, nominated]])
    pending = [
        snap.pod(k)
        for k in ["team-a/replica-0", "team-a/replica-1", "team-a/replica-2", "team-b/solo", "team-a/nom"]
    ]
    engine = Engine(snap)
    calls: list[str] = []
    real = explain_pod

    def counting(engine_: Engine, pod: Any) -> Any:
        calls.append(pod.key)
        return real(engine_, pod)

    monkeypatch.setattr("kubegpu.explain.diagnose.explain_pod", counting)
    pods = [p for p in pending if p is not None]
    out = explain_many(engine, pods)
    # three replicas → one evaluation; the other namespace and the nominated pod → one each
    assert calls == ["team-a/replica-0", "team-b/solo", "team-a/nom"]
    assert [e.pod for e in out] == [p.key for p in pods]
    # the shared evaluation answers what evaluating replica-1 on its own answers (out[1] is a copy of
    # out[0], so comparing the two would prove nothing)
    alone = real(Engine(snap), pods[1])
    assert (out[1].message, out[1].schedulable, out[1].node) == (alone.message, alone.schedulable, alone.node)
    assert not out[0].schedulable
    assert equivalence_key(pods[-1]) is None


def test_grouped_view_counts_pods_by_shape_and_cause() -> None:
    """20 Pending pods of the generator's fixed mix (j % 20): 8 × 8-GPU train (no node has 8 free: every
    node runs 3-4 GPU pods), 3 for pool "inference" (no such pool), 3 for the tainted batch pool without
    the toleration, 2 asking 300 CPUs (nodes have 207.5), 4 small ones that fit."""
    data = generator().generate(40, 20)
    snap = build_snapshot([("gen.json", o) for o in data["items"]])
    report = diagnose(Engine(snap), pool_label="cloud.google.com/gke-nodepool")
    shapes = {str(p.key): pod_ask(p) for p in snap.pending_pods()}
    summary = summarize(report, shapes)
    causes = dict(summary.causes)
    assert causes == {
        "Insufficient nvidia.com/gpu": 8,
        "schedulable now": 4,
        "no node matches the pod's nodeSelector / required node affinity": 3,
        "node(s) had untolerated taint(s)": 3,
        "Insufficient cpu": 2,
    }
    assert summary.pending == 20 and summary.gpu_nodes == 40 and summary.gpus == 320
    # the headline lists what blocks pods first, the 4 that fit now last (as the groups, below)
    order = [c for c, _ in summary.causes]
    assert order[0] == "Insufficient nvidia.com/gpu" and order[-1] == "schedulable now"
    train = summary.groups[0]
    assert len(train.pods) == 8 and train.shape.startswith("8 nvidia.com/gpu")
    # the 4 pods that fit now come after every blocked group, the smaller ones too: a view cut at
    # MAX_GROUPS keeps what needs a fix, however many pods merely wait for the scheduler
    assert [g.cause == "schedulable now" for g in summary.groups] == [False] * (len(summary.groups) - 1) + [
        True
    ]
    assert [len(g.pods) for g in summary.groups][1:] == [3, 3, 2, 4]
    assert all(n.name.startswith("gke-train-") for n in train.nearest)  # only train nodes are near misses
    pools = {(g.pool, g.resource): g.nodes for g in summary.node_groups}
    # the generator: i % 4 == 0 batch, 1 and 2 train, 3 serve → 10 / 20 / 10 of 40
    assert pools == {
        ("batch", "nvidia.com/gpu"): 10,
        ("train", "nvidia.com/gpu"): 20,
        ("serve", "nvidia.com/gpu"): 10,
    }


def test_default_view_of_a_large_cluster_is_bounded_and_json_names_every_pod(tmp_path: Path) -> None:
    data = generator().generate(60, 200)
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    # line 0: the kube-scheduler release reproduced; line 1: the title; then the headline
    assert lines[0].startswith("kube-scheduler 1.")
    assert lines[2].startswith("60 GPU nodes, 480 GPUs allocatable") and "200 Pending GPU pod(s)" in lines[2]
    assert len(lines) <= 400
    assert "80 pod(s) (" in result.output  # the 8-GPU class: 200 × 8/20, one line, not 80
    # their 80 alike findings are one line that reads as a sentence (the pod's place was "{pod}")
    findings = [line for line in lines if "on one node; the free ones are scattered" in line]
    assert len(findings) == 1 and "{pod}" not in result.output
    assert findings[0].startswith("  warning, 80 pods: the pod needs 8 nvidia.com/gpu on one node")
    as_json = json.loads(CliRunner().invoke(cli, ["diagnose", "--snapshot", str(path), "-o", "json"]).output)
    assert len(as_json["pending"]) == 200 and len(as_json["nodes"]) == 60
    # the headline and groups of the table view, for scripts: the same figures as line 2
    head = as_json["summary"]
    assert (head["gpuNodes"], head["gpus"], head["pendingGpuPods"]) == (60, 480, 200)
    assert sum(g["count"] for g in head["groups"]) == 200 == sum(c["pods"] for c in head["causes"])
    assert head["firstStep"].split(".")[0] in " ".join(result.output.split())
    assert lines[2].startswith(f"60 GPU nodes, 480 GPUs allocatable, {head['requested']} requested")
    # a fix shared by groups (the batch pool's taint refuses the train, inference and CPU-heavy pods alike)
    # is printed with its first group; the others say "fix as above"
    taint = [line for line in lines if "node(s): node(s) had untolerated taint" in line]
    assert len(taint) >= 3 and "add a toleration" in taint[0]
    assert all(line.endswith("— fix as above") for line in taint[1:])
    one = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(path), "--pod", "team-a/train-00000"])
    assert one.exit_code == 0 and "team-a/train-00000" in one.output


def test_pods_held_back_alike_share_a_group_whatever_their_cpu_and_memory() -> None:
    """Three 8-GPU pods for pool train with different CPU and memory requests, on a cluster whose one train
    node has 4 GPUs: each is refused by NodeResourcesFit for nvidia.com/gpu, so they form one group whose
    phrase spans their requests (cpu 4, 8, 16 → 4–16; memory 64Gi, 16Gi, 32Gi → 16Gi–64Gi). A 1-GPU pod for
    the same pool fits: another group. Before, every distinct CPU / memory request was a group of its own,
    and 1,000 Pending pods with varied requests printed 1,058 lines."""
    pool = "cloud.google.com/gke-nodepool"
    objs = [make_node("train-0").gpus(4).label(pool, "train").obj()]
    for name, cpu, memory in (("a", "4", "64Gi"), ("b", "16", "16Gi"), ("c", "8", "32Gi")):
        objs.append(
            make_pod(name).gpu(8).requests(cpu=cpu, memory=memory).node_selector(**{pool: "train"}).obj()
        )
    objs.append(make_pod("d").gpu(1).requests(cpu="2").node_selector(**{pool: "train"}).obj())
    snap = build_snapshot([("hand-built.yaml", o) for o in objs])
    summary = summary_of(snap)
    assert [(g.shape, g.cause, len(g.pods)) for g in summary.groups] == [
        (f"8 nvidia.com/gpu, cpu 4–16, memory 16Gi–64Gi on {pool}=train", "Insufficient nvidia.com/gpu", 3),
        (f"1 nvidia.com/gpu, cpu 2 on {pool}=train", "schedulable now", 1),
    ]


def test_a_groups_reasons_are_listed_most_nodes_first() -> None:
    """12 nodes with 2 GPUs each refuse a 4-GPU pod for GPUs, 2 cordoned nodes as unschedulable, 3 tainted
    ones for the taint. The FailedScheduling message lists its histogram as upstream sorts it, "<count>
    <reason>" as text (pkg/scheduler/framework/types.go, FitError.Error: sort.Strings), so "12 Insufficient"
    comes before "2 node(s) were unschedulable" and "3 node(s) had untolerated taint"; the group's reasons
    are by node count, 12, 3, 2 (before, the histogram's order reversed: 2, 3, 12)."""
    objs = [make_node(f"gpu-{i:02d}").gpus(2).obj() for i in range(12)]
    objs += [make_node(f"cordoned-{i}").gpus(8).cordon().obj() for i in range(2)]
    objs += [make_node(f"tainted-{i}").gpus(8).taint("dedicated", "infra").obj() for i in range(3)]
    objs.append(make_pod("p").gpu(4).obj())
    snap = build_snapshot([("hand-built.yaml", o) for o in objs])
    summary = summary_of(snap)
    (group,) = summary.groups
    assert group.message.startswith(
        "0/17 nodes are available: 12 Insufficient nvidia.com/gpu, 2 node(s) were"
    )
    assert [(r.reason, r.nodes) for r in group.reasons] == [
        ("Insufficient nvidia.com/gpu", 12),
        ("node(s) had untolerated taint(s)", 3),
        ("node(s) were unschedulable", 2),
    ]


def test_the_cause_counts_only_the_nodes_the_pods_selector_admits() -> None:
    """4 B200 nodes carry nvidia.com/gpu=present:NoSchedule, 6 H100 nodes spot=true:NoSchedule; a pod selects
    B200 by GFD's product label and tolerates neither. kube-scheduler names the first failing filter per
    node and TaintToleration runs before NodeAffinity (pkg/scheduler/apis/config/v1/default_plugins.go), so
    its message reads 4 nodes refused by the GPU taint and 6 by the spot taint; the pod's cause is the GPU
    taint, the only reason on the nodes it asked for (before: the spot taint, refusing more nodes)."""
    product = "nvidia.com/gpu.product"
    objs = [make_node(f"b200-{i}").gpus(1).label(product, "NVIDIA-B200").taint("nvidia.com/gpu", "present").obj()
            for i in range(4)]  # fmt: skip
    objs += [make_node(f"h100-{i}").gpus(1).label(product, "NVIDIA-H100-80GB-HBM3").taint("spot", "true").obj()
             for i in range(6)]  # fmt: skip
    objs.append(make_pod("p").gpu(1).node_selector(**{product: "NVIDIA-B200"}).obj())
    snap = build_snapshot([("hand-built.yaml", o) for o in objs])
    snap.kube_version = "1.33"  # (each taint named: merged into one text from 1.34, kubernetes PR #135023)
    summary = summary_of(snap)
    (group,) = summary.groups
    assert group.message.startswith(
        "0/10 nodes are available: 4 node(s) had untolerated taint {nvidia.com/gpu: present}, 6 node(s) had "
        "untolerated taint {spot: true}."
    )
    assert group.cause == "node(s) had untolerated taint {nvidia.com/gpu: present}"
    assert "key: nvidia.com/gpu" in group.fix and summary.causes == [(group.cause, 1)]


def test_a_group_phrase_names_affinity_terms_and_requests_some_pods_lack() -> None:
    """Two 8-GPU pods with required node affinity for different pools are two groups (the terms are in
    the phrase; "required node affinity" alone merged them); a pod without a CPU request beside one with
    16 reads "cpu up to 16"; the memory range is in one unit (32Gi = 32768Mi, 32769Mi: Mi)."""
    pool = "cloud.google.com/gke-nodepool"
    objs = [make_node("train-0").gpus(4).label(pool, "train").obj()]
    objs.append(make_pod("a").gpu(8).requests(memory="32Gi").require([(pool, "In", ["train"])]).obj())
    objs.append(
        make_pod("b").gpu(8).requests(cpu="16", memory="32769Mi").require([(pool, "In", ["train"])]).obj()
    )
    objs.append(make_pod("c").gpu(8).require([(pool, "In", ["eval", "test"])], [(pool, "Exists", [])]).obj())
    snap = build_snapshot([("hand-built.yaml", o) for o in objs])
    summary = summary_of(snap)
    shapes = sorted(g.shape for g in summary.groups)
    assert shapes == [
        f"8 nvidia.com/gpu on node affinity {pool} In [eval, test] or {pool} Exists",
        f"8 nvidia.com/gpu, cpu up to 16, memory 32768Mi–32769Mi on node affinity {pool} In [train]",
    ]


def test_grouped_view_bounds_many_groups_and_pools(tmp_path: Path) -> None:
    """60 pools of one node each (4 GPUs) and one 8-GPU Pending pod per pool: 60 groups (the pools differ)
    and 60 pool rows. The view shows 12 groups with evidence, 40 in one line each, then "… 8 more group(s)
    of 8 pod(s)"; 40 pool rows, then "… 20 more row(s) of 20 node(s)"."""
    pool = "cloud.google.com/gke-nodepool"
    objs = [make_node(f"n{i:02d}").gpus(4).label(pool, f"p{i:02d}").obj() for i in range(60)]
    objs += [make_pod(f"big-{i:02d}").gpu(8).node_selector(**{pool: f"p{i:02d}"}).obj() for i in range(60)]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    result = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "Pending GPU pods by shape and cause (60 group(s)):" in lines
    assert sum(1 for line in lines if line.startswith("    e.g. ")) == 12  # evidence for the first 12
    assert sum(1 for line in lines if line.startswith("- 1 pod(s) want 8 nvidia.com/gpu")) == 40
    assert "  … 8 more group(s) of 8 pod(s) (--all)" in lines
    assert sum(1 for line in lines if line[:3] == "  p" and line[3:5].isdigit()) == 40  # rows "  p00 …"
    assert "  … 20 more row(s) of 20 node(s) (--all)" in lines


def test_diagnose_all_collapses_alike_nodes_per_pod_and_pod_gives_each(tmp_path: Path) -> None:
    """``diagnose --all`` on 40 nodes (above COLLAPSE_NODES) prints each Pending pod's evidence with alike
    nodes in one counted row, as ``explain`` does, naming ``--pod`` for a row per node: a row per node and pod
    is 5M rows on 5,000 nodes with 1,000 Pending pods (the 500-node / 100-pod fleet took 36 CPU s and 98k lines
    that way, 3 s and 7k lines now). ``--pod NS/NAME`` keeps every node."""
    data = generator().generate(40, 20)
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(data))
    full = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(path), "--all"])
    assert full.exit_code == 0, full.output
    assert (
        "evidence per node (40 nodes, alike ones in one row; --pod team-a/train-00000: each)" in full.output
    )
    one = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(path), "--pod", "team-a/train-00000"])
    assert one.exit_code == 0, one.output
    assert "alike ones in one row" not in one.output
    named = {line.split("│")[1].strip() for line in one.output.splitlines() if line.startswith("│ gke-")}
    nodes = {o["metadata"]["name"] for o in data["items"] if o["kind"] == "Node"}
    assert len(nodes) == 40 and nodes <= named  # a row per node (its first line names it)


def test_explain_on_many_nodes_collapses_nodes_that_read_alike(tmp_path: Path) -> None:
    """40 nodes (10 batch, tainted; 20 train; 10 serve: the generator's i % 4), one 8-GPU train pod that
    fits nowhere: the batch nodes read alike (the taint), the serve nodes alike (the selector), the train
    nodes by their free GPUs. Above 30 refused nodes ``explain`` shows one row per alike set, counted,
    and the first 12 names of each reason group; ``--all`` a row per node."""
    data = generator().generate(40, 20)
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(data))
    short = CliRunner().invoke(cli, ["explain", "team-a/train-00000", "--snapshot", str(path)])
    assert short.exit_code == 0, short.output
    assert "evidence per node (40 nodes, alike ones in one row; --all: each)" in short.output
    assert "10 nodes: gke-batch-00000" in short.output and "10 nodes: gke-serve-" in short.output
    batch = next(line for line in short.output.splitlines() if "10 node(s): gke-batch-00000" in line)
    assert "more" not in batch  # 10 names: all shown
    train = short.output[short.output.index("20 node(s): gke-train-") :]
    assert "… +8 more (--all)" in train.split("fix:")[0]  # 20 − 12
    every = CliRunner().invoke(cli, ["explain", "team-a/train-00000", "--snapshot", str(path), "--all"])
    assert every.exit_code == 0, every.output
    filters = ("TaintToleration", "NodeAffinity", "NodeResourcesFit")
    rows = [
        line
        for line in every.output.splitlines()
        if line.startswith("│ gke-") and line.split("│")[2].strip() in filters
    ]
    assert len(rows) == 40  # one per refused node (its first line: name, then its first failing filter)
    assert "alike ones in one row" not in every.output and "more (--all)" not in every.output
    # 28 nodes (7 batch, 14 train, 7 serve): at most 30 refused, nothing is cut, not even a 14-name group
    small = tmp_path / "small.json"
    small.write_text(json.dumps(generator().generate(28, 4)))
    few = CliRunner().invoke(cli, ["explain", "team-a/train-00000", "--snapshot", str(small)])
    assert few.exit_code == 0, few.output
    assert "14 node(s): gke-train-" in few.output and "more (--all)" not in few.output
    assert "alike ones in one row" not in few.output


@pytest.mark.parametrize(("causes", "printed", "more"), [(6, 6, None), (7, 5, "  … 2 more cause(s) (--all)")])
def test_the_headline_cuts_causes_only_where_a_more_line_saves_lines(
    causes: int, printed: int, more: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    """At most 5 causes and a "… N more" line, but never "… 1 more", which takes the line the sixth cause
    needs (the demo has 6 causes since a pod kubelet would refuse counts as its own cause)."""
    snap = build_snapshot([("t", make_node("n").gpus(1).obj())])
    summary = summarize(diagnose(Engine(snap)), {})
    summary.causes = [(f"cause {i}", 10 - i) for i in range(causes)]
    headline(summary)
    lines = capsys.readouterr().out.splitlines()
    listed = [line for line in lines if line.endswith(tuple(f"cause {i}" for i in range(causes)))]
    assert len(listed) == printed
    assert [line for line in lines if "more cause" in line] == ([more] if more else [])


def test_explain_keeps_the_rows_of_the_most_nodes_when_evidence_differs_node_by_node() -> None:
    """100 refused nodes: n000–n049 read alike (a taint), n050–n099 each its own evidence (as DRA evidence
    names each node's own claim holders): 51 distinct rows are more than 40, so the alike set and the
    first 39 single nodes stay, in node order, and one row counts the other 11; every node with --all."""
    nodes = [NodeEvidence(f"n{i:03d}", "TaintToleration", ["taint"], "U", ["t"]) for i in range(50)]
    nodes += [
        NodeEvidence(f"n{i:03d}", "DynamicResources", ["dra"], "U", [f"held by c{i}"]) for i in range(50, 100)
    ]
    exp = Explanation(pod="default/p", schedulable=False, node=None, message="m", nodes=nodes)
    rows = render._node_rows(exp, every=False)
    assert len(rows) == render.MAX_NODE_ROWS + 1
    assert rows[0][0] == "50 nodes: n000, n001 +48"
    assert [r[0] for r in rows[1:40]] == [f"n{i:03d}" for i in range(50, 89)]
    assert rows[40] == ("… 11 more node(s)", "", "", "11 more row(s) of their own evidence (--all)")
    assert len(render._node_rows(exp, every=True)) == 100


def test_explain_merges_nodes_that_differ_only_in_their_own_label_values() -> None:
    """60 nodes refused by NodeAffinity, whose evidence differs only in the label value each node has
    (pools p0–p4 round robin: 12 each; pool p0's nodes also in zone a, the rest in b): one row, the pod's
    side written once and the readings counted, the commonest first, ``READINGS_SHOWN`` of them; a
    reading all nodes share is the line as it was. With --all each node keeps its own line."""
    term = "required term 0: pool In ['gpu']; "
    nodes = [
        NodeEvidence(f"n{i:02d}", "NodeAffinity", ["affinity"], "U", [f"{term}{NODE_HAS}pool=p{i % 5}"])
        for i in range(60)
    ]
    nodes += [NodeEvidence("m0", "TaintToleration", ["taint"], "U", ["taint t is not tolerated"])] * 31
    exp = Explanation(pod="default/p", schedulable=False, node=None, message="m", nodes=nodes)
    rows = render._node_rows(exp, every=False)
    assert [r[0] for r in rows] == ["60 nodes: n00, n01 +58", "31 nodes: m0, m0 +29"]
    shown = ", ".join(f"pool=p{k} (12 nodes)" for k in range(render.READINGS_SHOWN))
    assert rows[0][3] == f"{term}nodes have {shown}, … +{5 - render.READINGS_SHOWN} more"
    assert rows[1][3] == "taint t is not tolerated"
    assert [r[3] for r in render._node_rows(exp, every=True)[:2]] == [
        f"{term}{NODE_HAS}pool=p0",
        f"{term}{NODE_HAS}pool=p1",
    ]
    # the commonest reading first, whatever the node order
    skewed = [
        NodeEvidence(
            f"z{i}", "NodeAffinity", ["affinity"], "U", [f"{term}{NODE_HAS}zone={'a' if i < 19 else 'b'}"]
        )
        for i in range(40)
    ]
    exp = Explanation(pod="default/p", schedulable=False, node=None, message="m", nodes=skewed)
    assert (
        render._node_rows(exp, every=False)[0][3] == f"{term}nodes have zone=b (21 nodes), zone=a (19 nodes)"
    )


def test_the_pool_table_is_as_wide_as_its_longest_product_and_resource(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A MIG node's product label (GFD: ``NVIDIA-H100-80GB-HBM3-MIG-1g.10gb``, 33 characters) and resource
    (``nvidia.com/mig-1g.10gb``, 22) are wider than the columns' 28 and 16: the columns grow, so every row's
    node count ends where the header's "nodes" does."""
    objs = [
        make_node("h").gpus(8).label("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").obj(),
        make_node("m")
        .gpus(56, resource="nvidia.com/mig-1g.10gb")
        .label("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb")
        .obj(),
    ]
    snap = build_snapshot([("t", o) for o in objs])
    report = diagnose(Engine(snap))
    summary_view.grouped(summarize(report, {}), report)
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("GPU nodes by pool and product:")
    header, rows = lines[start + 1], lines[start + 2 : start + 4]
    end = header.index("nodes") + len("nodes")
    assert [r[end - 1] for r in rows] == ["1", "1"] and all(r[end] == " " for r in rows), rows
    assert any("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb nvidia.com/mig-1g.10gb" in r for r in rows)


def test_inspect_on_a_large_cluster_prints_one_panel_per_kind_of_finding(tmp_path: Path) -> None:
    """60 nodes, 200 Pending pods of which 80 ask 8 GPUs that are free only scattered: 80 findings alike but
    for their pod. ``inspect`` prints them as one panel ("warning, 80 pods: the pod needs …") naming 20
    pods and counting the rest; its text names the 12 nodes with the most free GPUs and counts the rest
    (every node and pod stays in ``-o json``). At 5,000 nodes the panels were 273,201 lines."""
    data = generator().generate(60, 200)
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(cli, ["inspect", "--snapshot", str(path)])
    out = result.output
    assert out.count("the free ones are scattered") == 1 and "warning, 80 pods: the pod needs 8" in out
    assert "+60 more (-o json)" in out and "80 findings alike; the first one's detail:" in out
    assert out.count("gke-") == 12  # the detail's 12 nodes; the panel names pods
    as_json = json.loads(CliRunner().invoke(cli, ["inspect", "--snapshot", str(path), "-o", "json"]).output)
    scattered = [f for f in as_json["findings"] if "scattered" in f["title"]]
    holding = len(scattered[0]["objects"]) - 1  # every node holding a free GPU, beside the pod
    assert len(scattered) == 80 and holding > 12
    assert f", +{holding - 12} more nodes)" in scattered[0]["detail"]
    assert len(re.findall(r"gke-[a-z]+-\d+ \d", scattered[0]["detail"])) == 12


def test_diagnose_node_names_findings_alike_but_for_their_pod_once(tmp_path: Path) -> None:
    """The 80 scattered-GPU findings of the generated cluster each name every node holding a free GPU, so
    ``diagnose --node`` of such a node printed 80 paragraphs of one text (400 and 811 lines at 5,000 nodes).
    Now one line: the kind's heading, the first 20 pods and how many more, the first finding's detail."""
    data = generator().generate(60, 200)
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(data))
    as_json = json.loads(CliRunner().invoke(cli, ["inspect", "--snapshot", str(path), "-o", "json"]).output)
    scattered = [f for f in as_json["findings"] if "scattered" in f["title"]]
    node = next(o for o in scattered[0]["objects"] if o.startswith("node/"))[5:]
    out = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(path), "--node", node]).output
    assert out.count("the free ones are scattered") == 1, out
    line = next(x for x in out.splitlines() if "scattered" in x)
    assert line.startswith("  warning, 80 pods: the pod needs 8")
    assert ", +60 more (-o json)) — 80 findings alike; the first one's detail: " in line
    pods = [f["objects"][0][4:] for f in scattered[:20]]
    assert f"({', '.join(pods)}, +60" in line


def test_inspect_keeps_findings_of_one_title_about_different_nodes_apart(tmp_path: Path) -> None:
    """n1 has 1 of its 4 GPUs unhealthy, n2 6 of its 8: two "allocatable GPUs below capacity" findings,
    one title, no pod in it, each node its own detail. ``inspect`` shows both panels (grouping is for
    findings alike but for their pod), each naming its own node."""
    objs = [
        make_node("n1").gpus(4).allocatable(nvidia_com__gpu=3).obj(),
        make_node("n2").gpus(8).allocatable(nvidia_com__gpu=2).obj(),
    ]
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    out = CliRunner().invoke(cli, ["inspect", "--snapshot", str(path)]).output
    assert out.count("allocatable GPUs below capacity") == 2 and "findings alike" not in out
    assert "node/n1" in out and "node/n2" in out


def test_schedule_and_queues_group_a_long_pass_by_outcome(tmp_path: Path) -> None:
    """`schedule` and `queues` on 60 nodes with 200 Pending pods: before, a row per pod (2,206 and 2,010
    lines at 5,000 nodes / 1,000 Pending); now one row per outcome (each refusal message once, with how
    many pods got it; the bound pods once, naming the first twelve placements), and `--all` or `-o json`
    still a row per pod."""
    data = generator().generate(60, 200)
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(data))
    runner = CliRunner()
    as_json = json.loads(runner.invoke(cli, ["schedule", "--snapshot", str(path), "-o", "json"]).output)
    results = as_json["results"]
    assert len(results) == 200
    messages = {r["message"] for r in results if not r["node"]}
    bound = [r for r in results if r["node"]]
    table = runner.invoke(cli, ["schedule", "--snapshot", str(path)])
    assert table.exit_code == 0, table.output
    assert len(table.output.splitlines()) < 60
    # (the generated pass has several refusal messages and more bound pods than a row names)
    assert len(messages) >= 2 and len(bound) > 12
    rows = [(who, str(text)) for who, _, text in render._schedule_rows(results, every=False)]
    for m in messages:
        count = sum(r["message"] == m for r in results)
        got = [r["pod"] for r in results if r["message"] == m]
        label = (
            got[0]
            if count == 1
            else f"{count} pods: {got[0]}, {got[1]}" + (f" +{count - 2}" if count > 2 else "")
        )
        assert [who for who, text in rows if text == m] == [label]
    (placed,) = [text for _, text in rows if text.startswith("bound")]
    assert placed.startswith(f"bound: {bound[0]['pod']} → {bound[0]['node']}, {bound[1]['pod']} → ")
    assert placed.endswith(f", … +{len(bound) - 12} more (--all)") and len(rows) == len(messages) + 1
    every = runner.invoke(cli, ["schedule", "--snapshot", str(path), "--all"]).output
    assert all(r["pod"] in every for r in results)
    decisions = json.loads(runner.invoke(cli, ["queues", "--snapshot", str(path), "-o", "json"]).output)
    assert len(decisions["decisions"]) == 200
    queues = runner.invoke(cli, ["queues", "--snapshot", str(path)])
    assert queues.exit_code == 0 and len(queues.output.splitlines()) < 60
    every = runner.invoke(cli, ["queues", "--snapshot", str(path), "--all"]).output
    assert all(d["workload"] in every for d in decisions["decisions"])


def test_a_preemption_keeps_a_row_of_its_own_in_a_grouped_pass() -> None:
    """40 pods: 38 refused alike, one bound, one bound after preempting: three rows, the preemption's own
    (it names what it evicted); priorities of a group read as a range."""
    refused = {"node": None, "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
               "nominatedNode": None, "evicted": []}  # fmt: skip
    results = [{"pod": f"ns/p{i}", "priority": i % 2, **refused} for i in range(38)]
    results.append({"pod": "ns/b", "priority": 0, "node": "n1", "message": None, "nominatedNode": None,
                    "evicted": []})  # fmt: skip
    results.append({"pod": "ns/urgent", "priority": 100, "node": "n2", "message": None,
                    "nominatedNode": None, "evicted": ["ns/victim"]})  # fmt: skip
    rows = render._schedule_rows(results, every=False)
    assert [(who, prio, str(text)) for who, prio, text in rows] == [
        ("38 pods: ns/p0, ns/p1 +36", "0–1", refused["message"]),
        ("ns/b", "0", "bound to n1"),
        ("ns/urgent", "100", "bound to n2 after preempting ns/victim"),
    ]
    assert len(render._schedule_rows(results, every=True)) == 40
