"""The openb cluster after one of the simulator's packing runs, as report data (R14.1, issue 11).

``kubegpu report --openb`` runs ``kubegpu.sim.packing.run_packing`` once — one openb trace, one policy,
one seed, the workload drawn up to ``arrived_pct`` % of the cluster's GPU capacity (the protocol's
``ratio``) — and draws the state the run ends in, read through the run's ``observe`` hook: the
``GpuShareLedger`` says which pod holds which GPUs and how many milli-GPU of each, the ``ClusterState``
behind it what each node has left (CPU, memory, pod slots). Nothing is placed here.

A whole-GPU pod's GPU is one slot holding it; a GPU-sharing pod (openb's ``gpu_milli`` < 1000) is a
share slot of its milli-GPU on its GPU, beside the GPU's free rest. Pools are GPU models (the node
label ``nvidia.com/gpu.product``, which the trace's ``model`` column becomes). Each pool's summary adds
the run's own fragment amount (the ledger's ``node_frag`` over the pool's nodes), and the pods the run
could not place are listed as Pending with the message of their one scheduling cycle.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kubegpu.explain.cards import GpuTile, NodeCard, ReportData, Slot, SlotKind, accepts_pods, pools
from kubegpu.explain.diagnose import Diagnosis
from kubegpu.explain.pending import Explanation
from kubegpu.explain.summary import PodAsk
from kubegpu.model.names import GPU_PRODUCT_LABEL
from kubegpu.model.objects import Pod
from kubegpu.model.quantity import exact_sum, format_milli
from kubegpu.model.resources import CPU, MEMORY
from kubegpu.scheduler.gpu_ledger import GpuShareLedger
from kubegpu.scheduler.gpu_shapes import GPU_MILLI_RESOURCE, MILLI, pod_shape
from kubegpu.scheduler.schedule_one import ScheduleResult
from kubegpu.sim.bench import load_nodes, load_trace
from kubegpu.sim.packing import PackingRun, run_packing

FAILED_NOTE = (
    "Packing run (Weng et al., ATC '23, §6.1): every pod gets one scheduling cycle, no preemption and no "
    "retry; the message is that cycle's, against the cluster as it was when the pod arrived."
)


@dataclass(frozen=True)
class PackingSetup:
    """Which run to draw: the openb data folder, trace, policy (``registry.PACKING_POLICIES``), seed, and
    the arrived workload in % of GPU capacity."""

    data: Path
    trace: str = "default"
    policy: str = "FGD"
    seed: int = 42
    arrived_pct: int = 100


class _FinalState:
    """The ``observe`` hook: keeps the ledger (whose state after the last pod is the run's end state) and
    every cycle that found no node."""

    def __init__(self) -> None:
        self.ledger: GpuShareLedger | None = None
        self.failed: list[ScheduleResult] = []

    def __call__(self, result: ScheduleResult, ledger: GpuShareLedger) -> None:
        self.ledger = ledger
        if not result.scheduled:
            self.failed.append(result)


@dataclass(frozen=True)
class PackedCluster:
    """A finished run, its ledger in the end state, and the cycles that placed nothing."""

    setup: PackingSetup
    run: PackingRun
    ledger: GpuShareLedger
    failed: tuple[ScheduleResult, ...]


def pack(setup: PackingSetup) -> PackedCluster:
    """Run the simulator once for ``setup``."""
    seen = _FinalState()
    run = run_packing(
        load_nodes(setup.data), load_trace(setup.data, setup.trace), setup.policy, setup.seed,
        trace_name=setup.trace, ratio=setup.arrived_pct / 100, observe=seen,
    )  # fmt: skip
    assert seen.ledger is not None, "the workload of a packing run is never empty"
    return PackedCluster(setup, run, seen.ledger, tuple(seen.failed))


def _slots(holders: list[tuple[str, int]]) -> tuple[Slot, ...]:
    """One GPU's slots from its (pod key, milli-GPU) holders."""
    if not holders or holders[0][1] == MILLI:  # idle, or held whole by one pod
        holder = holders[0][0] if holders else ""
        return (Slot("", GPU_MILLI_RESOURCE, SlotKind.GPU, "", holder, True, False),)
    out = [Slot("", GPU_MILLI_RESOURCE, SlotKind.SHARE, f"{m}m", key, True, False) for key, m in holders]
    free = MILLI - sum(m for _, m in holders)
    if free:
        out.append(Slot("", GPU_MILLI_RESOURCE, SlotKind.SHARE, f"{free}m", "", True, False))
    return tuple(out)


def collect_packed(packed: PackedCluster, generated: str = "") -> ReportData:
    """The report's data for the run's end state; pools are GPU models."""
    ledger, cluster, s = packed.ledger, packed.ledger.cluster, packed.setup
    on_gpu: dict[tuple[int, int], list[tuple[str, int]]] = {}
    for key, (idx, gpus, milli) in sorted(ledger.held.items()):
        for g in gpus:
            on_gpu.setdefault((idx, g), []).append((key, milli))
    cards = []
    pool_rows: dict[str, list[int]] = {}
    for idx, node in enumerate(cluster.nodes):
        view = cluster.view(idx)
        model = node.labels.get(GPU_PRODUCT_LABEL, "")
        pool_rows.setdefault(model, []).append(idx)
        tiles = tuple(
            GpuTile(node.name, g, "", _slots(on_gpu.get((idx, g), [])), False)
            for g in range(int(ledger.gpu_count[idx]))
        )
        resources = tuple(
            (r, format_milli(r, view.requested(r)), format_milli(r, view.allocatable(r)))
            for r in (GPU_MILLI_RESOURCE, CPU, MEMORY)
        )
        cards.append(NodeCard(
            name=node.name, pool=model, product=model, ready=node.ready, unschedulable=node.unschedulable,
            taints=tuple(str(t) for t in node.taints), synthesized=False, sharing="", gpus=tiles,
            resources=resources, problems=(), accepts_pods=accepts_pods(view),
        ))  # fmt: skip
    cards.sort(key=lambda c: (c.pool, c.name))
    frag = {  # node_frag is in milli-GPU
        pool: float(ledger.node_frag(np.array(rows, dtype=np.intp)).sum()) / MILLI
        for pool, rows in pool_rows.items()
    }
    summaries = tuple(dataclasses.replace(p, fragment_gpus=frag[p.pool]) for p in pools(cards))
    run = packed.run
    capacity = run.total_gpus * MILLI
    description = (
        f"openb {s.trace}, {s.policy} packing run, seed {s.seed}, arrived {s.arrived_pct} % of GPU capacity: "
        f"{run.pods - len(packed.failed)} of {run.pods} pods placed, "
        f"{100 - 100 * int(run.allocated[-1]) / capacity:.2f} % of GPUs unallocated"
    )
    # as ``diagnose`` does, only GPU pods are explained; pods that asked for CPU alone are counted
    gpu_failed = [r for r in packed.failed if pod_shape(r.pod).count]
    pending = [Explanation(r.pod.key, False, None, r.message, notes=[FAILED_NOTE]) for r in gpu_failed]
    requested: dict[str, str] = {r.pod.key: _request(r) for r in gpu_failed}
    asks: dict[str, PodAsk] = {r.pod.key: _ask(r.pod) for r in gpu_failed}
    # the packing pods ask for kubegpu.io/gpu-milli only (not nvidia.com/gpu): that is what was requested
    col = cluster.col[GPU_MILLI_RESOURCE]
    allocatable = exact_sum(cluster.allocatable[:, col]) // MILLI
    totals = {
        GPU_MILLI_RESOURCE: {
            "capacity": allocatable,
            "allocatable": allocatable,
            "requested": exact_sum(cluster.requested[:, col]) // MILLI,
        }
    }
    diagnosis = Diagnosis(
        description=description, nodes=[], pending=pending, findings=[],
        other_pending=len(packed.failed) - len(gpu_failed), totals=totals,
    )  # fmt: skip
    return ReportData(
        description=description,
        generated=generated,
        pool_label=GPU_PRODUCT_LABEL,
        nodes=tuple(cards),
        pools=summaries,
        quotas=(),
        diagnosis=diagnosis,
        pending_requests=requested,
        pending_asks=asks,
    )


def _ask(pod: Pod) -> PodAsk:
    """What a trace pod asks for (``diagnose``'s grouping: its GPUs in the packing model's terms, its CPU and
    memory; trace pods name no pool)."""
    shape = pod_shape(pod)
    return PodAsk(f"{shape.count} GPU × {shape.milli} milli-GPU", "", pod.requests.get(CPU, 0), shape.memory)


def _request(result: ScheduleResult) -> str:
    """What a GPU pod asks for, as the trace gives it: ``1 GPU × 460 milli-GPU, 8 CPU, 30Gi memory``."""
    req = result.pod.requests
    return (
        f"{_ask(result.pod).devices}, {format_milli(CPU, req.get(CPU, 0))} CPU, "
        f"{format_milli(MEMORY, req.get(MEMORY, 0))} memory"
    )
