"""Queue, cohort and pod-group objects, accepted in the shapes users already write (R14.2).

- ``kubegpu.io/v1alpha1 GpuQueue``: ``spec.cohort``, ``spec.weight``, ``spec.nominalQuota``,
  ``spec.borrowingLimit``, ``spec.lendingLimit`` (resource lists, Kubernetes quantities). Pods join a
  queue with the label ``kubegpu.io/queue``.
- ``kubegpu.io/v1alpha1 GpuCohort``: ``spec.parent`` makes cohorts a tree (borrowing reaches the whole
  tree under the root).
- ``PodGroup`` of Volcano (``scheduling.volcano.sh/v1beta1``: ``spec.minMember``, ``spec.queue``; pods
  carry the annotation ``scheduling.k8s.io/group-name``) and of the scheduler-plugins coscheduling API
  (``scheduling.x-k8s.io/v1alpha1``: ``spec.minMember``; pods carry the label
  ``scheduling.x-k8s.io/pod-group``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubegpu.errors import InputError
from kubegpu.model.parse import describe
from kubegpu.model.quantity import QuantityError, parse_quantity, to_milli
from kubegpu.model.resources import ResourceList

QUEUE_LABEL = "kubegpu.io/queue"
DEFAULT_QUEUE = "default"


@dataclass(frozen=True)
class Queue:
    name: str
    cohort: str = ""
    weight: int = 1
    nominal: ResourceList = field(default_factory=dict)
    borrowing_limit: ResourceList | None = None  # None: may borrow everything the cohort lends
    lending_limit: ResourceList | None = None  # None: lends all its unused quota


@dataclass(frozen=True)
class Cohort:
    name: str
    parent: str = ""


@dataclass(frozen=True)
class PodGroup:
    namespace: str
    name: str
    min_member: int
    queue: str = ""
    api: str = ""  # which API it came from, for messages


def _resources(raw: Any, source: str, obj: str, field_: str) -> ResourceList:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InputError("expected a resource list", source=source, obj=obj, field=field_)
    out: ResourceList = {}
    for name, q in raw.items():
        try:
            out[str(name)] = to_milli(str(name), parse_quantity(q))
        except QuantityError as exc:
            raise InputError(str(exc), source=source, obj=obj, field=f"{field_}[{name}]") from None
    return out


def _positive_int(value: Any, source: str, obj: str, field_: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InputError(f"must be a positive integer, got {value!r}", source=source, obj=obj, field=field_)
    return value


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
        name = str(meta.get("name") or "")
        try:
            if not name:
                raise InputError("required field is missing", source=source, obj=obj, field="metadata.name")
            spec = _spec(raw, source)
            kind = raw.get("kind")
            if kind == "GpuQueue":
                weight = _positive_int(spec.get("weight", 1), source, obj, "spec.weight")
                queues[name] = Queue(
                    name=name,
                    cohort=str(spec.get("cohort") or ""),
                    weight=weight,
                    nominal=_resources(spec.get("nominalQuota"), source, obj, "spec.nominalQuota"),
                    borrowing_limit=_resources(spec["borrowingLimit"], source, obj, "spec.borrowingLimit")
                    if "borrowingLimit" in spec else None,
                    lending_limit=_resources(spec["lendingLimit"], source, obj, "spec.lendingLimit")
                    if "lendingLimit" in spec else None,
                )  # fmt: skip
            elif kind == "GpuCohort":
                cohorts[name] = Cohort(name, str(spec.get("parent") or ""))
            else:  # PodGroup, Volcano or coscheduling
                mm = _positive_int(spec.get("minMember", 1), source, obj, "spec.minMember")
                ns = str(meta.get("namespace") or "default")
                groups[f"{ns}/{name}"] = PodGroup(
                    ns, name, mm, str(spec.get("queue") or ""), str(raw.get("apiVersion", ""))
                )
        except InputError as exc:
            errors.append(exc)
    return queues, cohorts, groups, errors
