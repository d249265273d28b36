"""Where one pod stands in the batch layer, for ``kubegpu explain`` (R8, R14.2).

Its workload's queue, its position among that queue's pending workloads (the admission order inside a
queue: priority, then creation), whether the queue's quota — with cohort borrowing — would admit it now
and, if not, by how much it falls short, and for a gang how many members exist against ``minMember``.
"""

from __future__ import annotations

from typing import Any

from kubegpu.batch.objects import parse_batch_objects
from kubegpu.batch.quota import QuotaBook
from kubegpu.batch.workloads import workloads
from kubegpu.model.objects import Pod
from kubegpu.model.podgroup import group_key
from kubegpu.model.quantity import format_milli
from kubegpu.model.snapshot import ClusterSnapshot


def workload_status(snapshot: ClusterSnapshot, pod: Pod) -> dict[str, Any] | None:
    """None when the snapshot defines no queues and the pod is in no gang."""
    queues, cohorts, groups, _ = parse_batch_objects(snapshot.batch_objects)
    if not queues and group_key(pod) is None:  # the answer below, without grouping every pod first
        return None
    every = workloads(snapshot.pods, groups)
    mine = next((w for w in every if any(p.key == pod.key for p in w.pods)), None)
    if mine is None or (not queues and not mine.gang):
        return None
    out: dict[str, Any] = {"workload": mine.key, "queue": mine.queue, "queueDefined": mine.queue in queues}
    pending = sorted(
        (w for w in every if w.queue == mine.queue and not any(p.node_name for p in w.pods)),
        key=lambda w: (-w.priority, w.created, w.key),
    )
    out["position"] = next((i + 1 for i, w in enumerate(pending) if w.key == mine.key), None)
    out["pendingInQueue"] = len(pending)
    if mine.queue in queues:
        book = QuotaBook(queues, cohorts).charge_admitted(every)
        check = book.check(mine.queue, mine.requests)
        out["quotaFits"] = check.fits
        if not check.fits:
            out["quotaShortfall"] = {
                "resource": check.resource,
                "shortBy": format_milli(check.resource, check.short_by),
                "reason": check.reason,
            }
    if mine.gang:
        out["gang"] = {
            "minMember": mine.min_member,
            "members": len(mine.pods),
            "bound": sum(1 for p in mine.pods if p.node_name),
            "missing": max(mine.min_member - len(mine.pods), 0),
        }
    return out
