"""A replay's inputs: the pods with their arrival, duration and deadline, node events, the batch
layer's objects, and which PostFilter a replay runs (``sim.replay`` runs them).

Owns: the input types and their validation. May not import ``sim.replay`` nor another face. (Nodes built
from a live cluster's free capacity, for ``simulate --kube``, are ``sim.onto_cluster``.)
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from kubegpu.batch.objects import DEFAULT_QUEUE, QUEUE_LABEL, Cohort, PodGroup, Queue
from kubegpu.errors import ConfigError
from kubegpu.model.objects import Node, Pod
from kubegpu.model.podgroup import gpu_milli_of, group_key
from kubegpu.scheduler.gpu_ledger import GpuShareLedger
from kubegpu.scheduler.gpu_shapes import MILLI
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.schedule_one import Scheduler

EPOCH = datetime(2023, 1, 1, tzinfo=UTC)  # simulated time 0 as a wall-clock instant (pod timestamps)
NODE_ACTIONS = ("add", "remove", "cordon", "uncordon")

# a scheduler over a new cluster state of these nodes (seeded), and the GpuShare ledger it keeps beside
# the cluster (if its profile has one)
SchedulerFactory = Callable[[Sequence[Node], int], tuple[Scheduler, GpuShareLedger | None]]


def pod_class(pod: Pod) -> str:
    """The FGD paper's task classes, from the pod's GPU request: cpu, share (< 1 GPU) or n-gpu."""
    milli = gpu_milli_of(pod)
    if milli == 0:
        return "cpu"
    return "share" if milli < MILLI else f"{milli // MILLI}-gpu"


@dataclass(frozen=True)
class SimPod:
    pod: Pod
    arrival: float
    duration: float  # seconds of work once placed (math.inf: runs to the end)
    deadline: float | None = None  # deleted if still pending then (never after it first started)
    after: str | None = None  # created only when this pod (a Job's earlier pod) completes


@dataclass(frozen=True)
class NodeEvent:
    time: float
    action: str  # add | remove | cordon | uncordon
    node: str
    spec: Node | None = None  # the node, for add

    def __post_init__(self) -> None:
        if self.action not in NODE_ACTIONS:
            raise ConfigError(
                f"node event action must be one of {', '.join(NODE_ACTIONS)}, not {self.action!r}"
            )
        if self.action == "add" and self.spec is None:
            raise ConfigError(f"node event add {self.node}: the node itself is needed")


def preemption_plugin(mode: str, preempt: bool) -> str | None:
    """The PostFilter a replay's scheduler runs: none without preemption; kube-scheduler's
    DefaultPreemption in ``kube`` mode; CheckpointAwarePreemption in ``batch`` mode, so single pods are
    preempted by the same cost (GPU-time since the last checkpoint) as gangs and reclaim."""
    if not preempt:
        return None
    return names.CHECKPOINT_AWARE_PREEMPTION if mode == "batch" else names.DEFAULT_PREEMPTION


@dataclass(frozen=True)
class BatchSetup:
    """The batch layer's objects for ``mode="batch"``: queues, cohorts, pod groups by ``namespace/name``
    (minMember; Volcano's ``spec.queue``), and whether queues within their nominal quota are safe from
    other queues' preemption."""

    queues: Mapping[str, Queue]
    cohorts: Mapping[str, Cohort] = field(default_factory=dict)
    groups: Mapping[str, PodGroup] = field(default_factory=dict)
    protect_nominal: bool = False

    def queue_of(self, pod: Pod) -> str:
        """The pod's queue label, else its PodGroup's ``spec.queue``, else ``default`` (as
        ``batch.workloads`` decides for a snapshot)."""
        key = group_key(pod)
        group = self.groups.get(key) if key else None
        return pod.labels.get(QUEUE_LABEL) or (group.queue if group else "") or DEFAULT_QUEUE
