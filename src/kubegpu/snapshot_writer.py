"""Write a snapshot back as a ``v1 List`` after a scheduling pass: what the cluster would hold next.

Bound pods get ``spec.nodeName`` and a ``PodScheduled=True`` condition, pods still pending get the
``PodScheduled=False`` condition with the full scheduler message (reason ``Unschedulable``, as the
scheduler writes it), and evicted victims are left out (a controller would recreate them as new pods).
ResourceClaims the pass allocated or reserved get the ``status.allocation`` (device results, the node
selector) and ``status.reservedFor`` that kube-scheduler's DynamicResources PreBind writes (kubernetes
dynamicresources.go ``bindClaim``), so a second pass over the written file sees those devices taken.
The scheduler's own claim for extended resources served by DRA (KEP-5004), which PreBind creates, is not
written.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from kubegpu.model.dra import AllocatedDevice, ResourceClaim
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.loop import Outcome


def _key(raw: Mapping[str, Any]) -> str:
    meta = raw.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def updated_objects(
    snapshot: ClusterSnapshot,
    outcomes: list[Outcome],
    new_pods: list[Mapping[str, Any]],
    claims: Mapping[str, ResourceClaim] | None = None,
) -> list[dict[str, Any]]:
    """``claims``: "ns/name" → the ResourceClaim as the pass left it (allocated, reserved), for those it
    changed."""
    by_key: dict[str, Outcome] = {o.pod.key: o for o in outcomes}
    evicted = {v.key for o in outcomes for v in o.evicted}
    names = {o.pod.uid: o.pod.name for o in outcomes if o.pod.uid}
    names.update({p.uid: p.name for p in snapshot.pods if p.uid})
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
        elif obj.get("kind") == "ResourceClaim" and claims and (claim := claims.get(_key(obj))) is not None:
            obj.setdefault("status", {}).update(_claim_status(claim, names))
        items.append(obj)
    return items


def _claim_status(claim: ResourceClaim, names: Mapping[str, str]) -> dict[str, Any]:
    """``status.allocation`` and ``status.reservedFor`` of ``claim`` in the API's shape (``names``: pod UID →
    name, for the consumer references)."""
    allocation: dict[str, Any] = {"devices": {"results": [_result(d) for d in claim.allocated or ()]}}
    if claim.allocation_node_selector:
        allocation["nodeSelector"] = {
            "nodeSelectorTerms": [
                {
                    "matchFields": [
                        {"key": r.key, "operator": r.operator, "values": list(r.values)}
                        for r in t.match_fields
                    ]
                }
                for t in claim.allocation_node_selector
            ]
        }
    return {
        "allocation": allocation,
        "reservedFor": [
            {"resource": "pods", "name": names.get(uid, ""), "uid": uid} for uid in claim.reserved_for
        ],
    }


def _result(d: AllocatedDevice) -> dict[str, Any]:
    out: dict[str, Any] = {"request": d.request, "driver": d.driver, "pool": d.pool, "device": d.device}
    if d.admin_access:
        out["adminAccess"] = True
    if d.share_id:
        out["shareID"] = d.share_id
    if d.consumed:
        out["consumedCapacity"] = {name: _quantity(v) for name, v in d.consumed}
    if d.binding is not None:
        if d.binding.conditions:
            out["bindingConditions"] = list(d.binding.conditions)
        if d.binding.failure_conditions:
            out["bindingFailureConditions"] = list(d.binding.failure_conditions)
        if d.binding.binds_to_node:
            out["bindsToNode"] = True
    return out


def _quantity(value: Fraction) -> str:
    """An exact amount as a Kubernetes quantity: an integer, else in milli-units (the allocator's amounts
    come from quantities, which are exact in milli-units or coarser)."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value * 1000}m"


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
    snapshot: ClusterSnapshot,
    outcomes: list[Outcome],
    path: Path,
    new_pods: Sequence[Mapping[str, Any]] = (),
    claims: Mapping[str, ResourceClaim] | None = None,
) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"resourceVersion": ""},
        "items": updated_objects(snapshot, outcomes, list(new_pods), claims),
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=160), encoding="utf-8")
