"""The nodes that can never hold a pod's GPUs: a node whose allocatable is below the request stays short
however much is freed (NodeResourcesFit, kubernetes pkg/scheduler/framework/plugins/noderesources/fit.go:
``fitsRequest`` compares the request with allocatable less requested), so it is neither where the cause
is looked for first nor a place to "wait for GPU pods to finish".
"""

from __future__ import annotations

from kubegpu.explain.diagnose import diagnose
from kubegpu.explain.engine import Engine
from kubegpu.explain.summary import pod_ask, summarize
from kubegpu.model.snapshot import build_snapshot
from kubegpu.sources import load_files
from kubegpu.testing.builders import make_node, make_pod
from tests.realcases.cases import HERE, case, pending


def _group(p: dict, reason: str) -> dict:
    return next(g for g in p["groups"] if g["reason"] == reason)


def test_one_gpu_node_refused_by_pod_affinity_is_the_cause_devpod_63() -> None:
    """loft-sh/devpod-provider-kubernetes#63: 4 nodes, one with a GPU; the workspace pod's required
    podAffinity points at a pod on a GPU-less node. The posted message is reproduced; the cause the thread
    found is the affinity on the one GPU node, not the 3 nodes without GPUs."""
    data = case("devpod-gpu-pod-affinity")
    p = pending(data, "devpod/devpod-default-de-a-d7206")
    assert p["message"] == (
        "0/4 nodes are available: 1 node(s) didn't match pod affinity rules, 3 Insufficient nvidia.com/gpu. "
        "preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, 3 No preemption "
        "victims found for incoming pod."
    )
    snap = load_files(HERE / "devpod-gpu-pod-affinity.yaml")
    report = diagnose(Engine(snap))
    summary = summarize(report, {pod.key: pod_ask(pod) for pod in snap.pods})
    assert [c for c, _ in summary.causes] == ["node(s) didn't match pod affinity rules"]
    cpu_nodes = _group(p, "Insufficient nvidia.com/gpu")["fix"]
    assert cpu_nodes.startswith("None of these 3 node(s) has any nvidia.com/gpu (allocatable 0)")
    assert "1 other node(s) have that many, refused for other reasons" in cpu_nodes
    assert "Wait for GPU pods" not in cpu_nodes
    affinity = _group(p, "node(s) didn't match pod affinity rules")["fix"]
    assert "the 1 pod(s) it selects run on node-b" in affinity


def test_a_request_larger_than_every_node_says_so_volcano_2814() -> None:
    """volcano-sh/volcano#2814: a 2-GPU pod on two 1-GPU nodes never fits: no "free devices are
    scattered" (which says freeing would help), but the largest node's allocatable and the two ways out;
    with a 4-GPU node refused by its taint, that node is named as big enough."""
    nodes = [("t", make_node(f"n{i}").gpus(1).obj()) for i in (1, 2)]
    pod = ("t", make_pod("a").gpu(2).obj())
    pod_obj = build_snapshot([pod]).pods[0]
    p = diagnose(Engine(build_snapshot([*nodes, pod]))).to_dict()["pending"][0]
    fix = _group(p, "Insufficient nvidia.com/gpu")["fix"]
    assert "none of these 2 node(s) has that many at all: the largest has 1 allocatable" in fix
    assert "No node in the cluster has that many." in fix and "scattered" not in fix
    big = ("t", make_node("big").gpus(4).taint("dedicated", "x", "NoSchedule").obj())
    report = diagnose(Engine(build_snapshot([*nodes, big, pod])))
    fix = _group(report.to_dict()["pending"][0], "Insufficient nvidia.com/gpu")["fix"]
    assert "1 other node(s) have that many, refused for other reasons (see them)." in fix
    # the grouped view's cause is the taint on the one node that could hold the pod, not the 2 small ones
    summary = summarize(report, {"default/a": pod_ask(pod_obj)})
    assert [c for c, _ in summary.causes] == ["node(s) had untolerated taint(s)"]  # (1.37: the newest minor)
