"""Dynamic resource allocation (DRA) in admission: pods that get devices through ResourceClaims, and
ResourceClaims / ResourceClaimTemplates that ask for admin access.

* A container that lists ``resources.claims`` gets the devices of those claims (resource.k8s.io/v1;
  NVIDIA/k8s-dra-driver-gpu serves GPUs this way): for the rules that ask "does it request a GPU" it
  does. The webhook sees only the pod, not the claim's device class, so a claim is taken as a GPU claim;
  what the claim may allocate is the API server's and the DRA driver's business, not modelled here.
* ``adminAccess: true`` on a device request (v1/v1beta2 ``requests[i].exactly.adminAccess``, v1beta1
  ``requests[i].adminAccess``) grants access to devices already in use by others. Since 1.33 the API
  server allows it only in namespaces labelled ``resource.kubernetes.io/admin-access: "true"``
  (kubernetes pkg/registry/resource/utils.go ``AuthorizedForAdmin``; feature gate DRAAdminAccess, beta and
  on by default in 1.34); the finding carries upstream's field path and message. A namespace whose labels
  are not known counts as unlabelled (``kubegpu lint`` knows the Namespaces among its files); the webhook
  sees these objects only where its configuration lists ``resourceclaims`` / ``resourceclaimtemplates``.
* A ResourceQuota on ``requests.nvidia.com/gpu`` counts no ResourceClaim: a claim's devices count only under
  ``<device-class>.deviceclass.resource.k8s.io/devices`` of a quota without scopes (``admission.quota``,
  resource_claims.go). Where the namespace's quotas (``namespace_quotas``: ``kubegpu lint`` reads those among
  its files) bound a GPU resource but not a class a claim asks for, ``quota_gaps`` says so, one line per
  request: a warning, since the API server admits the claim (on 1.36+ a DeviceClass whose
  ``extendedResourceName`` is the bounded resource is counted there, which lint cannot see without it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubegpu.admission.quota import class_key, is_gpu_key
from kubegpu.admission.shape import mapping
from kubegpu.model.names import DRA_ADMIN_NAMESPACE_LABEL

# where each kind keeps its ResourceClaimSpec
CLAIM_SPEC_PATHS: Mapping[str, tuple[str, ...]] = {
    "ResourceClaim": ("spec",),
    "ResourceClaimTemplate": ("spec", "spec"),
}
# pkg/registry/resource/utils.go AuthorizedForAdmin: field.Forbidden(…adminAccess, this)
ADMIN_ACCESS_FORBIDDEN = (
    f"Forbidden: admin access to devices requires the `{DRA_ADMIN_NAMESPACE_LABEL}: true` label on the "
    "containing namespace"
)


def references_claims(container: Mapping[str, Any]) -> bool:
    """The container uses at least one of the pod's ResourceClaims (``resources.claims``)."""
    claims = mapping(container.get("resources")).get("claims")
    return isinstance(claims, list) and any(isinstance(c, Mapping) and c.get("name") for c in claims)


def admin_access_violations(
    kind: str, obj: Mapping[str, Any], namespace_labels: Mapping[str, str]
) -> list[tuple[str, str]]:
    """(field, message) for the first device request asking for admin access, when the namespace is not
    labelled for it (upstream reports the first one only)."""
    if namespace_labels.get(DRA_ADMIN_NAMESPACE_LABEL) == "true":
        return []
    spec: object = obj
    for key in CLAIM_SPEC_PATHS[kind]:
        spec = mapping(spec).get(key)
    requests = mapping(mapping(spec).get("devices")).get("requests")
    prefix = ".".join(CLAIM_SPEC_PATHS[kind]) + ".devices.requests"
    for i, request in enumerate(requests if isinstance(requests, list) else []):
        request = mapping(request)
        for path, holder in (
            (f"{prefix}[{i}].exactly", mapping(request.get("exactly"))),
            (f"{prefix}[{i}]", request),
        ):
            if holder.get("adminAccess") is True:
                return [(f"{path}.adminAccess", ADMIN_ACCESS_FORBIDDEN)]
    return []


@dataclass(frozen=True)
class NamespaceQuotas:
    """What a namespace's ResourceQuotas bound, for ``quota_gaps``."""

    gpu_keys: tuple[tuple[str, str], ...]  # (quota, key) of each ``requests.<GPU resource>`` key
    counted: frozenset[str]  # the keys of its quotas without scopes: the only ones that count ResourceClaims


def namespace_quotas(objects: list[tuple[str, Mapping[str, Any]]]) -> dict[str, NamespaceQuotas]:
    """The ResourceQuota objects among ``objects``, by namespace."""
    gpu: dict[str, list[tuple[str, str]]] = {}
    counted: dict[str, set[str]] = {}
    for _, o in objects:
        if o.get("kind") != "ResourceQuota":
            continue
        meta, spec = mapping(o.get("metadata")), mapping(o.get("spec"))
        ns, name, hard = (
            str(meta.get("namespace") or "default"),
            str(meta.get("name") or ""),
            mapping(spec.get("hard")),
        )
        keys = sorted(str(k) for k in hard)  # a YAML key may be a number: sorted as text, as compared
        gpu.setdefault(ns, []).extend((name, k) for k in keys if is_gpu_key(k))
        if not spec.get("scopes") and not spec.get("scopeSelector"):
            counted.setdefault(ns, set()).update(str(k) for k in hard)
    return {ns: NamespaceQuotas(tuple(keys), frozenset(counted.get(ns, ()))) for ns, keys in gpu.items()}


def _device_classes(kind: str, obj: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, deviceClassName) of each request and firstAvailable alternative (v1 ``exactly``, v1beta1 flat)."""
    spec: object = obj
    for key in CLAIM_SPEC_PATHS[kind]:
        spec = mapping(spec).get(key)
    requests = mapping(mapping(spec).get("devices")).get("requests")
    prefix = ".".join(CLAIM_SPEC_PATHS[kind]) + ".devices.requests"
    out = []
    for i, request in enumerate(requests if isinstance(requests, list) else []):
        request = mapping(request)
        alternatives = request.get("firstAvailable")
        holders = [(f"{prefix}[{i}].exactly", mapping(request.get("exactly"))), (f"{prefix}[{i}]", request)]
        if isinstance(alternatives, list):
            holders += [
                (f"{prefix}[{i}].firstAvailable[{j}]", mapping(a)) for j, a in enumerate(alternatives)
            ]
        out += [
            (f"{path}.deviceClassName", str(h["deviceClassName"]))
            for path, h in holders
            if h.get("deviceClassName")
        ]
    return out


def quota_gaps(kind: str, obj: Mapping[str, Any], quotas: NamespaceQuotas | None) -> list[tuple[str, str]]:
    """(field, message) for each device class the claim asks for that the namespace's GPU quota leaves
    uncounted (none when the namespace bounds no GPU resource)."""
    if quotas is None or not quotas.gpu_keys:
        return []
    namespace = str(mapping(obj.get("metadata")).get("namespace") or "default")
    bounds = ", ".join(f"{key} ({quota})" for quota, key in quotas.gpu_keys)
    return [
        (field, f"no ResourceQuota of namespace {namespace} counts the {cls} devices of this {kind}: {bounds} "
                "counts pods' GPU requests, not ResourceClaims (unless, from 1.36, the DeviceClass's "
                f"extendedResourceName is that resource). Fix: add {class_key(cls)} to a ResourceQuota without "
                f"scopes in {namespace}.")
        for field, cls in _device_classes(kind, obj)
        if class_key(cls) not in quotas.counted
    ]  # fmt: skip
