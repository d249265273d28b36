"""The webhook under denial-of-service: five checks over real HTTPS on 127.0.0.1.

1. One idle TCP connection (no TLS handshake) blocks nothing: reviews and ``/healthz`` still answer (the
   stdlib recipe, ``wrap_socket`` on the listening socket, ran the handshake inside ``accept()``).
2. A slow-loris that trickles its headers is cut at the request deadline, and others are served meanwhile.
3. A flood of connections beyond the limit: the server closes the oldest idle ones and keeps answering.
4. ``nvidia.com/gpu: 1e999999999`` is denied at once (an exact power of ten with 10^9 digits froze the
   process, which then ignored SIGTERM); the process still stops on SIGTERM right after.
5. Malformed reviews are denied, not allowed: no ``request``, no ``object`` on CREATE, another
   apiVersion; the response echoes the uid in an ``admission.k8s.io/v1`` AdmissionReview (the shape
   kube-apiserver requires: staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/request/
   admissionreview.go ``VerifyAdmissionResponse``: apiVersion, kind and a matching uid).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubegpu.live.webhook import ClusterFacts, WebhookServer
from tests.admission.battery import pod
from tests.admission.upstream import review
from tests.live.conftest import Component, free_port
from tests.live.webhook_calls import wait_ready

LIMIT = 16


@pytest.fixture
def hook(tls_pair: tuple[Path, Path]) -> Iterator[tuple[WebhookServer, Path]]:
    cert, key = tls_pair
    server = WebhookServer(ClusterFacts(), "127.0.0.1", 0, str(cert), str(key), max_connections=LIMIT)
    server.httpd.REQUEST_S = 1.0  # the deadlines, short for the test (10 s and 5 s by default)
    server.httpd.HANDSHAKE_S = 1.0
    threading.Thread(target=server.httpd.serve_forever, args=(0.05,), daemon=True).start()
    yield server, cert
    server.httpd.shutdown()


def connect(port: int, cert: Path) -> http.client.HTTPSConnection:
    tls = ssl.create_default_context(cafile=str(cert))
    return http.client.HTTPSConnection("127.0.0.1", port, context=tls, timeout=3)


def healthy(port: int, cert: Path) -> bool:
    conn = connect(port, cert)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().read() == b"ok"
    finally:
        conn.close()


def validate(port: int, cert: Path, body: Any) -> dict[str, Any]:
    conn = connect(port, cert)
    try:
        conn.request("POST", "/validate", json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200
        answer: dict[str, Any] = json.loads(response.read())
        return answer
    finally:
        conn.close()


def test_an_idle_tcp_connection_blocks_no_review_and_no_healthz(hook: tuple[WebhookServer, Path]) -> None:
    server, cert = hook
    idle = socket.create_connection(("127.0.0.1", server.port))
    try:
        start = time.monotonic()
        assert healthy(server.port, cert)
        assert validate(server.port, cert, review(pod("ok")))["response"]["allowed"] is True
        assert time.monotonic() - start < 2  # a blocked accept loop would wait out the client's 3 s timeout
    finally:
        idle.close()


def test_a_slow_loris_is_cut_at_the_deadline_while_others_are_served(
    hook: tuple[WebhookServer, Path],
) -> None:
    server, cert = hook
    raw = socket.create_connection(("127.0.0.1", server.port))
    slow = ssl.create_default_context(cafile=str(cert)).wrap_socket(raw, server_hostname="127.0.0.1")
    slow.settimeout(5)
    start = time.monotonic()
    closed_at = None
    for byte in b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n":
        try:
            slow.sendall(bytes([byte]))
        except OSError:
            closed_at = time.monotonic()
            break
        assert healthy(server.port, cert)  # served while the slow one dribbles
        time.sleep(0.1)
        if time.monotonic() - start > 4:
            break
    if closed_at is None:  # the server may close between sends: the next read sees it
        with contextlib.suppress(OSError):
            assert slow.recv(1) == b""
        closed_at = time.monotonic()
    slow.close()
    # REQUEST_S is 1 s and the watchdog checks every 0.25 s: closed well before the 4 s the dribble takes
    assert closed_at - start < 2.5


def test_a_connection_flood_beyond_the_limit_leaves_the_server_answering(
    hook: tuple[WebhookServer, Path],
) -> None:
    server, cert = hook
    flood = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(LIMIT * 4)]
    try:
        time.sleep(0.2)
        assert len(server.httpd.open) <= LIMIT
        assert validate(server.port, cert, review(pod("ok")))["response"]["allowed"] is True
        assert healthy(server.port, cert)
    finally:
        for s in flood:
            s.close()


def test_an_enormous_quantity_is_denied_at_once_and_sigterm_still_stops_the_process(
    tls_pair: tuple[Path, Path], tmp_path: Path
) -> None:
    port = free_port()
    cert, key = tls_pair
    component = Component(
        [sys.executable, "-m", "kubegpu.cli.live_cmd", "webhook", "--tls-cert-file", str(cert),
         "--tls-private-key-file", str(key), "--bind-address", "127.0.0.1", "--port", str(port)],
        tmp_path / "webhook.log",
    )  # fmt: skip
    try:
        wait_ready(port, cert, component)
        for quantity in ("1e999999999", "1E999999999", "9" * 100000, "1e-999999999"):
            body = pod("inf")
            body["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": quantity}}
            start = time.monotonic()
            answer = validate(port, cert, review(body))["response"]
            assert answer["allowed"] is False
            assert "quantity out of range" in answer["status"]["message"]
            assert time.monotonic() - start < 2
        component.proc.terminate()
        component.proc.wait(timeout=5)  # raises TimeoutExpired if SIGTERM were ignored
    finally:
        component.stop()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}, "the AdmissionReview has no request"),
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
          "request": {"uid": "u-1", "operation": "CREATE", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                      "namespace": "ml"}},
         "the AdmissionReview request (CREATE) has no object"),
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
          "request": {"uid": "u-2", "operation": "UPDATE", "object": None}},
         "the AdmissionReview request (UPDATE) has no object"),
        ({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "u-3"}},
         "expected an AdmissionReview admission.k8s.io/v1, got apiVersion 'admission.k8s.io/v1beta1'"),
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"operation": "CREATE", "object": {}}},
         "the AdmissionReview request has no uid"),
    ],
)  # fmt: skip
def test_malformed_reviews_are_denied_with_the_uid_echoed(
    hook: tuple[WebhookServer, Path], body: dict[str, Any], message: str
) -> None:
    server, cert = hook
    uid = (body.get("request") or {}).get("uid", "")
    assert validate(server.port, cert, body) == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {
            "uid": uid,
            "allowed": False,
            "status": {"code": 403, "reason": "Forbidden", "message": message},
        },
    }
