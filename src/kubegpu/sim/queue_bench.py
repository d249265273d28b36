"""Issue 6's replay benchmark: the openb trace as three team queues, under three ways to run them.

Teams (from trace facts only, so the split is stable and explainable):

| team | pods | priority | checkpoint interval |
| --- | --- | --- | --- |
| ``inference`` | GPU-sharing pods (``gpu_milli`` < 1000) and CPU-only pods | 1000 | none (stateless: an eviction loses everything since start) |
| ``training`` | whole-GPU pods with QoS LS, Guaranteed or Burstable | 500 | 1800 s |
| ``research`` | whole-GPU pods with QoS BE (best effort) | 100 | 3600 s |

Gangs: openb has no job ids; the only sign of pods launched together is identical pods created in the
same second. GPU pods of one team with the same shape and the same ``creation_time`` form a gang
(label ``kubegpu.io/pod-group``, ``minMember`` = their number): 86 gangs of 2–3 pods in the default
trace. Other pods are single.

Arms (same cluster, same placement policy — BestFit — and the same seed):

- ``kube``: kube-scheduler's behaviour: one queue in PrioritySort order with backoff, DefaultPreemption,
  gang members scheduled one by one;
- ``queues+gang``: the batch layer: three queues in one cohort, nominal quota 30 / 40 / 30 % of the
  cluster's GPUs (inference / training / research) with unlimited borrowing, DRF between queues,
  gangs all-or-nothing, admission only when the core places the whole workload; nothing is evicted;
- ``queues+gang+ckpt-preemption``: the same plus reclaim of borrowed quota, CheckpointAwarePreemption
  for single pods and all-or-nothing gang preemption, all choosing victims by GPU-time lost; a queue
  within its nominal quota never loses pods to another queue (Kueue's rule against flapping).
  ``queues+gang+ckpt-preemption-by-priority`` drops that protection (priority alone decides);
  ``queues+gang+ckpt-preemption+decay`` keeps it and orders queues by decayed historical usage
  (the cohort's ``admissionFairSharing``: half-life 1 h of simulated time, sampling 5 min;
  ``batch.fair_share``) instead of current usage.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

from kubegpu.batch.objects import QUEUE_LABEL, Cohort, PodGroup, Queue
from kubegpu.model.objects import Node
from kubegpu.model.podgroup import CHECKPOINT_INTERVAL_ANNOTATION, KUBEGPU_GROUP_LABEL
from kubegpu.model.resources import GPU_MILLI
from kubegpu.scheduler.gpu_shapes import MILLI
from kubegpu.sim.openb import TracePod
from kubegpu.sim.openb_replay import node_subset, packing_factory, sim_pods, timed
from kubegpu.sim.packing import typical_pods
from kubegpu.sim.replay import BatchSetup, Replay, ReplayReport, SimPod, preemption_plugin


@dataclass(frozen=True)
class Team:
    name: str
    priority: int
    checkpoint_s: int | None
    nominal_pct: int


TEAMS = {
    "inference": Team("inference", 1000, None, 30),
    "training": Team("training", 500, 1800, 40),
    "research": Team("research", 100, 3600, 30),
}
ARMS = ("kube", "queues+gang", "queues+gang+ckpt-preemption")
# the third arm with priority alone deciding across queues (no nominal-quota protection): for comparison
UNPROTECTED = "queues+gang+ckpt-preemption-by-priority"
# the third arm with the fair share computed from decayed historical usage
DECAY = "queues+gang+ckpt-preemption+decay"
DECAY_HALF_LIFE_S = 3600.0
COHORT = "org"
POLICY = "BestFit"


def team_of(p: TracePod) -> str:
    if p.num_gpu == 0 or p.gpu_milli < MILLI:
        return "inference"
    return "research" if p.qos == "BE" else "training"


def gang_key(p: TracePod) -> tuple[str, int, int, int, int, int | None]:
    return (team_of(p), p.cpu_milli, p.memory_mib, p.num_gpu, p.gpu_milli, p.creation_time)


def team_pods(trace: Sequence[TracePod], time_scale: float) -> tuple[list[SimPod], dict[str, PodGroup]]:
    """Timed pods with their team's queue label, priority and checkpoint interval, and gang labels;
    plus a pod group (minMember) per gang key (``namespace/group``)."""
    pods = timed(trace)
    alike: dict[tuple[str, int, int, int, int, int | None], list[str]] = {}
    for p in pods:
        if p.num_gpu:
            alike.setdefault(gang_key(p), []).append(p.name)
    gang_of: dict[str, str] = {}
    groups: dict[str, PodGroup] = {}
    for members in alike.values():
        if len(members) > 1:
            name = f"gang-{zlib.crc32(','.join(sorted(members)).encode()):08x}"
            for m in members:
                gang_of[m] = name
            groups[f"openb/{name}"] = PodGroup("openb", name, len(members))
    out = []
    for p, sim in zip(pods, sim_pods(pods, time_scale), strict=True):
        team = TEAMS[team_of(p)]
        labels = {QUEUE_LABEL: team.name}
        if p.name in gang_of:
            labels[KUBEGPU_GROUP_LABEL] = gang_of[p.name]
        annotations = dict(sim.pod.annotations)
        if team.checkpoint_s:
            annotations[CHECKPOINT_INTERVAL_ANNOTATION] = str(team.checkpoint_s)
        pod = replace(sim.pod, labels=labels, annotations=annotations, priority=team.priority)
        out.append(replace(sim, pod=pod))
    return out, groups


def team_queues(nodes: Sequence[Node]) -> dict[str, Queue]:
    """One cohort; nominal quota per team as a share of the cluster's milli-GPUs; borrowing unlimited."""
    capacity = sum(n.allocatable.get(GPU_MILLI, 0) for n in nodes)
    return {
        t.name: Queue(t.name, cohort=COHORT, nominal={GPU_MILLI: capacity * t.nominal_pct // 100})
        for t in TEAMS.values()
    }


def run_arm(
    arm: str,
    nodes: Sequence[Node],
    trace: Sequence[TracePod],
    *,
    time_scale: float,
    nodes_fraction: float,
    seed: int,
) -> ReplayReport:
    if arm not in (*ARMS, UNPROTECTED, DECAY):
        raise ValueError(f"unknown arm {arm!r}")
    cluster_nodes = node_subset(nodes, nodes_fraction, seed)
    pods, groups = team_pods(trace, time_scale)
    typical = typical_pods(trace)
    if arm == "kube":
        factory = packing_factory(POLICY, typical, preemption_plugin("kube", True))
        return Replay(
            cluster_nodes, pods, factory, mode="kube", preempt=True, seed=seed, label=arm, arrival_window=True
        ).run()
    preempt = arm != "queues+gang"
    factory = packing_factory(POLICY, typical, preemption_plugin("batch", preempt))
    cohort = Cohort(COHORT, usage_half_life_s=DECAY_HALF_LIFE_S if arm == DECAY else None)
    setup = BatchSetup(team_queues(cluster_nodes), {COHORT: cohort}, groups, arm != UNPROTECTED)
    return Replay(
        cluster_nodes,
        pods,
        factory,
        mode="batch",
        preempt=preempt,
        batch=setup,
        seed=seed,
        label=arm,
        arrival_window=True,
    ).run()
