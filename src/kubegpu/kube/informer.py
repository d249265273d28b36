"""List+watch for one kind, kept current across dropped connections and ``410 Gone`` (client-go's Reflector).

``Reflector.run`` lists the collection (``kubegpu.kube.live.list_kind``: paginated), hands the full list
to the sink as one ``SYNC`` (the consumer replaces its store and so sees deletions it missed), then
watches from the list's resourceVersion. Every event moves the bookmark to the object's
``metadata.resourceVersion`` (``BOOKMARK`` events only move the bookmark). When the stream ends — the
server's ``timeoutSeconds``, a dropped connection, a transport error — it re-watches from the bookmark,
so nothing is missed and nothing is listed again. Only ``410 Gone`` (the bookmark is older than the
server's history, as an HTTP status or an ``ERROR`` event carrying a 410 ``Status``) forces a relist, as
upstream. Failures back off exponentially (bounded) so an outage does not become a request storm; a
malformed event (not JSON) counts as a failure and the watch resumes from the last good resourceVersion.

An optional kind (``ListedKind.optional``: PriorityClasses, PDBs, the batch CRDs) that answers 403/404 —
not allowed, or its CRD is not installed — is warned about once (with what its absence costs), handed to
the sink as an empty ``SYNC`` so the consumer holds none of it, and listed again with backoff up to
``UNAVAILABLE_MAX_S`` (client-go's reflector backoff caps at 30 s too): a CRD installed later is picked up
without a restart, and a deleted one (the watch answers 404) empties the store the same way.

Events are delivered in order on the reflector's thread to ``sink(kind, type, objects)``; the consumer
must be cheap (the live scheduler only enqueues them).
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Any

from kubegpu.backoff import doubling
from kubegpu.errors import InputError
from kubegpu.kube import live
from kubegpu.kube.client import ApiError, KubeApi
from kubegpu.kube.listed_kinds import ListedKind

log = logging.getLogger(__name__)

SYNC = "SYNC"  # not a watch type: the full list that replaces the consumer's store
Sink = Callable[[str, str, list[dict[str, Any]]], None]


def object_key(raw: dict[str, Any]) -> str:
    """An object's store key, as client-go's ``MetaNamespaceKeyFunc``: ``namespace/name``, or ``name``."""
    metadata = raw.get("metadata")
    meta = metadata if isinstance(metadata, dict) else {}
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
    return f"{namespace}/{name}" if namespace else name


def apply_to_store(
    store: dict[str, Any],
    event_type: str,
    items: list[dict[str, Any]],
    parse: Callable[[dict[str, Any]], Any],
) -> None:
    """One sink call into a keyed store of parsed objects: a ``SYNC`` replaces the store, ``DELETED``
    removes, anything else stores ``parse(raw)``; an object that does not parse is logged and removed
    (its last good version would be stale)."""
    if event_type == SYNC:
        store.clear()
    for raw in items:
        key = object_key(raw)
        if event_type == "DELETED":
            store.pop(key, None)
            continue
        try:
            store[key] = parse(raw)
        except InputError as exc:
            log.warning("ignoring %s", exc)
            store.pop(key, None)


# client-go: minWatchTimeout = 5 min, each watch asks for a random timeout in [5, 10) min.
MIN_WATCH_TIMEOUT_S = 300
BACKOFF_INITIAL_S = 0.1
BACKOFF_MAX_S = 5.0
UNAVAILABLE_MAX_S = 30.0


def backoff_s(failures: int, cap_s: float) -> float:
    """The wait after the ``failures``-th failure in a row: doubling from ``BACKOFF_INITIAL_S`` up to
    ``cap_s``, jittered down to half so replicas that failed together do not retry together (bounded for
    any number of failures: an API server down for an hour, a CRD missing for days)."""
    return doubling(failures, BACKOFF_INITIAL_S, cap_s, jitter=True)


class Reflector:
    """Keeps one kind current: see the module docstring. ``stop`` ends ``run`` at the next stream end."""

    def __init__(
        self,
        api: KubeApi,
        listed: ListedKind,
        sink: Sink,
        stop: threading.Event,
        *,
        min_watch_timeout_s: int = MIN_WATCH_TIMEOUT_S,
        page_size: int = live.DEFAULT_PAGE_SIZE,
    ) -> None:
        self.api = api
        self.listed = listed
        self.sink = sink
        self.stop = stop
        self.min_watch_timeout_s = min_watch_timeout_s
        self.page_size = page_size
        self.resource_version = ""
        self.lists = 0  # how many times the collection was listed (1 + relists after 410)
        self.watches = 0
        self.unavailable = False  # an optional kind not served (or not allowed) at the last list

    def run(self) -> None:
        failures = 0
        need_list = True
        while not self.stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                self._watch_once()
                failures = 0
            except live.KindUnavailable as exc:
                failures += 1
                need_list = True
                self._unavailable(exc, failures)
            except _Gone:
                log.info(
                    "%s: resourceVersion %s is too old (410 Gone); relisting",
                    self.listed.kind,
                    self.resource_version,
                )
                need_list = True
            except (ApiError, InputError, ValueError) as exc:
                failures += 1
                delay = backoff_s(failures, BACKOFF_MAX_S)
                log.warning("%s: %s; retrying in %.2fs", self.listed.kind, exc, delay)
                self.stop.wait(delay)
            except Exception:  # a bug must not silently freeze the cache: log it, relist after a pause
                log.exception("%s: unexpected failure; relisting", self.listed.kind)
                need_list = True
                self.stop.wait(BACKOFF_MAX_S)

    def _unavailable(self, exc: live.KindUnavailable, failures: int) -> None:
        """An optional kind is not served: warn once, empty the consumer's store, list again later."""
        if not self.unavailable:
            log.warning("%s; %s (listing again with backoff)", exc, self.listed.without_it)
            self.unavailable = True
            self.sink(self.listed.kind, SYNC, [])
        self.stop.wait(backoff_s(failures, UNAVAILABLE_MAX_S))

    def _list(self) -> None:
        items, resource_version, _ = live.list_kind(
            self.api.api_client, self.listed, page_size=self.page_size, timeout_s=self.api.timeout_s
        )
        if self.unavailable:
            log.info("%s: %s is served now", self.listed.kind, self.listed.path)
            self.unavailable = False
        self.lists += 1
        self.resource_version = resource_version
        self.sink(self.listed.kind, SYNC, items)

    def _watch_once(self) -> None:
        timeout = self.min_watch_timeout_s + random.randrange(self.min_watch_timeout_s)
        query = {
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout),
        }
        self.watches += 1
        try:
            for event in self.api.watch(self.listed.path, query, read_timeout_s=timeout + 30):
                if self.stop.is_set():
                    return
                self._handle(event)
        except ApiError as exc:
            if exc.status == 410:
                raise _Gone from None
            if exc.status in (403, 404) and self.listed.optional:  # e.g. the CRD was deleted
                raise live.KindUnavailable(f"cannot watch {self.listed.kind} objects ({exc})") from None
            raise

    def _handle(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            return
        if kind == "ERROR":
            code = int(obj.get("code") or 0)
            if code == 410:
                raise _Gone
            raise ApiError(
                code, str(obj.get("reason") or ""), str(obj.get("message") or ""), "WATCH", self.listed.path
            )
        metadata = obj.get("metadata")
        rv = metadata.get("resourceVersion") if isinstance(metadata, dict) else None
        if isinstance(rv, str) and rv:
            self.resource_version = rv
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            item = {"apiVersion": self.listed.api_version, "kind": self.listed.kind, **obj}
            self.sink(self.listed.kind, str(kind), [item])


class _Gone(Exception):
    """Internal: the watch's resourceVersion is no longer served (HTTP 410)."""
