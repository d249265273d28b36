"""One object that owns a snapshot's scheduling state, so every command asks the same core the same way.

``Engine`` builds each node's device model (``devices.node_devices``), the ``ClusterState`` and the
``Framework`` for a profile once; ``explain``, ``schedule`` and ``diagnose`` go through it. A device
plugin configuration comes, per node, from the ``kubegpu.io/device-plugin-config`` annotation (the
NVIDIA ``version: v1`` file in effect there), else from ``--device-plugin-config`` files selected by the
node's ``nvidia.com/device-plugin.config`` label as the GPU Operator does (``""`` = the default file),
else it is inferred from GFD labels.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from kubegpu.devices.node_devices import NodeDevices, node_devices
from kubegpu.devices.plugin_config import parse_plugin_config
from kubegpu.devices.sharing import PluginConfig
from kubegpu.errors import InputError
from kubegpu.model.bulk import bulk_load
from kubegpu.model.names import DEVICE_PLUGIN_CONFIG_ANNOTATION as CONFIG_ANNOTATION
from kubegpu.model.names import DEVICE_PLUGIN_CONFIG_LABEL as CONFIG_LABEL
from kubegpu.model.objects import Node
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import Framework, Profile
from kubegpu.scheduler.plugins.dynamic_resources import DYNAMIC_RESOURCES, with_dynamic_resources
from kubegpu.scheduler.registry import default_profile, in_tree_registry
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.scheduler.versions import choose


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
    def __init__(
        self,
        snapshot: ClusterSnapshot,
        profile: Profile | None = None,
        seed: int = 0,
        plugin_configs: Mapping[str, PluginConfig] | None = None,
    ) -> None:
        self.snapshot = snapshot
        if snapshot.kube_version is None:  # not chosen by the CLI: the same rule, without --kube-version
            chosen_release, snapshot.kube_version_from, _ = choose(
                None, snapshot.server_version, snapshot.kubelet_versions()
            )
            snapshot.kube_version = chosen_release.name
        chosen = profile or default_profile(kube_version=snapshot.kube_version)
        if any(p.name == DYNAMIC_RESOURCES for p in chosen.plugins):  # 1.34+: the snapshot's DRA objects
            chosen = with_dynamic_resources(chosen, snapshot.dra)
        self.profile = chosen
        with bulk_load():
            self.devices = device_models(snapshot, plugin_configs)
            self.cluster = ClusterState(snapshot.nodes, snapshot.pods, self.devices)
        for pod in snapshot.pending_pods(self.profile.scheduler_name):
            if (
                pod.nominated_node_name
            ):  # the profile's nominator: its own pending pods nominated by preemption
                self.cluster.nominate(pod, pod.nominated_node_name)
        self.framework = Framework(self.profile, in_tree_registry(), snapshot.pdbs)
        self.scheduler = Scheduler(self.framework, self.cluster, seed=seed)

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
