"""The chart's webhook defaults: what it exempts, who may record allocations, which resources it reviews.

The exempt namespaces and service accounts in values.yaml must reach the webhook unchanged (the command
parses them into the same ``Exemptions`` as its built-in default, which the bypass battery runs with);
the scheduler's own service account is the one user allowed to set the allocation annotation; and
``pods/ephemeralcontainers`` is registered, or ``kubectl debug`` containers are never reviewed.
"""

from __future__ import annotations

from kubegpu.admission.gpu_access import DEFAULT_EXEMPT, Exemptions
from kubegpu.cli.live_cmd import webhook
from tests.deploy.helm_chart import container, objects, one


def test_the_default_exemptions_and_scheduler_user_reach_the_webhook() -> None:
    docs = objects("defaults")
    args = container(docs, "Deployment", "kubegpu-webhook")["args"]
    # stand-in TLS files: the ones the chart names exist only in the pod
    tls = [f"--tls-cert-file={__file__}", f"--tls-private-key-file={__file__}"]
    params = webhook.make_context(
        "webhook", [*tls, *(a for a in args[1:] if not a.startswith("--tls"))]
    ).params
    assert Exemptions.parse(list(params["exempt_daemonsets"])).namespaces == dict(DEFAULT_EXEMPT)
    scheduler_sa = one(docs, "ServiceAccount", "kubegpu-scheduler")["metadata"]
    assert params["scheduler_user"] == f"system:serviceaccount:{scheduler_sa['namespace']}:kubegpu-scheduler"


def test_the_validating_webhook_reviews_ephemeral_containers() -> None:
    config = one(objects("defaults"), "ValidatingWebhookConfiguration", "kubegpu-webhook")
    (hook,) = config["webhooks"]
    core = [r for r in hook["rules"] if r["apiGroups"] == [""]]
    assert any("pods/ephemeralcontainers" in r["resources"] and "UPDATE" in r["operations"] for r in core)


def test_the_validating_webhook_reviews_bindings() -> None:
    """pods/binding CREATE: a Binding's annotations land on the pod (tests/admission/test_allocation_binding)."""
    config = one(objects("defaults"), "ValidatingWebhookConfiguration", "kubegpu-webhook")
    (hook,) = config["webhooks"]
    assert any(r["resources"] == ["pods/binding"] and r["operations"] == ["CREATE"] for r in hook["rules"])


def test_the_chart_limits_reach_the_webhook_server() -> None:
    """values.yaml webhook.limits → the command's flags → the server's Limits (3 MiB is kube-apiserver's
    request size limit; the request timeout stays above the API server's timeoutSeconds of 5)."""
    from kubegpu.live.webhook import Limits

    args = container(objects("defaults"), "Deployment", "kubegpu-webhook")["args"]
    tls = [f"--tls-cert-file={__file__}", f"--tls-private-key-file={__file__}"]
    params = webhook.make_context(
        "webhook", [*tls, *(a for a in args[1:] if not a.startswith("--tls"))]
    ).params
    limits = Limits(params["max_body_bytes"], params["handshake_timeout"], params["request_timeout"],
                    params["idle_timeout"], params["max_connections"])  # fmt: skip
    assert limits == Limits(
        max_body=3 * 1024 * 1024, handshake_s=5.0, request_s=10.0, idle_s=30.0, max_connections=256
    )
