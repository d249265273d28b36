"""Who may set the device-assignment annotation: on a Pod (CREATE, UPDATE) and on ``pods/binding``.

The API server copies a Binding's ``metadata.annotations`` onto the pod it binds (kubernetes
pkg/registry/core/pod/storage/storage.go, ``BindingREST.setPodNodeAndMetadata``: "for k, v := range
annotations { pod.Annotations[k] = v }"), so a Binding is a second way to write
``kubegpu.io/allocated-devices``; the webhook reviews ``pods/binding`` CREATE (chart rule) and denies the
annotation there from anyone but kubegpu's scheduler, as on the Pod itself. The AdmissionReview shape is
admission.k8s.io/v1 as kube-apiserver sends it for a subresource (``kind: Binding``, ``subResource: binding``).
"""

from __future__ import annotations

from typing import Any

from kubegpu.admission.lint import LintContext
from kubegpu.live.webhook import Policy, review
from kubegpu.model.names import ALLOCATION_ANNOTATION

SCHEDULER = "system:serviceaccount:kubegpu-system:kubegpu-scheduler"
POLICY = Policy(scheduler_user=SCHEDULER)
DEVICES = '{"nvidia.com/gpu": ["GPU-0"]}'


def binding(user: str, annotations: dict[str, str] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "train-0", "namespace": "ml"}
    if annotations is not None:
        meta["annotations"] = annotations
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "b-1",
            "kind": {"group": "", "version": "v1", "kind": "Binding"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "subResource": "binding",
            "namespace": "ml",
            "operation": "CREATE",
            "userInfo": {"username": user},
            "object": {"apiVersion": "v1", "kind": "Binding", "metadata": meta,
                       "target": {"apiVersion": "v1", "kind": "Node", "name": "gpu-1"}},
        },
    }  # fmt: skip


def pod_update(user: str, old: str | None, new: str | None) -> dict[str, Any]:
    def pod(value: str | None) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": "train-0", "namespace": "ml"}
        if value is not None:
            meta["annotations"] = {ALLOCATION_ANNOTATION: value}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "spec": {"containers": [{"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}  # fmt: skip

    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "namespace": "ml",
            "operation": "UPDATE", "userInfo": {"username": user}, "object": pod(new), "oldObject": pod(old),
        },
    }  # fmt: skip


def allowed(body: dict[str, Any]) -> bool:
    return bool(review(body, LintContext(), POLICY)["response"]["allowed"])


def test_a_tenant_binding_that_carries_the_allocation_annotation_is_denied() -> None:
    answer = review(binding("alice", {ALLOCATION_ANNOTATION: DEVICES}), LintContext(), POLICY)["response"]
    assert answer["allowed"] is False
    assert answer["status"]["message"].startswith(
        f"metadata.annotations[{ALLOCATION_ANNOTATION}]: {ALLOCATION_ANNOTATION} is set by user 'alice': "
        f"only kubegpu's scheduler ({SCHEDULER}) records"
    )


def test_the_schedulers_binding_and_bindings_without_the_annotation_are_allowed() -> None:
    assert allowed(binding(SCHEDULER, {ALLOCATION_ANNOTATION: DEVICES}))
    assert allowed(binding("system:kube-scheduler", None))  # kube-scheduler's own bindings carry none
    assert allowed(binding("alice", {"team": "a"}))


def test_a_pod_update_may_keep_but_not_change_the_annotation_unless_it_is_the_scheduler() -> None:
    assert not allowed(pod_update("alice", None, DEVICES))  # added by a tenant
    assert not allowed(pod_update("alice", DEVICES, '{"nvidia.com/gpu": ["GPU-1"]}'))  # changed
    assert allowed(pod_update("alice", DEVICES, DEVICES))  # carried unchanged (a label edit)
    assert allowed(pod_update(SCHEDULER, None, DEVICES))
