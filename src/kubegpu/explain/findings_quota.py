"""GPU ResourceQuotas: how full they are, what holds them, and what they do not count (R8).

* A GPU quota (``requests.<gpu resource>``) at or near its hard limit; when pods being deleted still hold part
  of it, the finding names them: the pod quota evaluator charges a deleted pod until it is gone or until
  ``deletionTimestamp`` + ``deletionGracePeriodSeconds`` has passed (``admission.quota.charged``), so those
  GPUs come back to the quota then, and not before.

May not import: faces.
"""

from __future__ import annotations

from kubegpu.admission.quota import deleting_holders, pod_usage, pretty, resource_unit
from kubegpu.explain.findings_base import Finding
from kubegpu.model.objects import Pod, ResourceQuota
from kubegpu.model.quantity import format_milli
from kubegpu.model.resources import is_gpu
from kubegpu.model.snapshot import ClusterSnapshot

QUOTA_NEAR = 0.9
SHOWN = 5  # pods named in a finding's detail


def gpu_keys(quota: ResourceQuota) -> list[str]:
    """The quota's keys that bound a GPU resource requested by pods (``requests.nvidia.com/gpu`` …)."""
    return [r for r in sorted(quota.hard) if r.startswith("requests.") and is_gpu(resource_unit(r))]


def _listed(items: list[str]) -> str:
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


def deleting_note(snapshot: ClusterSnapshot, quota: ResourceQuota, keys: list[str]) -> str:
    """ " N pod(s) being deleted still hold …" of ``quota``'s ``keys`` ("" when no such pod holds any)."""
    holders: list[Pod] = []
    for k in keys:
        if k in quota.hard:
            holders += [
                p for p in deleting_holders(quota, snapshot.pods, k) if p.key not in {h.key for h in holders}
            ]
    if not holders:
        return ""
    held = {k: sum(pod_usage(p).get(k, 0) for p in holders) for k in keys if k in quota.hard}
    named = [
        f"{p.key} (deletionTimestamp {p.deletion_timestamp}"
        + (
            f", grace {p.deletion_grace_period_seconds}s)"
            if p.deletion_grace_period_seconds is not None
            else ")"
        )
        for p in holders
    ]
    return (
        f" {len(holders)} pod(s) being deleted still hold {pretty({k: v for k, v in held.items() if v})} of it: "
        f"{_listed(named)}. The quota gets it back when those pods are gone, or once deletionTimestamp + "
        "deletionGracePeriodSeconds has passed for a pod stuck terminating (its node lost): until then the API "
        "server charges them in full."
    )


def exceeded_keys(message: str) -> list[str]:
    """The quota keys an ``exceeded quota`` refusal names (its ``requested: k=v,k=v`` part)."""
    requested = message.partition("requested: ")[2].partition(", used: ")[0]
    return [part.partition("=")[0] for part in requested.split(",") if "=" in part]


def quota_findings(snapshot: ClusterSnapshot) -> list[Finding]:
    """See the module docstring."""
    out = []
    for q in snapshot.quotas:
        for r in gpu_keys(q):
            hard = q.hard[r]
            used = q.used.get(r, 0)
            if hard == 0 or used < QUOTA_NEAR * hard:
                continue
            at_limit = used >= hard
            held = deleting_note(snapshot, q, [r])
            out.append(Finding(
                "warning" if at_limit else "info", "quota",
                f"GPU quota {'exhausted' if at_limit else 'nearly exhausted'} in {q.namespace}",
                [f"resourcequota/{q.namespace}/{q.name}"],
                f"{r}: used {format_milli(r, used)} of {format_milli(r, hard)}. "
                + ("New pods asking for more are rejected at creation (`exceeded quota`), they never reach Pending; "
                   "lowering a quota rejects new pods and evicts none." if at_limit else "Little room left for new GPU pods.")
                + held,
                "R8.1, R8.2", [f"kubectl -n {q.namespace} describe resourcequota {q.name}",
                               *([_DELETING_PODS.format(ns=q.namespace)] if held else [])],
            ))  # fmt: skip
    return out


_DELETING_PODS = (
    "kubectl -n {ns} get pods -o custom-columns=NAME:.metadata.name,DELETED:.metadata.deletionTimestamp,"
    "GRACE:.metadata.deletionGracePeriodSeconds,NODE:.spec.nodeName,PHASE:.status.phase"
)
