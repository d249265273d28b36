"""The admission webhook's real HTTPS server over a fixed cluster (namespaces, a GPU node with MIG, a CPU
node) with the chart's default policy, and one AdmissionReview POSTed to it; for the bypass battery and
the tenant QA tests. ``server`` is a fixture: a module using it imports it and ``tls_pair``."""

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
from kubegpu.live.webhook import ClusterFacts, Policy, WebhookServer
from tests.admission.battery import MIG, SCHEDULER_USER
from tests.admission.upstream import GPU_NODE


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
def server(tls_pair: tuple[Path, Path]) -> Iterator[tuple[int, Path]]:
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
