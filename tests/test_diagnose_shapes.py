"""diagnose on cluster shapes issue 25's generator did not cover: hundreds of MIG-only and unhealthy GPU
nodes behind one Insufficient group, Pending pods pinned to one node by hostname (a StatefulSet's pod held to
its local volume's node, a debug pod), each in its own namespace. The grouped view names a few such nodes and
counts the rest; the per-node detail (``explain``, ``-o json``) keeps every node.

Facts pinned: kubelet's device manager counts every device in ``status.capacity`` and only healthy ones in
``allocatable`` (kubernetes/kubernetes pkg/kubelet/cm/devicemanager/manager.go ``GetCapacity``); under the
mixed MIG strategy the device plugin advertises ``nvidia.com/mig-<profile>`` and no ``nvidia.com/gpu``
(NVIDIA/k8s-device-plugin README, "Configuration Option Details": MIG_STRATEGY); the kubelet sets
``kubernetes.io/hostname`` to the node's hostname, which ``--hostname-override`` may make differ from the
node's name (kubernetes.io/docs/reference/labels-annotations-taints, "kubernetes.io/hostname").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubegpu.cli.main import cli
from kubegpu.testing.builders import make_node, make_pod
from tests.explanations import explain, group
from tests.scale_fleet import generator

HOSTNAME = "kubernetes.io/hostname"


def broken_fleet() -> list[Any]:
    """m00–m05 MIG-only with 7 × 1g.5gb, m06–m09 with 3 × 2g.10gb; u0–u4 with 8 GPUs of which none is
    healthy (allocatable 0); f0 with 8 GPUs, 6 taken."""
    objs = [make_node(f"m{i:02d}").gpus(7, resource="nvidia.com/mig-1g.5gb").obj() for i in range(6)]
    objs += [make_node(f"m{i:02d}").gpus(3, resource="nvidia.com/mig-2g.10gb").obj() for i in range(6, 10)]
    objs += [make_node(f"u{i}").gpus(8).allocatable(nvidia_com__gpu=0).obj() for i in range(5)]
    objs += [make_node("f0").gpus(8).obj(), make_pod("r").gpu(6).on("f0").obj()]
    return objs


def test_many_mig_only_and_unhealthy_nodes_are_named_a_few_and_counted() -> None:
    """An 8-GPU pod: the ten MIG-only nodes are one sentence (three named, the layouts counted: six offer
    1g.5gb × 7, four 2g.10gb × 3), the five unhealthy nodes another (8 of 8 each: 0 free + 8 unhealthy ≥ 8);
    none of m03–m09 or u3–u4 is named in the fix, yet each is a node of the explanation."""
    exp = explain(make_pod("p").gpu(8), *broken_fleet())
    fix = group(exp, "Insufficient nvidia.com/gpu").fix
    assert (
        "10 of these nodes are MIG-partitioned (m00, m01, m02 and 7 more), not whole GPUs: "
        "6 offer mig-1g.5gb ×7; 4 offer mig-2g.10gb ×3. If a slice is enough" in fix
    )
    assert "otherwise change the nodes' MIG layout" in fix
    assert (
        "5 of these nodes have nvidia.com/gpu unhealthy (capacity above allocatable: u0 8 of 8, u1 8 of 8, "
        "u2 8 of 8 and 2 more), and the pod would fit on each with all of them healthy." in fix
    )
    assert not any(name in fix for name in ("m03", "m09", "u3", "u4"))
    assert {n.name for n in exp.nodes} == {
        *(f"m{i:02d}" for i in range(10)),
        *(f"u{i}" for i in range(5)),
        "f0",
    }


def test_a_pod_pinned_by_hostname_reads_alike_on_every_other_node() -> None:
    """n00–n39 carry their name as hostname; x's kubelet runs with --hostname-override (x-short). The pod is
    pinned to n07, which is full: the other 39 nodes read one line, one list for them all, the node's name
    not repeated in it; x's own value is told."""
    objs = [make_node(f"n{i:02d}").gpus(1).obj() for i in range(40)]
    objs += [make_node("x").gpus(1).label(HOSTNAME, "x-short").obj(), make_pod("r").gpu(1).on("n07").obj()]
    exp = explain(make_pod("p").gpu(1).selector(HOSTNAME, "n07"), *objs)
    by_name = {n.name: n for n in exp.nodes}
    alike = [by_name[f"n{i:02d}"] for i in range(40) if i != 7]
    assert {tuple(n.evidence) for n in alike} == {
        (f"nodeSelector {HOSTNAME}=n07; node has {HOSTNAME} equal to its name",)
    }
    assert len({id(n.evidence) for n in alike}) == 1
    assert by_name["x"].evidence == [f"nodeSelector {HOSTNAME}=n07; node has {HOSTNAME}=x-short"]
    assert by_name["n07"].evidence == [
        "nvidia.com/gpu: pod requests 1, node has 0 free (allocatable 1, already requested 1)"
    ]
    # a term naming the pinned node and one that is gone (replaced by the autoscaler) reads alike too
    exp = explain(make_pod("q").gpu(1).require([(HOSTNAME, "In", ["n07", "gone"])]), *objs)
    n00 = next(n for n in exp.nodes if n.name == "n00")
    line = f"required term 0: {HOSTNAME} In ['n07', 'gone']; node has {HOSTNAME} equal to its name"
    assert n00.evidence == [line]


def test_a_cluster_of_distinct_pinned_pods_and_broken_nodes_keeps_the_view_bounded(tmp_path: Path) -> None:
    """200 GPU nodes: 40 MIG-only, 30 with their GPUs unhealthy, 130 with 6 of 8 GPUs taken; 60 Pending
    pods, each in a namespace of its own, asking 1–8 GPUs, every sixth pinned to a node by hostname. The
    default view stays within 400 lines and no line grows with the number of broken nodes (before, each
    Insufficient group's fix named all 70, about 17,000 characters); ``-o json`` keeps every node of every
    pod that fits nowhere."""
    objs = [make_node(f"mig-{i:03d}").gpus(7, resource="nvidia.com/mig-1g.5gb").obj() for i in range(40)]
    objs += [make_node(f"bad-{i:03d}").gpus(8).allocatable(nvidia_com__gpu=0).obj() for i in range(30)]
    for i in range(130):
        objs += [
            make_node(f"gpu-{i:03d}").gpus(8).obj(),
            make_pod(f"run-{i:03d}").gpu(6).on(f"gpu-{i:03d}").obj(),
        ]
    for j in range(60):
        pod = make_pod(f"job-{j:02d}").ns(f"proj-{j:02d}").gpu(j % 8 + 1)
        if j % 6 == 0:
            pod = pod.selector(HOSTNAME, f"gpu-{j:03d}")
        objs.append(pod.obj())
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    result = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) <= 400
    assert max(len(line) for line in lines) < 2500
    assert "40 of these nodes are MIG-partitioned (mig-000, mig-001, mig-002 and 37 more)" in result.output
    as_json = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(path), "-o", "json"])
    assert as_json.exit_code == 0, as_json.output
    pending = json.loads(as_json.output)["pending"]
    assert len(pending) == 60
    stuck = [p for p in pending if not p["schedulable"]]
    assert stuck and all(len(p["nodes"]) == 200 for p in stuck)


def test_the_benchmarks_pinned_fleet_groups_its_distinct_pods(tmp_path: Path) -> None:
    """``bench_scale.py --pinned`` at 120 nodes (30 of them batch, tainted) and 60 Pending pods, each a workload
    of its own: the view within 400 lines. proj-0005's pod asks 6 GPUs on gke-serve-00115 (5 × 7919 mod 120),
    which has at most 4 free, and tolerates no taint: the 30 batch nodes refuse it by their taint first, the
    89 others by the selector, with one line they share; proj-0001's pod, pinned to a node that is gone, is
    refused by all 120 (90 by the selector)."""
    path = tmp_path / "pinned.json"
    path.write_text(json.dumps(generator().generate_pinned(120, 60)))
    result = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(path)])
    assert result.exit_code == 0, result.output
    assert len(result.output.splitlines()) <= 400
    as_json = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(path), "-o", "json"])
    pending = {p["pod"]: p for p in json.loads(as_json.output)["pending"]}
    assert len(pending) == 60
    nodes = pending["proj-0005/app-5-5c9d8f7b6-x0005"]["nodes"]
    by_plugin = {n["name"]: n["plugin"] for n in nodes}
    assert by_plugin["gke-serve-00115"] == "NodeResourcesFit"
    assert sum(1 for p in by_plugin.values() if p == "TaintToleration") == 30
    pinned = [n for n in nodes if n["plugin"] == "NodeAffinity"]
    assert len(pinned) == 89
    assert {tuple(n["evidence"]) for n in pinned} == {
        (f"nodeSelector {HOSTNAME}=gke-serve-00115; node has {HOSTNAME} equal to its name",)
    }
    gone = pending["proj-0001/app-1-5c9d8f7b6-x0001"]["nodes"]
    assert len(gone) == 120 and sum(1 for n in gone if n["plugin"] == "NodeAffinity") == 90
