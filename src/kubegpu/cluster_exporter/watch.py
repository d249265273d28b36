"""The live cluster for the cluster exporter: Nodes and Pods kept current by list+watch (read-only, R13).

``WatchedCluster`` runs one ``kubegpu.kube.informer.Reflector`` per kind (Node, Pod: list, then watch
from the list's resourceVersion, relist on ``410 Gone``) and keeps each object as the API server sent it.
``snapshot()`` turns the current objects into a ``ClusterSnapshot`` with the same ``build_snapshot`` the
``--snapshot`` and ``--kube`` sources use, so a watched cluster and a listed one cannot be read apart.
Until both kinds have been listed once it raises ``NotSynced`` (the collector reports that as unhealthy):
a half-listed cluster would show every GPU idle.

The exporter's service account needs ``list`` and ``watch`` on ``nodes`` and ``pods``, nothing else.

Must not: write to the API server, or interpret the objects (the model's parser does).
"""

from __future__ import annotations

import threading
from typing import Any

from kubegpu.kube.client import KubeApi
from kubegpu.kube.informer import SYNC, Reflector
from kubegpu.kube.listed_kinds import LISTED_KINDS
from kubegpu.model.snapshot import ClusterSnapshot, build_snapshot

WATCHED = ("Node", "Pod")


class NotSynced(RuntimeError):
    """A watched kind has not been listed yet."""


class WatchedCluster:
    """Raw Nodes and Pods by ``namespace/name``, fed by reflectors; thread-safe."""

    def __init__(self, api: KubeApi, description: str) -> None:
        self.api = api
        self.description = description
        self._lock = threading.Lock()
        self._objects: dict[str, dict[str, dict[str, Any]]] = {kind: {} for kind in WATCHED}
        self._synced: set[str] = set()
        self._all_synced = threading.Event()

    def on_event(self, kind: str, event_type: str, items: list[dict[str, Any]]) -> None:
        """The reflectors' sink: a SYNC replaces the kind's store, other events add, change or delete one."""
        with self._lock:
            store = self._objects[kind]
            if event_type == SYNC:
                store.clear()
                self._synced.add(kind)
                if self._synced.issuperset(WATCHED):
                    self._all_synced.set()
            for raw in items:
                meta = raw.get("metadata") or {}
                key = f"{meta.get('namespace') or ''}/{meta.get('name')}"
                if event_type == "DELETED":
                    store.pop(key, None)
                else:
                    store[key] = raw

    def wait_synced(self, timeout_s: float) -> bool:
        """Wait until every watched kind has been listed once; False after ``timeout_s``."""
        return self._all_synced.wait(timeout_s)

    def snapshot(self) -> ClusterSnapshot:
        with self._lock:
            missing = [k for k in WATCHED if k not in self._synced]
            if missing:
                raise NotSynced(f"waiting for the first list of {', '.join(missing)}")
            objects = [
                (f"{self.description}/{kind}", raw)
                for kind in WATCHED
                for raw in self._objects[kind].values()
            ]
        return build_snapshot(objects, description=self.description)

    def start(self, stop: threading.Event) -> None:
        """One reflector thread per watched kind; they end when ``stop`` is set."""
        for listed in LISTED_KINDS:
            if listed.kind in WATCHED:
                reflector = Reflector(self.api, listed, self.on_event, stop)
                threading.Thread(target=reflector.run, name=f"reflector-{listed.kind}", daemon=True).start()
