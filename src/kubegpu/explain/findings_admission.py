"""GPU pods kubelet rejected at admission: bound to a node, never started, phase ``Failed`` (R3.4, R16).

kubelet admits each pod bound to it before starting it; a refusal sets ``status.phase=Failed`` with
``status.reason`` and ``status.message`` and is final: kubelet does not admit the pod again, so nothing is
Pending and no scheduler sees it. The reasons read here (kubernetes ``pkg/kubelet/lifecycle/predicate.go``
and the container manager's admit handlers):

* ``UnexpectedAdmissionError``: the device manager's ``Allocate`` failed, message ``Allocate failed due to
  <error>, which is unexpected``. ``no healthy devices present; cannot allocate unhealthy devices <res>``
  and ``cannot allocate unregistered device <res>`` (``devicemanager`` ``devicesToAllocate``) mean the device
  plugin had no healthy device registered at that moment: after a node reboot kubelet re-admits the pods
  bound to it before the plugin has registered again (kubernetes#125579, since kubernetes#116376). An error
  from the plugin's own ``Allocate`` comes wrapped as ``rpc error: code = Unknown desc = …``; NVIDIA's plugin
  refuses more than one replica of a shared resource with ``maximum request size for shared resources is 1``
  (time-slicing with ``failRequestsGreaterThanOne``; MPS always, ``internal/rm/rm.go``;
  NVIDIA/k8s-device-plugin#929); ``requested number of devices unavailable for <res>. Requested: n,
  Available: m`` means kubelet's own count of free healthy devices fell short of the scheduler's
  (Project-HAMi/HAMi-core#110);
* ``OutOf<resource>`` (``InsufficientResourcePrefix``, e.g. ``OutOfnvidia.com/gpu``): kubelet's own fit
  check found the node's allocatable short of the request (``Node didn't have enough resource: …``);
* ``TopologyAffinityError`` (``Resources cannot be allocated with Topology locality``): the Topology
  Manager's ``restricted`` or ``single-numa-node`` policy found no NUMA-aligned set of the free devices
  (and CPUs); the scheduler does not see NUMA, so it placed the pod by the node's total (pytorch/ci-infra#696:
  4-GPU pods on p5.48xlarge, 2 sockets of 4 H100, ``single-numa-node`` scope pod).

Who brings the workload back follows the pod's controller (its ``ownerReferences``): a bare pod stays
Failed until deleted and re-created. Pods whose reason, message and fate are alike are one finding.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Final

from kubegpu.devices.numa import TOPOLOGY_AFFINITY_ERROR
from kubegpu.explain.findings_base import POD_MARK, Finding, naming_pod
from kubegpu.explain.kubectl import mutate
from kubegpu.model.names import DEFAULT_SCHEDULER
from kubegpu.model.objects import Node, Pod
from kubegpu.model.quantity import format_milli, to_milli_text
from kubegpu.model.resources import is_extended, is_gpu
from kubegpu.model.snapshot import ClusterSnapshot

UNEXPECTED_ADMISSION = "UnexpectedAdmissionError"  # predicate.go UnexpectedAdmissionError
OUT_OF = "OutOf"  # predicate.go InsufficientResourcePrefix: "OutOf" + the resource name
REJECTED_PREFIX = "Pod was rejected: "  # kubelet's prefix on status.message
# devicemanager devicesToAllocate: no healthy device of the resource registered when kubelet admitted the pod
NOT_REGISTERED = (
    "no healthy devices present; cannot allocate unhealthy devices",
    "cannot allocate unregistered device",
)
SHARED_ONE = "maximum request size for shared resources is 1"  # NVIDIA k8s-device-plugin Allocate
# devicemanager devicesToAllocate: its healthy devices less those its own checkpoint holds for pods were fewer
# than the container asks ("requested number of devices unavailable for %s. Requested: %d, Available: %d")
SHORT_OF_FREE = "requested number of devices unavailable for"
SHORT_OF_FREE_COUNTS = re.compile(r"unavailable for (\S+?)\. Requested: ?(\d+), Available: ?(\d+)")
# kubelet's fit failure text (lifecycle/predicate.go): "Node didn't have enough resource: %s, requested: %d,
# used: %d, capacity: %d"; capacity 0 means no device of the resource was registered at all
NONE_REGISTERED = re.compile(r"enough resource: \S+, requested: \d+, used: \d+, capacity: 0\b")
SHOWN = 12  # pods a grouped finding's text names (every one is in its objects)
REJECTED: Final = "admission-rejected"  # ``Finding.check`` of the findings below

# What each controller does with a Failed pod it owns (kube-controller-manager).
REPLACED_BY = {
    "ReplicaSet": "creates a replacement (a Failed pod is no longer active for it); the Failed pod stays until "
    "deleted or garbage-collected",
    "ReplicationController": "creates a replacement; the Failed pod stays until deleted or garbage-collected",
    "StatefulSet": "deletes the Failed pod and creates it again under the same name",
    "DaemonSet": "deletes the failed pod and creates another on the node, with a back-off",
    "Job": "counts it as a failed pod toward backoffLimit and creates a replacement while the limit allows",
}


def is_rejected(pod: Pod) -> bool:
    """A Failed pod kubelet refused at admission, asking for a GPU resource."""
    reason = pod.status_reason
    return (
        pod.phase == "Failed"
        and (reason in (UNEXPECTED_ADMISSION, TOPOLOGY_AFFINITY_ERROR) or reason.startswith(OUT_OF))
        and any(is_gpu(r) and v for r, v in pod.requests.items())
    )


def _cause(reason: str, message: str) -> tuple[str, str]:
    """(layer, the hint the message supports; "" when it names no cause kubegpu knows)."""
    if any(m in message for m in NOT_REGISTERED):
        return "driver/device-plugin", (
            "kubelet's device manager had no healthy device of the resource registered when it admitted the pod: "
            "the device plugin had not registered (again) yet, as right after a node reboot or a device plugin "
            "restart, when kubelet re-admits the pods bound to the node before the plugin is back "
            "(kubernetes#125579)."
        )
    if SHORT_OF_FREE in message:
        return "driver/device-plugin", (
            "kubelet's device manager counts its own: the healthy devices the plugin registered, less those it "
            "has already given to pods on the node (its checkpoint), were fewer than the container asks. Either "
            "no scheduler counted at all (a pod created with spec.nodeName, as the GPU Operator's validator pods "
            "are, on a node whose devices the pods there already request), or a scheduler found room and "
            "kubelet's view differed: devices turned unhealthy or the plugin re-registered fewer, devices still "
            "held for pods kubelet has not cleaned up, or a scheduler that places pods by its own count (HAMi, "
            "Volcano) sent more than kubelet has. Compare the node's allocatable with the requests of the pods on "
            "it (`kubectl get pods -o wide` on the node) and the device plugin's log."
        )
    if SHARED_ONE in message:
        return "workload", (
            "the device plugin refuses more than one replica of a shared (time-sliced or MPS) resource in one "
            "container: with time-slicing when failRequestsGreaterThanOne is true, with MPS whatever it says. "
            "Several replicas give no more of the GPU than one. Request 1, or a resource that is not shared "
            "for several GPUs."
        )
    if reason == TOPOLOGY_AFFINITY_ERROR:
        return "node", (
            "kubelet's Topology Manager (policy restricted or single-numa-node) found no set of free devices "
            "(and exclusive CPUs) on one NUMA node, or as few as the request needs, although the node had enough "
            "in total: kube-scheduler counts the node's total, not per NUMA node, so it keeps sending such pods "
            "to nodes whose free GPUs are split across sockets. Read the kubelet's topologyManagerPolicy and "
            "topologyManagerScope on the node, then keep pods of this size on nodes with a whole NUMA node free "
            "(separate pools for small and large GPU pods, or a NUMA-aware scheduler plugin such as "
            "NodeResourceTopologyMatch); `kubegpu plan kubelet-policy` shows what another policy would admit."
        )
    if reason.startswith(OUT_OF) and NONE_REGISTERED.search(message):
        return "driver/device-plugin", (
            f"kubelet counted no {reason[len(OUT_OF) :]} on the node at all (capacity 0) when it admitted the pod: "
            "the device plugin had not registered its devices (again) yet, as right after a node restart, when "
            "kubelet re-admits the pods bound to the node before the plugin is back (GoogleCloudPlatform/"
            "container-engine-accelerators#100, kubernetes#125579). Check the plugin's pod on the node and the "
            "node's allocatable now."
        )
    if reason.startswith(OUT_OF) and not is_extended(reason[len(OUT_OF) :]):
        # memory, cpu, pods, hugepages: no device plugin behind them (an extended resource, another vendor's GPU
        # or an RDMA device, may be short for unregistered or unhealthy devices: the reading below)
        return "node", (
            f"kubelet's own fit check found the node's allocatable {reason[len(OUT_OF) :]} short: the pods already "
            "bound to the node request it (used), and this pod's request does not fit beside them. Whatever bound "
            "it there counted the node otherwise: a scheduler other than kube-scheduler keeping its own view of "
            "the node (KAI-Scheduler#306), or spec.nodeName set past any scheduler. Not a GPU fault: free the "
            "resource on the node or let the pod be scheduled again elsewhere."
        )
    if reason.startswith(OUT_OF):
        return "node", (
            f"kubelet's own fit check found the node's allocatable {reason[len(OUT_OF) :]} short of what the pods "
            "bound to it request (devices unregistered or unhealthy at that moment, or a pod placed by "
            "spec.nodeName past the scheduler)."
        )
    return "node", ""


def rejection(snapshot: ClusterSnapshot, pod: Pod) -> tuple[str, str, str] | None:
    """(what kubelet said, why and what to do, the layer at fault) for a GPU pod it rejected at admission, read
    as ``admission_findings`` reads it (``reading``: the snapshot's pods holding the devices); None for another
    pod. ``explain`` on the pod and ``diagnose`` say the same."""
    if not is_rejected(pod):
        return None
    message = pod.status_message.removeprefix(REJECTED_PREFIX)
    layer, hint = reading(snapshot, pod.status_reason, message, [pod])
    fate = _fate(pod)
    return (
        f'status.reason {pod.status_reason}, message "{message}"',
        f"The rejection is final: kubelet does not admit the pod again. {fate[0].upper()}{fate[1:]}."
        + (f" Why: {hint}" if hint else ""),
        layer,
    )


def _fate(pod: Pod) -> str:
    owner = pod.owner
    if owner is None:
        return "bare pod: nothing re-creates it; delete it and create it again"
    does = REPLACED_BY.get(owner.kind)
    if does is None:
        return f"owned by {owner.kind} {owner.name}, which kubegpu does not model: whether it replaces the pod is its own"
    return f"its {owner.kind} {owner.name} {does}"


def admission_findings(snapshot: ClusterSnapshot) -> list[Finding]:
    """One finding per (reason, message, fate) among the GPU pods kubelet rejected at admission."""
    groups: dict[tuple[str, str, bool], list[Pod]] = defaultdict(list)
    for pod in snapshot.pods:
        if is_rejected(pod):
            message = pod.status_message.removeprefix(REJECTED_PREFIX)
            groups[(pod.status_reason, message, pod.owner is None)].append(pod)
    return [
        _finding(reason, message, bare, pods, *reading(snapshot, reason, message, pods))
        for (reason, message, bare), pods in sorted(groups.items())
    ]


def reading(snapshot: ClusterSnapshot, reason: str, message: str, pods: Sequence[Pod]) -> tuple[str, str]:
    """(the layer at fault, why) of kubelet's refusal of ``pods``: when the snapshot shows the pods bound to the
    node holding the devices (``_held_by_others``), that is the cause; else the message's (``_cause``) with what
    the snapshot adds to it (``_stale_count``)."""
    held = _held_by_others(snapshot, message, pods)
    if held:
        return "workload", held[0].upper() + held[1:]
    layer, hint = _cause(reason, message)
    return layer, hint + _stale_count(snapshot, message, pods)


def _counted(
    snapshot: ClusterSnapshot, message: str, pods: Sequence[Pod]
) -> tuple[str, int, int, list[Node]] | None:
    """For kubelet's "requested number of devices unavailable" message: the resource, what the pod asked and
    what kubelet said was available (milli-units), and the rejected pods' nodes that advertise the resource;
    None for another message."""
    m = SHORT_OF_FREE_COUNTS.search(message)
    if m is None:
        return None
    resource = m.group(1)
    nodes = [snapshot.node(n) for n in sorted({p.node_name for p in pods if p.node_name})]
    return (
        resource,
        to_milli_text(resource, m.group(2)),
        to_milli_text(resource, m.group(3)),
        [n for n in nodes if n is not None and resource in n.allocatable],
    )


def _held_by_others(snapshot: ClusterSnapshot, message: str, pods: Sequence[Pod]) -> str:
    """When kubelet said "Available: m" short of the request and the snapshot agrees, because the pods still
    bound to the node request all but m of its allocatable devices: nothing is broken, the devices are taken
    (NVIDIA/gpu-operator#233, #480: the operator's nvidia-device-plugin-validator pod, created on the node
    directly, refused while a workload held the node's only GPU). Names those pods, the one fact to act on; ""
    unless it holds on every node of ``pods`` (a finding reads one group of pods)."""
    counted = _counted(snapshot, message, pods)
    if counted is None:
        return ""
    resource, asked, _, nodes = counted
    rejected = {p.key for p in pods}
    out = []
    for node in nodes:
        name, alloc = node.name, node.allocatable[resource]
        holders = [p for p in snapshot.pods_on(name) if p.key not in rejected and p.requests.get(resource, 0)]
        held = sum(p.requests.get(resource, 0) for p in holders)
        if alloc - held >= asked:
            continue
        named = ", ".join(
            f"{p.key} ({format_milli(resource, p.requests[resource])})" for p in holders[:SHOWN]
        ) + (f", +{len(holders) - SHOWN} more" if len(holders) > SHOWN else "")
        out.append(
            f"{name} has {format_milli(resource, alloc)} {resource} allocatable and the pods bound there request "
            f"{format_milli(resource, held)} of them: {named}"
        )
    if not out or len(out) < len(nodes):  # a node of the group with devices left: not this reading for all
        return ""
    return (
        f"the node's {resource} devices are taken, and kubelet counted right: {'; '.join(out)}. Nothing is "
        "broken: the pod was bound to a node with none left (spec.nodeName set at creation, as operators do for "
        "their validation pods, or a scheduler that counted otherwise). Free one there (stop a pod holding it) "
        "or create the pod again where one is free."
    )


def _stale_count(snapshot: ClusterSnapshot, message: str, pods: Sequence[Pod]) -> str:
    """When kubelet said "Available: m" short of the request but the snapshot shows the node with every
    registered device healthy (allocatable = capacity) and enough of them not requested by the pods bound
    there, kubelet's device manager counts devices for pods that are gone: kubernetes#130145 (devicesToAllocate
    failing part-way leaves them in its allocatedDevices; the fix, kubernetes#130172, was still open in 2026;
    follow-up #137317), where every later GPU pod on the node was refused until kubelet was restarted. Only for
    pods the default scheduler placed: a scheduler counting by its own rules (HAMi, Volcano) explains a gap too."""
    counted = _counted(snapshot, message, pods)
    if counted is None or any(p.scheduler_name != DEFAULT_SCHEDULER for p in pods):
        return ""
    resource, asked, available, nodes = counted
    out = []
    for node in nodes:
        name, alloc = node.name, node.allocatable[resource]
        if alloc != node.capacity.get(resource):
            continue
        held = sum(
            p.requests.get(resource, 0) for p in snapshot.pods if p.node_name == name and not p.is_terminal
        )
        free = alloc - held
        if free >= asked > available:
            out.append(
                f"{name}: {format_milli(resource, alloc)} allocatable, all healthy, {format_milli(resource, held)} "
                f"requested by the pods bound there, {format_milli(resource, free)} free"
            )
    if not out:
        return ""
    return (
        f" The snapshot shows room kubelet did not count ({'; '.join(out)}), yet kubelet said {format_milli(resource, available)} "
        f"available: its device manager still counts {resource} devices for pods that are gone "
        "(kubernetes#130145: an allocation failing part-way is not given back; kubernetes#130172 fixes it). "
        "There every later pod asking for it was refused until kubelet was restarted on the node (a kubelet "
        "restart does not stop the running containers)."
    )


def _finding(reason: str, message: str, bare: bool, pods: Sequence[Pod], layer: str, hint: str) -> Finding:
    """``layer`` and ``hint``: the refusal's ``reading``."""
    first = pods[0]
    nodes = sorted({p.node_name for p in pods if p.node_name})
    subject = many = ""  # one pod: alike but for its name with another's of that reason (``naming_pod``)
    if len(pods) == 1:
        title, subject, many = naming_pod(f"kubelet rejected {POD_MARK} at admission ({reason})", first.key)
        who = f"{first.key} on {first.node_name or 'an unnamed node'}"
        fate = _fate(first)
    else:
        title = f"kubelet rejected {len(pods)} GPU pods at admission ({reason})"
        named = ", ".join(f"{p.key} on {p.node_name or '?'}" for p in pods[:SHOWN])
        who = (
            f"{len(pods)} pods ({named}" + (f", +{len(pods) - SHOWN} more" if len(pods) > SHOWN else "") + ")"
        )
        fates = sorted({_fate(p) for p in pods})
        fate = "; ".join(fates)
    commands = [f"kubectl -n {first.namespace} describe pod {first.name}"]
    if bare:
        ns, name = first.namespace, first.name
        create_dry, create = mutate(ns, f"create -f {name}.yaml")
        commands += [
            f"kubectl -n {ns} get pod {name} -o yaml > {name}.yaml   # the backup, and the pod to create again",
            *mutate(ns, f"delete pod {name}"),
            # the API server refuses a create that sets metadata.resourceVersion (k8s.io/apiserver storage
            # errResourceVersionSetOnCreate); a kept spec.nodeName binds it to the same node past the scheduler
            f"# in {name}.yaml remove metadata.resourceVersion (a create that sets it is refused) and spec.nodeName "
            "(else it is bound to the same node again, past the scheduler)",
            create_dry,
            f"{create}   # also the rollback of the delete",
        ]
    if layer == "driver/device-plugin":
        commands += [f"kubectl get pods -A -o wide --field-selector spec.nodeName={n}" for n in nodes[:3]]
    return Finding(
        "critical" if bare else "warning", layer, title, [*(f"pod/{p.key}" for p in pods), *(f"node/{n}" for n in nodes)],
        f"{who}: status.reason {reason}, message \"{message}\". The rejection is final for the pod: kubelet does "
        f"not admit it again, so it is not Pending and no scheduler retries it. {fate[0].upper()}{fate[1:]}."
        + (f" Why: {hint}" if hint else ""),
        "R3.4, R16", commands, check=REJECTED, subject=subject, many=many,
    )  # fmt: skip
