"""How explanations word what can be long: a list of node or pod names in a sentence names a few and
counts the rest, because a group on a large cluster is thousands of nodes and a sentence must stay one.

May import: nothing of kubegpu (a leaf every part of ``explain`` can use).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

SHOWN: Final = 3  # names listed before "and N more"


def some_of(names: Sequence[str], shown: int = SHOWN) -> str:
    """``names`` for a sentence: the first ``shown``, and how many more."""
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")
