"""Queue, cohort and pod-group objects, accepted in the shapes users already write (R14.2).

- ``kubegpu.io/v1alpha1 GpuQueue``: ``spec.cohort``, ``spec.weight``, ``spec.nominalQuota``,
  ``spec.borrowingLimit``, ``spec.lendingLimit`` (resource lists, Kubernetes quantities). Pods join a
  queue with the label ``kubegpu.io/queue``.
- ``kubegpu.io/v1alpha1 GpuCohort``: ``spec.parent`` makes cohorts a tree (borrowing reaches the whole
  tree under the root); ``spec.admissionFairSharing.usageHalfLifeTime`` (and ``usageSamplingInterval``,
  default ``5m`` as in Kueue), Go durations, turn on decayed historical usage for the fair share of
  the queues under it (``batch.fair_share``). A GpuQueue's
  ``status.fairSharing.admissionFairSharingStatus`` (``consumedResources``, ``lastUpdate``: Kueue's
  LocalQueue status) carries that history between runs.
- ``PodGroup`` of Volcano (``scheduling.volcano.sh/v1beta1``: ``spec.minMember``, ``spec.queue``; pods
  carry the annotation ``scheduling.k8s.io/group-name``) and of the scheduler-plugins coscheduling API
  (``scheduling.x-k8s.io/v1alpha1``: ``spec.minMember``; pods carry the label
  ``scheduling.x-k8s.io/pod-group``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubegpu.errors import InputError
from kubegpu.model.parse import NEGATIVE, NOT_INTEGER, describe, name_problem
from kubegpu.model.podgroup import parse_time
from kubegpu.model.quantity import CPU, QuantityError, to_milli_text
from kubegpu.model.resources import ResourceList, is_extended

QUEUE_LABEL = "kubegpu.io/queue"
DEFAULT_QUEUE = "default"
DEFAULT_SAMPLING_S = 300.0  # Kueue defaults usageSamplingInterval to 5m
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


@dataclass(frozen=True)
class Queue:
    name: str
    cohort: str = ""
    weight: int = 1
    nominal: ResourceList = field(default_factory=dict)
    borrowing_limit: ResourceList | None = None  # None: may borrow everything the cohort lends
    lending_limit: ResourceList | None = None  # None: lends all its unused quota
    consumed: ResourceList | None = None  # decayed historical usage recorded in its status
    consumed_at: datetime | None = None  # when that was last brought up to date


@dataclass(frozen=True)
class Cohort:
    name: str
    parent: str = ""
    usage_half_life_s: float | None = None  # None: fair share from current usage only
    usage_sampling_s: float = DEFAULT_SAMPLING_S


@dataclass(frozen=True)
class PodGroup:
    namespace: str
    name: str
    min_member: int
    queue: str = ""
    api: str = ""  # which API it came from, for messages


def _resources(raw: Any, source: str, obj: str, field_: str, *, exact: bool = False) -> ResourceList:
    """Quantities per resource in kubegpu's milli-units; ``exact`` keeps a fraction of a count (decayed
    usage such as ``6828m`` GPUs), where a quota's count rounds up as ``Quantity.Value()``."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InputError("expected a resource list", source=source, obj=obj, field=field_)
    out: ResourceList = {}
    for name, q in raw.items():
        where = f"{field_}[{name}]"
        try:
            # bounded (to_milli_text refuses what does not fit int64 milli-units, never computing 10**e)
            amount = to_milli_text(CPU, q) if exact else to_milli_text(str(name), q)
        except QuantityError as exc:
            raise InputError(str(exc), source=source, obj=obj, field=where) from None
        if amount < 0:
            raise InputError(f"Invalid value: {q!r}: {NEGATIVE}", source=source, obj=obj, field=where)
        if not exact and is_extended(str(name)) and to_milli_text(CPU, q) % 1000:
            raise InputError(f"Invalid value: {q!r}: {NOT_INTEGER}", source=source, obj=obj, field=where)
        out[str(name)] = amount
    return out


def _positive_int(value: Any, source: str, obj: str, field_: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InputError(f"must be a positive integer, got {value!r}", source=source, obj=obj, field=field_)
    return value


def go_duration(value: Any, source: str, obj: str, field_: str) -> float:
    """Seconds in a Go duration string (``metav1.Duration``: ``168h``, ``1h30m``, ``90s``, ``1.5h``)."""
    text = value if isinstance(value, str) else ""
    if text == "0":
        return 0.0
    pos, total = 0, 0.0
    for m in _GO_DURATION.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _GO_UNITS[m.group(2)]
        pos = m.end()
    if not text or pos != len(text):
        raise InputError(
            f"not a duration (like 168h, 30m or 1h30m): {value!r}", source=source, obj=obj, field=field_
        )
    return total


def _fair_sharing(spec: Mapping[str, Any], source: str, obj: str) -> tuple[float | None, float]:
    """``spec.admissionFairSharing`` of a GpuCohort: (half-life, sampling interval) in seconds."""
    raw = spec.get("admissionFairSharing")
    if raw is None:
        return None, DEFAULT_SAMPLING_S
    where = "spec.admissionFairSharing"
    if not isinstance(raw, Mapping):
        raise InputError("expected an object", source=source, obj=obj, field=where)
    if "usageHalfLifeTime" not in raw:
        raise InputError(
            "required field is missing", source=source, obj=obj, field=f"{where}.usageHalfLifeTime"
        )
    half_life = go_duration(raw["usageHalfLifeTime"], source, obj, f"{where}.usageHalfLifeTime")
    sampling = (
        go_duration(raw["usageSamplingInterval"], source, obj, f"{where}.usageSamplingInterval")
        if "usageSamplingInterval" in raw
        else DEFAULT_SAMPLING_S
    )
    for value, name in ((half_life, "usageHalfLifeTime"), (sampling, "usageSamplingInterval")):
        if value <= 0:
            raise InputError("must be a positive duration", source=source, obj=obj, field=f"{where}.{name}")
    return half_life, sampling


def _consumed(raw: Mapping[str, Any], source: str, obj: str) -> tuple[ResourceList | None, datetime | None]:
    """A GpuQueue's recorded history: ``status.fairSharing.admissionFairSharingStatus``."""
    status = raw.get("status") or {}
    fs = status.get("fairSharing") if isinstance(status, Mapping) else None
    afs = fs.get("admissionFairSharingStatus") if isinstance(fs, Mapping) else None
    if afs is None:
        return None, None
    where = "status.fairSharing.admissionFairSharingStatus"
    if not isinstance(afs, Mapping):
        raise InputError("expected an object", source=source, obj=obj, field=where)
    consumed = _resources(afs.get("consumedResources"), source, obj, f"{where}.consumedResources", exact=True)
    text = afs.get("lastUpdate")
    at = parse_time(str(text)) if text else None
    if at is None or at.tzinfo is None:
        raise InputError(
            f"expected an RFC 3339 time, got {text!r}", source=source, obj=obj, field=f"{where}.lastUpdate"
        )
    return consumed, at


def _spec(raw: Mapping[str, Any], source: str) -> Mapping[str, Any]:
    spec = raw.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise InputError("expected an object", source=source, obj=describe(raw), field="spec")
    return spec


def parse_batch_objects(
    objects: list[tuple[str, Mapping[str, Any]]],
) -> tuple[dict[str, Queue], dict[str, Cohort], dict[str, PodGroup], list[InputError]]:
    """Queues by name, cohorts by name, pod groups by ``namespace/name``; bad objects become errors."""
    queues: dict[str, Queue] = {}
    cohorts: dict[str, Cohort] = {}
    groups: dict[str, PodGroup] = {}
    errors: list[InputError] = []
    for source, raw in objects:
        obj = describe(raw)
        meta = raw.get("metadata") or {}
        name = meta.get("name") if isinstance(meta, Mapping) else None
        try:
            if not isinstance(meta, Mapping):
                raise InputError(f"expected an object, got {type(meta).__name__}", source=source, obj=obj,
                                 field="metadata")  # fmt: skip
            if not name:
                raise InputError("required field is missing", source=source, obj=obj, field="metadata.name")
            namespace = meta.get("namespace")
            if namespace is not None and not isinstance(namespace, str):
                raise InputError(f"expected a string, got {namespace!r}", source=source, obj=obj,
                                 field="metadata.namespace")  # fmt: skip
            if not isinstance(name, str) or name_problem(name):
                problem = name_problem(name) if isinstance(name, str) else f"expected a string, got {name!r}"
                raise InputError(f"Invalid value: {str(name)[:300]!r}: {problem}", source=source, obj=obj,
                                 field="metadata.name")  # fmt: skip
            spec = _spec(raw, source)
            kind = raw.get("kind")
            if kind == "GpuQueue":
                weight = _positive_int(spec.get("weight", 1), source, obj, "spec.weight")
                consumed, consumed_at = _consumed(raw, source, obj)
                if not isinstance(spec.get("cohort") or "", str):
                    raise InputError(f"expected a string, got {spec['cohort']!r}", source=source, obj=obj,
                                     field="spec.cohort")  # fmt: skip
                queues[name] = Queue(
                    name=name,
                    cohort=str(spec.get("cohort") or ""),
                    weight=weight,
                    nominal=_resources(spec.get("nominalQuota"), source, obj, "spec.nominalQuota"),
                    borrowing_limit=_resources(spec["borrowingLimit"], source, obj, "spec.borrowingLimit")
                    if "borrowingLimit" in spec else None,
                    lending_limit=_resources(spec["lendingLimit"], source, obj, "spec.lendingLimit")
                    if "lendingLimit" in spec else None,
                    consumed=consumed, consumed_at=consumed_at,
                )  # fmt: skip
            elif kind == "GpuCohort":
                half_life, sampling = _fair_sharing(spec, source, obj)
                cohorts[name] = Cohort(name, str(spec.get("parent") or ""), half_life, sampling)
            else:  # PodGroup, Volcano or coscheduling
                mm = _positive_int(spec.get("minMember", 1), source, obj, "spec.minMember")
                ns = str(meta.get("namespace") or "default")
                groups[f"{ns}/{name}"] = PodGroup(
                    ns, name, mm, str(spec.get("queue") or ""), str(raw.get("apiVersion", ""))
                )
        except InputError as exc:
            errors.append(exc)
    return queues, cohorts, groups, errors
