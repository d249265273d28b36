"""The Helm chart's webhook and its certificates, rendered by the real helm binary (split from
test_helm_chart.py, same pins): the certificate modes (cert-manager, Helm-generated, reused on upgrade)
wire caBundle as kube-apiserver needs it, and the validating / mutating webhook configurations name the
right service path, resources and namespaces."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import kmock
import pytest
import yaml

from kubegpu.admission import mutate
from tests.deploy.helm_chart import Doc, objects, one, render, set_args
from tests.live.apiserver import RunningApiServer
from tests.live.conftest import write_kubeconfig

# -- webhook and its certificates -------------------------------------------------------------------------


def webhook_configs(docs: list[Doc]) -> list[Doc]:
    return [
        d for d in docs if d["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
    ]


def test_cert_manager_mode_issues_a_certificate_for_the_service_and_injects_its_ca() -> None:
    docs = objects("cert-manager")
    certificate = one(docs, "Certificate", "kubegpu-webhook-tls")
    assert certificate["spec"]["secretName"] == "kubegpu-webhook-tls"  # the Secret the Deployment mounts
    assert "kubegpu-webhook.kubegpu-system.svc" in certificate["spec"]["dnsNames"]
    assert certificate["spec"]["issuerRef"] == {"kind": "Issuer", "name": "kubegpu-webhook-selfsigned"}
    one(docs, "Issuer", "kubegpu-webhook-selfsigned")
    assert not [d for d in docs if d["kind"] == "Secret"]
    (config,) = webhook_configs(docs)
    # cainjector's source annotation names the Certificate as <namespace>/<name>.
    assert config["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "kubegpu-system/kubegpu-webhook-tls"
    }
    assert "caBundle" not in config["webhooks"][0]["clientConfig"]


def test_cert_manager_mode_uses_a_given_issuer() -> None:
    docs = objects("cert-manager-issuer")
    assert one(docs, "Certificate", "kubegpu-webhook-tls")["spec"]["issuerRef"] == {
        "kind": "ClusterIssuer",
        "name": "corp-ca",
    }
    assert not [d for d in docs if d["kind"] == "Issuer"]


def openssl(*args: str, stdin: bytes = b"") -> str:
    binary = shutil.which("openssl")
    assert binary, "openssl is needed to check the generated certificates"
    done = subprocess.run([binary, *args], input=stdin, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def test_helm_mode_generates_a_ca_signed_serving_certificate_and_sets_ca_bundle(tmp_path: Path) -> None:
    docs = objects("mutating")
    secret = one(docs, "Secret", "kubegpu-webhook-tls")
    assert secret["type"] == "kubernetes.io/tls" and set(secret["data"]) == {"ca.crt", "tls.crt", "tls.key"}
    configs = webhook_configs(docs)
    assert {c["kind"] for c in configs} == {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
    for config in configs:
        assert "annotations" not in config["metadata"]
        assert config["webhooks"][0]["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]
    for key in ("ca.crt", "tls.crt", "tls.key"):
        (tmp_path / key).write_bytes(base64.b64decode(secret["data"][key]))
    assert (
        openssl("verify", "-CAfile", str(tmp_path / "ca.crt"), str(tmp_path / "tls.crt"))
        .strip()
        .endswith("OK")
    )
    text = openssl("x509", "-in", str(tmp_path / "tls.crt"), "-noout", "-ext", "subjectAltName")
    assert "DNS:kubegpu-webhook.kubegpu-system.svc" in text
    # the key is the certificate's: same public key
    cert_pub = openssl("x509", "-in", str(tmp_path / "tls.crt"), "-noout", "-pubkey")
    key_pub = openssl("pkey", "-in", str(tmp_path / "tls.key"), "-pubout")
    assert cert_pub == key_pub


def helm_mode_render_against(api: RunningApiServer, tmp_path: Path) -> list[Doc]:
    """``helm template --dry-run=server`` against the emulated API server: the chart's ``lookup`` of the
    webhook Secret reaches the server, as on ``helm upgrade`` (``helm template`` alone never does)."""
    kubeconfig = write_kubeconfig(api, tmp_path)
    out = render.template("--dry-run=server", "--kubeconfig", str(kubeconfig), values=None)
    return [d for d in yaml.safe_load_all(out) if d]


def test_helm_mode_reuses_the_existing_secret_on_upgrade(api: RunningApiServer, tmp_path: Path) -> None:
    stored = one(objects("defaults"), "Secret", "kubegpu-webhook-tls")
    # kmock serves discovery only for registered resources; the API server's entry for Secrets.
    api.emulator.resources["v1/secrets"] = kmock.KubernetesEmulator.ResourceInfo(
        namespaced=True, kind="Secret", singular="secret", verbs=["get", "list", "create", "update"]
    )
    fresh = one(helm_mode_render_against(api, tmp_path), "Secret", "kubegpu-webhook-tls")
    assert fresh["data"]["ca.crt"] != stored["data"]["ca.crt"]  # nothing stored yet: a new CA
    create = urllib.request.Request(
        f"{api.url}/api/v1/namespaces/kubegpu-system/secrets", json.dumps(stored).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(create) as answer:
        assert answer.status in (200, 201)
    upgraded = helm_mode_render_against(api, tmp_path)
    assert one(upgraded, "Secret", "kubegpu-webhook-tls")["data"] == stored["data"]
    (hook,) = one(upgraded, "ValidatingWebhookConfiguration", "kubegpu-webhook")["webhooks"]
    assert hook["clientConfig"]["caBundle"] == stored["data"]["ca.crt"]


def test_mutating_webhook_posts_to_mutate_on_the_same_service() -> None:
    docs = objects("mutating")
    (hook,) = one(docs, "MutatingWebhookConfiguration", "kubegpu-webhook")["webhooks"]
    assert hook["clientConfig"]["service"] == {"name": "kubegpu-webhook", "namespace": "kubegpu-system",
                                               "path": "/mutate", "port": 443}  # fmt: skip
    assert hook["sideEffects"] == "None" and hook["admissionReviewVersions"] == ["v1"]
    (validating,) = one(docs, "ValidatingWebhookConfiguration", "kubegpu-webhook")["webhooks"]
    assert validating["failurePolicy"] == "Ignore" and hook["failurePolicy"] == "Fail"
    assert not [d for d in objects("defaults") if d["kind"] == "MutatingWebhookConfiguration"]


def test_mutating_webhook_covers_pods_and_workload_templates_on_create_and_update() -> None:
    """The rules send /mutate exactly what kubegpu.admission.mutate patches, on CREATE and UPDATE;
    reinvocationPolicy IfNeeded by default (the mutations are idempotent) and only Never or IfNeeded."""
    docs = objects("mutating")
    (hook,) = one(docs, "MutatingWebhookConfiguration", "kubegpu-webhook")["webhooks"]
    matched = {(g, r) for rule in hook["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    assert matched == {
        ("", "pods"), ("", "replicationcontrollers"), ("apps", "deployments"), ("apps", "replicasets"),
        ("apps", "statefulsets"), ("apps", "daemonsets"), ("batch", "jobs"), ("batch", "cronjobs"),
    }  # fmt: skip
    assert matched == {(group, kind.lower() + "s") for group, kind in mutate.MUTATED_KINDS}
    assert {(tuple(r["operations"]), tuple(r["apiVersions"])) for r in hook["rules"]} == {
        (("CREATE", "UPDATE"), ("v1",))
    }
    assert hook["reinvocationPolicy"] == "IfNeeded"
    (validating,) = one(docs, "ValidatingWebhookConfiguration", "kubegpu-webhook")["webhooks"]
    assert hook["namespaceSelector"] == validating["namespaceSelector"]  # the same opt-out label
    with pytest.raises(
        render.RenderError,
        match=re.escape("webhook.mutating.reinvocationPolicy: expected Never or IfNeeded, got Always"),
    ):
        render.template(
            *set_args("mutating"), "--set", "webhook.mutating.reinvocationPolicy=Always", values=None
        )


def test_webhook_never_checks_its_own_namespace_or_kube_system() -> None:
    (hook,) = one(objects("defaults"), "ValidatingWebhookConfiguration", "kubegpu-webhook")["webhooks"]
    assert hook["failurePolicy"] == "Fail"
    assert hook["namespaceSelector"]["matchExpressions"] == [
        {"key": "kubegpu.io/admission", "operator": "NotIn", "values": ["disabled"]},
        {
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kube-system", "kubegpu-system"],
        },
    ]
