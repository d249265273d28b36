"""GPU nodes whose device plugin stopped serving them: GPU capacity kept, none of it allocatable.

kubelet's device manager marks every device of a resource unhealthy when its plugin's endpoint stops
(pkg/kubelet/cm/devicemanager manager.go markResourceUnhealthy) and GetCapacity counts unhealthy devices in
capacity, not in allocatable, until endpointStopGracePeriod (5 minutes, types.go) has passed; GetCapacity's
comment: "new pods requiring device plugin resources will not be scheduled till device plugin re-registers". A
plugin that crash-loops registers again at each start and stops again, so its node keeps capacity N with
allocatable 0. The one reading of such a node, from its device plugin chain (``device_plugin.check_node``): the
node's finding (``findings``), a Pending pod's evidence and advice on it (``causes.resources``,
``causes.gpu_causes``), and the operand findings that leave its plugin's pods to it (``findings_operands``).

That reading needs the snapshot to show the plugin down: a known plugin DaemonSet that selects the node without a
running pod there (``NodePlugins.plugin_down``). Where no known plugin DaemonSet selects the node
(``NodePlugins.unselected``), a plugin kubegpu does not recognise may serve it: the node's finding says only
what is known (``plugin_stopped``), and a Pending pod's reading stays that of the devices' health."""

from __future__ import annotations

from kubegpu.explain import device_plugin
from kubegpu.explain.wording import SHOWN
from kubegpu.model.objects import Node
from kubegpu.model.resources import is_gpu
from kubegpu.model.snapshot import ClusterSnapshot

STOPPED = "no device plugin serves them now"
_GRACE = "for 5 minutes (endpointStopGracePeriod)"  # how long kubelet keeps a stopped plugin's devices
STOPPED_HOW = (
    f"{STOPPED}. When a plugin's registration with kubelet ends, kubelet marks all its "
    f"devices unhealthy, so allocatable drops to 0 at once, and keeps them in capacity {_GRACE} before it drops "
    "the resource; a plugin that crash-loops registers again at each start and stops again."
)
PLUGIN_FIRST = "Fix the plugin first: this is not the devices' health (Xid, ECC)."
# once STOPPED_HOW's grace period has passed, GetCapacity lists the resource among the deleted ones and the node
# status setter writes its capacity 0 (manager.go): the one wording of it, for the pods that hold such a resource
CAPACITY_ZEROED = (
    "kubelet writes 0 five minutes (endpointStopGracePeriod) after the device plugin's registration ends"
)
_UNKNOWN = "unknown: see the device plugin pod's log on the node"
# what the snapshot cannot show: the plugin that registered the GPUs of a node no known plugin selects, one
# kubegpu does not recognise (another packaging, one run by hand as k8s-device-plugin's README shows, `docker
# run` or `./k8s-device-plugin`, a static pod), and whether it reports them unhealthy or has stopped
UNKNOWN_PLUGIN = (
    "Some plugin registered these GPUs, perhaps one kubegpu does not recognise (another packaging, one run by "
    "hand or as a static pod): either it reports every device unhealthy (Xid, ECC) or its registration ended "
    f"(kubelet then keeps the devices in capacity, none allocatable, {_GRACE}). Its log on the node says which; "
    "`nvidia-smi -q -d ECC,PAGE_RETIREMENT` on the host reads the devices' health."
)


def _none_allocatable(node: Node) -> bool:
    """The node has GPU capacity (a resource above 0) and none of those resources allocatable."""
    held = [r for r, v in node.capacity.items() if is_gpu(r) and v]
    return bool(held) and not any(node.allocatable.get(r, 0) for r in held)


def unregistered(snapshot: ClusterSnapshot, chain: device_plugin.NodePlugins) -> bool:
    """``chain``'s node keeps GPU capacity but has none of it allocatable, and no known device plugin runs there:
    the one meant to is down (``NodePlugins.plugin_down``), or none is meant to (``NodePlugins.unselected``). Its
    finding says which (``plugin_stopped``), with the chain's causes: the failing pods of the chain are not
    reported again as operands."""
    node = snapshot.node(chain.node)
    down = chain.plugin_down or chain.unselected
    return down and not chain.dark and node is not None and _none_allocatable(node)


def stopped_nodes(snapshot: ClusterSnapshot) -> dict[str, device_plugin.NodePlugins]:
    """Node name → chain of the ``unregistered`` nodes whose known plugin is down; only nodes with GPU capacity
    and none allocatable are traced (``device_plugin.check_nodes`` traces every GPU node), less those a GPU DRA
    driver serves."""
    served = device_plugin.dra_gpu_nodes(snapshot)
    out = {}
    for node in snapshot.nodes:
        if node.name in served or not _none_allocatable(node):
            continue
        chain = device_plugin.check_node(snapshot, node)
        # a node no known plugin is meant to serve may be served by one kubegpu does not recognise: not "stopped"
        if chain.plugin_down and unregistered(snapshot, chain):
            out[node.name] = chain
    return out


def plugin_why(chains: list[device_plugin.NodePlugins]) -> str:
    """Why the plugin does not run on the ``chains``' nodes: their causes, for the first ``SHOWN`` nodes."""
    causes = [x for c in chains[:SHOWN] for x in c.causes or [_UNKNOWN]]
    more = f"; {len(chains) - SHOWN} more node(s) (`kubegpu inspect`)" if len(chains) > SHOWN else ""
    return "Why the plugin does not run: " + "; ".join(causes) + more + "."


def plugin_stopped(chain: device_plugin.NodePlugins) -> str:
    """Why an ``unregistered`` node counts none of its GPUs allocatable: its device plugin, from the chain. When
    no known plugin is meant to run there (``unselected``), what the snapshot shows and no more: the GPUs were
    registered by some plugin, perhaps one kubegpu does not recognise, which may still run."""
    if chain.plugin_down:
        return f"{STOPPED_HOW} {plugin_why([chain])} {PLUGIN_FIRST}"
    return (
        f"no known device plugin is meant to run on {chain.node}: {'; '.join(chain.causes or [_UNKNOWN])}. "
        f"{UNKNOWN_PLUGIN}"
    )
