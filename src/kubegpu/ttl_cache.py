"""One value computed at most once per TTL, shared by concurrent callers: the exporters' scrape cache (R13).

Prometheus servers scraping in HA pairs, or a scrape retried after a timeout, must get the same result
instead of a second round of NVML, kubelet or cluster reads; the lock makes a scrape that arrives during a
computation wait for it rather than start another.

Must not: know what it caches.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class TtlCache(Generic[T]):
    """``get()`` returns ``read(now)``'s last result while it is younger than ``ttl_s``; thread-safe."""

    def __init__(
        self, read: Callable[[float], T], ttl_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._read = read
        self._ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._value: tuple[float, T] | None = None  # (taken at, value)

    def get(self) -> T:
        with self._lock:
            now = self._clock()
            if self._value is None or now - self._value[0] >= self._ttl_s:
                self._value = (now, self._read(now))
            return self._value[1]
