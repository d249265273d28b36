"""One assembly: a scheduler described as data (``SchedulerSpec``) and the one place it is built.

Every face gets its scheduler here. ``explain``, ``schedule``, ``diagnose``, ``report``, ``queues``, the
planner's before/after and the cluster exporter build an ``Engine`` over a snapshot (device models,
``ClusterState``, framework and scheduler); the simulator, the live scheduler and the extender build the
cluster state themselves and call ``assemble`` over it. ``assemble`` is the only caller of ``Framework``
and ``Scheduler`` in ``kubegpu`` and ``profile`` the only place a profile is chosen by name
(``tests/test_assembly.py`` scans the sources and fails on any other).

Plugins get what they share through the framework ``Handle``, typed, never as plugin args: the cluster
state (the scheduler sets it), the clock (``SchedulerSpec.clock``), the GPU-share ledger (``sharing``),
the DRA objects (``dra``), the storage objects (``volumes``), the PDBs and the kube-scheduler release reproduced (``behaviour``). Plugin args are what a
``KubeSchedulerConfiguration`` would carry (``pluginConfig[].args``, e.g. NodeResourcesFit's
``scoringStrategy``) and kubegpu's own tuning knobs.

Device models come, per node, from the ``kubegpu.io/device-plugin-config`` annotation (the NVIDIA
``version: v1`` file in effect there), else from the configs given (``--device-plugin-config``) selected
by the node's ``nvidia.com/device-plugin.config`` label as the GPU Operator does (``""`` = the default
file), else they are inferred from GFD labels.

May import the scheduler's own modules, ``devices`` and ``model``; nothing above (layer: core).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np

from kubegpu.devices.node_devices import NodeDevices, node_devices
from kubegpu.devices.plugin_config import parse_plugin_config
from kubegpu.devices.sharing import PluginConfig
from kubegpu.errors import ConfigError, InputError
from kubegpu.model.bulk import bulk_load
from kubegpu.model.default_spread import SpreadOwners
from kubegpu.model.dra import DraObjects
from kubegpu.model.names import DEVICE_PLUGIN_CONFIG_ANNOTATION as CONFIG_ANNOTATION
from kubegpu.model.names import DEVICE_PLUGIN_CONFIG_LABEL as CONFIG_LABEL
from kubegpu.model.objects import Node, PodDisruptionBudget
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.model.volumes import VolumeObjects
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import Framework, PluginSpec, Profile
from kubegpu.scheduler.gpu_ledger import GpuShareLedger
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.registry import in_tree_registry, packing_profile, profile_named
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.scheduler.versions import behaviour, choose

PROFILES = ("default", "kubegpu", "packing")
POST_FILTERS = (names.DEFAULT_PREEMPTION, names.CHECKPOINT_AWARE_PREEMPTION)


@dataclass(frozen=True)
class SchedulerSpec:
    """A scheduler, declared: which profile, set up how. Frozen; built by ``assemble`` / ``Engine``."""

    # ``default`` (kube-scheduler as shipped), ``kubegpu`` (plus device-level placement), ``packing``
    # (the FGD artifact's scheduler; ``policy`` names its score plugin) or a ready ``Profile``, taken with
    # its own name, args and release (``preemption``, ``dra``, ``volumes`` still apply)
    profile: str | Profile = "default"
    scheduler_name: str | None = None  # None: the profile's own (default-scheduler, kubegpu, …)
    plugin_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # per plugin name
    kube_version: str | None = None  # the release reproduced; None: the snapshot's (Engine), else newest
    policy: str | None = None  # ``packing``: a ``registry.PACKING_POLICIES`` key
    # the PostFilter: replaces the profile's own (default, kubegpu) or is added (packing, which has none)
    preemption: str | None = None
    seed: int = 0  # upstream's random tie-breaks and the plugins' random choices
    # ``random``, ``release`` (1.35+'s heap order) or ``first`` (the FGD simulator's): ``Scheduler``
    tie_break: str = "random"
    use_cache: bool = True  # the per-equivalence-class filter cache
    pdbs: tuple[PodDisruptionBudget, ...] = ()  # Engine: the snapshot's
    dra: DraObjects | None = None  # DynamicResources' objects (Engine: the snapshot's)
    # the storage plugins' PVCs, PVs, StorageClasses, CSINodes (Engine: the snapshot's); ``binds_volumes``
    # False (the live scheduler, which writes no PV bindings): VolumeBinding refuses pods it would have to bind
    volumes: VolumeObjects | None = None
    binds_volumes: bool = True
    # PodTopologySpread's default constraints read the Services and controllers selecting a pod (Engine: the
    # snapshot's); None: there are none, so pods without their own constraints are not spread
    spread_owners: SpreadOwners | None = None
    clock: Callable[[], datetime] | None = None  # None: UTC wall time, read per cycle
    plugin_configs: Mapping[str, PluginConfig] = field(default_factory=dict)  # Engine: device models


def profile(spec: SchedulerSpec) -> Profile:
    """The profile ``spec`` declares: chosen by name (or given), its PostFilter replaced."""
    chosen: Profile
    if isinstance(spec.profile, Profile):
        chosen = spec.profile
    elif spec.profile == "packing":
        if spec.policy is None:
            raise ConfigError("profile 'packing' needs a placement policy")
        return packing_profile(
            spec.policy,
            spec.scheduler_name,
            preemption=spec.preemption,
            preemption_args=(spec.plugin_args.get(spec.preemption) if spec.preemption else None),
        )
    else:
        chosen = profile_named(spec.profile, spec.scheduler_name, spec.plugin_args, spec.kube_version)
    if spec.preemption is not None:
        if spec.preemption not in POST_FILTERS:
            raise ConfigError(f"unknown preemption plugin {spec.preemption!r}")
        # the two PostFilters take the same arguments: keep the profile's
        plugins = tuple(
            PluginSpec(spec.preemption, 0, dict(p.args)) if p.name in POST_FILTERS else p
            for p in chosen.plugins
        )
        chosen = replace(chosen, plugins=plugins)
    return chosen


def assemble(spec: SchedulerSpec, cluster: ClusterState, sharing: GpuShareLedger | None = None) -> Scheduler:
    """The one place a scheduler is built: ``spec``'s profile, plugins and handle over ``cluster``.
    ``sharing``: the GPU-share ledger over ``cluster`` that the packing plugins read (``packing``)."""
    framework = Framework(
        profile(spec),
        in_tree_registry(),
        list(spec.pdbs),
        sharing=sharing,
        clock=spec.clock,
        dra=spec.dra,
        volumes=spec.volumes,
        binds_volumes=spec.binds_volumes,
        spread_owners=spec.spread_owners,
    )
    return Scheduler(framework, cluster, seed=spec.seed, use_cache=spec.use_cache, tie_break=spec.tie_break)


def plugin_config_for(node: Node, configs: Mapping[str, PluginConfig]) -> PluginConfig | None:
    text = node.annotations.get(CONFIG_ANNOTATION)
    if text is not None:
        return parse_plugin_config(
            text, source=f"{node.source}: Node {node.name}: metadata.annotations[{CONFIG_ANNOTATION}]"
        )
    return configs.get(node.labels.get(CONFIG_LABEL, ""), configs.get(""))


def device_models(
    snapshot: ClusterSnapshot, configs: Mapping[str, PluginConfig] | None = None
) -> dict[str, NodeDevices]:
    """Device model per node; a node whose model cannot be built is reported and left count-only."""
    models: dict[str, NodeDevices] = {}
    for node in snapshot.nodes:
        try:
            model = node_devices(node, plugin_config_for(node, configs or {}))
        except InputError as exc:
            snapshot.errors.append(exc)
            continue
        if model is not None:
            models[node.name] = model
    return models


class Engine:
    """A snapshot's scheduling state, built once, so every command asks the same core the same way:
    each node's device model, the ``ClusterState`` (with the profile's nominations) and the scheduler
    ``spec`` declares (its release, PDBs and DRA objects: the snapshot's unless the spec says)."""

    def __init__(self, snapshot: ClusterSnapshot, spec: SchedulerSpec | None = None) -> None:
        self.snapshot = snapshot
        if snapshot.kube_version is None:  # not chosen by the CLI: the same rule, without --kube-version
            chosen_release, snapshot.kube_version_from, _ = choose(
                None, snapshot.server_version, snapshot.kubelet_versions(), snapshot.api_versions()
            )
            snapshot.kube_version = chosen_release.name
        spec = spec or SchedulerSpec()
        spec = replace(
            spec,
            kube_version=spec.kube_version or snapshot.kube_version,
            pdbs=spec.pdbs or tuple(snapshot.pdbs),
            dra=spec.dra if spec.dra is not None else snapshot.dra,
            volumes=spec.volumes if spec.volumes is not None else snapshot.volumes,
            spread_owners=spec.spread_owners or SpreadOwners.of(snapshot.records),
        )
        with bulk_load():  # the cyclic collector paused while millions of small objects are made
            self.devices = device_models(snapshot, spec.plugin_configs)
            # namespace labels: a pod affinity term's namespaceSelector reads them
            self.cluster = ClusterState(
                snapshot.nodes,
                snapshot.pods,
                self.devices,
                {ns.name: ns.labels for ns in snapshot.namespaces},
                non_zero_before_1_32=behaviour(spec.kube_version).non_zero_before_1_32,
            )
        self.scheduler = assemble(spec, self.cluster)
        self.framework = self.scheduler.framework
        self.profile = self.framework.profile
        for pod in snapshot.pending_pods(self.profile.scheduler_name):
            if (
                pod.nominated_node_name
            ):  # the profile's nominator: its own pending pods nominated by preemption
                self.cluster.nominate(pod, pod.nominated_node_name)

    def free(self, resource: str, *, open_only: bool = False) -> dict[str, int]:
        """Free (allocatable − requested) ``resource`` per node; ``open_only``: Ready, uncordoned nodes only."""
        cluster = self.cluster
        col = cluster.col.get(resource)
        if col is None:
            free = [0] * len(cluster)
        else:  # one column subtraction, not a NodeView per node: asked per Pending pod on thousands of nodes
            free = np.maximum(cluster.allocatable[:, col] - cluster.requested[:, col], 0).tolist()
        return {
            node.name: f
            for node, f in zip(cluster.nodes, free, strict=True)
            if not open_only or (node.ready and not node.unschedulable)
        }
