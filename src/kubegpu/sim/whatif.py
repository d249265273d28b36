"""``kubegpu simulate``'s before/after: one workload replayed on a cluster as it is and with a change.

Clusters: the openb node list (scheduled by the FGD artifact's packing profile with a placement policy:
Random, DotProd, GpuClustering, GpuPacking, BestFit, FGD) or a snapshot / the demo (scheduled by the
``default`` or ``kubegpu`` profile; the snapshot's running pods stay where they are, its pending pods
arrive at time 0). Changes, applied to the "after" run only:

- ``policy``: another placement policy (openb) or profile (snapshot);
- ``add_nodes``: N more nodes like an existing one (``<node>-sim-<i>``; default: the node with the most
  GPUs, first in order);
- ``time_slicing``: every GPU node shares each GPU R ways, as the NVIDIA device plugin does with
  ``sharing.timeSlicing`` replicas R (``renameByDefault: false``), the node left as
  ``devices.time_slicing.time_sliced_node`` says (the same node ``kubegpu plan time-slicing`` schedules on):
  R × ``nvidia.com/gpu`` per physical GPU (and R × ``kubegpu.io/gpu-milli``), GFD's
  ``nvidia.com/gpu.replicas=R``; with the ``kubegpu`` profile the device model gets the same plugin config;
- ``queue_nominal``: a queue's nominal quota for one resource set to a new quantity;
- ``relabel`` and ``mig``: a pool relabel and a MIG re-partition of the nodes a label selects
  (``sim.node_changes``); the pods a re-partition moves off are recreated, pending, at time 0.

Batch mode: when the inputs carry queue objects (``GpuQueue`` / ``GpuCohort``) or pod groups
(``PodGroup``), both runs go through the batch layer (``Replay(mode="batch")``, as the queue benchmark's
arms do): queues with quota and cohort borrowing, DRF between queues, gangs all-or-nothing; with
``preempt`` also reclaim, checkpoint-aware preemption (the profile's PostFilter becomes
CheckpointAwarePreemption) and gang preemption, queues within their nominal quota protected (the
benchmark's ``queues+gang+ckpt-preemption`` arm).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from kubegpu.batch.objects import Queue, parse_batch_objects
from kubegpu.devices.plugin_config import parse_plugin_config
from kubegpu.devices.sharing import PluginConfig
from kubegpu.devices.time_slicing import plugin_config_text, time_sliced_node
from kubegpu.errors import ConfigError
from kubegpu.model.dra import DraObjects
from kubegpu.model.objects import Node, Pod
from kubegpu.model.quantity import QuantityError, format_milli, parse_quantity, to_milli
from kubegpu.model.resources import NVIDIA_GPU
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.assembly import SchedulerSpec, assemble, device_models
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.gpu_ledger import GpuShareLedger
from kubegpu.scheduler.gpu_shapes import TypicalPods
from kubegpu.scheduler.registry import PACKING_POLICIES
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.sim.node_changes import MigLayout, Relabel, mig_partitioned, relabeled
from kubegpu.sim.openb_replay import packing_factory
from kubegpu.sim.replay import (
    EPOCH,
    BatchSetup,
    NodeEvent,
    Replay,
    ReplayReport,
    SchedulerFactory,
    SimPod,
    preemption_plugin,
)

PROFILES = ("default", "kubegpu")


@dataclass(frozen=True)
class Change:
    policy: str | None = None
    add_nodes: int = 0
    add_like: str | None = None
    time_slicing: int | None = None
    queue_nominal: tuple[tuple[str, str, int], ...] = ()  # (queue, resource, milli-units)
    relabel: tuple[Relabel, ...] = ()
    mig: tuple[MigLayout, ...] = ()

    def any(self) -> bool:
        return bool(
            self.policy
            or self.add_nodes
            or self.time_slicing
            or self.queue_nominal
            or self.relabel
            or self.mig
        )

    def describe(self) -> str:
        parts = []
        if self.policy:
            parts.append(self.policy)
        if self.add_nodes:
            parts.append(f"+{self.add_nodes} node(s)")
        if self.time_slicing:
            parts.append(f"time-slicing ×{self.time_slicing}")
        parts += [f"{q} nominal {r}={format_milli(r, v)}" for q, r, v in self.queue_nominal]
        parts += [str(r) for r in (*self.relabel, *self.mig)]
        return ", ".join(parts)


def parse_queue_nominal(text: str) -> tuple[str, str, int]:
    """``QUEUE=RESOURCE=QUANTITY`` (e.g. ``training=nvidia.com/gpu=16``) → (queue, resource, milli)."""
    queue, _, rest = text.partition("=")
    resource, _, qty = rest.rpartition("=")
    if not queue or not resource or not qty:
        raise ConfigError(f"--queue-nominal takes QUEUE=RESOURCE=QUANTITY, got {text!r}")
    try:
        return queue, resource, to_milli(resource, parse_quantity(qty))
    except QuantityError as exc:
        raise ConfigError(f"--queue-nominal {text}: {exc}") from None


def batch_setup(objects: list[tuple[str, Any]]) -> BatchSetup | None:
    """The queues, cohorts and pod groups among the inputs' raw objects (None when there are none);
    the first bad object raises, naming file, object and field."""
    queues, cohorts, groups, errors = parse_batch_objects(objects)
    if errors:
        raise errors[0]
    if not (queues or cohorts or groups):
        return None
    return BatchSetup(queues, cohorts, groups, protect_nominal=True)


def with_nominal(setup: BatchSetup, changes: Sequence[tuple[str, str, int]]) -> BatchSetup:
    queues: dict[str, Queue] = dict(setup.queues)
    for name, resource, milli in changes:
        if name not in queues:
            known = ", ".join(sorted(queues)) or "none"
            raise ConfigError(f"--queue-nominal: no GpuQueue named {name!r} (queues: {known})")
        queues[name] = replace(queues[name], nominal={**queues[name].nominal, resource: milli})
    return replace(setup, queues=queues)


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
    """Every GPU node time-sliced ``replicas`` ways, as ``devices.time_slicing.time_sliced_node`` leaves it."""
    if replicas < 2:
        raise ConfigError(f"--time-slicing takes a replica count of at least 2, got {replicas}")
    text = _time_slicing_text(replicas)
    return [
        time_sliced_node(n, replicas, config_text=text, gfd_product=False)
        if n.allocatable.get(NVIDIA_GPU)
        else n
        for n in nodes
    ]


def _time_slicing_text(replicas: int) -> str:
    # sharing.timeSlicing as the plugin's defaults have it: no rename, requests above one replica allowed
    return plugin_config_text(replicas, rename=False, fail_requests_greater_than_one=False)


def time_slicing_config(replicas: int) -> PluginConfig:
    return parse_plugin_config(_time_slicing_text(replicas), source="--time-slicing")


def profile_factory(
    profile: str, config: PluginConfig | None, preemption: str | None = None, dra: DraObjects | None = None
) -> SchedulerFactory:
    """A snapshot cluster's scheduler: kube-scheduler's profile (``default``) or kubegpu's, with the
    device models the (optional) device plugin config gives; ``preemption`` replaces the profile's own
    PostFilter (DefaultPreemption, or kubegpu's CheckpointAwarePreemption); ``dra``: the snapshot's DRA
    objects, given to DynamicResources (and NodeResourcesFit) where the profile has it, so claim pods are
    allocated devices as kube-scheduler would, each run (before, after) from the snapshot's claims."""
    if profile not in PROFILES:
        raise ConfigError(f"unknown profile {profile!r}: use default or kubegpu")
    spec = SchedulerSpec(profile, preemption=preemption, dra=dra or None)

    def make(nodes: Sequence[Node], seed: int) -> tuple[Scheduler, GpuShareLedger | None]:
        configs = {"": config} if config is not None else {}
        models = device_models(ClusterSnapshot(nodes=list(nodes)), configs) if profile == "kubegpu" else {}
        cluster = ClusterState(nodes, device_models=models)
        return assemble(replace(spec, seed=seed), cluster), None

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
    batch: BatchSetup | None = None  # queues / pod groups among the inputs: batch mode
    dra: DraObjects | None = None  # the snapshot's DRA objects (claims of its pods, slices, classes)


def check_policy(scenario: Scenario, policy: str) -> None:
    allowed = tuple(PACKING_POLICIES) if scenario.openb else PROFILES
    if policy not in allowed:
        kind = "placement policy" if scenario.openb else "profile"
        raise ConfigError(f"unknown {kind} {policy!r} for this cluster: use one of {', '.join(allowed)}")


def run(
    scenario: Scenario, policy: str, change: Change | None, seed: int, label: str, preempt: bool = False
) -> ReplayReport:
    nodes = scenario.nodes
    config = None
    batch = scenario.batch
    bound, pods = list(scenario.bound), list(scenario.pods)
    if change is not None:
        if change.mig:
            nodes, bound, moved = mig_partitioned(nodes, bound, change.mig)
            pods += [SimPod(p, 0.0, math.inf) for p in moved]
        if change.queue_nominal:
            if batch is None:
                raise ConfigError("--queue-nominal: the inputs define no queues (GpuQueue)")
            batch = with_nominal(batch, change.queue_nominal)
        if change.relabel:
            nodes = relabeled(nodes, change.relabel)
        if change.add_nodes:
            nodes = added_nodes(nodes, change.add_nodes, change.add_like)
        if change.time_slicing:
            nodes = time_sliced(nodes, change.time_slicing)
            config = time_slicing_config(change.time_slicing)
        policy = change.policy or policy
    check_policy(scenario, policy)
    mode = "batch" if batch is not None else "kube"
    post_filter = preemption_plugin(mode, preempt)
    if scenario.openb:
        factory = packing_factory(policy, scenario.typical, post_filter)
    else:  # kube mode keeps the profile's own PostFilter (kubegpu's is already checkpoint-aware)
        factory = profile_factory(policy, config, post_filter if mode == "batch" else None, scenario.dra)
    return Replay(
        nodes, pods, factory, mode=mode, preempt=preempt, batch=batch, seed=seed, label=label,
        node_events=scenario.node_events, bound=bound, epoch=scenario.epoch,
        arrival_window=scenario.arrival_window,
    ).run()  # fmt: skip


def compare(
    scenario: Scenario, policy: str, change: Change, seed: int, preempt: bool = False
) -> list[ReplayReport]:
    """The replay as is, then (if a change is given) with the change."""
    before = run(scenario, policy, None, seed, f"before: {policy}", preempt)
    if not change.any():
        return [before]
    return [before, run(scenario, policy, change, seed, f"after: {change.describe()}", preempt)]


def table_rows(reports: Sequence[ReplayReport]) -> list[tuple[str, list[str]]]:
    """The before/after table: each metric with one value per report ("—" where a report lacks the
    row), in first-seen order; what both the printed table and the HTML report show."""
    order: list[str] = []
    values: list[dict[str, str]] = []
    for r in reports:
        rows = dict(r.rows())
        order += [label for label in rows if label not in order]
        rows["pending pods (given up + still pending)"] = str(r.given_up + r.still_pending)
        values.append(rows)
    order.append("pending pods (given up + still pending)")
    return [(label, [v.get(label, "—") for v in values]) for label in order]
