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
import json
import logging
import ssl
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest

from kubegpu.admission.lint import LintContext, NodeFacts, Violation, facts_of, lint_object
from kubegpu.admission.mutate import MutationOptions, mutate_object
from kubegpu.http_reply import ReplyHandler
from kubegpu.kube.client import KubeApi
from kubegpu.kube.informer import SYNC, Reflector
from kubegpu.kube.live import LISTED_KINDS

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


def review(body: Mapping[str, Any], ctx: LintContext) -> dict[str, Any]:
    """The AdmissionReview answer to one AdmissionReview request."""
    request = body.get("request") or {}
    uid = str(request.get("uid") or "")
    violations: list[Violation] = []
    if request.get("operation") in ("CREATE", "UPDATE"):
        violations = lint_object(_in_namespace(request.get("object"), request), ctx)
        if violations and request.get("operation") == "UPDATE" and request.get("oldObject"):
            existing = set(lint_object(_in_namespace(request.get("oldObject"), request), ctx))
            violations = [v for v in violations if v not in existing]
    response: dict[str, Any] = {"uid": uid, "allowed": not violations}
    if violations:
        response["status"] = {
            "code": 403,
            "reason": "Forbidden",
            "message": "; ".join(str(v) for v in violations),
        }
    return {"apiVersion": REVIEW_API_VERSION, "kind": "AdmissionReview", "response": response}


def _in_namespace(obj: Any, request: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` with the request's namespace: on CREATE the object may carry none yet."""
    out = dict(obj) if isinstance(obj, Mapping) else {}
    out["metadata"] = {**(out.get("metadata") or {}), "namespace": request.get("namespace") or "default"}
    return out


def mutate_review(body: Mapping[str, Any], ctx: LintContext, options: MutationOptions) -> dict[str, Any]:
    """The AdmissionReview answer of ``/mutate``: always allowed, with a JSON Patch when something changes."""
    request = body.get("request") or {}
    response: dict[str, Any] = {"uid": str(request.get("uid") or ""), "allowed": True}
    kind = request.get("kind") or {}
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
        if patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return {"apiVersion": REVIEW_API_VERSION, "kind": "AdmissionReview", "response": response}


class WebhookServer:
    def __init__(
        self,
        facts: ClusterFacts,
        host: str,
        port: int,
        cert_file: str,
        key_file: str,
        mutation: MutationOptions | None = None,
    ) -> None:
        self.facts = facts
        self.mutation = mutation or MutationOptions()
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
        self.httpd = ThreadingHTTPServer((host, port), self._handler())
        self.httpd.daemon_threads = True
        self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)

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

            def do_GET(self) -> None:
                if self.path == "/healthz":
                    self.reply(200, b"ok", "text/plain; charset=utf-8")
                elif self.path == "/metrics":
                    self.reply(200, generate_latest(server.registry), CONTENT_TYPE_LATEST)
                else:
                    self.reply(404, b"404 page not found\n", "text/plain; charset=utf-8")

            def do_POST(self) -> None:
                start = time.perf_counter()
                length = int(self.headers.get("Content-Length") or 0)
                # kube-apiserver posts to `<path>?timeout=<timeoutSeconds>s` (client-go rest.Request.Timeout)
                path = self.path.partition("?")[0]
                known = path in ("/validate", "/mutate")
                if not known or not 0 < length <= MAX_BODY:
                    self.reply(400 if known else 404, b"{}", "application/json")
                    return
                try:
                    body = json.loads(self.rfile.read(length))
                except ValueError:
                    self.reply(400, b'{"error": "the body is not JSON"}', "application/json")
                    return
                if not isinstance(body, dict) or body.get("kind") != "AdmissionReview":
                    self.reply(400, b'{"error": "expected an AdmissionReview"}', "application/json")
                    return
                if path == "/mutate":
                    answer = mutate_review(body, server.facts.context(), server.mutation)
                else:
                    answer = review(body, server.facts.context())
                self.reply(200, json.dumps(answer).encode(), "application/json")
                allowed = "true" if answer["response"]["allowed"] else "false"
                server.latency.labels(allowed).observe(time.perf_counter() - start)

        return Handler


def start_informers(api: KubeApi, facts: ClusterFacts, stop: threading.Event) -> None:
    """Namespace and Node informers feeding ``facts`` (daemon threads)."""
    for listed in LISTED_KINDS:
        if listed.kind in ("Namespace", "Node"):
            reflector = Reflector(api, listed, facts.on_event, stop)
            threading.Thread(target=reflector.run, name=f"reflector-{listed.kind}", daemon=True).start()
