"""Where the admission rules expect an object (a mapping) and the input has something else.

The API server's decoder refuses such an object outright (``json: cannot unmarshal string into Go struct
field``); the webhook and ``kubegpu lint`` report it as one ``invalid`` finding naming the field, before any
rule reads it, instead of failing on it. ``null`` is not a problem: it decodes as the empty object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

EMPTY: Mapping[str, Any] = {}


def mapping(value: object) -> Mapping[str, Any]:
    """``value`` when it is an object, else the empty object (for fields already reported, or optional)."""
    return value if isinstance(value, Mapping) else EMPTY


def not_an_object(value: object) -> str:
    """The problem with a field that must be an object ("" when it is one, or null)."""
    if value is None or isinstance(value, Mapping):
        return ""
    return f"expected an object, got {type(value).__name__}"


def template_shape(obj: Mapping[str, Any], keys: tuple[str, ...]) -> list[tuple[str, str]]:
    """(field, problem) for the object's metadata (annotations, labels), each step to its pod template
    (``keys``: none for a Pod), the template's metadata and spec, present but not an object."""
    own = obj.get("metadata")
    steps = [("metadata", own), *((f"metadata.{k}", mapping(own).get(k)) for k in ("annotations", "labels"))]
    node: object = obj
    path = ""
    for key in keys:
        node = mapping(node).get(key)
        path += f"{key}."
        steps.append((path[:-1], node))
    template = mapping(node)
    if keys:
        meta = template.get("metadata")
        steps.append((f"{path}metadata", meta))
        steps += [(f"{path}metadata.{k}", mapping(meta).get(k)) for k in ("annotations", "labels")]
    steps.append((f"{path}spec", template.get("spec")))
    return [(field, problem) for field, value in steps if (problem := not_an_object(value))]
