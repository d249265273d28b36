"""``plan kubelet-policy`` (issue 10, R10.2, R15): TopologyAffinityError predicted by the core's Topology
Manager model, and the kubelet runbook (drain, ``/var/lib/kubelet/cpu_manager_state`` removed while kubelet
is stopped when the CPU Manager policy changes, restart, verify, rollback).

The node is the DGX-1 fixture (tests/fixtures/nodes/dgx1-8xv100.json: GPUs 0-3 on NUMA 0, 4-7 on NUMA 1).
Upstream behaviour pinned down: under ``single-numa-node`` kubelet admits a container only when one NUMA
node holds all its devices, else the pod fails with reason ``TopologyAffinityError``, message "Resources
cannot be allocated with Topology locality"; kube-scheduler counts devices and does not align them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubegpu.devices.node_devices import INVENTORY_ANNOTATION
from kubegpu.model.snapshot import build_snapshot
from kubegpu.plan.kubelet_policy import guaranteed_whole_cpus, plan_kubelet_policy
from kubegpu.scheduler.device_ledger import ALLOCATION_ANNOTATION
from kubegpu.testing.builders import make_node, make_pod

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
DGX1 = json.loads((Path(__file__).parents[1] / "fixtures" / "nodes" / "dgx1-8xv100.json").read_text())
UUIDS = [d["uuid"] for d in DGX1["devices"]]
MESSAGE = "Resources cannot be allocated with Topology locality"


def dgx() -> dict[str, Any]:
    raw = make_node("dgx").gpus(8).label("pool", "train").obj()
    raw["metadata"]["annotations"] = {INVENTORY_ANNOTATION: json.dumps(DGX1)}
    return raw


def holder(name: str, gpus: list[int], created: str) -> dict[str, Any]:
    raw = make_pod(name).gpu(len(gpus)).owner("Job", name).created(created).on("dgx").obj()
    raw["metadata"]["annotations"] = {
        ALLOCATION_ANNOTATION: json.dumps({"main": {"nvidia.com/gpu": [UUIDS[i] for i in gpus]}})
    }
    return raw


def snap(*objs: dict[str, Any]) -> Any:
    s = build_snapshot([("t", o) for o in objs])
    assert not s.errors, s.errors
    return s


def test_readmitted_pods_that_single_numa_node_refuses() -> None:
    """3 + 3 + 2 GPUs fill the node. Re-admitted oldest first under single-numa-node: a (3) takes three of
    NUMA 0, b (3) three of NUMA 1, and c (2) finds one free GPU on each NUMA node: refused. Under none
    every pod is admitted, so only c is a change."""
    s = snap(dgx(), holder("a", [0, 1, 4], "2026-12-01T00:00:00Z"), holder("b", [2, 5, 6], "2026-12-01T01:00:00Z"),
             holder("c", [3, 7], "2026-12-01T02:00:00Z"))  # fmt: skip
    change = plan_kubelet_policy(s, [s.node("dgx")], NOW, topology_manager="single-numa-node")
    [row] = change.details["effect"]["kubelet_rejections"]
    assert (row["pod"], row["reason"], row["message"]) == ("default/c", "TopologyAffinityError", MESSAGE)
    assert row["evidence"].startswith("nvidia.com/gpu: NUMA 0 has 1, NUMA 1 has 1 free, 2 needed")
    assert any(
        w.startswith("kubelet would fail default/c at admission with TopologyAffinityError")
        for w in change.warnings
    )
    # best-effort admits whatever it cannot align
    lenient = plan_kubelet_policy(s, [s.node("dgx")], NOW, topology_manager="best-effort")
    assert [r for r in lenient.details["effect"]["kubelet_rejections"] if r["reason"]] == []


def test_a_pending_pod_kube_scheduler_would_bind_then_kubelet_would_fail() -> None:
    """x holds GPUs 0-2 (NUMA 0), y 4-6 (NUMA 1): 2 free, one per NUMA node. z asks for 2: kube-scheduler
    counts 2 free and binds it; kubelet under single-numa-node refuses (under none it admits)."""
    s = snap(dgx(), holder("x", [0, 1, 2], "2026-12-01T00:00:00Z"), holder("y", [4, 5, 6], "2026-12-01T01:00:00Z"),
             make_pod("z").gpu(2).owner("Job", "z").obj())  # fmt: skip
    change = plan_kubelet_policy(s, [s.node("dgx")], NOW, topology_manager="single-numa-node")
    pending = [r for r in change.details["effect"]["kubelet_rejections"] if r["kind"] == "pending"]
    assert pending == [{
        "pod": "default/z", "node": "dgx", "kind": "pending", "before": [], "after": None,
        "reason": "TopologyAffinityError", "message": MESSAGE,
        "evidence": "nvidia.com/gpu: NUMA 0 has 1, NUMA 1 has 1 free, 2 needed — the single-numa-node policy admits "
                    "no wider NUMA affinity",
        "starts": True,
    }]  # fmt: skip


def test_cpu_manager_runbook_stops_kubelet_removes_the_state_file_and_rolls_back() -> None:
    s = snap(dgx(), make_node("other").gpus(8).label("pool", "train").obj())
    change = plan_kubelet_policy(s, [s.node("dgx"), s.node("other")], NOW, cpu_manager="static",
                                 topology_manager="single-numa-node")  # fmt: skip
    assert change.node == "dgx"  # no GPU pods on either: the name decides
    commands = [c for st in change.steps for c in st.commands]
    i = commands.index("on dgx: sudo systemctl stop kubelet")
    assert commands[i - 2 : i + 4] == [
        "kubectl -n default drain dgx --ignore-daemonsets --delete-emptydir-data=false --timeout=15m --dry-run=server",
        "kubectl -n default drain dgx --ignore-daemonsets --delete-emptydir-data=false --timeout=15m",
        "on dgx: sudo systemctl stop kubelet",
        "on dgx: sudo rm -f /var/lib/kubelet/cpu_manager_state",
        "on dgx: sudoedit /var/lib/kubelet/config.yaml",
        "on dgx: sudo systemctl start kubelet",
    ]
    assert (
        "kubectl -n default get --raw /api/v1/nodes/dgx/proxy/configz > dgx-kubelet-configz-before.json"
        in commands
    )
    assert "on dgx: sudo cp /var/lib/kubelet/config.yaml /var/lib/kubelet/config.yaml.before" in commands
    assert ("kubectl -n default annotate node dgx kubegpu.io/topology-manager-policy=single-numa-node --overwrite "
            "--dry-run=server") in commands  # fmt: skip
    edit = next(st for st in change.steps if st.title.startswith("dgx: stop kubelet"))
    assert "cpuManagerPolicy: static, topologyManagerPolicy: single-numa-node" in edit.note
    assert "reservedSystemCPUs" in edit.note
    back = [c for st in change.rollback for c in st.commands]
    assert "on dgx: sudo cp /var/lib/kubelet/config.yaml.before /var/lib/kubelet/config.yaml" in back
    assert "kubectl -n default annotate node dgx kubegpu.io/topology-manager-policy=none --overwrite" in back
    for c in commands + back:
        assert c.startswith(("kubectl -n ", "on ")), c


def test_topology_only_change_keeps_the_cpu_state_file() -> None:
    s = snap(dgx())
    change = plan_kubelet_policy(s, [s.node("dgx")], NOW, topology_manager="restricted")
    commands = [c for st in change.steps for c in st.commands]
    assert not any("cpu_manager_state" in c for c in commands)
    assert "restricted without the static CPU Manager aligns devices only, not CPUs" in change.warnings


def test_guaranteed_whole_cpu_pods_are_named_for_static() -> None:
    whole = make_pod("w").requests(cpu="4", memory="8Gi").limits(cpu="4", memory="8Gi").gpu(1).on("dgx").obj()
    part = make_pod("p").requests(cpu="500m", memory="1Gi").limits(cpu="500m", memory="1Gi").on("dgx").obj()
    burst = make_pod("b").requests(cpu="2", memory="1Gi").on("dgx").obj()
    s = snap(dgx(), whole, part, burst)
    assert [guaranteed_whole_cpus(s.pod(f"default/{n}")) for n in "wpb"] == [True, False, False]
    change = plan_kubelet_policy(s, [s.node("dgx")], NOW, cpu_manager="static")
    assert change.details["scope"]["exclusive_cpu_pods"] == ["default/w"]


def test_numa_test_pod_is_guaranteed_and_valid() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    s = snap(dgx())
    change = plan_kubelet_policy(s, [s.node("dgx")], NOW, topology_manager="single-numa-node")
    step = next(st for st in change.steps if st.title.startswith("dgx: run the test pods"))
    assert (
        step.title
        == "dgx: run the test pods (single-gpu, multi-gpu, numa); save them as verify-dgx.yaml first"
    )

    docs = list(yaml.safe_load_all(step.note.split("\n", 1)[1]))
    numa = next(d for d in docs if d["metadata"]["name"] == "verify-dgx-numa")
    res = numa["spec"]["containers"][0]["resources"]
    assert res["requests"] == res["limits"]  # Guaranteed QoS, whole CPUs: exclusive under static
    for d in docs:
        kubernetes_validate.validate(d, "1.34.0", strict=True)


def test_placement_moves_to_one_numa_node_under_single_numa_node() -> None:
    """2 + 2 + 4 GPUs, re-admitted oldest first. single-numa-node: p0 (2) → NUMA 0 (narrowest preferred
    affinity, lowest node first); p1 (2) → NUMA 0 still has two free → NUMA 0; p2 (4) → only NUMA 1 holds
    four → NUMA 1. Under none the device plugin's NVLink preference puts p1 on NUMA 1 and spreads p2 over
    both, so p1 and p2 change NUMA nodes; p0 does not."""
    pods = [make_pod(f"p{i}").gpu(n).owner("Job", f"p{i}").created(f"2026-12-01T0{i}:00:00Z").on("dgx").obj()
            for i, n in enumerate((2, 2, 4))]  # fmt: skip
    s = snap(dgx(), *pods)
    change = plan_kubelet_policy(s, [s.node("dgx")], NOW, topology_manager="single-numa-node")
    rows = {r["pod"]: r["message"] for r in change.details["effect"]["kubelet_rejections"]}
    assert rows == {
        "default/p1": "admitted on NUMA [0] instead of [1]",
        "default/p2": "admitted on NUMA [1] instead of [0, 1]",
    }
