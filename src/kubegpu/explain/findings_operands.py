"""GPU stack pods failing on a node that does advertise GPUs (R3.4).

A node whose device plugin registered its GPUs schedules GPU pods, yet the rest of the stack on it can be
broken: the GPU Operator's validator runs a CUDA workload there (pod ``app=nvidia-cuda-validator``, init
container ``cuda-validation`` running ``vectorAdd`` with every GPU visible) and a pod through the device
plugin (``app=nvidia-device-plugin-validator``, ``plugin-validation``), from the operator validator's
``cuda-validation`` and ``plugin-validation`` init containers (gpu-operator ``validator/manifests/
cuda-workload-validation.yaml``, ``plugin-workload-validation.yaml``, ``cmd/nvidia-validator/main.go``). One
of them crash-looping means CUDA does not work on the node although the scheduler places GPU pods there
(NVIDIA/gpu-operator#1947). What CUDA said is read where its cause is known: a driver older than the
image's CUDA (cudaErrorInsufficientDriver), an NVSwitch fabric NVIDIA Fabric Manager has not set up
(cudaErrorSystemNotReady, NVIDIA/gpu-operator#1043), CUDA forward-compatibility libraries on a GPU they do not
cover (cudaErrorCompatNotSupportedOnDevice, NVIDIA/gpu-operator#277, #389). A node advertising nothing is
``explain.device_plugin``'s dark-node chain, not this check; the GPU stack's DaemonSets are recognised the same way (``device_plugin.known``).
"""

from __future__ import annotations

from typing import Final

from kubegpu.explain import device_plugin
from kubegpu.explain.findings_base import Finding
from kubegpu.explain.stopped_plugin import unregistered
from kubegpu.model.objects import Pod
from kubegpu.model.quantity import format_milli
from kubegpu.model.resources import gpu_requests
from kubegpu.model.snapshot import ClusterSnapshot

# the operator validator's workload pods (their ``app`` label) and what each checks on the node
VALIDATOR_WORKLOADS: Final = {
    "nvidia-cuda-validator": (
        "the GPU Operator's CUDA check (a vectorAdd run on the node with every GPU visible, started by "
        "nvidia-operator-validator's cuda-validation step)"
    ),
    "nvidia-device-plugin-validator": (
        "the GPU Operator's device plugin check (a vectorAdd pod given a GPU by the device plugin, started by "
        "nvidia-operator-validator's plugin-validation step)"
    ),
}
# the CUDA runtime's text for cudaErrorInsufficientDriver (error 35), as vectorAdd prints it
INSUFFICIENT_DRIVER: Final = "CUDA driver version is insufficient for CUDA runtime version"
# the CUDA runtime's text for cudaErrorSystemNotReady (error 802): on an NVSwitch system CUDA does not start until
# NVIDIA Fabric Manager has set up the NVSwitch fabric and registered the GPUs with it (NVIDIA Fabric Manager user
# guide; NVIDIA/gpu-operator#1043, the maintainer on #545 and #375: the service not running on the host)
SYSTEM_NOT_READY: Final = "system not yet initialized"
# the CUDA runtime's text for cudaErrorCompatNotSupportedOnDevice (error 804): the process loaded CUDA's
# forward-compatibility libraries (newer than the node's driver) on a GPU that forward compatibility does not cover
# (CUDA Compatibility guide: NVIDIA Data Center GPUs, select NGC Server Ready RTX SKUs, Jetson only); the
# maintainers on NVIDIA/gpu-operator#389: the validator image's compat libs, newer than the host's driver, on a GPU
# that does not support them, while other CUDA containers run fine (also #277)
COMPAT_UNSUPPORTED: Final = "forward compatibility was attempted on non supported HW"
# container-device-interface pkg/cdi/cache.go InjectDevices: a CDI device name no spec in the runtime's spec
# directories (/etc/cdi, /var/run/cdi) defines stops the container's creation with this text
CDI_UNRESOLVED: Final = "unresolvable CDI devices"


def stack_daemonset(snapshot: ClusterSnapshot, pod: Pod) -> tuple[device_plugin.Known, str] | None:
    """The GPU stack's DaemonSet (``device_plugin.known``: driver, toolkit, a device plugin, …) that owns
    ``pod``, as (its kind, ``ns/name``); None for any other pod, a monitoring agent's DaemonSet pod included."""
    if pod.owner is None or pod.owner.kind != "DaemonSet":
        return None
    ds = next(
        (d for d in snapshot.records.daemonsets if d.name == pod.owner.name and d.namespace == pod.namespace),
        None,
    )
    k = device_plugin.known(ds) if ds is not None else None
    return None if k is None or ds is None else (k, ds.key)


def _what(snapshot: ClusterSnapshot, pod: Pod) -> str:
    app = pod.labels.get("app", "")
    if app in VALIDATOR_WORKLOADS:
        return VALIDATOR_WORKLOADS[app]
    stack = stack_daemonset(snapshot, pod)
    return f"{stack[0].title} ({stack[1]})" if stack is not None else ""


def covered(snapshot: ClusterSnapshot, chains: list[device_plugin.NodePlugins]) -> set[str]:
    """The nodes ``operand_findings`` reads: those whose device plugin chain advertises GPUs (a node whose GPUs a
    DRA driver publishes has no chain, a dark one advertises none) and whose kubelet reports Ready. On a node
    that stopped reporting, its pods' status is kubelet's last report and no pod is placed there (the
    node.kubernetes.io/unreachable and not-ready taints), so the node is what to fix first: ``findings_bound``
    names it for each GPU pod there, with the runtime's last refusal as evidence, and the NotReady node has its
    own finding. The one rule for who reports a GPU pod's unresolvable CDI device: ``operand_findings`` on
    these nodes, ``findings_bound`` on every other."""
    ready = {n.name for n in snapshot.nodes if n.ready}
    return {c.node for c in chains if not c.dark and c.node in ready}


def operand_findings(snapshot: ClusterSnapshot, chains: list[device_plugin.NodePlugins]) -> list[Finding]:
    """On the ``covered`` nodes, in one pass over the pods: a GPU stack pod in a waiting state
    (CrashLoopBackOff, Error, …), then every GPU pod whose container the runtime cannot create for a CDI device
    no spec defines (the stack pods' findings first, as they are listed)."""
    operands: list[Finding] = []
    cdi: list[Finding] = []
    lit = covered(snapshot, chains)
    # the chain's own pods on a node no plugin serves: the node's finding reads them (``unregistered``)
    told = {lk.pod.key for c in chains if unregistered(snapshot, c) for lk in c.links if lk.pod is not None}
    for pod in snapshot.pods:
        if pod.node_name not in lit or pod.is_terminal:
            continue
        what = _what(snapshot, pod)
        if what and pod.key in told:
            continue
        if what:
            state, lines = device_plugin.pod_state(snapshot, pod)
            if state == "crash":
                operands.append(_operand_finding(pod, what, lines))
            continue
        gpus = gpu_requests(pod.requests)
        if gpus and device_plugin.may_crash(pod):
            state, lines = device_plugin.pod_state(snapshot, pod)
            if state == "crash" and any(CDI_UNRESOLVED in line for line in lines):
                cdi.append(_cdi_finding(pod, gpus, lines))
    return operands + cdi


def _operand_finding(pod: Pod, what: str, lines: list[str]) -> Finding:
    detail = (
        f"{what} is failing on {pod.node_name}, which advertises GPUs, so the scheduler keeps placing GPU "
        f"pods there: " + "; ".join(lines) + "."
    )
    compat = any(COMPAT_UNSUPPORTED in line for line in lines)
    if pod.labels.get("app") in VALIDATOR_WORKLOADS:
        detail += (
            " CUDA programs placed on this node may fail the same way; nvidia-operator-validator waits for "
            "this pod and stays not Ready."
            if not compat
            else " nvidia-operator-validator waits for this pod and stays not Ready."
        )
    if any(INSUFFICIENT_DRIVER in line for line in lines):
        detail += (
            " cudaErrorInsufficientDriver: the CUDA runtime in the container needs a newer driver than the "
            "libcuda it was given: compare the node's driver (nvidia-smi in the driver pod or on the host) "
            "with the CUDA version of the validator image, and read the driver and toolkit pods' logs."
        )
    if compat:
        detail += (
            " cudaErrorCompatNotSupportedOnDevice (804): the container's CUDA is newer than the node's driver and "
            "brought CUDA's forward-compatibility libraries, which work only on NVIDIA Data Center GPUs (and select "
            "NGC Server Ready RTX cards, Jetson): this GPU is not one of them. The GPU and the driver are not broken, "
            "and CUDA containers built for the driver's CUDA version or older run; the ones with a newer CUDA fail "
            "like this. Install a driver branch whose CUDA version is at least the image's (`nvidia-smi` on the node "
            "shows the driver's), or use an image built for the driver's CUDA."
        )
    fabric = any(SYSTEM_NOT_READY in line for line in lines)
    if fabric:
        detail += (
            " cudaErrorSystemNotReady (802): on an NVSwitch system (HGX/DGX A100, H100, H200, B200) CUDA does not "
            "start until NVIDIA Fabric Manager has set up the NVSwitch fabric and registered the GPUs with it: check "
            f"`systemctl status nvidia-fabricmanager` on {pod.node_name} (its version must match the driver's "
            "exactly; where the GPU Operator's driver container runs Fabric Manager, read that pod's log), and "
            "each GPU's fabric state (from H100 on: State Completed once registered, In Progress while Fabric "
            "Manager, or on B200 and later the NVLink Subnet Manager it needs, is missing; an A100 shows N/A). "
            "Without NVSwitches, 802 means another daemon the driver needs is not running (CUDA's own "
            "description of the error)."
        )
    return Finding(
        "warning",
        "driver/device-plugin",
        "GPU stack pod failing on a node that advertises GPUs",
        [f"pod/{pod.key}", f"node/{pod.node_name}"],
        detail,
        "R3.4",
        [
            f"kubectl -n {pod.namespace} logs {pod.name} --all-containers --tail=100",
            f"kubectl -n {pod.namespace} describe pod {pod.name}",
            f"kubectl -n {pod.namespace} get pods -o wide --field-selector spec.nodeName={pod.node_name}",
            *(
                [
                    f"systemctl status nvidia-fabricmanager   # on {pod.node_name}",
                    f"nvidia-smi -q -i 0 | grep -i -A 2 Fabric   # on {pod.node_name}: State Completed, not In Progress",
                ]
                if fabric
                else []
            ),
        ],
    )


def _cdi_finding(pod: Pod, gpus: dict[str, int], lines: list[str]) -> Finding:
    """A GPU pod the device plugin gave GPUs whose container the runtime cannot create because a CDI device
    name it was given is in no CDI spec on the node (NVIDIA/nvidia-container-toolkit#1239: the toolkit's
    generated /var/run/cdi/management.nvidia.com-gpu.yaml held only "all", the pod was given a GPU UUID)."""
    held = ", ".join(f"{format_milli(k, v)} {k}" for k, v in gpus.items())
    return Finding(
        "warning",
        "driver/device-plugin",
        "GPU pod cannot start: its CDI device is unknown on the node",
        [f"pod/{pod.key}", f"node/{pod.node_name}"],
        f"{pod.key} holds {held} on {pod.node_name}, but its container is never created: "
        + "; ".join(lines)
        + ". The runtime found no CDI spec on the node (/etc/cdi, /var/run/cdi) that defines the device "
        "name the pod was given (its vendor/class is the spec's kind): the spec generated on the node lacks "
        "that GPU. Compare `nvidia-ctk cdi list` on the node with the name above and read the log of what "
        "generates the spec (under the GPU Operator, the nvidia-container-toolkit pod on the node). Changing "
        "the pod does not help; the GPU stays held while it restarts.",
        "R3.4",
        [
            f"kubectl -n {pod.namespace} describe pod {pod.name}",
            f"kubectl -n default get pods -A -o wide --field-selector spec.nodeName={pod.node_name}",
        ],
    )
