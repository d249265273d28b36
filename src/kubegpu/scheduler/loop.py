"""The offline scheduling loop: pop pending pods in queue order, run a cycle each, apply the outcome.

This is what ``kubegpu schedule`` runs and what the simulator will drive event by event. A preemption
evicts its victims at once (a real cluster waits out their grace period) and the preemptor is retried
straight away on the freed capacity; evicted pods are reported, not recreated — their controllers
would recreate them as new Pending pods. A preemptor that still does not fit stays nominated to its node,
and later cycles of pods with no higher priority leave that room to it (kube-scheduler's nominator).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kubegpu.model.objects import Pod
from kubegpu.scheduler.queue import priority_sort
from kubegpu.scheduler.schedule_one import Scheduler


@dataclass
class Outcome:
    pod: Pod
    node: str | None = None
    message: str = ""
    nominated_node: str = ""
    evicted: list[Pod] = field(default_factory=list)

    @property
    def scheduled(self) -> bool:
        return self.node is not None


def run_queue(scheduler: Scheduler, pods: Iterable[Pod]) -> list[Outcome]:
    """Schedule ``pods`` one cycle each in PrioritySort order; bound pods are assumed in the cluster state.
    Pods already nominated (``status.nominatedNodeName``) are in the nominator from the start, so pods
    ahead of them in the queue do not take the room their preemption made."""
    ordered = priority_sort(pods)
    for pod in ordered:
        if pod.nominated_node_name and not pod.node_name:
            scheduler.cluster.nominate(pod, pod.nominated_node_name)
    outcomes = []
    for pod in ordered:
        result = scheduler.schedule_one(pod)
        outcome = Outcome(pod, node=result.node, message=result.message, nominated_node=result.nominated_node)
        if not result.scheduled and result.victims:
            for victim in result.victims:
                scheduler.cluster.remove_pod(victim)
            outcome.evicted = list(result.victims)
            retry = scheduler.schedule_one(pod)
            if retry.scheduled:
                outcome.node, outcome.message = retry.node, ""
        outcomes.append(outcome)
    return outcomes
