"""What a planned change does, decided by the one scheduling core on the changed snapshot (R5.4, R14.4, R15).

``simulate`` applies the change to a copy of the snapshot (nodes replaced, evicted pods removed, evicted
pods that a controller recreates put back as Pending copies) and asks the core, pod by pod as
``diagnose`` does, where each pending pod would go before and after. The result names the pods that
would become Pending or schedulable, where evicted pods would land one after another (or the exact
message why not), GPU
schedulable capacity before → after per resource name (cordoned nodes count for nothing), each changed
node's capacity and allocatable before → after per ``nvidia.com/*`` resource, the replacements the API
server's ResourceQuota admission would refuse (the evicted pod's own usage given back first), and the
GPU-hours the evictions put at risk (GPU-time since each victim's last checkpoint,
``model.podgroup.eviction_cost``). ``kubelet_refusals`` names the pending pods kube-scheduler would bind to
a changed node where kubelet then fails them at admission; ``simulate`` checks the replacements it places
there the same way. ``scattered`` names the pods the change leaves
without a node (newly Pending, or replacements that land nowhere) although the free devices of the open
nodes add up to their GPU request: none holds it alone (pitfall R17.5).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from kubegpu.admission import quota as quota_admission
from kubegpu.admission.quota import namespace_usage, pod_usage, selects, usage_time
from kubegpu.explain.findings import scattered
from kubegpu.model.dra import DraObjects
from kubegpu.model.names import NVIDIA_PREFIX
from kubegpu.model.objects import Node, Pod, ResourceQuota
from kubegpu.model.podgroup import eviction_cost
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.assembly import Engine, SchedulerSpec
from kubegpu.scheduler.device_ledger import Refusal, choose, container_requests


@dataclass
class Effect:
    newly_pending: list[dict[str, Any]] = field(default_factory=list)
    newly_schedulable: list[dict[str, Any]] = field(default_factory=list)
    evicted: list[dict[str, Any]] = field(default_factory=list)
    capacity: dict[str, tuple[int, int]] = field(default_factory=dict)  # allocatable, whole units
    # node → resource → {"capacity": (before, after), "allocatable": (before, after)}, whole units
    nodes: dict[str, dict[str, dict[str, tuple[int, int]]]] = field(default_factory=dict)
    gpu_hours_at_risk: float = 0.0
    quota_rejections: list[dict[str, Any]] = field(default_factory=list)  # pods the API server would refuse
    kubelet_rejections: list[dict[str, Any]] = field(
        default_factory=list
    )  # pods kubelet admission would fail
    # pods left without a node whose GPU request the free devices add up to, on no single node (R17.5)
    scattered: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "newly_pending": self.newly_pending,
            "newly_schedulable": self.newly_schedulable,
            "evicted": self.evicted,
            "capacity": {r: {"before": b, "after": a} for r, (b, a) in self.capacity.items()},
            "nodes": {
                n: {r: {k: {"before": b, "after": a} for k, (b, a) in v.items()} for r, v in rows.items()}
                for n, rows in self.nodes.items()
            },
            "gpu_hours_at_risk": round(self.gpu_hours_at_risk, 2),
            "quota_rejections": self.quota_rejections,
            "kubelet_rejections": self.kubelet_rejections,
            "scattered": self.scattered,
        }


def _gpu_allocatable(nodes: list[Node]) -> dict[str, int]:
    """GPU allocatable new pods can use: cordoned nodes count for nothing."""
    total: dict[str, int] = {}
    for n in nodes:
        if n.unschedulable:
            continue
        for r, v in n.allocatable.items():
            if r.startswith(NVIDIA_PREFIX):
                total[r] = total.get(r, 0) + v // 1000
    return total


def _node_resources(before: Node, after: Node) -> dict[str, dict[str, tuple[int, int]]]:
    """Capacity and allocatable before → after of each ``nvidia.com/*`` resource that changes."""
    out = {}
    names = {r for n in (before, after) for r in (*n.capacity, *n.allocatable) if r.startswith(NVIDIA_PREFIX)}
    for r in sorted(names):
        cap = (before.capacity.get(r, 0) // 1000, after.capacity.get(r, 0) // 1000)
        alloc = (before.allocatable.get(r, 0) // 1000, after.allocatable.get(r, 0) // 1000)
        if cap[0] != cap[1] or alloc[0] != alloc[1]:
            out[r] = {"capacity": cap, "allocatable": alloc}
    return out


def released_quotas(quotas: Sequence[ResourceQuota], pods: Sequence[Pod], pod: Pod) -> list[ResourceQuota]:
    """The quotas with ``pod``'s usage given back, as after its deletion: what it is charged when the usage is
    taken (``usage_time``), nothing for a pod stuck terminating past its grace, which no quota counts still."""
    own = pod_usage(pod, usage_time(list(pods), [pod]))
    out = []
    for q in quotas:
        used = namespace_usage(q, list(pods))
        if q.namespace == pod.namespace and selects(q, pod):  # only a quota that counted it gives it back
            used = {r: max(used.get(r, 0) - own.get(r, 0), 0) for r in q.hard}
        out.append(replace(q, used=used))
    return out


def _kubelet_refusal(engine: Engine, pod: Pod, node: str) -> Refusal | None:
    """Why kubelet would fail ``pod`` at admission on ``node`` of ``engine``, or None; the devices ``pod``
    holds there itself (placed already) count as free, as they are its own."""
    idx = engine.cluster.index[node]
    model = engine.cluster.devices.models[idx]
    if model is None:
        return None
    return choose(pod, model, engine.cluster.devices.taken(idx, pod.key), as_kubelet=True)[1]


def _kubelet_row(pod: Pod, node: str, kind: str, refusal: Refusal, starts: bool) -> dict[str, Any]:
    return {"pod": pod.key, "node": node, "kind": kind, "before": [], "after": None,
            "reason": refusal.kubelet_reason, "message": refusal.kubelet_error,
            "evidence": refusal.evidence, "starts": starts}  # fmt: skip


def kubelet_refusals(
    before: Engine,
    after: Engine,
    names: Collection[str],
    reason: str | None = None,
    evicted: Collection[str] = (),
) -> list[dict[str, Any]]:
    """Pending pods kube-scheduler (it counts devices) would bind to one of ``names`` on the changed
    snapshot where kubelet then fails them at admission (of ``reason`` only, when given); ``starts``:
    whether the same node admitted them before the change. The Pending copies of ``evicted`` pods are
    replacements ``simulate`` has placed already and checks itself."""
    out: list[dict[str, Any]] = []
    for pod in after.snapshot.pending_pods():
        if pod.key in evicted or not container_requests(pod):
            continue
        result = after.scheduler.schedule_one(pod, assume=False, preempt=False)
        if result.node is None or result.node not in names:
            continue
        refusal = _kubelet_refusal(after, pod, result.node)
        if refusal is None or (reason is not None and refusal.kubelet_reason != reason):
            continue
        # admitted before: the node had a device model then and kubelet found devices for the pod
        was = (
            before.devices.get(result.node) is not None and _kubelet_refusal(before, pod, result.node) is None
        )
        out.append(_kubelet_row(pod, result.node, "pending", refusal, was))
    return out


def changed_snapshot(
    snapshot: ClusterSnapshot, nodes: Mapping[str, Node], evicted: set[str], dra: DraObjects | None = None
) -> ClusterSnapshot:
    """The snapshot after the change: replaced nodes, evicted pods gone, recreated ones Pending again;
    ``dra``: the DRA objects after it (a migration between the device plugin and DRA changes them)."""
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
        dra=snapshot.dra if dra is None else dra,
    )


def simulate(
    snapshot: ClusterSnapshot,
    nodes: Mapping[str, Node],
    evicted: set[str],
    now: datetime,
    spec: SchedulerSpec | None = None,
    kubelet_on: Collection[str] = (),
    dra_after: DraObjects | None = None,
) -> Effect:
    """The effect of replacing ``nodes`` and evicting ``evicted``; with ``kubelet_on``, also the replacements
    (``kind: replacement``; ``starts``: today the pod runs) and the pending pods (``kubelet_refusals``)
    kube-scheduler would bind to those nodes where kubelet then fails them at admission."""
    after_snap = changed_snapshot(snapshot, nodes, evicted, dra_after)
    before, after = Engine(snapshot, spec), Engine(after_snap, spec)
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
    unplaced: list[Pod] = []  # replacements admitted by quota that land nowhere
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
            # its controller creates the replacement: the API server's quota admission decides it first
            quotas = [q for q in snapshot.quotas if q.namespace == pod.namespace]
            adm = quota_admission.admit(pod, released_quotas(quotas, snapshot.pods, pod), snapshot.pods)
            if adm.allowed:
                copy = replace(pod, node_name="", phase="Pending")
                again = after.scheduler.schedule_one(copy, preempt=False)
                row["lands"], row["message"] = again.node, again.message
                if again.node is None:
                    unplaced.append(copy)
                elif again.node in kubelet_on and (refusal := _kubelet_refusal(after, copy, again.node)):
                    # kube-scheduler bound it by counts; kubelet on a changed node still fails it
                    effect.kubelet_rejections.append(
                        _kubelet_row(copy, again.node, "replacement", refusal, True)
                    )
            else:
                row["lands"], row["message"] = None, adm.message
                effect.quota_rejections.append({
                    "pod": key, "kind": "replacement", "controller": row["controller"], "phase": pod.phase,
                    "starts": True, "message": adm.message,
                })  # fmt: skip
        effect.evicted.append(row)
    # after every replacement has landed: what the open nodes have free is what a naive sum would count
    stranded = [by_key[r["pod"]] for r in effect.newly_pending] + unplaced
    tables: dict[str, dict[str, int]] = {}  # `after` does not change while the stranded pods are checked
    for pod in stranded:
        for r, need, total, largest in scattered(after, pod, tables):
            effect.scattered.append({"pod": pod.key, "resource": r, "requested": need // 1000,
                                     "free_total": total // 1000, "largest_free": largest // 1000})  # fmt: skip
    b_cap, a_cap = _gpu_allocatable(snapshot.nodes), _gpu_allocatable(after_snap.nodes)
    for r in sorted(set(b_cap) | set(a_cap)):
        if b_cap.get(r, 0) != a_cap.get(r, 0):
            effect.capacity[r] = (b_cap.get(r, 0), a_cap.get(r, 0))
    for name, node in nodes.items():
        was = snapshot.node(name)
        if was is not None and (rows := _node_resources(was, node)):
            effect.nodes[name] = rows
    if kubelet_on:
        effect.kubelet_rejections += kubelet_refusals(before, after, kubelet_on, evicted=evicted)
    return effect
