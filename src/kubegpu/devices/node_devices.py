"""The devices behind a Node's GPU resources, as the scheduler and ``explain`` see them (R3.2, R6, R7.3, R9.3).

A Node object only carries counts (``nvidia.com/gpu: 8``). ``node_devices`` recovers the devices behind
them, from the best source available:

1. the annotation ``kubegpu.io/device-inventory`` on the Node: an NVML reading in the fixture format
   (what ``kubegpu node discover -o json`` writes, the node agent can publish it), with real UUIDs,
   NVLink/PCIe links and NUMA nodes — or ``nvidia-smi -q -x`` output (UUIDs and memory, no topology);
2. otherwise devices *synthesised* from ``status.capacity``/``allocatable`` and GFD labels
   (``nvidia.com/gpu.count``, ``.product``, ``.memory``, ``.replicas``, ``nvidia.com/mig.strategy``):
   stand-in UUIDs ``<node>-gpu<i>``, no links, unknown NUMA. Everything built this way says
   ``synthesized=True`` and outputs say so.

The device plugin configuration (the NVIDIA ``version: v1`` file) is given per node when known;
otherwise it is inferred from what GFD publishes (replicas, sharing strategy, MIG strategy, a renamed
``nvidia.com/gpu.shared`` resource). The advertised resources then come from
``sharing.plan_resources``, the same function the node agent uses to register them with kubelet.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubegpu.devices.inventory import GpuDevice, GpuUuid, Health, MigDevice, NodeInventory, parse_reading
from kubegpu.devices.sharing import (
    GO_MAX_INT,
    GPU_RESOURCE,
    MIG_RESOURCE_PREFIX,
    SHARED_SUFFIX,
    MigStrategy,
    PluginConfig,
    ReplicatedResource,
    ResourcePlan,
    SharingStrategy,
    plan_resources,
    replica_model_note,
)
from kubegpu.devices.smi_xml import parse_smi_xml
from kubegpu.devices.topology import Topology, topology_from_inventory
from kubegpu.errors import ConfigError, InputError, json_document
from kubegpu.model.names import GPU_COUNT_LABEL as COUNT_LABEL
from kubegpu.model.names import GPU_MEMORY_LABEL as MEMORY_LABEL
from kubegpu.model.names import GPU_PRODUCT_LABEL as PRODUCT_LABEL
from kubegpu.model.names import GPU_REPLICAS_LABEL as REPLICAS_LABEL
from kubegpu.model.names import GPU_SHARING_LABEL as SHARING_LABEL
from kubegpu.model.names import INVENTORY_ANNOTATION as INVENTORY_ANNOTATION
from kubegpu.model.names import MIG_STRATEGY_LABEL as MIG_STRATEGY_LABEL
from kubegpu.model.names import TOPOLOGY_POLICY_ANNOTATION as TOPOLOGY_POLICY_ANNOTATION
from kubegpu.model.objects import Node

TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
MIB = 1024 * 1024


@dataclass(frozen=True)
class NodeDevices:
    node: str
    plans: dict[str, ResourcePlan]  # advertised resource name → devices behind it
    topology: Topology
    synthesized: bool
    sharing: str  # none | time-slicing | mps | mig-single | mig-mixed
    topology_policy: str = "none"
    problems: tuple[str, ...] = ()
    memory_mib: int | None = None  # per physical GPU
    product: str = ""
    config: PluginConfig = field(default_factory=PluginConfig)

    @property
    def simple(self) -> bool:
        """True when device-level placement cannot differ from counting: whole GPUs, no NUMA policy."""
        return self.sharing == "none" and self.topology_policy in ("none", "best-effort")

    def numa_of(self, device_id: str) -> int | None:
        for plan in self.plans.values():
            if (d := plan.lookup(device_id)) is not None:
                return d.numa_node
        return None


MAX_NODE_GPUS = 1024  # stand-in devices are built one by one: a count beyond this is refused, never looped
# MIG stand-ins are built one by one too; replicas are not (ReplicatedDevices), so they are left out of this sum
MAX_STAND_INS = 1024 * 1024


def _label_count(node: Node, label: str, default: str, maximum: int) -> int:
    """A GFD count label (``nvidia.com/gpu.count``, ``nvidia.com/gpu.replicas``): ASCII digits, at most
    ``maximum``; anything else is an input error naming the label, never a guess or a long loop."""
    raw = node.labels.get(label) or default
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 19 or int(raw) > maximum:
        raise InputError(f"expected a count up to {maximum}, got {raw[:40]!r}", source=node.source,
                         obj=f"Node {node.name}", field=f"metadata.labels[{label}]")  # fmt: skip
    return int(raw)


def infer_config(node: Node) -> PluginConfig:
    """The device plugin config GFD's labels imply (flags GFD does not publish keep their defaults)."""
    # GFD writes the config's replicas as is (internal/lm/resource.go: fmt "%v" of a Go int), no upper bound
    replicas = _label_count(node, REPLICAS_LABEL, "1", GO_MAX_INT)
    renamed = GPU_RESOURCE + SHARED_SUFFIX in node.capacity
    mig = node.labels.get(MIG_STRATEGY_LABEL, "none")
    shared = (ReplicatedResource(GPU_RESOURCE, replicas),) if replicas > 1 else ()
    mps = node.labels.get(SHARING_LABEL) == SharingStrategy.MPS
    return PluginConfig(
        mig_strategy=MigStrategy(mig) if mig in ("none", "single", "mixed") else MigStrategy.NONE,
        rename_by_default=renamed and not mps,
        mps_rename_by_default=renamed and mps,
        time_slicing=() if mps else shared,
        mps=shared if mps else (),
    )


def node_devices(node: Node, config: PluginConfig | None = None) -> NodeDevices | None:
    """The device model of ``node``, or None for a node without GPU resources or GPU labels."""
    gpu_capacity = {r: v // 1000 for r, v in node.capacity.items() if r.startswith("nvidia.com/")}
    raw = node.annotations.get(INVENTORY_ANNOTATION)
    if not gpu_capacity and raw is None:
        return None
    cfg = config or infer_config(node)
    problems: list[str] = []
    if raw is not None:
        # the file, the Node and the field, as every input error (the parsers add the device and its field)
        where = f"{node.source}: Node {node.name}: metadata.annotations[{INVENTORY_ANNOTATION}]"
        # the NVML reading (JSON, bounded), or `nvidia-smi -q -x` output pasted as is
        inventory = (
            parse_smi_xml(raw, source=where)
            if raw.lstrip().startswith("<")
            else parse_reading(json_document(raw, where), source=where)
        )
        synthesized = False
    else:
        inventory = _synthesize(node, cfg, gpu_capacity)
        synthesized = True
    try:
        plans = {p.name: p for p in plan_resources(inventory, cfg)}
    except ConfigError as exc:
        problems.append(str(exc))
        plans = {}
    for name, plan in plans.items():
        cap = gpu_capacity.get(name)
        if cap is not None and cap != plan.advertised:
            problems.append(f"{name}: capacity {cap} but the device model advertises {plan.advertised}")
        if plan.modelled_replicas < plan.replicas:
            problems.append(f"{name}: {replica_model_note(plan.replicas, plan.advertised // plan.replicas)}")
    sharing = _sharing(node, cfg)
    if node.labels.get(SHARING_LABEL) not in (
        None,
        "none",
        sharing.split("-")[0] if sharing.startswith("mig") else sharing,
    ):
        problems.append(
            f"label {SHARING_LABEL}={node.labels[SHARING_LABEL]} disagrees with the resources ({sharing})"
        )
    modes = {m for m in (sharing,) if m != "none"}
    if cfg.shared_resources and any(p.startswith(MIG_RESOURCE_PREFIX) for p in plans):
        modes.add(str(cfg.sharing_strategy))
    if len(modes) > 1:
        problems.append(
            f"two sharing modes on one node ({', '.join(sorted(modes))}): one resource model per pool"
        )
    policy = node.annotations.get(TOPOLOGY_POLICY_ANNOTATION, "none")
    if policy not in TOPOLOGY_POLICIES:
        problems.append(f"unknown topology manager policy {policy!r}; treated as none")
        policy = "none"
    first = inventory.devices[0] if inventory.devices else None
    return NodeDevices(
        node=node.name,
        plans=plans,
        topology=topology_from_inventory(inventory),
        synthesized=synthesized,
        sharing=sharing,
        topology_policy=policy,
        problems=tuple(problems),
        memory_mib=first.memory_mib if first is not None else None,
        product=first.name if first is not None else node.labels.get(PRODUCT_LABEL, ""),
        config=cfg,
    )


def _sharing(node: Node, cfg: PluginConfig) -> str:
    if cfg.mig_strategy is MigStrategy.SINGLE:
        return "mig-single"
    if cfg.mig_strategy is MigStrategy.MIXED and any(
        r.startswith(MIG_RESOURCE_PREFIX) for r in node.capacity
    ):
        return "mig-mixed"
    return str(cfg.sharing_strategy)


def _synthesize(node: Node, cfg: PluginConfig, capacity: dict[str, int]) -> NodeInventory:
    """Stand-in devices that reproduce the node's advertised counts and unhealthy devices."""
    replicas = max((r.replicas for r in cfg.shared_resources), default=1)
    whole = capacity.get(GPU_RESOURCE, capacity.get(GPU_RESOURCE + SHARED_SUFFIX, 0))
    n_gpus = _label_count(node, COUNT_LABEL, str(whole // replicas), MAX_NODE_GPUS)
    mig_in_use = cfg.mig_strategy is MigStrategy.SINGLE or any(
        r.startswith(MIG_RESOURCE_PREFIX) for r in capacity
    )
    if whole and not mig_in_use and n_gpus * replicas != whole:
        # the plugin registered ``whole`` devices (what kubelet allocates from); GFD's count label is another
        # reading that can be stale (``explain.findings`` reports the disagreement). Under MIG the label
        # counts physical GPUs and capacity MIG devices or the non-MIG GPUs alone: both stand.
        n_gpus = -(-whole // replicas)
    shared = (GPU_RESOURCE, GPU_RESOURCE + SHARED_SUFFIX) if replicas > 1 else ()
    if n_gpus > MAX_NODE_GPUS or sum(n for r, n in capacity.items() if r not in shared) > MAX_STAND_INS:
        raise InputError(f"{max(n_gpus, sum(capacity.values()))} GPU devices: more than kubegpu models on one node "
                         f"({MAX_NODE_GPUS} GPUs)", source=node.source, obj=f"Node {node.name}",
                         field="status.capacity")  # fmt: skip
    mig = {r[len(MIG_RESOURCE_PREFIX) :]: n for r, n in capacity.items() if r.startswith(MIG_RESOURCE_PREFIX)}
    memory_mib = int(node.labels.get(MEMORY_LABEL, "0") or "0")

    # devices the plugin reports unhealthy drop out of allocatable; mark that many stand-ins unhealthy
    def unhealthy(resource: str) -> int:
        return max((node.capacity.get(resource, 0) - node.allocatable.get(resource, 0)) // 1000, 0)

    bad_whole = unhealthy(GPU_RESOURCE if GPU_RESOURCE in capacity else GPU_RESOURCE + SHARED_SUFFIX)
    bad_gpus = -(-bad_whole // replicas) if bad_whole else 0
    mig_devices: dict[int, list[MigDevice]] = {}
    k = 0
    for profile, count in sorted(mig.items()):
        bad = unhealthy(MIG_RESOURCE_PREFIX + profile)
        for j in range(count):
            gpu = k % max(n_gpus, 1)
            mig_devices.setdefault(gpu, []).append(MigDevice(
                index=len(mig_devices[gpu]), uuid=f"MIG-{node.name}-gpu{gpu}-{profile}-{j}", profile=profile,
                gi_id=0, ci_id=0, memory_total=0, health=Health.UNHEALTHY if j >= count - bad else Health.HEALTHY,
            ))  # fmt: skip
            k += 1
    devices = []
    for i in range(max(n_gpus, 1 if mig else 0)):
        devices.append(GpuDevice(
            index=i, uuid=GpuUuid(f"{node.name}-gpu{i}"), name=node.labels.get(PRODUCT_LABEL, ""),
            memory_total=memory_mib * MIB, memory_used=0, pci_bus_id="", arch=0, cuda_cc=(0, 0),
            mig_capable=bool(mig), mig_enabled=bool(mig_devices.get(i)), mig_pending=False, numa_node=None,
            mig_devices=tuple(mig_devices.get(i, ())),
            health=Health.UNHEALTHY if i >= n_gpus - bad_gpus else Health.HEALTHY,
        ))  # fmt: skip
    return NodeInventory(driver="", nvml="", cuda_driver=0, devices=tuple(devices), source=f"node {node.name}",
                         generated="synthesised from status.capacity and GFD labels")  # fmt: skip
