"""What kai-scheduler wrote about a pod: the one rule every KAI reading uses to find its events.

kai-scheduler records a refusal on the pod (status_updater markTaskUnschedulable, reason Unschedulable) and
on the pod's PodGroup (markPodGroupUnschedulable / recordUnschedulablePodGroup: "Unable to schedule
podgroup: … for pod <ns>/<name> …"), with ``EventSource{Component: schedulerName}``. The pod's PodGroup is
the one its ``pod-group-name`` annotation names (KAI pkg/common/constants PodGroupAnnotationForPod, set by the
pod-grouper); a pod without it (hand-made snapshots) is matched to PodGroup events whose message names it as
``pod <ns>/<name>`` (whole: ``ns/name-2`` is another pod). An event with no component named is taken as
KAI's too, as ``explain.observed`` takes a scheduler's own reason.

The PodGroup events naming pods are indexed once per snapshot (``ClusterSnapshot.derived``), so a diagnosis
of many Pending KAI pods reads each pod's events by lookup, not by a scan of every event.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kubegpu.model.names import KAI_POD_GROUP_ANNOTATION, KAI_SCHEDULER
from kubegpu.model.objects import Pod
from kubegpu.model.records import Event
from kubegpu.model.snapshot import ClusterSnapshot

# "pod <ns>/<name>" in a PodGroup message: the whole key (a longer name is another pod's)
_NAMED = re.compile(r"\bpod ([\w.-]+/[\w.-]+)")


def by_kai(e: Event) -> bool:
    """Written by kai-scheduler, or by no one named."""
    return e.component in ("", KAI_SCHEDULER)


@dataclass(frozen=True)
class _KaiIndex:
    order: dict[int, int]  # id(event) → its place in the snapshot's events
    named: dict[str, list[Event]]  # pod key → KAI's PodGroup events naming it, in snapshot order


def _index(events: list[Event]) -> _KaiIndex:
    order: dict[int, int] = {}
    named: dict[str, list[Event]] = {}
    for i, e in enumerate(events):
        order[id(e)] = i
        if e.kind == "PodGroup" and by_kai(e):
            for key in dict.fromkeys(_NAMED.findall(e.message)):
                named.setdefault(key, []).append(e)
    return _KaiIndex(order, named)


def _kai_index(snapshot: ClusterSnapshot) -> _KaiIndex:
    events = snapshot.records.events
    return snapshot.derived("kai-events", lambda: _index(events), over=(events,))


def group_events(snapshot: ClusterSnapshot, pod: Pod) -> list[Event]:
    """kai-scheduler's events on the pod's PodGroup, in snapshot order."""
    group = pod.annotations.get(KAI_POD_GROUP_ANNOTATION)
    if group:
        return [e for e in snapshot.records.events_about("PodGroup", pod.namespace, group) if by_kai(e)]
    named = _kai_index(snapshot).named.get(pod.key, [])
    return [e for e in named if e.object_namespace in ("", pod.namespace)]


def events(snapshot: ClusterSnapshot, pod: Pod) -> list[Event]:
    """kai-scheduler's events about the pod: its own and its PodGroup's, in snapshot order."""
    own = [e for e in snapshot.records.events_about("Pod", pod.namespace, pod.name) if by_kai(e)]
    group = group_events(snapshot, pod)
    if not own or not group:
        return own or group
    order = _kai_index(snapshot).order
    return sorted([*own, *group], key=lambda e: order[id(e)])
