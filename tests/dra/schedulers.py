"""The default scheduler of one Kubernetes minor assembled over built DRA objects, its DynamicResources
plugin, and where the pod ``default/p`` lands (or the scheduler's message); shared by the DRA test modules."""

from __future__ import annotations

from typing import Any

from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.assembly import SchedulerSpec, assemble
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.plugins.dynamic_resources import DynamicResources
from kubegpu.scheduler.schedule_one import Scheduler


def scheduler(version: str, *objs: dict[str, Any]) -> tuple[Scheduler, Any]:
    snap = build_snapshot([("t", x) for x in objs])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    spec = SchedulerSpec("default", kube_version=version, pdbs=tuple(snap.pdbs), dra=snap.dra)
    return assemble(spec, ClusterState(snap.nodes, snap.pods)), snap


def plugin(s: Scheduler) -> DynamicResources:
    return next(p for p in s.framework.plugins if isinstance(p, DynamicResources))


def outcome(version: str, *objs: dict[str, Any]) -> str:
    """The node the pod lands on, or the scheduler's message."""
    s, snap = scheduler(version, *objs)
    got = s.schedule_one(snap.pod("default/p"), assume=False)
    return got.node or got.message
