"""Routine inspection (R16): the state now, and what changed since the last snapshot — changes, not points.

On one snapshot: the findings of ``explain.findings`` plus GPU pods Pending for longer than a threshold.
Against a previous snapshot of the same cluster: nodes gone or back, GPU capacity or allocatable changed
per node and resource, NVIDIA device plugin pods Ready dropping, Pending GPU pods growing in number or
waiting longer, quotas crossing 90%, and Pending GPU pods deleted only for their controller to create
another one that is Pending again (R17.6). With a Prometheus that scrapes ``kubegpu exporter``, the device
findings of ``explain.device_metrics`` (Xid seen, unhealthy GPUs, memory near full for long, requested but
idle). ``exit_code`` makes it usable from cron or CI: 0 nothing to report, 1 warnings, 2 errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from kubegpu.explain.device_metrics import Prometheus, device_findings
from kubegpu.explain.dra import double_counting
from kubegpu.explain.findings import SEVERITY_ORDER, Finding, exit_code, find
from kubegpu.explain.gpu_pod import is_gpu_pod
from kubegpu.model.objects import Pod
from kubegpu.model.podgroup import parse_time
from kubegpu.model.snapshot import ClusterSnapshot

DEVICE_PLUGIN_MARKERS = ("nvidia-device-plugin", "device-plugin")
CHANGED: Final = "changed"  # ``Finding.check`` of a change since the last snapshot that names its object


def is_device_plugin(pod: Pod) -> bool:
    owner = pod.owner.name if pod.owner else ""
    return any(m in pod.name or m in owner for m in DEVICE_PLUGIN_MARKERS)


@dataclass
class Inspection:
    findings: list[Finding] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return exit_code(self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {"exitCode": self.exit_code, "findings": [f.to_dict() for f in self.findings]}


def _gpu(resources: dict[str, int]) -> dict[str, int]:
    return {r: v // 1000 for r, v in resources.items() if r.startswith("nvidia.com/")}


def _pending_age(pod: Pod, now: datetime) -> float:
    created = parse_time(pod.creation_timestamp)
    return (now - created).total_seconds() if created else 0.0


def inspect(current: ClusterSnapshot, now: datetime, previous: ClusterSnapshot | None = None,
            pending_threshold_s: int = 600, pool_label: str = "accelerator.example.com/pool",
            prometheus: Prometheus | None = None) -> Inspection:  # fmt: skip
    out = Inspection(double_counting(current) + find(current, pool_label))  # errors first
    if prometheus is not None:
        out.findings.extend(device_findings(prometheus, current, now))
    waiting = [
        p
        for p in current.pending_pods()
        if is_gpu_pod(p, current.dra) and _pending_age(p, now) > pending_threshold_s
    ]
    if waiting:
        oldest = max(waiting, key=lambda p: _pending_age(p, now))
        out.findings.append(Finding(
            "warning", "scheduling", f"{len(waiting)} GPU pod(s) Pending longer than {pending_threshold_s // 60} min",
            [f"pod/{p.key}" for p in waiting],
            f"oldest: {oldest.key}, {_pending_age(oldest, now) / 3600:.1f} h. `kubegpu explain` says why each waits.",
            "R11, R16", [f"kubectl -n {oldest.namespace} describe pod {oldest.name}"],
        ))  # fmt: skip
    if previous is not None:
        out.findings.extend(_changes(previous, current, now))
    out.findings.sort(key=lambda f: SEVERITY_ORDER[f.severity])
    return out


def _changes(before: ClusterSnapshot, after: ClusterSnapshot, now: datetime) -> list[Finding]:
    out: list[Finding] = []
    old_nodes = {n.name: n for n in before.nodes}
    new_nodes = {n.name: n for n in after.nodes}
    for name in sorted(set(old_nodes) - set(new_nodes)):
        gpus = _gpu(old_nodes[name].allocatable)
        if gpus:
            out.append(Finding("critical", "node", "GPU node disappeared", [f"node/{name}"],
                               f"it had {gpus}; check whether it was scaled in on purpose", "R14.4, R16",
                               [f"kubectl -n default get node {name}"]))  # fmt: skip
    for name in sorted(set(old_nodes) & set(new_nodes)):
        a, b = old_nodes[name], new_nodes[name]
        for field_ in ("capacity", "allocatable"):
            x, y = _gpu(getattr(a, field_)), _gpu(getattr(b, field_))
            if x != y:
                lost = any(y.get(r, 0) < v for r, v in x.items())
                out.append(Finding(
                    "critical" if lost else "info", "driver/device-plugin", f"GPU {field_} changed on {name}", [f"node/{name}"],
                    ", ".join(f"{r} {x.get(r, 0)} → {y.get(r, 0)}" for r in sorted({*x, *y}) if x.get(r, 0) != y.get(r, 0))
                    + (": devices dropped out (unhealthy, unregistered, or a sharing/MIG change)" if lost else ""),
                    "R2.1, R16", [f"kubectl -n default describe node {name}"],
                    check=CHANGED, subject=name, many=f"GPU nodes whose GPU {field_} changed",
                ))  # fmt: skip
        if a.ready and not b.ready:
            out.append(Finding("critical", "node", f"{name} became NotReady", [f"node/{name}"], "kubelet stopped reporting Ready",
                               "R16", [f"kubectl -n default describe node {name}"],
                               check=CHANGED, subject=name, many="GPU nodes became NotReady"))  # fmt: skip
    ready_before = sum(1 for p in before.pods if is_device_plugin(p) and p.ready)
    ready_after = sum(1 for p in after.pods if is_device_plugin(p) and p.ready)
    if ready_after < ready_before:
        out.append(Finding("critical", "driver/device-plugin", "fewer device plugin pods Ready",
                           [p.key for p in after.pods if is_device_plugin(p) and not p.ready],
                           f"{ready_before} → {ready_after} Ready: their nodes stop advertising GPUs after a restart",
                           "R3.3, R16", ["kubectl -n gpu-operator get pods -o wide -l app=nvidia-device-plugin-daemonset"]))  # fmt: skip
    pend_before = {p.key for p in before.pending_pods() if is_gpu_pod(p, before.dra)}
    pend_after = [p for p in after.pending_pods() if is_gpu_pod(p, after.dra)]
    if len(pend_after) > len(pend_before):
        still = [p.key for p in pend_after if p.key in pend_before]
        out.append(Finding("warning", "scheduling", "Pending GPU pods growing", [f"pod/{p.key}" for p in pend_after],
                           f"{len(pend_before)} → {len(pend_after)}; still waiting since last time: {', '.join(still) or 'none'}",
                           "R11, R16", ["kubegpu diagnose"]))  # fmt: skip
    out.extend(_recreated_pending(before, after))
    for q in after.quotas:
        prev = next((o for o in before.quotas if (o.namespace, o.name) == (q.namespace, q.name)), None)
        for r, hard in q.hard.items():
            if not hard or prev is None:
                continue
            was, now_used = prev.used.get(r, 0) / hard, q.used.get(r, 0) / hard
            if was < 0.9 <= now_used:
                out.append(Finding("warning", "quota", f"quota {q.namespace}/{q.name} crossed 90% of {r}",
                                   [f"resourcequota/{q.namespace}/{q.name}"], f"{was:.0%} → {now_used:.0%}", "R8, R16",
                                   [f"kubectl -n {q.namespace} describe resourcequota {q.name}"],
                                   check=CHANGED, subject=f"{q.namespace}/{q.name}",
                                   many=f"quotas crossed 90% of {r}"))  # fmt: skip
    return out


def _recreated_pending(before: ClusterSnapshot, after: ClusterSnapshot) -> list[Finding]:
    """R17.6: a controller's Pending GPU pod gone since the last snapshot, and a new one of the same
    controller (a new uid; a StatefulSet reuses the name) Pending in its place: deleting it fixed nothing."""

    def ident(p: Pod) -> str:
        return p.uid or p.key

    def by_owner(snap: ClusterSnapshot) -> dict[tuple[str, str, str], list[Pod]]:
        out: dict[tuple[str, str, str], list[Pod]] = {}
        for p in snap.pending_pods():
            if p.owner is not None and is_gpu_pod(p, snap.dra):
                out.setdefault((p.namespace, p.owner.kind, p.owner.name), []).append(p)
        return out

    seen_before = {ident(p) for p in before.pods}
    seen_after = {ident(p) for p in after.pods}
    now_pending = by_owner(after)
    out = []
    for (ns, kind, name), was in sorted(by_owner(before).items()):
        gone = [p for p in was if ident(p) not in seen_after]
        new = [p for p in now_pending.get((ns, kind, name), []) if ident(p) not in seen_before]
        if not (gone and new):
            continue
        out.append(Finding(
            "warning", "workload", f"{kind} {ns}/{name} recreated its deleted Pending pod, Pending again",
            [f"{kind.lower()}/{ns}/{name}", *dict.fromkeys(f"pod/{p.key}" for p in gone + new)],
            f"gone since the last snapshot while Pending: {', '.join(p.key for p in gone)}; Pending now in their place: "
            f"{', '.join(p.key for p in new)}. Deleting a Pending pod does not fix it: the controller creates another "
            "with the same spec and the cause is still there. Fix what the scheduler's events name (resources, "
            "constraints, quota, device plugin) or the template.",
            "R11, R17.6", [f"kubegpu explain {new[0].key}", f"kubectl -n {ns} get events --field-selector involvedObject.name={new[0].name}"],
            pitfall="R17.6", check=CHANGED, subject=f"{ns}/{name}",
            many=f"{kind}s recreated their deleted Pending pod, Pending again",
        ))  # fmt: skip
    return out
