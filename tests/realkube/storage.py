"""Storage objects of a fidelity case on the real control plane, made as the absent controllers would leave them.

Cluster-scoped objects get the case's prefix (``c<index>-``) and every reference to them follows (a claim's
class and volume name, a PV's class; a CSINode is named after its renamed node); a PV's ``claimRef`` moves to
the case's namespace. ``status.phase`` (a PV's ``Available``/``Bound``, a claim's ``Bound``) goes through the
``status`` subresource: a POST's status is dropped, and no PV controller is running to set it.
"""

from __future__ import annotations

import copy
from typing import Any

Raw = dict[str, Any]

KINDS = ("StorageClass", "PersistentVolume", "PersistentVolumeClaim", "CSINode")
_PATHS = {
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "CSINode": "/apis/storage.k8s.io/v1/csinodes",
}


def _renamed(raw: Raw, ns: str, prefix: str) -> Raw:
    obj = copy.deepcopy(raw)
    kind, spec = obj["kind"], obj.get("spec", {})
    if kind != "PersistentVolumeClaim":
        obj["metadata"]["name"] = prefix + obj["metadata"]["name"]
    else:
        obj["metadata"]["namespace"] = ns
        if spec.get("volumeName"):
            spec["volumeName"] = prefix + spec["volumeName"]
    if spec.get("storageClassName"):
        spec["storageClassName"] = prefix + spec["storageClassName"]
    if spec.get("claimRef"):
        spec["claimRef"]["namespace"] = ns
    return obj


def create(cp: Any, raw: Raw, ns: str, prefix: str) -> tuple[str, str]:
    """Create one storage object (and its status); returns (collection path, name) for cleanup."""
    from tests.realkube.harness import ok

    obj = _renamed(raw, ns, prefix)
    status = obj.pop("status", None)
    name = obj["metadata"]["name"]
    path = _PATHS.get(obj["kind"], f"/api/v1/namespaces/{ns}/persistentvolumeclaims")
    ok(cp.request("POST", path, obj), f"{obj['kind']} {name}")
    if status:
        ok(cp.request("PATCH", f"{path}/{name}/status", {"status": status}, "application/merge-patch+json"),
           f"{obj['kind']} {name} status")  # fmt: skip
    return path, name
