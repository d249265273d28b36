"""deploy/scheduler and deploy/webhook: the manifests parse, meet PodSecurity ``restricted``, and the
scheduler's RBAC allows every API call the scheduler makes — and nothing broader (least privilege).

The RBAC check maps each request the emulated API server recorded during a real scheduling run (bind,
failure, preemption, leader election) to its authorizer attributes, as kube-apiserver's
``RequestInfoFactory`` does (GET collection → list, ``?watch`` → watch, GET object → get, POST → create,
PUT → update, PATCH → patch; subresources as ``pods/binding``), and looks for a rule granting it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.live.apiserver import RunningApiServer, wait_until
from tests.live.conftest import Component, gpu_node, gpu_pod
from tests.live.deploy_manifests import DEPLOY, documents, granted, request_attributes


def all_documents() -> list[dict[str, Any]]:
    return [
        d
        for sub in ("scheduler", "webhook")
        for p in sorted((DEPLOY / sub).glob("*.yaml"))
        for d in documents(p)
    ]


def test_workloads_meet_pod_security_restricted() -> None:
    """PodSecurity ``restricted``: runAsNonRoot, seccomp RuntimeDefault, no privilege escalation, all
    capabilities dropped; and no hostPath, host namespaces or privileged containers."""
    workloads = [d for d in all_documents() if d["kind"] == "Deployment"]
    assert {d["metadata"]["name"] for d in workloads} == {
        "kubegpu-scheduler",
        "kubegpu-extender",
        "kubegpu-webhook",
    }
    for d in workloads:
        spec = d["spec"]["template"]["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert not any(spec.get(k) for k in ("hostNetwork", "hostPID", "hostIPC"))
        assert all("hostPath" not in v for v in spec.get("volumes", []))
        for c in spec["containers"]:
            assert c["securityContext"]["allowPrivilegeEscalation"] is False
            assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
            assert not c["securityContext"].get("privileged")


def test_webhook_configuration_matches_what_the_server_serves() -> None:
    [config] = [d for d in all_documents() if d["kind"] == "ValidatingWebhookConfiguration"]
    [hook] = config["webhooks"]
    assert hook["admissionReviewVersions"] == ["v1"] and hook["sideEffects"] == "None"
    assert hook["clientConfig"]["service"]["path"] == "/validate"
    opt_out = hook["namespaceSelector"]["matchExpressions"][0]
    assert opt_out == {"key": "kubegpu.io/admission", "operator": "NotIn", "values": ["disabled"]}


def test_scheduler_rbac_allows_every_call_it_makes_and_nothing_broad(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    api.emulator.create("nodes", gpu_node("gpu-1"))
    api.emulator.create("pods", gpu_pod("low", 8, node="gpu-1"))
    api.emulator.create("pods", gpu_pod("high", 4, priority=1000))
    blocked = gpu_pod("blocked", 1)
    blocked["spec"]["nodeSelector"] = {"pool": "inference"}
    api.emulator.create("pods", blocked)
    start_scheduler("rbac", "--lease-name", "kubegpu-scheduler")
    wait_until(
        lambda: (api.emulator.get("pods", "ml", "high") or {}).get("spec", {}).get("nodeName"), what="bound"
    )

    docs = documents(DEPLOY / "scheduler" / "scheduler.yaml")
    rules = [r for d in docs if d["kind"] in ("ClusterRole", "Role") for r in d["rules"]]
    calls = {request_attributes(s) for s in api.emulator.served}
    assert {(v, r) for v, _, r, _ in calls} >= {
        ("list", "pods"), ("watch", "nodes"), ("create", "pods/binding"), ("create", "pods/eviction"),
        ("patch", "pods/status"), ("create", "events"), ("get", "leases"), ("update", "leases"),
    }  # fmt: skip
    assert [c for c in calls if not granted(rules, *c)] == []
    for rule in rules:
        assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"]
        assert not {"delete", "deletecollection", "escalate", "bind", "impersonate"} & set(rule["verbs"])


def test_manifests_validate_against_the_kubernetes_1_34_openapi_schema() -> None:
    """kubernetes-validate (strict: unknown fields are errors) with the 1.34 schema, for every API object;
    the KubeSchedulerConfiguration is a component config, checked against kubescheduler.config.k8s.io/v1
    ``Extender``'s field names instead."""
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    # cert-manager's Certificate and Issuer (deploy/webhook/cert-manager.yaml) are CRDs without a schema
    # here; tests/deploy/test_helm_chart.py checks their fields.
    crds = [d for d in all_documents() if d["apiVersion"] == "cert-manager.io/v1"]
    assert sorted(d["kind"] for d in crds) == ["Certificate", "Issuer"]
    for doc in all_documents():
        if doc["kind"] != "KubeSchedulerConfiguration" and doc not in crds:
            kubernetes_validate.validate(doc, "1.34.0", strict=True)
    [config] = [d for d in all_documents() if d["kind"] == "KubeSchedulerConfiguration"]
    extender_fields = {"urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb",
                       "enableHTTPS", "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources", "ignorable"}  # fmt: skip
    [extender] = config["extenders"]
    assert set(extender) <= extender_fields
    assert extender["urlPrefix"].endswith("/kubegpu") and extender["filterVerb"] == "filter"
