"""Calling the webhook as kube-apiserver does: an AdmissionReview for an object, POSTed over TLS, the
server started and waited for, a JSONPatch reply applied; shared by the webhook test modules."""

from __future__ import annotations

import copy
import json
import ssl
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.live.apiserver import wait_until
from tests.live.conftest import Component, free_port


def admission_review(
    obj: dict[str, Any],
    namespace: str = "ml",
    operation: str = "CREATE",
    uid: str = "705ab4f5-6393-11e8-b7cc-42010a800002",
) -> dict[str, Any]:
    kind = obj["kind"]
    group, _, version = obj["apiVersion"].rpartition("/")
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
            "requestKind": {"group": group, "version": version, "kind": kind},
            "requestResource": {"group": group, "version": version, "resource": kind.lower() + "s"},
            "name": obj["metadata"]["name"],
            "namespace": namespace,
            "operation": operation,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": obj,
            "oldObject": None,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }


def post(port: int, cert: Path, review: dict[str, Any], path: str = "/validate") -> dict[str, Any]:
    tls = ssl.create_default_context(cafile=str(cert))
    request = urllib.request.Request(
        f"https://127.0.0.1:{port}{path}", data=json.dumps(review).encode(),
        headers={"Content-Type": "application/json"}, method="POST",
    )  # fmt: skip
    with urllib.request.urlopen(request, context=tls, timeout=5) as response:
        answer: dict[str, Any] = json.loads(response.read())
        return answer


def wait_ready(port: int, cert: Path, component: Component) -> None:
    tls = ssl.create_default_context(cafile=str(cert))

    def healthy() -> bool:
        assert component.proc.poll() is None, component.output()
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=tls, timeout=2) as r:
                return bool(r.read() == b"ok")
        except (urllib.error.URLError, ConnectionError):
            return False

    wait_until(healthy, what="webhook /healthz")


def serve(tls_pair: tuple[Path, Path], log: Path) -> tuple[Component, int]:
    """A ready ``kubegpu webhook`` without API access (namespace labels and nodes unknown)."""
    port = free_port()
    cert, key = tls_pair
    component = Component(
        [sys.executable, "-m", "kubegpu.cli.live_cmd", "webhook", "--tls-cert-file", str(cert),
         "--tls-private-key-file", str(key), "--bind-address", "127.0.0.1", "--port", str(port)],
        log,
    )  # fmt: skip
    wait_ready(port, cert, component)
    return component, port


def apply_patch(doc: Any, patch: list[dict[str, Any]]) -> Any:
    """RFC 6902 ``add`` and ``replace`` (all a mutating webhook here may send; anything else fails)."""
    doc = copy.deepcopy(doc)
    for op in patch:
        assert op["op"] in ("add", "replace"), op
        *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        target = doc
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            index = len(target) if last == "-" else int(last)
            if op["op"] == "add":
                target.insert(index, op["value"])
            else:
                target[index] = op["value"]
        else:
            assert op["op"] == "add" or last in target, f"replace of a missing member: {op}"
            target[last] = op["value"]
    return doc
