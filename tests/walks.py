"""A list that counts the walks over it: tests that pin a per-pod reading as a lookup, not a scan of every
object (diagnose on 5,000 nodes and 1,000 Pending pods)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any


class CountedList(list[Any]):
    def __init__(self, items: Iterable[Any]) -> None:
        super().__init__(items)
        self.walks = 0

    def __iter__(self) -> Iterator[Any]:
        self.walks += 1
        return super().__iter__()
