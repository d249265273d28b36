"""``-o json`` of a large ``diagnose`` without the whole document in memory: the exact text of
``json.dumps(data, indent=2)`` plus a newline (what ``emit`` writes), written piece by piece.

At 5,000 nodes and 1,000 Pending pods the document is 1.7 GB (each pod names every node's evidence); as
one string it needs several times that. Here each element of a top-level list is encoded and written on
its own, and an explanation's node evidence and reason groups, which the pods of one equivalence class
share (``explain.diagnose.explain_many``), are encoded once per shared list.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kubegpu.explain.explanation import Explanation, NodeEvidence, ReasonGroup

INDENT = "  "


def _at(text: str, level: int) -> str:
    """``text`` (encoded at the top level) as it reads nested ``level`` deep: JSON strings hold no raw
    newline, so every newline in the text is a line break of the layout."""
    return text.replace("\n", "\n" + INDENT * level) if level else text


def _dumps(value: Any, level: int) -> str:
    return _at(json.dumps(value, indent=2), level)


def dump(data: dict[str, Any], write: Callable[[str], object]) -> None:
    """Write ``data`` (JSON values; a top-level list may hold ``Explanation`` objects) and a newline."""
    shared: dict[int, str] = {}  # id of a node-evidence or group list → its text at the explanation's depth
    keep: list[object] = []  # the lists behind those ids, alive until the end
    if not data:
        write("{}\n")
        return
    write("{")
    for i, (key, value) in enumerate(data.items()):
        write(("\n" if i == 0 else ",\n") + INDENT + json.dumps(key) + ": ")
        if isinstance(value, list) and value:
            write("[")
            for j, item in enumerate(value):
                write(("\n" if j == 0 else ",\n") + INDENT * 2)
                write(_explanation(item, shared, keep) if isinstance(item, Explanation) else _dumps(item, 2))
            write("\n" + INDENT + "]")
        else:
            write(_dumps(value, 1))
    write("\n}\n")


def _explanation(exp: Explanation, shared: dict[int, str], keep: list[object]) -> str:
    parts = []
    for key, value in exp.to_dict(shallow=True).items():
        if key in ("nodes", "groups"):
            text = shared.get(id(value))
            if text is None:
                items: list[NodeEvidence] | list[ReasonGroup] = value
                text = shared[id(value)] = _dumps([x.to_dict() for x in items], 3)
                keep.append(value)
        else:
            text = _dumps(value, 3)
        parts.append(INDENT * 3 + json.dumps(key) + ": " + text)
    return "{\n" + ",\n".join(parts) + "\n" + INDENT * 2 + "}"
