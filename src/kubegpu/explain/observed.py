"""What the cluster itself said about a Pending pod, beside kubegpu's prediction.

The scheduler that tried the pod wrote a ``FailedScheduling`` Event (``source.component``: who) and the
pod's ``PodScheduled`` condition (``Unschedulable``, same message). Other schedulers write their own reason
(``names.SCHEDULER_FAILURE_REASONS``: HAMi's extender ``FilteringFailed``, KAI ``Unschedulable``): for a pod
naming that scheduler, such an event is what the cluster said too. When the snapshot holds either, the
explanation shows it; when it differs from the prediction, the likely reasons are named from the data: the
event came from another scheduler, the release kubegpu reproduced is not the cluster's (messages differ
between minors), the event is older than the snapshot's state, or the message names a plugin or an
object kind kubegpu does not model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubegpu.explain import kai_events
from kubegpu.explain.hami_reads import hami_reads
from kubegpu.explain.preempting import under_way
from kubegpu.model.names import (
    FAILED_SCHEDULING,
    HAMI_NODE_REGISTER_ANNOTATION,
    HAMI_SCHEDULER,
    KAI_POD_GROUP_ANNOTATION,
    KAI_SCHEDULER,
    NODE_AUTOSCALER_EVENTS,
    PODGROUP_FAILURE_REASONS,
    SCHEDULER_FAILURE_REASONS,
)
from kubegpu.model.objects import Pod
from kubegpu.model.podgroup import VOLCANO_GROUP_ANNOTATION, parse_time
from kubegpu.model.records import Event
from kubegpu.model.snapshot import ClusterSnapshot

# Phrases of what kubegpu does not evaluate: scheduler extenders. (Every default in-tree filter is modelled,
# volume, pod affinity and topology spread ones included; a pod's own unmodelled constraints are named apart.)
UNMODELLED_PHRASES = ("extender",)


# HAMi's extender writes FilteringFailed "does not request any resource" for a pod that asks for none of the
# devices it manages, and then passes every node (pkg/scheduler/scheduler.go Filter): no filter failure.
NOT_A_FAILURE = {HAMI_SCHEDULER: ("does not request any resource",)}
# One attempt of a scheduler with an extender (HAMi) writes the extender's event, then kube-scheduler's
# FailedScheduling moments later; the extender's names the cause, the other counts nodes. Within this many
# seconds the two are taken as one attempt and the scheduler's own event is the one shown.
SAME_ATTEMPT_S = 5.0


@dataclass
class Observed:
    source: str  # "event" | "condition"
    reporter: str  # the event's source.component ("" for a condition)
    message: str
    when: str = ""
    agrees: bool | None = None  # None: nothing to compare (the prediction is no message)
    why: list[str] = field(default_factory=list)
    # the event's reason (FailedScheduling, or the pod's scheduler's own); "" for a condition
    reason: str = ""
    about: str = ""  # the object the event is about when it is not the pod: "PodGroup ns/name"

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "reporter": self.reporter or None, "reason": self.reason or None,
                "message": self.message, "when": self.when or None, "agrees": self.agrees,
                "likelyReasons": self.why, "about": self.about or None}  # fmt: skip


def _own_failure(pod: Pod, e: Event) -> bool:
    """``e`` is the pod's own scheduler's word that it could not place the pod (``SCHEDULER_FAILURE_REASONS``):
    its reason, written by that scheduler (or by no one named)."""
    reason = SCHEDULER_FAILURE_REASONS.get(pod.scheduler_name)
    return (
        reason is not None
        and e.reason == reason
        and e.component in ("", pod.scheduler_name)
        and not any(phrase in e.message for phrase in NOT_A_FAILURE.get(pod.scheduler_name, ()))
    )


def _later(a: Event, b: Event) -> float | None:
    """Seconds ``a`` was last seen after ``b``; None when either time is not an RFC 3339 time."""
    at, bt = parse_time(a.last_seen), parse_time(b.last_seen)
    return None if at is None or bt is None else (at - bt).total_seconds()


def seen(snapshot: ClusterSnapshot, pod: Pod) -> Observed | None:
    """The newest event saying the pod could not be placed, else its PodScheduled=False condition.

    The events are FailedScheduling (any scheduler's, not a node autoscaler's: ``explain.autoscalers``) and the own reason of the scheduler the pod names
    (``_own_failure``). Between the newest of each, the scheduler's own wins unless the FailedScheduling is
    later by more than ``SAME_ATTEMPT_S`` (a later attempt it did not write for)."""
    failed: Event | None = None
    own: Event | None = None
    for e in snapshot.records.events_about("Pod", pod.namespace, pod.name):
        if (
            e.component in NODE_AUTOSCALER_EVENTS
        ):  # Karpenter's FailedScheduling: not a scheduler (autoscalers)
            continue
        if e.reason == FAILED_SCHEDULING:
            failed = e if failed is None or e.last_seen > failed.last_seen else failed
        elif _own_failure(pod, e):
            own = e if own is None or e.last_seen > own.last_seen else own
    chosen: Event | None = own or failed
    if own is not None and failed is not None:
        gap = _later(failed, own)
        later = gap > SAME_ATTEMPT_S if gap is not None else failed.last_seen > own.last_seen
        chosen = failed if later else own
    if chosen is not None:
        return Observed("event", chosen.component, chosen.message, chosen.last_seen, reason=chosen.reason)
    group = _group_refusal(snapshot, pod)
    if group is not None:
        return Observed(
            "event", group.component, group.message, group.last_seen, reason=group.reason,
            about=f"PodGroup {pod.namespace}/{group.object_name}",
        )  # fmt: skip
    cond = pod.scheduled_condition
    if cond and cond[0] == "False" and cond[2]:
        return Observed("condition", "", cond[2])
    return None


def _group_refusal(snapshot: ClusterSnapshot, pod: Pod) -> Event | None:
    """The newest refusal the pod's gang scheduler wrote on the pod's PodGroup (``PODGROUP_FAILURE_REASONS``),
    for a pod with no event of its own: KAI writes a PodGroup's "Unable to schedule podgroup: …" there
    (kai-scheduler/KAI-Scheduler#1876 posted only that one), Volcano its enqueue refusals ("queue resource
    quota insufficient") and the gang's "… unschedulable" summary. A KAI pod's group events are
    ``kai_events.group_events`` (its pod-group-name, else PodGroup events naming it); a Volcano pod's group is
    its scheduling.k8s.io/group-name annotation."""
    reason = PODGROUP_FAILURE_REASONS.get(pod.scheduler_name)
    if reason is None:
        return None
    name = pod.annotations.get(KAI_POD_GROUP_ANNOTATION) or pod.annotations.get(VOLCANO_GROUP_ANNOTATION)
    if pod.scheduler_name == KAI_SCHEDULER:  # by its pod-group-name, else a PodGroup event naming the pod
        events = kai_events.group_events(snapshot, pod)
    elif name:
        events = snapshot.records.events_about("PodGroup", pod.namespace, name)
    else:
        return None
    said = [e for e in events if e.reason == reason and e.component in ("", pod.scheduler_name)]
    return max(said, key=lambda e: e.last_seen) if said else None


def _filters_part(message: str) -> str:
    """The message less its preemption sentence (``… preemption: …`` since 1.26)."""
    return message.split(" preemption:", 1)[0].strip()


def compare(
    snapshot: ClusterSnapshot, pod: Pod, obs: Observed, predicted: str, schedulable: bool, modelled: str
) -> Observed:
    """Fill ``agrees`` and ``why`` (the likely reasons for a difference)."""
    if obs.reporter and obs.reporter != modelled:
        obs.agrees = False if predicted or schedulable else None
        obs.why.append(
            f"the message was written by {obs.reporter}, not by the {modelled} kubegpu reproduces: another "
            "scheduler's words and rules"
        )
        if obs.reporter == HAMI_SCHEDULER and "node unregistered" in obs.message:
            bare = hami_reads(snapshot).unregistered  # read once per snapshot, not per pod
            obs.why.append(
                f"hami-scheduler counts only nodes whose HAMi device plugin wrote the {HAMI_NODE_REGISTER_ANNOTATION} "
                f"annotation; {', '.join(bare) or 'no node'} lack{'s' if len(bare) == 1 else ''} it: the "
                "hami-device-plugin pod is not running or not registering there (its DaemonSet selects nodes "
                "labelled gpu=on)"
            )
        return obs
    if not predicted and not schedulable:
        return obs
    if schedulable:
        obs.agrees = False
    else:
        obs.agrees = obs.message.strip() == predicted.strip()
        if not obs.agrees and _filters_part(obs.message) == _filters_part(predicted):
            obs.why.append("the node reasons agree; only the preemption sentence differs")
            if line := under_way(snapshot, pod):
                obs.why.append(line)
                return obs  # the difference is explained: no other guess applies
    if obs.agrees:
        return obs
    unmodelled = [p for p in UNMODELLED_PHRASES if p in obs.message]
    if unmodelled or pod.unmodelled_constraints:
        named = ", ".join([*pod.unmodelled_constraints, *unmodelled])
        obs.why.append(f"a plugin or object kubegpu does not model decided it ({named})")
    if snapshot.kube_version:
        how = f", chosen from {snapshot.kube_version_from}" if snapshot.kube_version_from else ""
        obs.why.append(
            f"kubegpu reproduced kube-scheduler {snapshot.kube_version}{how}; another release words and counts "
            "some reasons differently (`--kube-version` to match the cluster)"
        )
    when = f" (the event is from {obs.when})" if obs.when else ""
    obs.why.append(
        f"the cluster changed between the scheduler's attempt and the snapshot{when}: pods finished or started, "
        "nodes joined, left or changed"
    )
    return obs
