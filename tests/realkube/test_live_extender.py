"""``kubegpu extender`` called by the real kube-scheduler through its KubeSchedulerConfiguration.

The configuration is deploy/scheduler/extender-config.yaml's (filter, prioritize, preempt and bind verbs,
``nodeCacheCapable``, ``managedResources: nvidia.com/gpu``, ``ignorable: false``) pointed at 127.0.0.1.
The shared kube-scheduler is restarted with it for these tests and restarted without it afterwards (the
differential suite needs the default configuration).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubegpu.testing.builders import make_node
from tests.realkube.conftest import controlplane
from tests.realkube.harness import KubegpuProcess, cleanup, create_namespace, create_node, ok

REPO = Path(__file__).resolve().parents[2]
NS = "extender-e2e"


def config(cp: Any, port: int, path: Path) -> Path:
    """deploy/scheduler/extender-config.yaml with the extender's local URL, the scheduler's kubeconfig (with
    ``--config``, kube-scheduler ignores ``--kubeconfig``) and leader election off."""
    doc = yaml.safe_load((REPO / "deploy/scheduler/extender-config.yaml").read_text())
    doc["extenders"][0]["urlPrefix"] = f"http://127.0.0.1:{port}/kubegpu"
    doc["clientConnection"] = {"kubeconfig": str(cp.workdir / "scheduler.kubeconfig")}
    doc["leaderElection"] = {"leaderElect": False}
    path.write_text(json.dumps(doc))
    return path


class Extender(KubegpuProcess):
    def __init__(self, cp: Any, port: int, log: Path) -> None:
        super().__init__(["extender", "--kubeconfig", str(cp.admin_kubeconfig), "--bind-address", "127.0.0.1",
                          "--port", str(port)], log)  # fmt: skip


@pytest.fixture
def cluster(control_plane: Any, tmp_path: Path) -> Iterator[tuple[Any, int, list[str]]]:
    port = controlplane.free_port()
    create_namespace(control_plane, NS)
    nodes = [create_node(control_plane, make_node(n).gpus(g).obj(), "ext-") for n, g in (("a", 4), ("b", 2))]
    control_plane.restart_scheduler(config(control_plane, port, tmp_path / "scheduler-config.json"))
    try:
        yield control_plane, port, nodes
    finally:
        cleanup(control_plane, NS, nodes, set())
        control_plane.restart_scheduler(None)


def gpu_pod(name: str, gpus: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{
        "name": "main", "image": "registry.k8s.io/pause:3.10",
        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}  # fmt: skip


def pod_state(cp: Any, name: str) -> tuple[str, str]:
    """(node, PodScheduled=False message)."""
    pod = ok(cp.request("GET", f"/api/v1/namespaces/{NS}/pods/{name}"), name)
    cond = next((c for c in pod.get("status", {}).get("conditions", []) if c["type"] == "PodScheduled"), {})
    return pod["spec"].get("nodeName", ""), cond.get("message", "") if cond.get("status") == "False" else ""


def wait(cp: Any, name: str, want: str, timeout: float = 60) -> tuple[str, str]:
    deadline = time.monotonic() + timeout
    state = pod_state(cp, name)
    while time.monotonic() < deadline and not (state[0] if want == "bound" else state[1]):
        time.sleep(0.2)
        state = pod_state(cp, name)
    return state


def test_kube_scheduler_calls_the_extender_and_binds_through_it(
    cluster: tuple[Any, int, list[str]], tmp_path: Path
) -> None:
    cp, port, (a, _b) = cluster
    # ignorable: false and no extender listening: kube-scheduler cannot filter GPU pods (it calls the
    # extender: this is the proof that the configuration is live)
    ok(cp.request("POST", f"/api/v1/namespaces/{NS}/pods", gpu_pod("early", 3)), "pod early")
    node, message = wait(cp, "early", "unschedulable")
    assert node == ""
    assert "connection refused" in message and f"127.0.0.1:{port}/kubegpu/filter" in message, message
    ext = Extender(cp, port, tmp_path / "extender.log")
    try:
        # an extender error is a scheduling error, not Unschedulable: the pod is retried after its backoff and
        # now goes through the extender's filter, prioritize and bind; only a (4 GPUs) holds 3 GPUs
        node, message = wait(cp, "early", "bound")
        assert node == a, f"{message}\n{ext.log.read_text()[-3000:]}"
        ok(cp.request("POST", f"/api/v1/namespaces/{NS}/pods", gpu_pod("p", 2)), "pod p")
        node, message = wait(cp, "p", "bound")
        # a has 1 GPU left, b has 2: b is the only node for 2 GPUs
        assert node == "ext-b", f"{message}\n{ext.log.read_text()[-3000:]}"
    finally:
        ext.stop()
