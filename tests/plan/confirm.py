"""The independent side of the plans' demo confirmations: kube-scheduler's queue run on a snapshot the test
changed itself (pending pods by priority, then age; each bound where the scheduling core puts it before the
next is tried; no preemption), to compare with what a plan's effect predicted."""

from __future__ import annotations

from collections.abc import Mapping

from kubegpu.devices.sharing import PluginConfig
from kubegpu.explain.engine import Engine
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.assembly import SchedulerSpec


def settle(snap: ClusterSnapshot, configs: Mapping[str, PluginConfig] | None = None) -> dict[str, str]:
    """Pending pod → the node it is bound to ("" when none), in queue order."""
    engine = Engine(snap, SchedulerSpec(plugin_configs=configs))
    queue = sorted(snap.pending_pods(), key=lambda p: (-p.priority, p.creation_timestamp, p.key))
    return {p.key: engine.scheduler.schedule_one(p, preempt=False).node for p in queue}


def changed(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, str]:
    """The pods of ``before`` whose binding differs after the change, with their new node."""
    return {k: after.get(k, "") for k in before if before[k] != after.get(k, "")}
