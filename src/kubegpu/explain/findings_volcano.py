"""GPU PodGroups Volcano has not enqueued: a PodGroup stays ``Pending`` until Volcano's enqueue action lets
it in (phase ``Inqueue``), and until then the vcjob controller creates no pod for a Volcano Job, so no pod is
Pending and the pending-pod view would say nothing (volcano#2814, #3426).

What refuses it is the queue's JobEnqueueableFn (volcano-sh/volcano @ed72c7c8,
pkg/scheduler/plugins/proportion/proportion.go, and the capacity plugin alike): a queue that is not ``Open``
rejects every job; otherwise ``minResources + allocated + inqueue - elastic`` must fit the queue's
``realCapability``, which is the cluster's total less the other queues' guarantee plus its own, capped per
resource by ``spec.capability`` where it names one. On a refusal Volcano writes the PodGroup event
"queue resource quota insufficient" (with ": insufficient <resource>, …" since v1.13.0). kubegpu compares
the GPU resources of ``minResources`` with what the snapshot says of those bounds (``spec.capability``, the
nodes' allocatable, the queue's other Inqueue PodGroups); the queue's allocated, elastic and the other
queues' guarantees are Volcano's own accounting and are not reproduced: said, not assumed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubegpu.explain.findings_base import Finding
from kubegpu.explain.volcano_queue import amounts, part, show, volcano_objects
from kubegpu.model.names import VOLCANO_VGPU_NUMBER
from kubegpu.model.podgroup import group_key
from kubegpu.model.records import VOLCANO_GROUP
from kubegpu.model.resources import is_gpu
from kubegpu.model.snapshot import ClusterSnapshot

PODGROUP_REF = f"podgroup.{VOLCANO_GROUP}/"  # a PodGroup finding's first object
NOT_ENQUEUED: Final = "volcano-not-enqueued"  # ``Finding.check`` of ``unqueued_findings``


def _gpu_resource(name: str) -> bool:
    """A GPU resource of a ResourceList (minResources also lists requests.<r>, limits.<r>, count/pods)."""
    if "/" not in name or name.startswith(("requests.", "limits.", "count/")):
        return False
    return is_gpu(name) or name == VOLCANO_VGPU_NUMBER


def _gpu_asks(raw: object) -> dict[str, int]:
    return amounts(raw, _gpu_resource)


def _queue_of(pg: Mapping[str, Any]) -> str:
    return str(part(pg, "spec").get("queue") or "default")


def unqueued_findings(snapshot: ClusterSnapshot) -> list[Finding]:
    """A finding per Volcano PodGroup asking for GPUs that is Pending and has no pod in the snapshot."""
    objects = volcano_objects(snapshot)
    pending = [pg for pg in objects.groups if part(pg, "status").get("phase") == "Pending"]
    if not pending:  # (no Volcano, or every group enqueued: the common case reads no pod and no node)
        return []
    with_pods = {k for k in (group_key(p) for p in snapshot.pods) if k}
    total: dict[str, int] = {}
    for n in snapshot.nodes:
        for r, v in n.allocatable.items():
            total[r] = total.get(r, 0) + v
    # each queue's Inqueue PodGroups asking for GPUs, gathered once (not once per Pending group)
    inqueue: dict[str, list[tuple[Mapping[str, Any], dict[str, int]]]] = {}
    for pg in objects.groups:
        if part(pg, "status").get("phase") == "Inqueue" and (
            got := _gpu_asks(part(pg, "spec").get("minResources"))
        ):
            inqueue.setdefault(_queue_of(pg), []).append((pg, got))
    out = []
    for pg in pending:  # (most groups run: their minResources are not read)
        meta, spec = part(pg, "metadata"), part(pg, "spec")
        ns, name = str(meta.get("namespace") or "default"), str(meta.get("name", ""))
        asks = _gpu_asks(spec.get("minResources"))
        if not asks or f"{ns}/{name}" in with_pods:
            continue
        queue = _queue_of(pg)
        out.append(_finding(snapshot, ns, name, queue, asks, objects.queues, inqueue.get(queue, []), total))
    return out


def _finding(
    snapshot: ClusterSnapshot,
    ns: str,
    name: str,
    queue: str,
    asks: dict[str, int],
    queues: Mapping[str, Mapping[str, Any]],
    inqueue: list[tuple[Mapping[str, Any], dict[str, int]]],
    total: Mapping[str, int],
) -> Finding:
    facts, never = [], False
    events = snapshot.records.events_about("PodGroup", ns, name)
    if events:
        e = events[-1]
        facts.append(f'{e.component or "Volcano"} wrote "{e.message}" ({e.reason})')
    q = queues.get(queue)
    if q is None:
        facts.append(
            f"the snapshot has no Volcano Queue {queue}" if queues else "the snapshot holds no Volcano Queue"
        )
    else:
        state = part(q, "status").get("state")
        if state and state != "Open":
            never = True
            facts.append(f"Queue {queue} is {state}: Volcano enqueues nothing from a queue that is not Open")
        cap = _gpu_asks(part(q, "spec").get("capability"))
        over = {r: v for r, v in asks.items() if r in cap and v > cap[r]}
        if over:
            never = True
            facts.append(
                f"minResources {show(over)} exceed Queue {queue}'s spec.capability ({show({r: cap[r] for r in over})}): "
                "never enqueued; raise the capability or lower the job's ask"
            )
        elif cap:
            facts.append(f"Queue {queue}'s spec.capability ({show(cap)}) holds minResources alone")
    beyond = {r: v for r, v in asks.items() if v > total.get(r, 0)}
    if beyond:
        never = True
        facts.append(
            f"minResources {show(beyond)} exceed the nodes' allocatable in all ({show({r: total.get(r, 0) for r in beyond})}), "
            "the most any queue's realCapability can be: never enqueued"
        )
    held, held_gpus = [], dict.fromkeys(asks, 0)
    for other, got in inqueue:  # (a Pending group is never one of its queue's Inqueue ones)
        om = part(other, "metadata")
        held.append(f"{om.get('namespace', 'default')}/{om.get('name', '')} ({show(got)})")
        for r in held_gpus:
            held_gpus[r] += got.get(r, 0)
    if held:
        # minResources + allocated + inqueue - elastic >= minResources + inqueue (elastic is part of allocated),
        # and realCapability <= min(capability, the cluster's total): past that bound the refusal is certain
        cap = _gpu_asks(part(q, "spec").get("capability")) if q is not None else {}
        full = {
            r: min(cap.get(r, total.get(r, 0)), total.get(r, 0))
            for r, v in asks.items()
            if v + held_gpus[r] > min(cap.get(r, total.get(r, 0)), total.get(r, 0))
        }
        facts.append(
            f"Inqueue PodGroups of queue {queue} count against it until they run or go: {', '.join(held)}"
            + (
                f"; with them this one needs {show({r: asks[r] + held_gpus[r] for r in full})}, more than the "
                f"{show(full)} the queue can hold (capability, at most the nodes' allocatable): refused while they "
                "stay Inqueue (an Inqueue group whose pods never fit holds it for good: volcano#2814)"
                if full
                else ""
            )
        )
        never = never or bool(full)
    facts.append(
        "not reproduced here: the queue's allocated and elastic resources and the other queues' guarantees, which "
        "Volcano's enqueue also weighs (proportion/capacity plugin JobEnqueueableFn)"
    )
    return Finding(
        "warning" if never else "info",
        "scheduling",
        f"Volcano has not enqueued PodGroup {ns}/{name} (queue {queue}, {show(asks)}): it is Pending, so its "
        "pods are not created until it is Inqueue",
        [f"{PODGROUP_REF}{ns}/{name}", f"queue.{VOLCANO_GROUP}/{queue}"],
        "; ".join(facts) + ".",
        "R11",
        [
            f"kubectl -n {ns} describe podgroups.{VOLCANO_GROUP} {name}",
            f"kubectl get queues.{VOLCANO_GROUP} {queue} -o yaml",
            f"kubectl get podgroups.{VOLCANO_GROUP} -A -o wide",
        ],
        check=NOT_ENQUEUED,
        subject=f"{ns}/{name}",
        many=f"PodGroups Volcano has not enqueued (queue {queue}): they are Pending, so their pods are not "
        "created until they are Inqueue",
    )
