"""``-o json`` of a large ``diagnose`` without the whole document in memory: the exact text of
``json.dumps(data, indent=2)`` plus a newline (what ``emit`` writes), written piece by piece.

At 5,000 nodes and 1,000 Pending pods the document is 1.7 GB (each pod names every node's evidence); as
one string it needs several times that. Here each element of a top-level list is encoded and written on
its own. An explanation's node evidence and reason groups, which the pods of one equivalence class share
(``explain.diagnose.explain_many``), are encoded once per shared list, the text kept until that list's
last pod is written; pods of different classes share ``NodeEvidence`` objects instead
(``explain.shared_evidence``), each encoded once while the objects already encoded stay few enough.
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
    if not data:
        write("{}\n")
        return
    texts = _Texts(data)
    write("{")
    for i, (key, value) in enumerate(data.items()):
        write(("\n" if i == 0 else ",\n") + INDENT + json.dumps(key) + ": ")
        if isinstance(value, list) and value:
            write("[")
            for j, item in enumerate(value):
                write(("\n" if j == 0 else ",\n") + INDENT * 2)
                write(texts.explanation(item) if isinstance(item, Explanation) else _dumps(item, 2))
            write("\n" + INDENT + "]")
        else:
            write(_dumps(value, 1))
    write("\n}\n")


# node evidence texts kept at once (by object): beyond this the oldest half is dropped (a few hundred MB at most)
KEPT_NODES = 200_000


class _Texts:
    """Encoded texts of what explanations share, kept only while they may be met again: a node-evidence
    or group list by how many explanations hold it (counted up front, dropped after its last one), and a
    ``NodeEvidence`` by object. ``data`` holds every object, so an id stays that object's while it runs."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.uses: dict[int, int] = {}
        for value in data.values():
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, Explanation):
                        for shared in (item.nodes, item.groups):
                            self.uses[id(shared)] = self.uses.get(id(shared), 0) + 1
        self.lists: dict[int, str] = {}
        self.nodes: dict[int, str] = {}

    def explanation(self, exp: Explanation) -> str:
        parts = []
        for key, value in exp.to_dict(shallow=True).items():
            text = self._list(value) if key in ("nodes", "groups") else _dumps(value, 3)
            parts.append(INDENT * 3 + json.dumps(key) + ": " + text)
        return "{\n" + ",\n".join(parts) + "\n" + INDENT * 2 + "}"

    def _list(self, items: list[NodeEvidence] | list[ReasonGroup]) -> str:
        key = id(items)
        left = self.uses.get(key, 1) - 1
        self.uses[key] = left
        text = self.lists.pop(key, None) if not left else self.lists.get(key)
        if text is None:
            text = self._encode(items)
            if left:
                self.lists[key] = text
        return text

    def _encode(self, items: list[NodeEvidence] | list[ReasonGroup]) -> str:
        """``_dumps([x.to_dict() for x in items], 3)``, a ``NodeEvidence``'s part encoded once."""
        if not items or not isinstance(items[0], NodeEvidence):
            return _dumps([x.to_dict() for x in items], 3)
        kept = self.nodes
        if len(kept) > KEPT_NODES:
            for k in list(kept)[: len(kept) // 2]:
                del kept[k]
        inner = INDENT * 4
        out = []
        for node in items:
            text = kept.get(id(node))
            if text is None:
                text = kept[id(node)] = _dumps(node.to_dict(), 4)
            out.append(inner + text)
        return "[\n" + ",\n".join(out) + "\n" + INDENT * 3 + "]"
