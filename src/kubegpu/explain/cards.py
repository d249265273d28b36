"""What the report shows, from an ``Engine`` and its ``Diagnosis``, as plain frozen data (R2, R13.4, R14).

The GPU map is drawn from the device ledger (``engine.cluster.devices``), not from counts: one tile per
physical GPU behind a node's advertised devices, its slots being the devices kubelet hands out (the whole
GPU, its MIG devices, or its time-sliced / MPS replicas), each with the pod holding it. Where the ledger
had to *assume* a pod's device IDs (nobody recorded them) or the devices themselves are stand-ins
synthesised from capacity and labels, the data says so, because the tile would otherwise claim more than
the API server knows. A node with GPU labels but no device model (the device plugin never registered)
gets a card without tiles: it has no devices a pod could be given.

Fragmentation (R14.1) is summarised per pool from the same tiles: idle GPUs (healthy, no slot held), the
largest idle block on one node (what the biggest single-node job could get), how idle GPUs spread over
nodes, and *stranded* GPUs: idle but on a node no new pod can use (cordoned, NotReady, or out of pod
slots, CPU or memory).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from kubegpu.batch.objects import parse_batch_objects
from kubegpu.batch.quota import QuotaBook
from kubegpu.batch.workloads import workloads
from kubegpu.devices.inventory import Health
from kubegpu.explain.diagnose import Diagnosis
from kubegpu.explain.dra_inventory import DraDevice, partitionable
from kubegpu.explain.dra_inventory import devices as dra_devices
from kubegpu.explain.engine import Engine
from kubegpu.explain.overview import NodeRow
from kubegpu.explain.summary import PodAsk, pod_ask
from kubegpu.model.gpu_facts import GPU_PRODUCT_LABEL
from kubegpu.model.objects import Pod
from kubegpu.model.quantity import format_milli
from kubegpu.model.resources import is_gpu
from kubegpu.scheduler.cluster import NodeView
from kubegpu.scheduler.device_ledger import container_requests, recorded_assignment

UNPOOLED = "(no pool label)"


class SlotKind(StrEnum):
    GPU = "gpu"  # the whole GPU is one allocatable device
    MIG = "mig"
    REPLICA = "replica"  # a time-sliced or MPS replica
    SHARE = "share"  # milli-GPU of one GPU (openb's GPU-sharing pods; label "460m"), or the free rest


@dataclass(frozen=True)
class Slot:
    """One allocatable device on a physical GPU and the pod holding it ("" when free)."""

    device_id: str
    resource: str
    kind: SlotKind
    label: str  # MIG profile, "replica N", or "" for a whole GPU
    holder: str  # pod key "namespace/name"
    healthy: bool
    # the holder's device IDs were inferred, not recorded (no kubegpu.io/allocated-devices annotation). Read
    # from the pod, not ``DeviceLedger.assumed``: a scheduling dry run (preemption) that removes and re-adds
    # a pod drops it from that set.
    assumed: bool
    workload: str = ""  # the holder's controller, "ReplicaSet vllm-6b7c9d" (R13.4 joins on it)

    @property
    def namespace(self) -> str:
        return self.holder.partition("/")[0] if self.holder else ""


@dataclass(frozen=True)
class GpuTile:
    node: str
    index: int
    uuid: str
    slots: tuple[Slot, ...]
    synthesized: bool

    @property
    def healthy(self) -> bool:
        return all(s.healthy for s in self.slots)

    @property
    def holders(self) -> tuple[str, ...]:
        return tuple(sorted({s.holder for s in self.slots if s.holder}))

    @property
    def namespaces(self) -> tuple[str, ...]:
        return tuple(sorted({s.namespace for s in self.slots if s.holder}))

    @property
    def idle(self) -> bool:
        return self.healthy and not self.holders

    @property
    def partitioned(self) -> bool:
        return any(s.kind is not SlotKind.GPU for s in self.slots)


@dataclass(frozen=True)
class NodeCard:
    name: str
    pool: str
    product: str
    ready: bool
    unschedulable: bool
    taints: tuple[str, ...]
    synthesized: bool
    sharing: str  # none | time-slicing | mps | mig-single | mig-mixed | "" without a device model
    gpus: tuple[GpuTile, ...]
    resources: tuple[tuple[str, str, str], ...]  # (resource, requested, allocatable) as kubectl prints them
    problems: tuple[str, ...]  # device-model problems, and GPU pods the ledger could not place on devices
    accepts_pods: bool  # schedulable, Ready, with pod slots, CPU and memory left

    @property
    def holders(self) -> tuple[str, ...]:
        return tuple(sorted({h for g in self.gpus for h in g.holders}))

    @property
    def namespaces(self) -> tuple[str, ...]:
        return tuple(sorted({ns for g in self.gpus for ns in g.namespaces}))


@dataclass(frozen=True)
class QuotaBar:
    namespace: str
    name: str
    resource: str
    used: str
    hard: str
    fraction: float  # used / hard, 1.0 when hard is 0


@dataclass(frozen=True)
class PoolSummary:
    pool: str
    nodes: int
    gpus: int
    held: int  # GPUs with at least one slot held
    idle: int
    unhealthy: int
    stranded: int  # idle GPUs on nodes that accept no new pod
    largest_idle_block: int  # most idle GPUs on one node that accepts pods
    free_slots: int  # free healthy MIG devices / replicas on GPUs partly held (not counted as idle)
    idle_spread: tuple[tuple[int, int], ...]  # (idle GPUs on a node, how many such nodes), pods accepted
    # the FGD fragment amount of the pool's nodes in GPUs (Weng et al., ATC '23, §4): only where a packing
    # run's target workload defines it
    fragment_gpus: float | None = None


@dataclass(frozen=True)
class ReportData:
    description: str
    generated: str
    pool_label: str
    nodes: tuple[NodeCard, ...]
    pools: tuple[PoolSummary, ...]
    quotas: tuple[QuotaBar, ...]
    diagnosis: Diagnosis
    queues: tuple[QuotaBar, ...] = ()  # GpuQueue usage against nominal quota (namespace field: the cohort)
    pending_requests: dict[str, str] = field(default_factory=dict)  # pod key → "4 nvidia.com/gpu"
    # pod key → what it asks for and where: the headline groups Pending pods by it, as ``diagnose`` does
    pending_asks: dict[str, PodAsk] = field(default_factory=dict)

    @property
    def gpu_count(self) -> int:
        return sum(len(n.gpus) for n in self.nodes)

    @property
    def namespaces(self) -> tuple[str, ...]:
        found = {ns for n in self.nodes for ns in n.namespaces}
        found.update(p.pod.partition("/")[0] for p in self.diagnosis.pending)
        found.update(q.namespace for q in self.quotas)
        return tuple(sorted(found))


def collect(engine: Engine, diagnosis: Diagnosis, pool_label: str, generated: str = "") -> ReportData:
    """The report's data for ``engine``'s snapshot; ``diagnosis`` must come from the same engine."""
    cards = node_cards(engine, diagnosis.nodes, pool_label)
    return ReportData(
        description=diagnosis.description,
        generated=generated,
        pool_label=pool_label,
        nodes=tuple(cards),
        pools=tuple(pools(cards)),
        quotas=tuple(_quotas(engine)),
        queues=tuple(_queues(engine)),
        diagnosis=diagnosis,
        pending_requests=_requests(engine, diagnosis),
        pending_asks={
            e.pod: pod_ask(p, engine.snapshot.dra)
            for e in diagnosis.pending
            if (p := engine.snapshot.pod(e.pod))
        },
    )


def _dra_slot(d: DraDevice, pods: dict[str, Pod]) -> Slot:
    """A DRA device as a slot: held by the pod its claim is reserved for (or the claim, before a pod)."""
    owner = pods[d.holder].owner if d.holder in pods else None
    kind, label = (SlotKind.MIG, d.profile) if d.kind == "mig" else (SlotKind.GPU, "")
    return Slot(d.device_id, d.driver, kind, label, d.holder, True, False,
                f"{owner.kind} {owner.name}" if owner else "")  # fmt: skip


def node_cards(engine: Engine, node_rows: Sequence[NodeRow], pool_label: str) -> list[NodeCard]:
    """One card per GPU node (a device model or a row of ``node_rows``), tiles from the device ledger,
    sorted by pool then name; ``pools(cards)`` summarises them."""
    ledger = engine.cluster.devices
    rows = {r.name: r for r in node_rows}
    dra_by_node: dict[str, list[DraDevice]] = {}
    for pub in dra_devices(engine.snapshot, partitionable(engine)) if engine.snapshot.dra.slices else ():
        if pub.unavailable:
            continue  # its pool's shared counters are taken (a full GPU beside its allocated MIG device)
        dra_by_node.setdefault(pub.node, []).append(pub)
    cards = []
    for idx, node in enumerate(engine.cluster.nodes):
        model = ledger.models[idx]
        row = rows.get(node.name)
        published = dra_by_node.get(node.name, [])
        if model is None and row is None and not published:
            continue  # not a GPU node
        held = ledger.held[idx]
        view = engine.cluster.view(idx)
        pods: dict[str, Pod] = {p.key: p for p in view.pods}
        by_gpu: dict[int, list[Slot]] = {}
        uuid_of: dict[int, str] = {}
        for resource, plan in sorted(model.plans.items()) if model else ():
            for d in plan.devices:
                holder = held.get(resource, {}).get(d.id, "")
                owner = pods[holder].owner if holder in pods else None
                if d.mig_index is not None:
                    kind, label = SlotKind.MIG, resource.removeprefix("nvidia.com/mig-")
                elif plan.shared:
                    kind, label = SlotKind.REPLICA, f"replica {d.id.rpartition('::')[2]}"
                else:
                    kind, label = SlotKind.GPU, ""
                by_gpu.setdefault(d.gpu_index, []).append(Slot(
                    d.id, resource, kind, label, holder, d.health == Health.HEALTHY,
                    holder in pods and recorded_assignment(pods[holder]) is None,
                    f"{owner.kind} {owner.name}" if owner else "",
                ))  # fmt: skip
                if kind is not SlotKind.MIG:
                    uuid_of[d.gpu_index] = d.device
        if model is None:  # a DRA node: its tiles from the slices, each device held by its claim's pod
            for pub in published:
                if pub.kind in ("gpu", "mig") and pub.gpu_index >= 0:
                    by_gpu.setdefault(pub.gpu_index, []).append(_dra_slot(pub, pods))
        synthesized = model.synthesized if model else False
        tiles = tuple(
            GpuTile(node.name, i, uuid_of.get(i, ""), tuple(slots), synthesized)
            for i, slots in sorted(by_gpu.items())
        )
        accepts = accepts_pods(view)
        # a snapshot can over-commit a node (it disagrees with itself); such pods hold GPUs by count only
        unplaced = tuple(
            f"{p.key} requests GPUs but no free device was left for it: the snapshot over-commits this node"
            for p in pods.values()
            if model is not None and container_requests(p) and p.key not in ledger.assignments
        )
        resources = tuple(
            (r, v["requested"], v["allocatable"]) for r, v in (row.gpu.items() if row else ()) if is_gpu(r)
        )
        dra_note = (
            (f"also publishes {len(published)} device(s) through DRA ({published[0].driver}): shown once, from "
             "the device plugin; `kubegpu diagnose` names the double counting",)
            if model is not None and published else ()
        )  # fmt: skip
        cards.append(NodeCard(
            name=node.name, pool=node.labels.get(pool_label, "") or UNPOOLED,
            product=(model.product if model and model.product else node.labels.get(GPU_PRODUCT_LABEL, "")),
            ready=node.ready, unschedulable=node.unschedulable, taints=tuple(str(t) for t in node.taints),
            synthesized=synthesized, sharing=model.sharing if model else "", gpus=tiles, resources=resources,
            problems=(model.problems if model else ("no device model: the node advertises no GPU resource",))
            + unplaced + dra_note,
            accepts_pods=accepts,
        ))  # fmt: skip
    cards.sort(key=lambda c: (c.pool == UNPOOLED, c.pool, c.name))
    return cards


def accepts_pods(view: NodeView) -> bool:
    """Schedulable, Ready, with a pod slot, CPU and memory left: idle GPUs elsewhere are stranded."""
    node = view.node
    return (
        node.ready
        and not node.unschedulable
        and view.pod_count < view.allocatable("pods") // 1000
        and view.free("cpu") > 0
        and view.free("memory") > 0
    )


def _requests(engine: Engine, diagnosis: Diagnosis) -> dict[str, str]:
    out = {}
    for e in diagnosis.pending:
        pod = engine.snapshot.pod(e.pod)
        if pod is not None:
            # every nvidia.com/* name, as ``gpu_pod.is_gpu_pod`` counts them: a misspelt one is the point
            asked = [
                f"{format_milli(r, v)} {r}"
                for r, v in sorted(pod.requests.items())
                if r.startswith("nvidia.com/") and v
            ]
            out[e.pod] = ", ".join(asked) or "no GPU (tolerates the GPU taint)"
    return out


def pools(cards: Sequence[NodeCard]) -> list[PoolSummary]:
    """Per pool: GPUs held, idle, unhealthy, stranded, the largest idle block and how idle GPUs spread."""
    by_pool: dict[str, list[NodeCard]] = {}
    for c in cards:
        by_pool.setdefault(c.pool, []).append(c)
    out = []
    for pool, nodes in by_pool.items():
        tiles = [g for n in nodes for g in n.gpus]
        idle_per_node = {n.name: sum(1 for g in n.gpus if g.idle) for n in nodes}
        open_nodes = [n for n in nodes if n.accepts_pods and n.gpus]
        spread = Counter(idle_per_node[n.name] for n in open_nodes)
        out.append(PoolSummary(
            pool=pool, nodes=len(nodes), gpus=len(tiles), held=sum(1 for g in tiles if g.holders),
            idle=sum(1 for g in tiles if g.idle), unhealthy=sum(1 for g in tiles if not g.healthy),
            stranded=sum(idle_per_node[n.name] for n in nodes if not n.accepts_pods),
            largest_idle_block=max((idle_per_node[n.name] for n in open_nodes), default=0),
            idle_spread=tuple(sorted(spread.items())),
            free_slots=sum(
                1 for g in tiles if g.partitioned and g.holders for s in g.slots if s.healthy and not s.holder
            ),
        ))  # fmt: skip
    return out


def _queues(engine: Engine) -> list[QuotaBar]:
    """Each queue's usage of each GPU resource in its nominal quota (over 100% = borrowed from its cohort)."""
    queues, cohorts, groups, _ = parse_batch_objects(engine.snapshot.batch_objects)
    book = QuotaBook(queues, cohorts).charge_admitted(workloads(engine.snapshot.pods, groups))
    out = []
    for name, q in sorted(queues.items()):
        for r, nominal in sorted(q.nominal.items()):
            if not is_gpu(r):
                continue
            used = book.usage[name].get(r, 0)
            out.append(QuotaBar(q.cohort, name, r, format_milli(r, used), format_milli(r, nominal),
                                used / nominal if nominal else 1.0))  # fmt: skip
    return out


def _quotas(engine: Engine) -> list[QuotaBar]:
    out = []
    for q in engine.snapshot.quotas:
        for r, hard in sorted(q.hard.items()):
            if not is_gpu(r.removeprefix("requests.").removeprefix("limits.")):
                continue  # the report is about GPUs; CPU/memory quotas belong to other tools
            used = q.used.get(r, 0)
            resource = r.removeprefix("requests.").removeprefix("limits.")
            out.append(QuotaBar(
                q.namespace, q.name, r, format_milli(resource, used), format_milli(resource, hard),
                used / hard if hard else 1.0,
            ))  # fmt: skip
    return sorted(out, key=lambda b: (b.namespace, b.name, b.resource))
