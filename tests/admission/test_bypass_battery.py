"""The bypass battery (``tests/admission/battery.py``) through the real HTTPS server with the chart's defaults:
every attempt denied for its reason, every legitimate pod allowed, and the battery at least as wide as
the review that found 33 of 67 attempts getting through and 8 of 26 legitimate pods denied.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubegpu.admission.gpu_access import Exemptions
from kubegpu.live.webhook import ClusterFacts, Policy, WebhookServer, review
from tests.admission.battery import MIG, SCHEDULER_USER, Case, bypasses, legitimate
from tests.admission.upstream import GPU_NODE
from tests.live.conftest import tls_pair  # noqa: F401  (the fixture)

BYPASSES = bypasses()
LEGITIMATE = legitimate()


def cluster() -> ClusterFacts:
    facts = ClusterFacts()
    facts.on_event("Namespace", "SYNC", [
        {"metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns, **extra}}}
        for ns, extra in (("ml", {}), ("gpu-team", {"kubegpu.io/gpu-namespace": "true"}), ("team-a", {}),
                          ("logging", {}), ("storage", {}), ("gpu-operator", {}), ("nvidia-device-plugin", {}))
    ])  # fmt: skip
    facts.on_event("Node", "SYNC", [
        {"metadata": {"name": GPU_NODE, "labels": {"nvidia.com/gpu.present": "true"}},
         "status": {"capacity": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", MIG: "7"}}},
        {"metadata": {"name": "cpu-node-1", "labels": {}}, "status": {"capacity": {"cpu": "32", "memory": "128Gi"}}},
    ])  # fmt: skip
    return facts


@pytest.fixture(scope="module")
def server(tls_pair: tuple[Path, Path]) -> Iterator[tuple[int, Path]]:  # noqa: F811
    cert, key = tls_pair
    hook = WebhookServer(
        cluster(), "127.0.0.1", 0, str(cert), str(key), policy=Policy(Exemptions(), SCHEDULER_USER)
    )
    thread = threading.Thread(target=hook.httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield hook.port, cert
    hook.httpd.shutdown()


def post(server: tuple[int, Path], body: dict[str, Any]) -> dict[str, Any]:
    port, cert = server
    conn = http.client.HTTPSConnection(
        "127.0.0.1", port, context=ssl.create_default_context(cafile=str(cert)), timeout=10
    )
    try:
        conn.request("POST", "/validate", json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200
        answer: dict[str, Any] = json.loads(response.read())
    finally:
        conn.close()
    assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
    assert answer["response"]["uid"] == body["request"]["uid"]
    result: dict[str, Any] = answer["response"]
    return result


def test_the_battery_is_at_least_as_wide_as_the_review() -> None:
    assert len(BYPASSES) >= 67 and len(LEGITIMATE) >= 26
    assert len({c.name for c in BYPASSES}) == len(BYPASSES)
    assert len({c.name for c in LEGITIMATE}) == len(LEGITIMATE)


@pytest.mark.parametrize("case", BYPASSES, ids=lambda c: c.name)
def test_every_bypass_is_denied_for_its_reason(server: tuple[int, Path], case: Case) -> None:
    response = post(server, case.review)
    assert response["allowed"] is False, case.name
    assert response["status"]["code"] == 403 and response["status"]["reason"] == "Forbidden"
    reasons = response["status"]["message"].split("; ")
    assert any(r.startswith(case.field + ": ") and case.phrase in r for r in reasons), reasons


@pytest.mark.parametrize("case", LEGITIMATE, ids=lambda c: c.name)
def test_every_legitimate_pod_is_allowed(server: tuple[int, Path], case: Case) -> None:
    response = post(server, case.review)
    assert response == {"uid": case.review["request"]["uid"], "allowed": True}, response.get("status")


def test_the_operands_pass_because_of_the_exemption_alone() -> None:
    """Without ``webhook.exemptions`` the real operator operands are denied (privileged, hostPath /,
    NVIDIA_VISIBLE_DEVICES=all, CDI annotations): the exemption, not a gap in the rules, lets them in."""
    ctx = cluster().context()
    operands = [c for c in LEGITIMATE if c.name.startswith("operator ")]
    assert len(operands) == 11
    for case in operands:
        answer = review(case.review, ctx, Policy(Exemptions({}), SCHEDULER_USER))["response"]
        assert answer["allowed"] is False, case.name
