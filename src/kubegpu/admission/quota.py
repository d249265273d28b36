"""ResourceQuota admission (R8): would creating this pod push a namespace over a hard limit?

Mirrors the API server's ``ResourceQuota`` admission plugin and the core/v1 pod evaluator (1.34):
a pod is charged until it is Succeeded or Failed, or deleted and past its grace (``charged``); its usage
is ``pods``/``count/pods`` = 1, ``requests.<r>`` (and bare ``cpu``/``memory``/
``ephemeral-storage``/``hugepages-*``) from its effective requests, ``limits.<r>`` from its limits for cpu,
memory and ephemeral-storage only (pkg/quota/v1/evaluator/core/pods.go ``podComputeUsageHelper``). An
extended resource such as ``nvidia.com/gpu`` is counted only as ``requests.nvidia.com/gpu``: "only quota
objects in format of requests.resourceName is allowed" (``isExtendedResourceNameForQuota``), so a
``limits.nvidia.com/gpu`` or bare ``nvidia.com/gpu`` key is accepted by validation (a name with a ``/``
passes ``ValidateResourceQuotaResourceName``) but never enforced (``not_enforced`` says so); only resources
named in ``spec.hard`` are checked; usage is the quota's ``status.used`` when the API server reported one, else the sum over the
snapshot's pods. The rejection reads, byte for byte,
``pods "<name>" is forbidden: exceeded quota: <quota>, requested: <r>=<v>, used: <r>=<v>, limited: <r>=<v>``
with resources sorted and joined by commas. Lowering a quota rejects new pods and evicts none.
A quota with ``spec.scopes`` or ``spec.scopeSelector`` counts and limits only the pods every scope selects
(``selects``).

DRA: a pod that gets GPUs through a ResourceClaim asks for no ``nvidia.com/gpu``, so ``requests.nvidia.com/gpu``
never counts them. The quota key for those is ``<device-class>.deviceclass.resource.k8s.io/devices``
(``class_key``, 1.31+), charged per ResourceClaim when the claim is created (``claim_usage``), by quotas
without scopes only; ``explain.findings_quota`` says when a GPU quota leaves a namespace's claims uncounted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from kubegpu.model.dra import ALLOCATION_RESULTS_MAX, ResourceClaim
from kubegpu.model.names import DRA_CLAIM_COUNT, DRA_CLASS_QUOTA_SUFFIX
from kubegpu.model.objects import Pod, ResourceQuota, ScopeRequirement, aggregate_container_limits
from kubegpu.model.podgroup import parse_time, snapshot_time
from kubegpu.model.quantity import format_milli, saturate
from kubegpu.model.resources import (
    ResourceList,
    add,
    is_extended,
    is_gpu,
    is_hugepages,
    is_pod_level_resource,
)
from kubegpu.model.snapshot import ClusterSnapshot

# podComputeUsageHelper: the only resources counted under their bare name and as limits.<r>
_LIMITED = ("cpu", "memory", "ephemeral-storage")


def _limits(pod: Pod) -> ResourceList:
    """``resourcehelper.PodLimits`` (component-helpers resource/helpers.go v0.37.2; pkg/api/v1/resource
    v1.30.14): the KEP-753 aggregate of the containers' limits (sidecars add up, an init container counts
    with the sidecars before it), each pod-level limit (``spec.resources.limits`` of cpu, memory or
    hugepages, when the pod sets pod-level resources: ``applyPodLevelResources``) in place of the
    aggregate's, plus ``spec.overhead`` on every non-zero limit."""
    total = aggregate_container_limits(pod)
    if pod.pod_level_requests:  # IsPodLevelResourcesSet (a release without the field dropped it at admission)
        total.update({r: v for r, v in pod.pod_level_limits.items() if is_pod_level_resource(r)})
    for r, v in pod.overhead.items():
        if total.get(r):
            total[r] = saturate(r, total[r] + v)
    return total


def charged(pod: Pod, now: datetime | None) -> bool:
    """``QuotaV1Pod`` (pkg/quota/v1/evaluator/core/pods.go, the same in 1.30-1.37): a pod is charged for
    compute quota (``pods``, ``requests.*``, ``limits.*``) unless its phase is Succeeded or Failed, or it has
    a ``deletionTimestamp`` and a ``deletionGracePeriodSeconds`` and ``now`` is after the one plus the other
    (a pod stuck terminating, its node lost, stops holding quota then). Before that a deleted pod is charged
    in full; without ``now`` (no clock) it is charged until it is gone."""
    if pod.is_terminal:
        return False
    grace = pod.deletion_grace_period_seconds
    if now is None or not pod.deletion_timestamp or grace is None:
        return True
    deleted = parse_time(pod.deletion_timestamp)
    return deleted is None or not now > deleted + timedelta(seconds=grace)


def pod_usage(pod: Pod, now: datetime | None = None) -> ResourceList:
    """Quota usage of one pod at ``now``, keyed by quota resource names (``requests.nvidia.com/gpu`` …). A pod
    no longer ``charged`` still counts in ``count/pods`` ("count/pods tracks all pods independent of state",
    pkg/quota/v1/evaluator/core/pods.go v1.37.2 PodUsageFunc), nothing else."""
    if not charged(pod, now):
        return {"count/pods": 1000}
    usage: ResourceList = {"pods": 1000, "count/pods": 1000}
    for r, v in pod.requests.items():
        if r in _LIMITED or is_hugepages(r) or is_extended(r):
            usage[f"requests.{r}"] = v
        if r in _LIMITED or is_hugepages(r):
            usage[r] = v
    for r, v in _limits(pod).items():
        if r in _LIMITED:
            usage[f"limits.{r}"] = v
    return usage


def _scope_selects(req: ScopeRequirement, pod: Pod) -> bool:
    """``podMatchesScopeFunc`` (pkg/quota/v1/evaluator/core/pods.go v1.37.2). PriorityClass is a label
    selector over {PriorityClass: the pod's priorityClassName}, the key absent when the pod names none
    (``podMatchesSelector``): In needs the name among the values, NotIn and DoesNotExist select a pod
    without one. A scope that is not a pod's (VolumeAttributesClass) or unknown selects nothing."""
    scope = req.scope
    if scope in ("Terminating", "NotTerminating"):  # isTerminating: activeDeadlineSeconds ≥ 0
        terminating = pod.active_deadline_seconds is not None and pod.active_deadline_seconds >= 0
        return terminating == (scope == "Terminating")
    if scope in ("BestEffort", "NotBestEffort"):  # qos.GetPodQOS: cpu and memory only, so a GPU-only pod is
        return pod.best_effort == (scope == "BestEffort")  # BestEffort
    if scope == "CrossNamespacePodAffinity":  # usesCrossNamespacePodAffinity
        a = pod.pod_affinity
        terms = (*a.required, *a.preferred, *a.anti_required, *a.anti_preferred)
        return any(t.namespaces or t.namespace_selector is not None for t in terms)
    if scope == "PriorityClass":
        name = pod.priority_class_name
        match req.operator:
            case "Exists":
                return bool(name)
            case "DoesNotExist":
                return not name
            case "In":
                return bool(name) and name in req.values
            case "NotIn":
                return not name or name not in req.values
    return False


def selects(quota: ResourceQuota, pod: Pod) -> bool:
    """Whether ``quota`` counts ``pod``: every scope of ``spec.scopes`` and ``spec.scopeSelector`` selects
    it (``generic.Matches``: no scope selects every pod)."""
    return all(_scope_selects(req, pod) for req in quota.scoped)


def scope_text(quota: ResourceQuota) -> str:
    """The quota's scopes as one line (``PriorityClass In (high), NotBestEffort``); "" when it has none."""
    parts = []
    for req in quota.scoped:
        if req.operator == "Exists" and req.scope != "PriorityClass":
            parts.append(req.scope)
        else:
            values = f" ({', '.join(req.values)})" if req.values else ""
            parts.append(f"{req.scope} {req.operator}{values}")
    return ", ".join(parts)


def scope_note(quota: ResourceQuota, key: str) -> str:
    """What a scope leaves out of the quota key ``key`` that a GPU platform engineer may not expect ("" when
    nothing): QoS reads cpu and memory only (``qos.GetPodQOS``), so a pod asking for an extended resource
    alone is BestEffort and a NotBestEffort quota on ``requests.<extended>`` never counts it."""
    name = resource_unit(key)
    if quota.scoped and (key == DRA_CLAIM_COUNT or key.endswith(DRA_CLASS_QUOTA_SUFFIX)):
        return (
            "scoped: ResourceClaims match no quota scope (resource_claims.go generic.MatchesNoScopeFunc), so "
            f"this quota never counts or limits {key}; put it in a quota without scopes"
        )
    if is_extended(name) and any(r.scope == "NotBestEffort" for r in quota.scoped):
        return (
            f"scoped NotBestEffort: a pod asking only for {name} (no cpu or memory request or limit) is "
            "BestEffort and is neither counted nor limited by this quota"
        )
    return ""


# validationSet (pods.go): a quota on any of these makes every container say its own request or limit
_MUST_SPECIFY = frozenset(("cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"))


def constraint_problem(quota: ResourceQuota, pod: Pod) -> str:
    """The podEvaluator's ``Constraints`` (pkg/quota/v1/evaluator/core/pods.go v1.37.2): when ``quota`` bounds
    cpu or memory, each container and init container must itself give what it bounds (a request: ``cpu``
    and ``requests.cpu``; a limit: ``limits.cpu``; a limit alone defaults the request), "" when they do or
    the pod sets pod-level resources (``IsPodLevelResourcesSet``; a release that does not keep them has
    dropped them at admission). A GPU pod asking only for ``nvidia.com/gpu`` fails it."""
    required = _MUST_SPECIFY.intersection(quota.hard)
    if not required or pod.pod_level_requests:
        return ""
    missing: dict[str, set[str]] = {}
    for c in (*pod.containers, *pod.init_containers):
        have = set()
        for name in ("cpu", "memory"):
            if name in c.requests:
                have |= {name, f"requests.{name}"}
            if name in c.limits:
                have.add(f"limits.{name}")
        for r in required - have:
            missing.setdefault(r, set()).add(c.name)
    if not missing:
        return ""
    return "must specify " + "; ".join(f"{r} for: {','.join(sorted(missing[r]))}" for r in sorted(missing))


def not_enforced(key: str) -> str:
    """Why the API server never enforces the quota key ``key`` ("" when it does): an extended resource is
    counted only as ``requests.<name>`` (pods.go ``isExtendedResourceNameForQuota``). Object counts
    (``count/<resource>``, generic.ObjectCountQuotaResourceNameFor) and DRA device-class keys (``class_key``)
    are other evaluators' keys, enforced, though they contain a ``/``."""
    name = resource_unit(key)
    if key.startswith("count/") or key.endswith(DRA_CLASS_QUOTA_SUFFIX):
        return ""
    if is_extended(name) and not key.startswith("requests."):
        return (
            f"not enforced: the API server counts extended resources only as requests.{name} "
            f'("only quota objects in format of requests.resourceName is allowed"); {key} limits nothing. '
            f"Fix: use requests.{name}."
        )
    return ""


def usage_time(pods: list[Pod], counted: list[Pod]) -> datetime | None:
    """The "now" the quota usage of ``counted`` (pods of ``pods``) is taken at: the newest pod creation or
    start time of the snapshot (``podgroup.snapshot_time``), a time it was certainly taken after. A deleted pod
    whose grace had passed by then was no longer charged when the snapshot was taken; one whose grace ends
    later is counted (the snapshot cannot say whether it had passed). None when no pod of ``counted`` is
    being deleted: no time is needed, and none is computed."""
    if not any(p.deletion_timestamp and p.deletion_grace_period_seconds is not None for p in counted):
        return None
    return snapshot_time(pods)


def class_key(device_class: str) -> str:
    """The quota key that bounds the devices ResourceClaims ask for of ``device_class``
    (``V1ResourceByDeviceClass``: ``gpu.nvidia.com`` → ``gpu.nvidia.com.deviceclass.resource.k8s.io/devices``;
    Kubernetes 1.31+)."""
    return device_class + DRA_CLASS_QUOTA_SUFFIX


def claim_usage(claim: ResourceClaim) -> ResourceList:
    """Quota usage of one ResourceClaim (pkg/quota/v1/evaluator/core/resource_claims.go ``Usage``, v1): one
    ``count/resourceclaims.resource.k8s.io``, and per device class the devices it may get: an exact count as
    written, ``All`` as ``AllocationResultsMaxSize`` (32), a ``firstAvailable`` request as its largest
    alternative per class. Charged while the claim exists, allocated or not. Not modelled: where
    DRAExtendedResource is on (1.36+) the claim also counts as ``requests.<its class's extendedResourceName>``
    and ``requests.deviceclass.resource.kubernetes.io/<class>`` (``addExtendedResourceQuota``)."""
    usage: ResourceList = {DRA_CLAIM_COUNT: 1000}
    for request in claim.requests:
        most: dict[str, int] = {}
        for sub in request.alternatives:
            n = ALLOCATION_RESULTS_MAX if sub.allocation_mode == "All" else sub.count
            key = class_key(sub.device_class_name)
            most[key] = max(most.get(key, 0), n * 1000)
        usage = add(usage, most)
    return usage


def namespace_usage(
    quota: ResourceQuota, pods: list[Pod], now: datetime | None = None, claims: Iterable[ResourceClaim] = ()
) -> ResourceList:
    """What counts against ``quota``: its reported ``status.used``, else the pods of its namespace that it
    selects, each as ``pod_usage`` counts it at ``now`` (default ``usage_time``), and, for a quota without
    scopes, the namespace's ``claims`` (``claim_usage``; the claim evaluator matches no scope,
    ``generic.MatchesNoScopeFunc``, so a scoped quota counts none)."""
    if quota.used:
        return {r: quota.used.get(r, 0) for r in quota.hard}
    mine = [p for p in pods if p.namespace == quota.namespace and selects(quota, p)]
    at = now if now is not None else usage_time(pods, mine)
    total: ResourceList = {}
    for p in mine:
        total = add(total, pod_usage(p, at))
    for c in claims if not quota.scoped else ():
        if c.namespace == quota.namespace:
            total = add(total, claim_usage(c))
    return {r: total.get(r, 0) for r in quota.hard}


def deleting_holders(
    quota: ResourceQuota, pods: list[Pod], key: str, now: datetime | None = None
) -> list[Pod]:
    """The pods ``quota`` selects that are being deleted (``deletionTimestamp`` set) and still charged for
    ``key`` at ``now`` (default ``usage_time``): what comes back to the quota when they are gone."""
    mine = [p for p in pods if p.namespace == quota.namespace and p.deletion_timestamp and selects(quota, p)]
    at = now if now is not None else usage_time(pods, mine)
    return [p for p in mine if pod_usage(p, at).get(key, 0) > 0]


def resource_unit(name: str) -> str:
    """The resource whose units a quota key counts in (``requests.memory`` → ``memory``)."""
    for prefix in ("requests.", "limits."):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def is_gpu_key(key: str) -> bool:
    """The quota key bounds a GPU resource pods request (``requests.nvidia.com/gpu`` …): an extended resource's
    only enforced form (``not_enforced``); a ResourceClaim's GPUs count under ``class_key`` instead."""
    return key.startswith("requests.") and is_gpu(resource_unit(key))


def pretty(resources: ResourceList) -> str:
    return ",".join(f"{k}={format_milli(resource_unit(k), v)}" for k, v in sorted(resources.items()))


@dataclass(frozen=True)
class QuotaDecision:
    allowed: bool
    message: str = ""
    quota: ResourceQuota | None = None


def admit(pod: Pod, quotas: list[ResourceQuota], pods: list[Pod]) -> QuotaDecision:
    """Check ``pod`` against every applicable quota of its namespace, in name order as upstream sorts."""
    requested_all = pod_usage(pod)
    matching = [
        q for q in sorted(quotas, key=lambda q: q.name) if q.namespace == pod.namespace and selects(q, pod)
    ]
    for (
        quota
    ) in matching:  # every quota's constraints first, then usage (checkRequest, resourcequota controller.go)
        if problem := constraint_problem(quota, pod):
            return QuotaDecision(
                False, f'pods "{pod.name}" is forbidden: failed quota: {quota.name}: {problem}', quota
            )
    for quota in matching:
        used = namespace_usage(quota, pods)
        requested = {r: requested_all.get(r, 0) for r in quota.hard if requested_all.get(r, 0)}
        exceeded = [r for r, v in requested.items() if used.get(r, 0) + v > quota.hard[r]]
        if exceeded:
            message = (
                f'pods "{pod.name}" is forbidden: exceeded quota: {quota.name}, '
                f"requested: {pretty({r: requested[r] for r in exceeded})}, "
                f"used: {pretty({r: used.get(r, 0) for r in exceeded})}, "
                f"limited: {pretty({r: quota.hard[r] for r in exceeded})}"
            )
            return QuotaDecision(False, message, quota)
    return QuotaDecision(True)


def quotas_in(snapshot: ClusterSnapshot, namespace: str) -> list[ResourceQuota]:
    """The ResourceQuotas of ``namespace``, in the snapshot's order: a quota bounds its own namespace only,
    and diagnose asks once per Pending pod (1,000 of them on a fleet of 500 namespaces, a quota each), so the
    quotas are grouped by namespace once per snapshot (``ClusterSnapshot.derived``, while its pod and quota
    lists are the ones grouped, as ``over`` names them)."""
    quotas = snapshot.quotas

    def group() -> dict[str, list[ResourceQuota]]:
        by_ns: dict[str, list[ResourceQuota]] = {}
        for q in quotas:
            by_ns.setdefault(q.namespace, []).append(q)
        return by_ns

    return snapshot.derived("quotas-by-namespace", group, over=(quotas,)).get(namespace, [])
