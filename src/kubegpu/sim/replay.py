"""Replay mode: an openb trace in time — pods arrive at ``creation_time`` and leave after their run time.

Discrete events in time order (at equal times, departures before arrivals, so freed GPUs are seen). An
arriving pod gets a scheduling cycle (``Scheduler.schedule_one``, no preemption: all openb pods have one
priority); one that fits nowhere waits in the unschedulable queue, and — as kube-scheduler moves
unschedulable pods back to the active queue on a cluster change — every departure retries the waiting
pods in arrival order. Identical pods that already failed in a retry round are not tried again in that
round (the cluster has not changed in between, so the answer is the same).

A pod runs for its trace duration, ``deletion_time − scheduled_time`` (``− creation_time`` when the
trace never scheduled it), from the moment it is placed. A pod still waiting when its trace deletion
time passes is given up (counted, never placed).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kubegpu.errors import InputError
from kubegpu.model.objects import Node, Pod
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import Framework
from kubegpu.scheduler.gpu_share import MILLI, GpuShareLedger
from kubegpu.scheduler.registry import in_tree_registry, packing_profile
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.sim.openb import TracePod, to_pod
from kubegpu.sim.packing import typical_pods

ARRIVE, DEPART, GIVE_UP = 1, 0, 2  # at equal times: departures, then arrivals, then give-ups


@dataclass(frozen=True)
class ReplayReport:
    policy: str
    pods: int
    placed: int
    given_up: int
    delayed: int  # placed after waiting
    mean_wait_s: float  # over delayed pods
    mean_allocation_pct: float  # time-weighted GPU allocation over the replay
    mean_frag_pct: float  # time-weighted fragment amount, % of GPU capacity

    def labels(self) -> list[str]:
        return [
            "pods", "placed", "never placed (gave up)", "placed after waiting", "mean wait of those (s)",
            "GPU allocated, time-weighted (%)", "fragment amount, time-weighted (% of GPUs)",
        ]  # fmt: skip

    def values(self) -> list[str]:
        return [
            str(self.pods), str(self.placed), str(self.given_up), str(self.delayed), f"{self.mean_wait_s:.0f}",
            f"{self.mean_allocation_pct:.2f}", f"{self.mean_frag_pct:.2f}",
        ]  # fmt: skip


def replay(nodes: Sequence[Node], trace: Sequence[TracePod], policy: str, seed: int) -> ReplayReport:
    timed = [p for p in trace if p.creation_time is not None and p.deletion_time is not None]
    if not timed:
        raise InputError("the trace has no creation/deletion times (use an 11-column pod list)")
    cluster = ClusterState(nodes)
    ledger = GpuShareLedger(cluster, typical_pods(trace))
    scheduler = Scheduler(Framework(packing_profile(policy, ledger), in_tree_registry()), cluster, seed=seed)
    capacity = int(ledger.gpu_count.sum()) * MILLI
    all_rows = np.arange(len(cluster), dtype=np.intp)
    events: list[tuple[int, int, int]] = []
    for i, p in enumerate(timed):
        assert p.creation_time is not None and p.deletion_time is not None
        events.append((p.creation_time, ARRIVE, i))
        events.append((p.deletion_time, GIVE_UP, i))
    heapq.heapify(events)
    pods: dict[int, Pod] = {}
    waiting: dict[int, int] = {}  # pod → arrival time, in arrival order
    running: set[int] = set()
    placed = given_up = delayed = 0
    wait_total = 0
    allocated = 0
    last_t: int | None = None
    area_alloc = area_frag = 0.0
    start_t = events[0][0]

    def place(i: int, now: int) -> bool:
        nonlocal allocated
        if not scheduler.schedule_one(pods[i], preempt=False).scheduled:
            return False
        p = timed[i]
        assert p.deletion_time is not None and p.creation_time is not None
        begun = p.scheduled_time if p.scheduled_time is not None else p.creation_time
        heapq.heappush(events, (now + max(p.deletion_time - begun, 0), DEPART, i))
        running.add(i)
        allocated += p.total_gpu_milli
        return True

    while events:
        now, kind, i = heapq.heappop(events)
        if last_t is not None and now > last_t:
            span = now - last_t
            area_alloc += span * allocated
            area_frag += span * float(ledger.node_frag(all_rows).sum())
        last_t = now
        if kind == ARRIVE:
            pods[i] = to_pod(timed[i])
            if place(i, now):
                placed += 1
            else:
                waiting[i] = now
        elif kind == GIVE_UP:
            if waiting.pop(i, None) is not None:
                given_up += 1
        elif i in running:
            running.discard(i)
            ledger.release(pods[i])
            cluster.remove_pod(pods[i])
            allocated -= timed[i].total_gpu_milli
            failed_shapes: set[tuple[int, int, int, int, frozenset[str] | None]] = set()
            for j, since in list(waiting.items()):
                p = timed[j]
                key = (p.cpu_milli, p.memory_mib, p.num_gpu, p.gpu_milli, p.gpu_spec)
                if key in failed_shapes:
                    continue
                if place(j, now):
                    del waiting[j]
                    placed += 1
                    delayed += 1
                    wait_total += now - since
                else:
                    failed_shapes.add(key)
    horizon = max((last_t or start_t) - start_t, 1)
    return ReplayReport(
        policy=policy,
        pods=len(timed),
        placed=placed,
        given_up=given_up + len(waiting),
        delayed=delayed,
        mean_wait_s=wait_total / delayed if delayed else 0.0,
        mean_allocation_pct=100 * area_alloc / horizon / capacity,
        mean_frag_pct=100 * area_frag / horizon / capacity,
    )


def compare_policies(
    data: Path, trace: str, before: str, after: str, seed: int, node_limit: int | None = None
) -> tuple[ReplayReport, ReplayReport]:
    from kubegpu.sim.bench import load_nodes, load_trace

    nodes = load_nodes(data)[:node_limit] if node_limit else load_nodes(data)
    pods = load_trace(data, trace)
    return replay(nodes, pods, before, seed), replay(nodes, pods, after, seed)
