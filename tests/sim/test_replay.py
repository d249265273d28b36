"""Replay mode: arrivals at creation_time, departures after the trace run time, waiting pods retried on
every departure (kube-scheduler's unschedulable queue flushed on a cluster change), give-up at the
trace deletion time."""

from __future__ import annotations

import pytest

from kubegpu.sim.openb import TracePod, to_node
from kubegpu.sim.replay import replay
from tests.sim.builders import node


def gpu_pod(name: str, created: int, deleted: int, scheduled: int | None = None) -> TracePod:
    return TracePod(name, 1000, 1024, 1, 1000, None, "LS", "Running", created, deleted, scheduled)


def test_waiting_pod_is_placed_when_the_gpu_frees_and_a_late_one_gives_up() -> None:
    """One node, one GPU. a: 0 → 100 (holds the GPU). b arrives at 10 (in the trace it ran 110 → 140,
    30 s), waits, is placed at 100 when a leaves (wait 90 s) and runs 30 s until 130. c arrives at 20,
    trace-deleted at 50 while still waiting: given up. The last event is b's trace deletion at 140, so
    the GPU is busy 130 s of 140: 92.86 % time-weighted allocation."""
    pods = [gpu_pod("a", 0, 100, 0), gpu_pod("b", 10, 140, 110), gpu_pod("c", 20, 50, 20)]
    r = replay([to_node(node("n", 1))], pods, "BestFit", seed=0)
    assert (r.pods, r.placed, r.given_up, r.delayed) == (3, 2, 1, 1)
    assert r.mean_wait_s == 90
    assert r.mean_allocation_pct == pytest.approx(100 * 130 / 140)
