"""What kubegpu says of a kai-scheduler pod's queue and GPU memory, on objects rebuilt from
kai-scheduler/KAI-Scheduler#612 (a whole-GPU pod in the top-level queue burst-queue stays Pending: before
v0.13.0 KAI schedules only queues with a parent, #621, fixed by #858) and #706 (a gpu-memory pod on a GB10
node, whose GPU Feature Discovery labels carry no nvidia.com/gpu.memory, which KAI sizes gpu-memory from).
"""

from __future__ import annotations

from typing import Any

from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.explain.schedulers import handling
from kubegpu.model.snapshot import build_snapshot
from kubegpu.testing.builders import make_node, make_pod
from tests.walks import CountedList


def _queue(name: str, parent: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"resources": {"gpu": {"quota": 0, "limit": -1}}}
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def _notes(*objs: dict[str, Any]) -> list[str]:
    snap = build_snapshot([("t.yaml", x) for x in objs])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    return explain_pod(Engine(snap), next(p for p in snap.pods if p.name == "train-pod")).notes


def _pod(queue: str, **annotations: str) -> dict[str, Any]:
    pod = make_pod("train-pod").gpu(1).obj()
    pod["spec"]["schedulerName"] = "kai-scheduler"
    pod["metadata"]["labels"] = {"kai.scheduler/queue": queue}
    if annotations:
        pod["metadata"]["annotations"] = annotations
        del pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
    return pod


def test_a_whole_gpu_pod_in_a_top_level_queue_kai_612() -> None:
    node = make_node("gpu-node").gpus(1).obj()
    notes = _notes(node, _queue("burst-queue"), _pod("burst-queue"))
    assert any(n.startswith("KAI queue burst-queue has no parentQueue") and "v0.13.0" in n for n in notes), (
        notes
    )
    child = _notes(node, _queue("default"), _queue("team", "default"), _pod("team"))
    assert not any("parentQueue" in n for n in child), child
    missing = _notes(node, _queue("default"), _pod("nope"))
    assert any(n.startswith("KAI queue nope does not exist (queues: default)") for n in missing), missing


def test_gpu_memory_on_a_node_without_the_gfd_memory_label_kai_706() -> None:
    gb10 = make_node("spark-gb10").gpus(1, product="NVIDIA-GB10").obj()
    labelled = (
        make_node("spark-gb10").gpus(1, product="NVIDIA-GB10").label("nvidia.com/gpu.memory", "122880").obj()
    )
    queues = (_queue("default"), _queue("default-queue", "default"))
    notes = _notes(gb10, *queues, _pod("default-queue", **{"gpu-memory": "2000"}))
    assert any(
        n.startswith(
            "gpu-memory: kai-scheduler sizes it from the node label nvidia.com/gpu.memory, missing on spark-gb10"
        )
        for n in notes
    ), notes
    fine = _notes(labelled, *queues, _pod("default-queue", **{"gpu-memory": "2000"}))
    assert not any("nvidia.com/gpu.memory" in n for n in fine), fine


def test_the_nodes_are_read_once_for_all_kai_pods() -> None:
    """diagnose may explain 1,000 Pending KAI pods on 5,000 nodes: the MIG-off nodes (KAI-Scheduler#1120), the
    nodes without GFD's memory label (#706) and the queues are read once per snapshot, not once per pod."""
    mig_off = make_node("mig-off").gpus(8).label("nvidia.com/mig.strategy", "mixed").obj()
    mig_off["status"]["allocatable"]["nvidia.com/mig-1g.24gb"] = "0"
    nodes = [mig_off, *(make_node(f"gb10-{i}").gpus(1, product="NVIDIA-GB10").obj() for i in range(20))]
    pods = []
    for i in range(100):
        pod = _pod("team", **{"gpu-memory": "2000"})
        pod["metadata"]["name"] = f"train-{i}"
        pods.append(pod)
    snap = build_snapshot(
        [("t.yaml", x) for x in (*nodes, _queue("default"), _queue("team", "default"), *pods)]
    )
    assert not snap.errors, [e.one_line() for e in snap.errors]
    snap.nodes = walked = CountedList(snap.nodes)
    snap.records.queues = queues = CountedList(snap.records.queues)
    for pod in snap.pods:
        notes = handling(snap, pod, "default-scheduler").notes
        assert any(n.startswith("mig-off: nvidia.com/mig.strategy=mixed") for n in notes), notes
        assert any(n.startswith("gpu-memory: kai-scheduler sizes it from the node label") for n in notes), (
            notes
        )
    assert walked.walks + queues.walks <= 6, (walked.walks, queues.walks)
