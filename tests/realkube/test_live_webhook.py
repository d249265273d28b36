"""``kubegpu webhook`` registered with a real kube-apiserver: a ValidatingWebhookConfiguration and a
MutatingWebhookConfiguration (``admissionregistration.k8s.io/v1``) pointing at ``https://127.0.0.1:<port>``.

What only a real API server shows: its own rule matching (resources, operations, namespaceSelector), the
AdmissionReview it sends, how it relays a denial to the client (``admission webhook "<name>" denied the
request: <message>``, k8s.io/apiserver pkg/admission/plugin/webhook/errors), how it applies the returned
JSONPatch before storing the object, and ``failurePolicy`` when the webhook does not answer. Rule texts are
not pinned here (they are tests/live's); what is pinned is that the API server relays exactly what the
webhook answers for the same object.
"""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubegpu.testing.builders import make_node
from tests.realkube.conftest import controlplane
from tests.realkube.harness import KubegpuProcess, cleanup, create_namespace, create_node, ok

NS = "webhook-e2e"
SELECTOR = {"matchLabels": {"kubegpu-e2e": "webhook"}}  # only this test's namespace goes through the webhook
VALIDATING = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
MUTATING = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"


def gpu_pod(name: str, gpus: int, **container: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}, **container}],
        },
    }  # fmt: skip


class Webhook(KubegpuProcess):
    def __init__(self, d: Path, kubeconfig: Path) -> None:
        self.cert, self.key = d / "tls.crt", d / "tls.key"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", str(self.key), "-out", str(self.cert), "-days", "1", "-subj", "/CN=kubegpu-webhook",
             "-addext", "subjectAltName=IP:127.0.0.1"],
            check=True, capture_output=True, timeout=30,
        )  # fmt: skip
        self.port = controlplane.free_port()
        super().__init__(
            ["webhook", "--tls-cert-file", str(self.cert), "--tls-private-key-file", str(self.key),
             "--bind-address", "127.0.0.1", "--port", str(self.port), "--kubeconfig", str(kubeconfig)],
            d / "webhook.log",
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while True:
            try:
                self.review(gpu_pod("probe", 1))
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"kubegpu webhook did not start:\n{self.log.read_text()[-3000:]}"
                    ) from None
                time.sleep(0.2)

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def review(self, obj: dict[str, Any], path: str = "/validate") -> dict[str, Any]:
        """The webhook's own answer for a CREATE of ``obj`` (what the API server would send, reduced)."""
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
            "uid": "e2e", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"}, "namespace": NS,
            "operation": "CREATE", "object": obj, "userInfo": {"username": "kubernetes-admin"}}}  # fmt: skip
        req = urllib.request.Request(self.url(path), json.dumps(review).encode(), method="POST")
        req.add_header("Content-Type", "application/json")
        ctx = ssl.create_default_context(cafile=str(self.cert))
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            answer: dict[str, Any] = json.loads(r.read())["response"]
        return answer


def registration(kind: str, name: str, hook: Webhook, path: str, policy: str) -> dict[str, Any]:
    webhook: dict[str, Any] = {
        "name": name,
        "clientConfig": {"url": hook.url(path), "caBundle": base64.b64encode(hook.cert.read_bytes()).decode()},
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                   "resources": ["pods"], "scope": "Namespaced"}],
        "namespaceSelector": SELECTOR,
        "failurePolicy": policy,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 5,
    }  # fmt: skip
    if kind == "MutatingWebhookConfiguration":
        webhook["reinvocationPolicy"] = "IfNeeded"
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": [webhook]}  # fmt: skip


@pytest.fixture(scope="module")
def namespace(control_plane: Any) -> Iterator[str]:
    """The labelled namespace, a second one without the label, and one GPU node: the webhook refuses a GPU
    resource no node offers, so the cluster must offer ``nvidia.com/gpu``."""
    ok(
        control_plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": "webhook-probe"}}),
        "probe ns",
    )
    ok(control_plane.request("POST", "/api/v1/namespaces/webhook-probe/serviceaccounts",
                             {"metadata": {"name": "default"}}), "probe sa")  # fmt: skip
    create_namespace(control_plane, NS)
    ok(control_plane.request("PATCH", f"/api/v1/namespaces/{NS}", {"metadata": {"labels": SELECTOR["matchLabels"]}},
                             "application/merge-patch+json"), "namespace label")  # fmt: skip
    node = create_node(control_plane, make_node("webhook-gpu").gpus(8).obj())
    try:
        yield NS
    finally:
        cleanup(control_plane, NS, [node], set())
        cleanup(control_plane, "webhook-probe", [], set())


@pytest.fixture
def hook(control_plane: Any, namespace: str, tmp_path: Path) -> Iterator[Webhook]:
    h = Webhook(tmp_path, control_plane.admin_kubeconfig)
    try:
        deadline = time.monotonic() + 30  # its informers must have seen the node and the namespace label
        while not h.review(gpu_pod("clean", 1))["allowed"]:
            assert time.monotonic() < deadline, h.log.read_text()[-3000:]
            time.sleep(0.2)
        yield h
    finally:
        h.stop()
        for path, name in ((VALIDATING, "validate.kubegpu.io"), (MUTATING, "mutate.kubegpu.io")):
            control_plane.request("DELETE", f"{path}/{name}")


def register(cp: Any, kind: str, hook: Webhook, policy: str = "Fail") -> None:
    path, name, url = {
        "ValidatingWebhookConfiguration": (VALIDATING, "validate.kubegpu.io", "/validate"),
        "MutatingWebhookConfiguration": (MUTATING, "mutate.kubegpu.io", "/mutate"),
    }[kind]
    cp.request("DELETE", f"{path}/{name}")
    ok(cp.request("POST", path, registration(kind, name, hook, url, policy)), f"{kind} {name}")
    time.sleep(1.5)  # the API server picks webhook configurations up from its informer


def create(cp: Any, pod: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return cp.request("POST", f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods", pod)  # type: ignore[no-any-return]


def test_the_api_server_relays_the_webhooks_denial_and_admits_a_clean_pod(
    control_plane: Any, hook: Webhook
) -> None:
    register(control_plane, "ValidatingWebhookConfiguration", hook)
    bad = gpu_pod("bypass", 1, securityContext={"privileged": True})
    direct = hook.review(bad)
    assert direct["allowed"] is False and "privileged" in direct["status"]["message"]
    status, body = create(control_plane, bad)
    # k8s.io/apiserver webhookerrors.ToStatusErr: the webhook's code, and its message behind this prefix
    assert status == direct["status"]["code"] == 403, body["message"]
    assert (
        body["message"]
        == f'admission webhook "validate.kubegpu.io" denied the request: {direct["status"]["message"]}'
    )
    status, body = create(control_plane, gpu_pod("clean", 1))
    assert status == 201, body
    # the namespaceSelector is the API server's: the same pod elsewhere never reaches the webhook
    outside = {**bad, "metadata": {"name": "bypass", "namespace": "webhook-probe"}}
    status, body = create(control_plane, outside)
    assert status == 201, body


def test_the_api_server_stores_the_mutating_webhooks_patch(control_plane: Any, hook: Webhook) -> None:
    register(control_plane, "MutatingWebhookConfiguration", hook)
    pod = gpu_pod("tolerated", 2)
    pod["spec"]["containers"].append({"name": "sidecar", "image": "registry.k8s.io/pause:3.10"})
    direct = hook.review(pod, "/mutate")
    assert direct["allowed"] is True and direct.get("patchType") == "JSONPatch"
    status, stored = create(control_plane, pod)
    assert status == 201, stored["message"]
    # the GPU toleration (ExtendedResourceToleration's shape) and NVIDIA_VISIBLE_DEVICES=void on the container
    # without a GPU, as docs/live.md describes, applied by the API server from the JSONPatch
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in stored["spec"][
        "tolerations"
    ]
    sidecar = next(c for c in stored["spec"]["containers"] if c["name"] == "sidecar")
    assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"} in sidecar.get("env", [])
    main = next(c for c in stored["spec"]["containers"] if c["name"] == "main")
    assert "NVIDIA_VISIBLE_DEVICES" not in {e["name"] for e in main.get("env", [])}


def test_failure_policy_decides_when_the_webhook_is_down(control_plane: Any, hook: Webhook) -> None:
    register(control_plane, "ValidatingWebhookConfiguration", hook, policy="Fail")
    hook.stop()
    status, body = create(control_plane, gpu_pod("while-down", 1))
    # k8s.io/apiserver: `failed calling webhook "<name>": failed to call webhook: Post "<url>?timeout=5s": ...`
    assert status == 500, body
    assert body["message"].startswith('Internal error occurred: failed calling webhook "validate.kubegpu.io"')
    register(control_plane, "ValidatingWebhookConfiguration", hook, policy="Ignore")
    status, body = create(control_plane, gpu_pod("while-down", 1))
    assert status == 201, body
