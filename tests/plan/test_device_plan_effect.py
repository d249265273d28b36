"""``plan time-slicing`` / ``plan mig`` on the embedded demo: the predicted effect, worked out by hand from
the demo's objects, confirmed by applying the runbook to the snapshot independently (the ConfigMap and label
edits its kubectl lines make, the capacity the device plugin then registers, the pods it deletes and the
replacements their controllers create) and scheduling the changed snapshot in kube-scheduler's queue order
(issue 10; R6.2, R6.3, R15).

Upstream behaviour pinned: the NVIDIA device plugin advertises GPUs × replicas under
``sharing.timeSlicing`` and marks every replica of an unhealthy GPU unhealthy; GFD labels
``nvidia.com/gpu.replicas``, ``nvidia.com/gpu.sharing-strategy`` and appends ``-SHARED`` to
``nvidia.com/gpu.product`` when not renamed; under ``migStrategy: mixed`` each MIG device is one
``nvidia.com/mig-<profile>``; a ReplicaSet recreates a deleted pod, nothing recreates a bare pod.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.plan.confirm import changed, settle

from kubegpu import sources
from kubegpu.cli.main import cli
from kubegpu.devices import parse_plugin_config
from kubegpu.devices.mig_parted import parse_mig_parted_config
from kubegpu.devices.time_slicing import time_sliced_node
from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.model.objects import Node, Pod
from kubegpu.model.snapshot import ClusterSnapshot, build_snapshot
from kubegpu.plan import NodeChange, plan_mig, plan_time_slicing
from kubegpu.plan.device_effect import with_effect
from kubegpu.plan.mig import mig_partitioned_node
from kubegpu.plan.time_slicing import time_sliced_after
from kubegpu.scheduler.assembly import SchedulerSpec
from kubegpu.testing.builders import make_node, make_pod

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
CREATED = "2026-12-02T12:00:00Z"  # when the controllers create the replacements
VLLM = ("ml-infer/vllm-6b7c9d-4kq2p", "ml-infer/vllm-6b7c9d-8xz1m", "ml-infer/vllm-6b7c9d-tt5w9")
# an H200 re-partitioned so that llm-70b-int4's 4g.71gb exists: 4g (slices 0-3) + 2g (4-5) + 1g (6)
MIG_CONFIG = """
version: v1
mig-configs:
  custom-4g-2g-1g:
    - devices: all
      mig-enabled: true
      mig-devices: {"4g.71gb": 1, "2g.35gb": 1, "1g.18gb": 1}
"""


def _runbook(change: NodeChange) -> list[str]:
    return [c for s in change.steps for c in s.commands if not c.endswith("--dry-run=server")]


def _deleted(change: NodeChange) -> list[str]:
    """The pods the runbook's ``kubectl -n NS delete pod NAME`` lines delete."""
    out = []
    for c in _runbook(change):
        words = c.split()
        if words[3:5] == ["delete", "pod"] and not words[5].startswith("gpu-test-"):
            out.append(f"{words[2]}/{words[5]}")
    return out


def _label_set(change: NodeChange, node: str, key: str) -> str:
    """The value the runbook's ``kubectl label node NODE KEY=VALUE`` line sets."""
    prefix = f"label node {node} {key}="
    line = next(c for c in _runbook(change) if prefix in c)
    return line.split(prefix, 1)[1].split()[0]


def _applied(snap: ClusterSnapshot, node: Node, deleted: list[str]) -> ClusterSnapshot:
    """The snapshot once ``node`` is replaced and ``deleted`` are gone; a controller (not a bare pod, not a
    DaemonSet) creates a new Pending pod under a new name, as a ReplicaSet does."""
    pods: list[Pod] = []
    for p in snap.pods:
        if p.key not in deleted:
            pods.append(p)
        elif p.owner is not None and p.owner.kind != "DaemonSet":
            pods.append(replace(p, name=p.name + "-new", node_name="", phase="Pending", start_time="",
                                creation_timestamp=CREATED))  # fmt: skip
    return replace(snap, nodes=[node if n.name == node.name else n for n in snap.nodes], pods=pods, errors=[])


def test_demo_time_slicing_prediction_is_confirmed_by_applying_it() -> None:
    """gpu-infer-01 (4 × L40S, one unhealthy: allocatable 3) time-sliced ×2. By hand: the plugin advertises
    4 × 2 = 8 replicas and both replicas of the bad GPU are unhealthy, so allocatable 3 → 6. Its three vllm
    pods (1 GPU each, ReplicaSet vllm-6b7c9d) hold nvidia.com/gpu and move; their replacements select pool
    inference, whose only GPU node is gpu-infer-01 (gpu-infer-02 advertises none), so they return there; the
    pending vllm-6b7c9d-q9r4s (1 GPU, pool inference) finds 6 − 3 = 3 free and is no longer Pending.
    GPU-hours at risk: 1 GPU each since 2026-11-20T09:00:00/09:00:30/09:01:00, no checkpoint, until 12-02
    12:00 → 291, 290.99, 290.98 h. Cluster allocatable nvidia.com/gpu: 59 → 62."""
    demo = sources.load_demo()
    node = demo.node("gpu-infer-01")
    assert node is not None
    change = plan_time_slicing(node, demo.pods, 2)
    planned = with_effect(demo, change, time_sliced_after(node, change), NOW)
    effect: Any = planned.details["effect"]
    assert effect["newly_schedulable"] == [{"pod": "ml-infer/vllm-6b7c9d-q9r4s", "node": "gpu-infer-01"}]
    assert effect["newly_pending"] == []
    assert [(r["pod"], r["lands"], r["gpu_hours_at_risk"]) for r in effect["evicted"]] == [
        (VLLM[0], "gpu-infer-01", 291.0), (VLLM[1], "gpu-infer-01", 290.99), (VLLM[2], "gpu-infer-01", 290.98)
    ]  # fmt: skip
    assert effect["nodes"] == {
        "gpu-infer-01": {"nvidia.com/gpu": {"capacity": {"before": 4, "after": 8}, "allocatable": {"before": 3, "after": 6}}}
    }  # fmt: skip
    assert effect["capacity"] == {"nvidia.com/gpu": {"before": 59, "after": 62}}
    assert effect["quota_rejections"] == [] and effect["kubelet_rejections"] == []
    # the runbook deletes the pods, and a DELETE is not an eviction: no PDB refuses it, so the warning
    # must not promise that the Eviction API will hold the rest back
    (pdb_warning,) = [w for w in planned.warnings if w.startswith("PodDisruptionBudget ml-infer/vllm")]
    assert pdb_warning.startswith("PodDisruptionBudget ml-infer/vllm allows 1 disruption(s)")
    assert "`kubectl delete pod` does not consult PDBs" in pdb_warning and "Eviction API" not in pdb_warning

    # apply it the way the runbook does: the ConfigMap entry its patch adds, the node label, the pods it
    # deletes; the device plugin then registers 8 replicas (6 healthy) and GFD relabels the node
    patch = next(c for c in _runbook(change) if " patch configmap " in c)
    configmap = json.loads(patch.split(" -p '", 1)[1].rsplit("'", 1)[0])["data"]
    config_name = _label_set(change, "gpu-infer-01", "nvidia.com/device-plugin.config")
    assert config_name in configmap
    labels = {**node.labels, "nvidia.com/device-plugin.config": config_name, "nvidia.com/gpu.replicas": "2",
              "nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.product": "NVIDIA-L40S-SHARED"}  # fmt: skip
    edited = replace(
        node,
        labels=labels,
        capacity={**node.capacity, "nvidia.com/gpu": 8000},
        allocatable={**node.allocatable, "nvidia.com/gpu": 6000},
    )
    deleted = _deleted(change)
    assert deleted == list(VLLM)
    applied = _applied(demo, edited, deleted)
    configs = {k: parse_plugin_config(v, source="device-plugin-config") for k, v in configmap.items()}
    before, after = settle(demo), settle(applied, configs)
    assert changed(before, after) == {r["pod"]: r["node"] for r in effect["newly_schedulable"]}
    assert [after[k + "-new"] for k in VLLM] == [r["lands"] for r in effect["evicted"]]
    # the device model built from the ConfigMap gives each replacement one replica: kubelet admits it
    engine = Engine(applied, SchedulerSpec(plugin_configs=configs))
    assert explain_pod(engine, applied.pod(VLLM[0] + "-new")).kubelet is None  # type: ignore[arg-type]
    # the node the plan simulates is the node the runbook leaves (the ConfigMap path instead of the annotation)
    simulated = time_sliced_after(node, change)
    assert (simulated.capacity, simulated.allocatable) == (edited.capacity, edited.allocatable)
    assert {k: v for k, v in simulated.labels.items() if k != "nvidia.com/device-plugin.config"} == {
        k: v for k, v in labels.items() if k != "nvidia.com/device-plugin.config"
    }


def test_demo_mig_prediction_is_confirmed_by_applying_it(tmp_path: Path) -> None:
    """gpu-mig-01 (one H200, mixed: 3 × 1g.18gb + 1 × 3g.71gb) re-partitioned to 4g.71gb + 2g.35gb +
    1g.18gb. By hand: capacity 1g 3 → 1, 2g 0 → 1, 3g 1 → 0, 4g 0 → 1; the pending llm-70b-int4 (one
    nvidia.com/mig-4g.71gb, pool inference-mig: only gpu-mig-01) becomes schedulable there; embed-small
    (a bare pod holding a 1g.18gb) must move and nothing recreates it; 1 device since 2026-12-01T06:00 → 30
    GPU-hours at risk."""
    demo = sources.load_demo()
    node = demo.node("gpu-mig-01")
    assert node is not None
    change = plan_mig(node, demo.pods, parse_mig_parted_config(MIG_CONFIG, source="mig.yaml"))
    planned = with_effect(demo, change, mig_partitioned_node(node, change), NOW)
    effect: Any = planned.details["effect"]
    assert effect["newly_schedulable"] == [{"pod": "ml-infer/llm-70b-int4", "node": "gpu-mig-01"}]
    assert effect["newly_pending"] == []
    assert effect["evicted"] == [{
        "pod": "ml-infer/embed-small", "node": "gpu-mig-01", "controller": "", "gpu_hours_at_risk": 30.0,
        "lands": None, "message": "a bare pod: nothing recreates it",
    }]  # fmt: skip
    one = {"before": 0, "after": 1}
    assert effect["nodes"]["gpu-mig-01"] == {
        "nvidia.com/mig-1g.18gb": {"capacity": {"before": 3, "after": 1}, "allocatable": {"before": 3, "after": 1}},
        "nvidia.com/mig-2g.35gb": {"capacity": one, "allocatable": one},
        "nvidia.com/mig-3g.71gb": {"capacity": {"before": 1, "after": 0}, "allocatable": {"before": 1, "after": 0}},
        "nvidia.com/mig-4g.71gb": {"capacity": one, "allocatable": one},
    }  # fmt: skip
    assert effect["devices_kept"] == []

    # apply it as the runbook does: the pod it deletes, the label it sets; the MIG manager then reports
    # success and the device plugin registers one device per instance
    config_name = _label_set(change, "gpu-mig-01", "nvidia.com/mig.config")
    mig = {"nvidia.com/mig-1g.18gb": 1000, "nvidia.com/mig-2g.35gb": 1000, "nvidia.com/mig-4g.71gb": 1000}
    rest = {r: v for r, v in node.allocatable.items() if not r.startswith("nvidia.com/")}
    edited = replace(
        node,
        labels={
            **node.labels,
            "nvidia.com/mig.config": config_name,
            "nvidia.com/mig.config.state": "success",
        },
        capacity={**{r: v for r, v in node.capacity.items() if not r.startswith("nvidia.com/")}, **mig},
        allocatable={**rest, **mig},
    )
    deleted = _deleted(change)
    assert deleted == ["ml-infer/embed-small"]
    applied = _applied(demo, edited, deleted)
    assert applied.pod("ml-infer/embed-small-new") is None  # a bare pod: nothing recreates it
    assert changed(settle(demo), settle(applied)) == {
        r["pod"]: r["node"] for r in effect["newly_schedulable"]
    }
    simulated = mig_partitioned_node(node, change)
    assert (simulated.capacity, simulated.allocatable) == (edited.capacity, edited.allocatable)

    # the CLI prints the same effect, and the runbook keeps its conventions
    layouts = tmp_path / "mig.yaml"
    layouts.write_text(MIG_CONFIG)
    result = CliRunner().invoke(cli, ["plan", "mig", "gpu-mig-01", "--config", str(layouts), "--demo",
                                      "--now", "2026-12-02T12:00:00Z", "-o", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["details"]["effect"] == effect
    commands = [c for s in data["steps"] + data["rollback"] for c in s["commands"] if c.startswith("kubectl")]
    assert all(c.startswith("kubectl -n ") for c in commands)
    for i, c in enumerate(commands):  # every mutating line right after its server-side dry run
        if c.split()[3] in ("cordon", "uncordon", "label", "delete", "run") and not c.endswith(
            "--dry-run=server"
        ):
            assert commands[i - 1] == c + " --dry-run=server", c


def test_time_slicing_names_kubelet_refusals_and_quota_rejections() -> None:
    """4 whole GPUs time-sliced ×2 with failRequestsGreaterThanOne. The pending 2-GPU pod fits today (3
    free) and kubelet admits it; afterwards kube-scheduler (counting replicas) still binds it there and
    kubelet refuses it with the plugin's own error. The moved pod's namespace is over its quota (hard 1 <
    used 2), so the API server refuses its replacement even with its own GPU given back (2 − 1 + 1 > 1):
    it never lands."""
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "team"},
             "spec": {"hard": {"requests.nvidia.com/gpu": "1"}}}  # fmt: skip
    snap = build_snapshot([("t", o) for o in [
        make_node("n").gpus(4).obj(),
        make_pod("whole").ns("team").gpu(1).owner("Job", "train").on("n", started="2026-12-02T10:00:00Z").obj(),
        make_pod("other").ns("team").gpu(1).owner("Job", "eval").on("elsewhere").obj(),
        make_pod("wide").ns("ml").gpu(2).obj(),
        quota,
    ]])  # fmt: skip
    node = snap.node("n")
    assert node is not None
    change = plan_time_slicing(node, snap.pods, 2)
    effect: Any = with_effect(snap, change, time_sliced_after(node, change), NOW).details["effect"]
    [evicted] = effect["evicted"]
    assert (evicted["pod"], evicted["lands"], evicted["gpu_hours_at_risk"]) == ("team/whole", None, 2.0)
    [rejected] = effect["quota_rejections"]
    assert (rejected["pod"], rejected["kind"], rejected["starts"]) == ("team/whole", "replacement", True)
    assert rejected["message"].startswith('pods "whole" is forbidden: exceeded quota: q')
    assert evicted["message"] == rejected["message"]
    [refusal] = effect["kubelet_rejections"]
    assert (refusal["pod"], refusal["reason"], refusal["starts"]) == (
        "ml/wide",
        "UnexpectedAdmissionError",
        True,
    )
    # no plugin image in the snapshot: the v0.20.0 plugin's text (internal/rm/rm.go ValidateRequest)
    assert (
        'invalid allocation request for "nvidia.com/gpu": invalid request: maximum request size for shared '
        "resources is 1; found 2" in (refusal["message"])
    )


def test_kubelet_refuses_a_replacement_once_as_a_replacement() -> None:
    """4 whole GPUs time-sliced ×2 with failRequestsGreaterThanOne. The running 2-GPU pod moves (its
    ReplicaSet recreates it); kube-scheduler, counting 8 replicas, binds the replacement back to n (2 of
    8) and kubelet fails it: the plugin refuses more than 1 shared replica per container, which kubelet
    reports as UnexpectedAdmissionError. The pending 2-GPU pod fits today (4 − 2 = 2 whole GPUs free, kubelet
    admits) and afterwards (6 replicas by count) and is refused the same way. Each pod appears once: the
    replacement as ``replacement``, not a second time as a pending pod. Neither will hold a replica, so
    no R17.3 memory-sharing pitfall."""
    snap = build_snapshot([("t", o) for o in [
        make_node("n").gpus(4).obj(),
        make_pod("two").ns("team").gpu(2).owner("ReplicaSet", "r").on("n", started="2026-12-02T10:00:00Z").obj(),
        make_pod("wide").ns("ml").gpu(2).obj(),
    ]])  # fmt: skip
    [node] = snap.nodes
    change = plan_time_slicing(node, snap.pods, 2)
    planned = with_effect(snap, change, time_sliced_after(node, change), NOW)
    effect: Any = planned.details["effect"]
    # 2 GPUs × 2 h since 10:00, no checkpoint annotation
    assert effect["evicted"] == [{"pod": "team/two", "node": "n", "controller": "ReplicaSet/r",
                                  "gpu_hours_at_risk": 4.0, "lands": "n", "message": ""}]  # fmt: skip
    assert effect["newly_pending"] == [] and effect["newly_schedulable"] == []
    # kubelet's "Allocate failed due to %v, which is unexpected" around the plugin's gRPC error
    message = (
        'Allocate failed due to rpc error: code = Unknown desc = invalid allocation request for "nvidia.com/gpu": '
        "invalid request: maximum request size for shared resources is 1; found 2, which is unexpected"
    )
    assert [(r["pod"], r["node"], r["kind"], r["reason"], r["message"], r["starts"])
            for r in effect["kubelet_rejections"]] == [
        ("team/two", "n", "replacement", "UnexpectedAdmissionError", message, True),
        ("ml/wide", "n", "pending", "UnexpectedAdmissionError", message, True),
    ]  # fmt: skip
    assert "replicas-share-one-gpu" not in [p["id"] for p in planned.details.get("pitfalls", [])]


def test_time_slicing_leaves_mig_pods_their_devices() -> None:
    """A mixed-strategy H200 node (MIG devices only) time-sliced: nothing holds nvidia.com/gpu, so nothing
    moves; the MIG pod keeps its device (the plugin lists the same MIG device IDs again)."""
    b = make_node("h200-a").gpus(0, product="NVIDIA-H200").label("nvidia.com/gpu.count", "2")
    b.capacity(**{"nvidia.com/mig-1g.18gb": 14}).label("nvidia.com/mig.strategy", "mixed")
    pod = make_pod("infer").ns("ml").gpu(1, "nvidia.com/mig-1g.18gb").on("h200-a").owner("ReplicaSet", "r")
    snap = build_snapshot([("t", b.obj()), ("t", pod.obj())])
    node = snap.node("h200-a")
    assert node is not None
    change = plan_time_slicing(node, snap.pods, 2)
    effect: Any = with_effect(snap, change, time_sliced_after(node, change), NOW).details["effect"]
    assert effect["evicted"] == []
    assert effect["devices_kept"] == [{"pod": "ml/infer", "resources": {"nvidia.com/mig-1g.18gb": 1}}]


@pytest.mark.parametrize(("args", "schedulable"), [
    # gpu-infer-01: its 3 healthy L40S are held by the 3 vllm pods, so vllm-6b7c9d-q9r4s (1 GPU, pool
    # inference, whose only GPU node this is) waits; ×2 gives 6 healthy replicas: it fits (the demo test
    # above works the numbers out)
    (["plan", "time-slicing", "gpu-infer-01", "--replicas", "2"],
     [{"pod": "ml-infer/vllm-6b7c9d-q9r4s", "node": "gpu-infer-01"}]),
    # gpu-ts-01 back to exclusive: 16 → 4 GPUs gains no pending pod a node; batch-embed (2 GPUs, pool
    # inference-shared) fits on it before (11 replicas free) and after (4 GPUs, the chat pods moved)
    (["plan", "time-slicing", "gpu-ts-01", "--replicas", "1"], []),
])  # fmt: skip
def test_time_slicing_cli_prints_the_effect_with_dry_run_first(
    args: list[str], schedulable: list[dict[str, str]]
) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, [*args, "--demo", "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["details"]["effect"]["newly_schedulable"] == schedulable
    commands = [c for s in data["steps"] + data["rollback"] for c in s["commands"] if c.startswith("kubectl")]
    assert all(c.startswith("kubectl -n ") for c in commands)
    mutating = ("cordon", "uncordon", "label", "delete", "run", "patch", "apply")
    changes = [c for c in commands if c.split()[3] in mutating and not c.endswith("--dry-run=server")]
    assert changes, "the runbook changes nothing"
    for i, c in enumerate(commands):  # every mutating line right after its server-side dry run
        if c in changes:
            assert commands[i - 1] == c + " --dry-run=server", c
    table = runner.invoke(cli, [*args, "--demo"])
    assert table.exit_code == 0, table.output
    assert "Effect (the scheduling core and admission on the changed snapshot)" in table.output
    printed = [line.strip() for line in table.output.splitlines() if "becomes schedulable" in line]
    assert printed == [f"becomes schedulable: {r['pod']} → {r['node']}" for r in schedulable]


def test_exclusive_again_on_the_demo_time_sliced_node() -> None:
    """gpu-ts-01 (4 × L4 ×4 replicas, 5 chat pods of 1 replica) back to exclusive: 16 → 4 GPUs. The five chat
    replacements (ReplicaSet, pool inference-shared: only gpu-ts-01) take the 4 GPUs in order of creation
    (05:00 … 05:04), so chat-7c5d9-4 finds none."""
    demo = sources.load_demo()
    node = demo.node("gpu-ts-01")
    assert node is not None
    change = plan_time_slicing(node, demo.pods, 1)
    after = time_sliced_after(node, change)
    assert (after.capacity["nvidia.com/gpu"], after.labels["nvidia.com/gpu.product"]) == (4000, "NVIDIA-L4")
    effect: Any = with_effect(demo, change, after, NOW).details["effect"]
    lands = [(r["pod"], r["lands"]) for r in effect["evicted"]]
    assert lands == [(f"ml-infer/chat-7c5d9-{i}", "gpu-ts-01") for i in range(4)] + [
        ("ml-infer/chat-7c5d9-4", None)
    ]


def test_a_time_sliced_node_is_resliced_from_its_physical_gpus() -> None:
    """``kubegpu simulate --time-slicing`` and the plan share ``time_sliced_node``: a node already sliced ×4
    (16 replicas of 4 GPUs) sliced ×2 advertises 8, not 32 — from GFD's gpu.count, or without it from
    capacity ÷ replicas; renamed, the replicas move to nvidia.com/gpu.shared and GFD leaves the product
    without -SHARED."""
    node = make_node("t").gpus(16, product="NVIDIA-L4").label("nvidia.com/gpu.replicas", "4")
    counted = node.label("nvidia.com/gpu.count", "4").parsed()
    uncounted = replace(
        counted, labels={k: v for k, v in counted.labels.items() if k != "nvidia.com/gpu.count"}
    )
    assert time_sliced_node(counted, 2).capacity["nvidia.com/gpu"] == 8000
    assert time_sliced_node(uncounted, 2).capacity["nvidia.com/gpu"] == 8000
    renamed = time_sliced_node(counted, 2, rename=True)
    assert "nvidia.com/gpu" not in renamed.capacity and renamed.capacity["nvidia.com/gpu.shared"] == 8000
    assert renamed.labels["nvidia.com/gpu.product"] == "NVIDIA-L4"
    assert time_sliced_node(counted, 2).labels["nvidia.com/gpu.product"] == "NVIDIA-L4-SHARED"


def test_the_node_after_a_renamed_time_slicing_plan() -> None:
    """``time_sliced_after`` reads replicas, the renamed resource and the config from the plan itself: 2 GPUs
    ×3 renamed advertise 6 nvidia.com/gpu.shared (the plugin's renameByDefault), none as nvidia.com/gpu,
    GFD keeps the plain product, and the node carries the plan's plugin config."""
    node = make_node("t").gpus(2, product="NVIDIA-L4").label("nvidia.com/gpu.count", "2").parsed()
    change = plan_time_slicing(node, [], 3, rename=True)
    after = time_sliced_after(node, change)
    assert {r: v for r, v in after.capacity.items() if r.startswith("nvidia.com/")} == {
        "nvidia.com/gpu.shared": 6000
    }
    assert (after.labels["nvidia.com/gpu.replicas"], after.labels["nvidia.com/gpu.product"]) == (
        "3",
        "NVIDIA-L4",
    )
    assert after.annotations["kubegpu.io/device-plugin-config"] == change.details["plugin_config"]
