"""CheckpointAwarePreemption without a fixed ``now`` prices each preemption at that cycle's time.

A long-running scheduler (``kubegpu scheduler``) builds the plugin once; the cost of a victim is the
GPU-time it loses *when it is evicted* (``model.podgroup.eviction_cost``), so the clock must be read per
preemption cycle, not at construction (before the fix it was read once in ``__init__``, and every
later preemption was priced with the start-up "now").
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from kubegpu.explain.engine import Engine
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.assembly import SchedulerSpec
from kubegpu.scheduler.plugins.checkpoint_preemption import CheckpointAwarePreemption
from kubegpu.scheduler.registry import kubegpu_profile
from kubegpu.testing.builders import make_node, make_pod


def _running(name: str, node: str, gpus: int, started: str) -> dict[str, Any]:
    raw = make_pod(name).gpu(gpus).on(node, started=started).obj()
    raw["metadata"]["annotations"] = {}
    return raw


def test_each_preemption_is_priced_at_its_own_cycle_time() -> None:
    """One 4-GPU pod started 10:00 (no checkpoint) blocks a 4-GPU preemptor. Evicted at 11:00 it loses
    4 GPUs × 3600 s = 14400 GPU-s; at 12:00, 4 × 7200 s = 28800 GPU-s (hand-derived)."""
    snap = build_snapshot(
        [("t", make_node("a").gpus(4).obj()), ("t", _running("unsaved", "a", 4, "2026-12-02T10:00:00Z"))]
    )
    engine = Engine(snap, SchedulerSpec(kubegpu_profile()))  # no clock given: the live scheduler's set-up
    [plugin] = [
        p for p in engine.scheduler.framework.post_filter_plugins if isinstance(p, CheckpointAwarePreemption)
    ]
    ticks: Iterator[datetime] = iter(
        [datetime(2026, 12, 2, 11, 0, tzinfo=UTC), datetime(2026, 12, 2, 12, 0, tzinfo=UTC)]
    )
    engine.framework.handle.clock = lambda: next(ticks)
    urgent = make_pod("urgent").gpu(4).priority(100).parsed()

    first = engine.scheduler.schedule_one(urgent)
    assert [v.name for v in first.victims] == ["unsaved"]
    assert plugin.last_costs == {"default/unsaved": 14400}

    engine.scheduler.schedule_one(urgent)  # nothing was evicted: the same choice, one hour later
    assert plugin.last_costs == {"default/unsaved": 28800}
