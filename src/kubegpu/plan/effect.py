"""What a planned change does, decided by the one scheduling core on the changed snapshot (R5.4, R14.4, R15).

``simulate`` applies the change to a copy of the snapshot (nodes replaced, evicted pods removed, evicted
pods that a controller recreates put back as Pending copies) and asks the core, pod by pod as
``diagnose`` does, where each pending pod would go before and after. The result names the pods that
would become Pending or schedulable, where evicted pods would land one after another (or the exact
message why not), GPU
schedulable capacity before → after per resource name (cordoned nodes count for nothing), and the
GPU-hours the evictions put at risk (GPU-time since
each victim's last checkpoint, ``model.podgroup.eviction_cost``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from kubegpu.explain.engine import Engine
from kubegpu.model.objects import Node, Pod
from kubegpu.model.podgroup import eviction_cost
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.framework import Profile

GPU_PREFIX = "nvidia.com/"


@dataclass
class Effect:
    newly_pending: list[dict[str, Any]] = field(default_factory=list)
    newly_schedulable: list[dict[str, Any]] = field(default_factory=list)
    evicted: list[dict[str, Any]] = field(default_factory=list)
    capacity: dict[str, tuple[int, int]] = field(default_factory=dict)  # allocatable, whole units
    gpu_hours_at_risk: float = 0.0
    quota_rejections: list[dict[str, Any]] = field(default_factory=list)  # pods the API server would refuse
    kubelet_rejections: list[dict[str, Any]] = field(
        default_factory=list
    )  # pods kubelet admission would fail

    def as_dict(self) -> dict[str, Any]:
        return {
            "newly_pending": self.newly_pending,
            "newly_schedulable": self.newly_schedulable,
            "evicted": self.evicted,
            "capacity": {r: {"before": b, "after": a} for r, (b, a) in self.capacity.items()},
            "gpu_hours_at_risk": round(self.gpu_hours_at_risk, 2),
            "quota_rejections": self.quota_rejections,
            "kubelet_rejections": self.kubelet_rejections,
        }


def _gpu_allocatable(nodes: list[Node]) -> dict[str, int]:
    """GPU allocatable new pods can use: cordoned nodes count for nothing."""
    total: dict[str, int] = {}
    for n in nodes:
        if n.unschedulable:
            continue
        for r, v in n.allocatable.items():
            if r.startswith(GPU_PREFIX):
                total[r] = total.get(r, 0) + v // 1000
    return total


def changed_snapshot(
    snapshot: ClusterSnapshot, nodes: Mapping[str, Node], evicted: set[str]
) -> ClusterSnapshot:
    """The snapshot after the change: replaced nodes, evicted pods gone, recreated ones Pending again."""
    pods: list[Pod] = []
    for p in snapshot.pods:
        if p.key not in evicted:
            pods.append(p)
        elif p.owner is not None and p.owner.kind != "DaemonSet":
            pods.append(replace(p, node_name="", phase="Pending", start_time=""))
    return replace(
        snapshot,
        nodes=[nodes.get(n.name, n) for n in snapshot.nodes],
        pods=pods,
        errors=[],
        raw_objects=[],
    )


def simulate(
    snapshot: ClusterSnapshot,
    nodes: Mapping[str, Node],
    evicted: set[str],
    now: datetime,
    profile: Profile | None = None,
) -> Effect:
    after_snap = changed_snapshot(snapshot, nodes, evicted)
    before, after = Engine(snapshot, profile), Engine(after_snap, profile)
    effect = Effect()
    for pod in snapshot.pending_pods():
        b = before.scheduler.schedule_one(pod, assume=False, preempt=False)
        a = after.scheduler.schedule_one(pod, assume=False, preempt=False)
        if b.node and not a.node:
            effect.newly_pending.append({"pod": pod.key, "before": b.node, "message": a.message})
        elif a.node and not b.node:
            effect.newly_schedulable.append({"pod": pod.key, "node": a.node})
    by_key: dict[str, Pod] = {p.key: p for p in snapshot.pods}
    # evicted pods compete for the room left: place them one after another, in queue order
    order = sorted(evicted, key=lambda k: (-by_key[k].priority, by_key[k].creation_timestamp, k))
    for key in order:
        pod = by_key[key]
        cost = eviction_cost(pod, now)
        effect.gpu_hours_at_risk += cost / 3600
        row: dict[str, Any] = {
            "pod": key, "node": pod.node_name,
            "controller": f"{pod.owner.kind}/{pod.owner.name}" if pod.owner else "",
            "gpu_hours_at_risk": round(cost / 3600, 2),
        }  # fmt: skip
        if pod.owner is None:
            row["lands"] = None
            row["message"] = "a bare pod: nothing recreates it"
        elif pod.owner.kind == "DaemonSet":
            row["lands"] = None
            row["message"] = "a DaemonSet pod: recreated only on nodes it tolerates"
        else:
            again = after.scheduler.schedule_one(replace(pod, node_name="", phase="Pending"), preempt=False)
            row["lands"] = again.node
            row["message"] = again.message
        effect.evicted.append(row)
    b_cap, a_cap = _gpu_allocatable(snapshot.nodes), _gpu_allocatable(after_snap.nodes)
    for r in sorted(set(b_cap) | set(a_cap)):
        if b_cap.get(r, 0) != a_cap.get(r, 0):
            effect.capacity[r] = (b_cap.get(r, 0), a_cap.get(r, 0))
    return effect
