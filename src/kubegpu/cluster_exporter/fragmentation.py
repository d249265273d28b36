"""FGD's fragment amount of every node in the cluster's current state (Weng et al., ATC '23, §4; R14.1).

The measure is the scheduling core's (``kubegpu.scheduler.gpu_share``): ``GpuShareLedger`` over the
engine's ``ClusterState`` gives each node's fragment amount Σ_t p_t · F_t for a target workload of
popular pod shapes. Here the target workload is the cluster's own GPU pods (placed and Pending, not
terminal), counted into typical shapes by ``build_typical_pods``. CPU-only pods are left out, unlike the
simulator's trace workload: on a live cluster they are mostly DaemonSets and controllers that will never
ask for a GPU, and every CPU-only shape counts all free GPU as fragment.

A pod's GPU shape: ``kubegpu.io/gpu-milli`` pods (open-gpu-share, the openb trace) by
``gpu_shapes.pod_shape``; ``nvidia.com/gpu: n`` pods as n whole GPUs (1000 milli each). A pod whose
``kubegpu.io/gpu-milli`` request with its ``kubegpu.io/gpu-count`` annotation is no shape (the API server
takes any annotation) is left out of the target workload and the placed GPUs, and named with the reason
(``ClusterFragmentation.skipped``): one bad annotation must not take the exporter's series down. GPU models a
shape may use come from a required node-affinity ``In`` or a nodeSelector on ``nvidia.com/gpu.product``.
Placed pods are put back on their node's GPUs as open-gpu-share's best fit does (the GPUs with the least
free milli that fit, lowest index first); only each node's multiset of free milli matters to the measure,
which ``GpuShareLedger.frag_of`` then takes for all nodes at once.
A node's GPUs are its ``nvidia.com/gpu`` allocatable, as in the simulator: on a time-sliced node each
replica counts as a GPU, and MIG resources are not in the model.

Must not: decide idle, allocated or stranded GPUs (``kubegpu.explain.cards`` does, from the device ledger).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubegpu.errors import ConfigError
from kubegpu.explain.engine import Engine
from kubegpu.model.names import GPU_PRODUCT_LABEL
from kubegpu.model.objects import Pod
from kubegpu.model.resources import NVIDIA_GPU
from kubegpu.scheduler.gpu_ledger import GpuShareLedger
from kubegpu.scheduler.gpu_shapes import MILLI, GpuShape, build_typical_pods, pod_shape


@dataclass(frozen=True, slots=True)
class NodeFragmentation:
    """One node's FGD fragment amount and free GPU, both in milli-GPU."""

    fragment_milli: float
    free_milli: int


@dataclass(frozen=True, slots=True)
class ClusterFragmentation:
    """Node name -> fragmentation, for nodes with GPUs (None: the cluster has no GPU pod to shape), and the
    pods left out, (pod key, why), in snapshot order."""

    nodes: dict[str, NodeFragmentation] | None
    skipped: tuple[tuple[str, str], ...] = ()


def gpu_shape(pod: Pod) -> GpuShape | None:
    """The pod's GPU shape, or None for a pod that asks for no GPU. A shape with a ``problem`` is
    returned as is (count 0): the caller leaves the pod out and says so."""
    shape = pod_shape(pod)
    if shape.count or shape.problem:
        return shape
    whole = pod.requests.get(NVIDIA_GPU, 0) // MILLI
    return GpuShape(shape.cpu, whole, MILLI, shape.memory) if whole else None


def gpu_models(pod: Pod) -> frozenset[str] | None:
    """GPU models the pod may run on (None: any), from its nodeSelector or required node affinity."""
    if GPU_PRODUCT_LABEL in pod.node_selector:
        return frozenset({pod.node_selector[GPU_PRODUCT_LABEL]})
    allowed: set[str] = set()
    for term in pod.required_affinity or ():
        ins = [r for r in term.match_expressions if r.key == GPU_PRODUCT_LABEL and r.operator == "In"]
        if not ins:
            return None  # one term without a model restriction lets the pod use any model
        allowed.update(ins[0].values)
    return frozenset(allowed) or None


def node_fragmentation(engine: Engine) -> ClusterFragmentation:
    """Every GPU node's fragmentation in the engine's snapshot, and the GPU pods left out."""
    pods = [p for p in engine.snapshot.pods if not p.is_terminal]
    shaped: list[tuple[Pod, GpuShape]] = []
    skipped: list[tuple[str, str]] = []
    for p in pods:
        s = gpu_shape(p)
        if s is None:
            continue
        if s.problem:
            skipped.append((str(p.key), s.problem))
        else:
            shaped.append((p, s))
    try:
        typical = build_typical_pods((s, gpu_models(p)) for p, s in shaped)
    except ConfigError:  # no GPU pod: no popular shape to measure against, so no value (not 0)
        return ClusterFragmentation(None, tuple(skipped))
    cluster = engine.cluster
    ledger = GpuShareLedger(cluster, typical)
    # Placed pods go back on plain lists (one pass over thousands of pods), then every node is measured in
    # one vectorised ``frag_of`` call, instead of one ledger update and recount per pod.
    left: list[list[int]] = ledger.gpu_left.tolist()
    # Whole-GPU pods first: they need fully free GPUs, which shares placed before them could have split.
    for pod, shape in sorted(shaped, key=lambda ps: (-ps[1].milli, ps[0].key)):
        idx = cluster.index.get(pod.node_name) if pod.node_name else None
        if idx is None:
            continue  # Pending, or on a node the snapshot lacks
        row = left[idx]
        fit = sorted((free, g) for g, free in enumerate(row) if free >= shape.milli)
        if len(fit) < shape.count:
            continue  # the snapshot over-commits this node; the report names such pods
        for _, g in fit[: shape.count]:
            row[g] -= shape.milli
    gpu_left = np.array(left, dtype=np.int64)
    rows = np.flatnonzero(ledger.gpu_count > 0).astype(np.intp)
    frag = ledger.frag_of(rows, ledger.cpu_left(rows), gpu_left[rows])
    free = gpu_left[rows].sum(axis=1)
    nodes = {
        cluster.nodes[int(i)].name: NodeFragmentation(float(f), int(n))
        for i, f, n in zip(rows, frag, free, strict=True)
    }
    return ClusterFragmentation(nodes, tuple(skipped))
