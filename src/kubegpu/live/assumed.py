"""Assumed pods: a chosen pod is accounted on its node until the watch shows it bound (upstream's
``Cache.AssumePod`` / ``ForgetPod``), with the device IDs its Binding carries.

Also the reconciliation of device records: the scheduler's view of which device IDs are held comes from
its own records (assumed pods' Bindings) first, then the ``kubegpu.io/allocated-devices`` records on
bound pods, each ID held at most once; a record naming an ID the node does not advertise or another pod
holds is not used (logged), and the ledger holds unheld stand-ins for that pod instead.

Owns: ``LiveScheduler.assumed``, the Binding object, which device records are trusted. May not import the binder, preemption, cache or
admission parts, nor another face.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from kubegpu.devices.node_devices import NodeDevices
from kubegpu.live.state import SchedulerState
from kubegpu.model.objects import Pod, PodKey
from kubegpu.scheduler.device_ledger import ALLOCATION_ANNOTATION, Assignment, recorded_assignment

# per resource, device ID → the pod whose record holds it (one node's)
Held = dict[str, dict[str, PodKey]]

log = logging.getLogger(__name__)


class AssumedPods(SchedulerState):
    def _assume_binding(self, pod: Pod, node: str, allocation: Assignment | None) -> dict[str, Any]:
        """Record ``pod`` as assumed on ``node`` until the watch shows it bound; its Binding object."""
        metadata: dict[str, Any] = {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid}
        assumed = pod
        if allocation:
            # The API server copies a Binding's annotations onto the pod in the same write that sets
            # nodeName, so the device choice and the node land together (or not at all).
            annotation = json.dumps(allocation, sort_keys=True, separators=(",", ":"))
            metadata["annotations"] = {ALLOCATION_ANNOTATION: annotation}
            assumed = dataclasses.replace(
                pod, annotations={**pod.annotations, ALLOCATION_ANNOTATION: annotation}
            )
        self.assumed[pod.key] = (assumed, node)
        return {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"kind": "Node", "name": node},
        }

    def _forget(self, pod: Pod) -> None:
        """Undo the core's assume (upstream ``Cache.ForgetPod``)."""
        self.assumed.pop(pod.key, None)
        self._release(pod.key, move=False)


def reconcile_records(placed: Sequence[Pod], models: Mapping[str, NodeDevices]) -> list[Pod]:
    """``placed`` (in order of precedence) as the ledger should take them: each device record checked by
    ``checked_record`` against the trusted records before it on the same node. The pods with a trusted
    record come first, those without one after, so that the stand-ins the ledger picks for the latter
    are chosen among IDs no trusted record names."""
    held: dict[str, Held] = {}
    checked = [checked_record(p, models.get(p.node_name), held.setdefault(p.node_name, {})) for p in placed]
    return [p for p in checked if ALLOCATION_ANNOTATION in p.annotations] + [
        p for p in checked if ALLOCATION_ANNOTATION not in p.annotations
    ]


def checked_record(pod: Pod, model: NodeDevices | None, held: Held) -> Pod:
    """``pod`` with its device record if every ID in it is one the node advertises for that resource and
    no other pod in ``held`` holds (the IDs are then added to ``held``); else without the record, and a
    warning naming the pod, the ID and why (the ledger then holds unheld stand-ins for it)."""
    assignment = recorded_assignment(pod)
    if assignment is None or model is None:
        return pod
    why = _conflict(assignment, model, held, pod.key)
    if why:
        log.warning(
            "pod %s: its %s record is not used (%s); unheld devices stand in for it",
            pod.key,
            ALLOCATION_ANNOTATION,
            why,
        )
        kept = {k: v for k, v in pod.annotations.items() if k != ALLOCATION_ANNOTATION}
        return dataclasses.replace(pod, annotations=kept)
    for res in assignment.values():
        for r, ids in res.items():
            for i in ids:
                held.setdefault(r, {})[i] = pod.key
    return pod


def _conflict(assignment: Assignment, model: NodeDevices, held: Held, key: PodKey) -> str:
    for container, res in sorted(assignment.items()):
        for r, ids in sorted(res.items()):
            plan = model.plans.get(r)
            known = {d.id for d in plan.devices} if plan is not None else set()
            for i in ids:
                if i not in known:
                    return f"container {container}: {r} {i} is not a device node {model.node} advertises"
                owner = held.get(r, {}).get(i)
                if owner is not None and owner != key:
                    return f"container {container}: {r} {i} is held by {owner}"
    return ""
