"""Who schedules a pod, and what keeps it from being tried: other schedulers, their GPU-sharing resources,
scheduling gates and Kueue admission.

kube-scheduler only takes pods whose ``spec.schedulerName`` names one of its profiles; a pod naming
``hami-scheduler``, ``volcano`` or ``kai-scheduler`` is that scheduler's, and kubegpu, which reproduces
kube-scheduler, predicts no FailedScheduling message for it. What every scheduler must respect (the node's
allocatable resources, NoSchedule taints, nodeSelector and required node affinity) is still checked, on
the pod less the resources only its own scheduler understands:
- HAMi: ``nvidia.com/gpumem``, ``gpumem-percentage``, ``gpucores`` (resolved by hami-scheduler's extender
  from the node annotations HAMi's device plugin writes; no node advertises them);
- Volcano vGPU: ``volcano.sh/vgpu-memory``, ``vgpu-memory-percentage``, ``vgpu-cores`` (the deviceshare
  plugin; ``volcano.sh/vgpu-number`` is advertised by its device plugin and stays checked);
- KAI: ``gpu-fraction`` / ``gpu-memory`` annotations (a fraction is not a resource at all).
A pod with ``spec.schedulingGates`` is never tried: kube-scheduler's PreEnqueue (SchedulingGates plugin)
keeps it out of the queue, so it is ``SchedulingGated`` and no FailedScheduling event exists. Kueue's gate
``kueue.x-k8s.io/admission`` is removed when Kueue admits the pod's Workload; the Workload, LocalQueue and
ClusterQueue in the snapshot say why it has not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from kubegpu.explain import kai_events, kai_reservation
from kubegpu.explain.kai_quota import over_quota
from kubegpu.explain.kai_reservation import KAI_RESERVATION_NOEXECUTE
from kubegpu.explain.kubectl import kubectl, mutate
from kubegpu.explain.kueue import KueueReading, read_pod
from kubegpu.explain.kueue_objects import meta
from kubegpu.explain.volcano_queue import over_capability
from kubegpu.explain.wording import some_of
from kubegpu.model.gpu_facts import hami_split_counts, kai_annotations
from kubegpu.model.names import (
    DEFAULT_SCHEDULER,
    GPU_MEMORY_LABEL,
    HAMI_NODE_REGISTER_ANNOTATION,
    HAMI_RESOURCES,
    HAMI_SCHEDULER,
    KAI_ANNOTATIONS,
    KAI_FRACTION,
    KAI_MEMORY,
    KAI_MIG_ENABLED_LABEL,
    KAI_QUEUE_LABELS,
    KAI_SCHEDULER,
    KUEUE_ADMISSION_GATE,
    KUEUE_QUEUE_LABEL,
    MIG_RESOURCE_PREFIX,
    MIG_STRATEGY_LABEL,
    NVIDIA_GPU,
    VOLCANO_QUEUE_LABEL,
    VOLCANO_RESOURCES,
    VOLCANO_SCHEDULER,
)
from kubegpu.model.objects import Container, Node, Pod
from kubegpu.model.quantity import format_milli
from kubegpu.model.records import KAI_GROUP
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.reasons import Insufficient, Reason

FAMILIES = {
    DEFAULT_SCHEDULER: "kube-scheduler",
    HAMI_SCHEDULER: "HAMi",
    VOLCANO_SCHEDULER: "Volcano",
    KAI_SCHEDULER: "KAI",
}
SCHEDULER_RESOURCES = (*HAMI_RESOURCES, *VOLCANO_RESOURCES)  # resolved by those schedulers, on no node


def own_resources(pod: Pod) -> dict[str, int]:
    """The pod's requests that only HAMi's or Volcano's scheduler understands."""
    return {r: v for r, v in pod.requests.items() if v and is_scheduler_resource(r)}


def is_scheduler_resource(name: str) -> bool:
    """A resource a GPU scheduler resolves itself, which no node advertises by design."""
    return name in SCHEDULER_RESOURCES


def _strip(c: Container, names: tuple[str, ...]) -> Container:
    return replace(
        c,
        requests={r: v for r, v in c.requests.items() if r not in names},
        limits={r: v for r, v in c.limits.items() if r not in names},
    )


def common_pod(pod: Pod, modelled: str) -> Pod:
    """The pod as any scheduler's node checks see it: scheduler-only resources removed, no gates, and the
    modelled profile's name (so the core evaluates it)."""
    return replace(
        pod,
        containers=tuple(_strip(c, SCHEDULER_RESOURCES) for c in pod.containers),
        init_containers=tuple(_strip(c, SCHEDULER_RESOURCES) for c in pod.init_containers),
        # a resize's counted requests echo every resource of the spec: the same ones removed there
        status_requests={
            name: {r: v for r, v in req.items() if r not in SCHEDULER_RESOURCES}
            for name, req in pod.status_requests.items()
        },
        scheduler_name=modelled,
        scheduling_gates=(),
    )


@dataclass
class Handling:
    scheduler: str
    modelled: bool
    family: str
    gates: tuple[str, ...] = ()
    waiting: str = ""  # "waiting for admission by …", when gated
    kueue: KueueReading | None = None  # what the Kueue objects say, for a pod Kueue gates
    notes: list[str] = field(default_factory=list)
    # the cause established from that scheduler's own rule (``Explanation.established``): (cause, what to do)
    established: tuple[str, str] | None = None
    # a cause that holds when the checks every scheduler makes refuse the pod only for want of nvidia.com/gpu,
    # on these nodes: HAMi registered their every card with split count 1 (``establish_if_short``)
    if_short: tuple[frozenset[str], tuple[str, str]] | None = None

    @property
    def other(self) -> str:
        """ "" when the modelled scheduler takes the pod, else the sentence saying who does."""
        if self.modelled:
            return ""
        return (
            f"handled by {self.scheduler} ({self.family}), not by the kube-scheduler kubegpu reproduces: no "
            "default-scheduler message is predicted; below are the checks every scheduler makes (node resources, "
            "taints, nodeSelector and required node affinity)"
        )


def handling(snapshot: ClusterSnapshot, pod: Pod, modelled: str) -> Handling:
    family = FAMILIES.get(pod.scheduler_name, "a scheduler kubegpu does not model")
    h = Handling(pod.scheduler_name, pod.scheduler_name == modelled, family, pod.scheduling_gates)
    own = own_resources(pod)
    kai = kai_annotations(pod)
    if own:
        asked = ", ".join(f"{r}={format_milli(r, v)}" for r, v in sorted(own.items()))
        owner = "HAMi" if any(r in HAMI_RESOURCES for r in own) else "Volcano"
        expected = HAMI_SCHEDULER if owner == "HAMi" else VOLCANO_SCHEDULER
        if pod.scheduler_name == expected:
            h.notes.append(
                f"{asked}: {owner}'s own resources, resolved by {expected} from the devices its device plugin "
                "reports (node annotations), not advertised in any node's capacity; they are left out of the checks "
                "below, which only {expected}'s own filter can evaluate".replace("{expected}", expected)
            )
            unsplit = _hami_unsplit(snapshot) if owner == "HAMi" else []
            if unsplit:
                h.notes.append(_hami_unsplit_note(unsplit, asked))
                h.if_short = (frozenset(unsplit), (HAMI_UNSPLIT, h.notes[-1]))
        else:
            hint = (
                "HAMi's mutating webhook sets schedulerName hami-scheduler on GPU pods; it did not here (the webhook "
                "is not installed or failed with failurePolicy Ignore, or the namespace is excluded)"
                if owner == "HAMi"
                else "the pod must name schedulerName volcano"
            )
            h.notes.append(
                f"{asked} are {owner}'s resources, but the pod names schedulerName {pod.scheduler_name}: {expected} "
                f"never took this pod, and {pod.scheduler_name} cannot satisfy them (no node advertises them). {hint}."
            )
    queue = next((pod.labels[k] for k in KAI_QUEUE_LABELS if k in pod.labels), "")
    if pod.scheduler_name == KAI_SCHEDULER or kai:
        h.notes.extend(_kai_queue_notes(snapshot, queue))
    if pod.scheduler_name == KAI_SCHEDULER:
        h.notes.extend(_kai_key_notes(pod, kai))
        max_node = _kai_max_node_notes(snapshot, pod)
        leftover = _kai_mig_leftover_notes(snapshot, pod, kai)
        h.notes.extend(max_node + leftover)
        quota = over_quota(snapshot, pod)
        if quota is not None:
            h.notes.append(quota[1])
        if max_node:  # KAI itself refused the pod, naming a resource the nodes advertise
            establish(h, pod, KAI_SCHEDULER, (KAI_MISCOUNT, max_node[0]))
        establish(h, pod, KAI_SCHEDULER, quota)  # KAI's own quota verdict, with its numbers
        if {KAI_FRACTION, KAI_MEMORY} & kai.keys():
            reserved = kai_reservation.reservation(snapshot, pod)
            h.notes.extend(reserved.notes)
            if reserved.cause:  # only where the snapshot shows it: it depends on KAI's release
                establish(h, pod, KAI_SCHEDULER, (KAI_RESERVATION_NOEXECUTE, reserved.cause))
        if leftover and _kai_nodes(snapshot).only_mig_off:  # holds only on some KAI releases: last
            establish(h, pod, KAI_SCHEDULER, (KAI_MIG_OFF, leftover[0]))
    if kai:
        ann = ", ".join(f"{k}={v}" for k, v in sorted(kai.items()))
        if pod.scheduler_name == KAI_SCHEDULER and KAI_MEMORY in kai:
            h.notes.extend(_kai_memory_notes(snapshot))
        if pod.scheduler_name == KAI_SCHEDULER:
            h.notes.append(
                f"{ann}: a KAI GPU share (an annotation, not a resource): kai-scheduler places it through a "
                f"reservation pod on a GPU its device plugin advertises"
                + (
                    f"; queue {queue}"
                    if queue
                    else "; the pod names no queue label (kai.scheduler/queue), so KAI will not take it"
                )
            )
        else:
            h.notes.append(
                f"{ann} are KAI annotations, but the pod names schedulerName {pod.scheduler_name}: kai-scheduler never "
                "took it and no other scheduler reads them; set schedulerName kai-scheduler"
            )
    if VOLCANO_QUEUE_LABEL in pod.labels and pod.scheduler_name == VOLCANO_SCHEDULER:
        h.notes.append(
            f"Volcano queue {pod.labels[VOLCANO_QUEUE_LABEL]} (its PodGroup's state decides admission)"
        )
    if pod.scheduler_name == VOLCANO_SCHEDULER and (capped := over_capability(snapshot, pod)) is not None:
        h.notes.append(capped[1])
        establish(h, pod, VOLCANO_SCHEDULER, capped)
    if pod.scheduling_gates:
        h.waiting, h.kueue = gated(snapshot, pod)
    elif KUEUE_QUEUE_LABEL in pod.labels:
        h.notes.append(
            f"Kueue queue {pod.labels[KUEUE_QUEUE_LABEL]}: the pod is not gated, so Kueue has admitted it "
            "(or its webhook did not run); kube-scheduler decides from here"
        )
    return h


class Establishes(Protocol):
    """What holds an established cause: ``Handling`` here, ``Explanation`` for the rules read at the node."""

    established: tuple[str, str] | None


def establish(on: Establishes, pod: Pod, scheduler: str, cause: tuple[str, str] | None) -> None:
    """The one precedence rule for the cause established from another scheduler's own rule, whichever
    scheduler it is (KAI, Volcano here; HAMi in ``explain.grants``): only the rules of the scheduler the pod
    names establish it (a scheduler that never took the pod refused it by none of its rules), and the first
    cause established stands. Each scheduler's rules are tried in the order of their certainty: what holds on
    every node whatever the cluster's usage or the scheduler's release (KAI's miscount and quota verdict, a
    Volcano queue's capability, HAMi's vGPUs over every node's physical GPUs) before what depends on the
    release (KAI taking MIG-off nodes for MIG nodes) or on time (HAMi's refusal predating the node's state)."""
    if cause is not None and pod.scheduler_name == scheduler and on.established is None:
        on.established = cause


def _hami_unsplit(snapshot: ClusterSnapshot) -> list[str]:
    """The nodes where HAMi registered every card with split count 1 (read once per snapshot, not per pod)."""
    found: list[str] = snapshot.derived(
        "hami-unsplit-nodes",
        lambda: [n.name for n in snapshot.nodes if (c := hami_split_counts(n)) and all(x == 1 for x in c)],
        over=(snapshot.nodes,),
    )
    return found


def _hami_unsplit_note(unsplit: list[str], asked: str) -> str:
    """A pod asking HAMi's share resources means to share a card; where HAMi registered every card with split
    count 1 a card takes one container, so no second pod shares it (Project-HAMi/HAMi#587: the chart's
    devicePlugin.deviceSplitCount set to 1, "the second Pod can only stay Pending"; raise it)."""
    named = ", ".join(unsplit[:5]) + (f" and {len(unsplit) - 5} more" if len(unsplit) > 5 else "")
    return (
        f"HAMi registered every card of {named} with split count 1 (the count field of "
        f"{HAMI_NODE_REGISTER_ANNOTATION}): a card there takes one container, so a pod asking {asked} shares "
        "its card with no other pod and each such pod needs a card of its own. The count is HAMi's "
        "deviceSplitCount (the chart's devicePlugin.deviceSplitCount, 10 by default): raise it to share the cards "
        "(Project-HAMi/HAMi#587)."
    )


def establish_if_short(
    on: Establishes,
    pod: Pod,
    h: Handling,
    refused: Mapping[str, tuple[Reason, ...]],
    snapshot: ClusterSnapshot,
) -> bool:
    """Establish ``h.if_short`` when the checks refuse the pod for want of nvidia.com/gpu only on its nodes.

    HAMi's device plugin advertises nvidia.com/gpu as cards times the split count (docs/config.md
    devicePlugin.deviceSplitCount, "Maximum tasks assigned to a simple GPU device"; 4paradigm/k8s-vgpu-scheduler
    #35: split count 5 on 8 cards, allocatable 40). With split count 1 the count is the cards, so a node big
    enough for the pod that is refused only for nvidia.com/gpu has every card held by a container: the split
    count is why no card is shared, the shortage its symptom. The candidates are the refused nodes whose
    allocatable holds the pod's nvidia.com/gpu and whose reasons include that shortage; it is established when
    there is one and each is such a node, refused for nothing else (a node short of CPU too, or a split card
    in use, leaves the shortage's own advice). Nodes refused for other reasons (taints, selectors) could not take
    the pod whatever the split count. True when established."""
    if h.if_short is None:
        return False
    nodes, cause = h.if_short
    need = pod.requests.get(NVIDIA_GPU, 0)
    candidates = []
    for name, reasons in refused.items():
        node = snapshot.node(name)
        short = [r for r in reasons if isinstance(r, Insufficient) and r.resource == NVIDIA_GPU]
        if short and node is not None and node.allocatable.get(NVIDIA_GPU, 0) >= need > 0:
            candidates.append((name, len(short) == len(reasons)))
    if not candidates or not all(only and name in nodes for name, only in candidates):
        return False
    establish(on, pod, HAMI_SCHEDULER, cause)
    return on.established == cause


def _kai_queue_notes(snapshot: ClusterSnapshot, queue: str) -> list[str]:
    """What the snapshot's KAI Queues (scheduling.run.ai) say of the pod's queue: missing, or top-level, which
    KAI releases before v0.13.0 never schedule (pkg/scheduler/actions/utils/job_order_by_queue.go skips a
    queue without a parent, "Queue's department doesn't exist": kai-scheduler/KAI-Scheduler#621, fixed by
    #858 "support n-level queue hierarchy" in v0.13.0). Nothing when the snapshot holds no KAI Queue."""
    if not queue:
        return []
    queues = snapshot.derived(  # once per snapshot's queue objects, not per Pending pod
        "kai-queues",
        lambda: {
            str(meta(q).get("name")): q
            for q in snapshot.records.queue_objects("Queue")
            if str(q.get("apiVersion", "")).startswith(f"{KAI_GROUP}/")
        },
        over=(snapshot.records.queues,),
    )
    if not queues:
        return []
    found = queues.get(queue)
    if found is None:
        return [
            f"KAI queue {queue} does not exist (queues: {', '.join(sorted(queues))}): kai-scheduler leaves the pod Pending"
        ]
    spec = found.get("spec")
    if isinstance(spec, Mapping) and not spec.get("parentQueue"):
        return [
            f"KAI queue {queue} has no parentQueue (a top-level queue): kai-scheduler releases before v0.13.0 schedule "
            "only jobs whose queue has a parent and leave this pod Pending with an Unschedulable event "
            "(KAI-Scheduler#621, fixed in v0.13.0); on such a release put the pod in a child queue"
        ]
    return []


def _kai_key_notes(pod: Pod, kai: Mapping[str, str]) -> list[str]:
    """KAI reads its GPU-share ask from the exact annotation keys gpu-fraction / gpu-memory (KAI
    pkg/common/constants GpuFraction, GpuMemory; pkg/common/resources/gpu_sharing.go RequestsGPUFraction), a
    gpu-memory value as a positive integer of MiB (binder gpu_request_validator.go validateMemoryAnnotation,
    also run by KAI's admission webhook). A look-alike key (nvidia.com/gpu.memory, which is GPU Feature
    Discovery's NODE label) asks for no GPU at all: the pod runs without one (KAI-Scheduler#257)."""
    notes = []
    for key, value in sorted(pod.annotations.items()):
        name = key.rsplit("/", 1)[-1].replace(".", "-")
        if key in KAI_ANNOTATIONS or name not in KAI_ANNOTATIONS:
            continue
        what = (
            f"GPU Feature Discovery's node label {GPU_MEMORY_LABEL}"
            if key == GPU_MEMORY_LABEL
            else "not KAI's"
        )
        notes.append(
            f"annotation {key}={value} is {what}, not a KAI annotation: kai-scheduler reads only {name} "
            f"(exactly that key{', an integer of MiB' if name == KAI_MEMORY else ''}), so this pod asks for no GPU "
            f"and gets none; annotate {name} instead"
        )
    mem = kai.get(KAI_MEMORY)
    if mem is not None and not (mem.isdigit() and int(mem) > 0):
        notes.append(
            f"gpu-memory={mem}: KAI takes a positive integer of MiB without a unit (e.g. 2000); its admission "
            'webhook and binder refuse this value ("gpu-memory annotation value must be a positive integer greater '
            'than 0")'
        )
    return notes


# kai-scheduler's MaxNodeResourcesPredicate refusal when its per-node maximum of a resource is 0 (KAI
# pkg/scheduler/k8s_internal/predicates/maxNodeResources.go buildUnschedulableMessage)
_KAI_NO_NODE = re.compile(r"No node in the (\S+) node-pool has (\S+) resources")
# the established causes (``Handling.established``) these notes give, as the grouped view names them
HAMI_UNSPLIT = "hami-scheduler: split count 1 on every card of the nodes that could take the pod"
KAI_MISCOUNT = "kai-scheduler's MaxNodeResources miscount: the nodes advertise what it says no node has"
KAI_MIG_OFF = (
    "kai-scheduler takes the MIG-off nodes (mig.strategy=mixed, nvidia.com/mig-* at 0) for MIG nodes"
)


def _kai_max_node_notes(snapshot: ClusterSnapshot, pod: Pod) -> list[str]:
    """kai-scheduler said no node of its node pool has a resource the pod asks for, yet nodes here advertise
    it. Before KAI-Scheduler PR #1852 the predicate seeded its per-resource maximum from one node picked in
    map order and ResourceVector.SetMax never grew the vector, so a resource present on only some nodes (a MIG
    profile under the mixed strategy, rdma/...) read 0 in most sessions (KAI-Scheduler#1876)."""
    said = {m.groups() for e in kai_events.events(snapshot, pod) for m in _KAI_NO_NODE.finditer(e.message)}
    notes = []
    for pool, resource in sorted(said):
        if not pod.requests.get(resource):
            continue
        having = _kai_nodes(snapshot).having(resource)
        if not having:
            continue
        notes.append(
            f'kai-scheduler said "No node in the {pool} node-pool has {resource} resources", yet '
            f"{some_of(having)} advertise(s) {resource} in allocatable: if they are in that node pool, the refusal "
            "is KAI's own miscount, not the nodes' state. Before KAI-Scheduler PR #1852 (backported to the v0.14 "
            "and v0.16 branches; KAI-Scheduler#1876) its MaxNodeResources check read 0 for a resource that only "
            "some nodes advertise in most scheduling sessions; upgrade kai-scheduler to a release with that fix. "
            "kubegpu does not reproduce KAI's node pools or its other checks."
        )
    return notes


def _mig_off_leftover(node: Node) -> bool:
    """The one rule for "a MIG-off node kai-scheduler may take for a MIG node": labelled
    mig.strategy=mixed, without KAI's mig-enabled label (which KAI reads first, node_info.go IsMIGEnabled),
    with nvidia.com/mig-* keys in allocatable that are all 0. KAI 0.12.15 counts any such key as MIG
    (``Allocatable.ScalarResources``: the key, whatever its count; KAI-Scheduler#1120); since the ResourceVector
    refactor (KAI-Scheduler PR #1146, v0.14.0) only a count > 0. A mixed node with no mig-* key at all is one whose
    GPUs are all out of MIG mode ("mixed: MIG mode is not enabled on all GPUs on a node", NVIDIA GPU Operator
    docs, gpu-operator-mig.html; its GPUs are advertised as nvidia.com/gpu): no KAI release takes it for MIG."""
    if node.labels.get(MIG_STRATEGY_LABEL) != "mixed" or KAI_MIG_ENABLED_LABEL in node.labels:
        return False
    mig = [v for r, v in node.allocatable.items() if r.startswith(MIG_RESOURCE_PREFIX)]
    return bool(mig) and not any(mig)


class _KaiNodes:
    """What the KAI notes read from every node, read once per snapshot's node list (``_kai_nodes``), not
    once per Pending pod: diagnose may explain 1,000 KAI pods on 5,000 nodes."""

    def __init__(self, nodes: list[Node]) -> None:
        self._nodes = nodes
        # the nodes ``_mig_off_leftover`` names, and whether they are every node advertising a whole GPU (KAI
        # then has nowhere else to put a non-MIG ask, so that rule is what keeps it Pending)
        self.mig_off = [n.name for n in nodes if _mig_off_leftover(n)]
        whole = [n for n in nodes if n.allocatable.get(NVIDIA_GPU, 0) > 0]
        self.only_mig_off = bool(whole) and all(_mig_off_leftover(n) for n in whole)
        # GPU nodes without GPU Feature Discovery's memory label (``_kai_memory_notes``)
        self.no_memory_label = [
            n.name
            for n in nodes
            if any(r.startswith(NVIDIA_GPU) and v for r, v in n.allocatable.items())
            and GPU_MEMORY_LABEL not in n.labels
        ]
        self._having: dict[str, list[str]] = {}

    def having(self, resource: str) -> list[str]:
        """The nodes advertising ``resource`` in allocatable (found on the first ask for it)."""
        found = self._having.get(resource)
        if found is None:
            found = self._having[resource] = [
                n.name for n in self._nodes if n.allocatable.get(resource, 0) > 0
            ]
        return found


def _kai_nodes(snapshot: ClusterSnapshot) -> _KaiNodes:
    nodes = snapshot.nodes
    return snapshot.derived("kai-nodes", lambda: _KaiNodes(nodes), over=(nodes,))


def _kai_mig_leftover_notes(snapshot: ClusterSnapshot, pod: Pod, kai: Mapping[str, str]) -> list[str]:
    """A non-MIG GPU ask (whole nvidia.com/gpu or a KAI fraction) and nodes ``_mig_off_leftover`` names (MIG
    disabled; kubelet keeps a resource no plugin reports at 0, kubernetes/kubernetes#92396). KAI refuses
    non-MIG jobs on a MIG node under the mixed strategy (node_info.go PredicateByNodeResourcesType "non MIG
    jobs cant run on a node with MigStrategy='mixed'")."""
    if any(r.startswith(MIG_RESOURCE_PREFIX) for r in pod.requests) or not (
        pod.requests.get(NVIDIA_GPU) or kai
    ):
        return []
    stale = _kai_nodes(snapshot).mig_off
    if not stale:
        return []
    first = stale[0]
    return [
        f"{some_of(stale)}: {MIG_STRATEGY_LABEL}=mixed and nvidia.com/mig-* resources left at 0 in allocatable "
        "(MIG is off; kubelet keeps a resource no device plugin reports any more). kai-scheduler releases that count "
        "any nvidia.com/mig-* resource as MIG, even at 0 (0.12.15 does, KAI-Scheduler#1120), take such a node for a "
        'MIG node and refuse this non-MIG GPU ask there ("non MIG jobs cant run on a node with '
        "MigStrategy='mixed'\"); releases that require a count > 0 do not. KAI reads the node label "
        f"{KAI_MIG_ENABLED_LABEL} before the resources: "
        f"`{mutate(pod.namespace, f'label node {first} {KAI_MIG_ENABLED_LABEL}=false')[0]}`, then without "
        f"--dry-run (rollback: `{kubectl(pod.namespace, f'label node {first} {KAI_MIG_ENABLED_LABEL}-')}`; remove it "
        "before enabling MIG on the "
        "node again), or upgrade kai-scheduler. kubegpu does not read the kai-scheduler version."
    ]


def _kai_memory_notes(snapshot: ClusterSnapshot) -> list[str]:
    """KAI sizes a ``gpu-memory`` request from the node label nvidia.com/gpu.memory that GPU Feature
    Discovery writes (KAI pkg/scheduler/api/node_info getNodeGpuMemory); GPU nodes without it (GFD writes
    none where NVML reports no memory size, e.g. the unified-memory GB10: KAI-Scheduler#706) cannot take it."""
    bare = _kai_nodes(snapshot).no_memory_label
    if not bare:
        return []
    return [
        f"gpu-memory: kai-scheduler sizes it from the node label {GPU_MEMORY_LABEL}, missing on {some_of(bare)} "
        f"(GPU Feature Discovery writes none where the GPU reports no memory size, as on unified-memory GB10): "
        "KAI finds no GPU memory there and leaves the pod Pending; label those nodes with their GPU memory (MiB) "
        "or ask for gpu-fraction instead"
    ]


def gated(snapshot: ClusterSnapshot, pod: Pod) -> tuple[str, KueueReading | None]:
    """For a pod with scheduling gates: what it waits for, and the Kueue reading when Kueue gates it. Per
    pod, never shared between pods alike (each plain pod has its own Workload)."""
    kueue = read_pod(snapshot, pod) if KUEUE_ADMISSION_GATE in pod.scheduling_gates else None
    return waiting_text(pod, kueue), kueue


def waiting_text(pod: Pod, kueue: KueueReading | None) -> str:
    gates = list(pod.scheduling_gates)
    by = []
    if kueue is not None:
        by.append("Kueue " + kueue.headline())
    others = [g for g in gates if g != KUEUE_ADMISSION_GATE]
    if others:
        by.append(f"whatever removes the gate(s) {', '.join(others)}")
    return (
        f"waiting for admission by {' and '.join(by)}: the pod has schedulingGates {gates}, so kube-scheduler's "
        "PreEnqueue keeps it out of the queue (status SchedulingGated); it is not tried and no FailedScheduling "
        "event is written until the gates are removed"
    )
