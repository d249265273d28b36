"""Objects as the API server hands them to an admission webhook, built from upstream manifests.

* ``daemonset_pod``: the Pod the DaemonSet controller creates from a DaemonSet (kubernetes
  ``pkg/controller/daemon/daemon_controller.go`` ``syncNodes`` → ``podControl.CreatePods`` with
  ``metav1.NewControllerRef(ds, controllerKind)``; ``pkg/controller/daemon/util/daemonset_util.go``
  ``CreatePodTemplate``: the template plus the ``controller-revision-hash`` / ``pod-template-generation``
  labels, the default DaemonSet tolerations (``AddOrUpdateDaemonPodTolerations``: not-ready and
  unreachable NoExecute; disk-, memory-, pid-pressure and unschedulable NoSchedule; network-unavailable
  with hostNetwork) and ``ReplaceDaemonSetPodNodeNameNodeAffinity``: a required ``matchFields``
  ``metadata.name In [node]`` term).
* ``review``: an ``admission.k8s.io/v1`` AdmissionReview request (``staging/src/k8s.io/api/admission/v1/
  types.go``): ``uid``, ``kind``, ``resource``, ``subResource``, ``requestKind``, ``namespace``,
  ``operation``, ``userInfo``, ``object``, ``oldObject``, ``dryRun``, ``options``. For the
  ``pods/ephemeralcontainers`` subresource (``kubectl debug``) the object is the whole Pod, kind Pod,
  operation UPDATE.
"""

from __future__ import annotations

import copy
import uuid
from pathlib import Path
from typing import Any

import yaml

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
DAEMONSET_CONTROLLER = "system:serviceaccount:kube-system:daemon-set-controller"
GPU_NODE = "gpu-node-1"
CLUSTER_POLICY_OWNER = {  # what nvidia-validator copies onto its workload pods (cmd/nvidia-validator/main.go)
    "apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "name": "cluster-policy",
    "uid": "0b9f1c1e-6a43-4a4e-9d4c-3f9d0c1c9a10", "controller": True, "blockOwnerDeletion": True,
}  # fmt: skip


def load(relative: str) -> dict[str, Any]:
    """The one object of an upstream fixture file."""
    docs = [d for d in yaml.safe_load_all((FIXTURES / relative).read_text()) if d]
    assert len(docs) == 1, relative
    obj: dict[str, Any] = docs[0]
    return obj


def daemonset(relative: str, namespace: str) -> dict[str, Any]:
    """The DaemonSet as its owner creates it in ``namespace`` (the operator fills in the namespace)."""
    ds = copy.deepcopy(load(relative))
    ds["metadata"]["namespace"] = namespace
    return ds


def daemonset_pod(ds: dict[str, Any], node: str = GPU_NODE) -> dict[str, Any]:
    """The Pod the DaemonSet controller creates for ``node`` (see the module docstring)."""
    template = copy.deepcopy(ds["spec"]["template"])
    spec = template["spec"]
    meta = template.get("metadata") or {}
    tolerations = list(spec.get("tolerations") or [])
    for key, effect in (
        ("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"), ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ):  # fmt: skip
        tolerations.append({"key": key, "operator": "Exists", "effect": effect})
    if spec.get("hostNetwork"):
        tolerations.append(
            {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}
        )
    spec["tolerations"] = tolerations
    spec.setdefault("affinity", {})["nodeAffinity"] = {
        **(spec.get("affinity") or {}).get("nodeAffinity", {}),
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]},
    }  # fmt: skip
    name = ds["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            # validating admission runs after rest.BeforeCreate has generated the name
            "name": f"{name}-7xk2q",
            "generateName": f"{name}-",
            "namespace": ds["metadata"]["namespace"],
            "labels": {**(meta.get("labels") or {}), "controller-revision-hash": "6d4f7c9b8", "pod-template-generation": "1"},
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name,
                                 "uid": "5f0c6f2e-1b7e-4d55-8a0b-0d1f3c7b9e21", "controller": True,
                                 "blockOwnerDeletion": True}],
        },
        "spec": spec,
    }  # fmt: skip


def validator_pod(relative: str, namespace: str = "gpu-operator") -> dict[str, Any]:
    """A workload-validation Pod as nvidia-validator creates it (cmd/nvidia-validator/main.go: the
    validator DaemonSet's ownerReferences, ``spec.nodeName``, the image and resource name filled in)."""
    pod = copy.deepcopy(load(relative))
    pod["metadata"]["namespace"] = namespace
    pod["metadata"]["name"] = pod["metadata"]["generateName"] + "m4v8d"
    pod["metadata"]["ownerReferences"] = [dict(CLUSTER_POLICY_OWNER)]
    pod["spec"]["nodeName"] = GPU_NODE
    for key in ("initContainers", "containers"):
        for c in pod["spec"].get(key) or []:
            c["image"] = "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.3.0"
            limits = (c.get("resources") or {}).get("limits") or {}
            if "FILLED_BY_VALIDATOR" in limits:
                c["resources"]["limits"] = {"nvidia.com/gpu": limits["FILLED_BY_VALIDATOR"]}
    return pod


def review(
    obj: dict[str, Any],
    user: str = "alice",
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
    sub_resource: str = "",
    namespace: str | None = None,
) -> dict[str, Any]:
    """An AdmissionReview v1 request for ``obj`` as kube-apiserver sends it."""
    kind = obj["kind"]
    group, _, version = obj["apiVersion"].rpartition("/")
    plural = {"Pod": "pods", "DaemonSet": "daemonsets", "Deployment": "deployments", "Job": "jobs",
              "ResourceClaim": "resourceclaims", "ResourceClaimTemplate": "resourceclaimtemplates"}[kind]  # fmt: skip
    gvk = {"group": group, "version": version, "kind": kind}
    gvr = {"group": group, "version": version, "resource": plural}
    options_kind = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions"}.get(operation, "DeleteOptions")
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "name": obj["metadata"].get("name", ""),
        "namespace": namespace or obj["metadata"].get("namespace", "default"),
        "operation": operation,
        "userInfo": {"username": user, "uid": f"uid-{user}",
                     "groups": ["system:serviceaccounts", "system:authenticated"] if user.startswith("system:serviceaccount:")
                     else ["system:authenticated"]},
        "object": obj, "oldObject": old, "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": options_kind},
    }  # fmt: skip
    if sub_resource:
        request["subResource"] = sub_resource
        request["requestSubResource"] = sub_resource
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
