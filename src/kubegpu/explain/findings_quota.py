"""GPU ResourceQuotas: how full they are, what holds them, and what they do not count (R8).

* A GPU quota (``requests.<gpu resource>``) at or near its hard limit; when pods being deleted still hold part
  of it, the finding names them: the pod quota evaluator charges a deleted pod until it is gone or until
  ``deletionTimestamp`` + ``deletionGracePeriodSeconds`` has passed (``admission.quota.charged``), so those
  GPUs come back to the quota then, and not before.
* A namespace whose GPU quota bounds ``requests.nvidia.com/gpu`` while its pods take GPUs through DRA
  ResourceClaims, which that key never counts: each such claim and its pod are named, with the key that
  does count them (``<device-class>.deviceclass.resource.k8s.io/devices``, ``admission.quota.class_key``; or,
  where DRAExtendedResource is on, 1.36+, ``requests.<extendedResourceName>`` of the claim's DeviceClass).

May not import: faces.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime
from typing import Final

from kubegpu.admission.quota import (
    claim_usage,
    class_key,
    deleting_holders,
    is_gpu_key,
    pod_usage,
    pretty,
    usage_time,
)
from kubegpu.explain.findings_base import Finding
from kubegpu.explain.gpu_pod import gpu_claim, gpu_class
from kubegpu.explain.kubectl import kubectl, mutate
from kubegpu.model.dra import ResourceClaim
from kubegpu.model.objects import Pod, ResourceQuota
from kubegpu.model.quantity import format_milli
from kubegpu.model.snapshot import ClusterSnapshot

QUOTA_NEAR = 0.9
SHOWN = 5  # pods or claims named in a finding's detail
# ``Finding.check`` of the findings below (a namespace each: many namespaces, one line in the grouped view)
QUOTA_FULL: Final = "gpu-quota-full"
DRA_UNCOUNTED: Final = "gpu-quota-misses-dra"


def gpu_keys(quota: ResourceQuota) -> list[str]:
    """The quota's keys that bound a GPU resource requested by pods (``requests.nvidia.com/gpu`` …)."""
    return [r for r in sorted(quota.hard) if is_gpu_key(r)]


def _listed(items: list[str]) -> str:
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


def _deleting(snapshot: ClusterSnapshot) -> tuple[list[Pod], datetime | None]:
    """The snapshot's pods being deleted, and the time their charge is judged at (``usage_time``: the newest
    pod time of the snapshot), read once per snapshot: every full GPU quota and every controller refused for
    quota asks, and the time alone is a parse of every pod's timestamps."""

    def read() -> tuple[list[Pod], datetime | None]:
        deleting = [p for p in snapshot.pods if p.deletion_timestamp]
        return deleting, usage_time(snapshot.pods, deleting)

    return snapshot.derived("quota-deleting-pods", read)


def deleting_note(snapshot: ClusterSnapshot, quota: ResourceQuota, keys: list[str]) -> str:
    """ " N pod(s) being deleted still hold …" of ``quota``'s ``keys`` ("" when no such pod holds any)."""
    deleting, now = _deleting(snapshot)
    bounded = [k for k in keys if k in quota.hard]
    found: dict[str, Pod] = {}  # each pod once, in the order first found
    for k in bounded:
        for p in deleting_holders(quota, deleting, k, now):
            found.setdefault(p.key, p)
    if not found:
        return ""
    holders = list(found.values())
    usages = [pod_usage(p, now) for p in holders]  # each charged at ``now``: deleting_holders kept only those
    held = {k: sum(u.get(k, 0) for u in usages) for k in bounded}
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


def quota_findings(snapshot: ClusterSnapshot, extended: bool = True) -> list[Finding]:
    """See the module docstring; ``extended`` as for ``dra_quota_findings``."""
    out = []
    for q in snapshot.quotas:
        for r in gpu_keys(q):
            hard = q.hard[r]
            used = q.used.get(r, 0)
            if hard == 0 or used < QUOTA_NEAR * hard:
                continue
            at_limit = used >= hard
            held = deleting_note(snapshot, q, [r])
            state = "exhausted" if at_limit else "nearly exhausted"
            out.append(Finding(
                "warning" if at_limit else "info", "quota", f"GPU quota {state} in {q.namespace}",
                [f"resourcequota/{q.namespace}/{q.name}"],
                f"{r}: used {format_milli(r, used)} of {format_milli(r, hard)}. "
                + ("New pods asking for more are rejected at creation (`exceeded quota`), they never reach Pending; "
                   "lowering a quota rejects new pods and evicts none." if at_limit else "Little room left for new GPU pods.")
                + held,
                "R8.1, R8.2", [f"kubectl -n {q.namespace} describe resourcequota {q.name}",
                               *([_DELETING_PODS.format(ns=q.namespace)] if held else [])],
                check=QUOTA_FULL, subject=q.namespace, many=f"namespaces with their GPU quota {state}",
            ))  # fmt: skip
    return out + dra_quota_findings(snapshot, extended)


_DELETING_PODS = (
    "kubectl -n {ns} get pods -o custom-columns=NAME:.metadata.name,DELETED:.metadata.deletionTimestamp,"
    "GRACE:.metadata.deletionGracePeriodSeconds,NODE:.spec.nodeName,PHASE:.status.phase"
)


def _claim_users(snapshot: ClusterSnapshot) -> dict[str, list[str]]:
    """ResourceClaim "ns/name" → the pods that name it (``spec.resourceClaims``, generated names from status)."""
    users: dict[str, list[str]] = defaultdict(list)
    for pod_key, pc in sorted(snapshot.dra.pod_claims.items()):
        ns = pod_key.split("/", 1)[0]
        for ref in pc.refs:
            name = pc.claim_name(ref)
            if name:
                users[f"{ns}/{name}"].append(pod_key)
    return users


def _counts_class(keys: set[str], cls: str, snapshot: ClusterSnapshot, extended: bool) -> bool:
    """Whether a quota holding ``keys`` (without scopes) counts ResourceClaims of DeviceClass ``cls``: its own
    key, or, where DRAExtendedResource is on (KEP-5004, ``Behaviour.dra_extended_resource``), ``requests.<the
    class's extendedResourceName>`` (resource_claims.go ``addExtendedResourceQuota``)."""
    if class_key(cls) in keys:
        return True
    dc = snapshot.dra.classes.get(cls)
    return (
        extended
        and dc is not None
        and bool(dc.extended_resource_name)
        and (f"requests.{dc.extended_resource_name}" in keys)
    )


def dra_quota_findings(snapshot: ClusterSnapshot, extended: bool = True) -> list[Finding]:
    """A namespace with a GPU quota whose GPU ResourceClaims no quota counts (see the module docstring);
    ``extended``: the release counts a claim in its class's extended resource too (DRAExtendedResource)."""
    dra = snapshot.dra
    if not dra.claims:
        return []
    by_ns: dict[str, list[ResourceQuota]] = defaultdict(list)
    for q in sorted(snapshot.quotas, key=lambda q: q.name):
        by_ns[q.namespace].append(q)
    claims: dict[str, list[ResourceClaim]] = defaultdict(list)
    for c in sorted(dra.claims.values(), key=lambda c: c.key):
        if any(gpu_keys(q) for q in by_ns.get(c.namespace, ())) and gpu_claim(c, dra):
            claims[c.namespace].append(c)
    users = _claim_users(snapshot) if claims else {}
    out = []
    for ns, mine in sorted(claims.items()):
        counted = {k for q in by_ns[ns] if not q.scoped for k in q.hard}
        uncounted: list[tuple[ResourceClaim, str, int]] = []  # (claim, class, devices)
        for c in mine:
            usage = claim_usage(c)
            # the GPU classes only: a NIC's class in the same claim is no business of a GPU quota's finding
            for cls in sorted({s.device_class_name for r in c.requests for s in r.alternatives}):
                if gpu_class(cls, dra) and not _counts_class(counted, cls, snapshot, extended):
                    uncounted.append((c, cls, usage.get(class_key(cls), 0) // 1000))
        if uncounted:
            out.append(_dra_finding(ns, by_ns[ns], uncounted, users))
    return out


def _dra_finding(
    ns: str, quotas: list[ResourceQuota], uncounted: list[tuple[ResourceClaim, str, int]],
    users: dict[str, list[str]],
) -> Finding:  # fmt: skip
    gpu_quotas = [q for q in quotas if gpu_keys(q)]
    bounds = "; ".join(f"{q.name} bounds {', '.join(gpu_keys(q))}" for q in gpu_quotas)
    named = [
        f"ResourceClaim {c.name}"
        + (f" (pod {', '.join(k.split('/', 1)[1] for k in users[c.key])})" if users.get(c.key) else " (no pod names it)")
        + f" asks for {n} {cls} device(s)"
        for c, cls, n in uncounted
    ]  # fmt: skip
    classes = sorted({cls for _, cls, _ in uncounted})
    keys = ", ".join(class_key(cls) for cls in classes)
    target = next((q for q in gpu_quotas if not q.scoped), None)
    commands = [f"kubectl -n {ns} get resourceclaims -o wide", f"kubectl -n {ns} describe resourcequota"]
    if target is not None:
        budget = str(target.hard[gpu_keys(target)[0]] // 1000)
        patch = f"patch resourcequota {target.name} --type=merge -p " + "'{}'".format(
            json.dumps({"spec": {"hard": dict.fromkeys((class_key(cls) for cls in classes), budget)}})
        )
        remove = [
            {"op": "remove", "path": "/spec/hard/" + class_key(cls).replace("~", "~0").replace("/", "~1")}
            for cls in classes
        ]
        rollback = kubectl(ns, f"patch resourcequota {target.name} --type=json -p '{json.dumps(remove)}'")
        commands += [*mutate(ns, patch, output="yaml"), f"{rollback}   # rollback"]
    return Finding(
        "warning", "quota", f"GPU quota in {ns} does not count GPUs taken through DRA ResourceClaims",
        [*(f"resourcequota/{ns}/{q.name}" for q in gpu_quotas),
         *dict.fromkeys(f"resourceclaim/{ns}/{c.name}" for c, _, _ in uncounted)],
        f"ResourceQuota {bounds}, which counts pods' GPU resource requests only; a GPU a pod gets through a "
        f"ResourceClaim is not counted there, and no quota here counts it: {_listed(named)}. Bound those with "
        f"{keys} in a ResourceQuota without scopes (Kubernetes 1.31+): the API server counts every ResourceClaim of "
        "the class when it is created and refuses one over the limit (`exceeded quota`). It is a budget apart "
        "from the nvidia.com/gpu one.",
        "R8.1", commands, check=DRA_UNCOUNTED, subject=ns,
        many="namespaces whose GPU quota does not count GPUs taken through DRA ResourceClaims",
    )  # fmt: skip
