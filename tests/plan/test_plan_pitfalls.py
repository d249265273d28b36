"""`kubegpu plan` flags the pitfalls of R17 a change walks into (seed §17), with id, objects and fix.

Small clusters built by hand; the expected objects are worked out in each docstring. R17.2 (utilisation)
and R17.6 (deleting a Pending pod) are not planned by any change: see docs/plan.md's audit table.
"""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner
from tests.plan.snapshots import GPU_TAINT, NOW, snap

from kubegpu import sources
from kubegpu.cli.main import cli
from kubegpu.model.objects import Taint
from kubegpu.plan import NodeChange, plan_time_slicing
from kubegpu.plan.device_effect import with_effect
from kubegpu.plan.node_ops import plan_drain, plan_label, plan_taint
from kubegpu.plan.time_slicing import time_sliced_after
from kubegpu.testing.builders import make_node, make_pod


def flagged(change: NodeChange) -> list[tuple[str, list[str]]]:
    rows: Any = change.details["pitfalls"]
    # every pitfall is also a warning, named by its id
    assert [w for w in change.warnings if w.startswith("pitfall ")] == [
        f"pitfall {r['id']}: {r['message']}" for r in rows
    ]
    return [(r["id"], r["objects"]) for r in rows]


def test_r17_4_adding_the_gpu_taint_names_pods_that_tolerate_it_without_a_gpu() -> None:
    """Taint g1 with nvidia.com/gpu=present:NoSchedule. On g1: prep (ReplicaSet, tolerates the key, no GPU)
    is flagged; train (tolerates, 1 GPU) is not; agent (a DaemonSet node agent) is not. Pending etl tolerates
    it with no GPU: flagged (it may land on g1). web tolerates it on g2, which is not tainted: not flagged.
    Removing the taint flags nothing."""
    tol = {"key": "nvidia.com/gpu", "operator": "Exists"}
    s = snap(
        make_node("g1").gpus(2).obj(), make_node("g2").gpus(2).obj(),
        make_pod("prep").owner("ReplicaSet", "prep-1").tolerate(**tol).on("g1").obj(),
        make_pod("train").gpu(1).owner("Job", "train").tolerate(**tol).on("g1").obj(),
        make_pod("agent").owner("DaemonSet", "agent").tolerate(**tol).on("g1").obj(),
        make_pod("etl").owner("Job", "etl").tolerate(**tol).obj(),
        make_pod("web").owner("ReplicaSet", "web-1").tolerate(**tol).on("g2").obj(),
    )  # fmt: skip
    change = plan_taint(s, [s.node("g1")], GPU_TAINT, False, NOW)
    assert flagged(change) == [("toleration-without-gpu-request", ["pod/default/prep", "pod/default/etl"])]
    assert "Fix: request nvidia.com/gpu" in change.warnings[-1]
    assert flagged(plan_taint(s, [s.node("g1")], GPU_TAINT, True, NOW)) == []
    # another taint key is not the GPU taint
    assert flagged(plan_taint(s, [s.node("g1")], Taint("maint", "", "NoSchedule"), False, NOW)) == []


def test_r17_1_a_label_on_a_gpu_node_without_allocatable_gpus() -> None:
    """Label a and b into pool=training. a has GFD's labels (gpu.present, gpu.count=8) but no nvidia.com/gpu
    in capacity: the plugin never registered. b advertises 4 GPUs. c advertises 4 with allocatable 0 (all
    unhealthy). Flagged: a and c. Removing the label flags nothing."""
    s = snap(
        make_node("a").label("nvidia.com/gpu.present", "true").label("nvidia.com/gpu.count", "8").obj(),
        make_node("b").gpus(4).obj(),
        make_node("c").gpus(4).allocatable(nvidia_com__gpu=0).obj(),
    )  # fmt: skip
    nodes = [s.node("a"), s.node("b"), s.node("c")]
    assert flagged(plan_label(s, nodes, "pool", "training", NOW)) == [
        ("labels-without-gpus", ["node/a", "node/c"])
    ]
    assert flagged(plan_label(s, nodes, "pool", None, NOW)) == []


def test_r17_1_on_the_demo_gpu_infer_02() -> None:
    """The demo's gpu-infer-02 carries GPU labels but advertises no GPU (its plugin is down): moving it
    into the inference pool is the pitfall."""
    demo = sources.load_demo()
    change = plan_label(demo, [demo.node("gpu-infer-02")], "accelerator.example.com/pool", "inference", NOW)  # type: ignore[list-item]
    assert flagged(change) == [("labels-without-gpus", ["node/gpu-infer-02"])]


def test_r17_5_drain_leaves_a_multi_gpu_pod_with_scattered_free_gpus() -> None:
    """n1 runs wide (4 GPUs, ReplicaSet); n2 and n3 (4 GPUs each) run s2 and s3 (2 GPUs each). Draining n1:
    wide's replacement needs 4 on one node; n2 and n3 have 2 + 2 = 4 free, n1 is cordoned: the pitfall.
    With n3 empty instead, wide lands on n3: nothing flagged."""
    objs = [
        make_node("n1").gpus(4).obj(), make_node("n2").gpus(4).obj(), make_node("n3").gpus(4).obj(),
        make_pod("wide").gpu(4).owner("ReplicaSet", "wide-1").on("n1").obj(),
        make_pod("s2").gpu(2).owner("Job", "s2").on("n2").obj(),
    ]  # fmt: skip
    s = snap(*objs, make_pod("s3").gpu(2).owner("Job", "s3").on("n3").obj())
    change = plan_drain(s, [s.node("n1")], NOW)
    assert flagged(change) == [("gpus-scattered-over-nodes", ["pod/default/wide"])]
    assert change.details["effect"]["scattered"] == [  # type: ignore[index]
        {
            "pod": "default/wide",
            "resource": "nvidia.com/gpu",
            "requested": 4,
            "free_total": 4,
            "largest_free": 2,
        }
    ]
    roomy = snap(*objs)
    assert flagged(plan_drain(roomy, [roomy.node("n1")], NOW)) == []


def test_r17_5_cordon_takes_the_only_node_a_pending_pod_fits() -> None:
    """n1 has 4 GPUs free; n2 and n3 have 2 free each. The pending wide (4 GPUs) fits only on n1 today;
    cordoning n1 leaves it Pending with 4 free in total, at most 2 on one node: the pitfall."""
    s = snap(
        make_node("n1").gpus(4).obj(), make_node("n2").gpus(4).obj(), make_node("n3").gpus(4).obj(),
        make_pod("s2").gpu(2).on("n2").obj(), make_pod("s3").gpu(2).on("n3").obj(),
        make_pod("wide").gpu(4).owner("Job", "wide").obj(),
    )  # fmt: skip
    change = plan_drain(s, [s.node("n1")], NOW, evict=False)
    assert change.details["effect"]["newly_pending"][0]["pod"] == "default/wide"  # type: ignore[index]
    assert flagged(change) == [("gpus-scattered-over-nodes", ["pod/default/wide"])]


def test_r17_3_time_slicing_names_the_pods_that_will_share_memory() -> None:
    """ts: 2 H200s (GFD's gpu.memory=143771 MiB) running a and b (1 GPU each, ReplicaSets); c (1 GPU) is
    Pending. Time-slicing ×2 advertises 4 replicas: a and b move and come back (the only node), c lands
    too. The pitfall names ts, a, b and c, and each replica sees the whole 143771 MiB."""
    s = snap(
        make_node("ts").gpus(2).label("nvidia.com/gpu.memory", "143771").obj(),
        make_pod("a").gpu(1).owner("ReplicaSet", "a-1").on("ts").obj(),
        make_pod("b").gpu(1).owner("ReplicaSet", "b-1").on("ts").obj(),
        make_pod("c").gpu(1).owner("ReplicaSet", "c-1").obj(),
    )  # fmt: skip
    node = s.node("ts")
    change = plan_time_slicing(node, s.pods, 2)
    planned = with_effect(s, change, time_sliced_after(node, change), NOW)
    assert flagged(planned) == [
        ("replicas-share-one-gpu", ["node/ts", "pod/default/a", "pod/default/b", "pod/default/c"])
    ]
    assert "each sees the GPU's whole 143771 MiB and up to 2 pods allocate from it" in planned.warnings[-1]
    # exclusive again (replicas 1): nobody shares, nothing flagged
    back = plan_time_slicing(node, s.pods, 1)
    assert flagged(with_effect(s, back, time_sliced_after(node, back), NOW)) == []


def test_plan_json_carries_the_pitfall_id() -> None:
    result = CliRunner().invoke(
        cli,
        ["plan", "label", "accelerator.example.com/pool=inference", "gpu-infer-02", "--demo", "-o", "json"],
    )
    assert result.exit_code == 0, result.output
    assert [p["id"] for p in json.loads(result.output)["details"]["pitfalls"]] == ["labels-without-gpus"]


def test_r17_4_kai_shares_and_volcano_vgpu_pods_ask_their_gpu_without_nvidia_com_gpu() -> None:
    """Taint g1 as above. share (a KAI GPU share: annotation gpu-fraction, no GPU resource by design,
    kai-scheduler/KAI-Scheduler docs/gpu-sharing/gpu-sharing.yaml) and vgpu (Volcano's volcano.sh/vgpu-number,
    Project-HAMi/volcano-vgpu-device-plugin README) tolerate it and are given GPUs: not flagged, as diagnose
    and the admission lint do not flag them (kai-scheduler/KAI-Scheduler#522); prep still is."""
    tol = {"key": "nvidia.com/gpu", "operator": "Exists"}
    share = make_pod("share").owner("ReplicaSet", "share-1").tolerate(**tol).on("g1").obj()
    share["metadata"]["annotations"] = {"gpu-fraction": "0.5"}
    share["spec"]["schedulerName"] = "kai-scheduler"
    vgpu = make_pod("vgpu").owner("Job", "vgpu").tolerate(**tol).obj()
    vgpu["spec"]["containers"][0]["resources"] = {"limits": {"volcano.sh/vgpu-number": "1"}}
    vgpu["spec"]["schedulerName"] = "volcano"
    prep = make_pod("prep").owner("ReplicaSet", "prep-1").tolerate(**tol).on("g1").obj()
    s = snap(make_node("g1").gpus(2).obj(), share, vgpu, prep)
    change = plan_taint(s, [s.node("g1")], GPU_TAINT, False, NOW)
    assert flagged(change) == [("toleration-without-gpu-request", ["pod/default/prep"])]
