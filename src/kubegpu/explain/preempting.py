"""A preemption already under way: the pod is nominated to a node where lower-priority pods are terminating.

kube-scheduler's DefaultPreemption evicts the victims it chose, sets the preemptor's ``status.nominatedNodeName``
and waits; while a lower-priority pod on the nominated node is still terminating, the next attempt does not
preempt again (default_preemption.go ``PodEligibleToPreemptOthers``: "not eligible due to a terminating pod on the
nominated node.", unless the nominated node became UnschedulableAndUnresolvable). The cluster's message is then
the one of the attempt that evicted them (1.37: "preemption: found a potential placement for pod on node N,
preempting K victims"; before 1.37 no preemption text), kubegpu's the next attempt's.
"""

from __future__ import annotations

from kubegpu.explain.wording import some_of
from kubegpu.model.objects import Pod
from kubegpu.model.snapshot import ClusterSnapshot


def terminating_victims(snapshot: ClusterSnapshot, pod: Pod) -> list[Pod]:
    """The lower-priority pods terminating on the pod's nominated node (none when it is not nominated)."""
    node = pod.nominated_node_name
    if not node or pod.node_name:
        return []
    return [p for p in snapshot.pods_on(node) if p.deletion_timestamp and p.priority < pod.priority]


def under_way(snapshot: ClusterSnapshot, pod: Pod) -> str:
    """One line saying the preemption for ``pod`` is under way, or "" when it is not."""
    victims = terminating_victims(snapshot, pod)
    if not victims:
        return ""
    return (
        f"the pod already preempted: it is nominated to {pod.nominated_node_name}, where "
        f"{some_of([v.key for v in victims])} (lower priority) "
        "are terminating, evicted for it; the cluster's message is from the attempt that evicted them, kubegpu's "
        "from the next one, which waits for them to go (not eligible due to a terminating pod on the nominated "
        "node)"
    )
