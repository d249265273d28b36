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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
