"""API-server validation of container resource requirements (R4.1), with upstream's messages.

Mirrors ``pkg/apis/core/validation`` (``ValidateResourceRequirements``, ``ValidateResourceQuantityValue``)
as of 1.34, for the rules that decide whether a GPU pod can exist at all:
- an extended resource (``nvidia.com/gpu``) must be a whole number: ``must be an integer``;
- it cannot be overcommitted: a request needs a limit (``Limit must be set for non overcommitable
  resources``) and must equal it (``must be equal to nvidia.com/gpu limit of 1``);
- a request above its limit, for any resource: ``must be less than or equal to cpu limit of 2``.
A limit alone is fine: defaulting copies it into the request before validation runs.
The pod-level message is ``Pod "<name>" is invalid: <errors>`` (several errors in ``[a, b]``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubegpu.admission.canonical import canonical
from kubegpu.model.parse import LIMIT_REQUIRED, NEGATIVE, NOT_INTEGER, request_limit_problem
from kubegpu.model.parse_parts import POD_LEVEL_SUPPORTED
from kubegpu.model.quantity import QuantityError, milli_value, parse_quantity
from kubegpu.model.resources import is_extended, is_hugepages, is_pod_level_resource

# Exact arithmetic on 1e999999999 takes forever (and memory without bound): the webhook checks the size of
# every quantity before any arithmetic. 10^30 is far above anything a node holds (2^63 milli-units).
OUT_OF_RANGE = "quantity out of range: more than 40 digits or an exponent beyond ±30"
_NUMBER = re.compile(r"^\s*[+-]?(?P<digits>[\d.]*)(?:[eE](?P<exp>[+-]?\d+))?")


def out_of_range(q: object) -> bool:
    """Too large (or too finely divided) to do exact arithmetic on; bounds the cost of what follows."""
    if isinstance(q, bool):
        return False
    if isinstance(q, int):
        return abs(q) >= 10**30
    text = repr(q) if isinstance(q, float) else str(q)
    if len(text) > 64:
        return True
    match = _NUMBER.match(text)
    if match is None:
        return False
    exp = match.group("exp")
    return len(match.group("digits")) > 40 or (exp is not None and abs(int(exp)) > 30)


def quantity_errors(resources: object, path: str) -> list[FieldError]:
    """The quantities of a resource list that are too large to parse (``OUT_OF_RANGE``)."""
    if not isinstance(resources, Mapping):
        return []
    return [
        FieldError(f"{path}[{name}]", "Invalid value", str(q)[:64], OUT_OF_RANGE)
        for name, q in sorted(resources.items(), key=lambda kv: str(kv[0]))
        if out_of_range(q)
    ]


@dataclass(frozen=True, slots=True)
class FieldError:
    field: str
    kind: str  # "Invalid value" | "Required value"
    value: str | None
    detail: str
    # field.ErrorBody quotes a string (%q: NEGATIVE's value.String(), "-1") and, from apimachinery 0.34
    # (Kubernetes 1.34), JSON-marshals a Quantity (NOT_INTEGER's: "500m", seen on kube-apiserver 1.37.2);
    # 1.30-1.33 print that Quantity as a Go struct (%#v: resource.Quantity{i:resource.int64Amount{value:5,
    # scale:-1}, ...}, seen on 1.33.13), which kubegpu does not reproduce
    quoted: bool = True

    def __str__(self) -> str:
        if self.value is None:
            return f"{self.field}: {self.kind}: {self.detail}"
        value = f'"{self.value}"' if self.quoted else self.value
        return f"{self.field}: {self.kind}: {value}: {self.detail}"


def _overcommit_allowed(name: str) -> bool:
    """``helper.IsOvercommitAllowed``: native resources may be overcommitted; extended and hugepages not."""
    return not is_extended(name) and not is_hugepages(name)


def _integer_resource(name: str) -> bool:
    return is_extended(name) or name == "pods"


def _not_an_object(value: object, path: str) -> list[FieldError]:
    """A field that must be an object but is not: the API server's decoder refuses the whole object."""
    if value is None or isinstance(value, Mapping):
        return []
    return [
        FieldError(path, "Invalid value", str(value)[:64], f"expected an object, got {type(value).__name__}")
    ]


def validate_container_resources(container: Mapping[str, Any], path: str) -> list[FieldError]:
    res = container.get("resources") or {}
    shape = _not_an_object(res, f"{path}.resources")
    if not shape:
        shape = [*_not_an_object(res.get("limits"), f"{path}.resources.limits"),
                 *_not_an_object(res.get("requests"), f"{path}.resources.requests")]  # fmt: skip
    if shape:
        return shape
    limits: Mapping[str, Any] = res.get("limits") or {}
    requests: Mapping[str, Any] = res.get("requests") or {}
    errors = [
        *quantity_errors(limits, f"{path}.resources.limits"),
        *quantity_errors(requests, f"{path}.resources.requests"),
    ]
    if errors:
        return errors
    parsed_limits = {}
    for name, q in sorted(limits.items()):
        fp = f"{path}.resources.limits[{name}]"
        try:
            value = parse_quantity(q)
        except QuantityError as exc:
            errors.append(FieldError(fp, "Invalid value", str(q), str(exc)))
            continue
        parsed_limits[name] = value
        if value < 0:
            errors.append(FieldError(fp, "Invalid value", canonical(q), NEGATIVE))
        if _integer_resource(name) and milli_value(value) % 1000:
            errors.append(FieldError(fp, "Invalid value", canonical(q), NOT_INTEGER))
    for name, q in sorted(requests.items()):
        fp = f"{path}.resources.requests[{name}]"
        try:
            value = parse_quantity(q)
        except QuantityError as exc:
            errors.append(FieldError(fp, "Invalid value", str(q), str(exc)))
            continue
        if value < 0:
            errors.append(FieldError(fp, "Invalid value", canonical(q), NEGATIVE))
        if _integer_resource(name) and milli_value(value) % 1000:
            errors.append(FieldError(fp, "Invalid value", canonical(q), NOT_INTEGER))
        if name in parsed_limits:
            limit = parsed_limits[name]
            limit_text = canonical(limits[name])
            problem = request_limit_problem(name, limit_text, value > limit) if value != limit else ""
            if problem:
                errors.append(
                    FieldError(f"{path}.resources.requests", "Invalid value", canonical(q), problem)
                )
        elif not _overcommit_allowed(name):
            errors.append(FieldError(f"{path}.resources.limits", "Required value", None, LIMIT_REQUIRED))
    return errors


def defaulted(container: Mapping[str, Any]) -> Mapping[str, Any]:
    """``SetDefaults_Pod`` runs before validation: a limit without a request becomes the request too."""
    res = container.get("resources") or {}
    limits = res.get("limits") or {} if isinstance(res, Mapping) else {}
    if not isinstance(limits, Mapping) or not limits or not isinstance(res.get("requests") or {}, Mapping):
        return container
    requests = dict(res.get("requests") or {})
    for name, q in limits.items():
        requests.setdefault(name, q)
    return {**container, "resources": {**res, "requests": requests}}


def validate_pod_resources(raw: Mapping[str, Any]) -> list[FieldError]:
    """Validate every init container and container of a raw Pod, after defaulting, as the API server does."""
    spec = raw.get("spec") or {}
    if not isinstance(spec, Mapping):
        return _not_an_object(spec, "spec")
    errors = quantity_errors(spec.get("overhead"), "spec.overhead")
    pod_level = spec.get("resources") or {}
    if isinstance(pod_level, Mapping):
        errors += quantity_errors(pod_level.get("limits"), "spec.resources.limits")
        errors += quantity_errors(pod_level.get("requests"), "spec.resources.requests")
        for kind in ("limits", "requests"):  # validatePodResourceName: cpu, memory, hugepages- only
            given = pod_level.get(kind)
            for name in sorted(given) if isinstance(given, Mapping) else ():
                if not is_pod_level_resource(str(name)):
                    field = f"spec.resources.{kind}[{name}]"
                    errors.append(
                        FieldError(
                            field, "Unsupported value", str(name), f"supported values: {POD_LEVEL_SUPPORTED}"
                        )
                    )
    for key in ("containers", "initContainers"):
        items = spec.get(key) or []
        for i, c in enumerate(items if isinstance(items, list) else []):
            if isinstance(c, Mapping):
                errors.extend(validate_container_resources(defaulted(c), f"spec.{key}[{i}]"))
    return errors


def invalid_pod_message(name: str, errors: list[FieldError]) -> str:
    """``errors.NewInvalid``: one error inline, several as ``[a, b]`` (duplicates dropped, as Aggregate does)."""
    texts = list(dict.fromkeys(str(e) for e in errors))
    body = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return f'Pod "{name}" is invalid: {body}'
