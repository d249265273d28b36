"""An answer, not a dump: the diagnosis of a large cluster as a headline, groups and counts (issue 25).

Built from a ``Diagnosis`` (nothing is evaluated again): a headline (GPU nodes, GPUs, requested, free,
Pending GPU pods, the top causes with their pod counts, the first thing to do); Pending GPU pods grouped
by *shape* (the devices they ask for and where they may run; their CPU and memory shown as ranges) and
*cause* (the reason that rules out the most of the nodes the pod's selector admits), each group with
per-reason node counts (most first) and the few nearest-miss nodes of its first pod; blocked groups and
causes before the pods that fit now; node groups by pool and GPU product,
with anomalies (NotReady, cordoned, more requested than allocatable) listed one by one. The per-pod and
per-node detail stays in the ``Diagnosis`` (``--pod``, ``--node``, ``--all``, ``-o json``).

May import the model and ``explain``'s own result types; never a face (cli, live, report).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from kubegpu.explain.diagnose import HAMI_TOTAL, MIG_SINGLE_TOTAL, SHARED_TOTAL, Diagnosis
from kubegpu.explain.dra_inventory import DRA_ROWS, claim_phrase
from kubegpu.explain.explanation import NodeList
from kubegpu.explain.findings import Finding
from kubegpu.explain.findings_bound import is_bound_finding
from kubegpu.explain.findings_volcano import PODGROUP_REF
from kubegpu.explain.kueue import WORKLOAD_REF
from kubegpu.explain.kueue import cause as kueue_cause
from kubegpu.explain.overview import NodeRow
from kubegpu.explain.pending import Explanation, NodeEvidence
from kubegpu.explain.wording import some_of
from kubegpu.model.dra import DraObjects
from kubegpu.model.gpu_facts import kai_annotations, tolerates_gpu_taint
from kubegpu.model.names import MIG_RESOURCE_PREFIX
from kubegpu.model.objects import NodeSelectorTerm, Pod, Requirement
from kubegpu.model.quantity import format_milli, format_milli_range
from kubegpu.model.resources import CPU, MEMORY, is_gpu, other_vendor_gpu
from kubegpu.scheduler.reasons import AffinityMismatch, Insufficient, render

# kube-scheduler's NodeAffinity filter reason (pkg/scheduler/framework/plugins/nodeaffinity, ErrReasonPod)
SELECTOR_MISMATCH = render(AffinityMismatch())  # the formatter's text (the same in every minor)
NEAREST_MISSES = 3  # nodes shown per group: the ones closest to fitting
HEADLINE_CAUSES = 5  # causes a headline shows before "… N more" (``Summary.headline_causes``)
SCHEDULABLE_NOW = "schedulable now"  # the cause of a Pending pod that fits now
# a Pending pod that fits by the modelled plugins, on the strength of something kubegpu does not model (an
# unevaluated CEL selector, a DeviceTaintRule of a buggy patch release, an unknown scheduler's rules…)
FITS_UNVERIFIED = "fits by kubegpu's model, unverified"
PREEMPTS = "would preempt lower-priority pods"  # no node fits, but DefaultPreemption finds victims
PREEMPTING = "preemption under way"  # it preempted: its victims are terminating on its nominated node


@dataclass
class ReasonCount:
    reason: str
    nodes: int
    fix: str


@dataclass(frozen=True, slots=True)
class PodAsk:
    """What a Pending pod asks for. The grouping key is its devices and where it may run; CPU and memory
    (milli-units, 0 = not asked) vary from pod to pod among pods held back by the same thing, so a group
    shows them as ranges instead of splitting into one group per distinct request."""

    devices: str  # "8 nvidia.com/gpu"
    where: str = ""  # "cloud.google.com/gke-nodepool=train, tolerates the GPU taint"
    cpu: int = 0
    memory: int = 0
    # the GPU resources it requests (milli-units), for its group's nearest misses: not part of the key
    # (``devices`` says the same in words)
    gpus: tuple[tuple[str, int], ...] = field(default=(), compare=False)


@dataclass
class PendingGroup:
    shape: str  # "8 nvidia.com/gpu, cpu 96, memory 128Gi on cloud.google.com/gke-nodepool=train"
    cause: str  # the reason that rules out the most nodes, or SCHEDULABLE_NOW
    pods: list[str]  # namespace/name, in diagnose order
    message: str  # the scheduler's message for the group's first pod
    reasons: list[ReasonCount]
    nearest: list[NodeEvidence]  # nodes failing on resources only, closest first
    fix: str = ""

    def namespaces(self) -> Counter[str]:
        return Counter(p.split("/", 1)[0] for p in self.pods)

    def to_dict(self) -> dict[str, Any]:
        return {
            "shape": self.shape, "cause": self.cause, "count": len(self.pods), "pods": self.pods,
            "namespaces": dict(sorted(self.namespaces().items())), "message": self.message,
            "reasons": [{"reason": r.reason, "nodes": r.nodes, "fix": r.fix} for r in self.reasons],
            "nearestMisses": [n.to_dict() for n in self.nearest], "fix": self.fix,
        }  # fmt: skip


@dataclass
class NodeGroup:
    pool: str
    product: str
    resource: str
    nodes: int = 0
    allocatable: int = 0
    requested: int = 0
    free: int = 0
    largest_free: int = 0
    nodes_with_largest: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "pool": self.pool, "product": self.product, "resource": self.resource, "nodes": self.nodes,
            "allocatable": self.allocatable, "requested": self.requested, "free": self.free,
            "largestFreeBlock": self.largest_free, "nodesWithLargestFreeBlock": self.nodes_with_largest,
        }  # fmt: skip


@dataclass
class Summary:
    gpu_nodes: int
    gpus: int  # allocatable, every GPU resource but MIG devices summed as whole devices
    requested: int
    free: int
    pending: int
    other_pending: int
    causes: list[tuple[str, int]]  # cause → pods, most pods first
    first_step: str
    groups: list[PendingGroup]
    node_groups: list[NodeGroup]
    anomalies: list[tuple[str, str]] = field(default_factory=list)  # (node, what is wrong)
    # MIG devices (nvidia.com/mig-*, DRA's mig rows): allocatable, requested, free. Slices of GPUs, not
    # more GPUs: 8 H100 in 7 slices each read as 56 "GPUs"
    mig: tuple[int, int, int] = (0, 0, 0)
    # shared GPU replicas (time-slicing/MPS: diagnose.SHARED_TOTAL), the same three: units of shared GPUs
    shared: tuple[int, int, int] = (0, 0, 0)
    # HAMi's vGPU slots (diagnose.HAMI_TOTAL), the same three, and the physical GPUs they are made of
    vgpu: tuple[int, int, int] = (0, 0, 0)
    vgpu_gpus: int = 0
    vgpu_unread: int = (
        0  # HAMi nodes whose register annotation kubegpu could not read: their GPUs not counted
    )

    def headline_causes(self) -> list[tuple[str, int]]:
        """The causes a headline shows: all of them, or the first ``HEADLINE_CAUSES`` where more would follow
        (the rest said in one line: a "1 more" line would take the line the cause itself needs)."""
        return self.causes if len(self.causes) <= HEADLINE_CAUSES + 1 else self.causes[:HEADLINE_CAUSES]

    def devices_line(self) -> str:
        """The headline's first clause: GPU nodes, GPUs and (where there are any) MIG devices."""
        line = f"{self.gpu_nodes} GPU nodes, {self.gpus} GPUs allocatable, {self.requested} requested, {self.free} free"
        if self.mig[0] or self.mig[1]:
            line += f"; {self.mig[0]} MIG devices allocatable, {self.mig[1]} requested, {self.mig[2]} free"
        if self.shared[0] or self.shared[1]:
            line += f"; {self.shared[0]} shared GPU replicas allocatable, {self.shared[1]} requested, {self.shared[2]} free"
        if self.vgpu[0] or self.vgpu[1]:
            least = "at least " if self.vgpu_unread else ""
            on = f" (on {least}{self.vgpu_gpus} physical GPUs HAMi registered)" if self.vgpu_gpus else ""
            line += f"; {self.vgpu[0]} HAMi vGPU slots allocatable{on}, {self.vgpu[1]} requested, {self.vgpu[2]} free"
        return line

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpuNodes": self.gpu_nodes, "gpus": self.gpus, "requested": self.requested, "free": self.free,
            "migDevices": {"allocatable": self.mig[0], "requested": self.mig[1], "free": self.mig[2]},
            "sharedReplicas": {"allocatable": self.shared[0], "requested": self.shared[1], "free": self.shared[2]},
            "hamiVgpuSlots": {"allocatable": self.vgpu[0], "requested": self.vgpu[1], "free": self.vgpu[2],
                              "physicalGpus": self.vgpu_gpus},
            "pendingGpuPods": self.pending, "otherPending": self.other_pending,
            "causes": [{"cause": c, "pods": n} for c, n in self.causes], "firstStep": self.first_step,
            "groups": [g.to_dict() for g in self.groups], "nodeGroups": [g.to_dict() for g in self.node_groups],
            "anomalies": [{"node": n, "problem": p} for n, p in self.anomalies],
        }  # fmt: skip


def pod_ask(pod: Pod, dra: DraObjects | None = None) -> PodAsk:
    """What ``pod`` asks for and where (``PodAsk``): the grouping key of Pending pods; with ``dra`` (the
    snapshot's DRA objects) its claims' device requests too."""
    gpus = tuple((r, v) for r, v in sorted(pod.requests.items()) if is_gpu(r) and v)
    devices = [f"{format_milli(r, v)} {r}" for r, v in gpus]
    # another vendor's GPU: named in the shape, never counted as an NVIDIA one (``gpus``)
    devices += [
        f"{format_milli(r, v)} {r}" for r, v in sorted(pod.requests.items()) if v and other_vendor_gpu(r)
    ]
    # KAI's GPU share is an annotation, not a request: without it such a pod's shape reads as asking nothing
    devices += [f"{k}={v}" for k, v in sorted(kai_annotations(pod).items())]
    claims = claim_phrase(pod.key, dra) if dra else ""
    if claims:
        devices.append(claims)
    where = [f"{k}={v}" for k, v in sorted(pod.node_selector.items())]
    if pod.required_affinity:  # its terms: pods of one group may otherwise ask for different pools
        where.append("node affinity " + " or ".join(_term(t) for t in pod.required_affinity))
    if tolerates_gpu_taint(pod):
        where.append(TOLERATES)
    return PodAsk(
        ", ".join(devices), ", ".join(where), pod.requests.get(CPU, 0), pod.requests.get(MEMORY, 0), gpus
    )


def _term(term: NodeSelectorTerm) -> str:
    """A required node affinity term in one phrase: ``pool In [train, eval] and zone Exists``."""

    def requirement(r: Requirement) -> str:
        return f"{r.key} {r.operator}" + (f" [{', '.join(r.values)}]" if r.values else "")

    parts = [requirement(r) for r in term.match_expressions]
    parts += [f"field {requirement(r)}" for r in term.match_fields]
    return " and ".join(parts) or "(empty term)"


def _span(resource: str, values: list[int]) -> str:
    """``cpu 4`` or ``cpu 1–119`` over the pods of a group (``cpu up to 96`` when some ask none); nothing
    when none of them asks any."""
    low, high = min(values), max(values)
    if not high:
        return ""
    if not low:
        return f"{resource} up to {format_milli(resource, high)}"
    return f"{resource} {format_milli_range(resource, low, high)}"


NOT_QUEUED = "not queued: its ResourceClaims cannot be resolved"
# the last part of ``PodAsk.where`` for a pod that tolerates the GPU taint (not a place: ``_shape`` words it so)
TOLERATES = "tolerates the GPU taint"


def _shape(ask: PodAsk, asks: list[PodAsk]) -> str:
    """The group's phrase: its devices, its pods' CPU and memory (ranges where they differ), where."""
    parts = [ask.devices, _span(CPU, [a.cpu for a in asks]), _span(MEMORY, [a.memory for a in asks])]
    place = ask.where.removesuffix(TOLERATES).removesuffix(", ")  # the nodes it selects: "on" them
    return (
        ", ".join(p for p in parts if p)
        + (f" on {place}" if place else "")
        + (", tolerating the GPU taint" if ask.where.endswith(TOLERATES) else "")
    )


def _whole(text: str) -> int:
    """A NodeRow amount ("8", "7500m") as whole devices, rounded down: a device is whole or not free."""
    return int(text[:-1]) // 1000 if text.endswith("m") else int(text)


def _cause(
    exp: Explanation,
    admitted: npt.NDArray[np.bool_] | None,
    blocked: tuple[str, str] | None = None,
    hosts: npt.NDArray[np.bool_] | None = None,
) -> tuple[str, str]:
    """``_node_cause``, with what a node autoscaler said about the pod after the fix: on a cluster that adds
    nodes, whether it will add one for the pod (and why not) is the first thing to know."""
    reason, fix = _node_cause(exp, admitted, blocked, hosts)
    said = exp.autoscaler
    if said and said["meaning"] and not exp.schedulable:
        sep = "" if not fix or fix.endswith(".") else "."
        fix = f"{fix}{sep} {said['autoscaler']} ({said['reason']}): {'; '.join(said['meaning'])}.".strip()
    return reason, fix


def preemption_fix(exp: Explanation) -> str:
    """What happens to a pod DefaultPreemption finds victims for, and what to check when it stays Pending
    (kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption: the preemptor is nominated to
    the node and waits for its victims' graceful termination; PodDisruptionBudgets are honoured on a
    best-effort basis only)."""
    victims = f"{len(exp.victims)} lower-priority pod(s) ({some_of(exp.victims)})" if exp.victims else "pods"
    if exp.preempting:  # evicted already (explain.preempting): waiting is the step, not another preemption
        return (
            f"Preemption under way: kube-scheduler evicted {victims} on {exp.nominated_node} for this pod and "
            "nominated it there; it binds when they have terminated. If they stay Terminating, check their "
            "finalizers and terminationGracePeriodSeconds and that the node's kubelet is running."
        )
    return (
        f"kube-scheduler would evict {victims} on {exp.nominated_node} and nominate the pod there; it binds when "
        "they have terminated. Pods alike preempt one at a time, each judged against what the last one left. If "
        "it stays Pending, check that the victims terminate (finalizers, terminationGracePeriodSeconds); to spare "
        "them, lower the pod's priority class (PodDisruptionBudgets hold only best-effort against preemption)."
    )


def _node_cause(
    exp: Explanation,
    admitted: npt.NDArray[np.bool_] | None,
    blocked: tuple[str, str] | None = None,
    hosts: npt.NDArray[np.bool_] | None = None,
) -> tuple[str, str]:
    """The cause and its fix; ``admitted``: the nodes the pod's selector admits, over the cluster's rows
    (None: not known); ``blocked``: the reason and fix when its required pod affinity is unmet on every node
    (``diagnose.pod_affinity_blocks``); ``hosts``: those of ``admitted`` big enough for the pod's GPUs
    (``diagnose.could_host``)."""
    if exp.kueue is not None:  # gated by Kueue: its Workload says why (explain.kueue)
        advice = " ".join(f"{a}." for a in exp.kueue.advice)
        return kueue_cause(exp.kueue), exp.waiting + (f". What to do: {advice}" if advice else "")
    if exp.waiting:  # gated: kube-scheduler does not try it at all
        return "waiting for admission (scheduling gates)", exp.waiting
    if exp.not_queued:  # PreEnqueue: kube-scheduler does not try it until its claims resolve
        return NOT_QUEUED, exp.not_queued
    if (
        exp.handled_by
        and exp.established
        and (exp.schedulable or not exp.groups or exp.established_from_checks)
    ):
        return exp.established  # another scheduler's pod, refused by a rule of its own kubegpu read
    if exp.handled_by and (
        exp.schedulable or not exp.groups
    ):  # another scheduler's pod, and the checks every
        return f"handled by {exp.scheduler}", exp.handled_by  # scheduler makes pass: no verdict is predicted
    if exp.handled_by:  # those checks fail: their cause is the pod's, whichever scheduler handles it
        reason, fix = _node_cause(replace(exp, handled_by=""), admitted, blocked, hosts)
        return reason, (
            f"handled by {exp.scheduler} (a scheduler kubegpu does not model), but the checks every scheduler "
            f"makes refuse it: {fix}"
        )
    if exp.binding:  # allocated; PreBind waits for the devices' binding conditions (not a Filter failure)
        failed = exp.binding.startswith("device binding failed")
        return ("device binding failed" if failed else "waiting for device binding conditions"), exp.binding
    if exp.schedulable:
        bind = f"kube-scheduler would bind it to {exp.node}"
        if exp.kubelet:  # placed by the scheduler, then refused by the node: blocked, not schedulable
            reason, message = exp.kubelet.get("reason", ""), exp.kubelet.get("message", "")
            return (
                f"kubelet admission would fail ({reason})",
                f"{bind}, but its kubelet would refuse it: {message}",
            )
        said = exp.observed or {}
        # the cluster's own attempt refused it: quoted (``--pod`` lists what may explain the difference)
        refused = (
            f" The cluster's last attempt said: {said['message'].strip().rstrip('.')} (--pod: why the two may differ)."
            if said.get("agrees") is False and said.get("message")
            else ""
        )
        doubts = exp.fit_doubts()
        if doubts:  # the fit rests on what kubegpu does not model: never called "schedulable now"
            more = f" (and {len(doubts) - 1} more: --pod)" if len(doubts) > 1 else ""
            return FITS_UNVERIFIED, (
                f"{bind} by what kubegpu models, but that rests on what it does not: {doubts[0]}{more}.{refused}"
            )
        # the pod fits now: what keeps it Pending is not in the snapshot (taken before the scheduler got
        # to it, or no scheduler is running for it)
        return SCHEDULABLE_NOW, (
            f"{bind} now. If pods like it stay Pending, the scheduler is not getting to them: check that it "
            f"runs and read the pod's events.{refused}"
        )
    if exp.nominated_node:  # no node fits it now, but PostFilter (DefaultPreemption) found victims
        return (PREEMPTING if exp.preempting else PREEMPTS), preemption_fix(exp)
    if not exp.groups:
        return exp.message, ""
    matching = None if admitted is None else int(np.count_nonzero(admitted))
    mismatch = next((g for g in exp.groups if g.reason == SELECTOR_MISMATCH), None)
    if matching == 0 and mismatch is not None:
        # kube-scheduler reports the first failing filter per node (a taint before the selector), so the
        # message can hide that the selector itself admits no node at all
        return "no node matches the pod's nodeSelector / required node affinity", mismatch.fix
    if blocked is not None:  # unmet on every node, whatever fails first there (even on all of them)
        return blocked
    # Nodes outside the pod's own selector/affinity are out by the pod's choice: the cause is what rules
    # out the nodes it did ask for. kube-scheduler names one filter per node, the first that fails, and
    # TaintToleration runs before NodeAffinity: a tainted node outside the selector reads as refused by its
    # taint. So where the selector's mask is known, a reason counts only the nodes the selector admits (a
    # pod selecting B200 nodes, all tainted nvidia.com/gpu, is not blamed on the spot taint of other nodes).
    # Of those, the nodes whose allocatable could hold the pod's GPUs come first: three CPU nodes short of a
    # GPU do not outvote the one GPU node refused by the pod's affinity (loft-sh/devpod-provider-kubernetes#63)
    asked = [g for g in exp.groups if g.reason != SELECTOR_MISMATCH] or exp.groups
    for mask in (hosts, admitted if matching else None):
        if mask is None:
            continue
        counted = [
            (len(g.nodes) if g.rows is None else int(np.count_nonzero(mask.take(g.rows))), g) for g in asked
        ]
        n, top = max(counted, key=lambda c: (c[0], c[1].reason))
        if n:
            return top.reason, top.fix
    top = max(asked, key=lambda g: (len(g.nodes), g.reason))
    return top.reason, top.fix


def nearest_misses(
    exp: Explanation, ask: PodAsk, gpus: dict[str, dict[str, tuple[int, int]]]
) -> list[NodeEvidence]:
    """Nodes that fail only on resources, closest to fitting first: those whose allocatable holds the
    pod's GPU request (emptied, they would fit; a node without the resource never will), then the most
    free of what it asks (all GPU resources when it asks none by name), then by name. ``gpus``: per node,
    resource → (allocatable, free) in whole devices."""

    def only_resources(kinds: tuple[str, ...]) -> bool:
        return bool(kinds) and all(k == Insufficient.kind for k in kinds)

    def key(name: str) -> tuple[int, int, str]:
        have = gpus.get(name, {})
        if not ask.gpus:
            return 0, -sum(free for _, free in have.values()), name
        holds = all(
            have.get(r, (0, 0))[0] >= -(-v // 1000) for r, v in ask.gpus
        )  # whole devices, milli asked
        return (0 if holds else 1), -sum(have.get(r, (0, 0))[1] for r, _ in ask.gpus), name

    nodes = exp.nodes
    if not isinstance(nodes, NodeList):  # a list made by hand
        misses = (n for n in nodes if only_resources(n.kinds))
        return heapq.nsmallest(NEAREST_MISSES, misses, key=lambda n: key(n.name))
    # the nodes' names and kinds, then the evidence of the few shown
    rows = [block for block, kinds, _ in nodes.blocks if only_resources(kinds)]
    if not rows:
        return []
    found = np.concatenate(rows) if len(rows) > 1 else rows[0]
    chosen = heapq.nsmallest(NEAREST_MISSES, zip(nodes.names[found].tolist(), found.tolist(), strict=True),
                             key=lambda name_row: key(name_row[0]))  # fmt: skip
    return nodes.pick([row for _, row in chosen])


def gpu_free_by_node(report: Diagnosis) -> dict[str, dict[str, tuple[int, int]]]:
    """Per GPU node: resource → (allocatable, free) in whole devices (``nearest_misses``' ``gpus``)."""
    return {
        row.name: {r: (_whole(v["allocatable"]), _whole(v["free"])) for r, v in row.gpu.items()}
        for row in report.nodes
    }


def summarize(report: Diagnosis, asks: Mapping[str, PodAsk]) -> Summary:
    """``asks``: pod key → what it asks for (the caller reads it off the pod; see ``pod_ask``). Pods are
    grouped by devices, where and cause; the group's evidence is its first pod's."""
    gpus = gpu_free_by_node(report)
    groups: dict[tuple[str, str, str], tuple[PendingGroup, list[PodAsk]]] = {}
    unknown = PodAsk("")
    for exp in report.pending:
        blocked = report.pod_affinity_blocked.get(exp.pod)  # (never a schedulable pod)
        cause, fix = _cause(exp, report.selector_admits.get(exp.pod), blocked, report.could_host.get(exp.pod))
        ask = asks.get(exp.pod, unknown)
        key = (ask.devices, ask.where, cause)
        entry = groups.get(key)
        if entry is None:
            # most nodes first (``exp.groups`` is in the FailedScheduling histogram's order, which sorts
            # "<count> <reason>" as text: 99 before 3276); ties keep that order
            reasons = sorted(
                (ReasonCount(g.reason, len(g.nodes), g.fix) for g in exp.groups), key=lambda r: -r.nodes
            )
            # a pod its affinity keeps off every node misses no node by resources alone
            nearest = [] if blocked is not None and blocked[0] == cause else nearest_misses(exp, ask, gpus)
            group = PendingGroup("", cause, [], exp.message, reasons, nearest, fix)
            entry = groups[key] = (group, [])
        entry[0].pods.append(exp.pod)
        entry[1].append(ask)
    for group, members in groups.values():
        group.shape = _shape(members[0], members)
    # blocked groups first (largest first), then the pods that fit now: a view cut at ``MAX_GROUPS`` keeps
    # what needs a fix with its evidence, however many pods merely wait for the scheduler
    ordered = sorted(
        (g for g, _ in groups.values()),
        key=lambda g: (g.cause == SCHEDULABLE_NOW, -len(g.pods), g.shape, g.cause),
    )
    causes: Counter[str] = Counter()
    for g in ordered:
        causes[g.cause] += len(g.pods)
    first = _first_step(ordered, causes, report.findings)
    gpus_total = _sums(
        t for r, t in report.totals.items() if not _is_mig(r) and r not in (SHARED_TOTAL, HAMI_TOTAL)
    )
    return Summary(
        gpu_nodes=len(report.nodes),
        gpus=gpus_total[0],
        requested=gpus_total[1],
        free=gpus_total[2],
        mig=_sums(t for r, t in report.totals.items() if _is_mig(r)),
        shared=_sums(t for r, t in report.totals.items() if r == SHARED_TOTAL),
        vgpu=_sums(t for r, t in report.totals.items() if r == HAMI_TOTAL),
        vgpu_gpus=report.totals.get(HAMI_TOTAL, {}).get("gpus", 0),
        vgpu_unread=report.totals.get(HAMI_TOTAL, {}).get("unread", 0),
        pending=len(report.pending),
        other_pending=report.other_pending,
        causes=sorted(causes.items(), key=_blocking_first),
        first_step=first,
        groups=ordered,
        node_groups=node_groups(report.nodes),
        anomalies=anomalies(report.nodes),
    )


def _sums(totals: Iterable[Mapping[str, int]]) -> tuple[int, int, int]:
    """Allocatable, requested and free (never below 0 per resource) over ``totals``."""
    alloc = requested = free = 0
    for t in totals:
        alloc, requested = alloc + t["allocatable"], requested + t["requested"]
        free += max(t["allocatable"] - t["requested"], 0)
    return alloc, requested, free


def _is_mig(resource: str) -> bool:
    """A totals key of MIG devices: the mixed strategy's resources, the single strategy's nvidia.com/gpu
    (``diagnose.MIG_SINGLE_TOTAL``), DRA's mig devices."""
    return resource.startswith(MIG_RESOURCE_PREFIX) or resource in (MIG_SINGLE_TOTAL, DRA_ROWS["mig"])


def _blocking_first(cause: tuple[str, int]) -> tuple[bool, int, str]:
    """The headline's order of (cause, pods): blocking causes, most pods first, then the pods that fit now
    (the groups' order too)."""
    return cause[0] == SCHEDULABLE_NOW, -cause[1], cause[0]


def _first_step(ordered: list[PendingGroup], causes: Counter[str], findings: list[Finding]) -> str:
    """The fix for the cause that blocks the most Pending pods (summed over its groups), told through that
    cause's largest group; a tie keeps the order the groups are listed in (largest group first). With no
    Pending pod blocked, the first critical finding (findings list errors first) is the first step, then a
    Workload Kueue holds, then a warning of the GPU stack's layer (pods kubelet refused, a failing validator,
    unhealthy GPUs): "nothing is blocked" above those would read as "nothing to do"."""
    blocked = [g for g in ordered if g.cause != SCHEDULABLE_NOW]
    if not blocked:
        critical = next((f for f in findings if f.severity == "critical"), None)
        if critical is not None:
            # a pod bound to its node shows as Pending in kubectl (ContainerCreating): it waits for no scheduler
            lead = (
                "no GPU pod waits for a scheduler"
                if is_bound_finding(critical)
                else "no Pending GPU pod is blocked"
            )
            return f"{lead}, but fix the critical finding: {critical.title}"
        # a job Kueue keeps suspended, or a Volcano PodGroup not enqueued, has no pod to be Pending: "nothing
        # is blocked" would hide it
        held = [f for f in findings if f.objects and f.objects[0].startswith((WORKLOAD_REF, PODGROUP_REF))]
        if held:
            more = f" (and {len(held) - 1} more held by a queue)" if len(held) > 1 else ""
            return f"no Pending GPU pod, but {held[0].title}{more}"
        # GPU pods refused by kubelet, a failing GPU stack pod, unhealthy GPUs: nothing Pending, yet GPU work
        # fails or will (NVIDIA/gpu-operator#1947, kubernetes#130145 printed "nothing is blocked")
        stack = next(
            (f for f in findings if f.severity == "warning" and f.layer == "driver/device-plugin"), None
        )
        if stack is not None:
            return f"no Pending GPU pod is blocked, but look at the warning: {stack.title}"
        return "nothing is blocked"
    most = max(causes[g.cause] for g in blocked)
    top = next(g for g in blocked if causes[g.cause] == most)  # the cause's largest group: listed first
    shapes = sum(1 for g in blocked if g.cause == top.cause)
    who = (
        f"{len(top.pods)} pod(s): {top.shape}"
        if shapes == 1
        else f"{most} pod(s) in {shapes} groups, the largest {len(top.pods)} pod(s): {top.shape}"
    )
    if top.fix:
        return f"{top.fix} ({who})"
    return f"read the evidence of the largest group ({who})"


def node_groups(rows: list[NodeRow]) -> list[NodeGroup]:
    out: dict[tuple[str, str, str], NodeGroup] = {}
    for row in rows:
        for resource, v in row.gpu.items():
            g = out.setdefault((row.pool, row.product, resource), NodeGroup(row.pool, row.product, resource))
            free = _whole(v["free"])
            g.nodes += 1
            g.allocatable += _whole(v["allocatable"])
            g.requested += _whole(v["requested"])
            g.free += free
            if free > g.largest_free:
                g.largest_free, g.nodes_with_largest = free, 1
            elif free == g.largest_free:
                g.nodes_with_largest += 1
    return [out[k] for k in sorted(out)]


def anomalies(rows: list[NodeRow]) -> list[tuple[str, str]]:
    out = []
    for row in rows:
        if not row.ready:
            out.append((row.name, "NotReady"))
        if row.unschedulable:
            out.append((row.name, "cordoned"))
        for resource, v in row.gpu.items():
            if _whole(v["requested"]) > _whole(v["allocatable"]):
                out.append(
                    (row.name, f"{resource}: {v['requested']} requested of {v['allocatable']} allocatable")
                )
    return out
