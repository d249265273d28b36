"""The patch formats the test API server applies (``tests.live.apiserver``): strategic merge patch, as far
as pod status uses it, and RFC 7386 JSON merge patch."""

from __future__ import annotations

import copy
from typing import Any

JSON = dict[str, Any]


def strategic_merge(target: JSON, patch: JSON) -> None:
    """The part of strategic merge patch that pod status uses: maps merge, null deletes, ``conditions``
    merge by ``type`` (its patchMergeKey), ``$``-directives are ignored, other lists are replaced."""
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            target.pop(key, None)
        elif key == "conditions" and isinstance(value, list):
            existing = {c.get("type"): c for c in target.get(key) or []}
            for cond in value:
                merged = existing.get(cond.get("type"), {})
                strategic_merge(merged, cond)
                existing[cond.get("type")] = merged
            target[key] = list(existing.values())
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            strategic_merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def merge_patch(target: JSON, patch: JSON) -> None:
    """RFC 7386 JSON merge patch."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge_patch(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
