"""``bulk_load``: build a large snapshot without the cyclic garbage collector walking it again and again.

Loading a 5,000-node / 20,000-pod snapshot allocates millions of small objects (the decoded JSON, the
typed nodes and pods, their resource lists) that form no reference cycles; reference counting frees
whatever is dropped. CPython's cyclic collector still runs every 700 allocations and, as the heap grows,
traverses all of it in full collections: a third of the load's time on such a snapshot. Inside
``bulk_load`` the collector is paused; it resumes (if it was running) when the outermost block exits,
so memory stays bounded by what the load keeps, and cycles made later are collected as usual.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()  # loads in several threads (a server reloading) share the one process-wide switch
_depth = 0
_was_enabled = False


@contextmanager
def bulk_load() -> Iterator[None]:
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def resume() -> None:
    """Inside ``bulk_load``: let the collector run again now (if it ran before the outermost block), for
    what follows the load's millions of objects and makes cycles of its own (JSON's indented encoder leaves
    one per call: paused, writing a large ``-o json`` kept hundreds of MB of them). Freeze what exists
    first where it must not be walked (``gc.freeze``)."""
    with _lock:
        if _depth and _was_enabled:
            gc.enable()
