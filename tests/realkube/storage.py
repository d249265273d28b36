"""Storage objects of a fidelity case on the real control plane, made as the absent controllers would leave them.

Cluster-scoped objects get the case's prefix (``c<index>-``) and every reference to them follows (a claim's
class and volume name, a PV's class; a CSINode is named after its renamed node); a PV's ``claimRef`` moves to
the case's namespace. ``status.phase`` (a PV's ``Available``/``Bound``, a claim's ``Bound``) goes through the
``status`` subresource: a POST's status is dropped, and no PV controller is running to set it.

``complete_bindings`` stands in for the PV controller's half of a WaitForFirstConsumer binding: once
kube-scheduler's PreBind has written a PV's ``claimRef`` (``bindAPIUpdate``), it binds the claim to it (volume
name, ``pv.kubernetes.io/bind-completed``, phases Bound) as ``syncUnboundClaim`` would, so PreBind's
``checkBindings`` passes and the pod is bound where the scheduler chose (instead of timing out after 600 s).
It stands in for a CSI external-provisioner too: a claim PreBind gave a node (``volume.kubernetes.io/
selected-node``) gets a PV of its size and class, named ``<prefix>pv-<claim>`` and deleted with the case.

A CSIDriver keeps its name (a StorageClass's provisioner names it; the cases give it a name of their own); a
CSIStorageCapacity moves to the case's namespace and its ``storageClassName`` follows the class's prefix.
"""

from __future__ import annotations

import copy
from typing import Any

Raw = dict[str, Any]

KINDS = (
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
)
_PATHS = {
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "CSINode": "/apis/storage.k8s.io/v1/csinodes",
    "CSIDriver": "/apis/storage.k8s.io/v1/csidrivers",
}
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def _renamed(raw: Raw, ns: str, prefix: str) -> Raw:
    obj = copy.deepcopy(raw)
    kind, spec = obj["kind"], obj.get("spec", {})
    if kind == "CSIStorageCapacity":
        obj["metadata"]["namespace"] = ns
        obj["storageClassName"] = prefix + obj["storageClassName"]
    elif kind not in ("PersistentVolumeClaim", "CSIDriver"):
        obj["metadata"]["name"] = prefix + obj["metadata"]["name"]
    elif kind == "PersistentVolumeClaim":
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
    namespaced = {"CSIStorageCapacity": f"/apis/storage.k8s.io/v1/namespaces/{ns}/csistoragecapacities"}
    path = _PATHS.get(obj["kind"]) or namespaced.get(
        obj["kind"], f"/api/v1/namespaces/{ns}/persistentvolumeclaims"
    )
    ok(cp.request("POST", path, obj), f"{obj['kind']} {name}")
    if status:
        ok(cp.request("PATCH", f"{path}/{name}/status", {"status": status}, "application/merge-patch+json"),
           f"{obj['kind']} {name} status")  # fmt: skip
    return path, name


def provision(cp: Any, ns: str, prefix: str, made: list[str]) -> None:
    """Give each claim of ``ns`` that PreBind sent to a node and that has no volume a PV of its size and class
    with a ``claimRef`` to it (as external-provisioner does), appending its name to ``made``; the binding is
    then completed like any other (``complete_bindings``)."""
    from tests.realkube.harness import ok

    claims = ok(cp.request("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims"), "list claims")
    for pvc in claims.get("items", []):
        meta, spec = pvc["metadata"], pvc["spec"]
        name = f"{prefix}pv-{meta['name']}"
        if SELECTED_NODE not in meta.get("annotations", {}) or spec.get("volumeName") or name in made:
            continue
        pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
              "spec": {"storageClassName": spec["storageClassName"], "accessModes": spec["accessModes"],
                       "capacity": {"storage": spec["resources"]["requests"]["storage"]},
                       "persistentVolumeReclaimPolicy": "Delete",
                       "csi": {"driver": "provisioned.example.com", "volumeHandle": name},
                       "claimRef": {"kind": "PersistentVolumeClaim", "namespace": ns, "name": meta["name"],
                                    "uid": meta["uid"]}}}  # fmt: skip
        ok(cp.request("POST", "/api/v1/persistentvolumes", pv), f"PV {name}")
        made.append(name)


def complete_bindings(cp: Any, ns: str, pvs: list[str]) -> None:
    """Bind each claim of ``ns`` that one of ``pvs`` (initially Available) now refers to by ``claimRef``."""
    from tests.realkube.harness import ok

    for pv_name in pvs:
        status, pv = cp.request("GET", f"/api/v1/persistentvolumes/{pv_name}")
        ref = pv.get("spec", {}).get("claimRef") if status == 200 else None
        if not ref or ref.get("namespace") != ns or pv.get("status", {}).get("phase") == "Bound":
            continue
        path = f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{ref['name']}"
        pvc = ok(cp.request("GET", path), f"claim {ref['name']}")
        if not pvc["spec"].get("volumeName"):
            patch = {"metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
                     "spec": {"volumeName": pv_name}}  # fmt: skip
            ok(cp.request("PATCH", path, patch, "application/merge-patch+json"), f"bind claim {ref['name']}")
        spec = pv["spec"]
        done = {
            "status": {
                "phase": "Bound",
                "accessModes": spec.get("accessModes", []),
                "capacity": spec.get("capacity", {}),
            }
        }
        ok(cp.request("PATCH", f"{path}/status", done, "application/merge-patch+json"), "claim status")
        ok(cp.request("PATCH", f"/api/v1/persistentvolumes/{pv_name}/status", {"status": {"phase": "Bound"}},
                      "application/merge-patch+json"), f"PV {pv_name} status")  # fmt: skip
