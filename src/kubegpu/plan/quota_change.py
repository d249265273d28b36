"""``kubegpu plan quota``: change a ResourceQuota's hard limits, with what the API server then refuses (R8).

Scope: the namespace, the quota's resources (used, hard before → after), the pods that count against it and
their controllers, and the namespace's other quotas (the API server checks every one, in name order).

Effect, by the API server's own ResourceQuota admission (``kubegpu.admission.quota`` / ``admit``): a
quota is checked only when a pod is created, so changing it evicts nothing and leaves Pending pods alone
(R8.2). What changes is every pod created from now on: for each counted pod, the replacement its
controller would create (after a restart, an eviction or a rollout) is admitted against the new limits
with the pod's own usage released first; pod manifests given with ``new_pods`` go through the whole
admission chain (validation, LimitRange, quota) before and after. Rejections carry the API server's
``exceeded quota`` message byte for byte.

Runbook: back up the quota, write the new object, ``kubectl diff`` and ``apply --dry-run=server``, apply,
verify with ``describe`` and a probe pod created with ``--dry-run=server`` (it goes through quota admission
and is never stored) whose exact answer is predicted, and the rollback (a manifest with the old limits: the
backup keeps its resourceVersion, so re-applying it would conflict).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any

import yaml

from kubegpu.admission import quota as quota_admission
from kubegpu.admission.admit import admit_pods
from kubegpu.admission.quota import namespace_usage, not_enforced, resource_unit
from kubegpu.errors import InputError
from kubegpu.explain.kubectl import mutate
from kubegpu.model.names import HOSTNAME_LABEL
from kubegpu.model.objects import ResourceQuota
from kubegpu.model.quantity import format_milli, parse_quantity
from kubegpu.model.resources import is_extended
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.plan.effect import Effect, released_quotas
from kubegpu.plan.inputs import qualified_name_problem
from kubegpu.plan.procedure import NodeChange, Step, applyable
from kubegpu.scheduler.versions import behaviour

# pkg/apis/core/helper/helpers.go standardQuotaResources: the names without a "/" a quota may hold (with the
# hugepages-* / requests.hugepages-* prefixes, IsQuotaHugePageResourceName)
STANDARD_QUOTA_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods",
    "resourcequotas", "services", "replicationcontrollers", "secrets", "persistentvolumeclaims", "configmaps",
    "services.nodeports", "services.loadbalancers",
})  # fmt: skip
# helpers.go integerResources: counted in whole units (IsIntegerResourceName, with extended resource names)
_INTEGER_RESOURCES = frozenset({
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
})  # fmt: skip


def hard_problem(key: str, amount: Fraction) -> str:
    """The API server's refusal of ``spec.hard[key]`` = ``amount`` ("" when it accepts it):
    ``ValidateResourceQuotaSpec`` (pkg/apis/core/validation/validation.go) runs
    ``ValidateResourceQuotaResourceName`` (a qualified name; without a "/", a standard quota resource) and
    ``ValidateResourceQuantityValue`` (not negative; an integer for integer resources)."""
    problem = qualified_name_problem(key)
    if problem:
        return problem
    if (
        "/" not in key
        and key not in STANDARD_QUOTA_RESOURCES
        and not key.startswith(("hugepages-", "requests.hugepages-"))
    ):
        return "must be a standard resource for quota"
    if amount < 0:
        return "must be greater than or equal to 0"
    # Quantity.MilliValue() % 1000: the amount rounded up to milli units must be whole
    if (key in _INTEGER_RESOURCES or is_extended(key)) and math.ceil(amount * 1000) % 1000:
        return "must be an integer"
    return ""


def _raw_spec(snapshot: ClusterSnapshot, quota: ResourceQuota) -> Mapping[str, Any]:
    """The quota's spec as the snapshot stored it ({} when absent), for what the model does not keep."""
    return snapshot.raw_object("ResourceQuota", quota.namespace, quota.name).get("spec") or {}


PROBE = "quota-probe"
# what a probe pod asks for of resources the quota only bounds alongside the changed one
_PROBE_SMALL = {"cpu": "100m", "memory": "128Mi", "ephemeral-storage": "1Gi"}
_PROBE_UNIT = {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"}


def _fmt(resource: str, milli: int) -> str:
    return format_milli(resource_unit(resource), milli)


def quota_manifest(
    quota: ResourceQuota,
    hard: Mapping[str, int],
    scope_selector: Mapping[str, Any] | None = None,
    texts: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The ResourceQuota as ``kubectl apply`` takes it: the whole ``spec.hard``, scopes and scopeSelector
    kept (apply would drop what the manifest leaves out), and none of the server-set fields (resourceVersion,
    uid, creationTimestamp, managedFields), so it applies over whatever changed since. ``texts``: quantities
    as written (the snapshot's or the user's), kept as they are: kubegpu stores non-CPU amounts in whole
    units, and a quota of 1.5 must stay 1.5."""
    spec: dict[str, Any] = {"hard": {r: (texts or {}).get(r) or _fmt(r, v) for r, v in sorted(hard.items())}}
    if quota.scopes:
        spec["scopes"] = list(quota.scopes)
    if scope_selector:
        spec["scopeSelector"] = dict(scope_selector)
    return applyable({
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": quota.name, "namespace": quota.namespace},
        "spec": spec,
    })  # fmt: skip


def _scoped_spec(quota: ResourceQuota, priority_classes: Sequence[str]) -> tuple[dict[str, Any], bool, str]:
    """The pod fields that make a probe one ``quota``'s scopes select (``admission.quota.selects``): extra
    spec fields, whether it must ask some CPU (NotBestEffort: QoS reads cpu and memory only), and why no
    probe can be selected ("" when one can)."""
    spec: dict[str, Any] = {}
    needs_cpu = False
    for req in quota.scoped:
        if req.scope == "Terminating":
            spec["activeDeadlineSeconds"] = 3600
        elif req.scope == "NotBestEffort":
            needs_cpu = True
        elif (
            req.scope == "CrossNamespacePodAffinity"
        ):  # a preferred term naming a namespace: it constrains nothing
            term = {"labelSelector": {"matchLabels": {"app": PROBE}}, "namespaces": [quota.namespace],
                    "topologyKey": HOSTNAME_LABEL}  # fmt: skip
            spec["affinity"] = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": term}]}}  # fmt: skip
        elif req.scope == "PriorityClass" and req.operator in ("In", "Exists"):
            names = list(req.values) if req.operator == "In" else list(priority_classes)
            if not names:
                return (
                    spec,
                    needs_cpu,
                    "no PriorityClass in the snapshot for the quota's PriorityClass Exists scope",
                )
            spec["priorityClassName"] = names[0]
        elif req.scope not in ("NotTerminating", "BestEffort", "PriorityClass"):
            return spec, needs_cpu, f"the quota's scope {req.scope} selects no pod"
    return spec, needs_cpu, ""


def probe_manifest(
    quota: ResourceQuota, changed: Sequence[str], priority_classes: Sequence[str] = ()
) -> dict[str, Any]:
    """A pod that asks for one unit of each changed resource (and a little of what else the quota bounds,
    since the API server refuses pods that leave a quota-bounded compute resource unspecified), with the
    fields the quota's scopes select by (``priority_classes``: names the PriorityClass Exists scope may use)."""
    scoped, needs_cpu, _ = _scoped_spec(quota, priority_classes)
    requests: dict[str, str] = {"cpu": _PROBE_SMALL["cpu"]} if needs_cpu else {}
    limits: dict[str, str] = dict(requests)
    for r in quota.hard:
        unit = resource_unit(r)
        if unit in ("pods", "count/pods") or unit.startswith("count/"):
            continue
        if "/" in unit:  # extended resources: limits only, the request is implied and must equal it
            if r in changed:
                limits[unit] = "1"
            continue
        amount = (_PROBE_UNIT if r in changed else _PROBE_SMALL).get(unit, "1")
        requests.setdefault(unit, amount)
        limits.setdefault(unit, amount)
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": PROBE, "namespace": quota.namespace},
        "spec": {
            "restartPolicy": "Never",
            **scoped,
            "containers": [{"name": "probe", "image": "registry.k8s.io/pause:3.10", "resources": resources}],
        },
    }


def plan_quota(
    snapshot: ClusterSnapshot,
    namespace: str,
    name: str,
    hard: Mapping[str, int],
    new_pods: Sequence[tuple[str, Mapping[str, Any]]] = (),
    texts: Mapping[str, str] | None = None,
) -> NodeChange:
    """Set ``hard`` (quota resource → milli-units) on ResourceQuota ``namespace/name``; ``texts``: each
    quantity as the user wrote it (the manifests keep it exactly, the checks read it exactly)."""
    quota = next((q for q in snapshot.quotas if (q.namespace, q.name) == (namespace, name)), None)
    if quota is None:
        known = ", ".join(f"{q.namespace}/{q.name}" for q in snapshot.quotas) or "none"
        raise InputError(
            f"no ResourceQuota {namespace}/{name} in {snapshot.description or 'the snapshot'} (quotas: {known})",
            field="QUOTA",
        )
    if not hard:
        raise InputError("give at least one --hard RESOURCE=QUANTITY", field="--hard")
    given = dict(texts or {})
    for r, v in hard.items():
        exact = parse_quantity(given[r]) if r in given else Fraction(v, 1000)
        problem = hard_problem(r, exact)
        if problem:  # the API server's wording (kubectl apply prints it the same way)
            raise InputError(
                f'ResourceQuota "{name}" is invalid: spec.hard[{r}]: Invalid value: "{given.get(r) or _fmt(r, v)}": '
                f"{problem}",
                field="--hard",
            )
    raw = _raw_spec(snapshot, quota)
    selector = raw.get("scopeSelector") or None
    old_texts = {str(k): str(v) for k, v in (raw.get("hard") or {}).items()}
    after = replace(quota, hard={**quota.hard, **hard})
    quotas_after = [after if q is quota else q for q in snapshot.quotas]
    # what counts against each key after the change (a key added too; DRA class keys count the claims), as
    # ``kubegpu quota`` counts it
    used = namespace_usage(after, snapshot.pods, claims=snapshot.dra.claims.values())
    resources = [
        {
            "resource": r,
            "used": _fmt(r, used.get(r, 0)),
            "hard_before": _fmt(r, quota.hard[r]) if r in quota.hard else None,
            "hard_after": _fmt(r, after.hard[r]),
            "over_after": used.get(r, 0) > after.hard[r],
        }
        for r in sorted(after.hard)
    ]
    counted = sorted(
        (p for p in snapshot.pods if p.namespace == namespace and not p.is_terminal),
        key=lambda p: (p.creation_timestamp, p.name),
    )
    controllers: dict[str, int] = {}
    for p in counted:
        owner = f"{p.owner.kind}/{p.owner.name}" if p.owner else "(bare pod)"
        controllers[owner] = controllers.get(owner, 0) + 1
    in_ns = [q for q in snapshot.quotas if q.namespace == namespace]
    in_ns_after = [q for q in quotas_after if q.namespace == namespace]
    effect = Effect()
    for p in counted:
        b = quota_admission.admit(p, released_quotas(in_ns, snapshot.pods, p), snapshot.pods)
        a = quota_admission.admit(p, released_quotas(in_ns_after, snapshot.pods, p), snapshot.pods)
        if not a.allowed:
            effect.quota_rejections.append({
                "pod": p.key, "kind": "replacement",
                "controller": f"{p.owner.kind}/{p.owner.name}" if p.owner else "",
                "phase": p.phase, "starts": b.allowed, "message": a.message,
            })  # fmt: skip
    snap_after = replace(snapshot, quotas=quotas_after)
    # the release's API server keeps or drops pod-level resources, as for `schedule --pods`
    pod_level = behaviour(snapshot.kube_version).pod_level_resources
    for before_adm, after_adm in zip(
        admit_pods(snapshot, list(new_pods), pod_level_resources=pod_level),
        admit_pods(snap_after, list(new_pods), pod_level_resources=pod_level),
        strict=True,
    ):
        if not after_adm.admitted:
            effect.quota_rejections.append({
                "pod": f"{namespace}/{after_adm.name}" if after_adm.pod is None else after_adm.pod.key,
                "kind": "new", "source": after_adm.source, "controller": "", "phase": "",
                "starts": before_adm.admitted, "message": after_adm.message,
            })  # fmt: skip
    changed = sorted(hard)
    new_file, old_file, probe_file = f"{name}-new.yaml", f"{name}-rollback.yaml", f"{name}-probe.yaml"
    classes = sorted(snapshot.priority_classes)
    probe = probe_manifest(after, changed, classes)
    [probe_adm] = admit_pods(snap_after, [(probe_file, probe)], pod_level_resources=pod_level)
    # kubectl's wording around the API server's answer (kubectl create -f)
    expect_probe = (
        f"pod/{PROBE} created (server dry run)"
        if probe_adm.admitted
        else f'Error from server (Forbidden): error when creating "{probe_file}": {probe_adm.message}'
    )
    warnings = []
    over = [r for r in sorted(after.hard) if used.get(r, 0) > after.hard[r]]
    if over:
        warnings.append(
            f"usage is above the new limit of {', '.join(over)}: no running pod is evicted and Pending pods stay, "
            "but every new pod asking for them (replacements included) is rejected until usage drops"
        )
    if quota.scoped:
        what = ", ".join(sorted({r.scope for r in quota.scoped}))
        why_not = _scoped_spec(after, classes)[2]
        warnings.append(
            f"the quota is scoped ({what}): it counts and limits only the pods its scopes select, and the "
            "manifests keep the scopes"
            + (f"; the probe cannot show the new limit: {why_not}" if why_not else "")
        )
    warnings += [f"{r}: {note}" for r in changed if (note := not_enforced(r))]
    if any(r.startswith("requests.nvidia.com/") for r in hard) and not any(
        "nvidia.com/mig-" in r or ".shared" in r for r in after.hard
    ):
        warnings.append(
            "renamed (nvidia.com/gpu.shared) and MIG (nvidia.com/mig-*) resources need quota entries of their own: "
            "a quota on requests.nvidia.com/gpu does not bound them"
        )
    ns = namespace
    rounded = [r for r in changed if r in given and parse_quantity(given[r]) * 1000 != after.hard[r]]
    if rounded:
        warnings.append(
            f"{', '.join(f'{r}={given[r]}' for r in rounded)}: the manifests keep the amount exactly, but kubegpu's "
            "admission model counts it in whole units, so the predicted rejections round it up"
        )
    new_text = yaml.safe_dump(
        quota_manifest(
            quota, after.hard, selector, {**{r: t for r, t in old_texts.items() if r not in hard}, **given}
        ),
        sort_keys=False,
    )
    old_text = yaml.safe_dump(quota_manifest(quota, quota.hard, selector, old_texts), sort_keys=False)
    describe = f"kubectl -n {ns} describe resourcequota {name}"
    want = ", ".join(f"{r}={_fmt(r, after.hard[r])}" for r in changed)
    steps = (
        Step(
            "Back up the quota and record its usage",
            (f"kubectl -n {ns} get resourcequota {name} -o yaml > {name}-before.yaml", describe),
        ),
        Step(
            f"Write the new quota to {new_file}, diff it, dry-run it on the server, apply it",
            (f"kubectl -n {ns} diff -f {new_file}", *mutate(ns, f"apply -f {new_file}")),
            new_text,
        ),
        Step("Verify the limits", (describe,), f"expect Hard {want}"),
        Step(
            f"Probe admission with a pod that is never stored ({probe_file})",
            mutate(ns, f"create -f {probe_file}")[:1],
            f"expect: {expect_probe}\n{yaml.safe_dump(probe, sort_keys=False)}",
        ),
    )
    rollback = (
        Step(
            f"Restore the old limits from {old_file} (not the backup: its resourceVersion would conflict)",
            (f"kubectl -n {ns} diff -f {old_file}", *mutate(ns, f"apply -f {old_file}"), describe),
            old_text,
        ),
    )
    summary = f"ResourceQuota {ns}/{name}: " + ", ".join(
        f"{r} {old_texts.get(r) or _fmt(r, quota.hard[r]) if r in quota.hard else 'unset'} → "
        f"{given.get(r) or _fmt(r, after.hard[r])}"
        for r in changed
    )
    return NodeChange(
        kind="quota",
        node="",
        summary=summary,
        capacity_before={},
        capacity_after={},
        affected=(),
        steps=steps,
        rollback=rollback,
        warnings=tuple(warnings),
        details={
            "namespace": ns,
            "quota": name,
            "scope": {
                "resources": resources,
                "pods_counted": [p.key for p in counted],
                "controllers": controllers,
                "other_quotas": [q.name for q in in_ns if q.name != name],
            },
            "effect": effect.as_dict(),
            "manifests": {
                new_file: new_text,
                old_file: old_text,
                probe_file: yaml.safe_dump(probe, sort_keys=False),
            },
            "probe_expected": expect_probe,
        },
    )
