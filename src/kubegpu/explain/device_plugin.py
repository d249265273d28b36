"""Why a GPU node advertises no GPUs: the device plugin chain, read from what the cluster shows.

A node gets ``nvidia.com/gpu`` (or HAMi's, Volcano's, kubegpu's own resources) only when a device plugin
pod runs on it and registers with kubelet. The plugin is a DaemonSet, so the chain is:
1. is there a device plugin DaemonSet at all (NVIDIA's ``k8s-device-plugin``, the GPU Operator's
   ``nvidia-device-plugin-daemonset``, HAMi's ``hami-device-plugin``, Volcano's vGPU plugin, GKE's
   ``nvidia-gpu-device-plugin``, kubegpu's node agent), recognised by name, labels and image;
2. does it select the node: the DaemonSet controller's ``NodeShouldRunDaemonPod`` is the pod template's
   nodeSelector and required node affinity (``model.affinity.required_matches``, the scheduler's own rule)
   and its NoSchedule/NoExecute taints against the template's tolerations plus those the controller adds
   to every daemon pod (``first_untolerated``, TaintToleration's own rule); a label the selector needs that
   Node Feature Discovery or GFD set sends the chain on to those DaemonSets;
3. is its pod there, scheduled and Ready: Pending with its scheduler message, a container waiting in
   CrashLoopBackOff with the last termination, an init container waiting on the GPU Operator's driver,
   toolkit or validator (whose own pods on the node are then read the same way, upstream first);
4. a Ready plugin on a node that still advertises nothing: the plugin found no devices (driver, container
   runtime), which only its log can say.
Each step quotes the objects and the Warning events about them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from kubegpu.explain.kubectl import kubectl, mutate
from kubegpu.explain.mig_paused import mig_paused, mig_paused_why
from kubegpu.explain.operand_hints import INIT_WAITS, OLD_VALIDATOR_IMAGE, VALIDATOR_FAILS, image_hint
from kubegpu.explain.wording import some_of
from kubegpu.model.affinity import required_matches
from kubegpu.model.gpu_facts import gpu_signs
from kubegpu.model.names import (
    GPU_DRA_DRIVERS,
    GPU_MILLI,
    GPU_PRESENT_LABEL,
    IMAGE_PULL_WAITS,
    MIG_CONFIG_LABEL,
    MIG_STRATEGY_LABEL,
    NFD_NVIDIA_PCI_LABELS,
    VOLCANO_VGPU_NUMBER,
)
from kubegpu.model.objects import ContainerState, Node, Pod, Taint, Toleration, first_untolerated
from kubegpu.model.records import DaemonSet
from kubegpu.model.resources import is_gpu
from kubegpu.model.snapshot import ClusterSnapshot

# pkg/controller/daemon/util/daemonset_util.go AddOrUpdateDaemonPodTolerations: every daemon pod tolerates
# these (the network-unavailable one only with hostNetwork, which is not modelled here).
DAEMON_TOLERATIONS = (
    Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoExecute"),
    Toleration("node.kubernetes.io/unreachable", "Exists", "", "NoExecute"),
    Toleration("node.kubernetes.io/disk-pressure", "Exists", "", "NoSchedule"),
    Toleration("node.kubernetes.io/memory-pressure", "Exists", "", "NoSchedule"),
    Toleration("node.kubernetes.io/pid-pressure", "Exists", "", "NoSchedule"),
    Toleration("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule"),
)


@dataclass(frozen=True)
class Known:
    key: str
    title: str
    names: tuple[str, ...] = ()  # substrings of the DaemonSet's name
    images: tuple[str, ...] = ()  # substrings of a container image
    plugin: bool = True  # registers GPU resources (else: a DaemonSet the plugin depends on)
    container: str = ""  # the plugin's own container as its manifests name it (its log says what it found)


# Matched by name first (in this order: the DaemonSets the plugin depends on before the generic NVIDIA
# name, since NVIDIA's chart names its NFD and GFD DaemonSets nvidia-device-plugin-…), then by image.
# fmt: off
KNOWN: tuple[Known, ...] = (
    Known("driver", "the NVIDIA driver", ("nvidia-driver-daemonset", "nvidia-driver-installer"), plugin=False),
    Known("toolkit", "the NVIDIA container toolkit", ("nvidia-container-toolkit",), plugin=False),
    Known("nfd", "Node Feature Discovery's worker", ("node-feature-discovery-worker", "nfd-worker"), plugin=False),
    Known("gfd", "GPU Feature Discovery", ("gpu-feature-discovery",), plugin=False),
    Known("validator", "the GPU Operator's validator", ("nvidia-operator-validator",), plugin=False),
    Known("hami", "HAMi's device plugin", ("hami-device-plugin", "vgpu-device-plugin"), ("projecthami/hami",)),
    Known("volcano", "Volcano's vGPU device plugin", ("volcano-device-plugin",), ("volcano-vgpu-device-plugin",)),
    Known("gke", "GKE's NVIDIA device plugin", ("nvidia-gpu-device-plugin",)),
    Known("kubegpu", "kubegpu's node agent", ("kubegpu-node-agent",)),
    # the GPU Operator's is nvidia-device-plugin-daemonset with the operator's validator init container; the
    # validator image alone marks no plugin: the operator gives every operand that init container
    # (assets/state-dcgm-exporter/0800_daemonset.yaml: toolkit-validation), see ``known``. From v25.10.0 the
    # validator is the operator's own image, nvcr.io/nvidia/gpu-operator (PR 1483; #1982 shows its pods).
    # Its plugin container: assets/state-device-plugin/0500_daemonset.yaml (beside config-manager).
    Known("gpu-operator", "the GPU Operator's device plugin", (), (OLD_VALIDATOR_IMAGE, "nvidia/gpu-operator:"),
          container="nvidia-device-plugin"),
    # container: deployments/static/nvidia-device-plugin.yml, Helm templates/daemonset-device-plugin.yml
    Known("nvidia", "NVIDIA's device plugin", ("nvidia-device-plugin",), ("k8s-device-plugin",),
          container="nvidia-device-plugin-ctr"),
)
# fmt: on
# Labels the plugin DaemonSets select nodes by, and the DaemonSet kind that sets each.
LABEL_SETTERS = {
    "feature.node.kubernetes.io/pci-10de.present": "nfd",
    "nvidia.com/gpu.present": "gfd",
    "nvidia.com/gpu.deploy.device-plugin": "gpu-operator",
}


def known(ds: DaemonSet) -> Known | None:
    name = ds.name.lower()
    by_name = next((k for k in KNOWN if any(n in name for n in k.names)), None)
    by_image = next((k for k in KNOWN if any(i in img for i in k.images for img in ds.images)), None)
    if by_image is not None and by_image.key == "gpu-operator":
        # nvidia-dcgm-exporter, nvidia-mig-manager, ... carry the validator image too: not device plugins
        return by_image if by_name is not None and by_name.key == "nvidia" else by_name
    return by_name or by_image


@dataclass
class Link:
    """One DaemonSet's part on one node: whether it selects the node, and its pod there."""

    daemonset: str  # namespace/name
    title: str
    runs_here: bool
    state: str  # ready | not-selected | not-tolerated | no-pod | pending | initializing | crash | not-ready
    lines: list[str] = field(default_factory=list)
    failing: str = ""  # the container (not one that only waits for it) kubelet reports waiting with a reason
    reads: list[str] = field(default_factory=list)  # read-only commands that show why, first step first
    log: str = ""  # of ``reads``, the one reading the failing container's previous log ("" when none)
    pod: Pod | None = None  # the DaemonSet's pod for the node, when there is one


@dataclass
class NodePlugins:
    node: str
    signs: list[str]
    advertised: dict[str, int]  # GPU resources with capacity > 0 (all unhealthy is another finding)
    links: list[Link] = field(default_factory=list)
    causes: list[str] = field(default_factory=list)  # sentences, most specific first
    blocking_taints: list[Taint] = field(default_factory=list)  # taints keeping every plugin off
    commands: list[str] = field(default_factory=list)
    plugin_down: bool = False  # a known plugin DaemonSet selects the node and no pod of one runs there
    # known plugin DaemonSets exist and none selects the node: a plugin kubegpu does not recognise may serve it
    unselected: bool = False

    @property
    def dark(self) -> bool:
        return not self.advertised


def is_gpu_node(node: Node) -> bool:
    return bool(gpu_signs(node)) or any(is_gpu(r) for r in node.capacity)


def _tolerations(ds: DaemonSet) -> tuple[Toleration, ...]:
    return (*ds.template.tolerations, *DAEMON_TOLERATIONS)


def untolerated(ds: DaemonSet, node: Node) -> Taint | None:
    return first_untolerated(node.taints, _tolerations(ds))


def all_untolerated(ds: DaemonSet, node: Node) -> list[Taint]:
    """Every NoSchedule/NoExecute taint the DaemonSet does not tolerate (the fix needs them all)."""
    tolerations = _tolerations(ds)
    return [t for t in node.taints if first_untolerated((t,), tolerations) is not None]


def selector_gap(ds: DaemonSet, node: Node) -> str:
    """ "" when the template's nodeSelector and required affinity admit ``node``, else what it lacks."""
    pod = ds.template
    if required_matches(pod, node.labels, node.name):
        return ""
    wrong = [f"{k}={v}" for k, v in pod.node_selector.items() if node.labels.get(k) != v]
    if wrong:
        return f"nodeSelector needs {', '.join(wrong)}"
    terms = []
    for t in pod.required_affinity or ():
        reqs = [f"{r.key} {r.operator} {','.join(r.values)}".strip() for r in t.match_expressions]
        terms.append(" and ".join(reqs) or "(empty term)")
    return "required node affinity needs " + " or ".join(terms)


def _missing_labels(ds: DaemonSet, node: Node) -> list[str]:
    keys = list(ds.template.node_selector)
    keys += [r.key for t in ds.template.required_affinity or () for r in t.match_expressions]
    return [k for k in dict.fromkeys(keys) if k not in node.labels]


def pod_of(snapshot: ClusterSnapshot, ds: DaemonSet, node: str) -> Pod | None:
    """The DaemonSet's pod for ``node``: bound there, or Pending with the controller's
    ``matchFields metadata.name`` affinity naming it; the first in the snapshot's order. Asked per GPU node and
    per failing GPU pod's node (``findings_bound``), so every DaemonSet pod is indexed once per snapshot."""
    return snapshot.derived("daemon-pods", lambda: _daemon_pods(snapshot.pods)).get(
        (ds.namespace, ds.name, node)
    )


def _daemon_pods(pods: list[Pod]) -> dict[tuple[str, str, str], Pod]:
    """(namespace, DaemonSet, node) -> ``pod_of``'s answer; an unbound pod answers node "" as well."""
    out: dict[tuple[str, str, str], Pod] = {}
    for p in pods:
        if p.owner is None or p.owner.kind != "DaemonSet" or p.is_terminal:
            continue
        fields = [v for t in p.required_affinity or () for r in t.match_fields for v in r.values]
        for where in [p.node_name] if p.node_name else ["", *fields]:
            out.setdefault((p.namespace, p.owner.name, where), p)
    return out


def _events(snapshot: ClusterSnapshot, kind: str, namespace: str, name: str) -> list[str]:
    evs = [e for e in snapshot.records.events_about(kind, namespace, name) if e.type == "Warning"]
    return [f"event {e.reason} ({e.component or '?'}, ×{e.count}): {e.message}" for e in evs[-3:]]


def _running_init(pod: Pod) -> ContainerState | None:
    """The plain (non-sidecar) init container that runs and has not completed: kubelet starts the next
    init container and the app containers only after it exits 0, so it, not their PodInitializing, is what
    the pod waits on."""
    sidecars = {c.name for c in pod.init_containers if c.restart_policy == "Always"}
    return next(
        (c for c in pod.container_states if c.init and c.running and not c.ready and c.name not in sidecars),
        None,
    )


def may_crash(pod: Pod) -> bool:
    """``pod_state`` can say "crash" (a container waits): no event reads, for scans of every GPU pod."""
    return any(c.waiting for c in pod.container_states)


def pod_state(snapshot: ClusterSnapshot, pod: Pod) -> tuple[str, list[str]]:
    """(state, lines) of a daemon pod: ready | pending | initializing | crash | not-ready."""
    if pod.ready and pod.node_name and not may_crash(pod) and _running_init(pod) is None:
        return "ready", [f"pod {pod.key} is Ready"]  # no event reads: asked of 21k GPU pods on 5,000 nodes
    lines = _events(snapshot, "Pod", pod.namespace, pod.name)
    if not pod.node_name:
        cond = pod.scheduled_condition
        said = f": {cond[2]}" if cond and cond[2] else ""
        return "pending", [f"pod {pod.key} is not scheduled{said}", *lines]
    stuck = _running_init(pod)
    if stuck is not None:
        later = [c.name for c in pod.container_states if c.waiting == "PodInitializing"]
        verb = "waits" if len(later) == 1 else "wait"
        after = f"; {', '.join(later)} {verb} for it (PodInitializing)" if later else ""
        return "initializing", [
            f"pod {pod.key}: init container {stuck.name} is still running (restarts {stuck.restarts}) and has not "
            f"completed{after}{INIT_WAITS.get(stuck.name, '')}",
            *lines,
        ]
    waiting = [c for c in pod.container_states if c.waiting]
    if any(c.waiting != "PodInitializing" for c in waiting):
        # the containers after a failing init container only wait for it: naming them adds nothing
        waiting = [c for c in waiting if c.waiting != "PodInitializing"]
    if waiting:
        out = []
        images = {c.name: c.image for c in (*pod.init_containers, *pod.containers)}
        for c in waiting:
            kind = "init container" if c.init else "container"
            tail = f": {c.message}" if c.message else ""
            if c.waiting in IMAGE_PULL_WAITS:
                tail += image_hint(images.get(c.name, ""))
            out.append(f"pod {pod.key}: {kind} {c.name} is {c.waiting} (restarts {c.restarts}){tail}")
        return "crash", [*out, *lines]
    if pod.ready:
        return "ready", [f"pod {pod.key} is Ready"]
    return "not-ready", [f"pod {pod.key} is {pod.phase} but not Ready", *lines]


def link(snapshot: ClusterSnapshot, ds: DaemonSet, node: Node, title: str) -> Link:
    gap = selector_gap(ds, node)
    desired = f" (status: desired {ds.desired})" if ds.desired is not None else ""
    if gap:
        return Link(
            ds.key,
            title,
            False,
            "not-selected",
            [f"DaemonSet {ds.key} does not select {node.name}: its {gap}{desired}"],
        )
    taints = all_untolerated(ds, node)
    if taints:
        which = "taint " + str(taints[0]) if len(taints) == 1 else "taints " + ", ".join(map(str, taints))
        return Link(
            ds.key,
            title,
            False,
            "not-tolerated",
            [f"DaemonSet {ds.key} does not tolerate {node.name}'s {which}{desired}"],
        )
    pod = pod_of(snapshot, ds, node.name)
    if pod is None:
        return Link(
            ds.key, title, True, "no-pod",
            [f"DaemonSet {ds.key} selects {node.name} but no pod of it is there", *_events(snapshot, "DaemonSet", ds.namespace, ds.name)],
        )  # fmt: skip
    state, lines = pod_state(snapshot, pod)
    bad = [c for c in pod.container_states if c.waiting and c.waiting != "PodInitializing"]
    reads = [f"kubectl -n {pod.namespace} describe pod {pod.name}"] if state != "ready" else []
    log = ""
    if bad and bad[0].restarts:
        # the container has run and exited: its last log says why (kubelet keeps the previous instance's log)
        log = f"kubectl -n {pod.namespace} logs {pod.name} -c {bad[0].name} --previous"
        reads.insert(0, log)
    return Link(ds.key, title, True, state, lines, bad[0].name if bad else "", reads, log, pod)


def plugin_log(k: Known, pod: Pod) -> str:
    """Reads a running plugin's log: its own container's (``Known.container``) where the pod has it, else all."""
    own = k.container and any(c.name == k.container for c in pod.containers)
    which = f"-c {k.container}" if own else "--all-containers"
    return f"kubectl -n {pod.namespace} logs {pod.name} {which} --tail=100"


def check_node(snapshot: ClusterSnapshot, node: Node) -> NodePlugins:
    out = NodePlugins(node.name, gpu_signs(node), {r: v for r, v in node.capacity.items() if is_gpu(r) and v})
    records = snapshot.records
    out.commands = [
        "kubectl -n kube-system get daemonsets -A -o wide",
        f"kubectl -n default get pods -A -o wide --field-selector spec.nodeName={node.name}",
    ]
    if "DaemonSet" not in records.seen:
        out.causes.append(
            "the snapshot holds no DaemonSets, so kubegpu cannot say which device plugin should run here or why it "
            "does not: add daemonsets,events to the `kubectl get` (README) and run again"
        )
        return out
    by_kind: dict[str, list[DaemonSet]] = {}
    for ds in records.daemonsets:
        k = known(ds)
        if k is not None:
            by_kind.setdefault(k.key, []).append(ds)
    titles = {k.key: k for k in KNOWN}
    plugins = [(titles[key], ds) for key, dss in by_kind.items() if titles[key].plugin for ds in dss]
    if not plugins:
        out.causes.append(
            "no device plugin DaemonSet is in the cluster (none of NVIDIA's, the GPU Operator's, HAMi's, Volcano's, "
            "GKE's or kubegpu's): nothing registers GPUs with kubelet on any node. "
            + (_unlabelled_for_operator(snapshot, node, by_kind.get("nfd", []), out) or "Install one (NVIDIA's "
               "k8s-device-plugin Helm chart, or the GPU Operator)")
        )  # fmt: skip
        return out
    for k, ds in plugins:
        out.links.append(link(snapshot, ds, node, k.title))
    first = plugins[0][1]
    out.commands = [
        f"kubectl -n {first.namespace} get daemonset {first.name} -o wide",
        f"kubectl -n {first.namespace} get pods -o wide --field-selector spec.nodeName={node.name}",
        f"kubectl -n {first.namespace} get events --field-selector involvedObject.name={first.name}",
        f"kubectl -n default get node {node.name} -o jsonpath='{{.spec.taints}} {{.metadata.labels}}'",
    ]
    running = [(k, lk) for (k, _), lk in zip(plugins, out.links, strict=True) if lk.runs_here]
    out.plugin_down = bool(running) and not any(lk.state in ("ready", "not-ready") for _, lk in running)
    out.unselected = not running
    if not running:
        _explain_not_selected(snapshot, node, plugins, out, by_kind, titles)
        return out
    for k, lk in running:
        if lk.state == "ready" and out.dark and node.labels.get(MIG_STRATEGY_LABEL) == "mixed":
            out.causes.append(
                f"{lk.title} ({lk.daemonset}) is Ready on {node.name} and runs MIG strategy mixed, yet registers no "
                f"GPU and no MIG device: MIG mode is on and no MIG instance exists. Apply a MIG layout "
                f"(label {MIG_CONFIG_LABEL}, `kubegpu plan mig`) or disable MIG mode"
            )
        elif lk.state == "ready" and out.dark:
            out.causes.append(
                f"{lk.title} ({lk.daemonset}) is Ready on {node.name} yet the node advertises no GPU: the plugin "
                "found no devices or could not load NVML (driver not installed, or the container runtime's default "
                "runtime is not nvidia); its log says which"
            )
            if lk.pod is not None:  # a Ready link has its pod
                out.commands.append(plugin_log(k, lk.pod))
        elif lk.state != "ready":
            out.causes.append(
                f"{lk.title} ({lk.daemonset}) is not working on {node.name}: " + "; ".join(lk.lines)
            )
            if lk.log:
                out.commands.insert(0, lk.log)
    if any(lk.state in ("crash", "initializing", "no-pod", "pending", "not-ready") for _, lk in running):
        _dependencies(snapshot, node, out, by_kind, titles)
    return out


def _dependencies(
    snapshot: ClusterSnapshot,
    node: Node,
    out: NodePlugins,
    by_kind: dict[str, list[DaemonSet]],
    titles: dict[str, Known],
) -> None:
    """The GPU Operator's driver, container toolkit and validator on the node, which its device plugin's
    toolkit-validation init container waits for (the validator writes toolkit-ready once the first two work):
    each one not ready is a cause, upstream first, with the command that reads why."""
    found: list[str] = []
    steps: list[str] = []
    for key in ("driver", "toolkit", "validator"):
        for ds in by_kind.get(key, []):
            dep = link(snapshot, ds, node, titles[key].title)
            out.links.append(dep)
            if dep.state == "ready":
                continue
            why = VALIDATOR_FAILS.get(dep.failing, "") if key == "validator" else ""
            found.append(f"{dep.title} ({dep.daemonset}) is not ready on {node.name}: " + "; ".join(dep.lines)
                         + why + " — the device plugin waits for it")  # fmt: skip
            steps += dep.reads
    out.causes[:0] = found
    out.commands[:0] = steps


def _unlabelled_for_operator(
    snapshot: ClusterSnapshot, node: Node, nfds: list[DaemonSet], out: NodePlugins
) -> str:
    """Node Feature Discovery runs but no device plugin DaemonSet exists and ``node`` has none of the NFD
    labels the GPU Operator creates its DaemonSets for (``NFD_NVIDIA_PCI_LABELS``): the operator, if installed,
    is waiting for them (NVIDIA/gpu-operator#423: only its NFD worker DaemonSet existed, the GPU node lacked
    pci-10de.present). NFD's worker reports features; nfd-master writes the labels. "" when that does not apply."""
    if not nfds or any(node.labels.get(k) == "true" for k in NFD_NVIDIA_PCI_LABELS):
        return ""
    ds = nfds[0]
    worker = link(snapshot, ds, node, "Node Feature Discovery's worker")
    out.commands = [
        f"kubectl -n {ds.namespace} get pods -o wide",
        f"kubectl -n default get node {node.name} --show-labels",
    ]
    return (
        f"Node Feature Discovery runs ({ds.key}), which the GPU Operator installs with itself, but {node.name} has none of "
        f"{', '.join(k + '=true' for k in NFD_NVIDIA_PCI_LABELS)}: the GPU Operator creates its driver, "
        "toolkit and device plugin DaemonSets only for nodes with one of them, so it has made none. "
        f"NFD's worker there: {'; '.join(worker.lines)}; the labels come from nfd-master: read its pod and log "
        "(is it running, does it label nodes), then the GPU Operator's log. Without the GPU Operator, install "
        "a device plugin"
    )


def _explain_not_selected(
    snapshot: ClusterSnapshot,
    node: Node,
    plugins: list[tuple[Known, DaemonSet]],
    out: NodePlugins,
    by_kind: dict[str, list[DaemonSet]],
    titles: dict[str, Known],
) -> None:
    for (k, ds), lk in zip(plugins, out.links, strict=False):
        line = lk.lines[0]
        if lk.state == "not-tolerated":
            taints = all_untolerated(ds, node)
            out.blocking_taints += taints
            keys = ", ".join(f"{t.key} (effect {t.effect})" for t in taints)
            line += (
                f": {k.title} never runs there, so the node registers no GPU. Add a toleration for {keys}"
                " to the DaemonSet's pod template (Helm: its `tolerations` value)"
            )
        elif paused := mig_paused(ds, node):
            line += mig_paused_why(snapshot, node, paused, out.commands)
        else:
            missing = _missing_labels(ds, node)
            setters = [LABEL_SETTERS[m] for m in missing if m in LABEL_SETTERS]
            line += f" (the node lacks {', '.join(missing)})" if missing else ""
            for s in setters:
                for dep in by_kind.get(s, []):
                    d = link(snapshot, dep, node, titles[s].title)
                    out.links.append(d)
                    if d.state != "ready":
                        line += f"; that label is set by {d.title}, which does not run there either: {'; '.join(d.lines)}"
            if setters and not any(by_kind.get(s) for s in setters):
                line += _no_label_setter(node, ds, [titles[s].title for s in dict.fromkeys(setters)], out)
            if not setters and missing:
                line += (
                    f": label the node (`kubectl label node {node.name} "
                    + " ".join(f"{m}=<value>" for m in missing)
                    + "`) or widen the DaemonSet's selector"
                )
        out.causes.append(line)


def _no_label_setter(node: Node, ds: DaemonSet, setters: list[str], out: NodePlugins) -> str:
    """None of the DaemonSets that would set the labels the plugin's selector needs is in the cluster
    (NVIDIA's chart leaves its NFD and GFD off by default, values.yaml ``gfd.enabled: false``;
    NVIDIA/k8s-device-plugin#607): deploy one, or set the label that forces a deployment (the chart's affinity
    accepts ``nvidia.com/gpu.present=true`` for that), with its dry run and rollback."""
    text = f": none of {', '.join(setters)} runs in the cluster to set them"
    forced = [
        r.values[0]
        for t in ds.template.required_affinity or ()
        for r in t.match_expressions
        if r.key == GPU_PRESENT_LABEL and r.operator == "In" and r.values
    ]
    if ds.template.node_selector.get(GPU_PRESENT_LABEL):
        forced.insert(0, ds.template.node_selector[GPU_PRESENT_LABEL])
    if not forced:
        return text + ": deploy it, or label the node with what the selector needs"
    label = f"{GPU_PRESENT_LABEL}={forced[0]}"
    out.commands += [
        *mutate(ds.namespace, f"label node {node.name} {label}"),
        f"{kubectl(ds.namespace, f'label node {node.name} {GPU_PRESENT_LABEL}-')}   # rollback",
    ]
    return text + (
        f": deploy Node Feature Discovery (it labels nodes that have an NVIDIA PCI device), or label the GPU "
        f"nodes {label}, which the selector accepts to force the plugin there"
    )


def check_nodes(snapshot: ClusterSnapshot) -> list[NodePlugins]:
    """Every GPU node's device plugin chain (dark or not), less the nodes whose GPUs a DRA driver
    publishes (``dra_gpu_nodes``): a device plugin's absence there is the design, not a fault."""
    served = dra_gpu_nodes(snapshot)
    return [check_node(snapshot, n) for n in snapshot.nodes if is_gpu_node(n) and n.name not in served]


def dra_gpu_nodes(snapshot: ClusterSnapshot) -> set[str]:
    """Nodes with a ResourceSlice of a GPU DRA driver (``names.GPU_DRA_DRIVERS``): their GPUs reach pods
    through claims (the GPU Operator with ``nvidia.com/gpu.deploy.device-plugin=false`` and the DRA driver
    instead, NVIDIA/k8s-dra-driver-gpu), so no nvidia.com/gpu in status.capacity is expected. A slice listing no
    device counts too: the driver's kubelet plugin runs there; that it offers nothing is ``empty_gpu_slices``."""
    return {s.node_name for s in snapshot.dra.slices if s.node_name and s.driver in GPU_DRA_DRIVERS}


def dark_nodes(snapshot: ClusterSnapshot) -> list[NodePlugins]:
    return [c for c in check_nodes(snapshot) if c.dark]


CAUSES_SHOWN: Final = 3  # distinct causes ``dark_summary`` names; each with a few of its nodes


def dark_summary(checks: list[NodePlugins]) -> str:
    """Sentences for advice on a pod waiting for GPUs: per cause, the dark nodes it holds for (a few named,
    with what says they have GPUs): hundreds of GPU nodes are often dark for one reason."""
    by_cause: dict[str, list[str]] = {}
    for c in checks:
        cause = c.causes[0] if c.causes else "its device plugin registered no GPU"
        by_cause.setdefault(cause, []).append(f"{c.node} ({', '.join(c.signs)})" if c.signs else c.node)
    shown = list(by_cause.items())[:CAUSES_SHOWN]
    out = " ".join(f"{some_of(named)}: {cause}." for cause, named in shown)
    if len(by_cause) > CAUSES_SHOWN:
        rest = sum(len(named) for named in list(by_cause.values())[CAUSES_SHOWN:])
        out += (
            f" {rest} more GPU node(s) for {len(by_cause) - CAUSES_SHOWN} other cause(s) (`kubegpu inspect`)."
        )
    return out


def keeps_plugin_off(snapshot: ClusterSnapshot, node: Node, taint: Taint) -> list[str]:
    """The device plugin DaemonSets (in the snapshot) that ``taint`` keeps off ``node``."""
    return [
        ds.key
        for ds in snapshot.records.daemonsets
        if (k := known(ds)) is not None
        and k.plugin
        and not selector_gap(ds, node)
        and untolerated(ds, node) == taint
    ]


# The names NVIDIA's device plugin registers: nvidia.com/gpu, its renamed shared form (sharing.renameByDefault)
# and MIG profiles (mixed strategy, nvidia.com/mig-<g>g.<mem>gb[+me], shared too); anything else close to
# them is a misspelling, not a plugin problem.
PLUGIN_RESOURCE = re.compile(r"nvidia\.com/(gpu|mig-\d+g\.\d+gb(\+me)?)(\.shared)?")


def registered_by_plugin(resource: str) -> bool:
    """A resource a known device plugin registers (so its absence is the plugin's, not the pod's)."""
    return bool(PLUGIN_RESOURCE.fullmatch(resource)) or resource in (VOLCANO_VGPU_NUMBER, GPU_MILLI)
