"""A Kubernetes API server for the live tests: kmock's ``KubernetesEmulator`` taught the semantics it lacks.

kmock 0.8's emulator stores objects and streams watch events, but serves every list with
``resourceVersion: '...'``, replays the whole collection on every watch (no resume from a
resourceVersion, so no ``410 Gone``), and treats ``pods/binding``, ``pods/status`` and ``pods/eviction``
as plain object writes. The live scheduler depends on exactly those behaviours, so ``ApiServerEmulator``
overrides the request handling (kmock still runs the HTTP server, parses paths and renders its
``kind: Status`` errors) with the API server's contract as documented in api-concepts and the pod
registry (``pkg/registry/core/pod/storage``):

* one global, increasing ``resourceVersion`` stamped on every write; lists carry it in ``metadata``;
* ``?watch=true&resourceVersion=N`` streams every change after N, then live changes; N older than the
  compaction point answers an ``ERROR`` event with a 410 ``Expired`` Status (as the watch cache does);
  ``timeoutSeconds`` ends the stream cleanly; ``drop_watches()`` cuts every open stream mid-flight;
* ``PUT`` with a stale ``metadata.resourceVersion`` is a 409 Conflict (optimistic concurrency: the
  Lease election depends on it); ``POST`` of an existing name is 409 AlreadyExists;
* ``POST pods/<name>/binding`` sets ``spec.nodeName``, copies the Binding's annotations onto the pod and
  sets ``PodScheduled=True``, or answers 409
  ``Operation cannot be fulfilled on pods/binding "<name>": pod <name> is already assigned to node
  "<node>"``; ``PATCH pods/<name>/status`` applies a strategic merge patch (``conditions`` merged by
  ``type``); ``POST pods/<name>/eviction`` deletes the pod unless a PDB's ``disruptionsAllowed`` is 0
  (429 ``Cannot evict pod as it would violate the pod's disruption budget.``);
* ``faults``: one-shot injected answers (status, body, headers) for matching requests, to provoke 409s,
  429s and 5xx; ``hold``: matching requests wait (the loop keeps serving others) until the test releases
  them, as a slow list of a large collection does;
* custom resources (``CRDS``: kubegpu's GpuQueue/GpuCohort, Volcano's and coscheduling's PodGroup) are
  served only once ``install_crd`` ran; before, their paths answer what kube-apiserver answers for a
  group/version it does not serve: 404 ``the server could not find the requested resource``.

All state lives behind one lock, so the test thread may read it while kmock's loop thread serves.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import aiohttp.web
import kmock
from kmock._internal import parsing, rendering

from tests.live.api_objects import (
    CRDS,
    JSON,
    NOT_SERVED,
    RESOURCES,
    Fault,
    Hold,
    Served,
    matches_labels,
    now_rfc3339,
    resource_key,
    status_body,
)
from tests.live.patches import merge_patch, strategic_merge


class ApiServerEmulator(kmock.KubernetesEmulator):
    """See the module docstring. Create objects from the test thread with ``create``/``update``/``delete``."""

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self.lock = threading.Lock()
        self.rv = 0
        self.compacted_rv = 0
        self.store: dict[str, dict[tuple[str, str], JSON]] = {plural: {} for plural in RESOURCES}
        self.history: dict[str, list[tuple[int, str, JSON]]] = {plural: [] for plural in RESOURCES}
        self.faults: list[Fault] = []
        self.holds: list[Hold] = []
        self.served: list[Served] = []
        self.bindings: list[tuple[str, str, str]] = []  # (ns/name, node, user agent) of accepted bindings
        self.loop: asyncio.AbstractEventLoop | None = None
        self._changed: asyncio.Event | None = None
        self._drop: asyncio.Event | None = None
        self.open_watches = 0
        self.installed: set[str] = set()  # CRDS keys being served

    # -- test-thread API ----------------------------------------------------------------------------

    def install_crd(self, key: str) -> None:
        """Serve the custom resource ``key`` (a ``CRDS`` key) from now on, as an established CRD."""
        assert key in CRDS, key
        with self.lock:
            self.installed.add(key)

    def create(self, plural: str, obj: JSON) -> JSON:
        with self.lock:
            code, body = self._create(
                plural, obj.get("metadata", {}).get("namespace", ""), copy.deepcopy(obj)
            )
        assert code == 201, body
        self._notify()
        return body

    def get(self, plural: str, namespace: str, name: str) -> JSON | None:
        with self.lock:
            obj = self.store[plural].get((namespace, name))
            return copy.deepcopy(obj) if obj is not None else None

    def count(self, plural: str, predicate: Callable[[JSON], bool]) -> int:
        """How many stored objects satisfy ``predicate`` (no copies: cheap enough to poll)."""
        with self.lock:
            return sum(1 for o in self.store[plural].values() if predicate(o))

    def objects(self, plural: str) -> list[JSON]:
        with self.lock:
            return [copy.deepcopy(o) for _, o in sorted(self.store[plural].items())]

    def delete(self, plural: str, namespace: str, name: str) -> None:
        with self.lock:
            self._delete(plural, namespace, name)
        self._notify()

    def compact(self) -> None:
        """Forget history: watches resuming from an older resourceVersion now get 410 Gone."""
        with self.lock:
            self.compacted_rv = self.rv

    def drop_watches(self) -> None:
        """Cut every open watch connection (no clean end of stream)."""
        assert self.loop is not None
        self.loop.call_soon_threadsafe(self._drop_now)

    def hold(self, method: str, path: str) -> Hold:
        """Hold the requests matching ``method`` and ``path`` (a regex) until ``Hold.release`` is set."""
        held = Hold(method, path)
        with self.lock:
            self.holds.append(held)
        return held

    def requests_to(self, method: str, pattern: str) -> list[Served]:
        with self.lock:
            return [s for s in self.served if s.method == method and re.fullmatch(pattern, s.path)]

    # -- kmock entry point --------------------------------------------------------------------------

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
            self._changed, self._drop = asyncio.Event(), asyncio.Event()
        raw = request._raw_request
        assert raw is not None
        method, path, query = raw.method.upper(), raw.path, dict(raw.query)
        user_agent = raw.headers.get("User-Agent", "")
        resource = request.resource
        plural = resource_key(resource.group or "", resource.plural) if resource is not None else None
        if plural in CRDS and plural not in self.installed:
            return self._reply(method, path, query, user_agent, 404, status_body(404, "NotFound", NOT_SERVED))
        if plural not in RESOURCES:
            return await super()._handle(request)  # discovery and the like: kmock's own answers
        watch = query.get("watch") in ("true", "1")
        with self.lock:
            holds = [h for h in self.holds if not watch and h.method == method and re.fullmatch(h.path, path)]
        for held in holds:
            held.reached.set()
            while not held.release.is_set():  # wait without blocking the loop: other requests go on
                await asyncio.sleep(0.02)
        fault = self._take_fault(method, path, watch)
        if fault is not None and not fault.after:
            return self._fault_reply(raw, method, path, query, user_agent, fault)
        if method == "GET" and watch:
            self._record(method, path, query, user_agent, 200)
            return await self._watch(raw, plural, request.namespace, query)
        body: JSON = {}
        if request.body:
            try:
                body = json.loads(request.body)
            except ValueError:
                return self._reply(
                    method, path, query, user_agent, 400, status_body(400, "BadRequest", "invalid JSON")
                )
        with self.lock:
            code, answer = self._dispatch(
                method,
                plural,
                request.namespace or "",
                request.name,
                request.subresource,
                query,
                body,
                raw.content_type,
                user_agent,
            )
        if method != "GET":
            self._notify()
        if fault is not None:  # carried out; the answer is lost
            return self._fault_reply(raw, method, path, query, user_agent, fault)
        return self._reply(method, path, query, user_agent, code, answer)

    def _fault_reply(
        self, raw: aiohttp.web.BaseRequest, method: str, path: str, query: dict[str, str], user_agent: str,
        fault: Fault,
    ) -> aiohttp.web.StreamResponse:  # fmt: skip
        self._record(method, path, query, user_agent, fault.status)
        if fault.race is not None:
            with self.lock:
                fault.race()
            self._notify()
        if fault.status == 0 and raw.transport is not None:
            raw.transport.close()  # the client sees the connection end with no answer
        return aiohttp.web.json_response(
            status_body(fault.status or 500, fault.reason, fault.message),
            status=fault.status or 500,
            headers=fault.headers,
        )

    def _reply(
        self, method: str, path: str, query: dict[str, str], user_agent: str, code: int, body: JSON
    ) -> aiohttp.web.Response:
        self._record(method, path, query, user_agent, code)
        return aiohttp.web.json_response(body, status=code)

    def _record(self, method: str, path: str, query: dict[str, str], user_agent: str, code: int) -> None:
        with self.lock:
            self.served.append(Served(method, path, query, user_agent, code))

    def _take_fault(self, method: str, path: str, watch: bool) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.watch is not None and fault.watch != watch:
                    continue
                if fault.times > 0 and fault.method == method and re.fullmatch(fault.path, path):
                    fault.times -= 1
                    return fault
        return None

    # -- semantics (called with the lock held) ------------------------------------------------------

    def _dispatch(
        self,
        method: str,
        plural: str,
        ns: str,
        name: str | None,
        sub: str | None,
        query: dict[str, str],
        body: JSON,
        content_type: str,
        user_agent: str,
    ) -> tuple[int, JSON]:
        kind = RESOURCES[plural][2]
        if name is None:
            if method == "GET":
                return self._list(plural, ns, query)
            if method == "POST":
                return self._create(plural, ns, body)
        elif sub == "binding" and method == "POST":
            return self._bind(ns, name, body, user_agent)
        elif sub == "eviction" and method == "POST":
            return self._evict(ns, name)
        elif sub in (None, "status"):
            obj = self.store[plural].get((ns, name))
            if obj is None:
                return 404, status_body(
                    404, "NotFound", f'{plural} "{name}" not found', {"name": name, "kind": plural}
                )
            if method == "GET":
                return 200, copy.deepcopy(obj)
            if method == "DELETE":
                return 200, self._delete(plural, ns, name)
            if method == "PUT":
                if body.get("metadata", {}).get("resourceVersion") != obj["metadata"]["resourceVersion"]:
                    group = RESOURCES[plural][0]
                    qualified = plural if plural in CRDS or not group else f"{plural}.{group}"
                    return 409, status_body(
                        409,
                        "Conflict",
                        f'Operation cannot be fulfilled on {qualified} "{name}": the object has been modified; please apply your changes to the latest version and try again',
                    )
                new = copy.deepcopy(body)
                new["metadata"] = {**obj["metadata"], **new.get("metadata", {})}
                return 200, self._commit(plural, "MODIFIED", new)
            if method == "PATCH":
                new = copy.deepcopy(obj)
                if "strategic" in content_type:
                    strategic_merge(new, body)
                else:
                    merge_patch(new, body)
                return 200, self._commit(plural, "MODIFIED", new)
        return 405, status_body(405, "MethodNotAllowed", f"{method} is not supported on {kind} {sub or ''}")

    def _commit(self, plural: str, event_type: str, obj: JSON) -> JSON:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if event_type == "DELETED":
            self.store[plural].pop(key, None)
        else:
            self.store[plural][key] = obj
        self.history[plural].append((self.rv, event_type, copy.deepcopy(obj)))
        return copy.deepcopy(obj)

    def _create(self, plural: str, ns: str, obj: JSON) -> tuple[int, JSON]:
        meta = obj.setdefault("metadata", {})
        name = meta.get("name", "")
        if RESOURCES[plural][3]:
            meta["namespace"] = ns or meta.get("namespace") or "default"
        if (meta.get("namespace", ""), name) in self.store[plural]:
            return 409, status_body(
                409, "AlreadyExists", f'{plural} "{name}" already exists', {"name": name, "kind": plural}
            )
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", now_rfc3339())
        group, version, kind, _ = RESOURCES[plural]
        obj["apiVersion"], obj["kind"] = (f"{group}/{version}" if group else version), kind
        return 201, self._commit(plural, "ADDED", obj)

    def _delete(self, plural: str, ns: str, name: str) -> JSON:
        obj = copy.deepcopy(self.store[plural][(ns, name)])
        return self._commit(plural, "DELETED", obj)

    def _list(self, plural: str, ns: str, query: dict[str, str]) -> tuple[int, JSON]:
        items = [
            copy.deepcopy(o) for (o_ns, _), o in sorted(self.store[plural].items()) if not ns or o_ns == ns
        ]
        selector = query.get("fieldSelector") or ""
        if selector:
            # The one field selector kubegpu sends (kubelet's own pod filter): spec.nodeName=<node>.
            field, _, value = selector.partition("=")
            if plural != "pods" or field != "spec.nodeName":
                return 400, status_body(400, "BadRequest", f'field label not supported: "{field}"')
            items = [o for o in items if o.get("spec", {}).get("nodeName", "") == value]
        start = int(query.get("continue") or 0)
        limit = int(query.get("limit") or 0) or len(items) or 1
        page = items[start : start + limit]
        meta: JSON = {"resourceVersion": str(self.rv)}
        if start + limit < len(items):
            meta["continue"] = str(start + limit)
        group, version, kind, _ = RESOURCES[plural]
        for item in page:  # list items carry no kind/apiVersion on the wire
            item.pop("kind", None)
            item.pop("apiVersion", None)
        return 200, {
            "kind": f"{kind}List",
            "apiVersion": f"{group}/{version}" if group else version,
            "metadata": meta,
            "items": page,
        }

    def _bind(self, ns: str, name: str, binding: JSON, user_agent: str) -> tuple[int, JSON]:
        pod = self.store["pods"].get((ns, name))
        if pod is None:
            return 404, status_body(
                404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"}
            )
        uid = binding.get("metadata", {}).get("uid")
        if uid and uid != pod["metadata"]["uid"]:
            return 409, status_body(
                409,
                "Conflict",
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {pod['metadata']['uid']}",
            )
        node = pod.get("spec", {}).get("nodeName")
        if node:
            return 409, status_body(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already assigned to node "{node}"',
                {"name": name, "kind": "pods/binding"},
            )
        new = copy.deepcopy(pod)
        new["spec"]["nodeName"] = binding["target"]["name"]
        for key, value in (binding.get("metadata", {}).get("annotations") or {}).items():
            new["metadata"].setdefault("annotations", {})[key] = value  # as setPodHostAndAnnotations does
        strategic_merge(
            new.setdefault("status", {}),
            {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "True",
                        "lastProbeTime": None,
                        "lastTransitionTime": now_rfc3339(),
                    }
                ]
            },
        )
        self._commit("pods", "MODIFIED", new)
        self.bindings.append((f"{ns}/{name}", binding["target"]["name"], user_agent))
        return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def bind(self, ns: str, name: str, node: str, user_agent: str = "test") -> None:
        """Bind a pod as another writer would (call under ``lock``, e.g. from a ``Fault.race``)."""
        binding = {"metadata": {"namespace": ns, "name": name}, "target": {"kind": "Node", "name": node}}
        code, answer = self._bind(ns, name, binding, user_agent)
        assert code == 201, answer

    def _evict(self, ns: str, name: str) -> tuple[int, JSON]:
        pod = self.store["pods"].get((ns, name))
        if pod is None:
            return 404, status_body(
                404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"}
            )
        labels = pod["metadata"].get("labels") or {}
        for (pdb_ns, _), pdb in self.store["poddisruptionbudgets"].items():
            if pdb_ns == ns and matches_labels(pdb.get("spec", {}).get("selector"), labels):
                allowed = int(pdb.get("status", {}).get("disruptionsAllowed") or 0)
                if allowed < 1:
                    return 429, status_body(
                        429,
                        "TooManyRequests",
                        "Cannot evict pod as it would violate the pod's disruption budget.",
                        {
                            "causes": [
                                {
                                    "reason": "DisruptionBudget",
                                    "message": f"The disruption budget {pdb['metadata']['name']} needs {pdb.get('status', {}).get('desiredHealthy', 0)} healthy pods and has {pdb.get('status', {}).get('currentHealthy', 0)} currently",
                                }
                            ]
                        },
                    )
                new_pdb = copy.deepcopy(pdb)
                new_pdb["status"]["disruptionsAllowed"] = allowed - 1
                self._commit("poddisruptionbudgets", "MODIFIED", new_pdb)
        self._delete("pods", ns, name)
        return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    # -- watch --------------------------------------------------------------------------------------

    def _notify(self) -> None:
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        assert self._changed is not None
        self._changed.set()
        self._changed = asyncio.Event()

    def _drop_now(self) -> None:
        assert self._drop is not None
        self._drop.set()
        self._drop = asyncio.Event()

    async def _watch(
        self, raw: aiohttp.web.BaseRequest, plural: str, ns: str | None, query: dict[str, str]
    ) -> aiohttp.web.StreamResponse:
        response = aiohttp.web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        await response.prepare(raw)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + float(query.get("timeoutSeconds") or 1800)
        since = query.get("resourceVersion") or ""
        assert self._drop is not None
        drop = self._drop
        self.open_watches += 1
        try:
            with self.lock:
                if since in ("", "0"):
                    cursor = len(self.history[plural])
                    initial = [
                        ("ADDED", o)
                        for (o_ns, _), o in sorted(self.store[plural].items())
                        if not ns or o_ns == ns
                    ]
                elif int(since) < self.compacted_rv:
                    initial, cursor = [], -1
                else:
                    cursor = next(
                        (i for i, (rv, _, _) in enumerate(self.history[plural]) if rv > int(since)),
                        len(self.history[plural]),
                    )
                    initial = []
            if cursor < 0:
                gone = status_body(410, "Expired", f"too old resource version: {since} ({self.compacted_rv})")
                await response.write(json.dumps({"type": "ERROR", "object": gone}).encode() + b"\n")
                await response.write_eof()
                return response
            for event_type, obj in initial:
                await response.write(json.dumps({"type": event_type, "object": obj}).encode() + b"\n")
            while loop.time() < deadline:
                with self.lock:
                    pending = [
                        (t, o)
                        for _, t, o in self.history[plural][cursor:]
                        if not ns or o["metadata"].get("namespace") == ns
                    ]
                    cursor = len(self.history[plural])
                for event_type, obj in pending:
                    await response.write(json.dumps({"type": event_type, "object": obj}).encode() + b"\n")
                assert self._changed is not None
                changed = asyncio.ensure_future(self._changed.wait())
                dropped = asyncio.ensure_future(drop.wait())
                try:
                    await asyncio.wait(
                        {changed, dropped},
                        timeout=max(deadline - loop.time(), 0),
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                finally:  # also when aiohttp cancels this handler because the client went away
                    changed.cancel()
                    dropped.cancel()
                if drop.is_set():
                    assert raw.transport is not None
                    raw.transport.abort()  # a cut connection, not a clean end of stream
                    return response
            await response.write_eof()
            return response
        except (ConnectionError, RuntimeError):
            return response  # the client went away
        finally:
            self.open_watches -= 1


@dataclass
class RunningApiServer:
    emulator: ApiServerEmulator
    url: str


_kmock_parse_path = parsing.parse_path


def parse_path_with_namespace_list(path: str) -> parsing.ParsedPath:
    """kmock 0.8 reads ``/api/v1/namespaces`` as a ``namespaces/<ns>/...`` prefix missing its name (and
    fails); it is the cluster-scoped Namespace collection. Install with ``monkeypatch`` (see conftest)."""
    if path.strip("/").split("/") == ["api", "v1", "namespaces"]:
        return parsing.ParsedPath(group="", version="v1", plural="namespaces")
    return _kmock_parse_path(path)


def serve_in_thread() -> Iterator[RunningApiServer]:
    """Run the emulator on 127.0.0.1 on its own event loop thread for the duration of the generator."""
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def serve() -> None:
        state["stop"] = asyncio.Event()
        async with ApiServerEmulator(strict=False) as handler, kmock.Server(handler) as srv:
            state["emulator"], state["url"] = handler, str(srv.url).rstrip("/")
            handler.loop = asyncio.get_running_loop()
            handler._changed, handler._drop = asyncio.Event(), asyncio.Event()
            ready.set()
            await state["stop"].wait()
            handler._drop_now()  # end the open watches so no handler is left pending at loop close
            for _ in range(100):
                if not handler.open_watches:
                    break
                await asyncio.sleep(0.02)

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(10), "kmock did not start"
    try:
        yield RunningApiServer(state["emulator"], state["url"])
    finally:
        loop.call_soon_threadsafe(state["stop"].set)
        thread.join(10)
        loop.close()


def patch_over_http(
    server: RunningApiServer, path: str, body: JSON, content_type: str = "application/merge-patch+json"
) -> None:
    """PATCH ``path`` as a client would (``kubectl patch``/``annotate`` send merge patches by default)."""
    import urllib.request

    request = urllib.request.Request(
        f"{server.url}{path}",
        data=json.dumps(body).encode(),
        method="PATCH",
        headers={"Content-Type": content_type},
    )
    with urllib.request.urlopen(request, timeout=5):
        pass


def wait_until(
    predicate: Callable[[], Any], timeout: float = 20.0, what: str = "condition", interval: float = 0.05
) -> Any:
    """Poll ``predicate`` every ``interval`` s until it returns something truthy (bounded by ``timeout``)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
