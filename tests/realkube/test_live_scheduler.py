"""``kubegpu scheduler`` against a real kube-apiserver (built from the module proxy), end to end.

What the emulated API server of ``tests/live`` cannot show: the real server's Binding subresource, its
conversion of ``events.k8s.io/v1`` events into ``core/v1`` (read here through core/v1: the Python client's
EventsV1Api fails on events with a null ``eventTime``), strategic-merge status patches, its Lease
(coordination.k8s.io/v1) with optimistic concurrency, and watches served from a real watch cache. The real
kube-scheduler runs beside it and must leave pods of ``schedulerName: kubegpu`` alone, as in a cluster.

Each test makes its own namespace and nodes and deletes them (the differential suite shares the control
plane and counts nodes).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubegpu.testing.builders import make_node
from tests.realkube.conftest import controlplane
from tests.realkube.harness import KubegpuProcess, cleanup, create_namespace, create_node, ok
from tests.realkube.verdicts import minor_of

SCHEDULER = "kubegpu"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubegpu-scheduler"


def gpu_pod(name: str, gpus: int, scheduler: str = SCHEDULER) -> dict[str, Any]:
    # an extended resource needs a limit (the API server copies it into requests)
    return {
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        },
    }  # fmt: skip


class Replica(KubegpuProcess):
    """One ``kubegpu scheduler`` replica."""

    def __init__(self, kubeconfig: Path, identity: str, log: Path, *extra: str) -> None:
        port = controlplane.free_port()
        args = [
            "scheduler", "--kubeconfig", str(kubeconfig),
            "--identity", identity, "--metrics-bind-address", "127.0.0.1", "--metrics-port", str(port),
            "--pod-initial-backoff", "0.1", "--pod-max-backoff", "0.4", "--lease-namespace", "kube-system",
            # short lease clocks so a takeover takes seconds, not kube-scheduler's 15 s
            "--lease-duration", "3", "--renew-deadline", "2", "--retry-period", "0.3", "-v", *extra,
        ]  # fmt: skip
        super().__init__(args, log)


@pytest.fixture
def replicas(control_plane: Any, tmp_path: Path) -> Iterator[Callable[..., Replica]]:
    started: list[Replica] = []

    def start(identity: str, *extra: str) -> Replica:
        r = Replica(control_plane.admin_kubeconfig, identity, tmp_path / f"{identity}.log", *extra)
        started.append(r)
        return r

    yield start
    for r in started:
        r.stop()
    # the next test's replicas must not wait out this one's lease
    control_plane.request("DELETE", LEASE)


@pytest.fixture
def world(control_plane: Any, request: pytest.FixtureRequest) -> Iterator[tuple[str, list[str]]]:
    """A namespace and nodes a (4 GPUs) and b (2 GPUs), deleted afterwards."""
    ns = f"live-{request.node.name.replace('_', '-')[:40].strip('-').lower()}"
    create_namespace(control_plane, ns)
    nodes = [
        create_node(control_plane, make_node(n).gpus(g).obj(), f"{ns}-") for n, g in (("a", 4), ("b", 2))
    ]
    try:
        yield ns, nodes
    finally:
        cleanup(control_plane, ns, nodes, set())


def wait_for(what: str, probe: Callable[[], Any], timeout: float, logs: list[Replica]) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.2)
    tails = "\n".join(f"--- {r.log.name}\n{r.log.read_text()[-3000:]}" for r in logs)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{tails}")


def get_pod(cp: Any, ns: str, name: str) -> dict[str, Any]:
    return ok(cp.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}"), f"pod {ns}/{name}")


def events_of(cp: Any, ns: str, name: str) -> list[dict[str, Any]]:
    body = ok(cp.request("GET", f"/api/v1/namespaces/{ns}/events"), "events")
    return [e for e in body["items"] if e["involvedObject"]["name"] == name]


def holder(cp: Any) -> str:
    status, lease = cp.request("GET", LEASE)
    return str(lease.get("spec", {}).get("holderIdentity") or "") if status == 200 else ""


def test_binds_through_the_real_binding_subresource_and_reports_an_event(
    control_plane: Any, world: tuple[str, list[str]], replicas: Callable[..., Replica]
) -> None:
    ns, (a, _b) = world
    r = replicas("e2e-a")
    wait_for("the Lease to be held by e2e-a", lambda: holder(control_plane) == "e2e-a", 60, [r])
    ok(control_plane.request("POST", f"/api/v1/namespaces/{ns}/pods", gpu_pod("p", 3)), "pod p")
    # only a (4 GPUs) holds 3; b has 2
    pod = wait_for("p to be bound", lambda: get_pod(control_plane, ns, "p")["spec"].get("nodeName"), 60, [r])
    assert pod == a
    # upstream's event note (pkg/scheduler/schedule_one.go: "Successfully assigned %v/%v to %v"), from the
    # events.k8s.io/v1 event the scheduler wrote, read back through core/v1
    ev = wait_for("the Scheduled event", lambda: [e for e in events_of(control_plane, ns, "p")
                                                if e["reason"] == "Scheduled"], 30, [r])  # fmt: skip
    assert ev[0]["message"] == f"Successfully assigned {ns}/p to {a}"
    assert ev[0]["reportingComponent"] == SCHEDULER


def test_unschedulable_pod_gets_the_condition_and_the_real_scheduler_leaves_it_alone(
    control_plane: Any, world: tuple[str, list[str]], replicas: Callable[..., Replica]
) -> None:
    ns, _nodes = world
    r = replicas("e2e-a")
    ok(control_plane.request("POST", f"/api/v1/namespaces/{ns}/pods", gpu_pod("big", 8)), "pod big")

    def condition() -> dict[str, Any] | None:
        conds = get_pod(control_plane, ns, "big").get("status", {}).get("conditions", [])
        return next((c for c in conds if c["type"] == "PodScheduled" and c["status"] == "False"), None)

    cond = wait_for("PodScheduled=False on big", condition, 60, [r])
    # hand-derived, the text of the API server's release (kubegpu scheduler reads /version): neither node has
    # 8 GPUs, so both fail NodeResourcesFit. From 1.34 a request above allocatable is unresolvable (kubernetes
    # PR #131345) and preemption skips both nodes; before, it dry-runs them and finds no victim (no pod runs);
    # 1.34-1.36 put DynamicResources' "no new claims to deallocate" first (dropped by PR #140222 in 1.37)
    minor = int(control_plane.version.split(".")[1])
    preemption = (
        "Preemption is not helpful for scheduling"
        if minor >= 34
        else "No preemption victims found for incoming pod"
    )
    dra = "no new claims to deallocate, " if 34 <= minor <= 36 else ""
    assert cond["reason"] == "Unschedulable"
    assert cond["message"] == (
        f"0/2 nodes are available: 2 Insufficient nvidia.com/gpu. {dra}preemption: 0/2 nodes are available: 2 {preemption}."
    )
    warnings = [e for e in events_of(control_plane, ns, "big") if e["reason"] == "FailedScheduling"]
    assert warnings and {e["reportingComponent"] for e in warnings} == {SCHEDULER}, (
        "kube-scheduler (default-scheduler) must not act on a pod of another schedulerName"
    )


def test_a_second_replica_takes_the_real_lease_over_and_schedules(
    control_plane: Any, world: tuple[str, list[str]], replicas: Callable[..., Replica]
) -> None:
    ns, (a, _b) = world
    first = replicas("e2e-a")
    wait_for("e2e-a to lead", lambda: holder(control_plane) == "e2e-a", 60, [first])
    second = replicas("e2e-b")
    time.sleep(2)  # a renewing leader keeps the Lease: the standby must not take it
    assert holder(control_plane) == "e2e-a"
    first.stop(signal.SIGKILL)  # no release: the standby waits out leaseDurationSeconds (3 s)
    wait_for("e2e-b to take the Lease over", lambda: holder(control_plane) == "e2e-b", 60, [second])
    ok(control_plane.request("POST", f"/api/v1/namespaces/{ns}/pods", gpu_pod("after", 4)), "pod after")
    node = wait_for("after to be bound by e2e-b", lambda: get_pod(control_plane, ns, "after")["spec"].get("nodeName"),
                    60, [second])  # fmt: skip
    assert node == a
    lease = ok(control_plane.request("GET", LEASE), "lease")
    assert lease["spec"]["leaseTransitions"] >= 1


def test_watches_resume_after_the_api_server_restarts(
    control_plane: Any, world: tuple[str, list[str]], replicas: Callable[..., Replica]
) -> None:
    """Every watch ends when kube-apiserver stops; the scheduler must re-watch (or relist) and see a node and
    a pod created after the restart. Lease clocks long enough to outlive the restart (losing it exits)."""
    ns, _nodes = world
    r = replicas("e2e-a", "--lease-duration", "60", "--renew-deadline", "50", "--retry-period", "1")
    wait_for("e2e-a to lead", lambda: holder(control_plane) == "e2e-a", 60, [r])
    control_plane.restart_apiserver()
    big = create_node(control_plane, make_node("c").gpus(8).obj(), f"{ns}-")
    try:
        ok(control_plane.request("POST", f"/api/v1/namespaces/{ns}/pods", gpu_pod("after-restart", 8)), "pod")
        node = wait_for("the pod to be bound after the restart",
                        lambda: get_pod(control_plane, ns, "after-restart")["spec"].get("nodeName"), 90, [r])  # fmt: skip
        assert node == big  # only the node created after the restart has 8 GPUs
        assert r.proc.poll() is None
    finally:
        control_plane.request("DELETE", f"/api/v1/nodes/{big}")


def test_the_version_under_test_is_the_built_one(control_plane: Any) -> None:
    """The API server answers with the release built (ldflags set gitVersion), so goldens name it truly."""
    info = ok(control_plane.request("GET", "/version"), "version")
    assert info["gitVersion"] == f"v{control_plane.version}"
    assert f"{info['major']}.{info['minor']}" == minor_of(control_plane.version)
