"""Why a GPU request is short beyond what is taken, for the ``Insufficient`` advice (``causes.resources``):
each cause the data shows, in a sentence with its own fix, because each has a different one.

- the nodes are MIG-partitioned and offer slices, not the whole GPU the pod asks for;
- GPUs are unhealthy (capacity above allocatable), and the pod would fit with them healthy;
- GPU nodes that keep their GPUs in capacity with none allocatable because no device plugin serves them now
  (``explain.stopped_plugin``, the node finding's reading): the plugin's state, not the devices' health;
- GPU nodes by their labels whose device plugin registered none: their GPUs are missing, not taken;
- the request is the sum of several containers' requests, all of which must land on one node.

May import what ``causes.resources`` may; owns no scheduling rule.
"""

from __future__ import annotations

from kubegpu.devices.sharing import MIG_RESOURCE_PREFIX
from kubegpu.explain import device_plugin
from kubegpu.explain.causes.base import Context
from kubegpu.explain.shared_evidence import store_for
from kubegpu.explain.stopped_plugin import PLUGIN_FIRST, STOPPED_HOW, plugin_why, stopped_nodes
from kubegpu.explain.wording import SHOWN, some_of
from kubegpu.model.gpu_facts import labelled_gpu_count
from kubegpu.model.names import GPU_COUNT_LABEL, NVIDIA_PREFIX
from kubegpu.model.objects import Node, Pod
from kubegpu.model.quantity import format_milli
from kubegpu.model.resources import NVIDIA_GPU, is_gpu
from kubegpu.scheduler.reasons import Insufficient


def offered_gpus(node: Node) -> dict[str, int]:
    """The GPU resources the node's device plugin advertises (allocatable, non-zero)."""
    return {k: v for k, v in node.allocatable.items() if is_gpu(k) and v}


def offer_list(offered: dict[str, int]) -> str:
    return ", ".join(
        f"{k.removeprefix(NVIDIA_PREFIX)} ×{format_milli(k, v)}" for k, v in sorted(offered.items())
    )


def container_shares(pod: Pod, resource: str) -> list[tuple[str, int]]:
    """(container, request) for each app container asking for ``resource``, when they are what the pod's
    request sums (no init container asks for more, no overhead of it)."""
    shares = [(c.name, c.requests[resource]) for c in pod.containers if c.requests.get(resource, 0)]
    return shares if sum(v for _, v in shares) == pod.requests.get(resource, 0) else []


def mig_only(nodes: list[Node]) -> dict[str, dict[str, int]]:
    """The nodes whose GPUs are all MIG-partitioned, with the MIG resources they advertise."""
    return {
        n.name: o
        for n in nodes
        if (o := offered_gpus(n)) and all(k.startswith(MIG_RESOURCE_PREFIX) for k in o)
    }


def mig_only_among(ctx: Context, nodes: list[str]) -> dict[str, dict[str, int]]:
    """``mig_only`` of the named nodes; at once empty when no node of the cluster has a MIG column."""
    cluster = ctx.engine.cluster
    if not any(r.startswith(MIG_RESOURCE_PREFIX) for r in cluster.resources):
        return {}  # no node advertises a MIG resource: none offers only MIG slices
    snapshot = ctx.engine.snapshot
    return mig_only([n for n in (snapshot.node(name) for name in nodes) if n is not None])


def gpu_causes(ctx: Context, reason: Insufficient, nodes: list[str], free: dict[str, int]) -> list[str]:
    """One sentence per cause the data shows, each with its own fix; empty when none but fragmentation."""
    r, need = reason.resource, reason.requested
    out = []
    if r == NVIDIA_GPU:
        out += _mig_only_sentences(r, mig_only_among(ctx, nodes))
    unhealthy, stopped = _fits_healthy(ctx, r, need, nodes, free)
    out += _unhealthy_sentences(r, unhealthy)
    out += _stopped_sentences(r, stopped)
    if r == NVIDIA_GPU:
        out += _dark_sentences(ctx, r, need, nodes)
    shares = container_shares(ctx.pod, r)
    if len(shares) > 1:
        parts = " + ".join(f"{c} {format_milli(r, v)}" for c, v in shares)
        out.append(
            f"The {format_milli(r, need)} is the sum of its containers' requests ({parts}): a pod's containers "
            "always share one node and each gets its own devices. Give each container only the GPUs it uses, "
            "or run the containers as separate pods if they need not share a node."
        )
    return out


def _fits_healthy(
    ctx: Context, r: str, need: int, nodes: list[str], free: dict[str, int]
) -> tuple[list[tuple[str, tuple[int, int]]], list[tuple[device_plugin.NodePlugins, int]]]:
    """The ``nodes`` with ``r`` unhealthy where the pod would fit were they all healthy: (name, (capacity,
    allocatable)) of those whose plugin reports them so, and (chain, capacity) of those no device plugin serves
    now (kubelet counts a stopped plugin's devices unhealthy: the plugin is the cause there)."""
    unhealthy = part_unhealthy(ctx, r)
    fits = [  # (most clusters: no node with a device unhealthy)
        (name, unhealthy[name])
        for name in (nodes if unhealthy else ())
        if name in unhealthy and free.get(name, 0) + (unhealthy[name][0] - unhealthy[name][1]) >= need
    ]
    stopped = stopped_checks(ctx) if fits else {}
    return [f for f in fits if f[0] not in stopped], [(stopped[n], v[0]) for n, v in fits if n in stopped]


def stopped_checks(ctx: Context) -> dict[str, device_plugin.NodePlugins]:
    """The GPU nodes no device plugin serves now, by name (``stopped_plugin.stopped_nodes``): once per engine."""
    return store_for(ctx.engine).fact((stopped_checks,), lambda: stopped_nodes(ctx.engine.snapshot))


def stopped_reads(ctx: Context, reason: Insufficient, nodes: list[str], free: dict[str, int]) -> list[str]:
    """The first read-only command of the first node ``gpu_causes`` names as one no device plugin serves now
    (its failing plugin container's previous log, when there is one); empty when it names none."""
    stopped = _fits_healthy(ctx, reason.resource, reason.requested, nodes, free)[1]
    return stopped[0][0].commands[:1] if stopped else []


def _stopped_sentences(r: str, nodes: list[tuple[device_plugin.NodePlugins, int]]) -> list[str]:
    """Nodes (chain, capacity) that keep ``r`` in capacity with none allocatable because no device plugin
    serves them now (``stopped_plugin``), where the pod would fit once their devices are registered again:
    one sentence for them all, with the node finding's account of kubelet and the plugin's state."""
    if not nodes:
        return []
    if len(nodes) == 1:
        chain, cap = nodes[0]
        which = f"{chain.node} keeps its {format_milli(r, cap)} {r} in capacity with none allocatable"
        fits = "there"
    else:
        named = [f"{c.node} {format_milli(r, cap)}" for c, cap in nodes]
        which = (
            f"{len(nodes)} of these nodes keep their {r} in capacity with none allocatable ({some_of(named)})"
        )
        fits = "on each"
    return [
        f"{which}, and the pod would fit {fits} once the devices are registered again: {STOPPED_HOW} "
        f"{plugin_why([c for c, _ in nodes])} {PLUGIN_FIRST}"
    ]


def _mig_only_sentences(r: str, mig: dict[str, dict[str, int]]) -> list[str]:
    """One sentence per MIG-only node while they are few; beyond ``SHOWN`` nodes one sentence for them all,
    a few named and each layout on offer counted: a fleet with hundreds of MIG nodes keeps one line."""
    fix = (
        f"If a slice is enough, request one of those MIG resources (nvidia.com/mig-<profile>) instead of {r}; "
        "otherwise change the {} MIG layout (`kubegpu plan mig`)."
    )
    if len(mig) <= SHOWN:
        one = fix.format("node's")
        return [
            f"{name} is MIG-partitioned: it offers {offer_list(o)}, not whole GPUs. {one}"
            for name, o in mig.items()
        ]
    layouts: dict[str, int] = {}
    for offered in mig.values():
        layout = offer_list(offered)
        layouts[layout] = layouts.get(layout, 0) + 1
    ranked = sorted(layouts, key=lambda lay: -layouts[lay])  # (stable: ties in node order)
    offers = "; ".join(f"{layouts[lay]} offer {lay}" for lay in ranked[:SHOWN])
    offers += f"; {len(ranked) - SHOWN} other layout(s)" if len(ranked) > SHOWN else ""
    return [
        f"{len(mig)} of these nodes are MIG-partitioned ({some_of(list(mig))}), not whole GPUs: {offers}. "
        + fix.format("nodes'")
    ]


def _unhealthy_sentences(r: str, nodes: list[tuple[str, tuple[int, int]]]) -> list[str]:
    """Nodes (name, (capacity, allocatable)) with devices unhealthy where the pod would fit were they all
    healthy: one sentence each while they are few, beyond ``SHOWN`` one for them all, a few named."""
    check = (
        "Check the GPUs (XID errors in the kernel log, `nvidia-smi -q`, the device plugin's log) and repair or "
        "replace them before adding capacity."
    )
    if len(nodes) <= SHOWN:
        return [
            f"{name} has {format_milli(r, cap - alloc)} of its {format_milli(r, cap)} {r} unhealthy (capacity "
            f"{format_milli(r, cap)}, allocatable {format_milli(r, alloc)}), and the pod would fit there with all "
            f"of them healthy. {check}"
            for name, (cap, alloc) in nodes
        ]
    named = [
        f"{name} {format_milli(r, cap - alloc)} of {format_milli(r, cap)}" for name, (cap, alloc) in nodes
    ]
    return [
        f"{len(nodes)} of these nodes have {r} unhealthy (capacity above allocatable: {some_of(named)}), and the "
        f"pod would fit on each with all of them healthy. {check}"
    ]


def dark_checks(ctx: Context) -> list[device_plugin.NodePlugins]:
    """The GPU nodes whose device plugin registered no GPU resource (``device_plugin.dark_nodes``): once per
    engine."""
    return store_for(ctx.engine).fact((dark_checks,), lambda: device_plugin.dark_nodes(ctx.engine.snapshot))


def _dark_sentences(ctx: Context, r: str, need: int, nodes: list[str]) -> list[str]:
    """The nodes of the group that are GPU nodes by their labels but advertise no GPU (their device plugin
    has not registered them with kubelet): their GPUs are not short, they are missing. By the
    ``nvidia.com/gpu.count`` label (GFD), how many could take the pod's GPUs once registered; a fleet whose
    DaemonSet misses a few hundred nodes reads as a shortage or fragmentation without this."""
    checks = dark_checks(ctx)
    if not checks:
        return []
    dark = store_for(ctx.engine).fact((_dark_sentences,), lambda: {c.node: c for c in checks})
    group = [dark[n] for n in filter(dark.__contains__, nodes)]
    if not group:
        return []
    snapshot = ctx.engine.snapshot
    counts = [labelled_gpu_count(n.labels) if (n := snapshot.node(c.node)) else None for c in group]
    fit = sum(1 for k in counts if k is not None and k * 1000 >= need)
    if fit:
        would = (
            f"{fit} of them {'has' if fit == 1 else 'have'} at least {format_milli(r, need)} by their {GPU_COUNT_LABEL} label: the pod "
            "would fit there once they are registered"
        )
    elif all(k is None for k in counts):
        would = f"their labels do not say how many GPUs they have ({GPU_COUNT_LABEL} absent)"
    else:
        would = f"none has {format_milli(r, need)} by its {GPU_COUNT_LABEL} label, so they would not take this pod"
    causes = list(dict.fromkeys(c.causes[0] if c.causes else "" for c in group))
    why = (
        f"; {causes[0]}"
        if len(causes) == 1 and causes[0]
        else f"; {len(causes)} causes"
        if len(causes) > 1
        else ""
    )
    return [
        f"{len(group)} of these nodes {'is a GPU node' if len(group) == 1 else 'are GPU nodes'} whose device "
        f"plugin registered no {r}, so they offer none "
        f"({some_of([c.node for c in group])}{why}), and {would}. Repair the device plugin there before adding "
        "capacity (`kubegpu inspect` follows each node's chain)."
    ]


def part_unhealthy(ctx: Context, resource: str) -> dict[str, tuple[int, int]]:
    """Node name → (capacity, allocatable) of ``resource`` where capacity is above allocatable (kubelet's
    device manager counts every device in capacity, healthy ones in allocatable): once per engine."""
    return store_for(ctx.engine).fact(
        (part_unhealthy, resource),
        lambda: {
            n.name: (n.capacity.get(resource, 0), n.allocatable.get(resource, 0))
            for n in ctx.engine.snapshot.nodes
            if n.capacity.get(resource, 0) > n.allocatable.get(resource, 0)
        },
    )
