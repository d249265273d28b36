"""The fault test of issue 9: kill the scheduler mid-stream of 1,000 pending pods, restart it.

Pins what kube-scheduler's design guarantees across a crash: the API server is the only state. The
restarted process relists, accounts every pod already bound (including ones bound in the instant before
the kill), and schedules the rest; since it never POSTs a binding for a pod it has seen bound, every
binding request is accepted (no 409 ``already assigned``), every pod ends bound exactly once or carries
the exact ``PodScheduled=False`` explanation, and no node holds more GPUs than it has.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from tests.live.apiserver import RunningApiServer, wait_until
from tests.live.conftest import Component, gpu_node, gpu_pod

NODES = 100  # x 8 GPUs = 800
PODS = 1000  # x 1 GPU: 200 cannot fit
FULL = (
    "0/100 nodes are available: 100 Insufficient nvidia.com/gpu. "
    "preemption: 0/100 nodes are available: 100 No preemption victims found for incoming pod."
)


def test_killed_mid_stream_and_restarted_every_pod_ends_bound_once_or_explained(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    for i in range(NODES):
        api.emulator.create("nodes", gpu_node(f"gpu-{i:03d}"))
    for i in range(PODS):
        api.emulator.create("pods", gpu_pod(f"p-{i:04d}", 1))
    first = start_scheduler("first", leader_elect=False)
    wait_until(lambda: len(api.emulator.bindings) >= 250, timeout=60, what="250 pods bound")
    first.kill()
    killed_at = len(api.emulator.bindings)
    assert killed_at < PODS  # really mid-stream

    start_scheduler("second", leader_elect=False)

    def explained(pod: dict[str, Any]) -> bool:
        conditions = pod["status"].get("conditions", [])
        return any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions)

    def settled() -> bool:
        bound = api.emulator.count("pods", lambda p: bool(p["spec"].get("nodeName")))
        return bound == 800 and api.emulator.count("pods", explained) == 200

    wait_until(settled, timeout=60, what="800 bound and 200 explained", interval=0.25)
    pods = api.emulator.objects("pods")
    per_node = Counter(p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName"))
    assert set(per_node.values()) == {8}  # every node full, none over its 8 GPUs
    assert set(Counter(key for key, _, _ in api.emulator.bindings).values()) == {1}
    assert {s.status for s in api.emulator.requests_to("POST", r".*/binding")} == {201}
    for p in pods:
        if not p["spec"].get("nodeName"):
            [cond] = [c for c in p["status"]["conditions"] if c["type"] == "PodScheduled"]
            assert (cond["reason"], cond["message"]) == ("Unschedulable", FULL)
