"""Workloads: the unit a queue admits — one pod, or a gang of pods admitted all together (R9.1, R14.2).

A pod belongs to a gang as ``model.podgroup.group_key`` says (Volcano annotation, coscheduling label or
kubegpu label); the gang's ``minMember`` comes from its PodGroup object (or 1 without one). A workload's queue is the pod's
``kubegpu.io/queue`` label, else the PodGroup's ``spec.queue`` (Volcano), else ``default``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kubegpu.batch.objects import DEFAULT_QUEUE, QUEUE_LABEL, PodGroup
from kubegpu.model.objects import Pod
from kubegpu.model.podgroup import group_key
from kubegpu.model.resources import ResourceList, add


@dataclass(frozen=True)
class Workload:
    key: str  # "ns/pod" for a single pod, "ns/group" for a gang
    queue: str
    pods: tuple[Pod, ...]
    min_member: int = 1
    gang: bool = False

    @property
    def priority(self) -> int:
        return max(p.priority for p in self.pods)

    @property
    def created(self) -> str:
        return min(p.creation_timestamp for p in self.pods)

    @property
    def requests(self) -> ResourceList:
        total: ResourceList = {}
        for p in self.pods:
            total = add(total, p.requests)
        return total

    @property
    def admitted(self) -> bool:
        """Placed already: every pod of it is bound (a gang is admitted whole or not at all)."""
        return all(p.node_name for p in self.pods)


def workloads(pods: Iterable[Pod], groups: Mapping[str, PodGroup]) -> list[Workload]:
    """Group non-terminal pods into workloads, in a stable order."""
    singles: list[Workload] = []
    gangs: dict[str, list[Pod]] = {}
    for pod in pods:
        if pod.is_terminal:
            continue
        key = group_key(pod)
        if key is None:
            singles.append(Workload(pod.key, pod.labels.get(QUEUE_LABEL, DEFAULT_QUEUE), (pod,)))
        else:
            gangs.setdefault(key, []).append(pod)
    out = list(singles)
    for key, members in gangs.items():
        group = groups.get(key)
        queue = members[0].labels.get(QUEUE_LABEL) or (group.queue if group else "") or DEFAULT_QUEUE
        out.append(
            Workload(
                key,
                queue,
                tuple(sorted(members, key=lambda p: p.name)),
                group.min_member if group else 1,
                True,
            )
        )
    return out
