"""The plain manifests under deploy/ and the (verb, group, resource, name) kube-apiserver authorizes a
request as, checked against RBAC rules; shared by the deploy and live RBAC tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.live.apiserver import Served

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def request_attributes(served: Served) -> tuple[str, str, str, str]:
    """(verb, apiGroup, resource[/subresource], name) of one request, as kube-apiserver derives them."""
    parts = served.path.strip("/").split("/")
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    if rest and rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    resource, name, sub = rest[0], rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else ""
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(served.method)
    if verb is None:
        verb = "watch" if served.query.get("watch") else ("get" if name else "list")
    return verb, group, f"{resource}/{sub}" if sub else resource, name


def granted(rules: list[dict[str, Any]], verb: str, group: str, resource: str, name: str) -> bool:
    return any(
        verb in r["verbs"] and group in r["apiGroups"] and resource in r["resources"]
        and (not r.get("resourceNames") or name in r["resourceNames"])
        for r in rules
    )  # fmt: skip
