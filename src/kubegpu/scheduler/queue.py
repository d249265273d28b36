"""Queue order: upstream's PrioritySort (higher ``spec.priority`` first, then the earlier queue time).

kube-scheduler's active queue pops the pod its QueueSort plugin ranks first; PrioritySort compares
priority, then the time the pod entered the queue. For a snapshot kubegpu uses the pod's
``creationTimestamp`` as that time (the closest recorded fact), then its position in the input.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubegpu.model.objects import Pod


def priority_sort(pods: Iterable[Pod]) -> list[Pod]:
    indexed = list(enumerate(pods))
    indexed.sort(key=lambda ip: (-ip[1].priority, ip[1].creation_timestamp, ip[0]))
    return [p for _, p in indexed]
