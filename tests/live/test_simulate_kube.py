"""``kubegpu simulate --kube``: an openb trace replayed onto a live cluster's free capacity, the cluster
read (list only) from the emulated API server over HTTP.

The trace below is written here in openb's 11-column layout; the expected figures follow by hand from
the replay's rules (``kubegpu.sim.replay``: kube-scheduler's queue, waiting pods moved back on every
departure, time-weighted figures over the arrival window).
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kubegpu.cli.main import cli
from kubegpu.model.snapshot import build_snapshot
from kubegpu.sim.onto_cluster import free_capacity_nodes
from tests.live.apiserver import RunningApiServer
from tests.live.conftest import gpu_node, gpu_pod

# a: 4 GPUs 0-100 s; b: 4 GPUs from 10 s for 190 s; c: half a GPU 20-50 s
TRACE = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
a,4000,1024,4,1000,V100M16,LS,Running,0,100,0
b,4000,1024,4,1000,,LS,Running,10,200,10
c,1000,512,1,500,,LS,Running,20,50,20
"""


def cluster(api: RunningApiServer) -> None:
    """gpu-1: 8 GPUs, 2 held by a running pod (6 free); gpu-2: cordoned."""
    api.emulator.create("nodes", gpu_node("gpu-1", labels={"nvidia.com/gpu.product": "NVIDIA-H200"}))
    cordoned = gpu_node("gpu-2")
    cordoned["spec"]["unschedulable"] = True
    api.emulator.create("nodes", cordoned)
    api.emulator.create("pods", gpu_pod("running", 2, node="gpu-1"))


def test_free_capacity_is_allocatable_minus_bound_requests() -> None:
    node = gpu_node("gpu-1", labels={"nvidia.com/gpu.product": "NVIDIA-H200"})
    snap = build_snapshot([("t", {"kind": "Node", "apiVersion": "v1", **node}),
                           ("t", {"kind": "Pod", "apiVersion": "v1", **gpu_pod("running", 2, node="gpu-1")})])  # fmt: skip
    [free] = free_capacity_nodes(snap)
    # 63500m - 1 cpu; 500Gi - 1Gi; 8 - 2 GPUs; 110 - 1 pods (internal units are milli)
    assert free.allocatable == {
        "cpu": 62_500,
        "memory": 499 * 2**30 * 1000,
        "pods": 109_000,
        "nvidia.com/gpu": 6_000,
        "kubegpu.io/gpu-milli": 6_000_000,
    }
    assert free.labels["nvidia.com/gpu.product"] == "NVIDIA-H200" and free.taints == ()


def test_simulate_replays_a_trace_onto_the_live_free_capacity(
    api: RunningApiServer, kubeconfig: Path, tmp_path: Path
) -> None:
    cluster(api)
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "openb_pod_list_tiny.csv").write_text(TRACE)
    result = CliRunner().invoke(
        cli,
        ["simulate", "--kube", "--kubeconfig", str(kubeconfig), "--data", str(tmp_path), "--trace", "tiny",
         "--policy", "BestFit,FGD"],
        terminal_width=200,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "openb tiny on the free capacity of 1 live node(s), replay (seed 42)" in result.output
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:4]]
        for line in result.output.splitlines()
        if line.count("│") == 4
    }
    # a at 0 (its V100 constraint dropped: the live GPUs are H200s); b waits from 10 to 100 when a leaves;
    # c shares a GPU at 20. Waits 0, 90, 0: p50 0, p95 (linear) 0 + 0.9 * 90 = 81. Time-weighted figures
    # cover the arrival window (first to last arrival, 0-20 s; kubegpu.sim.replay): 4000 of 6000 milli-GPU
    # allocated throughout = 66.67 %; b pending for 10 of those 20 s = 0.5 pods on average, 1 at most.
    expected = {
        "pods": "3", "placed": "3", "given up (deleted while pending)": "0", "placed after waiting": "1",
        "pending time p50 (s)": "0", "pending time p95 (s)": "81",
        "pending pods, time-weighted mean / max": "0.5 / 1", "GPU allocated, time-weighted (%)": "66.67",
    }  # fmt: skip
    for label, value in expected.items():
        assert rows[label] == [value, value], (label, rows)
