"""Kueue admission (kueue.x-k8s.io) as the snapshot's Workload, LocalQueue, ClusterQueue and ResourceFlavor
objects record it: why a pod Kueue gates, or a Workload whose pods Kueue has not let be created, waits.

kubegpu does not reproduce Kueue's scheduler: it reads what Kueue wrote. A Workload's ``QuotaReserved``
condition (False) carries Kueue's reason and message, quoted as Kueue wrote them; its quota shortfalls are
read for their numbers (``kueue_objects.parse_shortfalls``). "Insufficient unused quota" means the
ClusterQueue's quota could hold the Workload but that much is in use: it waits, preempts, borrows or needs
more quota. "> maximum capacity" means more than the ClusterQueue can ever get in that flavor, borrowing
included: Kueue returns no fit before it considers preemption (flavorassigner.go ``fitsResourceQuota``), so
waiting does not help.

Queue problems come as whole messages (pkg/controller/core/workload_controller.go ``getQueueBlocker``,
pkg/scheduler/scheduler.go): ``LocalQueue <lq> doesn't exist`` / ``is inactive`` / ``is stopped``,
``ClusterQueue <cq> doesn't exist`` / ``not found`` / ``is inactive`` / ``is stopped``, with reason
``Inadmissible`` (before 0.19, or with its feature gate UnadmittedWorkloadsObservability off) or
``Misconfigured`` / ``Suspended`` (0.19+, kueue#12510; pkg/features/kube_features.go). A Workload whose quota
is reserved but which is not ``Admitted`` waits for its admission checks (``status.admissionChecks``). One
with no condition has not been attempted (a StrictFIFO ClusterQueue tries only its head: Kueue docs,
tasks/troubleshooting/troubleshooting_jobs.md). v1beta1 and v1beta2 read alike, but for the ClusterQueue's
cohort: ``spec.cohort`` (v1beta1), ``spec.cohortName`` (v1beta2).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubegpu.explain.kubectl import kubectl, mutate
from kubegpu.explain.kueue_objects import (
    Shortfall,
    as_list,
    conditions,
    flavor_nodes,
    has_kueue_objects,
    kueue_index,
    kueue_objects,
    name_of,
    ns_of,
    parse_shortfalls,
    spec_of,
    status_of,
)
from kubegpu.explain.wording import some_of
from kubegpu.model.names import KUEUE_POD_GROUP_LABEL, KUEUE_PREBUILT_WORKLOAD_LABEL, KUEUE_QUEUE_LABEL
from kubegpu.model.objects import Pod
from kubegpu.model.quantity import QuantityError, format_milli, to_milli_text
from kubegpu.model.records import KUEUE_GROUP
from kubegpu.model.snapshot import ClusterSnapshot

# a finding's object naming a Kueue Workload: workload.kueue.x-k8s.io/<ns>/<name>
WORKLOAD_REF = f"workload.{KUEUE_GROUP}/"
# what to add to a snapshot that holds no Kueue object
KUEUE_GET = (
    f"kubectl get workloads.{KUEUE_GROUP},localqueues.{KUEUE_GROUP},clusterqueues.{KUEUE_GROUP},"
    f"resourceflavors.{KUEUE_GROUP} -A -o yaml"
)

_PREEMPTING = re.compile(r"Pending the preemption of (\d+) workload\(s\)")
_LQ_MISSING = re.compile(r"^LocalQueue (\S+) (doesn't exist|is terminating or missing)")
_LQ_HELD = re.compile(r"^LocalQueue (\S+) is (inactive|stopped)")
_CQ_MISSING = re.compile(r"^ClusterQueue (\S+) (doesn't exist|not found|is terminating or missing)")
_CQ_HELD = re.compile(r"^ClusterQueue (\S+) is (inactive|stopped)")


def workload_for(snapshot: ClusterSnapshot, pod: Pod) -> Mapping[str, Any] | None:
    """The Kueue Workload of ``pod``: one owned by the pod or its controller (a plain pod, a Job's pods once
    admitted), or, for a plain-pod group, the one named after the group (Kueue names it so and owns it by
    every pod of the group), or the prebuilt Workload the pod names."""
    owners = {("Pod", pod.name)}
    if pod.owner is not None:
        owners.add((pod.owner.kind, pod.owner.name))
    named = (pod.labels.get(KUEUE_POD_GROUP_LABEL), pod.labels.get(KUEUE_PREBUILT_WORKLOAD_LABEL))
    index = kueue_index(snapshot)
    found = [index.by_name.get((pod.namespace, n)) for n in named if n]
    found += [index.by_owner.get((pod.namespace, kind, name)) for kind, name in owners]
    hits = [f for f in found if f is not None]
    return min(hits, key=lambda f: f[0])[1] if hits else None  # the first in snapshot order, as a scan


@dataclass
class KueueReading:
    """What the Kueue objects say of one Workload (or of a gated pod that has none)."""

    workload: str = ""  # "ns/name", "" when the snapshot holds none for the pod
    namespace: str = ""
    local_queue: str = ""
    cluster_queue: str = ""
    # no-kueue-objects, no-workload, not-attempted, deactivated, queue-missing, queue-inactive, quota,
    # quota-never (a pod set past its maximum), not-reserved, admission-checks, admission-check-failed,
    # admitted, finished
    state: str = ""
    condition: str = ""  # "QuotaReserved=False, reason Pending"
    message: str = ""  # Kueue's message, verbatim
    shortfalls: list[Shortfall] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)  # what kubegpu read in the queue objects themselves
    advice: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    objects: list[str] = field(default_factory=list)

    def headline(self) -> str:
        """``(LocalQueue a → ClusterQueue b): <Kueue's condition and message, then the facts>``."""
        where = f"LocalQueue {self.local_queue}" if self.local_queue else "no queue-name label"
        where += f" → ClusterQueue {self.cluster_queue}" if self.cluster_queue else ""
        said = (
            f'Workload {self.workload} {self.condition}: Kueue wrote "{self.message}"'
            if self.message
            else (f"Workload {self.workload} {self.condition}" if self.workload else self.condition)
        )
        return f"({where}): " + "; ".join(p for p in [said, *self.facts] if p)

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload or None, "localQueue": self.local_queue or None,
            "clusterQueue": self.cluster_queue or None, "state": self.state, "condition": self.condition or None,
            "message": self.message or None, "shortfalls": [s.to_dict() for s in self.shortfalls],
            "facts": self.facts, "advice": self.advice, "commands": self.commands, "objects": self.objects,
        }  # fmt: skip


# the diagnose summary's cause per state (pods alike in state are one cause)
_CAUSES = {
    "quota": "waiting for Kueue admission: ClusterQueue quota in use",
    "quota-never": "Kueue cannot admit it: the request exceeds the ClusterQueue's maximum",
    "queue-missing": "Kueue cannot admit it: its LocalQueue or ClusterQueue does not exist",
    "queue-inactive": "Kueue cannot admit it: its LocalQueue or ClusterQueue is inactive",
    "admission-checks": "waiting for Kueue admission checks",
    "admission-check-failed": "a Kueue admission check failed: quota released, Workload requeued",
    "admitted": "admitted by Kueue, but still gated",
    "deactivated": "Kueue Workload deactivated",
}


def cause(reading: KueueReading) -> str:
    return _CAUSES.get(reading.state, "waiting for Kueue admission")


def read_pod(snapshot: ClusterSnapshot, pod: Pod) -> KueueReading:
    """The reading for a pod Kueue manages (gated, or labelled with a queue)."""
    wl = workload_for(snapshot, pod)
    if wl is not None:
        r = read_workload(snapshot, wl)
        if not r.local_queue and pod.labels.get(KUEUE_QUEUE_LABEL):
            r.local_queue = pod.labels[KUEUE_QUEUE_LABEL]
        return r
    r = KueueReading(namespace=pod.namespace, local_queue=pod.labels.get(KUEUE_QUEUE_LABEL, ""))
    _queue_facts(snapshot, r)
    if not has_kueue_objects(snapshot):
        r.state = "no-kueue-objects"
        r.condition = (
            "the snapshot holds no Kueue object (Workload, LocalQueue, ClusterQueue): why Kueue has not admitted "
            "the pod is not known here; not modelled, not assumed fine"
        )
        r.advice.append(f"take the Kueue objects into the snapshot too ({KUEUE_GET}) and run again")
        r.commands.append(KUEUE_GET)
    else:
        r.state = "no-workload"
        r.condition = (
            "no Workload in the snapshot belongs to this pod: Kueue has not created one (for a pod group, not "
            f"until all {KUEUE_POD_GROUP_LABEL} members exist), or the snapshot missed it"
        )
        r.commands.append(f"kubectl -n {pod.namespace} get workloads.{KUEUE_GROUP} -o wide")
    return r


def read_workload(snapshot: ClusterSnapshot, wl: Mapping[str, Any]) -> KueueReading:
    ns, name = ns_of(wl), name_of(wl)
    admission = status_of(wl).get("admission")
    admitted_in = str(admission.get("clusterQueue", "")) if isinstance(admission, Mapping) else ""
    r = KueueReading(
        workload=f"{ns}/{name}", namespace=ns, local_queue=str(spec_of(wl).get("queueName") or "")
    )
    r.cluster_queue = admitted_in
    r.objects.append(f"{WORKLOAD_REF}{ns}/{name}")
    r.commands.append(f"kubectl -n {ns} get workloads.{KUEUE_GROUP} {name} -o yaml")
    _queue_facts(snapshot, r)
    conds = conditions(wl)
    quota, admitted = conds.get("QuotaReserved"), conds.get("Admitted")
    if conds.get("Finished", {}).get("status") == "True":
        r.state, r.condition = "finished", "is Finished"
        return r
    if spec_of(wl).get("active") is False:
        r.state = "deactivated"
        r.condition = "has spec.active: false (deactivated)"
        r.advice.append(
            "Kueue does not admit a deactivated Workload: set spec.active back to true to queue it again"
        )
    elif admitted is not None and admitted.get("status") == "True":
        r.state = "admitted"
        r.condition = (
            "is admitted: Kueue should remove the gate; while it stays, see Kueue's log (another admission webhook "
            "can refuse Kueue's pod update: kueue#9492)"
        )
    elif quota is not None and quota.get("status") == "True":
        _checks(wl, r)
    elif quota is not None:
        r.condition = f"QuotaReserved=False, reason {quota.get('reason', '')}"
        r.message = str(quota.get("message", ""))
        if not _failed_checks(wl, r):
            _not_reserved(snapshot, r)
    else:
        r.state = "not-attempted"
        r.condition = "has no QuotaReserved condition: Kueue has not attempted it yet"
        r.advice.append(
            "a StrictFIFO ClusterQueue attempts only its head, so Workloads behind it carry no condition "
            "(Kueue docs, Troubleshooting Jobs): look at the ClusterQueue's pending head"
        )
    evicted = conds.get("Evicted")
    if evicted is not None and evicted.get("status") == "True":
        r.facts.append(f'Evicted ({evicted.get("reason", "")}): Kueue wrote "{evicted.get("message", "")}"')
    return r


def _checks(wl: Mapping[str, Any], r: KueueReading) -> None:
    """Quota reserved, not admitted: the admission checks still pending (ProvisioningRequest, MultiKueue)."""
    r.state, r.condition = "admission-checks", "has its quota reserved, but is not Admitted"
    waiting = [c for c in as_list(status_of(wl).get("admissionChecks")) if c.get("state") != "Ready"]
    for c in waiting:
        msg = f': "{c.get("message")}"' if c.get("message") else ""
        r.facts.append(f"admission check {c.get('name', '')} is {c.get('state', '')}{msg}")
    if waiting:
        r.advice.append(
            "Kueue admits it when every admission check is Ready; read the check's controller "
            "(ProvisioningRequest: the cluster autoscaler's ProvisioningRequest; MultiKueue: the worker clusters)"
        )


def _failed_checks(wl: Mapping[str, Any], r: KueueReading) -> bool:
    """Quota released because an admission check failed: a check in state Retry makes Kueue evict the Workload
    ("At least one admission check is false", reason AdmissionCheck), free its quota and queue it again; one
    in state Rejected makes Kueue deactivate it (pkg/controller/core/workload_controller.go
    reconcileCheckBasedEviction). The check's message is its controller's reason, the one to act on: Kueue's
    own QuotaReserved message ("The workload has failed admission checks") names none (kueue#5129)."""
    failed = [
        c
        for c in as_list(status_of(wl).get("admissionChecks"))
        if c.get("state") in ("Retry", "Rejected") or str(c.get("message", "")).endswith("Previously: Retry")
    ]
    if not failed:
        return False
    r.state = "admission-check-failed"
    for c in failed:
        msg = f': "{c.get("message")}"' if c.get("message") else ": no message"
        r.facts.append(f"admission check {c.get('name', '')} is {c.get('state', '')}{msg}")
        r.commands.append(f"kubectl get admissionchecks.{KUEUE_GROUP} {c.get('name', '')} -o yaml")
    names = ", ".join(str(c.get("name", "")) for c in failed)
    r.advice.append(
        f"the cause is admission check {names}'s message, written by its controller (a ProvisioningRequest check: "
        "the cluster autoscaler's answer, e.g. a node pool at its maximum size needs a higher maximum or capacity "
        "elsewhere): fix that. On Retry Kueue has evicted the Workload, released its quota and queues it again "
        "(the check's controller retries; a ProvisioningRequestConfig's retryStrategy sets how often); a Rejected "
        "check makes Kueue deactivate the Workload (spec.active: false), which must then be set back to true"
    )
    return True


def _not_reserved(snapshot: ClusterSnapshot, r: KueueReading) -> None:
    msg = r.message
    preempting = _PREEMPTING.search(msg)
    if m := _LQ_MISSING.match(msg):
        r.state = "queue-missing"
        others = sorted(kueue_index(snapshot).local_queue_names.get(r.namespace, []))
        have = (
            f"LocalQueues in {r.namespace}: {some_of(others)}"
            if others
            else f"no LocalQueue in {r.namespace} in the snapshot"
        )
        r.advice.append(
            f"create LocalQueue {m.group(1)} in {r.namespace} (spec.clusterQueue naming a ClusterQueue), or fix "
            f"the {KUEUE_QUEUE_LABEL} label of the job to an existing one ({have})"
        )
    elif m := _LQ_HELD.match(msg):
        r.state = "queue-inactive"
        r.advice.append(
            f"LocalQueue {m.group(1)} is held: its spec.stopPolicy must be None for Kueue to admit from it"
        )
    elif m := _CQ_MISSING.match(msg):
        r.state = "queue-missing"
        r.advice.append(
            f"create ClusterQueue {m.group(1)}, or point LocalQueue {r.local_queue} (spec.clusterQueue) at one that exists"
        )
    elif m := _CQ_HELD.match(msg):
        r.state = "queue-inactive"
        cq = _cluster_queue(snapshot, m.group(1))
        why = str(conditions(cq).get("Active", {}).get("reason", "")) if cq is not None else ""
        r.advice.append(
            f"ClusterQueue {m.group(1)} admits nothing while inactive: "
            + _INACTIVE_FIX.get(
                why,
                "its Active condition says why (missing ResourceFlavors or AdmissionChecks, "
                "or spec.stopPolicy not None)",
            )
            + "; once it is Active, Kueue retries the Workload"
        )
    else:
        r.shortfalls = parse_shortfalls(msg)
        # a pod set whose every listed flavor is past its maximum never fits, so neither does the Workload
        never = {s.pod_set for s in r.shortfalls if s.never_fits} - {
            s.pod_set for s in r.shortfalls if not s.never_fits
        }
        r.state = ("quota-never" if never else "quota") if r.shortfalls else "not-reserved"
        _quota_advice(snapshot, r)
    if preempting:
        r.facts.append(
            f"Kueue is preempting {preempting.group(1)} workload(s) for it: it is admitted once they are gone"
        )


# what makes an inactive ClusterQueue active again, by its Active condition's reason
# (apis/kueue/v1beta2/clusterqueue_types.go ClusterQueueActiveReason*, pkg/cache/scheduler/clusterqueue.go)
_INACTIVE_FIX = {
    "FlavorNotFound": "create the ResourceFlavor(s) its Active condition names, or fix the names in spec.resourceGroups",
    "AdmissionCheckNotFound": "create the AdmissionCheck(s) its Active condition names, or remove them from the ClusterQueue",
    "AdmissionCheckInactive": "the AdmissionCheck(s) it names are inactive: see their controller",
    "Stopped": "its spec.stopPolicy is not None: set it to None to resume admission",
    "TopologyNotFound": "create the Topology its flavor's topologyName names",
}


def _queue_facts(snapshot: ClusterSnapshot, r: KueueReading) -> None:
    """The LocalQueue → ClusterQueue link and what their own objects say (missing, inactive, flavors)."""
    index = kueue_index(snapshot)
    lq = index.local_queue.get((r.namespace, r.local_queue))
    if lq is not None:
        r.cluster_queue = r.cluster_queue or str(spec_of(lq).get("clusterQueue", ""))
        r.objects.append(f"localqueue.{KUEUE_GROUP}/{r.namespace}/{r.local_queue}")
    elif r.local_queue and kueue_objects(snapshot, "LocalQueue"):
        r.facts.append(f"the snapshot has no LocalQueue {r.local_queue} in {r.namespace}")
    cq = _cluster_queue(snapshot, r.cluster_queue)
    if cq is None:
        if r.cluster_queue and kueue_objects(snapshot, "ClusterQueue"):
            r.facts.append(f"the snapshot has no ClusterQueue {r.cluster_queue}")
        return
    r.objects.append(f"clusterqueue.{KUEUE_GROUP}/{r.cluster_queue}")
    active = conditions(cq).get("Active")
    if active is not None and active.get("status") == "False":
        r.facts.append(
            f'ClusterQueue {r.cluster_queue} Active=False ({active.get("reason", "")}): Kueue wrote "{active.get("message", "")}"'
        )
    if kueue_objects(snapshot, "ResourceFlavor"):
        missing = sorted({f for f, _ in _flavor_resources(cq)} - index.flavor.keys())
        if missing:
            r.facts.append(
                f"no ResourceFlavor {', '.join(missing)} in the snapshot, though ClusterQueue {r.cluster_queue} names it"
            )


def _cluster_queue(snapshot: ClusterSnapshot, name: str) -> Mapping[str, Any] | None:
    return kueue_index(snapshot).cluster_queue.get(name) if name else None


def _flavor_resources(cq: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    return [
        (str(f.get("name", "")), res)
        for g in as_list(spec_of(cq).get("resourceGroups"))
        for f in as_list(g.get("flavors"))
        for res in as_list(f.get("resources"))
    ]


def _quota_path(cq: Mapping[str, Any], flavor: str, resource: str) -> tuple[str, Mapping[str, Any]] | None:
    """The JSON-patch path of ``flavor``'s ``resource`` quota in the ClusterQueue, and its entry."""
    for gi, g in enumerate(as_list(spec_of(cq).get("resourceGroups"))):
        for fi, f in enumerate(as_list(g.get("flavors"))):
            for ri, res in enumerate(as_list(f.get("resources"))):
                if f.get("name") == flavor and res.get("name") == resource:
                    return f"/spec/resourceGroups/{gi}/flavors/{fi}/resources/{ri}/nominalQuota", res
    return None


def _milli(resource: str, text: object) -> int | None:
    try:
        return to_milli_text(resource, text)
    except (QuantityError, ValueError, TypeError):
        return None


def _usage(cq: Mapping[str, Any], key: str, flavor: str, resource: str) -> str:
    """``status.flavorsReservation`` / ``flavorsUsage`` total of the flavor's resource ("" if not recorded)."""
    for f in as_list(status_of(cq).get(key)):
        if f.get("name") == flavor:
            for res in as_list(f.get("resources")):
                if res.get("name") == resource:
                    borrowed = res.get("borrowed")
                    return str(res.get("total", "0")) + (
                        f" (borrowed {borrowed})" if borrowed not in (None, "0", 0) else ""
                    )
    return ""


def _quota_advice(snapshot: ClusterSnapshot, r: KueueReading) -> None:
    """Facts per (flavor, resource) the message names, from the ClusterQueue and the flavor's nodes; advice
    per pod set that can never fit (then the others' waits are moot), else per resource short of unused
    quota; a nominalQuota patch where the flavor's nodes can hold the raised quota."""
    cq = _cluster_queue(snapshot, r.cluster_queue)
    if not r.shortfalls:
        r.advice.append("Kueue's message names no quota shortfall kubegpu reads; act on the message itself")
        return
    spec = spec_of(cq) if cq is not None else {}
    cohort = str(spec.get("cohortName") or spec.get("cohort") or "")  # v1beta2 / v1beta1
    policy = (
        f"by preempting lower-priority ones (spec.preemption withinClusterQueue {_preemption(spec, 'withinClusterQueue')}, "
        f"reclaimWithinCohort {_preemption(spec, 'reclaimWithinCohort')}), "
        if cq is not None
        else "by preemption or borrowing where the ClusterQueue allows them (it is not in the snapshot), "
    )
    rooms: dict[tuple[str, str], tuple[int, int] | None] = {}
    for s in r.shortfalls:
        if (s.flavor, s.resource) in rooms:
            continue
        rooms[s.flavor, s.resource] = room = flavor_nodes(snapshot, s.flavor, s.resource)
        if cq is None:
            r.facts.append(
                f"ClusterQueue {r.cluster_queue or '?'} is not in the snapshot: its quota is not known here"
            )
            break
        found = _quota_path(cq, s.flavor, s.resource)
        limit = found[1].get("borrowingLimit") if found else None
        quota = (
            f"nominalQuota {found[1].get('nominalQuota', '0')}"
            + (f", borrowingLimit {limit}" if limit is not None else "")
            if found
            else "no quota in the ClusterQueue"
        )
        reserved = _usage(cq, "flavorsReservation", s.flavor, s.resource)
        held = f", {reserved} reserved by admitted workloads" if reserved else ""
        nodes = (
            f"; its nodes hold {format_milli(s.resource, room[1])} on {room[0]} node(s)"
            if room is not None
            else (
                "; no node it selects advertises it (served through DRA, or a Kueue resource transformation's "
                "output): the quota is not checked against nodes"
                if s.flavor in kueue_index(snapshot).flavor
                else ""
            )
        )
        r.facts.append(f"flavor {s.flavor} {s.resource}: {quota}{held}{nodes}")
    borrow = (
        f"ClusterQueue {r.cluster_queue} is in cohort {cohort}: it borrows only what other ClusterQueues there "
        "leave unused, within its borrowingLimit"
        if cohort
        else (f"ClusterQueue {r.cluster_queue} has no cohort, so it cannot borrow" if cq is not None else "")
    )
    never = [ps for ps in dict.fromkeys(s.pod_set for s in r.shortfalls)
             if all(s.never_fits for s in r.shortfalls if s.pod_set == ps)]  # fmt: skip
    if never:
        for ps in never:
            parts = [s for s in r.shortfalls if s.pod_set == ps]
            counts = ", ".join(
                f"{s.flavor} {f'{s.previous} + {s.request}' if s.previous else s.request} > {s.maximum}"
                for s in parts
            )
            r.advice.append(
                f"pod set {ps} fits no flavor it may use ({parts[0].resource}: {counts}): the maximum is nominalQuota "
                f"plus what it may borrow{f' ({borrow})' if borrow else ''}, so no wait or preemption makes it fit. "
                "Raise nominalQuota or "
                "borrowingLimit there, add a flavor, or ask less"
            )
        if len({s.pod_set for s in r.shortfalls}) > 1 and not any(s.previous for s in r.shortfalls):
            r.advice.append(
                "The count includes what the pod sets before it take from the same flavor (Kueue ≤ 0.14 prints the "
                "sum as the request; 0.15 splits it, kueue#7232)"
            )
    else:
        short = " and ".join(
            " or ".join(
                f"{s.more_needed} more {res} in flavor {s.flavor}" for s in r.shortfalls if s.resource == res
            )
            for res in dict.fromkeys(s.resource for s in r.shortfalls)
        )
        r.advice.append(
            f"{short} must be unused in ClusterQueue {r.cluster_queue or '?'}. Kueue admits it when admitted "
            f"workloads finish, {policy}{f'by borrowing ({borrow}), ' if borrow and cq is not None else ''}or with "
            "more nominalQuota"
        )
    if cq is not None:
        for s in r.shortfalls:
            if s.never_fits or not never:
                _patch(r, cq, s, rooms[s.flavor, s.resource])


def _preemption(spec: Mapping[str, Any], key: str) -> str:
    p = spec.get("preemption")
    return str(p.get(key, "Never")) if isinstance(p, Mapping) else "Never"  # Kueue's default is Never


def _patch(r: KueueReading, cq: Mapping[str, Any], s: Shortfall, room: tuple[int, int] | None) -> None:
    """The nominalQuota raise that would cover the shortfall, dry-run first and its rollback, where the
    quota is in the ClusterQueue and the flavor's nodes can hold the new quota (beyond them the pods would
    only wait in kube-scheduler instead)."""
    found = _quota_path(cq, s.flavor, s.resource)
    if found is None:
        return
    path, entry = found
    old = _milli(s.resource, entry.get("nominalQuota", "0"))
    extra = (
        _milli(s.resource, s.more_needed)
        if not s.never_fits
        else _sub(
            _milli(s.resource, s.request),
            _milli(s.resource, s.maximum),
            _milli(s.resource, s.previous or "0"),
        )
    )
    if old is None or not extra:
        return
    new = old + extra
    if room is not None and new > room[1]:
        note = (
            f"a nominalQuota of {format_milli(s.resource, new)} {s.resource} in {s.flavor} is more than its nodes hold: "
            "Kueue would admit it and the pods would wait in kube-scheduler instead"
        )
        if note not in r.facts:
            r.facts.append(note)
        return

    def op(value: int) -> str:
        # no JSON-patch "test" of the old value: a CRD keeps a quantity as written (2 or "2"), and a test
        # compares JSON values exactly
        ops = [{"op": "replace", "path": path, "value": format_milli(s.resource, value)}]
        return f"patch clusterqueues.{KUEUE_GROUP} {r.cluster_queue} --type=json -p '{json.dumps(ops)}'"

    rollback = kubectl(r.namespace, op(old))
    patch = [*mutate(r.namespace, op(new)), f"# rollback: {rollback}"]
    if patch[1] not in r.commands:
        r.commands.extend(patch)


def _sub(request: int | None, maximum: int | None, previous: int | None) -> int | None:
    if request is None or maximum is None or previous is None:
        return None
    return max(previous + request - maximum, 0)
