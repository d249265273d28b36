"""All-or-nothing placement of a workload through the scheduling core (R9.1, R14.2).

Each member goes through ``Scheduler.schedule_one`` (device-level allocation included when the profile
has it) and is assumed on its node inside a journal mark; if fewer than ``minMember`` members fit, the
journal rolls back and the gang holds nothing — no GPU is ever held by half a gang. A gang that cannot
fit is explained as a whole: how many members fit, where, the exact scheduler message for the first
member that did not, and which lower-priority pods would have to go for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubegpu.batch.workloads import Workload
from kubegpu.model.objects import Pod
from kubegpu.model.quantity import format_milli
from kubegpu.model.resources import is_gpu
from kubegpu.scheduler.device_ledger import Assignment
from kubegpu.scheduler.schedule_one import Scheduler


@dataclass
class GangPlacement:
    placed: list[tuple[Pod, str, Assignment | None]] = field(default_factory=list)
    failed: list[tuple[Pod, str]] = field(default_factory=list)  # (pod, scheduler message)
    ok: bool = False
    explanation: str = ""


def shape(pod: Pod) -> str:
    gpus = {r: v for r, v in pod.requests.items() if is_gpu(r) and v}
    return ", ".join(f"{format_milli(r, v)}×{r}" for r, v in sorted(gpus.items())) or "no GPU"


def place(scheduler: Scheduler, workload: Workload, *, keep: bool = True) -> GangPlacement:
    """Place ``workload``; with ``keep`` a successful placement stays assumed in the cluster state."""
    cluster = scheduler.cluster
    mark = cluster.mark()
    result = GangPlacement()
    for pod in workload.pods:
        r = scheduler.schedule_one(pod, assume=True, preempt=False)
        if r.node is not None:
            result.placed.append((pod, r.node, r.allocation))
        else:
            result.failed.append((pod, r.message))
    result.ok = len(result.placed) >= workload.min_member
    if not result.ok:
        result.explanation = _explain(scheduler, workload, result)
    if not result.ok or not keep:
        cluster.rollback(mark)
    return result


def _explain(scheduler: Scheduler, workload: Workload, result: GangPlacement) -> str:
    shapes = sorted({shape(p) for p in workload.pods})
    where = ", ".join(f"{p.name}→{n}" for p, n, _ in result.placed) or "none"
    text = (
        f"gang {workload.key} needs {workload.min_member} of {len(workload.pods)} pods ({'; '.join(shapes)}) placed "
        f"together; only {len(result.placed)} fit now ({where}), so none is placed"
    )
    if len(workload.pods) < workload.min_member:
        return text + f"; only {len(workload.pods)} member pods exist yet (minMember {workload.min_member})"
    if result.failed:
        pod, message = result.failed[0]
        text += f". {pod.name}: {message}"
        retry = scheduler.schedule_one(pod, assume=False, preempt=True)
        if retry.nominated_node:
            victims = ", ".join(v.key for v in retry.victims)
            text += f" It would fit on {retry.nominated_node} after evicting {victims} (lower priority)."
    return text
