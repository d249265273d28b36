"""Small openb-shaped clusters for the simulator tests: nodes, pods and direct placements, a small trace, and
the KubegpuCpuFrag plugin as its tests build it (shared by ``test_cpu_frag.py`` and ``test_cpu_frag_state.py``)."""

from __future__ import annotations

import numpy as np

from kubegpu.model.objects import Pod
from kubegpu.model.resources import CPU, MEMORY
from kubegpu.scheduler.assembly import SchedulerSpec, assemble
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import Handle, ReasonTable
from kubegpu.scheduler.gpu_ledger import GpuShareLedger
from kubegpu.scheduler.gpu_shapes import GpuShape, TypicalPods, pod_shape
from kubegpu.scheduler.plugins.cpu_frag import CpuAwareFragmentation
from kubegpu.sim.openb import TraceNode, TracePod, to_node, to_pod


def node(name: str, gpus: int, cpu: int = 64_000, model: str = "T4", memory_mib: int = 262_144) -> TraceNode:
    return TraceNode(name, cpu, memory_mib, gpus, model)


def pod(
    name: str,
    gpus: int = 1,
    milli: int = 1000,
    cpu: int = 4000,
    spec: frozenset[str] | None = None,
    memory_mib: int = 1024,
) -> Pod:
    return to_pod(TracePod(name, cpu, memory_mib, gpus, milli if gpus else 0, spec))


def typical(
    *shapes: tuple[int, int, int, float],
    models: tuple[frozenset[str] | None, ...] = (),
    memory_mib: tuple[int, ...] = (),
) -> TypicalPods:
    """Shapes as (cpu, gpu count, milli per GPU, popularity); ``memory_mib`` per shape, if given."""
    return TypicalPods(
        cpu=np.array([s[0] for s in shapes], dtype=np.int64),
        count=np.array([s[1] for s in shapes], dtype=np.int64),
        milli=np.array([s[2] for s in shapes], dtype=np.int64),
        # popularity as an exact integer weight over 10⁶ (every popularity below has ≤ 6 decimals)
        weight=np.array([round(s[3] * 1_000_000) for s in shapes], dtype=np.int64),
        scale=1_000_000,
        models=models or tuple(None for _ in shapes),
        memory=np.array([TracePod("", 0, m, 0, 0).memory_request for m in memory_mib], dtype=np.int64)
        if memory_mib
        else None,
    )


class Bench:
    """A cluster, its ledger and a packing scheduler for one policy."""

    def __init__(self, nodes: list[TraceNode], policy: str, target: TypicalPods | None = None, seed: int = 0):
        self.cluster = ClusterState([to_node(n) for n in nodes])
        self.ledger = GpuShareLedger(self.cluster, target)
        spec = SchedulerSpec("packing", policy=policy, seed=seed)
        self.scheduler = assemble(spec, self.cluster, sharing=self.ledger)

    def place(self, p: Pod, node_name: str, gpus: tuple[int, ...] = ()) -> None:
        """Put ``p`` on a node and GPUs of our choosing (state set-up, not a scheduling decision)."""
        idx = self.cluster.index[node_name]
        shape: GpuShape = pod_shape(p)
        if shape.count:
            self.ledger.assign(p, idx, gpus, shape.milli)
        self.cluster.add_pod(p, idx)

    def schedule(self, p: Pod) -> tuple[str | None, tuple[int, ...]]:
        """Schedule ``p``; returns its node and the GPUs GpuShare reserved."""
        result = self.scheduler.schedule_one(p, preempt=False)
        held = self.ledger.held.get(p.key)
        return result.node, held[1] if held else ()


def trace() -> list[TracePod]:
    """20 pods cycling through five GPU shapes (sharing, whole-GPU, CPU-only, 2-GPU, quarter-GPU)."""
    shapes = [(1, 500), (1, 1000), (0, 0), (2, 1000), (1, 250)]
    return [TracePod(f"pod-{i:02d}", 2000 + 100 * (i % 3), 1024, *shapes[i % len(shapes)]) for i in range(20)]


CPU_FRAG = "KubegpuCpuFrag"


def cpu_frag(
    ledger: GpuShareLedger,
    weight: float = 0.5,
    reserve: float = 1.0,
    quantum: int | None = None,
    balance: float = 0.0,
) -> CpuAwareFragmentation:
    """The plugin with its defaults but without the balance term (β = 0: the tests of the other terms
    work their scores out without it; the balance tests set it), or with a fixed quantum
    (``quantumFullAt`` 0: q = ``cpuQuantum`` whatever the target workload's whole-node demand)."""
    args: dict[str, object] = {
        "cpuWeight": weight,
        "reserveWeight": reserve,
        "balanceWeight": balance,
    }
    if quantum is not None:
        args |= {"cpuQuantum": quantum, "quantumFullAt": 0}
    return CpuAwareFragmentation(args, Handle(ReasonTable(), sharing=ledger))


def use_cpu(b: Bench, row: int, milli_cpu: int) -> None:
    """Mark ``milli_cpu`` of node ``row``'s CPU requested (as pods without GPU would)."""
    b.cluster.requested[row, b.cluster.col[CPU]] = milli_cpu


def use_memory(b: Bench, row: int, gib: int) -> None:
    """Mark ``gib`` GiB of node ``row``'s memory requested."""
    b.cluster.requested[row, b.cluster.col[MEMORY]] = TracePod("", 0, gib * 1024, 0, 0).memory_request
