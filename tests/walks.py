"""A list that counts the walks over it: tests that pin a per-pod reading as a lookup, not a scan of every
object (diagnose on 5,000 nodes and 1,000 Pending pods)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, SupportsIndex


class CountedList(list[Any]):
    """Counts each iteration, and each scan a list makes without one (``in``, ``index``, ``count``), so that a
    per-pod reading that turns back into a scan is seen whichever way it is written."""

    def __init__(self, items: Iterable[Any]) -> None:
        super().__init__(items)
        self.walks = 0

    def __iter__(self) -> Iterator[Any]:
        self.walks += 1
        return super().__iter__()

    def __contains__(self, item: object) -> bool:
        self.walks += 1
        return super().__contains__(item)

    def index(self, item: Any, start: SupportsIndex = 0, stop: SupportsIndex = 2**63 - 1) -> int:
        self.walks += 1
        return super().index(item, start, stop)

    def count(self, item: Any) -> int:
        self.walks += 1
        return super().count(item)
