"""Pod GPU shapes and the target workload of typical shapes (R9.2, R14.1): what the GPU-share ledger
(``gpu_ledger``) and the packing policies measure a pod and the fragmentation target by.

A pod's GPU shape: request ``kubegpu.io/gpu-milli`` = count × per-GPU milli (an integer quantity, e.g.
``"460"``) and annotation ``kubegpu.io/gpu-count`` (default 1). GPU-model constraints are ordinary
required node affinity on ``nvidia.com/gpu.product`` and so stay NodeAffinity's rule. The API server
takes any annotation text, so a pod whose request is not a shape (``gpu_request_problem``) is kept, with
the reason in ``GpuShape.problem``: GpuShare's PreFilter refuses it, every other reader skips it.

Owns the shape rules and ``GetTypicalPods``; imports the model, ``errors`` and numpy only. Everything that
reads a pod's shape or the target (the ledger, the plugins, the faces) imports these names from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Final

import numpy as np
import numpy.typing as npt

from kubegpu.errors import ConfigError
from kubegpu.model.names import GPU_COUNT_ANNOTATION
from kubegpu.model.objects import DEFAULT_MILLI_CPU_REQUEST, Pod
from kubegpu.model.resources import CPU, GPU_MILLI, MEMORY

GPU_MILLI_RESOURCE: Final = GPU_MILLI
MILLI: Final = 1000

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class GpuShape:
    """What a pod needs of a node for packing: CPU (non-zero default applied), GPU count, milli per GPU,
    and memory (request units; FGD's measure ignores it, ``KubegpuCpuFrag``'s counts it)."""

    cpu: int
    count: int
    milli: int
    memory: int = 0
    # why the pod's GPU request is no shape ("" for every shape): then count and milli are 0, so a reader
    # that does not look sees a pod asking no GPU
    problem: str = ""

    @property
    def total_milli(self) -> int:
        return self.count * self.milli

    @property
    def is_share(self) -> bool:
        return is_share(self.count, self.milli)


def is_share(count: int, milli: int) -> bool:
    """A sharing request: a part of ONE GPU (whole-GPU pods ask ``count`` GPUs of 1000 milli)."""
    return count == 1 and milli < MILLI


def pod_shape(pod: Pod) -> GpuShape:
    """The pod's packing shape; milli-CPU and milli-GPU as integers (requests are milli-units). Worked
    example: requests cpu 4, ``kubegpu.io/gpu-milli: 2000``, annotation gpu-count 2 → (4000, 2, 1000).
    A cycle asks several plugins for it: kept on the pod (``Pod.derived``; renamed copies share it)."""
    return pod.derived(_SHAPE_OWNER, _shape_of)


_SHAPE_OWNER: Final = object()


def _shape_of(pod: Pod) -> GpuShape:
    req = pod.requests
    total = req.get(GPU_MILLI_RESOURCE, 0) // MILLI  # (the loader refuses a non-integer extended resource)
    # kube-scheduler's non-zero CPU default (``GetNonzeroRequests``: only a missing request gets it), which
    # the simulator's pod shapes use for a pod without a CPU request
    cpu = req.get(CPU, DEFAULT_MILLI_CPU_REQUEST)
    memory = req.get(MEMORY, 0)
    if not total:
        return GpuShape(cpu, 0, 0, memory)
    raw = pod.annotations.get(GPU_COUNT_ANNOTATION)
    # what Go's ``strconv.Atoi`` reads (the FGD simulator's parser): an optional sign, then ASCII digits (no
    # space, underscore or other script's digit, which ``int`` would take), a bounded number of them
    # (``int`` refuses over 4,300 digits; no count has more than a few); below 1 is no count
    body = raw[1:] if raw is not None and raw[:1] in ("+", "-") else raw
    digits = body is None or (body.isascii() and body.isdigit() and len(body) <= _COUNT_DIGITS)
    count = max((1 if raw is None else int(raw)) if digits else 0, 0)
    why = gpu_request_problem(count, total) if count else _NOT_A_COUNT
    if why:
        said = _NO_ANNOTATION if raw is None else f"annotation {GPU_COUNT_ANNOTATION}: {_quoted(raw)}"
        return GpuShape(cpu, 0, 0, memory, f"{GPU_MILLI_RESOURCE} {total} with {said}: {why}")
    return GpuShape(cpu, count, total // count, memory)


_NOT_A_COUNT: Final = "not a GPU count (a whole number from 1)"
_COUNT_DIGITS: Final = 18
_NO_ANNOTATION: Final = f"no annotation {GPU_COUNT_ANNOTATION} (1 GPU)"
_SHOWN: Final = 40  # characters of an annotation value a message quotes (annotations may hold 256 KiB)


def _quoted(value: str) -> str:
    """The value quoted on one line (JSON escapes), cut at ``_SHOWN`` characters."""
    import json

    return json.dumps(value[:_SHOWN]) + ("…" if len(value) > _SHOWN else "")


def gpu_request_problem(count: int, total: int) -> str:
    """THE rule of a GPU request the packing model places (``count`` ≥ 1 GPUs, ``total`` ≥ 1 milli-GPU
    over them): a share of ONE GPU (count 1, total ≤ 1000) or ``count`` whole GPUs (total = count × 1000).
    "" when it is one, else why not. It is the FGD simulator's (hkust-adsl/kubernetes-scheduler-simulator,
    pkg/type/open-gpu-share/utils/pod.go ``GetGpuAffinityFromPodAnnotation``, whose milli is per GPU:
    share iff count 1 and milli < 1000, whole iff count ≥ 1 and milli = 1000, else it panics) and the
    openb data's (README: ``gpu_milli`` is for ``num_gpu == 1``; every trace row is (0, 0), (1, 1..1000) or
    (n, 1000)); ``sim.openb`` reads by it. Where the simulator reads a count of 0 (annotation 0, negative
    or not a number: ``GetGpuCountFromPodAnnotation``) it sees a pod asking no GPU; here the pod asks for
    ``kubegpu.io/gpu-milli`` in its requests, so such a count is refused as no shape, not taken as none.
    Worked examples: (1, 460) share; (2, 2000) whole; (1, 1500) and (2, 1500) are no shape (the ledger
    would look for one GPU with 1500 free, or take whole GPUs and record 750 of each)."""
    if count == 1:
        return "" if total <= MILLI else f"one GPU has {MILLI} milli-GPU, not {total}"
    if total == count * MILLI:
        return ""
    return f"{count} GPUs are taken whole ({count} × {MILLI} = {count * MILLI} milli-GPU), not {total}"


@dataclass(frozen=True)
class TypicalPods:
    """The target workload: popular shapes with their popularity and the GPU models each may use
    (``models`` None = any). ``access[t, m]`` says whether shape t may use a GPU of model id m.
    ``memory``: each shape's mean memory request (None: not known, and not counted).

    Popularity is kept exact: p_t = ``weight[t]`` / ``scale`` (integers; the pod count of shape t over the
    pods the shapes cover), so a popularity-weighted sum of integer milli-GPU is an integer divided once
    (``GpuShareLedger.combine``): the same bits whichever rows are computed together and on any CPU."""

    cpu: IntArray
    count: IntArray
    milli: IntArray
    weight: IntArray
    models: tuple[frozenset[str] | None, ...]
    memory: IntArray | None = None
    scale: int = 0  # 0: Σ weight (popularity normalised to 1)

    def __post_init__(self) -> None:
        if not self.scale:
            object.__setattr__(self, "scale", int(self.weight.sum()) or 1)

    def __len__(self) -> int:
        return len(self.weight)

    @property
    def freq(self) -> FloatArray:
        """Popularity p_t (each an exact quotient, rounded once)."""
        out: FloatArray = self.weight / self.scale
        return out

    @property
    def gpu_demand(self) -> IntArray:
        """Each shape's GPU demand in weight units, weight_t · count_t · milli_t (∝ p_t · count_t · milli_t)."""
        out: IntArray = self.weight * self.count * self.milli
        return out

    def access(self, model_names: Sequence[str]) -> npt.NDArray[np.bool_]:
        out = np.ones((len(self), len(model_names)), dtype=bool)
        for t, allowed in enumerate(self.models):
            if allowed is not None:
                out[t] = [m in allowed for m in model_names]
        return out


def build_typical_pods(
    shapes: Iterable[tuple[GpuShape, frozenset[str] | None]], threshold_pct: int = 95
) -> TypicalPods:
    """The simulator's ``GetTypicalPods`` (CPU pods included, step 1, no GPU weighting): count each
    (shape, models) pair, sort by count descending — ties by the larger shape first (cpu, milli, count,
    models text), as ``sort.Reverse`` of the simulator's ``Less`` orders them — take shapes until their
    cumulative count reaches ``threshold_pct`` % of all pods, and renormalise their popularity to 1.
    Memory is not part of a shape (as in the simulator); each shape carries the mean memory request of
    its pods."""
    counts: dict[tuple[int, int, int, str], int] = {}
    memory: dict[tuple[int, int, int, str], int] = {}
    model_sets: dict[str, frozenset[str] | None] = {}
    total = 0
    texts: dict[frozenset[str] | None, str] = {}  # (a trace holds a few model sets, on many pods)
    for shape, models in shapes:
        text = texts.get(models)
        if text is None:
            text = texts[models] = "|".join(sorted(models)) if models else ""
            model_sets[text] = models or None
        key = (shape.cpu, shape.milli, shape.count, text)
        counts[key] = counts.get(key, 0) + 1
        memory[key] = memory.get(key, 0) + shape.memory
        total += 1
    if not total:
        raise ConfigError("typical pods: the workload is empty")
    ordered = sorted(counts.items(), key=itemgetter(1, 0), reverse=True)  # (count, key) pairs
    chosen: list[tuple[tuple[int, int, int, str], int]] = []
    cum = 0
    for key, n in ordered:
        if cum * 100 >= threshold_pct * total:
            break
        chosen.append((key, n))
        cum += n
    return TypicalPods(
        cpu=np.array([k[0] for k, _ in chosen], dtype=np.int64),
        count=np.array([k[2] for k, _ in chosen], dtype=np.int64),
        milli=np.array([k[1] for k, _ in chosen], dtype=np.int64),
        weight=np.array([n for _, n in chosen], dtype=np.int64),
        models=tuple(model_sets[k[3]] for k, _ in chosen),
        memory=np.array([memory[k] // n for k, n in chosen], dtype=np.int64),
        scale=cum,
    )
