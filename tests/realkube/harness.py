"""Run a fidelity case on a real control plane and read what kube-scheduler decided.

Objects are made as a real cluster has them: nodes through POST then their capacity through the
``status`` subresource (as a kubelet reports it), running pods bound by ``spec.nodeName``, PriorityClasses
for every priority (the Priority admission plugin refuses a pod that sets ``spec.priority`` itself), the
``default`` ServiceAccount that the (absent) controller-manager would create. DRA objects
(``resource.k8s.io/v1``): DeviceClasses under their own names (claims name them; deleted after the case),
ResourceSlices with the case's prefix on their name, node and pool (a claim allocated by an earlier case
keeps its devices, so pools never repeat), DeviceTaintRules with it on the pool they select (deleted after
the case), ResourceClaims in the case's namespace. Services, ReplicaSets, StatefulSets and
ReplicationControllers (what PodTopologySpread's default selector reads) in the case's namespace; with no
controller-manager they only exist, and pods keep their ``ownerReferences`` to them.
"""

from __future__ import annotations

import copy
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.realkube import storage
from tests.realkube.cases import Case

Raw = dict[str, Any]


@dataclass(frozen=True)
class Verdict:
    scheduled: bool
    node: str  # where it was bound ("" when not)
    message: str  # the PodScheduled condition's message ("" when bound)
    nominated: str = ""  # status.nominatedNodeName after a successful preemption

    def as_dict(self) -> dict[str, Any]:
        return {
            "scheduled": self.scheduled,
            "node": self.node,
            "message": self.message,
            "nominated": self.nominated,
        }


def ok(result: tuple[int, Raw], what: str) -> Raw:
    status, body = result
    if status >= 300:
        raise RuntimeError(f"{what}: HTTP {status}: {body.get('message', body)}")
    return body


def _pod_for_server(raw: Raw, ns: str, prefix: str) -> tuple[Raw, tuple[str, int, str] | None]:
    pod = copy.deepcopy(raw)
    keep = ("name", "labels", "annotations", "ownerReferences")
    pod["metadata"] = {k: v for k, v in pod["metadata"].items() if k in keep}
    pod["metadata"]["namespace"] = ns
    pod.pop("status", None)
    spec = pod["spec"]
    if spec.get("nodeName"):
        spec["nodeName"] = prefix + spec["nodeName"]
    # so are the node names a required matchFields metadata.name term pins (as DaemonSet pods are pinned)
    required = (
        spec.get("affinity", {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    )
    for term in (required or {}).get("nodeSelectorTerms", []):
        for req in term.get("matchFields", []):
            if req.get("key") == "metadata.name":
                req["values"] = [prefix + v for v in req.get("values", [])]
    pc = None
    if "priority" in spec:
        name = spec.get("priorityClassName") or f"p{spec['priority']}"
        pc = (name, int(spec.pop("priority")), spec.pop("preemptionPolicy", "PreemptLowerPriority"))
        spec["priorityClassName"] = name
    return pod, pc


def _node_for_server(raw: Raw, prefix: str) -> tuple[Raw, Raw]:
    node = copy.deepcopy(raw)
    status = node.pop("status", {})
    node["metadata"]["name"] = prefix + node["metadata"]["name"]
    node["metadata"]["labels"]["kubernetes.io/hostname"] = node["metadata"]["name"]
    return node, {"status": {"capacity": status.get("capacity", {}), "allocatable": status.get("allocatable", {}),
                             "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                             "message": "no kubelet: set by the test"}]}}  # fmt: skip


def create_namespace(cp: Any, ns: str) -> None:
    """A namespace and its ``default`` ServiceAccount (the absent controller-manager's job; the
    ServiceAccount admission plugin refuses pods in a namespace without one)."""
    ok(cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}}), f"namespace {ns}")
    ok(cp.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "default"}}),
        "serviceaccount")  # fmt: skip


def create_node(cp: Any, raw: Raw, prefix: str = "") -> str:
    """POST the node, then its capacity, allocatable and Ready condition through the ``status`` subresource
    (as a kubelet reports them: a POST's status is dropped); returns the node's name."""
    node, status = _node_for_server(raw, prefix)
    name = str(node["metadata"]["name"])
    ok(cp.request("POST", "/api/v1/nodes", node), f"node {name}")
    ok(cp.request("PATCH", f"/api/v1/nodes/{name}/status", status, "application/merge-patch+json"),
        f"node {name} status")  # fmt: skip
    return name


DRA = "/apis/resource.k8s.io/v1"
# kind → collection under /api/v1 or /apis/apps/v1, namespaced (PodTopologySpread's DefaultSelector)
SELECTING: dict[str, str] = {
    "Service": "/api/v1/namespaces/{ns}/services",
    "ReplicationController": "/api/v1/namespaces/{ns}/replicationcontrollers",
    "ReplicaSet": "/apis/apps/v1/namespaces/{ns}/replicasets",
    "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets",
}


def create_selecting(cp: Any, raw: Raw, ns: str) -> None:
    """POST a Service or controller into the case's namespace (deleted with it)."""
    obj = copy.deepcopy(raw)
    obj["metadata"] = {"name": obj["metadata"]["name"], "namespace": ns, **{
        k: v for k, v in obj["metadata"].items() if k in ("labels", "annotations")}}  # fmt: skip
    obj.pop("status", None)
    ok(
        cp.request("POST", SELECTING[obj["kind"]].format(ns=ns), obj),
        f"{obj['kind']} {obj['metadata']['name']}",
    )


def create_pdb(cp: Any, raw: Raw, ns: str) -> None:
    """POST a PodDisruptionBudget into the case's namespace, then the status the (absent) disruption controller
    would write (``disruptionsAllowed``, read by DefaultPreemption's ``filterPodsWithPDBViolation``) through the
    ``status`` subresource."""
    obj = copy.deepcopy(raw)
    status = obj.pop("status", None)
    obj["metadata"] = {"name": obj["metadata"]["name"], "namespace": ns}
    path = f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"
    ok(cp.request("POST", path, obj), f"PodDisruptionBudget {obj['metadata']['name']}")
    if status:
        ok(cp.request("PATCH", f"{path}/{obj['metadata']['name']}/status", {"status": status},
                      "application/merge-patch+json"), "PodDisruptionBudget status")  # fmt: skip


def create_dra(cp: Any, raw: Raw, ns: str, prefix: str) -> tuple[str, str] | None:
    """POST one DRA object; returns (collection path, name) of a cluster-scoped one to delete afterwards."""
    obj = copy.deepcopy(raw)
    obj["metadata"] = {k: v for k, v in obj["metadata"].items() if k in ("name", "labels", "annotations")}
    obj.pop("status", None)
    kind = obj["kind"]
    if kind == "ResourceClaim":
        ok(
            cp.request("POST", f"{DRA}/namespaces/{ns}/resourceclaims", obj),
            f"claim {obj['metadata']['name']}",
        )
        return None
    if kind == "ResourceSlice":
        obj["metadata"]["name"] = prefix + obj["metadata"]["name"]
        spec = obj["spec"]
        if spec.get("nodeName"):
            spec["nodeName"] = prefix + spec["nodeName"]
        for device in spec.get("devices") or ():  # per-device node selection names nodes too
            if device.get("nodeName"):
                device["nodeName"] = prefix + device["nodeName"]
        spec["pool"]["name"] = prefix + spec["pool"]["name"]
        path = f"{DRA}/resourceslices"
    elif kind == "DeviceTaintRule":  # selects devices by pool: the case's pools carry its prefix
        selector = obj["spec"].get("deviceSelector") or {}
        if selector.get("pool"):
            selector["pool"] = prefix + selector["pool"]
        path = f"{DRA}/devicetaintrules"
    else:
        path = f"{DRA}/deviceclasses"
    ok(cp.request("POST", path, obj), f"{kind} {obj['metadata']['name']}")
    return path, str(obj["metadata"]["name"])


def run_case(cp: Any, case: Case, index: int, timeout: float = 60.0) -> Verdict:
    """Create the case's objects in a fresh namespace with node names prefixed ``c<index>-``, then the pod,
    and return what kube-scheduler did; everything the case made is deleted afterwards."""
    ns, prefix = f"case-{index}", f"c{index}-"
    created_nodes: list[str] = []
    made: list[tuple[str, str]] = []
    classes: set[str] = set()
    dra_made: list[tuple[str, str]] = []
    provisioned: list[str] = []  # PVs the stand-in external-provisioner made (storage.provision)
    try:
        create_namespace(cp, ns)
        pods: list[Raw] = []
        for obj in case.objects:
            if obj["kind"] == "Node":
                created_nodes.append(create_node(cp, obj, prefix))
            elif obj["kind"] in storage.KINDS:  # classes, PVs, claims, CSINodes (after their nodes)
                made.append(storage.create(cp, obj, ns, prefix))
            elif obj["kind"] == "Pod":
                pods.append(obj)
            elif obj["kind"] in SELECTING:
                create_selecting(cp, obj, ns)
            elif obj["kind"] == "PodDisruptionBudget":
                create_pdb(cp, obj, ns)
            else:
                dra_obj = create_dra(cp, obj, ns, prefix)
                if dra_obj:
                    dra_made.append(dra_obj)
        for obj in [*pods, case.pod]:
            pod, pc = _pod_for_server(obj, ns, prefix)
            if pc and pc[0] not in classes:
                name, value, policy = pc
                pcname = f"{prefix}{name}"
                ok(cp.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", {
                    "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": pcname},
                    "value": value, "preemptionPolicy": policy}), f"priorityclass {pcname}")  # fmt: skip
                classes.add(name)
            if pc:
                pod["spec"]["priorityClassName"] = f"{prefix}{pc[0]}"
            if obj is case.pod:
                time.sleep(1.0)  # let the scheduler's informers see the nodes and running pods first
            ok(cp.request("POST", f"/api/v1/namespaces/{ns}/pods", pod), f"pod {pod['metadata']['name']}")
        available = [name for path, name in made if path.endswith("/persistentvolumes")]

        def tick() -> None:  # the absent PV controller and provisioner
            if made:
                storage.provision(cp, ns, prefix, provisioned)
                storage.complete_bindings(cp, ns, available + provisioned)

        return _wait_verdict(cp, ns, case.pod["metadata"]["name"], prefix, len(created_nodes), timeout, tick)
    finally:
        cleanup(cp, ns, created_nodes, {f"{prefix}{c}" for c in classes})
        for path, name in dra_made:
            cp.request("DELETE", f"{path}/{name}")
        for name in provisioned:
            cp.request("DELETE", f"/api/v1/persistentvolumes/{name}")
        for path, name in made:
            cp.request(
                "DELETE",
                f"{path}/{name}",
                {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
            )


_COUNT = re.compile(r"^0/(\d+) nodes are available")


def _wait_verdict(
    cp: Any,
    ns: str,
    name: str,
    prefix: str,
    nodes: int,
    timeout: float,
    tick: Callable[[], None] = lambda: None,
) -> Verdict:
    deadline = time.monotonic() + timeout
    last: Verdict | None = None
    while time.monotonic() < deadline:
        tick()  # the absent PV controller's part of a WaitForFirstConsumer binding (storage.complete_bindings)
        pod = ok(cp.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}"), "get pod")
        node = pod["spec"].get("nodeName", "")
        if node:
            return Verdict(True, node.removeprefix(prefix), "")
        cond = next(
            (c for c in pod.get("status", {}).get("conditions", []) if c["type"] == "PodScheduled"), None
        )
        if cond and cond.get("status") == "False":
            # node names are prefixed per case; the texts that name one (a preemption's placement) drop it
            # (and a pool's, inside a device ID driver/pool/device)
            msg = cond.get("message", "").replace(f" {prefix}", " ").replace(f"/{prefix}", "/")
            nominated = pod["status"].get("nominatedNodeName", "").removeprefix(prefix)
            last = Verdict(False, "", msg, nominated)
            m = _COUNT.match(msg)
            # a message about another node count means the scheduler's cache still held an earlier case's
            # nodes; the pod is retried on the node events, so wait for the message about this case
            if m is None or int(m.group(1)) == nodes:
                time.sleep(0.5)  # one more look: a nomination is written after the condition
                pod = ok(cp.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}"), "get pod")
                nominated = pod.get("status", {}).get("nominatedNodeName", "").removeprefix(prefix)
                return Verdict(False, "", msg, nominated)
        time.sleep(0.2)
    if last is not None:
        return last
    raise TimeoutError(f"kube-scheduler gave no verdict on {ns}/{name} in {timeout:.0f} s")


def cleanup(cp: Any, ns: str, nodes: list[str], classes: set[str]) -> None:
    opts = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
    status, body = cp.request("GET", f"/api/v1/namespaces/{ns}/pods")
    for pod in body.get("items", []) if status == 200 else []:
        cp.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}", opts)
    for node in nodes:
        cp.request("DELETE", f"/api/v1/nodes/{node}", opts)
    for pc in classes:
        cp.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{pc}", opts)
    cp.request("DELETE", f"/api/v1/namespaces/{ns}", opts)


class KubegpuProcess:
    """A ``python -m kubegpu.cli.live_cmd …`` process with its log; ``stop()`` ends it by its own PID."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        self._fh = log.open("w")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        argv = [sys.executable, "-m", "kubegpu.cli.live_cmd", *args]
        self.proc = subprocess.Popen(argv, stdout=self._fh, stderr=subprocess.STDOUT, env=env)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._fh.close()
