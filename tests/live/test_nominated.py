"""Nominated pods on a live cluster: ``kubegpu scheduler`` (a real process) against the emulated API server.

Pins kube-scheduler 1.34's nominator as the scheduling core models it (``tests/test_nominated_pods.py``
pins the filter passes): a pending pod of this scheduler with ``status.nominatedNodeName`` keeps the room
its preemption made from pods of no higher priority; DefaultPreemption without candidates clears the
nomination (``NewPostFilterResultWithNominatedNode("")`` → the status patch removes the field).
Expected messages are written by hand from upstream's FitError format.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.live.apiserver import RunningApiServer, wait_until
from tests.live.conftest import Component, gpu_node, gpu_pod
from tests.live.observe import node_of, scheduled_condition


def nominated_pod(name: str, gpus: int, priority: int, node: str) -> dict[str, Any]:
    pod = gpu_pod(name, gpus, priority=priority)
    pod["status"]["nominatedNodeName"] = node
    return pod


def test_a_nominated_pod_keeps_its_room_until_its_victim_is_gone(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """8 GPUs: a terminating prio-0 victim still holds 4; the prio-1000 preemptor (8 GPUs) waits nominated
    (not eligible to preempt again while a lower-priority pod terminates on its node). A prio-0 pod
    asking for the 4 free GPUs must not take them; once the victim is gone the preemptor binds."""
    api.emulator.create("nodes", gpu_node("gpu-1"))
    victim = gpu_pod("victim", 4, node="gpu-1")
    victim["metadata"]["deletionTimestamp"] = "2026-12-03T08:00:00Z"
    api.emulator.create("pods", victim)
    api.emulator.create("pods", nominated_pod("high", 8, 1000, "gpu-1"))
    api.emulator.create("pods", gpu_pod("low", 4))
    start_scheduler()

    low = wait_until(lambda: scheduled_condition(api, "low"), what="low's condition")
    assert low["message"] == (
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    high = wait_until(lambda: scheduled_condition(api, "high"), what="high's condition")
    assert high["message"] == (
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. "
        "preemption: not eligible due to a terminating pod on the nominated node."
    )
    api.emulator.delete("pods", "ml", "victim")
    wait_until(lambda: node_of(api, "high") == "gpu-1", what="high bound")
    assert node_of(api, "low") == ""
    assert [key for key, _, _ in api.emulator.bindings] == ["ml/high"]


def test_a_nomination_preemption_cannot_honour_is_cleared(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """The node is full of prio-1000 pods; a prio-10 pod still nominated there finds no preemption
    candidate: its ``nominatedNodeName`` is removed by the status patch that records the FitError."""
    api.emulator.create("nodes", gpu_node("gpu-1"))
    api.emulator.create("pods", gpu_pod("important", 8, priority=1000, node="gpu-1"))
    api.emulator.create("pods", nominated_pod("stale", 1, 10, "gpu-1"))
    start_scheduler()

    def cleared() -> dict[str, Any] | None:
        pod = api.emulator.get("pods", "ml", "stale") or {}
        return pod if "nominatedNodeName" not in pod.get("status", {}) else None

    pod = wait_until(cleared, what="nomination cleared")
    condition = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert condition["message"] == (
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_a_preemption_clears_lower_priority_nominations_on_its_node(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Upstream ``prepareCandidate`` / ``getLowerPriorityNominatedPods``: after the prio-1000 pod preempts
    on gpu-1, the prio-10 pod nominated there loses its ``nominatedNodeName`` (it cannot preempt itself:
    ``preemptionPolicy: Never``, so nothing else would clear it)."""
    api.emulator.create("nodes", gpu_node("gpu-1"))
    api.emulator.create("pods", gpu_pod("low", 8, node="gpu-1"))
    waiting = nominated_pod("mid", 8, 10, "gpu-1")
    waiting["spec"]["preemptionPolicy"] = "Never"
    api.emulator.create("pods", waiting)
    api.emulator.create("pods", gpu_pod("high", 4, priority=1000))
    scheduler = start_scheduler()

    try:  # a liveness wait: on a loaded machine the retries after the eviction can take a while
        wait_until(lambda: node_of(api, "high") == "gpu-1", timeout=60, what="high bound")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nscheduler log:\n{scheduler.output()}") from None
    wait_until(
        lambda: "nominatedNodeName" not in (api.emulator.get("pods", "ml", "mid") or {})["status"],
        what="mid's nomination cleared",
    )
    assert node_of(api, "mid") == ""
