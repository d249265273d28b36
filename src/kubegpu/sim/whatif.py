"""``kubegpu simulate``'s before/after: one workload replayed on a cluster as it is and with a change.

Clusters: the openb node list (scheduled by the FGD artifact's packing profile with a placement policy:
Random, DotProd, GpuClustering, GpuPacking, BestFit, FGD) or a snapshot / the demo (scheduled by the
``default`` or ``kubegpu`` profile; the snapshot's running pods stay where they are, its pending pods
arrive at time 0). Changes, applied to the "after" run only:

- ``policy``: another placement policy (openb) or profile (snapshot);
- ``add_nodes``: N more nodes like an existing one (``<node>-sim-<i>``; default: the node with the most
  GPUs, first in order);
- ``time_slicing``: every GPU node shares each GPU R ways, as the NVIDIA device plugin does with
  ``sharing.timeSlicing`` replicas R (``renameByDefault: false``): the node advertises R ×
  ``nvidia.com/gpu`` (and R × ``kubegpu.io/gpu-milli``) and GFD labels it ``nvidia.com/gpu.replicas=R``;
  with the ``kubegpu`` profile the device model gets the same plugin config.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from kubegpu.devices.sharing import PluginConfig, parse_plugin_config
from kubegpu.errors import ConfigError
from kubegpu.explain.engine import device_models
from kubegpu.model.objects import Node, Pod
from kubegpu.model.resources import GPU_MILLI, NVIDIA_GPU
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import Framework
from kubegpu.scheduler.gpu_share import GpuShareLedger, TypicalPods
from kubegpu.scheduler.registry import PACKING_POLICIES, in_tree_registry, profile_named
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.sim.openb_replay import packing_factory
from kubegpu.sim.replay import EPOCH, NodeEvent, Replay, ReplayReport, SchedulerFactory, SimPod

PROFILES = ("default", "kubegpu")
REPLICAS_LABEL = "nvidia.com/gpu.replicas"


@dataclass(frozen=True)
class Change:
    policy: str | None = None
    add_nodes: int = 0
    add_like: str | None = None
    time_slicing: int | None = None

    def any(self) -> bool:
        return bool(self.policy or self.add_nodes or self.time_slicing)

    def describe(self) -> str:
        parts = []
        if self.policy:
            parts.append(self.policy)
        if self.add_nodes:
            parts.append(f"+{self.add_nodes} node(s)")
        if self.time_slicing:
            parts.append(f"time-slicing ×{self.time_slicing}")
        return ", ".join(parts)


def added_nodes(nodes: Sequence[Node], count: int, like: str | None) -> list[Node]:
    if like is not None:
        template = next((n for n in nodes if n.name == like), None)
        if template is None:
            raise ConfigError(f"--add-nodes: no node named {like!r} to copy")
    else:
        if not nodes:
            raise ConfigError("--add-nodes: the cluster has no node to copy")
        template = max(nodes, key=lambda n: n.allocatable.get(NVIDIA_GPU, 0))
    return [*nodes, *(replace(template, name=f"{template.name}-sim-{i}") for i in range(count))]


def time_sliced(nodes: Sequence[Node], replicas: int) -> list[Node]:
    if replicas < 2:
        raise ConfigError(f"--time-slicing takes a replica count of at least 2, got {replicas}")
    out = []
    for n in nodes:
        if not n.allocatable.get(NVIDIA_GPU):
            out.append(n)
            continue
        scaled = {r: v * replicas if r in (NVIDIA_GPU, GPU_MILLI) else v for r, v in n.allocatable.items()}
        cap = {r: v * replicas if r in (NVIDIA_GPU, GPU_MILLI) else v for r, v in n.capacity.items()}
        labels = {**n.labels, REPLICAS_LABEL: str(replicas)}
        out.append(replace(n, allocatable=scaled, capacity=cap, labels=labels))
    return out


def time_slicing_config(replicas: int) -> PluginConfig:
    text = f"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: {NVIDIA_GPU}\n      replicas: {replicas}\n"
    return parse_plugin_config(text, source="--time-slicing")


def profile_factory(profile: str, config: PluginConfig | None) -> SchedulerFactory:
    """A snapshot cluster's scheduler: kube-scheduler's profile (``default``) or kubegpu's, with the
    device models the (optional) device plugin config gives."""
    if profile not in PROFILES:
        raise ConfigError(f"unknown profile {profile!r}: use default or kubegpu")

    def make(nodes: Sequence[Node], seed: int) -> tuple[Scheduler, GpuShareLedger | None]:
        configs = {"": config} if config is not None else {}
        models = device_models(ClusterSnapshot(nodes=list(nodes)), configs) if profile == "kubegpu" else {}
        cluster = ClusterState(nodes, device_models=models)
        return Scheduler(Framework(profile_named(profile), in_tree_registry()), cluster, seed=seed), None

    return make


@dataclass(frozen=True)
class Scenario:
    """A cluster and a workload: what ``simulate`` replays before and after the change."""

    nodes: list[Node]
    pods: list[SimPod]
    openb: bool  # the openb node list (packing policies) or a snapshot (profiles)
    typical: TypicalPods | None = None
    bound: tuple[Pod, ...] = ()
    node_events: tuple[NodeEvent, ...] = ()
    epoch: datetime = EPOCH
    arrival_window: bool = False


def check_policy(scenario: Scenario, policy: str) -> None:
    allowed = tuple(PACKING_POLICIES) if scenario.openb else PROFILES
    if policy not in allowed:
        kind = "placement policy" if scenario.openb else "profile"
        raise ConfigError(f"unknown {kind} {policy!r} for this cluster: use one of {', '.join(allowed)}")


def run(scenario: Scenario, policy: str, change: Change | None, seed: int, label: str) -> ReplayReport:
    nodes = scenario.nodes
    config = None
    if change is not None:
        if change.add_nodes:
            nodes = added_nodes(nodes, change.add_nodes, change.add_like)
        if change.time_slicing:
            nodes = time_sliced(nodes, change.time_slicing)
            config = time_slicing_config(change.time_slicing)
        policy = change.policy or policy
    check_policy(scenario, policy)
    factory = packing_factory(policy, scenario.typical) if scenario.openb else profile_factory(policy, config)
    return Replay(
        nodes, scenario.pods, factory, seed=seed, label=label, node_events=scenario.node_events,
        bound=scenario.bound, epoch=scenario.epoch, arrival_window=scenario.arrival_window,
    ).run()  # fmt: skip


def compare(scenario: Scenario, policy: str, change: Change, seed: int) -> list[ReplayReport]:
    """The replay as is, then (if a change is given) with the change."""
    before = run(scenario, policy, None, seed, f"before: {policy}")
    if not change.any():
        return [before]
    return [before, run(scenario, policy, change, seed, f"after: {change.describe()}")]
