"""The in-tree plugin registry and kube-scheduler's default profile (1.30–1.37), as far as kubegpu models it.

Upstream's default ``multiPoint`` list, in order, with score weights: SchedulingGates, PrioritySort,
NodeUnschedulable, NodeName, TaintToleration (3), NodeAffinity (2), NodePorts, NodeResourcesFit (1),
VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone, PodTopologySpread (2),
InterPodAffinity (2), DefaultPreemption, NodeResourcesBalancedAllocation (1), ImageLocality (1),
DefaultBinder; from 1.34 DynamicResources right before DefaultPreemption (DRA on by default,
``scheduler.versions``; weight 2 from 1.35). All are modelled: PodTopologySpread and InterPodAffinity
(weights 2 and 2 in every supported minor, ``apis/config/v1/default_plugins.go``), the storage plugins
(their PVCs, PVs, StorageClasses and CSINodes reach them through the framework handle, ``Handle.volumes``),
ImageLocality. What a pod uses beyond them is stated by ``explain`` (``explain.unverified``). Filter
order matters — a node's reported reason is its first failing filter — and is kept as upstream.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubegpu.errors import ConfigError
from kubegpu.scheduler.framework import PluginFactory, PluginSpec, Profile
from kubegpu.scheduler.gpu_share import GPU_SHARE, GpuShare
from kubegpu.scheduler.plugins import cpu_frag, fgd, names, packing_policies
from kubegpu.scheduler.plugins.balanced_allocation import BalancedAllocation
from kubegpu.scheduler.plugins.checkpoint_preemption import CheckpointAwarePreemption
from kubegpu.scheduler.plugins.default_preemption import DefaultPreemption
from kubegpu.scheduler.plugins.dynamic_resources import DYNAMIC_RESOURCES, DynamicResources
from kubegpu.scheduler.plugins.gpu_device_fit import GpuDeviceFit
from kubegpu.scheduler.plugins.image_locality import ImageLocality
from kubegpu.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from kubegpu.scheduler.plugins.node_affinity import NodeAffinity
from kubegpu.scheduler.plugins.node_name import NodeName
from kubegpu.scheduler.plugins.node_ports import NodePorts
from kubegpu.scheduler.plugins.node_resources_fit import NodeResourcesFit
from kubegpu.scheduler.plugins.node_unschedulable import NodeUnschedulable
from kubegpu.scheduler.plugins.node_volume_limits import NodeVolumeLimits
from kubegpu.scheduler.plugins.pod_topology_spread import PodTopologySpread
from kubegpu.scheduler.plugins.taint_toleration import TaintToleration
from kubegpu.scheduler.plugins.volume_binding import VolumeBinding
from kubegpu.scheduler.plugins.volume_restrictions import VolumeRestrictions
from kubegpu.scheduler.plugins.volume_zone import VolumeZone
from kubegpu.scheduler.versions import behaviour

UNMODELLED_DEFAULT_PLUGINS = (
    "SchedulingGates", "PodTopologySpread", "InterPodAffinity",
)  # fmt: skip


def in_tree_registry() -> dict[str, PluginFactory]:
    return {
        names.NODE_UNSCHEDULABLE: NodeUnschedulable,
        names.NODE_NAME: NodeName,
        names.TAINT_TOLERATION: TaintToleration,
        names.NODE_AFFINITY: NodeAffinity,
        names.NODE_PORTS: NodePorts,
        names.NODE_RESOURCES_FIT: NodeResourcesFit,
        names.DEFAULT_PREEMPTION: DefaultPreemption,
        names.POD_TOPOLOGY_SPREAD: PodTopologySpread,
        names.INTER_POD_AFFINITY: InterPodAffinity,
        names.BALANCED_ALLOCATION: BalancedAllocation,
        names.VOLUME_RESTRICTIONS: VolumeRestrictions,
        names.NODE_VOLUME_LIMITS: NodeVolumeLimits,
        names.VOLUME_BINDING: VolumeBinding,
        names.VOLUME_ZONE: VolumeZone,
        names.IMAGE_LOCALITY: ImageLocality,
        names.GPU_DEVICE_FIT: GpuDeviceFit,
        DYNAMIC_RESOURCES: DynamicResources,  # in the default profile from 1.34; its objects: Handle.dra
        names.CHECKPOINT_AWARE_PREEMPTION: CheckpointAwarePreemption,
        GPU_SHARE: GpuShare,
        fgd.FGD: fgd.FragmentationGradientDescent,
        cpu_frag.CPU_AWARE_FRAG: cpu_frag.CpuAwareFragmentation,
        packing_policies.RANDOM: packing_policies.RandomScore,
        packing_policies.DOT_PRODUCT: packing_policies.DotProductScore,
        packing_policies.GPU_CLUSTERING: packing_policies.GpuClusteringScore,
        packing_policies.GPU_PACKING: packing_policies.GpuPackingScore,
        packing_policies.BEST_FIT: packing_policies.BestFitScore,
    }


KUBEGPU_SCHEDULER_NAME = "kubegpu"
PACKING_SCHEDULER_NAME = "kubegpu-packing"


def kubegpu_profile(
    scheduler_name: str = KUBEGPU_SCHEDULER_NAME,
    plugin_args: Mapping[str, Mapping[str, object]] | None = None,
    percentage_of_nodes_to_score: int | None = None,
    kube_version: str | None = None,
) -> Profile:
    """kube-scheduler's default profile plus GpuDeviceFit right after NodeResourcesFit (filter + reserve),
    with CheckpointAwarePreemption in place of DefaultPreemption (same rules, gang-whole and cost-aware)."""
    base = default_profile(scheduler_name, plugin_args, percentage_of_nodes_to_score, kube_version)
    plugins = []
    for spec in base.plugins:
        if spec.name == names.DEFAULT_PREEMPTION:
            args = dict((plugin_args or {}).get(names.CHECKPOINT_AWARE_PREEMPTION, spec.args))
            spec = PluginSpec(names.CHECKPOINT_AWARE_PREEMPTION, 0, args)
        plugins.append(spec)
        if spec.name == names.NODE_RESOURCES_FIT:
            plugins.append(
                PluginSpec(names.GPU_DEVICE_FIT, 0, dict((plugin_args or {}).get(names.GPU_DEVICE_FIT, {})))
            )
    return Profile(scheduler_name, tuple(plugins), percentage_of_nodes_to_score, kube_version)


def profile_named(
    name: str,
    scheduler_name: str | None = None,
    plugin_args: Mapping[str, Mapping[str, object]] | None = None,
    kube_version: str | None = None,
) -> Profile:
    """``default`` (kube-scheduler of ``kube_version`` as shipped: ``scheduler.versions``; None: the newest)
    or ``kubegpu`` (plus device-level placement)."""
    if name == "default":
        return default_profile(scheduler_name or "default-scheduler", plugin_args, kube_version=kube_version)
    if name == "kubegpu":
        return kubegpu_profile(
            scheduler_name or KUBEGPU_SCHEDULER_NAME, plugin_args, kube_version=kube_version
        )
    raise ConfigError(f"unknown profile {name!r}: use 'default' or 'kubegpu'")


def default_profile(
    scheduler_name: str = "default-scheduler",
    plugin_args: Mapping[str, Mapping[str, object]] | None = None,
    percentage_of_nodes_to_score: int | None = None,
    kube_version: str | None = None,
) -> Profile:
    args = plugin_args or {}
    rel = behaviour(kube_version)
    order = (
        (names.NODE_UNSCHEDULABLE, 0),
        (names.NODE_NAME, 0),
        (names.TAINT_TOLERATION, 3),
        (names.NODE_AFFINITY, 2),
        (names.NODE_PORTS, 0),
        (names.NODE_RESOURCES_FIT, 1),
        (names.VOLUME_RESTRICTIONS, 0),
        (names.NODE_VOLUME_LIMITS, 0),
        (names.VOLUME_BINDING, 1 if rel.storage_capacity_scoring else 0),  # its Score: StorageCapacityScoring
        (names.VOLUME_ZONE, 0),
        (names.POD_TOPOLOGY_SPREAD, 2),
        (names.INTER_POD_AFFINITY, 2),
        *(((DYNAMIC_RESOURCES, rel.dra_score_weight),) if rel.dynamic_resources else ()),
        (names.DEFAULT_PREEMPTION, 0),
        (names.BALANCED_ALLOCATION, 1),
        (names.IMAGE_LOCALITY, 1),
    )
    return Profile(
        scheduler_name=scheduler_name,
        plugins=tuple(PluginSpec(n, w, dict(args.get(n, {}))) for n, w in order),
        percentage_of_nodes_to_score=percentage_of_nodes_to_score,
        kube_version=kube_version,
    )


# policy → (score plugin, how GpuShare's Reserve picks a sharing pod's GPU), as the FGD paper's
# artifact configures them (``generate_run_scripts.py``: "random" for Random, FGD's own for FGD, "best"
# for the rest)
PACKING_POLICIES: dict[str, tuple[str, str]] = {
    "Random": (packing_policies.RANDOM, "random"),
    "DotProd": (packing_policies.DOT_PRODUCT, "best"),
    "GpuClustering": (packing_policies.GPU_CLUSTERING, "best"),
    "GpuPacking": (packing_policies.GPU_PACKING, "best"),
    "BestFit": (packing_policies.BEST_FIT, "best"),
    "FGD": (fgd.FGD, "fgd"),
    # kubegpu's own: FGD's score over a measure that also counts GPU the node's CPU and memory cannot feed
    "KubegpuCpuFrag": (cpu_frag.CPU_AWARE_FRAG, "fgd"),
}


def packing_profile(
    policy: str,
    scheduler_name: str | None = None,
    preemption: str | None = None,
    preemption_args: Mapping[str, object] | None = None,
) -> Profile:
    """The FGD artifact's scheduler: kube-scheduler's filters plus GpuShare (filter + reserve), ONE score
    plugin (the policy), every node scored (``percentageOfNodesToScore: 100``), no preemption — unless
    ``preemption`` names a PostFilter (DefaultPreemption or CheckpointAwarePreemption) for replays
    with priorities. GpuShare and the score plugins read the GPU-share ledger from the framework handle
    (``assembly.assemble``'s ``sharing``); it follows the cluster journal, so its dry runs see freed GPUs."""
    if policy not in PACKING_POLICIES:
        raise ConfigError(f"unknown packing policy {policy!r}: use one of {', '.join(PACKING_POLICIES)}")
    score, selection = PACKING_POLICIES[policy]
    filters = (
        names.NODE_UNSCHEDULABLE, names.NODE_NAME, names.TAINT_TOLERATION,
        names.NODE_AFFINITY, names.NODE_PORTS, names.NODE_RESOURCES_FIT,
    )  # fmt: skip
    plugins = (
        *(PluginSpec(n, 0) for n in filters),
        PluginSpec(GPU_SHARE, 0, {"selection": selection}),
        PluginSpec(score, 1),
    )
    if preemption is not None:
        if preemption not in (names.DEFAULT_PREEMPTION, names.CHECKPOINT_AWARE_PREEMPTION):
            raise ConfigError(f"unknown preemption plugin {preemption!r}")
        plugins = (*plugins, PluginSpec(preemption, 0, dict(preemption_args or {})))
    return Profile(scheduler_name or PACKING_SCHEDULER_NAME, plugins, percentage_of_nodes_to_score=100)
