"""What a snapshot alone shows is wrong or risky on the GPU side (R2, R3.4, R6.1, R7.3, R8, R11.4, R16, R17).

Each finding names the layer at fault, the objects, the numbers, and the next command, so a person can
act on it without re-deriving anything; a finding that catches one of the six pitfalls of R17 carries its
id (``pitfall``: ``R17.1`` … ``R17.6``). Checks:
- GPU labels say a node has GPUs but ``status.capacity`` has no GPU resource: the device plugin never
  registered (R3.4); host ``nvidia-smi`` working does not make the node schedulable (R17.1), nor does a
  node whose every GPU is registered unhealthy (allocatable 0);
- ``nvidia.com/gpu.count`` disagrees with capacity, or allocatable is below capacity (devices reported
  unhealthy by the plugin; R2.1: allocatable counts registered healthy devices, not idle ones), or 0 because no
  device plugin runs there now (kubelet keeps a stopped plugin's capacity a while: ``stopped_plugin``);
- one pool label value spanning several GPU products (R5.1, R7.3, R16);
- one pool label value spanning several sharing modes (GFD ``nvidia.com/gpu.sharing-strategy``: none,
  time-slicing, mps; R7.3), fixed with one ``nvidia.com/device-plugin.config`` for the pool;
- a GPU ResourceQuota at or near its hard limit, and what pods being deleted still hold of it; GPU
  ResourceClaims no quota of their namespace counts (``findings_quota``; R8);
- pods asking for a GPU resource name no node advertises (R11.4);
- pods tolerating the GPU taint without requesting a GPU (R17.4);
- Pending pods whose GPU request the cluster's free GPUs add up to, but no single node has (R17.5);
- privileged containers on GPU nodes without a GPU request: they see every device (R6.1);
- NotReady GPU nodes;
- GPU pods kubelet rejected at admission (``findings_admission``);
- GPU pods bound to a node that do not start there: its runtime, driver or kubelet (``findings_bound``);
- GPU Workloads Kueue has not admitted, whose jobs it keeps suspended: no pod exists (``findings_kueue``);
- nodes GFD labels ``<model>-MIG-INVALID`` under ``mig.strategy=single`` (``findings_mig``);
- GPU stack pods (the operator validator's CUDA and plugin checks, the GPU DaemonSets) failing on a node that
  advertises GPUs (``findings_operands``).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Final

from kubegpu.admission.quota import quotas_in
from kubegpu.devices.sharing import SHARED_SUFFIX
from kubegpu.explain import device_plugin
from kubegpu.explain.dra_inventory import empty_gpu_slices, empty_slice_finding
from kubegpu.explain.engine import Engine
from kubegpu.explain.findings_admission import admission_findings
from kubegpu.explain.findings_base import POD_MARK, naming_pod
from kubegpu.explain.findings_base import Finding as Finding
from kubegpu.explain.findings_bound import bound_findings, explained, runtime_class_advice
from kubegpu.explain.findings_dra_prepare import prepare_findings
from kubegpu.explain.findings_kueue import held_findings
from kubegpu.explain.findings_limits import limit_range_findings
from kubegpu.explain.findings_mig import MIG_LAYOUT_LABELS as MIG_LAYOUT_LABELS
from kubegpu.explain.findings_mig import mig_invalid_findings
from kubegpu.explain.findings_operands import operand_findings
from kubegpu.explain.findings_quota import QUOTA_NEAR as QUOTA_NEAR
from kubegpu.explain.findings_quota import deleting_note, exceeded_keys, quota_findings
from kubegpu.explain.findings_volcano import unqueued_findings
from kubegpu.explain.gpu_pod import idle_gpu_toleration
from kubegpu.explain.held_devices import holds, not_running
from kubegpu.explain.schedulers import is_scheduler_resource
from kubegpu.explain.stopped_plugin import CAPACITY_ZEROED, plugin_stopped, unregistered
from kubegpu.model.gpu_facts import (
    DEFAULT_POOL_LABEL,
    GPU_COUNT_LABEL,
    GPU_PRODUCT_LABEL,
    gpu_signs,
)
from kubegpu.model.names import GPU_REPLICAS_LABEL, GPU_SHARING_LABEL, MIG_RESOURCE_PREFIX
from kubegpu.model.objects import Node, Pod
from kubegpu.model.quantity import format_milli
from kubegpu.model.records import CONTROLLER_KINDS
from kubegpu.model.resources import NVIDIA_GPU, gpu_requests, is_gpu
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.plugins.node_resources_fit import fit_request
from kubegpu.scheduler.versions import behaviour

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
FAILED_CREATE: Final = "failed-create"  # ``Finding.check`` of a controller whose pods a quota refuses
SCATTERED: Final = "gpus-scattered"  # ``Finding.check`` of a Pending pod whose GPUs no one node holds (R17.5)


def exit_code(findings: list[Finding]) -> int:
    """The exit status that follows the worst severity: 2 critical, 1 warning, 0 info or nothing (the rule
    ``inspect`` and ``diagnose --exit-code`` share, for cron and CI)."""
    severities = {f.severity for f in findings}
    return 2 if "critical" in severities else 1 if "warning" in severities else 0


def gpu_resources(node: Node) -> dict[str, int]:
    return {r: v for r, v in node.capacity.items() if is_gpu(r)}


def has_gpu_labels(node: Node) -> bool:
    """GFD labels, a provider's GPU label or the GPU taint say the node has GPUs (``gpu_facts.gpu_signs``)."""
    return bool(gpu_signs(node))


def pool_of(node: Node, pool_label: str) -> str:
    return node.labels.get(pool_label, "")


def find(
    snapshot: ClusterSnapshot, pool_label: str = DEFAULT_POOL_LABEL, engine: Engine | None = None
) -> list[Finding]:
    """Every finding on ``snapshot``; ``engine``, when the caller has one on the same snapshot, is reused:
    building another would run the device models again and report each node's config error twice."""
    out: list[Finding] = []
    # every GPU node's device plugin chain, once: the dark nodes, the lit ones' stack pods and the pods
    # waiting for a plugin's resource all read it, and bound_findings which nodes findings_operands covers
    # (0.1 s at 5,000 nodes)
    chains = device_plugin.check_nodes(snapshot)
    dark = [c for c in chains if c.dark]  # (``device_plugin.dark_nodes``)
    out += _node_findings(snapshot, chains)
    out += mig_invalid_findings(snapshot)
    out += operand_findings(snapshot, chains)
    out += _pool_findings(snapshot, pool_label)
    out += _sharing_findings(snapshot, pool_label)
    out += quota_findings(
        snapshot, (engine.framework.handle.behaviour if engine else behaviour()).dra_extended_resource
    )
    out += _failed_create_findings(snapshot)
    out += limit_range_findings(snapshot)
    out += _pod_findings(snapshot, dark)
    out += admission_findings(snapshot)
    out += bound_findings(snapshot, chains)
    out += held_findings(snapshot)
    out += unqueued_findings(snapshot)
    out += prepare_findings(snapshot)
    out += _scattered_findings(snapshot, engine)
    return sorted(out, key=lambda f: SEVERITY_ORDER[f.severity])


def _dark_node_findings(snapshot: ClusterSnapshot, dark: list[device_plugin.NodePlugins]) -> list[Finding]:
    """A GPU node (by labels, a provider's label or the GPU taint) that advertises no GPU (absent or 0):
    the device plugin chain says why (``explain.device_plugin``)."""
    out = []
    for check in dark:
        node = snapshot.node(check.node)
        assert node is not None
        zero = [r for r, v in node.capacity.items() if is_gpu(r) and not v]
        has = f"{', '.join(zero)} capacity 0" if zero else "no GPU resource in status.capacity"
        signs = ", ".join(check.signs) or "GPU resource names"
        out.append(Finding(
            "critical", "driver/device-plugin", "GPU node advertises no GPU resource", [f"node/{node.name}"],
            f"{signs} mark it a GPU node, but it has {has}: no device plugin has registered GPUs with kubelet "
            "here, so every GPU pod is refused it whatever its spelling or tolerations. Why: "
            + "; ".join(check.causes or ["unknown: see the device plugin pod's log on the node"]) + ". "
            "`nvidia-smi` working on the host does not make the node schedulable.",
            "R3.4, R17.1", list(check.commands), pitfall="R17.1",
        ))  # fmt: skip
    return out


def _node_findings(snapshot: ClusterSnapshot, chains: list[device_plugin.NodePlugins]) -> list[Finding]:
    out = _dark_node_findings(snapshot, [c for c in chains if c.dark])
    # nodes whose GPUs no device plugin serves now: their plugin, not their devices' health, is the cause
    stopped = {c.node: c for c in chains if unregistered(snapshot, c)}
    out.extend(
        empty_slice_finding(snapshot, name, slices) for name, slices in empty_gpu_slices(snapshot).items()
    )
    for node in snapshot.nodes:
        gpus = gpu_resources(node)
        # every GPU registered and none allocatable: the host driver may well work, nothing schedules here
        none_left = has_gpu_labels(node) and bool(gpus) and not any(node.allocatable.get(r, 0) for r in gpus)
        for r, cap in gpus.items():
            alloc = node.allocatable.get(r, 0)
            if alloc < cap:
                chain = stopped.get(node.name)
                out.append(Finding(
                    "critical" if none_left else "warning", "driver/device-plugin",
                    "GPU node has no allocatable GPU" if none_left else "allocatable GPUs below capacity",
                    [f"node/{node.name}"],
                    f"{r}: capacity {format_milli(r, cap)}, allocatable 0: {plugin_stopped(chain)} No GPU pod can "
                    "schedule here until a plugin registers the devices again." if chain is not None else
                    f"{r}: capacity {format_milli(r, cap)}, allocatable {format_milli(r, alloc)}: "
                    f"{format_milli(r, cap - alloc)} device(s) registered but reported unhealthy (or reserved). "
                    "Allocatable counts healthy registered devices, not idle ones."
                    + (" No GPU pod can schedule here although the GPU labels say the hardware is present: "
                       "`nvidia-smi` answering on the host proves the driver, not the runtime, the plugin's health "
                       "checks or allocatable. Fix the device health (Xid, ECC) or the plugin, then check "
                       "allocatable." if none_left else ""),
                    "R2.1, R16" + (", R17.1" if none_left else ""),
                    [*chain.commands, f"kubectl -n default describe node {node.name}"] if chain is not None else
                    [f"kubectl -n default describe node {node.name}", "nvidia-smi -q -d ECC,PAGE_RETIREMENT   # on the host"],
                    pitfall="R17.1" if none_left else "",
                ))  # fmt: skip
        count = node.labels.get(GPU_COUNT_LABEL)
        whole = gpus.get("nvidia.com/gpu")
        if (
            count
            and count.isdigit()
            and whole
            and int(count) * 1000 != whole
            and not node.labels.get("nvidia.com/gpu.replicas")
        ):
            out.append(Finding(
                "warning", "driver/device-plugin", "GPU count label disagrees with capacity", [f"node/{node.name}"],
                f"{GPU_COUNT_LABEL}={count} but capacity nvidia.com/gpu={format_milli('nvidia.com/gpu', whole)}",
                "R2.1", [f"kubectl -n default get node {node.name} -L {GPU_COUNT_LABEL}"],
            ))  # fmt: skip
        if not node.ready and (gpus or has_gpu_labels(node)):
            out.append(Finding(
                "critical", "node", "GPU node is NotReady", [f"node/{node.name}"],
                "kubelet does not report Ready: nothing new schedules here and its GPUs are lost capacity.",
                "R16", [f"kubectl -n default describe node {node.name}"],
            ))  # fmt: skip
    return out


def _pool_findings(snapshot: ClusterSnapshot, pool_label: str) -> list[Finding]:
    products: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for node in snapshot.nodes:
        pool = pool_of(node, pool_label)
        product = node.labels.get(GPU_PRODUCT_LABEL)
        if pool and product:
            products[pool][product].append(node.name)
    out = []
    for pool, by_product in sorted(products.items()):
        if len(by_product) > 1:
            parts = "; ".join(f"{p}: {', '.join(n)}" for p, n in sorted(by_product.items()))
            out.append(Finding(
                "warning", "scheduling", f"pool {pool_label}={pool} mixes GPU products",
                [f"node/{n}" for ns in by_product.values() for n in ns],
                f"{parts}. A pod selecting this pool may land on any of them: performance, memory and interconnect "
                "differ. Split the pool by product or add the product to the pods' required affinity.",
                "R5.1, R7.3, R16", [f"kubectl -n default get nodes -L {pool_label},{GPU_PRODUCT_LABEL}"],
            ))  # fmt: skip
    return out


SHARING_STRATEGY_LABEL = "nvidia.com/gpu.sharing-strategy"  # GFD, k8s-device-plugin internal/lm/resource.go
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"  # k8s-device-plugin README, per-node config


def _sharing_findings(snapshot: ClusterSnapshot, pool_label: str) -> list[Finding]:
    """A pool whose nodes share their GPUs differently: the same request means a whole GPU on one node, a
    time slice on another and an MPS share (fixed SM and memory fraction) on a third."""
    modes: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    configs: dict[str, dict[str, str]] = defaultdict(dict)
    for node in snapshot.nodes:
        pool, mode = pool_of(node, pool_label), node.labels.get(SHARING_STRATEGY_LABEL)
        if pool and mode is not None:
            modes[pool][mode or "none"].append(node.name)
            configs[pool][node.name] = node.labels.get(DEVICE_PLUGIN_CONFIG_LABEL, "")
    out = []
    for pool, by_mode in sorted(modes.items()):
        if len(by_mode) < 2:
            continue
        parts = "; ".join(f"{m}: {', '.join(n)}" for m, n in sorted(by_mode.items()))
        # the fix: every node of the pool on the config the most nodes already use
        majority = max(sorted(by_mode.items()), key=lambda kv: len(kv[1]))
        named = sorted({configs[pool][n] for n in majority[1] if configs[pool][n]})
        target = named[0] if len(named) == 1 else "<config-name>"
        odd = sorted(n for m, ns in by_mode.items() if m != majority[0] for n in ns)
        out.append(Finding(
            "warning", "scheduling", f"pool {pool_label}={pool} mixes GPU sharing modes",
            [f"node/{n}" for _, ns in sorted(by_mode.items()) for n in ns],
            f"{SHARING_STRATEGY_LABEL} per node: {parts}. A pod selecting this pool gets a whole GPU, a time slice "
            "or an MPS share depending on where it lands: memory isolation, SM share and the meaning of one "
            "nvidia.com/gpu differ. Give the pool one device-plugin config (most nodes here use "
            f"{majority[0]!r}) or split the pool by sharing mode.",
            "R7.3",
            [f"kubectl -n default get nodes -l {pool_label}={pool} -L {SHARING_STRATEGY_LABEL},{DEVICE_PLUGIN_CONFIG_LABEL}",
             *(f"kubectl label node {n} {DEVICE_PLUGIN_CONFIG_LABEL}={target} --overwrite" for n in odd)],
        ))  # fmt: skip
    return out


def _top_owner(snapshot: ClusterSnapshot, kind: str, namespace: str, name: str) -> tuple[str, str]:
    """The controller a person edits: a ReplicaSet's Deployment, a Job's CronJob (when in the snapshot)."""
    c = snapshot.records.controller(kind, namespace, name)
    if c is not None and c.owner is not None and c.owner.kind in ("Deployment", "CronJob"):
        return c.owner.kind, c.owner.name
    return kind, name


def quota_refusal(message: str) -> tuple[str, str]:
    """The quota named by a ResourceQuota admission refusal in ``message`` (a FailedCreate event's): (the
    quota exceeded, the quota whose constraints failed), each "" when not. Texts of
    plugin/pkg/admission/resourcequota/controller.go: ``exceeded quota: NAME, requested: …`` and ``failed
    quota: NAME: must specify …`` (``Failed quota`` before 1.4)."""
    lower = message.lower()
    at = lower.find("exceeded quota: ")
    if at >= 0:
        return message[at + len("exceeded quota: ") :].split(",", 1)[0].strip(), ""
    at = lower.find("failed quota: ")
    if at >= 0:
        return "", message[at + len("failed quota: ") :].split(":", 1)[0].strip()
    return "", ""


def _failed_create_findings(snapshot: ClusterSnapshot) -> list[Finding]:
    """A controller whose pods the API server rejects at creation (``FailedCreate`` events, or the
    ReplicaSet's ``ReplicaFailure`` condition): ``exceeded quota`` leaves no Pending pod to explain."""
    seen: dict[tuple[str, str, str], str] = {}
    for e in snapshot.records.events:
        if e.reason == "FailedCreate" and e.kind in CONTROLLER_KINDS | {"DaemonSet"}:
            seen.setdefault((e.kind, e.object_namespace or e.namespace, e.object_name), e.message)
    for c in snapshot.records.controllers:
        for ctype, status, reason, message in c.conditions:
            if ctype == "ReplicaFailure" and status == "True" and reason == "FailedCreate":
                seen.setdefault((c.kind, c.namespace, c.name), message)
    out = []
    for (kind, ns, name), message in sorted(seen.items()):
        top_kind, top = _top_owner(snapshot, kind, ns, name)
        via = f" (owned by {top_kind} {top})" if (top_kind, top) != (kind, name) else ""
        exceeded, constrained = quota_refusal(message)
        quota_name = exceeded or constrained
        if constrained:
            advice = (
                f"No pod exists, so nothing is Pending and no scheduler sees it. ResourceQuota {constrained} bounds "
                "cpu or memory, so every container and init container must set what it bounds itself (a GPU "
                "alone does not count): add the requests and limits to the pod template, give the namespace "
                "a LimitRange with defaults, or (1.34+) set pod-level spec.resources."
            )
        elif exceeded:
            # QuotaV1Pod: a Succeeded or Failed pod counts in count/pods only; a deleted one until it is gone
            # or past its grace (admission.quota.charged)
            quota = next((q for q in quotas_in(snapshot, ns) if q.name == exceeded), None)
            held = deleting_note(snapshot, quota, exceeded_keys(message)) if quota else ""
            advice = (
                "No pod exists, so nothing is Pending and no scheduler sees it. Lower the request, free quota in "
                f"{ns} (a Succeeded or Failed pod counts in count/pods only; a pod being deleted counts in full "
                f"until it is gone or past its grace period), or raise the quota.{held}"
            )
        else:
            advice = runtime_class_advice(message) or "No pod exists for a scheduler to explain."
        title = (
            ": ResourceQuota exceeded"
            if exceeded
            else ": ResourceQuota needs cpu/memory set"
            if constrained
            else ""
        )
        out.append(Finding(
            "critical", "quota" if quota_name else "workload",
            f"{kind} {ns}/{name} cannot create its pods{title}",
            [f"{kind.lower()}/{ns}/{name}", *([f"resourcequota/{ns}/{quota_name}"] if quota_name else [])],
            f"the API server rejects its pods at creation{via}: {message}. {advice}",
            "R8.1, R8.2",
            [f"kubectl -n {ns} describe {kind.lower()} {name}",
             *([f"kubectl -n {ns} describe resourcequota {quota_name}"] if quota_name else [])],
            # controllers a quota refuses alike are one line in the grouped view; any other refusal's cause
            # is its message, which differs from one to the next: each stays its own
            check=FAILED_CREATE, subject=f"{ns}/{name}" if title else "",
            many=f"{kind}s cannot create their pods{title}" if title else "",
        ))  # fmt: skip
    return out


def mig_gap(missing: list[str], offered: list[str]) -> str | None:
    """What to do when every ``missing`` resource is a MIG profile no GPU is partitioned into while the
    nodes offer other profiles (``offered``: the advertised MIG resources, sorted); None otherwise (a
    resource that is no MIG profile, or no MIG profile advertised at all: not a layout question)."""
    if not (missing and offered and all(r.startswith(MIG_RESOURCE_PREFIX) for r in missing)):
        return None
    return (
        f"{', '.join(missing)}: no node's MIG layout offers it (offered: {', '.join(offered)}). Ask for an "
        "offered profile, or re-partition a GPU — which affects every instance on it (`kubegpu plan mig`)."
    )


def _renamed_finding(snapshot: ClusterSnapshot, pod: Pod, renamed: list[str]) -> Finding:
    """The pod asks for plain names whose ``.shared`` twins the nodes advertise: their NVIDIA device plugin
    shares GPUs with renameByDefault: true (NVIDIA/k8s-device-plugin api/config/v1 ReplicatedResources; the
    kubelet keeps the old name at 0, kubernetes/kubernetes#92396). The nodes are GPU nodes, so "add GPU nodes"
    is wrong (NVIDIA/k8s-device-plugin#321); a pod already bound runs on what kubelet gave it before the rename."""
    names = ", ".join(renamed)
    twins = ", ".join(r + SHARED_SUFFIX for r in renamed)
    bound = holds(pod)
    title = (
        f"pod holds {names}, which its node now advertises only as {twins}"
        if bound
        else f"pod requests {names}; the GPU nodes advertise {twins} (renamed shared replicas)"
    )
    body = (
        f"the nodes' device plugin shares GPUs with renameByDefault: true: it registers the replicas as {twins} "
        f"and offers no {names}. "
        + (
            (not_running(snapshot, pod) or "It keeps running on the devices kubelet gave it before")
            + "; recreated, it would stay Pending. "
            if bound
            else ""
        )
        + f"Ask for {twins} in the pod spec (a replica shares one GPU's memory and compute), or set "
        "renameByDefault: false in the plugin's sharing config."
    )
    return Finding(
        "warning" if bound else "critical", "workload", title, [f"pod/{pod.key}"], body, "R11.4",
        [f"kubectl get nodes -L {GPU_SHARING_LABEL},{GPU_REPLICAS_LABEL}"],
    )  # fmt: skip


def _unregistered_holder_finding(
    snapshot: ClusterSnapshot, pod: Pod, missing: list[str], dark: list[device_plugin.NodePlugins]
) -> Finding:
    """A running pod holds device plugin resources its node (and every other) now advertises at 0 or not at
    all: kubelet admitted it when a plugin had registered them there, and writes 0 once that plugin's
    registration has ended for endpointStopGracePeriod (``stopped_plugin.CAPACITY_ZEROED``). It waits for
    nothing: it runs on them, or, its containers failing for a cause of their own, kubelet starts them again on
    them as their reason allows (``held_devices.not_running``); a pod like it, or it recreated, stays Pending
    (NVIDIA/k8s-device-plugin#1228: the plugin had allocated GPUs, then the node showed 0). A pod that does not run for a cause on its node is that cause's
    finding alone (``findings_bound.explained``)."""
    names = ", ".join(missing)
    mine = [c for c in dark if c.node == pod.node_name]
    return Finding(
        "warning", "driver/device-plugin", f"pod holds {names} on {pod.node_name}, which no node advertises now",
        [f"pod/{pod.key}", f"node/{pod.node_name}"],
        f"kubelet gave it {names} on {pod.node_name} when a device plugin had registered it there; the node now "
        f"advertises none ({CAPACITY_ZEROED}: the plugin stopped or restarted, "
        "or kubelet restarted and the plugin did not register again). "
        + (not_running(snapshot, pod) or "It keeps running on the devices it was given")
        + "; recreated, or any new pod asking for it, would stay Pending. "
        + (device_plugin.dark_summary(mine) if mine else ""),
        "R3.4, R11.4", list(mine[0].commands) if mine else [f"kubectl get node {pod.node_name} -o yaml"],
    )  # fmt: skip


def _unregistered_finding(
    snapshot: ClusterSnapshot, pod: Pod, missing: list[str], dark: list[device_plugin.NodePlugins]
) -> Finding:
    """A pod asking for device plugin resources no node advertises: it holds them (bound, Running) or waits."""
    if holds(pod):
        return _unregistered_holder_finding(snapshot, pod, missing, dark)
    return Finding(
        "critical", "driver/device-plugin", f"pod waits for {', '.join(missing)}, which no node advertises",
        [f"pod/{pod.key}", *(f"node/{c.node}" for c in dark)],
        f"{', '.join(missing)} is a device plugin's resource and the name is right; no node has registered it. "
        + (device_plugin.dark_summary(dark) if dark else
           "No node in the snapshot looks like a GPU node: add GPU nodes or check the node pool's scale-up."),
        "R3.4, R11.4", list(dark[0].commands) if dark else [f"kubectl -n {pod.namespace} describe pod {pod.name}"],
    )  # fmt: skip


def _pod_findings(snapshot: ClusterSnapshot, dark: list[device_plugin.NodePlugins]) -> list[Finding]:
    out = []
    advertised = {r for n in snapshot.nodes for r, v in n.capacity.items() if v}  # 0 everywhere: none
    # extended resources a DeviceClass serves through DRA (KEP-5004): the pod's explanation decides them
    advertised |= {
        c.extended_resource_name for c in snapshot.dra.classes.values() if c.extended_resource_name
    }
    gpu_nodes = {n.name for n in snapshot.nodes if gpu_resources(n) or has_gpu_labels(n)}
    for pod in snapshot.pods:
        if pod.is_terminal:
            continue
        asked = {
            r
            for r, v in pod.requests.items()
            if v and r.startswith("nvidia.com/") and not is_scheduler_resource(r)
        }
        missing = sorted(asked - advertised)
        mig_offered = sorted(r for r in advertised if r.startswith(MIG_RESOURCE_PREFIX))
        if gap := mig_gap(missing, mig_offered):
            out.append(Finding(
                "critical", "workload", "pod requests a MIG profile no GPU is partitioned into", [f"pod/{pod.key}"],
                gap,
                "R6.3, R11.4", [f"kubectl -n {pod.namespace} get nodes -L {MIG_LAYOUT_LABELS}"],
            ))  # fmt: skip
        elif missing == [NVIDIA_GPU] and mig_offered:
            out.append(Finding(
                "critical", "workload", "pod requests whole GPUs; every GPU is MIG-partitioned", [f"pod/{pod.key}"],
                f"it asks for {NVIDIA_GPU}, but the GPUs are split into MIG instances and the nodes offer only "
                f"{', '.join(mig_offered)} (mixed strategy). Request one of those profiles if a slice is enough, "
                "or take a GPU out of MIG mode (`kubegpu plan mig`) — which removes every instance on it.",
                "R6.3, R11.4", [f"kubectl -n {pod.namespace} get nodes -L {MIG_LAYOUT_LABELS}"],
            ))  # fmt: skip
        elif renamed := [r for r in missing if r + SHARED_SUFFIX in advertised]:
            out.append(_renamed_finding(snapshot, pod, renamed))
        elif missing and all(device_plugin.registered_by_plugin(r) for r in missing):
            # a bound pod that does not run for a cause on its node: that cause is its one finding (``explained``)
            if not explained(snapshot, pod):
                out.append(_unregistered_finding(snapshot, pod, missing, dark))
        elif missing:
            out.append(Finding(
                "critical", "workload", "pod requests a resource no node advertises", [f"pod/{pod.key}"],
                f"{', '.join(missing)} is not in any node's status.capacity; the name must match exactly "
                f"(advertised GPU resources: {', '.join(sorted(r for r in advertised if is_gpu(r))) or 'none'}).",
                "R11.4", [f"kubectl -n {pod.namespace} get pod {pod.name} -o yaml"],
            ))  # fmt: skip
        wants_gpu = any(is_gpu(r) for r in asked)
        if idle_gpu_toleration(pod, snapshot.dra):
            out.append(Finding(
                "warning", "workload", "pod tolerates the GPU taint but requests no GPU", [f"pod/{pod.key}"],
                "the toleration lets it onto GPU nodes, where it takes CPU and memory GPU pods need, and it gets "
                "no device: a toleration neither attracts nor allocates. Fix: request nvidia.com/gpu in its limits if it "
                "needs a GPU, else drop the toleration.",
                "R5.3, R17.4", [f"kubectl -n {pod.namespace} get pod {pod.name} -o jsonpath='{{.spec.tolerations}}'"],
                pitfall="R17.4",
            ))  # fmt: skip
        privileged = [c.name for c in pod.containers if c.privileged]
        if (
            privileged
            and pod.node_name in gpu_nodes
            and not wants_gpu
            and (pod.owner is None or pod.owner.kind != "DaemonSet")
        ):
            out.append(Finding(
                "warning", "isolation", "privileged pod on a GPU node", [f"pod/{pod.key}"],
                f"containers {', '.join(privileged)} are privileged: they can open every /dev/nvidia* device and bypass "
                "the device plugin's allocation. Restrict who can create privileged pods.",
                "R6.1", [f"kubectl -n {pod.namespace} get pod {pod.name} -o jsonpath='{{.spec.containers[*].securityContext}}'"],
            ))  # fmt: skip
    return out


def scattered(
    engine: Engine,
    pod: Pod,
    tables: dict[str, dict[str, int]] | None = None,
    sums: dict[str, tuple[int, int]] | None = None,
) -> list[tuple[str, int, int, int]]:
    """The pod's GPU requests that the free devices of Ready, uncordoned nodes add up to but no one node
    holds (R17.5): (resource, requested, free in total, most free on one node), milli-units. ``tables``
    keeps each resource's free-per-node table, and ``sums`` its total and largest entry, across calls on
    an engine that does not change."""
    tables = {} if tables is None else tables
    sums = {} if sums is None else sums
    out = []
    for r, need in sorted(fit_request(pod).items()):
        if not is_gpu(r) or not need:
            continue
        if r not in tables:
            tables[r] = engine.free(r, open_only=True)
        if r not in sums:
            free = tables[r].values()
            sums[r] = sum(free), max(free, default=0)
        total, largest = sums[r]
        if total >= need > largest:
            out.append((r, need, total, largest))
    return out


SPREAD_SHOWN = 12  # nodes a scattered-GPU finding's text names with their free GPUs


def _scattered_findings(snapshot: ClusterSnapshot, engine: Engine | None) -> list[Finding]:
    pending = [p for p in snapshot.pending_pods() if gpu_requests(p.requests)]
    if not pending:
        return []
    engine = engine or Engine(snapshot)
    tables: dict[str, dict[str, int]] = {}
    # per resource, the nodes holding free ones and their text: the same for every pod (the tables do not
    # change), and a walk over every node, so computed once and not once per Pending pod
    spreads: dict[str, tuple[list[str], str]] = {}
    sums: dict[str, tuple[int, int]] = {}
    out = []
    for pod in pending:
        for r, need, total, largest in scattered(engine, pod, tables, sums):
            if r not in spreads:
                held = sorted((n, f) for n, f in tables[r].items() if f)
                # the text names the nodes with the most free first, at most SPREAD_SHOWN of them (every
                # one is in the objects): at 5,000 nodes the list was ~2,000 nodes long in every such finding
                most = sorted(held, key=lambda nf: -nf[1])[:SPREAD_SHOWN]
                more = len(held) - len(most)
                spreads[r] = (
                    [f"node/{n}" for n, _ in held],
                    ", ".join(f"{n} {format_milli(r, f)}" for n, f in most)
                    + (f", +{more} more nodes" if more else ""),
                )
            holding, spread = spreads[r]
            title, subject, many = naming_pod(
                f"{POD_MARK} needs {format_milli(r, need)} {r} on one node; the free ones are scattered",
                pod.key,
            )
            out.append(Finding(
                "warning", "scheduling", title, [f"pod/{pod.key}", *holding],
                f"{format_milli(r, total)} {r} are free in total ({spread}), but a pod's devices come from ONE node and "
                f"the most free on any is {format_milli(r, largest)}: free GPUs on different nodes do not add up. "
                "Fix: free a whole node's worth (move single-GPU pods together, or a pool kept for multi-GPU jobs), "
                "or split the job into several pods under a job framework; affinity, taints, CPU and "
                "memory can rule nodes out as well (`kubegpu explain`).",
                "R9.2, R17.5", [f"kubegpu explain {pod.key}"], pitfall="R17.5",
                check=SCATTERED, subject=subject, many=many,
            ))  # fmt: skip
    return out
