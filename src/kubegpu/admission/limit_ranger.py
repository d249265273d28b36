"""The LimitRanger admission plugin (plugin/pkg/admission/limitranger/admission.go v1.37.2) on a pod being
created: its mutation (default limits and requests for the containers that set none) and its validation
(``min``, ``max``, ``maxLimitRequestRatio`` of ``Container`` and ``Pod`` items).

The LimitRange items arrive defaulted as the API server stores them (``model.parse_policy.parse_limit_range``:
a ``max`` alone is also the default limit, and so the default request). So a namespace whose LimitRange
only caps ``nvidia.com/gpu`` at 1 per container gives every container that names no GPU a GPU limit and
request of 1 (intel/intel-device-plugins-for-kubernetes#1408's LimitRange, checked on a real
kube-apiserver 1.37.2).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from kubegpu.admission.validation import defaulted
from kubegpu.model.objects import LimitRange, Pod, aggregate_container_limits, aggregate_container_requests
from kubegpu.model.parse import namespace_of
from kubegpu.model.quantity import format_milli
from kubegpu.model.resources import CPU, MEMORY, ResourceList

ANNOTATION = "kubernetes.io/limit-ranger"  # limitRangerAnnotation


def _defaults(lr: LimitRange) -> tuple[dict[str, int], dict[str, int]]:
    """``defaultContainerResourceRequirements``: one LimitRange's Container items, a later item's value
    replacing an earlier one's; (default requests, default limits)."""
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    for item in lr.limits:
        if item.type == "Container":
            requests.update(item.default_request)
            limits.update(item.default)
    return requests, limits


def apply_defaults(raw: Mapping[str, Any], ranges: list[LimitRange]) -> dict[str, Any]:
    """``PodMutateLimitFunc`` for every LimitRange of the pod's namespace, in turn: a container's missing
    limits, then its missing requests, from the defaults (``mergeContainerResources``), and the
    ``kubernetes.io/limit-ranger`` annotation naming what was set. The API server has already run
    ``SetDefaults_Pod`` (a limit alone is also the request), so that runs first here."""
    out = copy.deepcopy(dict(raw))
    metadata = out.get("metadata")
    ns = namespace_of(metadata if isinstance(metadata, Mapping) else {})
    mine = [lr for lr in ranges if lr.namespace == ns]
    spec = out.get("spec") or {}
    for key in ("containers", "initContainers"):  # SetDefaults_Pod, as validation applies it
        if isinstance(spec.get(key), list):
            spec[key] = [dict(defaulted(c)) if isinstance(c, Mapping) else c for c in spec[key]]
    containers = [("container", c) for c in spec.get("containers") or []]
    containers += [("init container", c) for c in spec.get("initContainers") or []]
    for lr in mine:
        default_requests, default_limits = _defaults(lr)
        if not (default_requests or default_limits):
            continue
        notes = []
        for prefix, c in containers:
            res = c.setdefault("resources", {})
            limits, requests = res.setdefault("limits", {}), res.setdefault("requests", {})
            set_limits = sorted(r for r in default_limits if r not in limits)
            set_requests = sorted(r for r in default_requests if r not in requests)
            for r in set_limits:
                limits[r] = format_milli(r, default_limits[r])
            for r in set_requests:
                requests[r] = format_milli(r, default_requests[r])
            if set_requests:
                notes.append(f"{', '.join(set_requests)} request for {prefix} {c.get('name', '')}")
            if set_limits:
                notes.append(f"{', '.join(set_limits)} limit for {prefix} {c.get('name', '')}")
        if notes:
            meta = out.setdefault("metadata", {})
            meta["annotations"] = {
                **(meta.get("annotations") or {}),
                ANNOTATION: "LimitRanger plugin set: " + "; ".join(notes),
            }
    return out


def _min(kind: str, r: str, enforced: int, requests: ResourceList, limits: ResourceList) -> str:
    """``minConstraint``."""
    shown = format_milli(r, enforced)
    if r not in requests:
        return f"minimum {r} usage per {kind} is {shown}.  No request is specified"
    if requests[r] < enforced:
        return f"minimum {r} usage per {kind} is {shown}, but request is {format_milli(r, requests[r])}"
    if r in limits and limits[r] < enforced:
        return f"minimum {r} usage per {kind} is {shown}, but limit is {format_milli(r, limits[r])}"
    return ""


def _max(kind: str, r: str, enforced: int, requests: ResourceList, limits: ResourceList) -> str:
    """``maxConstraint``."""
    shown = format_milli(r, enforced)
    if r not in limits:
        return f"maximum {r} usage per {kind} is {shown}.  No limit is specified"
    if limits[r] > enforced:
        return f"maximum {r} usage per {kind} is {shown}, but limit is {format_milli(r, limits[r])}"
    if r in requests and requests[r] > enforced:
        return f"maximum {r} usage per {kind} is {shown}, but request is {format_milli(r, requests[r])}"
    return ""


def _ratio(kind: str, r: str, enforced: int, requests: ResourceList, limits: ResourceList) -> str:
    """``limitRequestRatioConstraint`` (amounts compared in milli-units, as it does below MaxMilliValue; the
    ratio is a plain number in milli-units whatever ``r`` is, printed as its ``Quantity.String()``)."""
    shown = format_milli(CPU, enforced)
    if not requests.get(r):
        return f"{r} max limit to request ratio per {kind} is {shown}, but no request is specified or request is 0"
    if not limits.get(r):
        return (
            f"{r} max limit to request ratio per {kind} is {shown}, but no limit is specified or limit is 0"
        )
    observed = limits[r] / requests[r]
    if observed * 1000 > enforced:
        return f"{r} max limit to request ratio per {kind} is {shown}, but provided ratio is {observed:f}"
    return ""


Check = Callable[[str, str, int, ResourceList, ResourceList], str]


def _constraints(kind: str, item: Any, requests: ResourceList, limits: ResourceList) -> list[str]:
    checks: list[tuple[ResourceList, Check]] = [
        (item.min, _min),
        (item.max, _max),
        (item.max_limit_request_ratio, _ratio),
    ]
    return [
        e for bound, check in checks for r, v in bound.items() if (e := check(kind, r, v, requests, limits))
    ]


def violation(pod: Pod, ranges: list[LimitRange]) -> str:
    """``PodValidateLimitFunc`` over the LimitRanges of the pod's namespace: the first LimitRange the pod
    breaks gives ``pods "<name>" is forbidden: <errors>`` (several in ``[a, b]``, ``NewAggregate``); ""
    when none. Pod items compare the pod's aggregate requests and limits (init containers and sidecars by
    the KEP-753 rule, no overhead) with pod-level cpu/memory requests and limits in place of the aggregate's
    (``podRequests``/``podLimits``, plugin/pkg/admission/limitranger/admission.go v1.37.2)."""
    for lr in ranges:
        if lr.namespace != pod.namespace:
            continue
        errors: list[str] = []
        for item in lr.limits:
            if item.type == "Container":
                for c in (*pod.containers, *pod.init_containers):
                    errors += _constraints("Container", item, c.requests, c.limits)
            elif item.type == "Pod":
                requests = aggregate_container_requests(pod.containers, pod.init_containers)
                limits = aggregate_container_limits(pod)
                requests.update({r: v for r, v in pod.pod_level_requests.items() if r in (CPU, MEMORY)})
                limits.update({r: v for r, v in pod.pod_level_limits.items() if r in (CPU, MEMORY)})
                errors += _constraints("Pod", item, requests, limits)
        if errors:
            text = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
            return f'pods "{pod.name}" is forbidden: {text}'
    return ""
