"""What the cluster exporter reports, computed from one snapshot through the scheduling core (R13, R14.1).

``measure`` builds the scheduling core's view of a snapshot (an ``Engine``: the device ledger, the
cluster state) and reads off, per pool (the value of the pool label on each node; nodes without it are
in ``kubegpu.explain.cards.UNPOOLED``):

* physical GPUs, allocated, idle, unhealthy, *stranded* (idle on a node that takes no new pod:
  cordoned, NotReady, or out of pod slots, CPU or memory) and the largest idle block on one node that
  takes pods: the report's node cards and per-pool summary (``kubegpu.explain.cards.node_cards`` and
  ``pools``), reused as is;
* FGD's fragment amount (``fragmentation``): free GPU the cluster's popular GPU pod shapes cannot use,
  weighted by popularity, and its ratio to the pool's free GPU;
* per GPU resource (``nvidia.com/gpu``, ``nvidia.com/mig-1g.18gb``, …) the devices nodes advertise as
  allocatable and those placed pods request, as the scheduler counts them;
* per node, the same idle/stranded/fragment numbers, and whether the node takes new pods;
* Pending GPU pods (not yet bound, not terminating), per GPU resource they ask for (``is_gpu``; one value,
  ``UNADVERTISED``, for all GPU resources no node advertises, so the label stays bounded);
* the GPU pods the fragmentation measure leaves out (a ``kubegpu.io/gpu-count`` annotation that makes
  their request no GPU shape), with the reason;
* per pool and DRA driver, the devices the ResourceSlices publish, those allocated claims hold and those
  still allocatable (``kubegpu.explain.dra_inventory``: a device whose pool's shared counters are taken is
  neither; a network slice's devices in the unpooled pool).

Must not: read the cluster, format metrics, or decide what is idle or stranded itself (the report's
summary does); every number comes from the scheduling core's objects.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kubegpu.cluster_exporter.fragmentation import NodeFragmentation, node_fragmentation
from kubegpu.explain.cards import UNPOOLED, PoolSummary, node_cards
from kubegpu.explain.cards import pools as pools_of
from kubegpu.explain.dra_inventory import partitionable, pool_counts
from kubegpu.explain.engine import Engine
from kubegpu.explain.gpu_pod import is_gpu_pod
from kubegpu.explain.overview import node_rows
from kubegpu.model.dra import DraObjects
from kubegpu.model.objects import Pod
from kubegpu.model.resources import is_gpu
from kubegpu.scheduler.gpu_shapes import GPU_MILLI_RESOURCE, MILLI


@dataclass(frozen=True, slots=True)
class PoolMeasure:
    summary: PoolSummary
    fragment_milli: float | None  # None: no GPU pod shapes to measure against, or no GPU in the model
    free_milli: int  # free milli-GPU in the fragmentation model


@dataclass(frozen=True, slots=True)
class NodeMeasure:
    name: str
    pool: str
    gpus_idle: int
    gpus_stranded: int
    accepts_pods: bool
    fragmentation: NodeFragmentation | None


@dataclass(frozen=True, slots=True)
class ClusterMeasure:
    pools: tuple[PoolMeasure, ...]
    nodes: tuple[NodeMeasure, ...]
    devices: dict[tuple[str, str], tuple[int, int]]  # (pool, resource) -> (allocatable, requested)
    pending: dict[str, int]  # GPU resource asked for ("" for a pod that only tolerates the GPU taint) -> pods
    rejected_objects: int  # objects of the snapshot that did not parse
    dra: dict[tuple[str, str], tuple[int, int, int]] = field(
        default_factory=dict
    )  # (pool, driver) -> (devices, allocated, free)
    # GPU pods left out of the fragmentation measure: (pod key, why their GPU request is no shape)
    unshaped: tuple[tuple[str, str], ...] = ()


def measure(engine: Engine, pool_label: str) -> ClusterMeasure:
    """Everything the cluster exporter serves, for ``engine``'s snapshot."""
    snap = engine.snapshot
    # the report's node cards and pool summary only: no Pending pod is explained, no quota or queue read
    cards = node_cards(engine, node_rows(engine, pool_label), pool_label)
    fragmentation = node_fragmentation(engine)
    frag = fragmentation.nodes or {}
    nodes = tuple(
        NodeMeasure(
            card.name,
            card.pool,
            sum(1 for g in card.gpus if g.idle),
            0 if card.accepts_pods else sum(1 for g in card.gpus if g.idle),
            card.accepts_pods,
            frag.get(card.name),
        )
        for card in cards
    )
    pools = []
    for summary in pools_of(cards):
        in_pool = [n.fragmentation for n in nodes if n.pool == summary.pool and n.fragmentation is not None]
        # A pool with no GPU in the fragmentation model (MIG-only nodes, no device plugin yet) has no value.
        fragment = sum(f.fragment_milli for f in in_pool) if in_pool else None
        pools.append(PoolMeasure(summary, fragment, sum(f.free_milli for f in in_pool)))
    dra = pool_counts(snap, pool_label, UNPOOLED, partitionable(engine)) if snap.dra.slices else {}
    devices = _devices(engine, pool_label)
    return ClusterMeasure(
        tuple(pools),
        nodes,
        devices,
        _pending(snap.pending_pods(), snap.dra, {r for _, r in devices}),
        len(snap.errors),
        dra,
        fragmentation.skipped,
    )


def _devices(engine: Engine, pool_label: str) -> dict[tuple[str, str], tuple[int, int]]:
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for idx, node in enumerate(engine.cluster.nodes):
        view = engine.cluster.view(idx)
        pool = node.labels.get(pool_label, "") or UNPOOLED
        for r, amount in node.allocatable.items():
            if is_gpu(r) and amount:
                allocatable, requested = out.get((pool, r), (0, 0))
                out[(pool, r)] = (allocatable + amount // MILLI, requested + view.requested(r) // MILLI)
    return out


# The ``resource`` value of Pending pods whose GPU resource no node advertises (a misspelt ``nvidia.com/gpus``,
# a MIG profile no node has): one value, since request names are user input and each would be a series.
UNADVERTISED = "unadvertised"


def _pending(pending: list[Pod], dra: DraObjects, advertised: set[str]) -> dict[str, int]:
    """Pending GPU pods per GPU resource asked for (``is_gpu`` or ``kubegpu.io/gpu-milli``; a resource no node
    advertises counts under ``UNADVERTISED``), ``""`` for GPU pods that ask for none. A pod that asks only for
    other ``nvidia.com/*`` resources (``nvidia.com/hostdev``, a NIC of the Network Operator; a typo outside
    the GPU names) is no Pending GPU pod here: ``kubegpu diagnose`` names it."""
    out: Counter[str] = Counter()
    for pod in pending:
        asked = {
            r if r in advertised or r == GPU_MILLI_RESOURCE else UNADVERTISED
            for r, v in pod.requests.items()
            if v and (is_gpu(r) or r == GPU_MILLI_RESOURCE)
        }
        if asked:
            out.update(asked)
        elif is_gpu_pod(pod, dra) and not any(
            v and r.startswith("nvidia.com/") for r, v in pod.requests.items()
        ):
            # tolerates the GPU taint, gets GPUs through a DRA claim, another scheduler or vendor
            out[""] += 1
    return dict(out)
