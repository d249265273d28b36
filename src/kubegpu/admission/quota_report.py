"""``kubegpu quota``: ResourceQuota usage per namespace and resource, and what a changed limit does (R8).

Usage is the quota's ``status.used`` as the API server reported it (else summed from the snapshot's pods,
and ResourceClaims for DRA keys, by ``admission.quota.namespace_usage``). A what-if (``ns/quota:resource=qty``) never evicts: lowering a
hard limit below usage only rejects new pods until usage drops below it (R8.2); raising it admits more.
A key the API server accepts but never enforces (``limits.nvidia.com/gpu``, a bare ``nvidia.com/gpu``)
carries a ``note`` saying so. A scoped quota's rows name its scopes (it counts only the pods they select).
"""

from __future__ import annotations

from typing import Any

from kubegpu.admission.quota import namespace_usage, not_enforced, scope_note, scope_text
from kubegpu.admission.quota import resource_unit as _unit
from kubegpu.errors import InputError
from kubegpu.model.quantity import QuantityError, format_milli, parse_quantity, to_milli
from kubegpu.model.snapshot import ClusterSnapshot


def parse_what_if(items: tuple[str, ...]) -> dict[tuple[str, str, str], int]:
    out = {}
    for item in items:
        target, _, assignment = item.partition(":")
        resource, _, qty = assignment.partition("=")
        ns, _, name = target.partition("/")
        if not (ns and name and resource and qty):
            raise InputError("expected NAMESPACE/QUOTA:RESOURCE=QUANTITY", field="--set", obj=item)
        try:
            out[(ns, name, resource)] = to_milli(_unit(resource), parse_quantity(qty))
        except QuantityError as exc:
            raise InputError(str(exc), field="--set", obj=item) from None
    return out


def quota_rows(snapshot: ClusterSnapshot, what_if: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    changes = parse_what_if(what_if)
    rows = []
    for q in sorted(snapshot.quotas, key=lambda q: (q.namespace, q.name)):
        used = namespace_usage(q, snapshot.pods, claims=snapshot.dra.claims.values())
        for r, hard in sorted(q.hard.items()):
            u = used.get(r, 0)
            row: dict[str, Any] = {
                "namespace": q.namespace, "quota": q.name, "resource": r,
                "used": format_milli(_unit(r), u), "hard": format_milli(_unit(r), hard),
                "percent": round(100 * u / hard, 1) if hard else None,
            }  # fmt: skip
            if scopes := scope_text(q):
                row["scopes"] = scopes
            note = "; ".join(n for n in (not_enforced(r), scope_note(q, r)) if n)
            if note:
                row["note"] = note
            new = changes.pop((q.namespace, q.name, r), None)
            if new is not None:
                row["whatIf"] = format_milli(_unit(r), new)
                if u > new:
                    row["effect"] = (
                        f"usage {format_milli(_unit(r), u)} is over the new limit: no running pod is evicted, but every "
                        f"new pod asking for {_unit(r)} is rejected (exceeded quota) until usage drops by "
                        f"{format_milli(_unit(r), u - new)}"
                    )
                else:
                    row["effect"] = (
                        f"room for {format_milli(_unit(r), new - u)} more before new pods are rejected"
                    )
            rows.append(row)
    if changes:
        (ns, name, r), _ = next(iter(changes.items()))
        raise InputError(f"no such quota resource {r} in ResourceQuota {ns}/{name}", field="--set")
    return rows
