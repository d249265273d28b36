"""GPU Workloads Kueue has not admitted and whose pods do not exist: Kueue keeps a Job, JobSet, RayJob,
PyTorchJob… suspended (``spec.suspend``, or the framework's own field) until its Workload is admitted, so
no pod is Pending and the pending-pod view would say nothing (Kueue docs, tasks/troubleshooting/
troubleshooting_jobs.md "Is my Job suspended?"). Each becomes a finding with the Workload's reading
(``explain.kueue``); a Workload whose pods are in the snapshot is left to their own explanation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubegpu.explain.findings_base import Finding
from kubegpu.explain.kueue import KueueReading, cause, read_workload
from kubegpu.explain.kueue_objects import as_list, kueue_objects, meta, ns_of, spec_of
from kubegpu.model.resources import is_gpu
from kubegpu.model.snapshot import ClusterSnapshot

# states no wait resolves (a warning; waiting for quota others hold is Kueue working as intended: info)
STUCK = frozenset({"quota-never", "queue-missing", "queue-inactive"})
KUEUE_HELD: Final = "kueue-not-admitted"  # ``Finding.check`` of ``held_findings``


def held_findings(snapshot: ClusterSnapshot) -> list[Finding]:
    """A finding per GPU Workload Kueue has not admitted whose pods do not exist: Kueue keeps a Job, JobSet,
    RayJob, PyTorchJob… suspended until admission, so no pod is Pending and nothing else would say it."""
    out = []
    for wl, r in held_workloads(snapshot):
        owner = owner_of(wl)
        said = f'{r.condition}: Kueue wrote "{r.message}"' if r.message else r.condition
        detail = "; ".join(p for p in [said, *r.facts] if p)
        where = (
            f" (LocalQueue {r.local_queue} → ClusterQueue {r.cluster_queue})"
            if r.cluster_queue
            else (f" (LocalQueue {r.local_queue})" if r.local_queue else "")
        )
        advice = " ".join(f"{a}." for a in r.advice)
        out.append(Finding(
            "warning" if r.state in STUCK else "info", "quota" if r.state.startswith("quota") else "scheduling",
            f"Kueue has not admitted Workload {r.workload}{f' of {owner}' if owner else ''} ({cause(r)}): its pods "
            "are not created until it is",
            r.objects, f"{where.strip(' ()') or 'no LocalQueue'}: {detail}." + (f" What to do: {advice}" if advice else ""),
            "R11", r.commands, check=KUEUE_HELD, subject=r.workload,
            many=f"Workloads Kueue has not admitted ({cause(r)}): their pods are not created until they are",
        ))  # fmt: skip
    return out


def held_workloads(snapshot: ClusterSnapshot) -> list[tuple[Mapping[str, Any], KueueReading]]:
    """Workloads Kueue has not admitted whose pod sets ask for a GPU resource and whose pods are not in the
    snapshot (a Job, JobSet, RayJob… is suspended until admitted: no pod is Pending to explain)."""
    pods_owned = {(p.namespace, p.owner.kind, p.owner.name) for p in snapshot.pods if p.owner is not None}
    pods_owned |= {(p.namespace, "Pod", p.name) for p in snapshot.pods}
    out = []
    for w in kueue_objects(snapshot, "Workload"):
        refs = as_list(meta(w).get("ownerReferences"))
        if any((ns_of(w), x.get("kind"), x.get("name")) in pods_owned for x in refs):
            continue  # its pods are in the snapshot: their own explanation says it
        if not any(is_gpu(r) for r in _pod_set_resources(w)):
            continue
        reading = read_workload(snapshot, w)
        if reading.state not in ("admitted", "finished"):
            out.append((w, reading))
    return out


def _pod_set_resources(wl: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for ps in as_list(spec_of(wl).get("podSets")):
        template = ps.get("template")
        spec = spec_of(template) if isinstance(template, Mapping) else {}
        for c in as_list(spec.get("containers")) + as_list(spec.get("initContainers")):
            res = c.get("resources")
            for part in ("requests", "limits"):
                values = res.get(part) if isinstance(res, Mapping) else None
                if isinstance(values, Mapping):
                    names.update(str(k) for k, v in values.items() if str(v) not in ("0", ""))
    return names


def owner_of(wl: Mapping[str, Any]) -> str:
    """``Kind name`` of the Workload's controller (the job Kueue suspends), "" when it has none."""
    refs = as_list(meta(wl).get("ownerReferences"))
    ref = next((x for x in refs if x.get("controller")), refs[0] if refs else None)
    return f"{ref.get('kind', '')} {ref.get('name', '')}" if ref else ""
