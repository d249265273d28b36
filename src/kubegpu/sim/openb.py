"""Readers for Alibaba's openb GPU trace (ATC '23 FGD paper data): nodes and pods as kubegpu objects.

Two pod layouts exist: 11 columns (``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos,
pod_phase, creation_time, deletion_time, scheduled_time``) and 5 columns (the ``multigpu*`` files: the
first five only). Nodes: ``sn, cpu_milli, memory_mib, gpu, model``. A row that cannot be read raises
``InputError`` naming ``file:line`` and the column.

Objects are built as the FGD artifact's YAML renders them (``pod_csv_to_yaml.py``): a node advertises
``cpu``, ``memory``, ``pods: 1001``, ``nvidia.com/gpu`` and ``kubegpu.io/gpu-milli`` (GPUs × 1000) and
labels ``nvidia.com/gpu.product``; a pod requests ``cpu``, ``memory`` and ``kubegpu.io/gpu-milli``
(GPUs × milli per GPU) with annotation ``kubegpu.io/gpu-count``; ``gpu_spec`` (``V100M16|V100M32``)
becomes required node affinity ``nvidia.com/gpu.product In (…)``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from kubegpu.errors import InputError, read_text
from kubegpu.model.names import GPU_COUNT_ANNOTATION, GPU_PRODUCT_LABEL, HOSTNAME_LABEL
from kubegpu.model.objects import Container, Node, NodeSelectorTerm, Pod, Requirement
from kubegpu.model.resources import CPU, MEMORY, NVIDIA_GPU, PODS
from kubegpu.scheduler.gpu_shapes import GPU_MILLI_RESOURCE, MILLI, gpu_request_problem

POD_COLUMNS_LONG: Final = (
    "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec",
    "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time",
)  # fmt: skip
POD_COLUMNS_SHORT: Final = POD_COLUMNS_LONG[:5]
NODE_COLUMNS: Final = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
MIB: Final = 1024 * 1024
NODE_MAX_PODS: Final = 1001  # the artifact's node YAML
NAMESPACE: Final = "openb"


@dataclass(frozen=True, slots=True)
class TracePod:
    """One row of a pod list; times in seconds (None where the layout or the row has none)."""

    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int  # per GPU
    gpu_spec: frozenset[str] | None = None
    qos: str = ""
    phase: str = ""
    creation_time: int | None = None
    deletion_time: int | None = None
    scheduled_time: int | None = None

    @property
    def total_gpu_milli(self) -> int:
        return self.num_gpu * self.gpu_milli

    @property
    def memory_request(self) -> int:
        """``memory_mib`` in the scheduler's request units (milli-bytes)."""
        return self.memory_mib * MIB * MILLI


@dataclass(frozen=True, slots=True)
class TraceNode:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


# Bounds that keep every derived amount inside an int64 milli-unit column (memory_mib × 2**20 × 1000) and
# every loop over GPUs short; a value beyond one is refused as not modelled, never wrapped or looped over.
MAX_VALUE: Final = 2**40
MAX_MEMORY_MIB: Final = 2**32  # 4 PiB
MAX_GPUS: Final = 1024  # per node or pod; the openb trace has at most 8


def _rows(path: Path, layouts: tuple[tuple[str, ...], ...]) -> Iterator[tuple[int, dict[str, str]]]:
    # one reader for every input: unreadable, UTF-16 or Latin-1 files are one error naming the file
    text = read_text(path, "trace")
    with io.StringIO(text, newline="") as f:
        reader = csv.reader(f)
        header = tuple(next(reader, ()))
        if header not in layouts:
            want = " or ".join(",".join(cols) for cols in layouts)
            raise InputError(f"unexpected header {','.join(header)!r}; expected {want}", source=f"{path}:1")
        for row in reader:
            line = reader.line_num
            if len(row) != len(header):
                raise InputError(f"{len(row)} fields, the header has {len(header)}", source=f"{path}:{line}")
            yield line, dict(zip(header, row, strict=True))


def _int(path: Path, line: int, row: dict[str, str], column: str, *, optional: bool = False) -> int | None:
    raw = row.get(column, "")
    if raw == "" and optional:
        return None
    # ASCII digits only: str.isdigit() also accepts "²", "٣" and "３", which int() then reads or refuses
    if not (raw.isascii() and raw.isdigit()):
        raise InputError(f"{raw!r} is not a non-negative integer", source=f"{path}:{line}", field=column)
    limit = (
        MAX_GPUS if column in ("gpu", "num_gpu") else MAX_MEMORY_MIB if column == "memory_mib" else MAX_VALUE
    )
    if len(raw) > 20 or int(raw) > limit:
        raise InputError(
            f"{raw[:40]} is more than kubegpu models ({limit})", source=f"{path}:{line}", field=column
        )
    return int(raw)


def _req(path: Path, line: int, row: dict[str, str], column: str) -> int:
    value = _int(path, line, row, column)
    assert value is not None
    return value


def read_pods(path: Path) -> list[TracePod]:
    """Every pod of an openb pod list, in file order (either layout)."""
    pods: list[TracePod] = []
    for line, row in _rows(path, (POD_COLUMNS_LONG, POD_COLUMNS_SHORT)):
        where = f"{path}:{line}"
        if not row["name"]:
            raise InputError("empty pod name", source=where, field="name")
        num_gpu, gpu_milli = _req(path, line, row, "num_gpu"), _req(path, line, row, "gpu_milli")
        if (num_gpu == 0) != (gpu_milli == 0):
            raise InputError(
                f"num_gpu {num_gpu} with gpu_milli {gpu_milli}: both must be 0 or both positive",
                source=where,
                field="gpu_milli",
            )
        why = gpu_request_problem(num_gpu, num_gpu * gpu_milli) if num_gpu else ""
        if why:  # the pods' rule (``to_pod`` writes the request and count ``pod_shape`` reads)
            raise InputError(
                f"num_gpu {num_gpu} × gpu_milli {gpu_milli}: {why}", source=where, field="gpu_milli"
            )
        spec = frozenset(m for m in row.get("gpu_spec", "").split("|") if m)
        pods.append(
            TracePod(
                name=row["name"],
                cpu_milli=_req(path, line, row, "cpu_milli"),
                memory_mib=_req(path, line, row, "memory_mib"),
                num_gpu=num_gpu,
                gpu_milli=gpu_milli,
                gpu_spec=spec or None,
                qos=row.get("qos", ""),
                phase=row.get("pod_phase", ""),
                creation_time=_int(path, line, row, "creation_time", optional=True),
                deletion_time=_int(path, line, row, "deletion_time", optional=True),
                scheduled_time=_int(path, line, row, "scheduled_time", optional=True),
            )
        )
    return pods


def read_nodes(path: Path) -> list[TraceNode]:
    nodes: list[TraceNode] = []
    for line, row in _rows(path, (NODE_COLUMNS,)):
        if not row["sn"]:
            raise InputError("empty node name", source=f"{path}:{line}", field="sn")
        gpus = _req(path, line, row, "gpu")
        if gpus and not row["model"]:
            raise InputError(f"{gpus} GPUs without a model", source=f"{path}:{line}", field="model")
        nodes.append(
            TraceNode(
                row["sn"],
                _req(path, line, row, "cpu_milli"),
                _req(path, line, row, "memory_mib"),
                gpus,
                row["model"],
            )
        )
    if not nodes:
        raise InputError("no nodes: the file holds only its header", source=str(path))
    return nodes


def to_node(n: TraceNode) -> Node:
    alloc = {
        CPU: n.cpu_milli,
        MEMORY: n.memory_mib * MIB * MILLI,
        PODS: NODE_MAX_PODS * MILLI,
        NVIDIA_GPU: n.gpus * MILLI,
        GPU_MILLI_RESOURCE: n.gpus * MILLI * MILLI,
    }
    labels = {HOSTNAME_LABEL: n.name}
    if n.gpus:
        labels[GPU_PRODUCT_LABEL] = n.model
        labels["nvidia.com/gpu.count"] = str(n.gpus)
    return Node(name=n.name, labels=labels, capacity=dict(alloc), allocatable=alloc, source="openb")


def to_pod(p: TracePod, name: str | None = None) -> Pod:
    """The pod as the scheduler sees it (``name`` overrides, for resampled copies)."""
    requests = {CPU: p.cpu_milli, MEMORY: p.memory_request}
    annotations: dict[str, str] = {}
    affinity: tuple[NodeSelectorTerm, ...] | None = None
    if p.num_gpu:
        requests[GPU_MILLI_RESOURCE] = p.total_gpu_milli * MILLI
        annotations[GPU_COUNT_ANNOTATION] = str(p.num_gpu)
        if p.gpu_spec:
            req = Requirement(GPU_PRODUCT_LABEL, "In", tuple(sorted(p.gpu_spec)))
            affinity = (NodeSelectorTerm(match_expressions=(req,)),)
    container = Container(name="main", requests=requests, limits=dict(requests))
    return Pod(
        namespace=NAMESPACE,
        name=name or p.name,
        annotations=annotations,
        containers=(container,),
        required_affinity=affinity,
        scheduler_name="kubegpu-packing",
        source="openb",
    )


PodSpecKey = tuple[int, int, int, int, frozenset[str] | None]


def pod_spec_key(p: TracePod) -> PodSpecKey:
    """What ``to_pod`` reads of a trace row besides its name: rows with equal keys give pods that differ
    in name only (the default trace's ~8,000 rows have far fewer distinct specs), so a run builds one pod
    per key and renames it."""
    return (p.cpu_milli, p.memory_mib, p.num_gpu, p.gpu_milli, p.gpu_spec)


def renamed(pod: Pod, name: str) -> Pod:
    """``pod`` under another name: a shallow copy keeping what it has derived from its spec (requests,
    sorted labels, what schedulers keep on it with ``Pod.derived``, such as a profile's filter signs); a
    packing run's pods of one spec differ in nothing else. Only the cached ``key`` is the name's."""
    out = object.__new__(Pod)
    out.__dict__.update(pod.__dict__)
    out.__dict__.pop("key", None)  # the cached ``key`` is the name's
    object.__setattr__(out, "name", name)
    return out
