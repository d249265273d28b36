"""Per-node values cached per equivalence key: a score plugin's answer for a pod shape on a node, kept
until the node changes, so that a cycle recomputes only the nodes earlier placements touched.

kube-scheduler's opportunistic batching (KEP-5598, ``SignPlugin``) reuses filter and score results between
pods with equal signatures; this is the per-node form of that reuse. A value is valid while the node's
``ClusterState.version`` is the one it was computed at (every ``add_pod``/``remove_pod``/cordon changes it,
and unlike ``generation`` it never repeats, dry runs included). Only node-local values may be cached —
a function whose value for a node depends on that node's state alone — so that the cached result is the
one a fresh computation over any set of rows would give; the callers say why theirs are.

May import: numpy, ``scheduler.cluster``. Owns no scheduling rule.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Final, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from kubegpu.scheduler.cluster import ClusterState

Rows = npt.NDArray[np.intp]
# keys kept at once (pod shapes): the oldest is dropped beyond this, bounding memory at KEYS × nodes values
MAX_KEYS: Final = 512
GROUP_FROM: Final = (
    64  # rows from which ``once_per_kind`` looks for rows alike (below, it costs more than it saves)
)
T = TypeVar("T", bound=np.generic)


def once_per_kind(
    rows: Rows,
    alike: npt.NDArray[np.bool_],
    kind: npt.NDArray[np.intp],
    compute: Callable[[Rows], npt.NDArray[T]],
) -> npt.NDArray[T]:
    """``compute(rows)`` for a node-local ``compute`` (a row's value a function of that node's state alone),
    where the rows marked ``alike`` (in the same state as every node of their ``kind``: the caller says
    why) are computed once per kind and the others get that value: the same values, fewer rows. A
    packing run scores a shape it has not met yet on every feasible node, most of them still empty."""
    if not alike.any():
        return compute(rows)
    same = rows[alike]
    _, first, spread = np.unique(kind.take(same), return_index=True, return_inverse=True)
    busy = ~alike
    computed = compute(np.concatenate((rows[busy], same[first])))
    cut = len(computed) - len(first)
    out: npt.NDArray[T] = np.empty(len(rows), dtype=computed.dtype)
    out[busy] = computed[:cut]
    out[alike] = computed[cut:][spread]
    return out


class NodeCache(Generic[T]):
    """``values(key, rows, compute)``: ``compute(rows)`` for ``rows``, taken from the cache where the node
    has not changed since it was computed for ``key``. ``width``: values per node (1: a vector)."""

    def __init__(self, cluster: ClusterState, dtype: type[T], width: int = 1) -> None:
        self.cluster = cluster
        self.dtype = dtype
        self.width = width
        self._entries: dict[Hashable, tuple[npt.NDArray[T], npt.NDArray[np.int64]]] = {}

    def values(self, key: Hashable, rows: Rows, compute: Callable[[Rows], npt.NDArray[T]]) -> npt.NDArray[T]:
        entry = self._entries.get(key)
        if entry is None:
            if len(self._entries) >= MAX_KEYS:
                del self._entries[next(iter(self._entries))]
            n = len(self.cluster)
            shape = (n,) if self.width == 1 else (n, self.width)
            entry = (np.zeros(shape, dtype=self.dtype), np.full(n, -1, dtype=np.int64))
            self._entries[key] = entry
        values, seen = entry
        version = self.cluster.version
        stale = rows[version[rows] != seen[rows]]
        if stale.size:
            values[stale] = compute(stale)
            seen[stale] = version[stale]
        out: npt.NDArray[T] = values[rows]
        return out
