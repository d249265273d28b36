"""Admit not-yet-created pod manifests as the API server would, before they reach any scheduler.

Order as in the API server: defaulting (a limit alone implies the request — applied by the parser),
validation (``Pod "x" is invalid: …``), LimitRanger defaults for containers that set none, Priority
(``priorityClassName`` → ``spec.priority``), then ResourceQuota (``pods "x" is forbidden: exceeded
quota: …``). Admitted pods count against quota for the pods admitted after them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubegpu.admission import quota as quota_admission
from kubegpu.admission.validation import invalid_pod_message, validate_pod_resources
from kubegpu.errors import InputError
from kubegpu.model.objects import LimitRange, Pod, ResourceQuota
from kubegpu.model.parse import parse_pod
from kubegpu.model.quantity import format_milli
from kubegpu.model.resources import add
from kubegpu.model.snapshot import ClusterSnapshot


@dataclass
class Admission:
    source: str
    name: str
    pod: Pod | None
    message: str = ""  # why the API server rejected it
    raw: Mapping[str, Any] | None = None  # the object as the API server would store it
    invalid: bool = False  # rejected as invalid input (validation), not by quota: an input error

    def input_error(self) -> InputError | None:
        return InputError(self.message, source=self.source) if self.invalid else None

    @property
    def admitted(self) -> bool:
        return self.pod is not None


def apply_limit_range_defaults(raw: Mapping[str, Any], ranges: list[LimitRange]) -> dict[str, Any]:
    """LimitRanger: fill missing container requests/limits from ``defaultRequest``/``default``."""
    out = copy.deepcopy(dict(raw))
    ns = (out.get("metadata") or {}).get("namespace") or "default"
    items = [item for lr in ranges if lr.namespace == ns for item in lr.limits if item.type == "Container"]
    if not items:
        return out
    for key in ("initContainers", "containers"):
        for c in (out.get("spec") or {}).get(key) or []:
            res = c.setdefault("resources", {})
            for item in items:
                limits = res.setdefault("limits", {})
                for r, v in item.default.items():
                    limits.setdefault(r, format_milli(r, v))
                requests = res.setdefault("requests", {})
                for r, v in (item.default_request or item.default).items():
                    if r not in requests and r not in limits:
                        requests[r] = format_milli(r, v)
    return out


def admit_pods(snapshot: ClusterSnapshot, manifests: list[tuple[str, Mapping[str, Any]]]) -> list[Admission]:
    results: list[Admission] = []
    extra_usage: dict[str, dict[str, int]] = {}
    for source, raw in manifests:
        meta = raw.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        name = str(meta.get("name") or meta.get("generateName") or "")
        if raw.get("kind") != "Pod":
            results.append(
                Admission(
                    source,
                    name,
                    None,
                    f"{raw.get('kind')} is not a Pod: kubegpu schedule takes Pod manifests",
                    invalid=True,
                )
            )
            continue
        try:
            errors = validate_pod_resources(raw)
            if errors:
                results.append(Admission(source, name, None, invalid_pod_message(name, errors), invalid=True))
                continue
            stored = apply_limit_range_defaults(raw, snapshot.limit_ranges)
            pod = parse_pod(stored, source, snapshot.priority_classes)
        except InputError as exc:
            results.append(Admission(source, name, None, exc.problem, invalid=True))
            results[-1].message = exc.one_line().removeprefix(f"{source}: ")
            continue
        quotas = [_with_usage(q, snapshot, extra_usage.get(q.namespace, {})) for q in snapshot.quotas]
        decision = quota_admission.admit(pod, quotas, snapshot.pods)
        if not decision.allowed:
            results.append(Admission(source, name, None, decision.message))
            continue
        extra_usage[pod.namespace] = add(extra_usage.get(pod.namespace, {}), quota_admission.pod_usage(pod))
        results.append(Admission(source, name, pod, raw=stored))
    return results


def _with_usage(q: ResourceQuota, snapshot: ClusterSnapshot, extra: dict[str, int]) -> ResourceQuota:
    if not extra:
        return q
    used = quota_admission.namespace_usage(q, snapshot.pods)
    return ResourceQuota(
        q.namespace, q.name, q.hard, {r: used.get(r, 0) + extra.get(r, 0) for r in q.hard}, q.scopes, q.source
    )
