"""A Volcano pod whose own ask, or its gang's minResources, exceeds its Queue's ``spec.capability``.

Volcano's proportion plugin caps a queue at its realCapability (at most ``spec.capability``, and at most the
cluster's total less the other queues' guarantees) and allocates a task only while the queue's allocated plus
the task's request stays within the queue's deserved share, itself capped by realCapability
(volcano-sh/volcano pkg/scheduler/plugins/proportion/proportion.go, v1.16.0-alpha.1-42: AddAllocatableFn
queueAllocatable, deserved MinDimensionResource(realCapability)); its enqueue check compares the PodGroup's
minResources with realCapability (JobEnqueueableFn, "queue resource quota insufficient"). So a pod asking more
of a resource than the capability never runs, nor does a gang whose minResources exceed it. The other bounds
of realCapability (other queues' guarantees, the cluster total) are not reproduced here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubegpu.explain.kubectl import mutate
from kubegpu.model.names import VOLCANO_QUEUE_LABEL
from kubegpu.model.objects import Pod
from kubegpu.model.podgroup import VOLCANO_GROUP_ANNOTATION
from kubegpu.model.quantity import QuantityError, format_milli, to_milli_text
from kubegpu.model.records import VOLCANO_GROUP
from kubegpu.model.snapshot import ClusterSnapshot

OVER_CAPABILITY = "Volcano: the job asks more than its queue's spec.capability allows"


def part(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``raw[key]`` when it is a mapping, else {} (raw objects are read as they came)."""
    value = raw.get(key)
    return value if isinstance(value, Mapping) else {}


def amounts(raw: object, keep: Callable[[str], bool] = lambda _: True) -> dict[str, int]:
    """A ResourceList's quantities (milli-units) of the resources ``keep`` takes; one that does not parse is
    left out."""
    out = {}
    for key, text in raw.items() if isinstance(raw, Mapping) else ():
        name = str(key)
        if not keep(name):
            continue
        try:
            out[name] = to_milli_text(name, text)
        except QuantityError:
            continue
    return out


def show(asked: Mapping[str, int]) -> str:
    return ", ".join(f"{format_milli(r, v)} {r}" for r, v in sorted(asked.items()))


def _volcano(raw: Mapping[str, Any]) -> bool:
    return str(raw.get("apiVersion", "")).startswith(VOLCANO_GROUP + "/")


@dataclass(frozen=True)
class VolcanoObjects:
    """The snapshot's Volcano PodGroups and Queues (scheduling.volcano.sh), read once per diagnosis."""

    groups: list[Mapping[str, Any]]  # in snapshot order
    group_at: dict[tuple[str, str], Mapping[str, Any]]  # (namespace, name) → the first such PodGroup
    queues: dict[str, Mapping[str, Any]]  # name → the first such Queue (cluster-scoped)


def _read(snapshot: ClusterSnapshot) -> VolcanoObjects:
    groups = [raw for _, raw in snapshot.batch_objects if raw.get("kind") == "PodGroup" and _volcano(raw)]
    group_at: dict[tuple[str, str], Mapping[str, Any]] = {}
    for g in groups:
        meta = part(g, "metadata")
        group_at.setdefault((str(meta.get("namespace") or "default"), str(meta.get("name", ""))), g)
    queues: dict[str, Mapping[str, Any]] = {}
    for q in snapshot.records.queue_objects("Queue"):
        if _volcano(q):
            queues.setdefault(str(part(q, "metadata").get("name")), q)
    return VolcanoObjects(groups, group_at, queues)


def volcano_objects(snapshot: ClusterSnapshot) -> VolcanoObjects:
    """``VolcanoObjects``, kept on the snapshot while its batch objects and queue objects stay the same lists
    (``ClusterSnapshot.derived``): per Pending pod a lookup, not a scan of every object."""
    return snapshot.derived("volcano-objects", lambda: _read(snapshot), over=(snapshot.records.queues,))


def over_capability(snapshot: ClusterSnapshot, pod: Pod) -> tuple[str, str] | None:
    """(cause, note) when the pod's request, or its PodGroup's minResources, exceeds a resource of its Volcano
    Queue's spec.capability; None otherwise (no such Queue in the snapshot, or everything within it)."""
    ns = pod.namespace
    objects = volcano_objects(snapshot)
    name = pod.annotations.get(VOLCANO_GROUP_ANNOTATION)
    group = objects.group_at.get((ns, name)) if name else None
    queue = pod.labels.get(VOLCANO_QUEUE_LABEL) or str(
        (part(group, "spec").get("queue") if group else None) or "default"
    )
    q = objects.queues.get(queue)
    cap = amounts(part(part(q, "spec"), "capability")) if q else {}
    gang = amounts(part(part(group, "spec"), "minResources")) if group else {}
    own = {r: v for r, v in pod.requests.items() if v and r in cap and v > cap[r]}
    whole = {r: v for r, v in gang.items() if r in cap and v > cap[r]}
    if not (own or whole):
        return None
    need = {r: max(own.get(r, 0), whole.get(r, 0)) for r in {*own, *whole}}
    said = (
        f"the pod alone asks for {show(own)}"
        if own
        else f"its PodGroup {ns}/{part(group or {}, 'metadata').get('name')} needs minResources {show(whole)}"
        " for the gang to start"
    )
    first = sorted(need)[0]
    value = format_milli(first, need[first])
    patch = f"patch queues.scheduling.volcano.sh {queue} --type merge -p "
    body = f"""'{{"spec":{{"capability":{{"{first}":"{value}"}}}}}}'"""
    return OVER_CAPABILITY, (
        f"Volcano queue {queue}: {said}, more than its spec.capability ({show({r: cap[r] for r in need})}). "
        "Volcano allocates a task only within the queue's capability, and enqueues a gang only when its "
        "minResources fit it, so this job never runs. Lower the job's ask, or raise the queue's capability: "
        f"`{mutate(ns, patch + body)[0]}`, then without "
        f'--dry-run (rollback: the same patch with "{format_milli(first, cap[first])}"). kubegpu does not '
        "reproduce the other bounds of Volcano's realCapability (other queues' guarantees, the cluster total)."
    )
