"""NodeResourcesFit's reasons (``TooManyPods``, ``Insufficient``): the numbers, and advice by cause.

For a GPU resource the advice names the cause the data shows, because each has a different fix: MIG slices
where a whole GPU is asked, unhealthy GPUs, GPU nodes whose device plugin registered none or serves them no
more (``explain.stopped_plugin``: the node's evidence line names the plugin's state too), a request summed
over containers (``causes.gpu_causes``); otherwise, when free GPUs add up across the nodes but no single one
has enough, fragmentation (R9.2), else a shortage; a request above every node's allocatable, a resource no
node advertises or one another scheduler resolves, each their own advice."""

from __future__ import annotations

import difflib
from bisect import bisect_left
from functools import partial
from itertools import repeat

import numpy as np

from kubegpu.devices.sharing import MIG_RESOURCE_PREFIX, SHARED_SUFFIX
from kubegpu.explain import device_plugin
from kubegpu.explain.causes.base import Advice, Context, Hooks, nothing_of_the_pod
from kubegpu.explain.causes.gpu_causes import (
    dark_checks,
    gpu_causes,
    mig_only_among,
    offer_list,
    offered_gpus,
    part_unhealthy,
    stopped_checks,
    stopped_reads,
)
from kubegpu.explain.explanation import NODE_HAS
from kubegpu.explain.findings import MIG_LAYOUT_LABELS, has_gpu_labels, mig_gap
from kubegpu.explain.schedulers import is_scheduler_resource
from kubegpu.explain.shared_evidence import store_for
from kubegpu.explain.stopped_plugin import PLUGIN_FIRST, STOPPED, plugin_why
from kubegpu.model.names import (
    GPU_REPLICAS_LABEL,
    GPU_SHARING_LABEL,
    HAMI_RESOURCES,
    MIG_CONFIG_STATE_LABEL,
    NVIDIA_PREFIX,
)
from kubegpu.model.objects import Node, Pod
from kubegpu.model.quantity import format_milli
from kubegpu.model.resources import NVIDIA_GPU, is_gpu, other_vendor_gpu
from kubegpu.scheduler.reasons import Insufficient, Reason, TooManyPods

FRAGMENTATION_FIX = (
    " Free devices on one node (wait for or move single-GPU pods), use a pool kept for multi-GPU jobs, "
    "or split the job into several pods under a job framework."
)
# where the nodes the pod may use have fewer free devices in all than it asks: taken, not scattered
SHORTAGE_FIX = (
    " Wait for GPU pods there to finish, let the pod preempt lower-priority ones (a PriorityClass above "
    "theirs), or add GPU nodes it may use (the pool's size or its autoscaler's limit)."
)


def too_many_pods_evidence(ctx: Context, reason: TooManyPods, idx: int) -> list[str]:
    cluster = ctx.engine.cluster
    view = cluster.view(idx)
    return [f"pods: {view.pod_count} running of {int(cluster.max_pods[idx])} allowed"]


def too_many_pods_advice(ctx: Context, reason: TooManyPods, nodes: list[str]) -> Advice:
    return Advice(
        "The node is at its pod limit (status.allocatable.pods).", "", [ctx.cmd(f"describe node {nodes[0]}")]
    )


def insufficient_evidence(ctx: Context, reason: Insufficient, idx: int) -> list[str]:
    view = ctx.engine.cluster.view(idx)
    r = reason.resource
    alloc, used = view.allocatable(r), view.requested(r)
    held = _resize_holds(ctx, view.node.name, r)
    offers = _offers(ctx, idx) if alloc == 0 else None
    # a node no device plugin serves now: its line names the node's plugin (``stopped_plugin``)
    stopped = view.node.name if alloc == 0 and view.node.name in _stopped(ctx, r) else ""
    return list(_lines_once(ctx, reason, view.node, alloc, used, offers, held, stopped))


def _lines_once(
    ctx: Context,
    reason: Insufficient,
    node: Node,
    alloc: int,
    used: int,
    offers: tuple[bool, tuple[tuple[str, int], ...]] | None,
    held: tuple[str, ...] = (),
    stopped: str = "",
) -> list[str]:
    """``_insufficient_lines``, made once per pod for what it reads: the reason, the node's allocatable and
    requested, what a node without the resource offers (``_offers``), the pods a resize holds, the node when no
    device plugin serves it now (``_stopped``). Nodes alike share the list (never changed)."""
    key = (Insufficient, reason, alloc, used, offers, held, stopped)
    return ctx.once(key, partial(_insufficient_lines, ctx, reason, node, alloc, used, held, stopped))


def _stopped(ctx: Context, resource: str) -> dict[str, device_plugin.NodePlugins]:
    """The nodes no device plugin serves now that keep ``resource`` in capacity (``gpu_causes.stopped_checks``),
    once per engine (asked per node short of it); none traced when no node has ``resource`` in capacity above
    allocatable."""
    if not is_gpu(resource) or not part_unhealthy(ctx, resource):
        return {}
    return store_for(ctx.engine).fact(
        (_stopped, resource),
        lambda: {n: c for n, c in stopped_checks(ctx).items() if resource in c.advertised},
    )


def _resize_holds(ctx: Context, node: str, resource: str) -> tuple[str, ...]:
    """The placed pods on ``node`` that count more ``resource`` than their spec asks because an in-place
    resize is pending or under way (``Pod.status_requests``): the scheduler counts the larger of spec and
    what runs or is allocated until the kubelet applies it (kubernetes/kubernetes#135107)."""
    return tuple(line for r, line in _resize_map(ctx).get(node, ()) if r == resource)


def _resize_map(ctx: Context) -> dict[str, list[tuple[str, str]]]:
    """``_resizes`` of the snapshot's pods, once per engine."""
    return store_for(ctx.engine).fact((_resize_holds,), lambda: _resizes(ctx.engine.snapshot.pods))


def _resizes(pods: list[Pod]) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for p in pods:
        if not p.status_requests or not p.node_name or p.is_terminal:
            continue
        for c in (*p.init_containers, *p.containers):
            for r, counted in p.status_requests.get(c.name, {}).items():
                spec = c.requests.get(r, 0)
                if counted > spec:
                    shown = f"{p.key} ({c.name}: {format_milli(r, counted)}, spec {format_milli(r, spec)})"
                    out.setdefault(p.node_name, []).append((r, shown))
    return out


def _offers(ctx: Context, idx: int) -> tuple[bool, tuple[tuple[str, int], ...]]:
    """What a node without the resource adds to its line: whether its labels say GPUs, and the GPU
    resources it offers; kept per node for the engine (asked for every pod short of a resource no node has)."""
    kept: dict[int, tuple[bool, tuple[tuple[str, int], ...]]] = store_for(ctx.engine).fact((_offers,), dict)
    found = kept.get(idx)
    if found is None:
        node = ctx.engine.cluster.nodes[idx]
        found = kept[idx] = (has_gpu_labels(node), tuple(sorted(offered_gpus(node).items())))
    return found


def insufficient_evidence_many(ctx: Context, reason: Insufficient, idxs: list[int]) -> list[list[str]]:
    """``insufficient_evidence`` on each node, the numbers read as two columns (no view per node): the nodes
    of one (allocatable, requested) pair share one list of lines (never changed), made once; a node with no
    allocatable of the resource or with a resize held is read on its own (its line names more of it)."""
    cluster = ctx.engine.cluster
    col = cluster.col.get(reason.resource)
    if col is None:  # no node has the resource: each line names the node's labels
        return [insufficient_evidence(ctx, reason, idx) for idx in idxs]
    rows = np.asarray(idxs, dtype=np.intp)
    alloc, used = cluster.allocatable[rows, col], cluster.requested[rows, col]
    plain = alloc > 0
    resized = _resize_map(ctx)
    if resized:  # (rare: an in-place resize pending or under way somewhere)
        plain &= np.array([cluster.nodes[i].name not in resized for i in idxs], dtype=np.bool_)
    out: list[list[str]] = [[] for _ in idxs]
    # nodes without the resource: their line reads what their labels offer (``_offers``, kept per node), so
    # those alike share one list, made once (a fleet of many GPU kinds has thousands per Pending pod)
    bare: dict[tuple[int, tuple[bool, tuple[tuple[str, int], ...]]], list[str]] = {}
    stopped = _stopped(ctx, reason.resource)  # each of these is read on its own: its line names its plugin
    for j in (~plain).nonzero()[0].tolist():
        idx = idxs[j]
        node = cluster.nodes[idx]
        if alloc[j] or (resized and node.name in resized) or node.name in stopped:
            out[j] = insufficient_evidence(ctx, reason, idx)
            continue
        u, offers = int(used[j]), _offers(ctx, idx)
        lines = bare.get((u, offers))
        if lines is None:
            lines = bare[(u, offers)] = _lines_once(ctx, reason, node, 0, u, offers)
        out[j] = lines
    at = plain.nonzero()[0]
    if at.size:
        pairs = np.stack([alloc[at], used[at]], axis=1)
        _, first, inverse = np.unique(pairs, axis=0, return_index=True, return_inverse=True)
        made = []
        for f in first.tolist():
            a, u = int(alloc[at[f]]), int(used[at[f]])
            node = cluster.nodes[idxs[at[f]]]  # (read only where allocatable is 0: never here)
            made.append(_lines_once(ctx, reason, node, a, u, None))
        for j, g in zip(at.tolist(), inverse.ravel().tolist(), strict=True):
            out[j] = made[g]
    return out


def _insufficient_lines(
    ctx: Context,
    reason: Insufficient,
    node: Node,
    alloc: int,
    used: int,
    held: tuple[str, ...] = (),
    stopped: str = "",
) -> list[str]:
    r = reason.resource
    line = (
        f"{r}: pod requests {format_milli(r, reason.requested)}, {NODE_HAS}{format_milli(r, max(alloc - used, 0))} free "
        f"(allocatable {format_milli(r, alloc)}, already requested {format_milli(r, used)})"
    )
    if held:
        line += (
            f"; counted at the size that runs while an in-place resize is not yet applied: {', '.join(held)}"
        )
    if reason.requested > alloc:
        line += " — more than the node's whole allocatable: preemption cannot help"
    if stopped:  # the node keeps the devices in capacity: registered once, not served now
        chain = _stopped(ctx, r)[stopped]
        return [
            f"{line}; capacity {format_milli(r, chain.advertised[r])}, none allocatable: {STOPPED}",
            f"{plugin_why([chain])} {PLUGIN_FIRST}",
        ]
    if alloc == 0 and r.startswith(NVIDIA_PREFIX) and has_gpu_labels(node):
        offered = offered_gpus(node)
        if r.startswith(MIG_RESOURCE_PREFIX) and offered:
            line += (
                f"; the node offers {offer_list(offered)} (a different MIG layout: see `kubegpu plan mig`)"
            )
        elif not offered:
            line += "; the node's labels say it has GPUs, so its device plugin has not registered them"
    return [line]


def _scheduler_resource_advice(ctx: Context, resource: str) -> Advice:
    """HAMi's / Volcano's own resource reached a scheduler that does not know it."""
    owner = (
        "HAMi's hami-scheduler"
        if resource in HAMI_RESOURCES
        else "Volcano's scheduler (schedulerName volcano)"
    )
    return Advice(
        f"{resource} is not a node resource: only {owner} resolves it, from the devices its device plugin reports. "
        f"This pod names schedulerName {ctx.pod.scheduler_name}, which treats it as an extended resource no node "
        "advertises. Give the pod the right schedulerName (HAMi's webhook does this for GPU pods when it runs).",
        "Renaming the resource to one a node advertises would drop the memory/core limit the pod asked for.",
        [
            ctx.cmd(f"get pod {ctx.pod.name} -o jsonpath='{{.spec.schedulerName}}'"),
            ctx.cmd("get mutatingwebhookconfigurations"),
        ],
    )


PLUGIN_RESOURCE_PITFALL = (
    "The resource name is right: a device plugin's resource exists only on nodes where its pod runs and "
    "registered; fixing the pod template would not help."
)


def _no_plugin_advice(ctx: Context, resource: str) -> Advice:
    """No node advertises a device plugin's resource: the pod's spelling is right, the plugin is not
    registering it. The device plugin chain of each GPU node says why."""
    checks = dark_checks(ctx)
    if checks:
        why = device_plugin.dark_summary(checks)
        fix = (
            f"No node advertises {resource}: the GPU nodes' device plugin has not registered it with kubelet, so no "
            f"change to this pod helps. {why}"
        )
        commands = list(checks[0].commands)
    else:
        fix = (
            f"No node advertises {resource}, and no node in the snapshot looks like a GPU node (no GFD, provider or "
            "autoscaler GPU label, no nvidia.com/gpu taint): add GPU nodes, or check that the node pool scaled up."
        )
        commands = [ctx.cmd("get nodes -L nvidia.com/gpu.present,node.kubernetes.io/instance-type")]
    return Advice(fix, PLUGIN_RESOURCE_PITFALL, commands)


def _other_vendor_advice(ctx: Context, resource: str, plugin: str) -> Advice:
    """No node advertises another vendor's GPU resource (``resources.other_vendor_gpu``): its name is right;
    kubegpu does not trace that vendor's plugin (the pod's ``unverified`` line says so), so it names the plugin
    and the read-only commands, not a misspelling."""
    return Advice(
        f"No node advertises {resource}: {plugin} registers it on the nodes where its pod runs. kubegpu models "
        "NVIDIA GPUs and does not trace that plugin: check that it runs on the nodes with these GPUs.",
        PLUGIN_RESOURCE_PITFALL,
        [
            ctx.cmd("get nodes -o custom-columns=NAME:.metadata.name,CAPACITY:.status.capacity"),
            "kubectl -n kube-system get daemonsets -A -o wide",
        ],
    )


def _renamed_advice(ctx: Context, resource: str, advertised: list[str]) -> Advice | None:
    """No node advertises ``resource``, but nodes advertise its shared twin: the NVIDIA device plugin
    shares GPUs there (time-slicing or MPS) with ``renameByDefault: true``, which registers each shared
    resource as ``<name>.shared`` (``api/config/v1`` of NVIDIA/k8s-device-plugin), so a pod asking for the
    plain name fits nowhere; or the pod asks for the ``.shared`` name where the plugin does not rename.
    None when neither is the case."""
    base = resource.removesuffix(SHARED_SUFFIX)
    other = base if base != resource else resource + SHARED_SUFFIX
    if other not in advertised or not device_plugin.registered_by_plugin(base):
        return None
    count = sum(1 for n in ctx.engine.snapshot.nodes if n.capacity.get(other, 0))
    nodes = f"{count} node(s) advertise {other}"
    labels = ctx.cmd(f"get nodes -L {GPU_SHARING_LABEL},{GPU_REPLICAS_LABEL}")
    if other == base:  # the pod asks for the renamed name, the nodes offer the plain one
        return Advice(
            f"No node advertises {resource}; {nodes}: their device plugin does not rename shared GPUs "
            f"(renameByDefault is false, or they are not shared). Request {base} instead, or set "
            f"sharing.timeSlicing/mps renameByDefault: true in the plugin config of the nodes meant to share.",
            f"{resource} exists only where the plugin's sharing config renames {base}.",
            [labels],
        )
    return Advice(
        f"No node advertises {resource}; {nodes}: their NVIDIA device plugin shares GPUs (time-slicing or MPS) "
        f"with renameByDefault: true, which registers the shared replicas as {other}. Request {other} "
        f"instead (each is one shared replica of a GPU, not a whole GPU), or set renameByDefault: false in the "
        "plugin config if pods must keep asking for the plain name.",
        f"A shared replica is not a dedicated GPU: pods on one GPU share its memory and compute. Under "
        f"renameByDefault the name says so, and {resource} then exists only on nodes that do not share.",
        [labels, ctx.cmd(f"get pod {ctx.pod.name} -o jsonpath='{{.spec.containers[*].resources}}'")],
    )


def _advertised(ctx: Context) -> list[str]:
    """The resources some node lists above 0 in its capacity (a resource every node lists at 0, a plugin
    that registered no device, is advertised nowhere): once per engine."""
    return store_for(ctx.engine).fact(
        (_advertised,),
        lambda: sorted({r for n in ctx.engine.snapshot.nodes for r, v in n.capacity.items() if v}),
    )


def _free(ctx: Context, resource: str) -> tuple[dict[str, int], int]:
    """``Engine.free`` and its sum over every node, kept while no node changes: asked for every Pending pod
    short of a GPU, over every node."""

    def make() -> tuple[dict[str, int], int]:
        free = ctx.engine.free(resource)
        return free, sum(free.values())

    return store_for(ctx.engine).current((_free, resource), make)


# groups of nodes whose free GPU sums are kept per resource (while no node changes): pods short of the same
# GPUs on the same nodes share them; bounded, each key names thousands of nodes on a large cluster
_GROUPS_KEPT = 64


def _group_free(ctx: Context, resource: str, nodes: list[str]) -> tuple[int, int, int]:
    """Free ``resource`` on ``nodes`` in all, on the freest one, and on the nodes outside the group: read
    for every Pending pod short of it, over thousands of nodes, and the same for the pods that differ
    only in what does not change the group (their CPU or memory, say)."""
    kept: dict[tuple[str, ...], tuple[int, int, int]] = store_for(ctx.engine).current(
        (_group_free, resource), dict
    )
    key = tuple(nodes)
    found = kept.get(key)
    if found is None:
        free, everywhere = _free(ctx, resource)
        here = [free[n] for n in nodes]
        total = sum(here)
        allowed = set(nodes)  # (a node is named once per group: then ``total`` is what the allowed hold)
        elsewhere = everywhere - (total if len(allowed) == len(nodes) else sum(free[n] for n in allowed))
        if len(kept) >= _GROUPS_KEPT:
            kept.clear()
        found = kept[key] = (total, max(here, default=0), elsewhere)
    return found


def _gpu_short_too(ctx: Context, nodes: list[str]) -> str:
    """A GPU resource the pod requests that every one of ``nodes`` has less of free than it asks ("" if none)."""
    for r, need in sorted(ctx.pod.requests.items()):
        if need and is_gpu(r):
            free = _free(ctx, r)[0]
            if all(free.get(n, 0) < need for n in nodes):
                return r
    return ""


def _allocatable(ctx: Context, resource: str) -> dict[str, int]:
    """Node name → allocatable ``resource``: once per engine (allocatable does not move with the pods)."""
    return store_for(ctx.engine).fact(
        (_allocatable, resource),
        lambda: {n.name: n.allocatable.get(resource, 0) for n in ctx.engine.snapshot.nodes},
    )


def _too_small_advice(ctx: Context, resource: str, need: int, nodes: list[str]) -> Advice | None:
    """Every node of the group has less ``resource`` allocatable than the pod asks: no pod finishing and no
    preemption frees enough there (NodeResourcesFit compares the request with allocatable less requested).
    Says so, and whether nodes refused for other reasons are big enough; None when some node of the group
    is big enough (then it is a matter of what is free)."""
    alloc = _allocatable(ctx, resource)
    biggest = max(map(alloc.get, nodes, repeat(0)), default=0)  # (C-level: thousands of nodes per group)
    if biggest >= need:
        return None
    # the nodes with that many: none of the group's (its biggest has less), so a count over the cluster's
    # sorted amounts, not a walk over every node per pod
    ordered = store_for(ctx.engine).fact((_too_small_advice, resource), lambda: sorted(alloc.values()))
    big = len(ordered) - bisect_left(ordered, need)
    bigger = (
        f" {big} other node(s) have that many, refused for other reasons (see them)."
        if big
        else " No node in the cluster has that many."
    )
    amount = format_milli(resource, need)
    if not biggest:
        fix = (
            f"None of these {len(nodes)} node(s) has any {resource} (allocatable 0): they are not nodes this pod can "
            f"run on, whatever is freed.{bigger}"
        )
    else:
        fix = (
            f"The pod needs {amount} {resource} on ONE node, and none of these {len(nodes)} node(s) has that many at "
            f"all: the largest has {format_milli(resource, biggest)} allocatable, so no pod finishing and no "
            f"preemption frees enough.{bigger} Ask for at most {format_milli(resource, biggest)} per pod (split the "
            f"job over several pods under a job framework), or add nodes with at least {amount} (a larger instance "
            "type or node pool)."
        )
    return Advice(
        fix,
        "A pod's devices come from one node: devices of different nodes never add up for it.",
        [
            ctx.cmd(
                f"get nodes -o custom-columns='NAME:.metadata.name,ALLOCATABLE:.status.allocatable.{_escaped(resource)}'"
            )
        ],
    )


def _escaped(resource: str) -> str:
    """``resource`` as a kubectl custom-columns / jsonpath key (its dots escaped)."""
    return resource.replace(".", "\\.")


def insufficient_advice(ctx: Context, reason: Insufficient, nodes: list[str]) -> Advice:
    resource = reason.resource
    first = nodes[0]
    advertised = _advertised(ctx)
    # a whole-GPU request where only MIG slices are on offer is the MIG cause below, not a typo
    partitioned = resource == NVIDIA_GPU and mig_only_among(ctx, nodes)
    if is_scheduler_resource(resource):
        return _scheduler_resource_advice(ctx, resource)
    offered = [r for r in advertised if r.startswith(MIG_RESOURCE_PREFIX)]
    gap = mig_gap([resource], offered) if resource not in advertised else None
    if gap:
        return Advice(  # the plugin registers MIG profiles fine: none of the GPUs is split into this one
            gap,
            "A GPU's MIG layout changes as a whole: the GPU Operator's MIG manager deletes the instances on it, "
            "so the pods using them must leave first.",
            [ctx.cmd(f"get nodes -L {MIG_LAYOUT_LABELS},{MIG_CONFIG_STATE_LABEL}")],
        )
    renamed = _renamed_advice(ctx, resource, advertised) if resource not in advertised else None
    if renamed:
        return renamed
    if resource not in advertised and not partitioned and device_plugin.registered_by_plugin(resource):
        return _no_plugin_advice(ctx, resource)
    if resource not in advertised and not partitioned and (plugin := other_vendor_gpu(resource)):
        return _other_vendor_advice(ctx, resource, plugin)
    if resource not in advertised and not partitioned:
        close = difflib.get_close_matches(resource, advertised, n=1)
        hint = f" Did you mean {close[0]}?" if close else ""
        return Advice(
            f"No node advertises {resource} in status.capacity: the name must match exactly.{hint} "
            "Fix the pod template, not the nodes.",
            "A resource name no node registers can never be satisfied, whatever the cluster's size.",
            [
                ctx.cmd("get nodes -o custom-columns=NAME:.metadata.name,CAPACITY:.status.capacity"),
                ctx.cmd(f"get pod {ctx.pod.name} -o jsonpath='{{.spec.containers[*].resources}}'"),
            ],
        )
    if not is_gpu(resource):
        short = _gpu_short_too(ctx, nodes)
        if short:  # lowering CPU or memory alone frees no node: the GPU is the binding constraint there
            return Advice(
                f"These nodes are also short of {short} for the pod: lowering its {resource} request alone would "
                f"not make any of them fit. See the {short} reason first.",
                "Requests are reserved whether used or not; oversized CPU/memory requests on GPU pods strand GPUs.",
                [ctx.cmd(f"describe node {first}")],
            )
        return Advice(
            f"Lower the pod's {resource} request to what profiling shows it uses, or free {resource} on a node.",
            "Requests are reserved whether used or not; oversized CPU/memory requests on GPU pods strand GPUs.",
            [ctx.cmd(f"describe node {first}")],
        )
    need = reason.requested
    free = _free(ctx, resource)[0]
    total, largest, elsewhere = _group_free(ctx, resource, nodes)
    causes = gpu_causes(ctx, reason, nodes, free)
    if not causes:
        too_small = _too_small_advice(ctx, resource, need, nodes)
        if too_small:
            return too_small
    scattered = total >= need > largest
    if scattered:
        frag = (
            f" Together these nodes have {format_milli(resource, total)} free, but no single one has "
            f"{format_milli(resource, need)}: the free devices are scattered."
        )
    else:  # (a cause found below says why; else it is plain shortage)
        frag = (
            f" Together these nodes have {format_milli(resource, total)} free"
            if total
            else f" None of these nodes has any {resource} free"
        ) + ("." if causes else ": a shortage, not fragmentation.")
    if elsewhere:
        frag += (
            f" Another {format_milli(resource, elsewhere)} {resource} is free on nodes refused for other reasons "
            "(see them)."
        )
    return Advice(
        f"The pod needs {format_milli(resource, need)} {resource} on ONE node; among the nodes it may use, the most "
        f"free on any one is {format_milli(resource, largest)}.{frag}"
        + ("".join(f" {c}" for c in causes) if causes else FRAGMENTATION_FIX if scattered else SHORTAGE_FIX),
        "Free GPUs on different nodes do not add up for one pod. `describe node` shows requests, "
        "not utilisation: an idle GPU that is requested is taken.",
        [
            *(stopped_reads(ctx, reason, nodes, free) if causes else ()),  # a plugin to fix: its log first
            ctx.cmd(f"describe node {first}"),
            ctx.cmd(f"get pods -A -o wide --field-selector spec.nodeName={first}"),
        ],
    )


HOOKS: dict[type[Reason], Hooks] = {
    # the lines read the reason (resource, amount requested) and the node only
    TooManyPods: Hooks(too_many_pods_evidence, too_many_pods_advice, pod_part=nothing_of_the_pod),
    Insufficient: Hooks(
        insufficient_evidence, insufficient_advice, insufficient_evidence_many, pod_part=nothing_of_the_pod
    ),
}
