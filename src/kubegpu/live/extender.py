"""``kubegpu extender``: the kube-scheduler extender HTTP API, answered by the scheduling core.

For clusters that keep the default scheduler: kube-scheduler POSTs JSON to ``<urlPrefix>/<verb>`` with
the types of ``k8s.io/kube-scheduler/extender/v1``. Those Go structs have no json tags, so the wire keys
are the Go field names (``Pod``, ``Nodes``, ``NodeNames``, ``FailedNodes``, ``Host``, ``Score`` …):

* ``filter``: ``ExtenderArgs{Pod, Nodes, NodeNames}`` → ``ExtenderFilterResult{Nodes, NodeNames,
  FailedNodes, FailedAndUnresolvableNodes, Error}``. The core's PreFilter and Filter run over the
  candidate nodes; a node rejected with Unschedulable goes to ``FailedNodes``, with
  UnschedulableAndUnresolvable to ``FailedAndUnresolvableNodes`` (preemption skips those), the value
  being the rejecting plugin's reasons joined by ``", "``. Passing nodes are echoed in the form they
  came in (``NodeNames`` with ``nodeCacheCapable: true``, else ``Nodes`` as a NodeList).
* ``prioritize``: same args → ``HostPriorityList`` ``[{Host, Score}]``, the core's weighted total scaled
  to ``0..MaxExtenderPriority`` (10): kube-scheduler multiplies it by the extender weight and by
  ``MaxNodeScore / MaxExtenderPriority`` = 10.
* ``bind``: ``ExtenderBindingArgs{PodName, PodNamespace, PodUID, Node}`` → ``ExtenderBindingResult{Error}``,
  posting ``pods/binding`` like the DefaultBinder.
* ``preempt``: ``ExtenderPreemptionArgs{Pod, NodeNameToVictims, NodeNameToMetaVictims}`` →
  ``ExtenderPreemptionResult{NodeNameToMetaVictims}``: kubegpu has no objection to the scheduler's
  victims, so every candidate comes back as it came (pods by ``UID``).

Failures follow what kube-scheduler's client (``pkg/scheduler/extender.go``: ``send`` turns a non-200
status into an error, else decodes the body into the result type) can see: ``filter`` and ``bind`` answer
HTTP 200 with the result's ``Error`` set; ``prioritize`` (``HostPriorityList`` has no error field) and
``preempt`` (``ExtenderPreemptionResult`` has none: a 200 ``{"Error"}`` would decode as "no candidates")
answer a non-200 status with a plain-text message: 400 for a malformed request, 503 before the informers
have synced, 500 for a kubegpu bug. A body without ``Content-Length`` (Go's client always sets it for
these JSON bodies) is 411, an empty one 400, an oversized one 413. Every field the handlers read is
checked for its type first, so no request closes the connection without an answer. The
cluster state (assigned pods, nodes, PDBs, PriorityClasses) comes from informers; until they have synced
``filter`` answers ``Error`` and ``prioritize`` 503. Caveat: with ``nodeCacheCapable: false`` the nodes in the request are only
used for their names; their accounting comes from the informer, which may lag kube-scheduler's cache.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from http.server import ThreadingHTTPServer
from typing import Any

import numpy as np

from kubegpu.errors import InputError
from kubegpu.http_reply import ReplyHandler
from kubegpu.kube.client import ApiError, KubeApi
from kubegpu.kube.informer import SYNC, Reflector, apply_to_store
from kubegpu.kube.listed_kinds import LISTED_KINDS
from kubegpu.model.objects import Node, Pod, PodDisruptionBudget, PriorityClass
from kubegpu.model.parse import name_problem, parse_node, parse_pod
from kubegpu.model.parse_policy import parse_pdb, parse_priority_class
from kubegpu.scheduler.assembly import SchedulerSpec, assemble
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import MAX_NODE_SCORE, CycleState
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.scheduler.status import Code

log = logging.getLogger(__name__)

MAX_EXTENDER_PRIORITY = 10  # extenderv1.MaxExtenderPriority
WATCHED = ("Node", "Pod", "PriorityClass", "PodDisruptionBudget")
MAX_BODY = 64 * 1024 * 1024


class ExtenderState:
    """Informer-fed cluster state and a core ``Scheduler`` over it, rebuilt when something changed."""

    def __init__(self, profile_name: str = "default-scheduler") -> None:
        self.profile_name = profile_name
        self.lock = threading.Lock()
        self.nodes: dict[str, Node] = {}
        self.pods: dict[str, Pod] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self.pdbs: dict[str, PodDisruptionBudget] = {}
        self.synced: set[str] = set()
        self._version = 0
        self._built: tuple[int, Scheduler] | None = None

    def on_event(self, kind: str, event_type: str, items: list[dict[str, Any]]) -> None:
        stores: dict[str, dict[str, Any]] = {
            "Node": self.nodes,
            "Pod": self.pods,
            "PriorityClass": self.priority_classes,
            "PodDisruptionBudget": self.pdbs,
        }
        with self.lock:
            apply_to_store(stores[kind], event_type, items, lambda raw: self._parse(kind, raw))
            if event_type == SYNC:
                self.synced.add(kind)
            self._version += 1

    def _parse(self, kind: str, raw: dict[str, Any]) -> object:
        if kind == "Node":
            return parse_node(raw, "watch")
        if kind == "Pod":
            return parse_pod(raw, "watch", self.priority_classes)
        if kind == "PriorityClass":
            return parse_priority_class(raw, "watch")
        return parse_pdb(raw, "watch")

    def scheduler(self) -> Scheduler:
        """Called with ``lock`` held."""
        if self._built is None or self._built[0] != self._version:
            placed = [p for p in self.pods.values() if p.node_name and not p.is_terminal]
            spec = SchedulerSpec("default", self.profile_name, pdbs=tuple(self.pdbs.values()))
            self._built = (self._version, assemble(spec, ClusterState(list(self.nodes.values()), placed)))
        return self._built[1]


class BadRequest(ValueError):
    """A request kube-scheduler's types could not have produced: a field of the wrong type or missing."""


class NotSynced(Exception):
    """The informers have not listed nodes and pods yet: any answer would be about an empty cluster."""


NOT_SYNCED = "kubegpu extender: informers have not synced yet"


def _mapping(value: object, field: str, *, nullable: bool = False) -> dict[str, Any] | None:
    """``value`` if it is a JSON object (or ``null`` when ``nullable``), else ``BadRequest`` naming ``field``."""
    if value is None and nullable:
        return None
    if not isinstance(value, dict):
        raise BadRequest(f"{field}: expected an object, got {_kind(value)}")
    return value


def _list(value: object, field: str) -> list[Any]:
    """``value`` if it is a JSON array; ``null`` (a nil Go slice) reads as empty."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadRequest(f"{field}: expected an array, got {_kind(value)}")
    return value


def _string(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise BadRequest(f"{field}: expected a string, got {_kind(value)}")
    return value


def _kind(value: object) -> str:
    """The JSON name of ``value``'s type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _candidates(args: Mapping[str, Any]) -> tuple[list[str], bool]:
    """Candidate node names, and whether they came as ``NodeNames`` (nodeCacheCapable). ``ExtenderArgs``
    sets one of ``NodeNames`` (``*[]string``) and ``Nodes`` (``*v1.NodeList``); the other is ``null``."""
    names = args.get("NodeNames")
    if names is not None:
        return [_string(n, f"NodeNames[{i}]") for i, n in enumerate(_list(names, "NodeNames"))], True
    nodes = _mapping(args.get("Nodes"), "Nodes", nullable=True) or {}
    return [
        _node_name(n, f"Nodes.items[{i}]") for i, n in enumerate(_list(nodes.get("items"), "Nodes.items"))
    ], False


def _node_name(node: object, field: str) -> str:
    meta = _mapping((_mapping(node, field) or {}).get("metadata"), f"{field}.metadata") or {}
    name = _string(meta.get("name"), f"{field}.metadata.name")
    if not name:
        raise BadRequest(f"{field}.metadata.name: Required value")
    return name


def _pod(args: Mapping[str, Any], state: ExtenderState) -> Pod:
    """``ExtenderArgs.Pod`` comes from the scheduler's informer cache: a v1.Pod without TypeMeta."""
    raw = _mapping(args.get("Pod"), "Pod") or {}
    return parse_pod({"apiVersion": "v1", "kind": "Pod", **raw}, "ExtenderArgs.Pod", state.priority_classes)


def filter_error(message: str) -> dict[str, Any]:
    """An ``ExtenderFilterResult`` carrying only ``Error``: ``Filter`` returns it as its error."""
    return {"Nodes": None, "NodeNames": None, "FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": message}  # fmt: skip


def filter_nodes(state: ExtenderState, args: Mapping[str, Any]) -> dict[str, Any]:
    names, by_name = _candidates(args)
    failed: dict[str, str] = {}
    unresolvable: dict[str, str] = {}
    with state.lock:
        if not {"Node", "Pod"} <= state.synced:
            return filter_error(NOT_SYNCED)
        scheduler = state.scheduler()
        pod = _pod(args, state)
        cycle = CycleState()
        narrowed, status, plugins = scheduler.framework.run_pre_filter(cycle, pod, scheduler.cluster)
        index = scheduler.cluster.index
        if not status.is_success:
            target = unresolvable if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE else failed
            target.update({n: status.message() for n in names})
        else:
            codes, _, reasons = scheduler.filter_all(cycle, pod)
            for n in names:
                idx = index.get(n)
                if idx is None:
                    unresolvable[n] = "node(s) were unknown to the kubegpu extender"
                elif narrowed is not None and n not in narrowed:
                    unresolvable[n] = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]"
                elif codes[idx]:
                    message = ", ".join(scheduler.framework.reason_strings(int(reasons[idx])))
                    (unresolvable if codes[idx] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE else failed)[n] = (
                        message
                    )
    passing = [n for n in names if n not in failed and n not in unresolvable]
    result = {**filter_error(""), "FailedNodes": failed, "FailedAndUnresolvableNodes": unresolvable}
    if by_name:
        result["NodeNames"] = passing
    else:
        # _candidates has checked every item's shape, and names[i] is items[i]'s name.
        keep = set(passing)
        nodes = args.get("Nodes") or {}
        items = nodes.get("items") or []
        result["Nodes"] = {
            **nodes,
            "items": [item for item, n in zip(items, names, strict=True) if n in keep],
        }
    return result


def prioritize(state: ExtenderState, args: Mapping[str, Any]) -> list[dict[str, Any]]:
    names, _ = _candidates(args)
    with state.lock:
        if not {"Node", "Pod"} <= state.synced:
            raise NotSynced(NOT_SYNCED)
        scheduler = state.scheduler()
        pod = _pod(args, state)
        known = [n for n in names if n in scheduler.cluster.index]
        rows = np.array([scheduler.cluster.index[n] for n in known], dtype=np.intp)
        cycle = CycleState()
        scheduler.framework.run_pre_filter(cycle, pod, scheduler.cluster)
        total, _ = scheduler.framework.run_scores(cycle, pod, scheduler.cluster, rows)
        weight_sum = sum(scheduler.framework.weights[p.name] for p in scheduler.framework.score_plugins) or 1
    top = MAX_NODE_SCORE * weight_sum
    scores = {n: int(t) * MAX_EXTENDER_PRIORITY // top for n, t in zip(known, total, strict=True)}
    return [{"Host": n, "Score": scores.get(n, 0)} for n in names]


def _num_pdb_violations(victims: Mapping[str, Any], field: str) -> int:
    value = victims.get("NumPDBViolations", 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{field}.NumPDBViolations: expected an integer, got {_kind(value)}")
    return value


def preempt(args: Mapping[str, Any]) -> dict[str, Any]:
    """Every candidate back as ``MetaVictims``. kube-scheduler's ``convertToVictims`` dereferences each
    ``MetaVictims`` and ``MetaPod`` and looks the UID up on the node, so each is checked to be an object
    with a string ``UID`` rather than echoed as it came."""
    result: dict[str, Any] = {}
    meta = _mapping(args.get("NodeNameToMetaVictims"), "NodeNameToMetaVictims", nullable=True)
    if meta is not None:
        for node, v in meta.items():
            field = f"NodeNameToMetaVictims[{node}]"
            victims = _mapping(v, field) or {}
            pods = _list(victims.get("Pods"), f"{field}.Pods")
            uids = [
                _string((_mapping(p, f"{field}.Pods[{i}]") or {}).get("UID"), f"{field}.Pods[{i}].UID")
                for i, p in enumerate(pods)
            ]
            result[node] = {"Pods": [{"UID": u} for u in uids], "NumPDBViolations": _num_pdb_violations(victims, field)}  # fmt: skip
        return {"NodeNameToMetaVictims": result}
    full = _mapping(args.get("NodeNameToVictims"), "NodeNameToVictims", nullable=True) or {}
    for node, v in full.items():
        field = f"NodeNameToVictims[{node}]"
        victims = _mapping(v, field) or {}
        uids = []
        for i, p in enumerate(_list(victims.get("Pods"), f"{field}.Pods")):
            pod_meta = _mapping((_mapping(p, f"{field}.Pods[{i}]") or {}).get("metadata"), f"{field}.Pods[{i}].metadata")  # fmt: skip
            # ObjectMeta.UID is `json:"uid,omitempty"`: absent reads as "", which convertToVictims then
            # reports as a pod not found on the node.
            uids.append(_string((pod_meta or {}).get("uid", ""), f"{field}.Pods[{i}].metadata.uid"))
        result[node] = {"Pods": [{"UID": u} for u in uids], "NumPDBViolations": _num_pdb_violations(victims, field)}  # fmt: skip
    return {"NodeNameToMetaVictims": result}


def bind(api: KubeApi | None, args: Mapping[str, Any]) -> dict[str, Any]:
    namespace = _string(args.get("PodNamespace"), "PodNamespace")
    name = _string(args.get("PodName"), "PodName")
    node = _string(args.get("Node"), "Node")
    uid = _string(args.get("PodUID") or "", "PodUID")  # types.UID: a string; empty sets no precondition
    # ObjectMeta validation (a pod name is a DNS-1123 subdomain, a namespace a label), checked before they
    # go into the pods/binding URL, so a "/" or "?" cannot address another resource
    if name_problem(namespace, label=True):
        raise BadRequest(f"PodNamespace: {namespace!r} is not a namespace name")
    if name_problem(name):
        raise BadRequest(f"PodName: {name!r} is not a pod name")
    if not node:
        raise BadRequest("Node: Required value")
    if api is None:
        return {"Error": "kubegpu extender: binding needs API access (--kubeconfig or --in-cluster)"}
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"namespace": namespace, "name": name, "uid": uid},
        "target": {"kind": "Node", "name": node},
    }
    try:
        api.post(f"/api/v1/namespaces/{namespace}/pods/{name}/binding", binding)
    except ApiError as exc:
        return {"Error": exc.message or str(exc)}
    return {"Error": ""}


# The verbs whose result type has an Error field (ExtenderFilterResult, ExtenderBindingResult): a failure
# is HTTP 200 with that field set. The others get a non-200 status, which `send` reports as an error.
def bind_error(message: str) -> dict[str, Any]:
    return {"Error": message}


ERROR_IN_RESULT: dict[str, Callable[[str], dict[str, Any]]] = {"filter": filter_error, "bind": bind_error}
VERBS = ("filter", "prioritize", "bind", "preempt")


def answer(state: ExtenderState, api: KubeApi | None, verb: str, body: bytes) -> tuple[int, Any]:
    """The status and JSON-able answer (or plain-text message, when the status is not 200) to ``body``."""
    try:
        args = json.loads(body)
        if not isinstance(args, dict):
            raise BadRequest(f"expected a JSON object, got {_kind(args)}")
        if verb == "filter":
            return 200, filter_nodes(state, args)
        if verb == "prioritize":
            return 200, prioritize(state, args)
        if verb == "bind":
            return 200, bind(api, args)
        return 200, preempt(args)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError, BadRequest, InputError) as exc:
        code, message = 400, f"kubegpu extender: {exc}"
    except NotSynced as exc:
        code, message = 503, str(exc)
    except Exception as exc:  # a kubegpu bug: log it, but still answer so kube-scheduler is not left waiting
        log.exception("extender %s failed", verb)
        code, message = 500, f"kubegpu extender: internal error: {type(exc).__name__}: {exc}"
    to_result = ERROR_IN_RESULT.get(verb)
    return (200, to_result(message)) if to_result else (code, message)


def serve(state: ExtenderState, api: KubeApi | None, host: str, port: int) -> ThreadingHTTPServer:
    class Handler(ReplyHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # see webhook.py: no 40 ms Nagle/delayed-ACK stall per call

        def do_GET(self) -> None:
            ok = {"Node", "Pod"} <= state.synced
            self.reply(200 if ok else 503, b"ok" if ok else b"not synced", "text/plain; charset=utf-8")

        def fail(self, code: int, message: str, *, close: bool = False) -> None:
            if close:  # the body was not read: it cannot be skipped to find the next request
                self.close_connection = True
            self.reply(code, f"{message}\n".encode(), "text/plain; charset=utf-8")

        def do_POST(self) -> None:
            verb = self.path.rstrip("/").rsplit("/", 1)[-1]
            if verb not in VERBS:
                self.fail(404, "404 page not found", close=True)
                return
            # Go's http.NewRequest sets ContentLength for the bytes.Reader body extender.go's send builds,
            # so kube-scheduler never sends a chunked body; one without a length is refused, not guessed.
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                self.fail(411, "kubegpu extender: chunked request bodies are not supported: send Content-Length", close=True)  # fmt: skip
                return
            raw_length = self.headers.get("Content-Length")
            if raw_length is None:
                self.fail(411, "kubegpu extender: Content-Length required", close=True)
                return
            try:
                length = int(raw_length)
            except ValueError:
                self.fail(400, f"kubegpu extender: bad Content-Length {raw_length!r}", close=True)
                return
            if length > MAX_BODY:
                self.fail(413, f"kubegpu extender: request body over {MAX_BODY} bytes", close=True)
                return
            if length <= 0:
                self.fail(400, f"kubegpu extender: empty request body: expected a JSON {verb} request", close=length < 0)  # fmt: skip
                return
            code, result = answer(state, api, verb, self.rfile.read(length))
            if code == 200:
                self.reply(200, json.dumps(result).encode(), "application/json")
            else:
                self.fail(code, str(result))

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def start_informers(api: KubeApi, state: ExtenderState, stop: threading.Event) -> None:
    for listed in LISTED_KINDS:
        if listed.kind in WATCHED:
            reflector = Reflector(api, listed, state.on_event, stop)
            threading.Thread(target=reflector.run, name=f"reflector-{listed.kind}", daemon=True).start()
