"""``kubegpu webhook``: a validating admission webhook (AdmissionReview ``admission.k8s.io/v1``) over HTTPS.

The API server POSTs an ``AdmissionReview`` whose ``request`` carries ``uid``, ``kind``, ``namespace``,
``operation`` and ``object``; the webhook answers the same ``AdmissionReview`` kind with
``response: {uid, allowed}`` and, when it denies, ``status: {code: 403, reason: Forbidden, message}``.
The API server shows a denial as ``admission webhook "<webhook name>" denied the request: <message>``.
The rules are ``kubegpu.admission.lint`` (the same as ``kubegpu lint``); the message lists every
violation as ``<field>: <problem and fix>``, joined by ``"; "``.

Namespace labels (the ``kubegpu.io/admission=disabled`` opt-out, ``kubegpu.io/gpu-namespace=true``) and
the nodes (labels, offered resource names) come from Namespace and Node informers when the webhook is
given API access; without it, labels are unknown (opt-out then relies on the webhook configuration's
``namespaceSelector``, which deploy/webhook sets) and the ``unknown-resource`` and
``pool-sharing-mode`` rules are off.
The request's ``userInfo`` decides the exemptions (``kubegpu.admission.gpu_access``: DaemonSet pods of the
exempt namespaces, created by the DaemonSet controller) and who may record allocations; the
``pods/ephemeralcontainers`` subresource sends the Pod and is checked as one. A review that cannot be
judged (no ``request``, ``uid`` or ``object``, another apiVersion) is denied, never allowed.
DELETE and CONNECT operations are always allowed. An UPDATE is denied only for violations its
``oldObject`` does not already have, so that an object admitted before a rule existed (or while the
webhook was down) can still be updated — above all, have its finalizers removed when it is deleted;
what the update adds is checked in full. ``/healthz`` answers ``ok``.

``POST /mutate`` is the mutating side (``kubegpu.admission.mutate``): for a Pod or a workload's pod
template, on CREATE and UPDATE, it answers ``response: {uid, allowed: true, patchType: JSONPatch,
patch: <base64 of the RFC 6902 operations>}`` (no ``patch`` when nothing changes, and only what the
API server lets that operation change); other kinds, subresources and operations are allowed unchanged.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import logging
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest

from kubegpu.admission.gpu_access import Exemptions, Requester
from kubegpu.admission.lint import LintContext, NodeFacts, facts_of, lint_object
from kubegpu.admission.mutate import MutationOptions, mutate_object
from kubegpu.errors import InputError, json_document
from kubegpu.http_reply import ReplyHandler
from kubegpu.kube.client import KubeApi
from kubegpu.kube.informer import SYNC, Reflector
from kubegpu.kube.listed_kinds import LISTED_KINDS

log = logging.getLogger(__name__)

REVIEW_API_VERSION = "admission.k8s.io/v1"
MAX_BODY = 3 * 1024 * 1024  # the API server's request size limit


class ClusterFacts:
    """Namespace labels and offered resource names, kept current by informers (or fixed, offline)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.labels: dict[str, Mapping[str, str]] | None = None
        self.nodes: dict[str, NodeFacts] | None = None

    def context(self) -> LintContext:
        with self._lock:
            nodes = tuple(self.nodes.values()) if self.nodes is not None else None
            return LintContext(namespace_labels=self.labels, nodes=nodes)

    def on_event(self, kind: str, event_type: str, items: list[dict[str, Any]]) -> None:
        with self._lock:
            if kind == "Namespace":
                labels = {} if event_type == SYNC or self.labels is None else dict(self.labels)
                for item in items:
                    meta = item.get("metadata") or {}
                    if event_type == "DELETED":
                        labels.pop(str(meta.get("name")), None)
                    else:
                        labels[str(meta.get("name"))] = dict(meta.get("labels") or {})
                self.labels = labels
            elif kind == "Node":
                nodes = {} if event_type == SYNC or self.nodes is None else dict(self.nodes)
                for item in items:
                    name = str((item.get("metadata") or {}).get("name"))
                    if event_type == "DELETED":
                        nodes.pop(name, None)
                    else:
                        nodes[name] = facts_of(item)
                self.nodes = nodes


def _answer(
    uid: str, message: str = "", patch: list[dict[str, Any]] | None = None, warnings: list[str] | None = None
) -> dict[str, Any]:
    """The AdmissionReview response envelope: allowed unless ``message`` (403 Forbidden, as ``status``),
    with ``patch`` as a base64 JSONPatch when there is one (``/mutate``), and ``warnings`` (shown by kubectl
    as ``Warning: …``; admission.k8s.io/v1 AdmissionResponse.warnings) when there are any."""
    response: dict[str, Any] = {"uid": uid, "allowed": not message}
    if message:
        response["status"] = {"code": 403, "reason": "Forbidden", "message": message}
    if warnings:
        response["warnings"] = warnings
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return {"apiVersion": REVIEW_API_VERSION, "kind": "AdmissionReview", "response": response}


def malformed(body: Mapping[str, Any]) -> str:
    """Why an AdmissionReview cannot be judged ("" when it can): a review the webhook cannot read is denied,
    never allowed (a request without ``object`` would otherwise pass every rule unseen)."""
    request = body.get("request")
    if body.get("apiVersion") != REVIEW_API_VERSION:
        return f"expected an AdmissionReview {REVIEW_API_VERSION}, got apiVersion {body.get('apiVersion')!r}"
    if not isinstance(request, Mapping):
        return "the AdmissionReview has no request"
    if not isinstance(request.get("uid"), str) or not request.get("uid"):
        return "the AdmissionReview request has no uid"
    if request.get("operation") in ("CREATE", "UPDATE") and not isinstance(request.get("object"), Mapping):
        return f"the AdmissionReview request ({request.get('operation')}) has no object"
    return ""


def review(body: Mapping[str, Any], ctx: LintContext, policy: Policy | None = None) -> dict[str, Any]:
    """The AdmissionReview answer to one AdmissionReview request."""
    policy = policy or Policy()
    request = body.get("request")
    uid = str(request.get("uid") or "") if isinstance(request, Mapping) else ""
    problem = malformed(body)
    if problem or not isinstance(request, Mapping):
        return _answer(uid, problem or "the AdmissionReview has no request")
    if request.get("operation") not in ("CREATE", "UPDATE"):
        return _answer(uid)
    info = request.get("userInfo")
    user = info.get("username") if isinstance(info, Mapping) else None
    old = request.get("oldObject")
    old_meta = old.get("metadata") if isinstance(old, Mapping) else None
    old_annotations = old_meta.get("annotations") if isinstance(old_meta, Mapping) else None
    ctx = dataclasses.replace(
        ctx,
        requester=Requester(str(user)) if isinstance(user, str) else None,
        exemptions=policy.exemptions,
        scheduler_user=policy.scheduler_user,
        old_annotations=old_annotations if isinstance(old_annotations, Mapping) else {},
    )
    obj = _in_namespace(request.get("object"), request)
    try:
        violations = lint_object(obj, ctx)
        if violations and request.get("operation") == "UPDATE" and isinstance(old, Mapping):
            existing = set(lint_object(_in_namespace(old, request), ctx))
            violations = [v for v in violations if v not in existing]
    except Exception as exc:  # an object the rules cannot read is denied, never dropped
        log.exception("review %s: the rules failed on the object", uid)
        return _answer(uid, f"kubegpu could not check this object ({type(exc).__name__}): denied")
    denials = [str(v) for v in violations if not v.warning]
    return _answer(uid, "; ".join(denials), warnings=[str(v) for v in violations if v.warning])


def _in_namespace(obj: Any, request: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` with the request's namespace (on CREATE the object may carry none yet) and its kind (the
    ``pods/ephemeralcontainers`` subresource sends the Pod; ``request.kind`` says what the object is)."""
    out = dict(obj) if isinstance(obj, Mapping) else {}
    kind = request.get("kind")
    out.setdefault("kind", str(kind.get("kind") or "") if isinstance(kind, Mapping) else "")
    meta = out.get("metadata")
    namespace = request.get("namespace")
    out["metadata"] = {**(meta if isinstance(meta, Mapping) else {}),
                       "namespace": namespace if isinstance(namespace, str) and namespace else "default"}  # fmt: skip
    return out


def mutate_review(body: Mapping[str, Any], ctx: LintContext, options: MutationOptions) -> dict[str, Any]:
    """The AdmissionReview answer of ``/mutate``: always allowed, with a JSON Patch when something changes."""
    request = body.get("request")
    if not isinstance(request, Mapping) or malformed(body):
        # nothing to patch in a review that cannot be read; /validate denies it
        uid = request.get("uid") if isinstance(request, Mapping) else ""
        return _answer(str(uid or ""))
    kind: Mapping[str, Any] = request["kind"] if isinstance(request.get("kind"), Mapping) else {}
    patch = None
    if not request.get("subResource"):
        namespace = str(request.get("namespace") or "default")
        labels = None if ctx.namespace_labels is None else ctx.namespace_labels.get(namespace, {})
        patch = mutate_object(
            (str(kind.get("group") or ""), str(kind.get("kind") or "")),
            str(request.get("operation") or ""),
            request.get("object") or {},
            request.get("oldObject"),
            labels,
            options,
        )
    return _answer(str(request.get("uid") or ""), patch=patch)


def answer_body(
    path: str, raw: bytes, ctx: LintContext, policy: Policy, mutation: MutationOptions
) -> tuple[int, dict[str, Any]]:
    """The HTTP status and JSON answer to one POSTed body: 400 for a body that is not an AdmissionReview
    (not JSON, nested too deeply, another kind), else 200 with the review (``/validate``) or patch (``/mutate``)."""
    try:
        # UTF-8 only (RFC 8259, and what the API server sends): json.loads would guess UTF-16 from bytes
        body = json_document(raw.decode("utf-8"), "the request body")
    except (UnicodeDecodeError, InputError) as exc:
        return 400, {"error": str(exc) if isinstance(exc, InputError) else "the body is not UTF-8 JSON"}
    if not isinstance(body, dict) or body.get("kind") != "AdmissionReview":
        return 400, {"error": "expected an AdmissionReview"}
    if path == "/mutate":
        try:
            return 200, mutate_review(body, ctx, mutation)
        except Exception:  # nothing to patch in what cannot be read; /validate denies it
            log.exception("mutate: the object could not be read")
            request = body.get("request")
            return 200, _answer(str(request.get("uid") or "") if isinstance(request, Mapping) else "")
    return 200, review(body, ctx, policy)


@dataclass(frozen=True)
class Limits:
    """What one client may cost the server (chart values ``webhook.limits``; flags of ``kubegpu webhook``)."""

    max_body: int = MAX_BODY  # bytes of one AdmissionReview; larger bodies are answered 400 unread
    handshake_s: float = 5.0  # a TLS handshake
    request_s: float = 10.0  # from a request's first byte to its answer
    idle_s: float = 30.0  # between keep-alive requests
    max_connections: int = 256  # open at once; beyond it the oldest idle one is closed


@dataclass(frozen=True)
class Policy:
    """What the chart configures about who may do what (``webhook.exemptions``, the scheduler's account)."""

    exemptions: Exemptions = field(default_factory=Exemptions)
    scheduler_user: str = ""


class _Connections(ThreadingHTTPServer):
    """An HTTPS server whose accept loop only accepts: the TLS handshake, every read and every write run in
    the connection's own thread under deadlines, and at most ``max_connections`` are open.

    ``ssl.wrap_socket`` on the listening socket (the stdlib recipe) performs the handshake inside
    ``accept()``, so one idle TCP connection stalls every review and ``/healthz``. Here a connection has
    ``HANDSHAKE_S`` for its handshake and ``REQUEST_S`` from the start of each request to its answer
    (a slow-loris that trickles bytes is cut at the deadline however slowly it sends), ``IDLE_S`` between
    keep-alive requests, and when ``max_connections`` are open the oldest one not answering a request is
    closed to make room, so a flood of connections can delay but never lock out the API server.
    """

    daemon_threads = True
    HANDSHAKE_S = 5.0
    REQUEST_S = 10.0
    IDLE_S = 30.0

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext,
                 max_connections: int, limits: Limits | None = None) -> None:  # fmt: skip
        self.tls = tls
        self.max_connections = max_connections
        if limits is not None:  # instance values shadow the class defaults
            self.HANDSHAKE_S, self.REQUEST_S, self.IDLE_S = (
                limits.handshake_s,
                limits.request_s,
                limits.idle_s,
            )
        self.lock = threading.Lock()
        # socket -> (deadline, busy answering a request, opened at)
        self.open: dict[socket.socket, tuple[float, bool, float]] = {}
        super().__init__(address, handler)
        threading.Thread(target=self._watchdog, name="webhook-deadlines", daemon=True).start()

    def set_deadline(self, sock: socket.socket, seconds: float, busy: bool) -> None:
        with self.lock:
            if sock in self.open:
                self.open[sock] = (time.monotonic() + seconds, busy, self.open[sock][2])

    def process_request(self, request: Any, client_address: Any) -> None:
        now = time.monotonic()
        with self.lock:
            victim = None
            if len(self.open) >= self.max_connections:
                idle = [(opened, s) for s, (_, busy, opened) in self.open.items() if not busy]
                victim = min(idle, key=lambda x: x[0])[1] if idle else request
                # counted out now, not when its thread gets to ``shutdown_request``: under load that thread
                # can lag the accept loop, and the count is what keeps the next connections in check
                self.open.pop(victim, None)
            if victim is not request:
                self.open[request] = (now + self.HANDSHAKE_S, False, now)
        if victim is not None:
            _close(victim)
            if victim is request:
                return
        super().process_request(request, client_address)

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(self.HANDSHAKE_S)
        try:
            conn = self.tls.wrap_socket(request, server_side=True)
        except (OSError, ValueError):
            return  # a failed or abandoned handshake: the client's problem, nobody else's
        conn.settimeout(self.IDLE_S)
        with self.lock:
            if request in self.open:
                self.open[conn] = self.open.pop(request)
        self.set_deadline(conn, self.IDLE_S, busy=False)
        try:
            super().finish_request(conn, client_address)
        finally:
            with self.lock:
                self.open.pop(conn, None)
            _close(conn)

    def shutdown_request(self, request: Any) -> None:
        with self.lock:
            self.open.pop(request, None)
        _close(request)

    def _watchdog(self) -> None:
        while True:
            time.sleep(0.25)
            now = time.monotonic()
            with self.lock:
                late = [s for s, (deadline, _, _) in self.open.items() if deadline < now]
            for sock in late:
                _close(sock)


def _close(sock: socket.socket) -> None:
    """Shut down (which wakes a thread blocked reading it) and close; it may be gone already."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


class WebhookServer:
    def __init__(
        self,
        facts: ClusterFacts,
        host: str,
        port: int,
        cert_file: str,
        key_file: str,
        mutation: MutationOptions | None = None,
        policy: Policy | None = None,
        max_connections: int | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.facts = facts
        self.limits = limits or Limits()
        if max_connections is None:
            max_connections = self.limits.max_connections
        self.mutation = mutation or MutationOptions()
        self.policy = policy or Policy()
        self.registry = CollectorRegistry(auto_describe=True)
        self.latency = Histogram(
            "kubegpu_webhook_admission_duration_seconds",
            "Time to answer one AdmissionReview, by whether it was allowed.",
            ["allowed"],
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25),
            registry=self.registry,
        )
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.minimum_version = ssl.TLSVersion.TLSv1_2
        tls.load_cert_chain(cert_file, key_file)
        self.httpd = _Connections((host, port), self._handler(), tls, max_connections, self.limits)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(ReplyHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: the API server reuses connections
            # headers and body go out as separate writes: without TCP_NODELAY, Nagle plus delayed ACK
            # adds ~40 ms to every keep-alive round trip
            disable_nagle_algorithm = True

            def handle_one_request(self) -> None:
                # a keep-alive connection may wait IDLE_S for its next request; once its first byte is
                # here, the whole request has REQUEST_S, however slowly the rest trickles in
                try:
                    ready = self.rfile.peek(1)  # type: ignore[attr-defined]  # a BufferedReader
                except OSError:
                    ready = b""
                if not ready:
                    self.close_connection = True
                    return
                server.httpd.set_deadline(self.connection, server.httpd.REQUEST_S, busy=True)
                try:
                    super().handle_one_request()
                finally:
                    server.httpd.set_deadline(self.connection, server.httpd.IDLE_S, busy=False)

            def do_GET(self) -> None:
                if self.path == "/healthz":
                    self.reply(200, b"ok", "text/plain; charset=utf-8")
                elif self.path == "/metrics":
                    self.reply(200, generate_latest(server.registry), CONTENT_TYPE_LATEST)
                else:
                    self.reply(404, b"404 page not found\n", "text/plain; charset=utf-8")

            def do_POST(self) -> None:
                start = time.perf_counter()
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                except ValueError:
                    length = -1
                # kube-apiserver posts to `<path>?timeout=<timeoutSeconds>s` (client-go rest.Request.Timeout)
                path = self.path.partition("?")[0]
                known = path in ("/validate", "/mutate")
                if not known or not 0 < length <= server.limits.max_body:
                    self.close_connection = True  # an unread body must not be taken for the next request
                    self.reply(400 if known else 404, b"{}", "application/json")
                    return
                status, answer = answer_body(
                    path, self.rfile.read(length), server.facts.context(), server.policy, server.mutation
                )
                self.reply(status, json.dumps(answer).encode(), "application/json")
                if status == 200:
                    allowed = "true" if answer["response"]["allowed"] else "false"
                    server.latency.labels(allowed).observe(time.perf_counter() - start)

        return Handler


def start_informers(api: KubeApi, facts: ClusterFacts, stop: threading.Event) -> None:
    """Namespace and Node informers feeding ``facts`` (daemon threads)."""
    for listed in LISTED_KINDS:
        if listed.kind in ("Namespace", "Node"):
            reflector = Reflector(api, listed, facts.on_event, stop)
            threading.Thread(target=reflector.run, name=f"reflector-{listed.kind}", daemon=True).start()
