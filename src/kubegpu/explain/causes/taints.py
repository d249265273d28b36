"""TaintToleration's reason (``UntoleratedTaint``): the taint itself, and whether it also keeps the
NVIDIA device plugin off the node.

The device plugin runs as a DaemonSet; NVIDIA's static manifest (``deployments/static/
nvidia-device-plugin.yml`` in NVIDIA/k8s-device-plugin) tolerates only ``nvidia.com/gpu`` with effect
NoSchedule. A node whose labels say it has GPUs but that advertises none, tainted with something that
toleration does not cover, needs the DaemonSet fixed too: a pod toleration alone would land the pod on
a node with no GPU to give.
"""

from __future__ import annotations

from kubegpu.explain import device_plugin
from kubegpu.explain.causes.base import Advice, Context, Hooks, nothing_of_the_pod
from kubegpu.explain.causes.gpu_causes import offered_gpus
from kubegpu.explain.findings import has_gpu_labels
from kubegpu.explain.shared_evidence import store_for
from kubegpu.explain.wording import some_of
from kubegpu.model import names
from kubegpu.model.gpu_facts import GPU_TAINT_KEY
from kubegpu.model.objects import Taint, Toleration
from kubegpu.model.resources import is_gpu
from kubegpu.scheduler.reasons import Reason, UntoleratedTaint

# NVIDIA/k8s-device-plugin deployments/static/nvidia-device-plugin.yml, spec.template.spec.tolerations
DEVICE_PLUGIN_TOLERATIONS = (Toleration(GPU_TAINT_KEY, "Exists", "", "NoSchedule"),)


def taint_evidence(ctx: Context, reason: UntoleratedTaint, idx: int) -> list[str]:
    return [f"taint {reason.taint} is not tolerated by the pod"]


def taint_evidence_many(ctx: Context, reason: UntoleratedTaint, idxs: list[int]) -> list[list[str]]:
    lines = [f"taint {reason.taint} is not tolerated by the pod"]  # the same on every node: one list
    return [lines] * len(idxs)


def _labelled_without_gpus(ctx: Context) -> frozenset[str]:
    """The snapshot's nodes whose labels say GPUs but that advertise none: worked out once per engine (a
    taint's group is thousands of nodes, asked for every Pending pod it refuses)."""
    return store_for(ctx.engine).fact(
        (_labelled_without_gpus,),
        lambda: frozenset(
            n.name for n in ctx.engine.snapshot.nodes if not offered_gpus(n) and has_gpu_labels(n)
        ),
    )


def keeps_device_plugin_off(taint: Taint) -> bool:
    return not any(t.tolerates(taint) for t in DEVICE_PLUGIN_TOLERATIONS)


# the taints Kubernetes puts on a node for its state (``model.names``): (the node condition that set it, or
# "" where none does; what the taint says of the node and what repairs it). A toleration is never the fix
# for these: it would put the pod on a node that cannot run it
_NODE_STATE: dict[str, tuple[str, str]] = {
    names.TAINT_NOT_READY: ("Ready", "are NotReady: the node lifecycle controller taints a node whose Ready "
        "condition is False until it is Ready again. Find why the kubelet reports it so (`describe node`: "
        "Conditions; the kubelet's and the container runtime's logs; the CNI pod on the node) and repair or "
        "replace the node"),
    names.TAINT_UNREACHABLE: ("Ready", "stopped reporting (Ready is Unknown: the kubelet's heartbeats no "
        "longer reach the API server: the node is down, its kubelet stopped, or the network is cut). Bring the "
        "node back or delete it; with this taint's NoExecute its pods are evicted after their "
        "tolerationSeconds (300 s by default)"),
    names.TAINT_UNSCHEDULABLE: ("", "are cordoned (spec.unschedulable). Uncordon them once their maintenance "
        "is done and verified"),
    names.TAINT_MEMORY_PRESSURE: ("MemoryPressure", "are short of memory: the kubelet reports MemoryPressure "
        "and evicts pods. Free memory on them (oversized requests, system daemons) or add nodes"),
    names.TAINT_DISK_PRESSURE: ("DiskPressure", "are short of disk: the kubelet reports DiskPressure (its root "
        "or image filesystem past the eviction threshold; GPU images are tens of GB). Free space (unused "
        "images, logs, emptyDir volumes) or grow the disk"),
    names.TAINT_PID_PRESSURE: ("PIDPressure", "are short of process IDs: the kubelet reports PIDPressure. "
        "Find the pod or daemon forking without bound"),
    names.TAINT_NETWORK_UNAVAILABLE: ("NetworkUnavailable", "have no pod network yet: NetworkUnavailable is "
        "True until the CNI (or the cloud's route controller) sets the node up. Check the CNI's pod on the node"),
    names.TAINT_OUT_OF_SERVICE: ("", "are marked out of service (a non-graceful node shutdown, KEP-2268). "
        "Remove the taint once the node is back and healthy"),
    names.TAINT_CLOUD_UNINITIALIZED: ("", "are not initialized yet: a kubelet started with an external cloud "
        "provider waits for the cloud-controller-manager. Check that it runs and its log for these nodes"),
    names.TAINT_CLOUD_SHUTDOWN: ("", "are shut down, says the cloud provider. Start them again or delete them"),
}  # fmt: skip


def _node_state_advice(ctx: Context, taint: Taint, nodes: list[str]) -> Advice:
    """A taint Kubernetes put on the nodes for their state: the node needs repair, not the pod a toleration."""
    condition, says = _NODE_STATE[taint.key]
    first = nodes[0]
    fix = f"These nodes carry {taint}: they {says}. Adding a toleration to the pod is not the fix."
    node = ctx.engine.snapshot.node(first)
    shown = (
        [c for c in (node.conditions if node is not None else ()) if c[0] == condition] if condition else []
    )
    for kind, status, message in shown[:1]:
        fix += f" {first} reports {kind}={status}" + (f": {message}" if message else "") + "."
    return Advice(
        fix,
        "Kubernetes sets and clears these taints itself: removing one by hand does not repair the node, and a "
        "workload that tolerates it lands where it cannot run (DaemonSets get the tolerations they need).",
        [
            ctx.cmd(f"describe node {first}"),
            ctx.cmd(f"get node {first} -o jsonpath='{{.status.conditions}}'"),
        ],
    )


def _plain_fix(taint: Taint) -> str:
    # a taint with no value is matched by Exists on its key (Equal with an empty value matches it too, but
    # "value: ," reads as a value left out by mistake)
    match = f"operator: Equal, value: {taint.value}" if taint.value else "operator: Exists"
    return (
        f"These nodes keep pods off with taint {taint}. If the pod belongs on them, add a toleration "
        f"(key: {taint.key}, {match}, effect: {taint.effect}) to its template; otherwise leave them alone."
    )


def taint_advice(ctx: Context, reason: UntoleratedTaint, nodes: list[str]) -> Advice:
    taint = reason.taint
    if taint.key in _NODE_STATE:
        return _node_state_advice(ctx, taint, nodes)
    return _toleration_advice(ctx, taint, nodes, _plugin_fix(ctx, taint, nodes) or _plain_fix(taint))


def _toleration_advice(ctx: Context, taint: Taint, nodes: list[str], fix: str) -> Advice:
    """``fix`` for a taint the pod may tolerate, with the pitfall and the commands that show the taint and the
    pod's tolerations."""
    if taint.key != GPU_TAINT_KEY:
        pitfall = (
            "A toleration allows, it does not attract: pair it with node affinity if the pod must land there."
        )
    elif any(is_gpu(r) and v for r, v in ctx.pod.requests.items()):
        pitfall = (
            "A toleration only allows the pod onto the node; it neither attracts it there nor gives it a GPU: "
            "the pod must also request nvidia.com/gpu."
        )
    else:
        # the ExtendedResourceToleration admission plugin (kubernetes#55839, plugin/pkg/admission/
        # extendedresourcetoleration; GKE runs it) adds {key: <resource>, operator: Exists, effect: NoSchedule}
        # only to pods requesting that extended resource: a pod without a GPU request never gets it
        pitfall = (
            "This pod requests no GPU, so the ExtendedResourceToleration admission plugin (GKE runs it), which "
            "gives pods requesting nvidia.com/gpu this toleration, does not give it to this one: a pod that must sit on the GPU "
            "node without a GPU (a sidecar-like helper) needs the toleration in its own template. A pod that "
            "needs the GPU must request nvidia.com/gpu instead."
        )
    return Advice(
        fix,
        pitfall,
        [
            ctx.cmd(f"get node {nodes[0]} -o jsonpath='{{.spec.taints}}'"),
            ctx.cmd(f"get pod {ctx.pod.name} -o jsonpath='{{.spec.tolerations}}'"),
        ],
    )


def _plugin_fix(ctx: Context, taint: Taint, nodes: list[str]) -> str:
    """The fix where the taint also keeps the device plugin off some of ``nodes`` ("" where it does not)."""
    snapshot = ctx.engine.snapshot
    unoffered = _labelled_without_gpus(ctx)
    dark = (
        [n for n in (snapshot.node(name) for name in nodes if name in unoffered) if n is not None]
        if unoffered
        else []
    )
    known_plugins = [ds for ds in snapshot.records.daemonsets if (k := device_plugin.known(ds)) and k.plugin]
    if known_plugins:  # the DaemonSets the cluster runs decide, not the stock manifest
        blocked = sorted({d for n in dark for d in device_plugin.keeps_plugin_off(snapshot, n, taint)})
        if not blocked:
            return ""
        return (
            f"Taint {taint} keeps both this pod and the device plugin ({', '.join(blocked)}) off "
            f"{some_of([n.name for n in dark])}: those nodes advertise no GPU, so a toleration on the pod alone "
            f"would still find no GPU there. First add a toleration for {taint.key} (effect {taint.effect}) to the "
            "device plugin DaemonSet's pod template; once the nodes advertise GPUs, add the same toleration to the "
            "pod if it belongs there."
        )
    if not (dark and keeps_device_plugin_off(taint)):
        return ""
    return _plain_fix(taint) + (
        f" On {some_of([n.name for n in dark])} the taint also keeps the NVIDIA device plugin off: the labels say GPUs, yet "
        "the node advertises none. Add the same toleration to the device plugin's DaemonSet (its stock "
        f"manifest tolerates only {GPU_TAINT_KEY}:NoSchedule), or the pod would land on a node with no GPU to give."
    )


def taint_advice_many(ctx: Context, parts: list[tuple[UntoleratedTaint, list[str]]]) -> Advice:
    """Nodes refused for different taints, which the release words alike: the most common three taints with
    their counts (plain ones in one sentence, the others with their own advice; the rest counted), the
    pitfall and commands of the most common."""
    shown = parts[:TAINTS_SHOWN]
    # a node-state taint, or one that also keeps the device plugin off: its own advice; plain taints (no
    # fix of their own) share one sentence, below
    own = [
        _node_state_advice(ctx, r.taint, nodes) if r.taint.key in _NODE_STATE else None for r, nodes in shown
    ]
    fixes = [
        o.fix if o is not None else _plugin_fix(ctx, r.taint, nodes)
        for o, (r, nodes) in zip(own, shown, strict=True)
    ]
    plain, said = [], []
    for (r, nodes), fix in zip(shown, fixes, strict=True):
        if fix:
            said.append(f"{len(nodes)} node(s) with {r.taint}: {fix}")
        else:
            plain.append(f"{len(nodes)} node(s) with {r.taint}")
    if plain:
        said.insert(0, f"{', '.join(plain)}: if the pod belongs on them, add a toleration for that taint "
                       "(key, value and effect as shown) to its template; otherwise leave them alone.")  # fmt: skip
    fix = " ".join(said)
    rest = parts[TAINTS_SHOWN:]
    if rest:
        fix += f" {sum(len(n) for _, n in rest)} more node(s) with {len(rest)} other taint(s): see --all."
    # the most common taint's pitfall and commands, from the fix already made for it
    (top, top_nodes), made = shown[0], own[0]
    first = made if made is not None else _toleration_advice(ctx, top.taint, top_nodes, fixes[0])
    return Advice(fix, first.pitfall, first.commands)


TAINTS_SHOWN = 3  # distinct taints a merged group's advice speaks for

HOOKS: dict[type[Reason], Hooks] = {
    UntoleratedTaint: Hooks(
        taint_evidence, taint_advice, taint_evidence_many, taint_advice_many, pod_part=nothing_of_the_pod
    )
}
