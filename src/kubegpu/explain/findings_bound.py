"""GPU pods the scheduler already bound that do not run: the cause is on the node, not in scheduling (R3.4,
R16).

``kubectl get pods`` shows such a pod as Pending (``ContainerCreating``), ``RunContainerError``,
``CreateContainerError`` or ``CrashLoopBackOff``, or it stays listed on a node that stopped reporting. It
holds its GPUs on ``spec.nodeName`` and no scheduler looks at it again, so "no Pending GPU pod is blocked"
above it, or ``explain``'s "schedulable", answers a question nobody asked. What kubelet and the container
runtime said (the containers' waiting and last-terminated states, the pod's Warning events) names the cause;
the texts read here, each from its upstream source:

* ``no runtime for "<handler>" is configured``: containerd's CRI (``internal/cri/config/config.go``, wrapped
  by the sandbox run as ``failed to get sandbox runtime: …``) has no runtime of the name the pod's
  RuntimeClass hands it; CRI-O says ``failed to find runtime handler <h> from runtime list …`` and needs no
  such handler for GPUs (the toolkit is a hook there; NVIDIA/gpu-operator#1298). The GPU
  Operator's container-toolkit pod writes that runtime into containerd's config once the driver is up, so
  it shows for minutes on a fresh node (NVIDIA/gpu-operator#413, maintainer) and for good when the toolkit
  never configured the runtime containerd actually reads (gpu-operator#730, #549);
* ``nvml error: driver not loaded``: the toolkit's ``nvidia-container-cli`` (the OCI prestart hook) found
  no NVIDIA kernel module (NVIDIA/nvidia-container-toolkit#1269, #260);
* ``load library failed: libnvidia-ml.so.1``: it found no driver libraries where it looks (the driver
  root; NVIDIA/gpu-operator#511);
* a node kubelet stopped reporting (Ready ``False``/``Unknown``) or that is gone: the pod's status is
  kubelet's last report; the node lifecycle controller evicts after the pod's ``node.kubernetes.io/
  unreachable``/``not-ready`` tolerationSeconds (300 by the DefaultTolerationSeconds admission plugin) and
  a pod deleted there stays Terminating until kubelet confirms it or the Node object is deleted; the pod
  garbage collector deletes pods bound to a Node that no longer exists (``gcOrphaned``): a ReplicaSet's, Job's or
  StatefulSet's pod is made again elsewhere, a DaemonSet's (one pod per node), a static pod's mirror (its node's
  kubelet runs it from a manifest there) and a pod without a controller are not.

A pod on a node that stopped reporting is one finding, the node's: its status is kubelet's last report and
nothing starts there until kubelet is back, so what the runtime said last (an unresolvable CDI device, a driver
not loaded) is evidence in that finding, not a second cause. An unresolvable CDI device
(NVIDIA/nvidia-container-toolkit#1239) is ``findings_operands``' on the nodes it reads
(``findings_operands.covered``: lit and Ready) and this module's on every other; ``explain`` names it
everywhere. The GPU stack's own DaemonSet pods are left to ``device_plugin``'s chain and ``findings_operands``
(``findings_operands.stack_daemonset``); another DaemonSet's GPU pod (a monitoring agent asking for a GPU) is
read here as any bound GPU pod. Such a pod whose node advertises none of what it holds now (its device plugin's
registration ended) is one finding too, this module's, which says so (``explained``): ``findings``' "pod holds …,
which no node advertises now" is for the pods no cause on their node explains.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from kubegpu.explain import device_plugin
from kubegpu.explain.findings_admission import REPLACED_BY, rejection
from kubegpu.explain.findings_base import POD_MARK, Finding, naming_pod
from kubegpu.explain.findings_dra_prepare import prepare_reading
from kubegpu.explain.findings_operands import CDI_UNRESOLVED, covered, stack_daemonset
from kubegpu.explain.kubectl import kubectl, mutate
from kubegpu.explain.stopped_plugin import CAPACITY_ZEROED
from kubegpu.model.names import MIRROR_ANNOTATION
from kubegpu.model.objects import Pod
from kubegpu.model.quantity import format_milli
from kubegpu.model.resources import gpu_requests
from kubegpu.model.snapshot import ClusterSnapshot

# containerd CRI internal/cri/config/config.go (and pkg/cri/server before 2.0); CRI-O's text for the same
NO_RUNTIME: Final = re.compile(
    r'no runtime for \\?"([^"\\]+)\\?" is configured|failed to find runtime handler (\S+) from runtime list'
)
DRIVER_NOT_LOADED: Final = (
    "nvml error: driver not loaded"  # libnvidia-container: NVML_ERROR_DRIVER_NOT_LOADED
)
NO_NVML_LIBRARY: Final = "load library failed: libnvidia-ml.so.1"  # libnvidia-container dlopen of the driver
# libnvidia-container's requirement check (nvidia-container-toolkit internal/config/image: NVIDIA_REQUIRE_CUDA,
# "unsatisfied condition: %s, please update your driver ..."): the image's NVIDIA_REQUIRE_CUDA against the CUDA
# version the node's driver supports ("requirement error: unsatisfied condition: cuda>=12.8, please update your
# driver to a newer version, or use an earlier cuda container", kserve/kserve#4513;
# huggingface/text-generation-inference#1391 for cuda>=12.1)
CUDA_REQUIREMENT: Final = re.compile(r"requirement error: unsatisfied condition: (cuda\s*[<>=!]+\s*([\d.]+))")
# kubelet's container and sandbox failures (kuberuntime: ErrCreateContainer, ErrRunContainer, the
# FailedCreatePodSandBox event; StartError is containerd's terminated reason for a container it never started)
START_FAILURES: Final = ("CreateContainerError", "RunContainerError", "StartError", "FailedCreatePodSandBox")
TITLE_HEAD, TITLE_MARK = "GPU pod ", " bound to "  # a ``bound_findings`` title: HEAD pod MARK node verb: why
# the title of a cause that is the node's, the same for every pod on it (NotReady, gone): one title for all
# such pods, so a large outage reads as one kind of finding in the summary, not one per node
GROUP_HEAD = "GPU pods bound to "
BOUND: Final = "bound-pod"  # ``Finding.check`` of what ``bound_findings`` makes
# admission plugin RuntimeClass (plugin/pkg/admission/runtimeclass): the API server refuses the pod's creation
RUNTIME_CLASS_MISSING: Final = re.compile(r'pod rejected: RuntimeClass \\?"([^"\\]+)\\?" not found')


@dataclass
class Stuck:
    """Why a bound GPU pod does not run: ``cause`` a line, ``why`` what it means and the first step."""

    pod: Pod
    node: str
    cause: str
    why: str
    evidence: list[str]
    severity: str = "critical"
    layer: str = "driver/device-plugin"
    commands: list[str] = field(default_factory=list)
    verb: str = "does not start"  # the finding's title: "GPU pod P bound to N <verb>: <cause>"
    title: str = ""  # a title of its own instead (GROUP_HEAD …): a cause that is the node's, not the pod's
    cdi: bool = False  # its CDI device is unresolvable (who reports it: ``findings_operands.covered``)
    dra: bool = False  # kubelet cannot prepare its DRA claims (``findings_dra_prepare`` reports it)

    def to_dict(self) -> dict[str, object]:
        return {"node": self.node, "cause": self.cause, "why": self.why, "evidence": self.evidence,
                "commands": self.commands}  # fmt: skip


def _operand_pod(snapshot: ClusterSnapshot, node: str, key: str) -> tuple[device_plugin.Known, Pod] | None:
    """The GPU stack's DaemonSet pod of that kind (``device_plugin.KNOWN``: driver, toolkit) on ``node``, with
    its kind."""
    for ds in snapshot.records.daemonsets:
        k = device_plugin.known(ds)
        if k is not None and k.key == key:
            pod = device_plugin.pod_of(snapshot, ds, node)
            if pod is not None:
                return k, pod
    return None


Memo = dict[tuple[str, str], tuple[list[str], list[str]]]


def _operand_lines(snapshot: ClusterSnapshot, node: str, key: str, memo: Memo) -> tuple[list[str], list[str]]:
    """(its state lines, a command to read its log) for the GPU Operator's pod of ``key`` on ``node``; ``memo``
    keeps each node's answer (every pod on a node whose runtime fails asks the same, and each look reads
    every pod of the snapshot)."""
    if (node, key) not in memo:
        found = _operand_pod(snapshot, node, key)
        memo[node, key] = (
            ([], [])
            if found is None
            else (device_plugin.pod_state(snapshot, found[1])[1][:2], [device_plugin.plugin_log(*found)])
        )
    return memo[node, key]


def _cordon(ns: str, node: str) -> list[str]:
    """Keep new GPU pods off a node whose runtime or driver fails every GPU container, dry-run first (``-n``
    as on every kubectl line, though a Node has no namespace)."""
    dry, cordon = mutate(ns, f"cordon {node}")
    uncordon = kubectl(ns, f"uncordon {node}")
    return [dry, f"{cordon}   # rollback: {uncordon}"]


def _is_mirror(pod: Pod) -> bool:
    """A static pod's mirror: kubelet's annotation, or the Node as its owner (kubelets before MirrorPodNodeRestriction
    set only the annotation)."""
    return MIRROR_ANNOTATION in pod.annotations or (pod.owner is not None and pod.owner.kind == "Node")


def _after_gc(pod: Pod) -> str:
    """What follows the pod garbage collector's deletion of ``pod``, bound to a deleted Node: a ReplicaSet, Job
    or StatefulSet (``findings_admission.REPLACED_BY``: the controllers kubegpu knows replace their pods) makes its
    pod again and the scheduler places it elsewhere; another owner (an operator's custom resource) may or may not; a DaemonSet runs one pod per
    eligible node and this one is gone, so it makes none (Kubernetes' DaemonSet docs: "As nodes are removed from
    the cluster, those Pods are garbage collected"); nothing makes a pod without a controller again (the Pod
    lifecycle docs: a pod is bound once, and only a controller replaces it); a static pod's mirror (owned by its
    Node) is made by the kubelet of that one node from its manifest, never elsewhere (Kubernetes' "Create static
    Pods": "Static Pods are always bound to one Kubelet on a specific node")."""
    if _is_mirror(pod):
        return (
            f"and nothing creates it elsewhere: it is the mirror of a static pod, which only the kubelet of "
            f"{pod.node_name} runs, from a manifest on that machine (its staticPodPath); that kubelet makes the "
            "mirror again if the node registers again"
        )
    if pod.owner is None:
        return "and nothing creates this one again: it has no controller (save its spec and create it again if needed)"
    if pod.owner.kind == "DaemonSet":
        return (
            f"and DaemonSet {pod.namespace}/{pod.owner.name} creates none in its place: it runs one pod on each "
            "node it selects, and this node is gone"
        )
    # a controller kubegpu does not model (an operator's custom resource): whether it replaces a pod is its own
    if pod.owner.kind not in REPLACED_BY:
        return (
            f"and whether {pod.owner.kind} {pod.namespace}/{pod.owner.name}, which kubegpu does not model, makes "
            "another in its place is that controller's own"
        )
    return "and their controllers create them again elsewhere"


def _node_gone(snapshot: ClusterSnapshot, pod: Pod) -> Stuck | None:
    node = snapshot.node(pod.node_name)
    commands = [f"kubectl -n {pod.namespace} describe pod {pod.name}"]
    if node is None:
        return Stuck(
            pod, pod.node_name, f"its node {pod.node_name} is not in the snapshot",
            "If the Node was deleted, the pod garbage collector deletes the pods bound to it (gcOrphaned, after "
            f"a short quarantine) {_after_gc(pod)}; a pod still bound to a missing Node means "
            "kube-controller-manager has not done so yet, or the snapshot left the Node out (take nodes and pods "
            "together).",
            [f"spec.nodeName {pod.node_name}: no such Node in the snapshot"], "warning", "node",
            [*commands, f"kubectl -n {pod.namespace} get node {pod.node_name}",
             # nothing recreates a bare pod: its spec is lost with it unless kept now
             *([f"kubectl -n {pod.namespace} get pod {pod.name} -o yaml > {pod.name}.yaml   # its spec, to create "
                "it again without spec.nodeName"] if pod.owner is None and not _is_mirror(pod) else [])],
            "is stranded",
            f"{GROUP_HEAD}a node missing from the snapshot are stranded",
        )  # fmt: skip
    if node.ready:
        return None
    said = next(
        (f"{s}: {m.rstrip('.')}" if m else s for t, s, m in node.conditions if t == "Ready"), "not reported"
    )
    dry, delete = mutate(pod.namespace, f"delete node {node.name}")
    daemon = pod.owner is not None and pod.owner.kind == "DaemonSet"
    evicted = (
        # the DaemonSet controller tolerates both taints with no tolerationSeconds (kubernetes#44458)
        "The node lifecycle controller taints the node node.kubernetes.io/unreachable (or not-ready) NoExecute, "
        "which a DaemonSet's pod tolerates for good: it is not evicted, and no other node takes its place. "
        if daemon
        else "The node lifecycle controller taints the node node.kubernetes.io/unreachable (or not-ready) NoExecute "
        "and evicts the pod once its toleration for that taint runs out (300 s unless the pod sets its own); a "
        "pod deleted there stays Terminating, its GPUs still counted on the node, until kubelet comes back or "
        "the Node object is deleted (a StatefulSet makes no replacement until then). "
    )
    return Stuck(
        pod, node.name, f"its node {node.name} is NotReady (Ready {said})",
        f"kubelet on {node.name} stopped reporting, so the pod's status is its last report and nothing new "
        f"starts there. {evicted}"
        f"First bring back kubelet on {node.name} (the machine, its kubelet and container runtime); if the "
        "machine is gone for good, delete its Node object and the pod garbage collector removes its pods.",
        [f"node {node.name}: Ready {said}"], "critical", "node",
        [*commands, f"kubectl -n {pod.namespace} describe node {node.name}",
         f"{dry}   # only if the machine is gone for good",
         f"{delete}   # rollback: kubelet registers the Node again when it starts"],
        "is stranded", f"{GROUP_HEAD}a NotReady node are stranded",
    )  # fmt: skip


def _runtime(snapshot: ClusterSnapshot, pod: Pod, memo: Memo) -> Stuck | None:
    if not device_plugin.may_crash(pod):
        return None
    state, lines = device_plugin.pod_state(snapshot, pod)
    if state != "crash":
        return None
    blob = " ".join(lines)
    node = pod.node_name
    look = [f"kubectl -n {pod.namespace} describe pod {pod.name}",
            f"kubectl -n {pod.namespace} get pods -A -o wide --field-selector spec.nodeName={node}"]  # fmt: skip
    m = NO_RUNTIME.search(blob)
    if m is not None and m.group(2):  # CRI-O
        handler = m.group(2)
        return Stuck(
            pod, node, f'CRI-O on {node} has no runtime handler "{handler}"',
            f'The pod\'s RuntimeClass hands CRI-O the handler "{handler}", which CRI-O on {node} does not define. '
            "Under CRI-O the NVIDIA container toolkit installs an OCI hook, not a runtime handler (the GPU "
            "Operator's maintainers, NVIDIA/gpu-operator#1298): drop runtimeClassName from the pod, or name a "
            "RuntimeClass whose handler CRI-O defines.",
            lines, commands=[*look, f"kubectl -n {pod.namespace} get runtimeclass -o wide   # handlers CRI-O on {node} must define"],
        )  # fmt: skip
    if m is not None:
        handler = m.group(1)
        toolkit, logs = _operand_lines(snapshot, node, "toolkit", memo)
        return Stuck(
            pod, node, f'the container runtime on {node} has no runtime "{handler}" configured',
            f'The pod\'s RuntimeClass hands the runtime the handler "{handler}", and containerd\'s config on '
            f"{node} defines no runtime of that name, so no sandbox is created and no container starts. Under "
            "the GPU Operator the nvidia-container-toolkit pod on the node adds it to containerd's config (and "
            "restarts containerd) once the driver is ready: for the first minutes on a new node this is expected; "
            "if it stays, read that pod's log and check that it edits the config this containerd reads (k3s, "
            "RKE2 and MicroK8s keep their own: the toolkit's CONTAINERD_CONFIG and CONTAINERD_SOCKET). With the "
            "toolkit installed on the host, run `nvidia-ctk runtime configure --runtime=containerd` there and "
            "restart containerd.",
            [*lines, *toolkit],
            commands=[*logs, *look, f"kubectl -n {pod.namespace} get runtimeclass {handler} -o yaml",
                      f"containerd config dump | grep -n 'runtimes.{handler}'   # on {node}", *_cordon(pod.namespace, node)],
        )  # fmt: skip
    if DRIVER_NOT_LOADED in blob or NO_NVML_LIBRARY in blob:
        driver, logs = _operand_lines(snapshot, node, "driver", memo)
        loaded = DRIVER_NOT_LOADED in blob
        missing = (
            "no NVIDIA kernel module is loaded"
            if loaded
            else "the NVIDIA driver's libraries are not where it looks"
        )
        root = (
            ""
            if loaded
            else " It looks under the toolkit's driver root: / for a driver installed on the host, "
            "/run/nvidia/driver for the GPU Operator's driver container; the two must agree."
        )
        return Stuck(
            pod, node, f"the NVIDIA driver is not usable on {node}: {missing}",
            f"The NVIDIA container toolkit's hook (nvidia-container-cli) runs before each GPU container starts "
            f"and stops it: on {node} {missing}. Every GPU container there fails the same way, and the device "
            "plugin may still advertise the GPUs it registered earlier, so the scheduler keeps sending GPU pods "
            "there: cordon it until the driver is back. Under the GPU Operator read the driver pod on "
            "the node (its log says why the module did not load or build, e.g. after a kernel upgrade); with a "
            "driver installed on the host run `nvidia-smi` and `lsmod | grep nvidia` there." + root,
            [*lines, *driver],
            commands=[*logs, *look, f"nvidia-smi; lsmod | grep nvidia; dmesg | grep -i nvrm   # on {node}",
                      *_cordon(pod.namespace, node)],
        )  # fmt: skip
    need = CUDA_REQUIREMENT.search(blob)
    if need is not None:
        return Stuck(
            pod, node, f"its image needs {need.group(1)} and the driver on {node} is older",
            f"The image sets NVIDIA_REQUIRE_CUDA, and the NVIDIA container toolkit's hook (nvidia-container-cli) "
            f"checks it before the container starts: the driver on {node} supports a CUDA older than "
            f"{need.group(2)}, so the container is never created. The GPU and its driver work; CUDA containers "
            f"built for an older CUDA run there. Install a driver whose CUDA version (`nvidia-smi` on the node shows "
            f"it) meets {need.group(1)}, place the pod on nodes with such a driver, or use an image built for the "
            "driver's CUDA. The pod holds its GPU while it restarts.",
            lines, "warning", commands=[*look, f"nvidia-smi | head -4   # on {node}: the driver's CUDA version"],
        )  # fmt: skip
    if CDI_UNRESOLVED in blob:
        cause, why = (
            f"its CDI device is defined in no CDI spec on {node}",
            "The runtime found no CDI spec on the node that defines the device name the pod was given: compare "
            "`nvidia-ctk cdi list` on the node with it and read the log of what generates the spec.",
        )
    elif any(f in blob for f in START_FAILURES):
        cause, why = (
            f"the container runtime on {node} fails to create its sandbox or containers",
            "kubelet placed it and the runtime refused; the message above is the runtime's (a GPU pod's usual "
            "causes: the NVIDIA runtime or CDI configuration, the driver, a device the plugin handed out).",
        )
    else:
        return None  # not started yet, an image pull, a crash of the program itself: not the node's runtime
    return Stuck(pod, node, cause, why, lines, "warning", commands=look, cdi=CDI_UNRESOLVED in blob)


def why_not_running(snapshot: ClusterSnapshot, pod: Pod, memo: Memo | None = None) -> Stuck | None:
    """Why a bound GPU pod does not run, when the snapshot shows a cause on its node: kubelet rejected it at
    admission (``findings_admission``), its node stopped reporting (what the runtime said last, if it refused
    the pod, as evidence of that), or the runtime fails it. The GPU stack's own DaemonSet pods: None."""
    if not pod.node_name or stack_daemonset(snapshot, pod) is not None:
        return None
    rejected = rejection(snapshot, pod)
    if rejected is not None:
        said, why, layer = rejected
        return Stuck(pod, pod.node_name, f"kubelet rejected it at admission ({pod.status_reason})", why, [said],
                     layer=layer, commands=[f"kubectl -n {pod.namespace} describe pod {pod.name}"])  # fmt: skip
    if pod.is_terminal:
        return None
    memo = {} if memo is None else memo
    gone = _node_gone(snapshot, pod)
    prepared = prepare_reading(snapshot, pod) if gone is None else None
    if prepared is not None:  # no container is created before kubelet has prepared the pod's claims
        return Stuck(pod, prepared.node, prepared.title.replace(POD_MARK, "the pod"), prepared.detail,
                     [prepared.message], severity="warning", layer=prepared.layer, commands=prepared.commands,
                     dra=True)  # fmt: skip
    if gone is None:
        return _runtime(snapshot, pod, memo)
    last = _runtime(snapshot, pod, memo)
    if last is not None:  # kubelet's last word on the pod: true then, and to check once kubelet is back
        gone.evidence += [
            f"the pod's last status, before kubelet stopped reporting: {last.cause}",
            *last.evidence,
        ]
        if snapshot.node(pod.node_name) is not None:  # a deleted Node's kubelet reports no more: its pods go
            gone.why += (
                f" Once kubelet reports again, check whether the pod still fails as it did ({last.cause}): "
                + last.why
            )
    return gone


def bound_findings(snapshot: ClusterSnapshot, chains: list[device_plugin.NodePlugins]) -> list[Finding]:
    """One finding per bound GPU pod (one asking for a GPU resource) that does not run, the CDI case left to
    ``findings_operands`` on the nodes it covers (``chains``: the device plugin chains it is given too)."""
    out: list[Finding] = []
    memo: Memo = {}
    # what can make a running pod's finding: its node not Ready or gone, or a waiting container; read once, so
    # the 21k GPU pods of a 5,000-node cluster that run cost a set lookup and a look at their containers
    ready = {n.name for n in snapshot.nodes if n.ready}
    # findings_operands reports the CDI case on the nodes it covers, by its rule; on the others it is said here
    lit = covered(snapshot, chains)
    dark = {c.node for c in chains if c.dark}  # GPU nodes advertising none: each has its own finding
    for pod in snapshot.pods:
        if not pod.node_name or pod.is_terminal:  # a Failed pod kubelet rejected is ``findings_admission``'s
            continue
        if pod.node_name in ready and not device_plugin.may_crash(pod):
            continue
        gpus = gpu_requests(pod.requests)
        if not gpus:
            continue
        stuck = why_not_running(snapshot, pod, memo)
        if stuck is None or (stuck.cdi and stuck.node in lit) or stuck.dra:
            # findings_operands reports this CDI case (NVIDIA/nvidia-container-toolkit#1239), findings_dra_prepare
            # the DRA one
            continue
        held = ", ".join(f"{format_milli(k, v)} {k}" for k, v in gpus.items())
        why = stuck.why + _unregistered_note(snapshot, stuck.node, gpus, stuck.node in dark)
        # a cause that is the pod's own on its node: pods alike but for their name are one kind, by what
        # made them, read after their count as "the GPU pod bound to …" (a node's cause has one title for
        # every pod: ``Stuck.title``)
        said = f"{TITLE_MARK}{stuck.node} {stuck.verb}: {stuck.cause}"
        title, subject, many = (
            (stuck.title, "", "") if stuck.title else naming_pod(f"{TITLE_HEAD}{POD_MARK}{said}", pod.key)
        )
        many = many and f"the {TITLE_HEAD.rstrip()}{said}"
        out.append(Finding(
            stuck.severity, stuck.layer, title, [f"pod/{pod.key}", f"node/{stuck.node}"],
            f"{pod.key} is bound to {stuck.node} and holds {held} there, so no scheduler tries it again and "
            "changing its requests or tolerations does not help: " + "; ".join(stuck.evidence) + ". "
            + why,
            "R3.4, R16", stuck.commands, check=BOUND, subject=subject, many=many,
        ))  # fmt: skip
    return out


def explained(snapshot: ClusterSnapshot, pod: Pod) -> bool:
    """A bound GPU pod that does not run for a cause on its node: ``bound_findings`` reports it (with what its
    node no longer advertises of what it holds), ``findings_operands`` (its CDI device, on the nodes it
    covers) or ``findings_dra_prepare`` (kubelet cannot prepare its DRA claims). That is the pod's one account: no
    other check reports it as one that holds its devices and runs."""
    return bool(pod.node_name) and why_not_running(snapshot, pod) is not None


def _unregistered_note(snapshot: ClusterSnapshot, name: str, gpus: dict[str, int], dark: bool) -> str:
    """What a bound pod's node no longer advertises of the device plugin resources it holds (capacity 0 or
    absent: ``stopped_plugin.CAPACITY_ZEROED``): kubelet keeps the pod's devices while it is not terminated
    (the device manager frees only a terminated pod's, UpdateAllocatedDevices), and nothing asking for the
    resource is placed on the node. ``dark``: the node has its own finding, a GPU node advertising no GPU, which
    says why."""
    node = snapshot.node(name)
    gone = [
        r
        for r in gpus
        if node is not None and not node.capacity.get(r) and device_plugin.registered_by_plugin(r)
    ]
    if not gone:
        return ""
    names = ", ".join(gone)
    why = "; the node's own finding says why" if dark else ""
    return (
        f" {name} advertises no {names} now ({CAPACITY_ZEROED}{why}): "
        f"kubelet keeps the devices it gave this pod until the pod ends, and no pod asking for {names}, this one "
        f"if recreated, is placed on {name} until a device plugin registers it there again."
    )


def is_bound_finding(finding: Finding) -> bool:
    """A finding ``bound_findings`` made."""
    return finding.check == BOUND


def runtime_class_advice(message: str) -> str:
    """The advice for a FailedCreate whose message is the RuntimeClass admission plugin's refusal; "" for
    another message."""
    m = RUNTIME_CLASS_MISSING.search(message)
    if m is None:
        return ""
    name = m.group(1)
    return (
        f'No pod exists: the pod template names runtimeClassName "{name}" and no RuntimeClass of that name exists. '
        f'Create it (the GPU Operator creates one named by operator.runtimeClass, "nvidia" by default; '
        f"NVIDIA's device plugin README gives one with handler nvidia) or set the name of one that exists "
        f"(`kubectl get runtimeclass`); the handler must be a runtime configured in containerd on the GPU nodes."
    )
