"""The openb trace as replay input: timed pods, a smaller or busier cluster, and the packing scheduler.

openb's pods arrive at ``creation_time`` and run ``deletion_time − scheduled_time`` seconds (``−
creation_time`` when the trace never scheduled them); a pod still pending ``deletion_time −
creation_time`` seconds after it arrived is deleted (the trace's own deletion: the user gave up).

The default trace never fills the 6,212-GPU cluster (8,152 pods over 149 days: a time-weighted load
of about 0.23 % of its GPUs), so a replay of it measures no queueing. Two documented knobs create
contention:

- ``time_scale`` K: arrivals at ``creation_time / K`` (run times and patience unchanged), i.e. the
  same work submitted K times faster;
- ``nodes_fraction`` F: a seeded random F of the nodes (kept in file order), the same work on a
  smaller cluster.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubegpu.errors import ConfigError, InputError
from kubegpu.model.objects import Node
from kubegpu.scheduler.assembly import SchedulerSpec, assemble
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.gpu_ledger import GpuShareLedger
from kubegpu.scheduler.gpu_shapes import TypicalPods
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.sim.openb import TracePod, to_pod
from kubegpu.sim.replay import SchedulerFactory, SimPod


def timed(trace: Sequence[TracePod]) -> list[TracePod]:
    pods = [p for p in trace if p.creation_time is not None and p.deletion_time is not None]
    if not pods:
        raise InputError("the trace has no creation/deletion times (use an 11-column pod list)")
    return pods


def sim_pods(trace: Sequence[TracePod], time_scale: float = 1.0) -> list[SimPod]:
    if time_scale <= 0:
        raise ConfigError(f"time scale must be positive, got {time_scale:g}")
    out = []
    for p in timed(trace):
        assert p.creation_time is not None and p.deletion_time is not None
        begun = p.scheduled_time if p.scheduled_time is not None else p.creation_time
        arrival = p.creation_time / time_scale
        out.append(
            SimPod(
                to_pod(p),
                arrival,
                float(max(p.deletion_time - begun, 0)),
                arrival + max(p.deletion_time - p.creation_time, 0),
            )
        )
    return out


def node_subset(nodes: Sequence[Node], fraction: float, seed: int) -> list[Node]:
    if not 0 < fraction <= 1:
        raise ConfigError(f"nodes fraction must be in (0, 1], got {fraction:g}")
    if fraction == 1:
        return list(nodes)
    keep = max(round(len(nodes) * fraction), 1)
    chosen = np.sort(np.random.default_rng(seed).choice(len(nodes), size=keep, replace=False))
    return [nodes[int(i)] for i in chosen]


def packing_factory(
    policy: str, typical: TypicalPods | None, preemption: str | None = None
) -> SchedulerFactory:
    """The FGD artifact's scheduler for ``policy`` (optionally with a preemption PostFilter) over a cluster."""

    def make(nodes: Sequence[Node], seed: int) -> tuple[Scheduler, GpuShareLedger | None]:
        cluster = ClusterState(nodes)
        ledger = GpuShareLedger(cluster, typical)
        spec = SchedulerSpec("packing", policy=policy, preemption=preemption, seed=seed)
        return assemble(spec, cluster, sharing=ledger), ledger

    return make
