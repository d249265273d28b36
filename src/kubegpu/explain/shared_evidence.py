"""Per-node evidence shared by the Pending pods explained against one engine.

``diagnose`` explains every Pending GPU pod against the same cluster. Pods that differ only in name share
one evaluation (``diagnose.equivalence_key``); pods that differ in their requests do not, yet most of their
per-node evidence is the same: a node refused by an untolerated taint, by a nodeSelector or for lack of
GPUs reads the same for every pod with that selector or that request. At 5,000 nodes and 1,000 Pending
pods of distinct CPU and memory requests, building each pod's 5,000 ``NodeEvidence`` anew took ~10 s and
1.5 GB. Here a node's ``NodeEvidence`` for a (plugin, reason id, code, what of the pod the reason kind's
lines depend on) key is built once and handed to every pod with that key, until the node changes
(``ClusterState.version``: it moves with every pod placed or removed and never repeats).

The objects are shared: nobody may change a ``NodeEvidence`` (or its lists) after it is built.

May import ``explain``'s result types and the scheduler's cluster state; never a face.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any, Final, TypeVar

import numpy as np
import numpy.typing as npt

from kubegpu.explain.engine import Engine
from kubegpu.explain.explanation import NodeEvidence
from kubegpu.scheduler.framework import Rows

Objects = npt.NDArray[np.object_]
T = TypeVar("T")
# keys kept at once (reason × code × pod part): the oldest is dropped beyond this; each costs 16 bytes a node
MAX_KEYS: Final = 256
# node name lists kept at once (per set of rows): each costs its rows' bytes as the key and a list of names
MAX_NAME_LISTS: Final = 256
# what ``recent`` keeps at once (per pod's diagnosis: its per-node arrays as the key, lists of nodes)
MAX_RECENT: Final = 128


class EvidenceStore:
    """One engine's shared ``NodeEvidence`` per key and node, and its node names as an object array (a
    group's names are one gather, not a lookup per node)."""

    def __init__(self, engine: Engine) -> None:
        self.cluster = engine.cluster
        self.names: Objects = np.array([node.name for node in self.cluster.nodes], dtype=object)
        self._entries: dict[Hashable, tuple[Objects, npt.NDArray[np.int64]]] = {}
        self._memo: dict[Hashable, Any] = {}  # what ``fact`` and ``current`` keep
        self._name_lists: dict[bytes, list[str]] = {}
        self._recent: dict[Hashable, tuple[int, Any]] = {}

    def names_of(self, rows: Rows) -> list[str]:
        """The names of ``rows`` as a list, one per set of rows: Pending pods refused on the same nodes (a
        taint's, a node pool's, those short of GPUs) share it. Nobody may change it."""
        key = rows.tobytes()
        found = self._name_lists.get(key)
        if found is None:
            if len(self._name_lists) >= MAX_NAME_LISTS:
                del self._name_lists[next(iter(self._name_lists))]
            found = self._name_lists[key] = self.names[rows].tolist()
        return found

    def fact(self, key: Hashable, make: Callable[[], T]) -> T:
        """``make()``, once per engine: a fact of the snapshot (its nodes' labels, capacity, allocatable),
        which a cause reads for many Pending pods."""
        if key not in self._memo:
            self._memo[key] = make()
        found: T = self._memo[key]
        return found

    def current(self, key: Hashable, make: Callable[[], T]) -> T:
        """``make()``, kept while no node changes (the largest ``ClusterState.version`` moves with every
        change and never repeats): a fact of the cluster's state, read for many Pending pods."""
        return self._stamped(self._memo, key, make, None)

    def recent(self, key: Hashable, make: Callable[[], T]) -> T:
        """``current``, for the last ``MAX_RECENT`` keys only: a value per pod's diagnosis (its per-node
        verdicts as the key), which Pending pods alike but for what no node's verdict turned on share."""
        return self._stamped(self._recent, key, make, MAX_RECENT)

    def _stamped(
        self, kept: dict[Hashable, Any], key: Hashable, make: Callable[[], T], bound: int | None
    ) -> T:
        """``make()`` kept in ``kept`` with the cluster's version stamp, made again once it moved; at most
        ``bound`` keys (the oldest dropped first), None: no bound."""
        stamp = int(self.cluster.version.max(initial=0))
        found: tuple[int, T] | None = kept.get(key)
        if found is None or found[0] != stamp:
            if found is None and bound is not None and len(kept) >= bound:
                del kept[next(iter(kept))]
            found = kept[key] = (stamp, make())
        return found[1]

    def nodes(self, key: Hashable, rows: Rows, build: Callable[[Rows], list[NodeEvidence]]) -> Objects:
        """The ``NodeEvidence`` of ``rows`` for ``key``: ``build(rows)`` where a node has none yet, or has
        changed since it was built."""
        entry = self._entries.get(key)
        if entry is None:
            if len(self._entries) >= MAX_KEYS:
                del self._entries[next(iter(self._entries))]
            n = len(self.cluster)
            entry = self._entries[key] = (np.empty(n, dtype=object), np.full(n, -1, dtype=np.int64))
        objects, seen = entry
        version = self.cluster.version
        stale = rows[version[rows] != seen[rows]]
        if stale.size:
            made: Objects = np.empty(len(stale), dtype=object)
            made[:] = build(stale)
            objects[stale] = made
            seen[stale] = version[stale]
        out: Objects = objects[rows]
        return out


_stores: weakref.WeakKeyDictionary[Engine, EvidenceStore] = weakref.WeakKeyDictionary()
_lock = threading.Lock()  # (engines explained from several threads: one store each all the same)


def store_for(engine: Engine) -> EvidenceStore:
    """``engine``'s store, made on first use; it goes with the engine."""
    with _lock:
        store = _stores.get(engine)
        if store is None:
            store = _stores[engine] = EvidenceStore(engine)
        return store
