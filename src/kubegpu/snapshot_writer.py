"""Write a snapshot back as a ``v1 List`` after a scheduling pass: what the cluster would hold next.

Bound pods get ``spec.nodeName`` and a ``PodScheduled=True`` condition, pods still pending get the
``PodScheduled=False`` condition with the full scheduler message (reason ``Unschedulable``, as the
scheduler writes it), and evicted victims are left out (a controller would recreate them as new pods).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.loop import Outcome


def _key(raw: Mapping[str, Any]) -> str:
    meta = raw.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def updated_objects(
    snapshot: ClusterSnapshot, outcomes: list[Outcome], new_pods: list[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    by_key: dict[str, Outcome] = {o.pod.key: o for o in outcomes}
    evicted = {v.key for o in outcomes for v in o.evicted}
    items: list[dict[str, Any]] = []
    for raw in [*snapshot.raw_objects, *new_pods]:
        obj = copy.deepcopy(dict(raw))
        if obj.get("kind") == "Pod":
            key = _key(obj)
            if key in evicted:
                continue
            outcome = by_key.get(key)
            if outcome is not None:
                _apply(obj, outcome)
        items.append(obj)
    return items


def _apply(obj: dict[str, Any], outcome: Outcome) -> None:
    status = obj.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    if outcome.node is not None:
        obj.setdefault("spec", {})["nodeName"] = outcome.node
        conditions.append({"type": "PodScheduled", "status": "True"})
        status.pop("nominatedNodeName", None)
    else:
        conditions.append(
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": outcome.message}
        )
        if outcome.nominated_node:
            status["nominatedNodeName"] = outcome.nominated_node
    status["conditions"] = conditions


def write_snapshot(
    snapshot: ClusterSnapshot, outcomes: list[Outcome], path: Path, new_pods: Sequence[Mapping[str, Any]] = ()
) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"resourceVersion": ""},
        "items": updated_objects(snapshot, outcomes, list(new_pods)),
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=160), encoding="utf-8")
