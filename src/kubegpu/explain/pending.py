"""Why is this pod Pending? The exact scheduler message, then the evidence behind each part (R11, R17).

``explain_pod`` runs one scheduling cycle without placing the pod, then groups nodes by the reason that
rejected them and, for each group, shows the numbers (requested vs free, the taint, the labels), the
fix, the pitfall it usually is, and the commands that confirm it.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from kubegpu.batch.status import workload_status
from kubegpu.devices.container_view import allocate_response
from kubegpu.devices.sharing import MIG_RESOURCE_PREFIX
from kubegpu.explain.engine import Engine
from kubegpu.explain.findings import has_gpu_labels
from kubegpu.model import affinity
from kubegpu.model.gpu_facts import GPU_TAINT_KEY, tolerates_gpu_taint
from kubegpu.model.objects import Node, Pod
from kubegpu.model.quantity import format_milli
from kubegpu.model.resources import is_gpu
from kubegpu.scheduler.cluster import NodeView
from kubegpu.scheduler.device_ledger import Assignment, choose, container_requests
from kubegpu.scheduler.framework import Framework
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.plugins.node_resources_fit import fit_request, insufficient_resources
from kubegpu.scheduler.plugins.taint_toleration import first_untolerated
from kubegpu.scheduler.registry import in_tree_registry, kubegpu_profile
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.scheduler.status import Code


@dataclass
class NodeEvidence:
    name: str
    plugin: str
    reasons: list[str]
    code: str
    evidence: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "plugin": self.plugin,
            "reasons": self.reasons,
            "code": self.code,
            "evidence": self.evidence,
        }


@dataclass
class ReasonGroup:
    reason: str
    nodes: list[str]
    fix: str
    pitfall: str
    commands: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "count": len(self.nodes),
            "nodes": self.nodes,
            "fix": self.fix,
            "pitfall": self.pitfall,
            "commands": self.commands,
        }


@dataclass
class DeviceGrant:
    """Devices one container gets: the IDs kubelet allocates and the physical GPUs behind them, in the
    order the container sees them (logical CUDA index 0, 1, …; not the host's indexes: R9.3)."""

    container: str
    resource: str
    device_ids: list[str]
    gpus: list[dict[str, Any]]  # {"logical": i, "host_index": n, "uuid": ...}
    env: dict[str, str]
    shared: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"container": self.container, "resource": self.resource, "device_ids": self.device_ids,
                "gpus": self.gpus, "env": self.env, "shared": self.shared}  # fmt: skip


@dataclass
class Explanation:
    pod: str
    schedulable: bool
    node: str | None
    message: str
    nodes: list[NodeEvidence] = field(default_factory=list)
    groups: list[ReasonGroup] = field(default_factory=list)
    nominated_node: str = ""
    victims: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    recorded_message: str = ""  # the PodScheduled condition the cluster itself reported, if any
    allocation: list[DeviceGrant] = field(default_factory=list)
    devices_synthesized: bool = False
    kubelet: dict[str, Any] | None = None  # admission outcome on the chosen node, when it fails
    queue: dict[str, Any] | None = None  # batch layer: queue, position, quota shortfall, gang members

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "schedulable": self.schedulable,
            "node": self.node,
            "message": self.message,
            "nominatedNode": self.nominated_node or None,
            "victims": self.victims,
            "nodes": [n.to_dict() for n in self.nodes],
            "groups": [g.to_dict() for g in self.groups],
            "notes": self.notes,
            "recordedMessage": self.recorded_message or None,
            "allocation": [g.to_dict() for g in self.allocation],
            "devicesSynthesized": self.devices_synthesized,
            "kubelet": self.kubelet,
            "queue": self.queue,
        }


def _ns_cmd(ns: str, rest: str) -> str:
    return f"kubectl -n {ns} {rest}"


def _resource_evidence(pod: Pod, view: NodeView) -> list[str]:
    out = []
    for short in insufficient_resources(fit_request(pod), view):
        r = short.resource
        if r == "pods":
            out.append(f"pods: {short.used} running of {short.capacity} allowed")
            continue
        free = short.capacity - short.used
        line = (
            f"{r}: pod requests {format_milli(r, short.requested)}, node has {format_milli(r, max(free, 0))} free "
            f"(allocatable {format_milli(r, short.capacity)}, already requested {format_milli(r, short.used)})"
        )
        if short.unresolvable:
            line += " — more than the node's whole allocatable: preemption cannot help"
        if short.capacity == 0 and r.startswith("nvidia.com/") and has_gpu_labels(view.node):
            offered = {k: v for k, v in view.node.allocatable.items() if is_gpu(k) and v}
            if r.startswith(MIG_RESOURCE_PREFIX) and offered:
                line += (
                    "; the node offers "
                    + ", ".join(
                        f"{k.removeprefix('nvidia.com/')} ×{format_milli(k, v)}"
                        for k, v in sorted(offered.items())
                    )
                    + " (a different MIG layout: see `kubegpu plan mig`)"
                )
            elif not offered:
                line += (
                    "; the node's labels say it has GPUs, so its device plugin has not registered them (R3.4)"
                )
        out.append(line)
    return out


def _affinity_evidence(pod: Pod, node: Node) -> list[str]:
    out = []
    for k, v in pod.node_selector.items():
        have = node.labels.get(k)
        if have != v:
            out.append(
                f"nodeSelector {k}={v}; node has {k}={have}"
                if have is not None
                else f"nodeSelector {k}={v}; node has no {k} label"
            )
    for i, term in enumerate(pod.required_affinity or ()):
        if affinity.term_matches(term, node.labels, node.name):
            continue
        for req in term.match_expressions:
            have = node.labels.get(req.key)
            if not affinity.requirement_matches(req, have):
                shown = f"{req.key}={have}" if have is not None else f"no {req.key} label"
                out.append(
                    f"required term {i}: {req.key} {req.operator} {list(req.values)}; node has {shown}"
                )
    return out


def node_evidence(engine: Engine, pod: Pod, idx: int, plugin: str) -> list[str]:
    view = engine.cluster.view(idx)
    node = view.node
    if plugin == names.NODE_RESOURCES_FIT:
        return _resource_evidence(pod, view)
    if plugin == names.TAINT_TOLERATION:
        taint = first_untolerated(node.taints, pod.tolerations)
        return [f"taint {taint} is not tolerated by the pod"] if taint else []
    if plugin == names.NODE_AFFINITY:
        return _affinity_evidence(pod, node)
    if plugin == names.NODE_UNSCHEDULABLE:
        return ["spec.unschedulable is true (cordoned)"]
    if plugin == names.NODE_PORTS:
        used = {(hp.port, hp.protocol) for hp in view.host_ports}
        return [
            f"hostPort {hp.port}/{hp.protocol} already used on the node"
            for hp in pod.host_ports
            if (hp.port, hp.protocol) in used
        ]
    if plugin == names.NODE_NAME:
        return [f"pod is pinned to spec.nodeName={pod.node_name}"]
    if plugin == names.GPU_DEVICE_FIT:
        model = engine.cluster.devices.models[idx]
        if model is not None:
            _, refusal = choose(pod, model, engine.cluster.devices.taken(idx))
            if refusal is not None:
                return [refusal.evidence]
    return []


def _group_advice(engine: Engine, pod: Pod, reason: str, nodes: list[str]) -> tuple[str, str, list[str]]:
    ns = pod.namespace
    first = nodes[0]
    if reason.startswith("Insufficient "):
        resource = reason[len("Insufficient ") :]
        advertised = sorted({r for n in engine.snapshot.nodes for r in n.capacity})
        if resource not in advertised:
            close = difflib.get_close_matches(resource, advertised, n=1)
            hint = f" Did you mean {close[0]}?" if close else ""
            return (
                f"No node advertises {resource} in status.capacity: the name must match exactly (R11.4).{hint} "
                "Fix the pod template, not the nodes.",
                "A resource name no node registers can never be satisfied, whatever the cluster's size.",
                [
                    _ns_cmd(ns, "get nodes -o custom-columns=NAME:.metadata.name,CAPACITY:.status.capacity"),
                    _ns_cmd(ns, f"get pod {pod.name} -o jsonpath='{{.spec.containers[*].resources}}'"),
                ],
            )
        need = fit_request(pod).get(resource, 0)
        free = engine.free(resource)
        here = [free[n] for n in nodes]
        total, largest = sum(here), max(here, default=0)
        elsewhere = sum(f for n, f in free.items() if n not in nodes)
        if is_gpu(resource):
            frag = ""
            if total >= need > largest:
                frag = (
                    f" Together these nodes have {format_milli(resource, total)} free, but no single one has {format_milli(resource, need)}: "
                    "the free devices are scattered (R9.2)."
                )
            if elsewhere:
                frag += (
                    f" Another {format_milli(resource, elsewhere)} {resource} is free on nodes the pod is not allowed on "
                    "(see the other reasons)."
                )
            return (
                f"The pod needs {format_milli(resource, need)} {resource} on ONE node; among the nodes it may use, the most free on any "
                f"one is {format_milli(resource, largest)}.{frag} Free devices on one node (wait for or move single-GPU pods), use a "
                "pool kept for multi-GPU jobs (R14.2), or split the job into several pods under a job framework (R9.1).",
                "Free GPUs on different nodes do not add up for one pod (R17.5). `describe node` shows requests, "
                "not utilisation: an idle GPU that is requested is taken (R11.3, R17.2).",
                [
                    _ns_cmd(ns, f"describe node {first}"),
                    _ns_cmd(ns, f"get pods -A -o wide --field-selector spec.nodeName={first}"),
                ],
            )
        return (
            f"Lower the pod's {resource} request to what profiling shows it uses, or free {resource} on a node (R10.1).",
            "Requests are reserved whether used or not; oversized CPU/memory requests on GPU pods strand GPUs.",
            [_ns_cmd(ns, f"describe node {first}")],
        )
    if reason == "Too many pods":
        return (
            "The node is at its pod limit (status.allocatable.pods).",
            "",
            [_ns_cmd(ns, f"describe node {first}")],
        )
    if reason.startswith("node(s) had untolerated taint"):
        taint = next(
            (
                t
                for t in (engine.snapshot.node(first) or Node(first)).taints
                if reason.endswith(f"{{{t.key}: {t.value}}}")
            ),
            None,
        )
        key = taint.key if taint else "<key>"
        effect = taint.effect if taint else "NoSchedule"
        gpu_taint = key == GPU_TAINT_KEY
        return (
            f"These nodes keep pods off with taint {taint}. If the pod belongs on them, add a toleration "
            f"(key: {key}, operator: Equal, value: {taint.value if taint else '<value>'}, effect: {effect}) to its template; "
            "otherwise leave them alone (R5.3).",
            (
                "A toleration only allows the pod onto the node; it neither attracts it there nor gives it a GPU: "
                "the pod must also request nvidia.com/gpu (R17.4)."
                if gpu_taint
                else "A toleration allows, it does not attract: pair it with node affinity if the pod must land there."
            ),
            [
                _ns_cmd(ns, f"get node {first} -o jsonpath='{{.spec.taints}}'"),
                _ns_cmd(ns, f"get pod {pod.name} -o jsonpath='{{.spec.tolerations}}'"),
            ],
        )
    if reason == "node(s) didn't match Pod's node affinity/selector":
        keys = sorted(
            {*pod.node_selector, *(r.key for t in pod.required_affinity or () for r in t.match_expressions)}
        )
        commands = [_ns_cmd(ns, f"get nodes -L {','.join(keys)}")] if keys else []
        wanted = _wanted_label(pod)
        if wanted is not None:
            key, value = wanted
            node = engine.snapshot.node(first)
            old = node.labels.get(key) if node else None
            rollback = f"{key}={old} --overwrite" if old is not None else f"{key}-"
            commands += [
                _ns_cmd(ns, f"label node {first} {key}={value} --overwrite --dry-run=server -o yaml"),
                _ns_cmd(
                    ns,
                    f"label node {first} {key}={value} --overwrite   # only if {first} belongs in that pool",
                ),
                _ns_cmd(ns, f"label node {first} {rollback}   # rollback"),
            ]
        return (
            "The pod's nodeSelector / required node affinity excludes these nodes (R5.2). If the pod may run on them, "
            "relax the requirement (keep compatibility required, make performance preferred); if a node really "
            "belongs in the pod's pool, label it — dry-run first, keep the rollback (R5.4).",
            "Every required constraint shrinks the pool the pod can use; hard constraints fragment the cluster.",
            commands,
        )
    if reason == "node(s) were unschedulable":
        return (
            "The nodes are cordoned. Cordon stops new pods only; uncordon when maintenance is done and verified (R15.3).",
            "Cordoning moves nothing: running pods stay until drained.",
            [
                _ns_cmd(ns, f"get node {first} -o jsonpath='{{.spec.unschedulable}}'"),
                _ns_cmd(ns, f"uncordon {first} --dry-run=server"),
            ],
        )
    if reason.startswith("node(s) didn't have free ports"):
        return (
            "Another pod holds the same hostPort on these nodes; avoid hostPort or spread the pods.",
            "",
            [_ns_cmd(ns, f"get pods -A -o wide --field-selector spec.nodeName={first}")],
        )
    return ("", "", [])


def _wanted_label(pod: Pod) -> tuple[str, str] | None:
    """The single label value the pod asks for, if its constraint is that simple (nodeSelector or one In)."""
    if pod.node_selector:
        return next(iter(sorted(pod.node_selector.items())))
    for term in pod.required_affinity or ():
        for req in term.match_expressions:
            if req.operator == "In" and len(req.values) == 1:
                return req.key, req.values[0]
    return None


def _recorded_condition(pod: Pod) -> str:
    cond = pod.scheduled_condition
    return cond[2] if cond and cond[0] == "False" else ""


def explain_pod(engine: Engine, pod: Pod) -> Explanation:
    """Explain ``pod`` against the engine's cluster state without changing it."""
    notes = pod_notes(engine, pod)
    if pod.scheduling_gates:
        notes.insert(
            0,
            f"the pod has scheduling gates {list(pod.scheduling_gates)}: kube-scheduler will not try it until they are removed",
        )
    result = engine.scheduler.schedule_one(pod, assume=False)
    exp = Explanation(
        pod=pod.key,
        schedulable=result.scheduled,
        node=result.node,
        message=result.message,
        nominated_node=result.nominated_node,
        victims=[v.key for v in result.victims],
        notes=notes,
        recorded_message=_recorded_condition(pod),
    )
    exp.devices_synthesized = any(m.synthesized for m in engine.devices.values())
    exp.queue = workload_status(engine.snapshot, pod)
    if result.node is not None:
        _explain_devices(engine, pod, result.node, result.allocation, exp)
    diag = result.diagnosis
    if diag is None:
        return exp
    by_reason: dict[str, list[str]] = defaultdict(list)
    fw = engine.framework
    for idx in range(len(engine.cluster)):
        code = int(diag.codes[idx])
        if code == 0:
            continue
        name = engine.cluster.nodes[idx].name
        if diag.evaluated[idx]:
            plugin = fw.plugin_name(int(diag.plugins[idx]))
            reasons = list(fw.reason_strings(int(diag.reason_ids[idx])))
        else:
            plugin = diag.absent.plugin if diag.absent else ""
            reasons = list(diag.absent.texts()) if diag.absent else []
        exp.nodes.append(
            NodeEvidence(name, plugin, reasons, Code(code).name, node_evidence(engine, pod, idx, plugin))
        )
        for r in reasons:
            by_reason[r].append(name)
    for reason in sorted(by_reason, key=lambda r: f"{len(by_reason[r])} {r}"):
        fix, pitfall, commands = _group_advice(engine, pod, reason, by_reason[reason])
        exp.groups.append(ReasonGroup(reason, by_reason[reason], fix, pitfall, commands))
    if result.nominated_node:
        exp.notes.append(
            f"preemption: the pod would be nominated to {result.nominated_node} after evicting {', '.join(exp.victims)} "
            "(lower priority). Preemption is never free: check the victims' checkpoints and PDBs first (R14.3)."
        )
    return exp


def _explain_devices(
    engine: Engine, pod: Pod, node_name: str, allocation: Assignment | None, exp: Explanation
) -> None:
    """Which devices the pod gets on ``node_name`` — or why kubelet would still refuse it there."""
    idx = engine.cluster.index[node_name]
    model = engine.cluster.devices.models[idx]
    if model is None or not container_requests(pod):
        return
    if allocation is None:
        allocation, refusal = choose(pod, model, engine.cluster.devices.taken(idx))
        if refusal is not None:
            reason, message = refusal.kubelet_reason, refusal.kubelet_error
            exp.kubelet = {
                "admitted": False,
                "node": node_name,
                "reason": reason,
                "message": message,
                "evidence": refusal.evidence,
            }
            alt = Scheduler(
                Framework(kubegpu_profile(), in_tree_registry(), engine.snapshot.pdbs), engine.cluster
            )
            other = alt.schedule_one(pod, assume=False)
            exp.notes.append(
                f"kube-scheduler counts devices, so it would bind the pod to {node_name}; kubelet would then fail it "
                f"at admission ({reason}: {refusal.evidence}). kubegpu's device-aware profile "
                + (
                    f"would place it on {other.node} instead."
                    if other.node
                    else f"finds no node: {other.message}"
                )
            )
            return
    assert allocation is not None
    gpu_memory = {i: model.memory_mib * 1024 * 1024 for i in range(64)} if model.memory_mib else None
    for container, resources in allocation.items():
        for resource, ids in resources.items():
            plan = model.plans[resource]
            response = allocate_response(plan, model.config, ids, gpu_memory=gpu_memory)
            gpus = [
                {"logical": v.cuda_index, "host_index": v.host_index, "uuid": v.uuid,
                 **({"mig_index": v.mig_index} if v.mig_index is not None else {})}
                for v in response.visible
            ]  # fmt: skip
            exp.allocation.append(
                DeviceGrant(container, resource, list(ids), gpus, dict(response.envs), plan.shared)
            )
            if plan.shared:
                exp.notes.append(
                    f"{container} gets time-sliced replicas of {resource}: they share the physical GPU's memory and "
                    "fault domain with every other replica; a replica is not 1/N of the GPU (R6.2, R17.3)."
                )
    if model.synthesized:
        exp.notes.append(
            f"{node_name}'s devices are synthesised from its capacity and labels (no device inventory annotation): "
            "device IDs are stand-ins and links/NUMA are unknown."
        )


def pod_notes(engine: Engine, pod: Pod) -> list[str]:
    """Pitfalls visible from the pod and its namespace alone (R8, R17)."""
    notes: list[str] = []
    gpu = {r: v for r, v in pod.requests.items() if is_gpu(r) and v}
    if not gpu and tolerates_gpu_taint(pod):
        notes.append(
            "the pod tolerates the GPU taint but requests no GPU: it may land on a GPU node yet gets no device, "
            "and takes CPU and memory that GPU pods need (R17.4). Request nvidia.com/gpu in limits, or drop the toleration."
        )
    if pod.owner and pod.owner.kind in (
        "ReplicaSet",
        "StatefulSet",
        "Job",
        "DaemonSet",
        "ReplicationController",
    ):
        notes.append(
            f"the pod is owned by {pod.owner.kind} {pod.owner.name}: deleting it only makes the controller create "
            "another one with the same spec (R17.6). Fix the template or the cluster, not the pod."
        )
    if pod.unmodelled_constraints:
        notes.append(
            f"the pod uses {', '.join(pod.unmodelled_constraints)}, which kubegpu does not evaluate yet: nodes shown "
            "as feasible may still be rejected by kube-scheduler's InterPodAffinity/PodTopologySpread plugins."
        )
    for quota in engine.snapshot.quotas:
        if quota.namespace != pod.namespace:
            continue
        for r, hard in quota.hard.items():
            used = quota.used.get(r, 0)
            if r.startswith("requests.") and is_gpu(r[len("requests.") :]) and hard and used >= hard:
                notes.append(
                    f"ResourceQuota {quota.name} in {quota.namespace}: {r} used {format_milli(r, used)} of "
                    f"{format_milli(r, hard)}: new pods asking for it are rejected at admission, not left Pending (R8)."
                )
    return notes
