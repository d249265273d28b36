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

Errors are answered as HTTP 200 with ``Error`` set (the protocol carries failures in the result). The
cluster state (assigned pods, nodes, PDBs, PriorityClasses) comes from informers; until they have synced
every call answers ``Error``. Caveat: with ``nodeCacheCapable: false`` the nodes in the request are only
used for their names; their accounting comes from the informer, which may lag kube-scheduler's cache.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from http.server import ThreadingHTTPServer
from typing import Any

import numpy as np

from kubegpu.errors import InputError
from kubegpu.http_reply import ReplyHandler
from kubegpu.kube.client import ApiError, KubeApi
from kubegpu.kube.informer import SYNC, Reflector, apply_to_store
from kubegpu.kube.live import LISTED_KINDS
from kubegpu.model.objects import Node, Pod, PodDisruptionBudget, PriorityClass
from kubegpu.model.parse import parse_node, parse_pdb, parse_pod, parse_priority_class
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


def _candidates(args: Mapping[str, Any]) -> tuple[list[str], bool]:
    """Candidate node names, and whether they came as ``NodeNames`` (nodeCacheCapable)."""
    names = args.get("NodeNames")
    if isinstance(names, list):
        return [str(n) for n in names], True
    nodes = args.get("Nodes") or {}
    return [str((n.get("metadata") or {}).get("name")) for n in nodes.get("items") or []], False


def _pod(args: Mapping[str, Any], state: ExtenderState) -> Pod:
    """``ExtenderArgs.Pod`` comes from the scheduler's informer cache: a v1.Pod without TypeMeta."""
    return parse_pod(
        {"apiVersion": "v1", "kind": "Pod", **(args.get("Pod") or {})},
        "ExtenderArgs.Pod",
        state.priority_classes,
    )


def filter_nodes(state: ExtenderState, args: Mapping[str, Any]) -> dict[str, Any]:
    names, by_name = _candidates(args)
    failed: dict[str, str] = {}
    unresolvable: dict[str, str] = {}
    with state.lock:
        if not {"Node", "Pod"} <= state.synced:
            return {"Nodes": None, "NodeNames": None, "FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": "kubegpu extender: informers have not synced yet"}  # fmt: skip
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
    result: dict[str, Any] = {"Nodes": None, "NodeNames": None, "FailedNodes": failed, "FailedAndUnresolvableNodes": unresolvable, "Error": ""}  # fmt: skip
    if by_name:
        result["NodeNames"] = passing
    else:
        keep = set(passing)
        nodes = args.get("Nodes") or {}
        result["Nodes"] = {
            **nodes,
            "items": [n for n in nodes.get("items") or [] if n["metadata"]["name"] in keep],
        }
    return result


def prioritize(state: ExtenderState, args: Mapping[str, Any]) -> list[dict[str, Any]]:
    names, _ = _candidates(args)
    with state.lock:
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


def preempt(args: Mapping[str, Any]) -> dict[str, Any]:
    meta = args.get("NodeNameToMetaVictims")
    if isinstance(meta, dict):
        return {"NodeNameToMetaVictims": meta}
    victims = args.get("NodeNameToVictims") or {}
    return {
        "NodeNameToMetaVictims": {
            node: {
                "Pods": [{"UID": (p.get("metadata") or {}).get("uid", "")} for p in v.get("Pods") or []],
                "NumPDBViolations": v.get("NumPDBViolations", 0),
            }
            for node, v in victims.items()
        }
    }


def bind(api: KubeApi | None, args: Mapping[str, Any]) -> dict[str, Any]:
    if api is None:
        return {"Error": "kubegpu extender: binding needs API access (--kubeconfig or --in-cluster)"}
    namespace, name = str(args.get("PodNamespace") or ""), str(args.get("PodName") or "")
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"namespace": namespace, "name": name, "uid": args.get("PodUID") or ""},
        "target": {"kind": "Node", "name": str(args.get("Node") or "")},
    }
    try:
        api.post(f"/api/v1/namespaces/{namespace}/pods/{name}/binding", binding)
    except ApiError as exc:
        return {"Error": exc.message or str(exc)}
    return {"Error": ""}


def serve(state: ExtenderState, api: KubeApi | None, host: str, port: int) -> ThreadingHTTPServer:
    class Handler(ReplyHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # see webhook.py: no 40 ms Nagle/delayed-ACK stall per call

        def do_GET(self) -> None:
            ok = {"Node", "Pod"} <= state.synced
            self.reply(200 if ok else 503, b"ok" if ok else b"not synced", "text/plain; charset=utf-8")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            verb = self.path.rstrip("/").rsplit("/", 1)[-1]
            if not 0 < length <= MAX_BODY or verb not in ("filter", "prioritize", "bind", "preempt"):
                self.reply(404, b"404 page not found\n", "text/plain; charset=utf-8")
                return
            try:
                args = json.loads(self.rfile.read(length))
                if not isinstance(args, dict):
                    raise ValueError("expected a JSON object")
                answer: Any
                if verb == "filter":
                    answer = filter_nodes(state, args)
                elif verb == "prioritize":
                    answer = prioritize(state, args)
                elif verb == "bind":
                    answer = bind(api, args)
                else:
                    answer = preempt(args)
            except (ValueError, InputError) as exc:
                answer = {"Error": f"kubegpu extender: {exc}"}
            self.reply(200, json.dumps(answer).encode(), "application/json")

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def start_informers(api: KubeApi, state: ExtenderState, stop: threading.Event) -> None:
    for listed in LISTED_KINDS:
        if listed.kind in WATCHED:
            reflector = Reflector(api, listed, state.on_event, stop)
            threading.Thread(target=reflector.run, name=f"reflector-{listed.kind}", daemon=True).start()
