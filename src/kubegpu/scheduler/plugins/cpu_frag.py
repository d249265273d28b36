"""CPU- and memory-aware fragmentation (policy ``KubegpuCpuFrag``): FGD's score over a fragment measure
that also counts GPU capacity a node's free CPU and memory cannot feed.

FGD (Weng et al., ATC '23) asks of each typical shape t only whether it fits a node (GPU model, GPUs,
CPU); if it fits, the free milli on GPUs too small for t is t's fragment, and nothing else. So a node
with 8 free GPUs and 12 free CPUs looks unfragmented to a shape {1 GPU, 11 CPU} although it can host one
such pod, not eight. On the openb default trace that is where FGD's idle GPUs end up: at 100 % arrived
most of them sit on 8-GPU nodes left with under 12 free CPUs, while the CPU-rich 2-GPU T4 nodes keep
thousands of free CPUs (``docs/fgd-reproduction.md``).

This plugin counts, per node and typical shape t that fits, how many copies of t the node could still
host by GPU (Σ_g ⌊free_g / milli_t⌋ // count_t) and feed by CPU and memory (min(⌊free CPU / cpu_t⌋,
⌊free memory / memory_t⌋)); the GPU milli of the copies they cannot feed, weighted by λ
(``cpuWeight``, default 0.5), is the shape's stranding S_t. A node's empty-state stranding S⁰_t (all
its CPU, memory and GPUs free) is its hardware's CPU and memory per GPU, not a fragment, so only the
part beyond it counts:

    F_t = below_t + max(0, S_t − S⁰_t)                  (t fits the node)
    S_t = λ · max(0, gpu_copies_t − fed_copies_t) · count_t · milli_t
    F_t = all free milli-GPU                             (t does not fit)

"Fits" is FGD's (model, GPUs, CPU) and also free memory ≥ memory_t, the mean memory request of the
target workload's pods of shape t (``TypicalPods.memory``; FGD's measure ignores memory, which the
filters enforce; without memory in the target workload it is left out). On the openb multigpu traces
memory strands GPUs as much as CPU does on the 8-GPU G2 nodes (48 GiB per GPU; most 1-GPU pods there
ask 40–56 GiB).

and, where whole-node shapes carry part of the target workload's GPU demand, the CPU part Σ_t p_t ·
max(0, S_t − S⁰_t) is rounded to the nearest multiple of a quantum

    q = q_max · min(1, w / w_full)

w being the share of the target workload's GPU demand (Σ_t p_t · count_t · milli_t) in shapes that take
as many GPUs as the cluster's largest node has (``whole_node_share``), q_max = ``cpuQuantum`` (default
500 milli-GPU) and w_full = ``quantumFullAt`` (default 0.3; 0 = always q_max); halves round to the even
multiple. With no whole-node shape (the default, cpu and gpushare traces) q = 0 and nothing is rounded.
λ = 0 with no memory in the target workload is FGD's measure exactly. The score is FGD's,
``int(100 · σ(Δ / 1000))`` of the decrease Δ of Σ_t p_t F_t, with FGD's tie-break (first node in order)
and FGD's GPU choice for sharing pods. The effect: pods heavy in CPU or memory per GPU, and CPU-only
pods, are steered to nodes with CPU and memory to spare, and nodes short of them are kept for pods
light in them.

Why the two refinements (``docs/fgd-reproduction.md``): without them the policy lost to FGD on the
multigpu traces, where 8-GPU pods need whole free 8-GPU nodes. Counting a node's own hardware
stranding rewarded CPU-light pods for taking GPUs of fresh CPU-short nodes (that lowers the node's
stranding); and small stranding differences broke FGD's many score ties, which FGD gives to the first
node in order, so fewer whole nodes stayed free (our reading of why rounding helps: measured, not
proven). The rounding costs the cpu traces their gain when applied everywhere (cpu235, seeds 0–3: 4.58
unrounded, 5.36 at q = 500), hence a quantum that grows with the demand whole nodes carry.

Worked example (the tests' first case): a node with 4 free GPUs and 16 of its 64 CPUs free and one
typical shape {1 GPU × 1000 milli, 8 CPU}: 4 copies by GPU, 2 by CPU, so F = 0.5 · 2 · 1000 = 1000
milli (empty, it fed all 4: nothing to subtract; no whole-node shape, so no rounding; FGD: 0).
λ = 0.5 was chosen on the default trace, seeds 0–3 (0.25 / 0.5 / 1: 4.57 / 4.52 / 4.67 % unallocated
at 100 % arrived, FGD 4.83), the empty-state baseline and q_max = 500 on multigpu40, seeds 0–3
(w_full = 0.3 set once so that multigpu40, w = 0.27, gets nearly q_max; not searched), then checked
on the default, cpu0, cpu235 and multigpu20/30/50 traces, seeds 0–3 — never on the evaluation seeds
42–51. Memory adds no constant (checked on the same held-out seeds).

Balance: the per-shape terms see one pod at a time against one shape at a time, and (rounded to the
quantum, relative to the node's empty state) they miss a node slowly running out of CPU or memory for
its remaining GPUs. So each node also has its unfed GPU

    U = max(0, free milli-GPU − free CPU / c, free milli-GPU − free memory / m)

c and m being the target workload's CPU and memory per milli-GPU (Σ_t p_t cpu_t and Σ_t p_t memory_t
over Σ_t p_t · count_t · milli_t, CPU-only shapes' CPU included: the cluster must feed them too; a
resource the target does not ask for is not counted): the GPU that the node's free CPU and memory could
not feed if the rest of the workload arrived in its average mix. A pod is charged β · (1 − w) · (U
after − U before) in Δ (β = ``balanceWeight``, default 0.25; w the whole-node share above, since pods
that need a whole node never use a partly used node's CPU and memory): positive when the pod takes more
CPU or memory per GPU than the workload does on a node that cannot spare them, negative when it takes
GPU such a node could not have fed. Unlike the stranding term this is not part of the fragment measure
(the cluster's fragment amount stays FGD's). β = 0.25 was chosen on held-out seeds 0–3 (0.125 / 0.25 /
0.375 / 0.5 / 1 on multigpu40, unscaled: 3.06 / 2.97 / 2.98 / 3.01 / 6.74; 1 breaks whole-node
packing); unscaled, it made multigpu50 bimodal (seeds 0–11: 2.51–3.16; on seed 4, 3.16, every pod
failed by arrived = 100 % was an 8-GPU pod, 25 of them: too few 8-GPU nodes stayed whole), hence
1 − w (seeds 0–11: multigpu50 2.64, multigpu40 3.01, FGD 2.92 / 3.13). Checked on the default, multigpu, cpu, gpushare and gpuspec traces (``docs/fgd-reproduction.md``).

Model reserve: the CPU term alone steers CPU-heavy pods to CPU-rich nodes, and on the gpuspec traces
those are the T4 nodes whose GPUs T4-only pods need (FGD's measure does not charge a whole GPU taken
there while the shape still fits). So a GPU model m gets a scarcity s_m = min(1, D_m / C_m): the share of the target
workload's GPU demand restricted to m over m's share of the cluster's GPUs (``model_scarcity``), and a
pod taking ``milli`` GPU on a node of model m is charged ρ · milli · (s_m − least s among its feasible
nodes) in Δ (ρ = ``reserveWeight``, default 1). With no restricted shape every s is 0 and the policy is
unchanged; a pod whose feasible nodes are all of one model is unchanged too. ρ = 1 was chosen on
gpuspec20/25/33, seeds 0–1 (``docs/fgd-reproduction.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

import numpy as np
import numpy.typing as npt

from kubegpu.errors import ConfigError
from kubegpu.model.objects import Pod
from kubegpu.scheduler.cluster import CPU_MEMORY_COLUMNS, ClusterState, NodeView
from kubegpu.scheduler.framework import CycleState, Handle, Rows, Scores
from kubegpu.scheduler.gpu_ledger import GpuShareLedger
from kubegpu.scheduler.gpu_shapes import MILLI, FloatArray, GpuShape, IntArray, TypicalPods, pod_shape
from kubegpu.scheduler.gpu_share import fgd_scores, sharing_ledger
from kubegpu.scheduler.node_cache import GROUP_FROM, MAX_KEYS, NodeCache, once_per_kind
from kubegpu.scheduler.plugin_calls import score_one
from kubegpu.scheduler.status import SUCCESS, Status

BoolArray = npt.NDArray[np.bool_]
# columns from which ``_fed`` divides in float64: ⌊fl(a / b)⌋ = ⌊a / b⌋ for integers b ≥ 1 and |a| + b <
# 2**53 (a and b are exact; q = ⌊a / b⌋ is a double and a / b ≥ q, so fl(a / b) ≥ q; a / b ≤ q + 1 − 1/b,
# and the doubles next to q + 1 are at most max(|q|, |q + 1|) · 2**-52 apart, which b · max(|q|, |q + 1|)
# ≤ |a| + b < 2**53 makes less than 2/b: a / b never rounds up to q + 1). Below it int64 division costs less.
FLOAT_FROM: Final = 32
CPU_AWARE_FRAG: Final = "CpuAwareFragmentation"
DEFAULT_CPU_WEIGHT: Final = 0.5
DEFAULT_RESERVE_WEIGHT: Final = 1.0
DEFAULT_CPU_QUANTUM: Final = 500
DEFAULT_QUANTUM_FULL_AT: Final = 0.3
DEFAULT_BALANCE_WEIGHT: Final = 0.25


def model_scarcity(t: TypicalPods, ledger: GpuShareLedger) -> FloatArray:
    """Per GPU model id of ``ledger``: min(1, D_m / C_m), where D_m is the share of the target workload's
    GPU demand (Σ p_t · count_t · milli_t) from shapes restricted to a model set containing m (split
    evenly over the set's models present in the cluster) and C_m is m's share of the cluster's GPUs.
    Since the workload asks for about the cluster's capacity, this is the part of m's GPUs the
    model-restricted pods will want; 0 for every model when no shape is restricted."""
    names = ledger.model_names
    gpus = np.bincount(ledger.model_id, weights=ledger.gpu_count, minlength=len(names))
    demand = np.zeros(len(names), dtype=np.float64)
    need = t.gpu_demand
    for i, allowed in enumerate(t.models):
        present = [m for m, name in enumerate(names) if allowed is not None and name in allowed and gpus[m]]
        for m in present:
            demand[m] += need[i] / len(present)
    share = np.divide(gpus, gpus.sum(), out=np.zeros_like(gpus), where=gpus.sum() > 0)
    ratio = np.divide(demand / max(need.sum(), 1), share, out=np.zeros_like(demand), where=share > 0)
    out: FloatArray = np.minimum(ratio, 1.0)
    return out


def _dot(a: IntArray, b: IntArray) -> int:
    return sum(x * y for x, y in zip(a.tolist(), b.tolist(), strict=True))


def fraction_arg(args: Mapping[str, Any], key: str, default: float) -> float:
    """``args[key]`` (or ``default``) as a number in [0, 1]; anything else is a ConfigError naming it."""
    value = args.get(key, default)
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 1:
        raise ConfigError(f"{CPU_AWARE_FRAG}: args.{key} must be a number in [0, 1], not {value!r}")
    return float(value)


def whole_node_share(t: TypicalPods, ledger: GpuShareLedger) -> float:
    """The share of the target workload's GPU demand (Σ p_t · count_t · milli_t) in shapes asking for as
    many GPUs as the cluster's largest node has: pods that need a whole free node."""
    need = t.gpu_demand
    largest = ledger.gpu_left.shape[1]  # the most GPUs on one node (at least 1)
    total = float(need.sum())
    return float(need[t.count >= largest].sum()) / total if total else 0.0


class CpuAwareFragmentation:
    """The handle's GPU-share ledger (with a target workload) is measured. Args: ``cpuWeight`` λ in [0, 1],
    ``reserveWeight`` ρ in [0, 1], ``cpuQuantum`` q_max (milli-GPU, an integer ≥ 1), ``quantumFullAt``
    w_full in [0, 1] and ``balanceWeight`` β in [0, 1]."""

    name: ClassVar[str] = CPU_AWARE_FRAG

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.ledger = sharing_ledger(CPU_AWARE_FRAG, handle)
        self.typical = self.ledger._typical()  # fails at construction when no target workload is set
        self.weight = fraction_arg(args, "cpuWeight", DEFAULT_CPU_WEIGHT)
        self.reserve = fraction_arg(args, "reserveWeight", DEFAULT_RESERVE_WEIGHT)
        quantum = args.get("cpuQuantum", DEFAULT_CPU_QUANTUM)
        if not isinstance(quantum, int) or isinstance(quantum, bool) or quantum < 1:
            raise ConfigError(f"{CPU_AWARE_FRAG}: args.cpuQuantum must be an integer ≥ 1, not {quantum!r}")
        full_at = fraction_arg(args, "quantumFullAt", DEFAULT_QUANTUM_FULL_AT)
        balance = fraction_arg(args, "balanceWeight", DEFAULT_BALANCE_WEIGHT)
        t = self.typical
        share = whole_node_share(t, self.ledger)
        # only the demand that shares nodes competes for a partly used node's CPU and memory
        self.balance = balance * (1 - share)
        self.quantum = quantum * (min(1.0, share / full_at) if full_at else 1.0)
        self.scarcity = model_scarcity(t, self.ledger)
        # whether the reserve charge can be non-zero: some model scarcer than another, with a weight
        self._reserving = bool(self.reserve and np.ptp(self.scarcity) > 0) if len(self.scarcity) else False
        self._milli = np.maximum(t.milli, 1)  # CPU-only shapes never fit a node's GPUs: kept out below
        n = len(self.ledger.cluster)
        # per node (a column each): the measure and the unfed GPU, and the state they are computed from
        # (``_layout``), valid while the node's ``ClusterState.version`` equals ``_gen`` (only nodes
        # changed since are recomputed)
        self._now: FloatArray = np.zeros((2, n), dtype=np.float64)
        self._gen: IntArray = np.full(n, -1, dtype=np.int64)
        # per pod shape and node: ``node_delta`` where a reserve charge applies (it is relative to the
        # rows scored together, so only Δ is a node's own), else the score itself (Δ's score is element-wise)
        self._deltas = NodeCache(self.ledger.cluster, np.float64)
        self._scores = NodeCache(self.ledger.cluster, np.int64)
        self._steps: dict[GpuShape, IntArray] = {}  # per pod shape: ``_step``
        # the target workload's CPU and memory per milli-GPU (0: it asks none, or no GPU; not counted)
        # exact ratios of Python integers (memory × weight overflows int64): the same bits on any CPU
        demand = _dot(t.weight, t.count * t.milli)
        per_milli = (
            _dot(t.weight, t.cpu) / demand if demand else 0.0,
            _dot(t.weight, t.memory) / demand if demand and t.memory is not None else 0.0,
        )
        # the resources counted (rows of ``unfed``'s ``free``: CPU, memory), as a range, and per milli-GPU
        fed = [i for i, r in enumerate(per_milli) if r]
        self._feeds = slice(fed[0], fed[-1] + 1) if fed else slice(0, 0)
        self._per_milli = np.array(per_milli)[self._feeds, None]
        self._layout(t)

    def _layout(self, t: TypicalPods) -> None:
        """The state of a node or after-state: a column of 4 + 4S rows (``_measure`` reads ``[4 + 4S, K]``:
        an operation on a block of rows runs over contiguous memory; ``_nodes`` keeps them node-major, a
        row per node), over the S shapes with GPUs (a CPU-only shape never fits a node's
        GPUs: its F_t is all free milli-GPU and its stranding 0, a constant weight on the free
        milli-GPU), shapes alike but for the GPU models they may use counted once, multi-GPU shapes first
        (the only units ``_strand`` divides). Rows: free CPU, free memory; per shape 1 + the GPUs that fit
        it − its GPUs (≥ 1: it fits by GPU); free milli-GPU; per shape the free milli on GPUs that fit it
        (free milli less FGD's ``below``), its units Σ_g ⌊free_g / milli_t⌋, and the node's empty-state
        stranding; last, the node's weight pattern: which shapes of each group may use its GPU model
        (``TypicalPods.access``; a shape that may not use it never fits there: its weight is left out).
        The GPU rows are sums over the node's GPUs of a row per free value (``_table``), so a pod's
        after-state is one gather of the state plus its ``_step`` (and for a sharing pod, its GPU's
        table row out and in), and the measure is a few operations on whole blocks."""
        lg = self.ledger
        cluster = lg.cluster
        gpu_shapes = np.flatnonzero(t.milli > 0)
        gpu_shapes = np.concatenate(
            (gpu_shapes[t.count[gpu_shapes] > 1], gpu_shapes[t.count[gpu_shapes] <= 1])
        )
        # shapes alike but for the GPU models they may use (the gpuspec traces': 117 shapes, 75 groups)
        # have one state: a model the shape may not use only leaves its weight out (``_by_pattern``)
        memory = t.memory if t.memory is not None else np.zeros_like(t.cpu)
        groups: dict[tuple[int, int, int, int], list[int]] = {}
        for i in gpu_shapes.tolist():
            key = (int(t.cpu[i]), int(memory[i]), int(t.count[i]), int(t.milli[i]))
            groups.setdefault(key, []).append(i)
        shapes = np.array([members[0] for members in groups.values()], dtype=np.intp)
        s = len(shapes)
        self._shapes = shapes  # one shape of each group
        self._fitm, self._total = slice(2, 2 + s), 2 + s
        self._above, self._units = slice(3 + s, 3 + 2 * s), slice(3 + 2 * s, 3 + 3 * s)
        self._empty = slice(3 + 3 * s, 3 + 4 * s)
        self._pattern = 3 + 4 * s
        self._gpu = slice(2, 3 + 3 * s)  # the rows a pod's GPUs change
        self._free = CPU_MEMORY_COLUMNS
        self._multi = int((t.count[shapes] > 1).sum())
        self._copy_gpus = t.count[shapes][: self._multi, None]
        self._copy_milli = (t.count * t.milli)[shapes, None]  # milli-GPU a copy holds
        per_gpu = MILLI // t.milli[shapes]  # copies a whole free GPU holds
        self._per_gpu = per_gpu
        # per shape: the CPU and memory a copy asks for (memory None: the target workload does not say;
        # not counted), whether it asks any memory (a shape asking none is never short of it), and
        # the divisors of the copies free CPU and memory feed
        self._cpu = t.cpu[shapes, None]
        self._memory = t.memory[shapes, None] if t.memory is not None else None
        self._asks_memory = self._memory > 0 if self._memory is not None else None
        # a shape asking no CPU feeds 0 copies by CPU (what numpy's integer ``x // 0`` gave, with a warning,
        # before: kept as is), so its CPU divisor is 1 and its quotient set to 0 (``_no_cpu``)
        self._cpu_div = cpu_div = self._cpu.clip(min=1)
        self._no_cpu = np.flatnonzero(self._cpu == 0) if not self._cpu.all() else None
        self._divisors = np.stack((cpu_div, self._memory.clip(min=1))) if self._memory is not None else None
        # float64 division is exact enough below 2**53 (``FLOAT_FROM``): free CPU and memory never exceed
        # allocatable (a pod only takes), so only a low bound is left to check, per call
        self._float_divisors = (cpu_div if self._divisors is None else self._divisors).astype(np.float64)
        top = max(int(cluster.allocatable[:, self._free].max(initial=0)), 0)
        bottom = int(self._divisors.max(initial=1)) if self._divisors is not None else 1
        self._float_low = bottom - 2**53 if top + bottom < 2**53 else 2**63 - 1  # (never: int64 division)
        # fitting by CPU and memory is feeding ≥ 1 copy when every shape asks some of each (else the
        # comparisons, ``_fits``)
        self._fed_fits = bool((self._cpu > 0).all()) and (self._memory is None or bool(self._memory.all()))
        # weights · [total, above, stranded] → [Σ_t weight_t · F_t of FGD, Σ_t weight_t · stranded_t]: a
        # shape that fits counts free milli − above, one that does not all free milli. Per group and GPU
        # model, the weight of the group's shapes that may use the model (integers: the sums stay exact);
        # models of equal weights share a pattern (``_by_pattern``), each node's in its state's last row;
        # with one pattern (no shape restricted to some models) the weights are constants
        member = np.zeros((s, len(t.weight)), dtype=np.int64)
        for g, members in enumerate(groups.values()):
            member[g, members] = 1
        by_model = member @ (t.weight[:, None] * t.access(lg.model_names))  # [S, M]: integers
        patterns: dict[bytes, int] = {}
        of_model = [patterns.setdefault(by_model[:, m].tobytes(), m) for m in range(by_model.shape[1])]
        first = sorted(set(of_model))
        pattern = np.array([first.index(m) for m in of_model], dtype=np.int64)
        self._all = int(t.weight.sum())
        self._by_pattern = np.ascontiguousarray(by_model[:, first]) if len(first) > 1 else None
        one = by_model[:, first[0]] if first else np.zeros(s, dtype=np.int64)
        weights = np.zeros((2, 1 + 2 * s), dtype=np.int64)
        weights[0, 0] = self._all
        weights[0, 1 : 1 + s] = -one
        weights[1, 1 + s :] = one
        self._weights = weights
        # per free milli v = 0 … 1000 of one GPU (a row each): its part of the GPU rows (the ledger's
        # ``counts_of`` and ``units_of`` per value; row-major: a gather of rows of a column-major matrix
        # costs ~100 times more)
        free = np.arange(MILLI + 1, dtype=np.int64)[:, None]
        fit, below, total = lg.counts_of(free)
        parts = (
            fit[:, shapes],
            total[:, None],
            total[:, None] - below[:, shapes],
            self.units_of(free)[:, shapes],
        )
        self._table: IntArray = np.ascontiguousarray(np.concatenate(parts, axis=1))
        # each node's state with no free CPU, memory or GPU: 1 − count per shape, the stranding it has
        # when empty (its hardware's own CPU and memory per GPU, not a fragment), and its weight pattern
        base = np.zeros((4 + 4 * s, len(cluster)), dtype=np.int64)
        base[:2] = cluster.allocatable[:, self._free].T
        base[self._units] = per_gpu[:, None] * lg.gpu_count
        self._strand(base, self._fed(base))
        base[self._empty] = base[self._units]
        base[:2] = base[self._units] = 0
        base[self._fitm] = 1 - t.count[shapes, None]
        if self._by_pattern is not None:
            base[self._pattern] = pattern[lg.model_id]
        # kept node-major (a node's state is one contiguous row: a gather of a few nodes reads a few
        # cache lines each, not one line per state row), gathered and transposed for ``_measure``
        self._base: IntArray = np.ascontiguousarray(base.T)
        self._nodes: IntArray = self._base.copy()

    def units_of(self, gpu_left: IntArray) -> IntArray:
        """Σ_g ⌊free_g / milli_t⌋ per row and shape (a CPU-only shape's column is never read)."""
        out: IntArray = np.add.reduce(gpu_left[:, :, None] // self._milli, axis=1)
        return out

    def unfed(self, gpu_left: IntArray, free: IntArray) -> FloatArray:
        """Free milli-GPU (``gpu_left[K]``) beyond what the free CPU and memory (``free[2, K]``) could feed
        at the target workload's CPU and memory per milli-GPU."""
        short = free[self._feeds] / self._per_milli
        if not len(short):
            return np.zeros(len(gpu_left), dtype=np.float64)
        np.subtract(gpu_left, short, out=short)
        out: FloatArray = np.maximum(0.0, short[0])
        if len(short) > 1:
            np.maximum(out, short[1], out=out)
        return out

    def _fed(self, state: IntArray) -> IntArray:
        """[S, K]: copies of each shape the free CPU and memory of each column of ``state`` can feed."""
        if self._divisors is None:
            fed: IntArray = state[0:1] // self._cpu_div
            if self._no_cpu is not None:
                fed[self._no_cpu] = 0
            return fed
        if state.shape[1] < FLOAT_FROM or state[:2].min() < self._float_low:
            both = state[:2, None] // self._divisors  # [2, S, K]: by CPU, by memory
        else:  # the same integers (``FLOAT_FROM``), and faster on many columns
            quotient = state[:2, None] / self._float_divisors
            both = np.floor(quotient, out=quotient).astype(np.int64)
        fed = both[0]
        if self._no_cpu is not None:
            fed[self._no_cpu] = 0
        if self._fed_fits:  # every shape asks memory
            np.minimum(fed, both[1], out=fed)
        else:  # a shape asking no memory is never short of it
            np.minimum(fed, both[1], out=fed, where=self._asks_memory)
        return fed

    def _strand(self, state: IntArray, fed: IntArray) -> None:
        """Overwrite the units of ``state`` with the milli-GPU of the copies of each shape its GPUs could
        host but ``fed`` cannot feed, less the empty-state stranding, at least 0 (λ is applied to the
        weighted sum, in ``_measure``: integers stay exact until then). One clip: max(0, max(0, copies −
        fed) · milli − b) is max(0, (copies − fed) · milli − b) when b ≥ 0 and milli ≥ 0."""
        copies = state[self._units]
        if self._multi:  # (only there a copy takes several GPUs)
            copies[: self._multi] //= self._copy_gpus
        copies -= fed
        copies *= self._copy_milli
        copies -= state[self._empty]
        np.maximum(copies, 0, out=copies)

    def _fits(self, state: IntArray, fed: IntArray) -> BoolArray:
        """[S, K]: shape t fits column k (a GPU model it may use, enough GPUs that fit it, enough CPU, and
        enough memory when the target workload says how much it asks)."""
        if self._fed_fits:  # cpu ≥ cpu_t and memory ≥ memory_t (both > 0): ⌊cpu / cpu_t⌋, ⌊… / memory_t⌋ ≥ 1
            fits: BoolArray = np.minimum(state[self._fitm], fed) > 0
            return fits
        fits = state[self._fitm] > 0
        fits &= state[0:1] >= self._cpu
        if self._memory is not None:
            fits &= state[1:2] >= self._memory
        return fits

    def _measure(self, state: IntArray) -> tuple[FloatArray, FloatArray]:
        """Σ_t p_t · F_t and the unfed GPU of each column of ``state`` (``_layout``'s columns; its units are
        overwritten): FGD's part, with a shape the node's free memory cannot hold counted as not
        fitting, plus the stranding beyond the node's empty-state stranding, rounded to the whole-node
        quantum. Column by column (element-wise, and exact integer sums), so a node's value does not
        depend on the other columns."""
        lg = self.ledger
        fed = self._fed(state)
        fits = self._fits(state, fed)  # one mask for FGD's part and the CPU part
        self._strand(state, fed)
        pairs = state[self._above.start : self._units.stop].reshape(2, len(self._shapes), -1)  # a view
        if self._by_pattern is None:
            np.multiply(pairs, fits, out=pairs)  # above and stranded where the shape fits
            sums = self._weights @ state[self._total : self._units.stop]  # integers: exact
            plain = sums[0]
        else:  # the weight of the group's shapes that may use the column's model, where the group fits
            weights = self._by_pattern.take(state[self._pattern], axis=1)
            weights *= fits
            pairs *= weights
            sums = np.add.reduce(pairs, axis=1)
            plain = self._all * state[self._total] - sums[0]
        cpu_part = self.weight * sums[1]
        unfed = self.unfed(state[self._total], state[:2])
        if not self.quantum:  # nothing to round
            return lg.milli(plain + cpu_part), unfed
        out: FloatArray = lg.milli(plain) + np.round(lg.milli(cpu_part) / self.quantum) * self.quantum
        return out, unfed

    def _state_of(self, rows: Rows, gpu_left: IntArray | None = None) -> IntArray:
        """The state (``_layout``) of ``rows`` now, or with ``gpu_left`` as their free milli per GPU."""
        return self._rows_of(rows, gpu_left).T.copy()

    def _rows_of(self, rows: Rows, gpu_left: IntArray | None = None) -> IntArray:
        """``_state_of`` node-major (a row per node), as ``_nodes`` keeps it."""
        cluster = self.ledger.cluster
        state = self._base.take(rows, axis=0)
        free = cluster.allocatable.take(rows, axis=0)[:, self._free]  # (whole rows: a cheaper gather)
        free -= cluster.requested.take(rows, axis=0)[:, self._free]
        state[:, :2] = free
        left = self.ledger.gpu_left.take(rows, axis=0) if gpu_left is None else gpu_left
        state[:, self._gpu] += self._table.take(left, axis=0).sum(axis=1)
        return state

    def _renew(self, node: int) -> None:
        """``_state_of`` one node, written to its column."""
        cluster, column = self.ledger.cluster, self._nodes[node]
        column[:] = self._base[node]
        column[:2] = cluster.allocatable[node, self._free] - cluster.requested[node, self._free]
        column[self._gpu] += self._table[self.ledger.gpu_left[node]].sum(axis=0)

    def measure(
        self,
        rows: Rows,
        cpu_left: IntArray,
        memory_left: IntArray,
        counts: tuple[IntArray, IntArray, IntArray],
        units: IntArray,
    ) -> FloatArray:
        """Σ_t p_t · F_t of ``rows`` in the state given by free CPU and memory, FGD's per-shape counts
        (``GpuShareLedger.counts``) and units (``units_of``): the measure from its definition's inputs,
        which the tests recount a node's state into to check the kept per-node state (``_nodes``) and the
        after-states ``node_delta`` builds (the scheduling path reads ``_measure`` of those directly)."""
        fit, below, total = counts
        state = self._base.take(rows, axis=0).T.copy()
        shapes = self._shapes
        state[0], state[1], state[self._total] = cpu_left, memory_left, total
        state[self._fitm] += fit[:, shapes].T
        state[self._above] = (total[:, None] - below[:, shapes]).T
        state[self._units] = units[:, shapes].T
        return self._measure(state)[0]

    def frag(self, rows: Rows) -> FloatArray:
        """The measure of ``rows`` now."""
        return self._measure(self._state_of(rows))[0]

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Status:
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeView) -> int:
        return score_one(self, state, pod, node)

    def score_batch(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Scores:
        """``int(100 · σ((Δ − reserve) / 1000))`` per row, Δ the node's best decrease of the measure less
        the balance charge (``node_delta``: element-wise arithmetic on that node's state and exact integer
        sums, so the same whichever rows are computed with it), the reserve charge relative to the least
        scarcity among ``rows``. Cached per pod shape and node: the score itself where no reserve charge
        applies (the default), else Δ, the charge being relative to the rows scored together."""
        shape = pod_shape(pod)
        if not (self._reserving and shape.total_milli):  # no charge: each node's score is its own
            kept: Scores = self._scores.values(
                shape, rows, lambda stale: self._scored(shape, self.node_delta(shape, stale))
            )
            return kept
        best = self._deltas.values(shape, rows, lambda stale: self.node_delta(shape, stale))
        return self._scored(shape, best - self.reserved(rows, shape.total_milli))

    @staticmethod
    def _scored(shape: GpuShape, best: FloatArray) -> Scores:
        """FGD's score of each decrease; -1 where a sharing pod's Δ is −∞ (none of the node's GPUs fits it:
        never a feasible node, and only a sharing pod's Δ can be −∞)."""
        if not shape.is_share:
            return fgd_scores(best)
        scores: Scores = np.where(best > -np.inf, fgd_scores(best), -1)
        return scores

    def _step(self, shape: GpuShape) -> IntArray:
        """What a pod of ``shape`` changes in a node's state (``_layout``) whatever the node, as a column:
        its CPU and memory, and for whole GPUs (the simulator's ``NodeResource.Sub``: ``count`` GPUs from
        1000 free, which fits every shape, to 0) the GPU rows."""
        step = self._steps.get(shape)
        if step is None:
            if len(self._steps) >= MAX_KEYS:  # bounded, as the node cache's shapes
                self._steps.clear()
            whole = shape.count and shape.milli == MILLI
            step = np.zeros((self._gpu.stop if whole else 2, 1), dtype=np.int64)
            step[:2, 0] = -shape.cpu, -shape.memory
            if whole:
                step[self._fitm] = -shape.count
                step[self._total] = step[self._above] = -shape.count * MILLI
                step[self._units, 0] = -shape.count * self._per_gpu
            self._steps[shape] = step
        return step

    def node_delta(self, shape: GpuShape, rows: Rows) -> FloatArray:
        """Per row: the decrease of the measure when a pod of ``shape`` lands there (on its best GPU for a
        sharing pod; −∞ when no GPU fits it) less the balance charge (``_delta``). Of many rows, those
        still empty are alike per ``GpuShareLedger.empty_kind``: one of each is computed
        (``node_cache.once_per_kind``; a node's Δ is a function of its own state: kind and empty state; on
        the default trace, seed 42, 130k of the 194k rows of calls of ≥ ``GROUP_FROM`` rows)."""
        if len(rows) < GROUP_FROM:
            return self._delta(shape, rows)
        lg = self.ledger
        return once_per_kind(rows, lg.untouched(rows), lg.empty_kind, lambda some: self._delta(shape, some))

    def _delta(self, shape: GpuShape, rows: Rows) -> FloatArray:
        """``node_delta`` of each of ``rows``.

        One ``_measure`` pass over a stack of states: first each row after the pod (for a sharing pod,
        one state per distinct free value of a GPU that fits), then the current state of the rows whose
        cached measure is older than the node (their cached state renewed first). An after-state is the
        cached state plus the pod's ``_step``; for a sharing pod also its GPU's table row at ``value −
        milli`` less at ``value`` (a pod's GPUs are a share of one GPU or whole ones:
        ``gpu_shapes.gpu_request_problem``)."""
        lg = self.ledger
        renew = lg.cluster.moved(rows, self._gen)  # (stamped now: their values are written below)
        if len(renew) == 1:  # the usual case (the node the last pod took): by index, no gathers
            self._renew(int(renew[0]))
        elif renew.size:
            self._nodes[renew] = self._rows_of(renew)
        if shape.is_share:  # each node scores its best GPU, as FGD: only that GPU and the CPU change
            pos, value = lg.share_moves(rows, shape.milli)
            after = rows[pos]
        else:
            after = rows
        k = len(after)  # states[:, :k]: after the pod
        state = self._nodes.take(np.concatenate((after, renew)) if renew.size else after, axis=0).T.copy()
        step = self._step(shape)
        state[: len(step), :k] += step
        if shape.is_share:
            moved = self._table.take(value - shape.milli, axis=0)
            moved -= self._table.take(value, axis=0)
            state[self._gpu, :k] += moved.T
        measured, unfed = self._measure(state)
        if renew.size:
            self._now[0, renew], self._now[1, renew] = measured[k:], unfed[k:]
            measured, unfed = measured[:k], unfed[:k]
        now = self._now.take(after, axis=1)
        out: FloatArray = now[0] - measured - self.balance * (unfed - now[1])
        if not shape.is_share:
            return out
        best = np.empty(len(rows), dtype=np.float64)
        best.fill(-np.inf)  # (``np.full`` is a Python function around these two: a microsecond more)
        np.maximum.at(best, pos, out)
        return best

    def reserved(self, rows: Rows, milli: int) -> FloatArray:
        """The cost of taking ``milli`` of the GPUs of ``rows`` that model-restricted shapes will want:
        reserveWeight · milli · (scarcity of the row's model − the least scarcity among ``rows``). Relative
        to the least, so a pod whose nodes are all of one model (a restricted pod) is scored as before."""
        s = self.scarcity[self.ledger.model_id[rows]]
        out: FloatArray = self.reserve * milli * (s - s.min() if len(s) else s)
        return out
