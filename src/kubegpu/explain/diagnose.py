"""``kubegpu diagnose``: the overview, every Pending GPU pod explained, and the findings (R2, R11, R16, R17).

A pending pod is "GPU" by ``gpu_pod.is_gpu_pod`` (an ``nvidia.com/*`` request, the GPU taint tolerated,
another scheduler's GPU, or a DRA claim for NVIDIA's GPU driver); the rest are counted but not explained (the tool is about GPUs). Each pod is explained against the same cluster
state, independently, as the scheduler would see it on its next attempt.

Pending pods that differ only in name (kube-scheduler's equivalence idea: the replicas of one Deployment,
Job or training run) share one evaluation: ``equivalence_key`` is the whole parsed pod less its identity
(name, uid, creation time, source, recorded status), so every field the scheduling core and the notes
read is in it. A pod nominated to a node is never shared (the nominator leaves a pod's own nomination
out of its own evaluation). Each member keeps its own recorded condition and batch-queue position; where
several nodes tie as best, members name the node their class's first pod got.

A pod with DRA claims joins a class when its claims are plain (``claims_key``: each exists, is not
allocated, reserved or being deleted, and a generated one is owned by the pod) and read alike without
their names: pods made from one ResourceClaimTemplate, or each naming its own claim of that spec. The
evidence names a claim by the pod's own name for it (``pod claim gpu``; each member's ``claims`` says
which ResourceClaim that is), so the class's texts fit each member; a class whose first evaluation names
a claim of its own anyway (upstream's allocator errors quote the claim) is not shared.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from kubegpu.batch.status import workload_status
from kubegpu.devices.sharing import SHARED_SUFFIX
from kubegpu.explain import causes, schedulers
from kubegpu.explain.causes.gpu_causes import offered_gpus
from kubegpu.explain.dra import double_counting, own_claims
from kubegpu.explain.engine import Engine
from kubegpu.explain.findings import Finding, find
from kubegpu.explain.gpu_pod import is_gpu_pod
from kubegpu.explain.overview import NodeRow, dra_nodes, node_rows
from kubegpu.explain.pending import (
    Explanation,
    _recorded_condition,
    autoscaler_for,
    explain_pod,
    observed_for,
)
from kubegpu.model.dra import DraObjects
from kubegpu.model.gpu_facts import DEFAULT_POOL_LABEL, GPU_PRODUCT_LABEL, hami_registered_gpus
from kubegpu.model.names import (
    CONTROL_PLANE_LABELS,
    GPU_REPLICAS_LABEL,
    HAMI_NODE_REGISTER_ANNOTATION,
    NVIDIA_GPU,
)
from kubegpu.model.objects import Pod
from kubegpu.model.quantity import exact_sum
from kubegpu.model.resources import is_gpu
from kubegpu.scheduler.plugins.dynamic_resources import resolve_claims
from kubegpu.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from kubegpu.scheduler.plugins.node_affinity import required_mask
from kubegpu.scheduler.queue import priority_sort
from kubegpu.scheduler.reasons import PodAffinityUnmet, render


@dataclass
class Diagnosis:
    description: str
    nodes: list[NodeRow]
    pending: list[Explanation]
    findings: list[Finding]
    other_pending: int = 0
    input_errors: list[str] = field(default_factory=list)
    totals: dict[str, dict[str, int]] = field(default_factory=dict)
    # pod → the nodes its nodeSelector / required node affinity admits (a mask over the engine's cluster rows,
    # one array per distinct selector): the grouped view's cause
    selector_admits: dict[str, npt.NDArray[np.bool_]] = field(default_factory=dict)
    # pod → the nodes of ``selector_admits`` whose allocatable holds each GPU resource the pod requests
    # (emptied, they would fit it): where the grouped view looks for the cause first
    could_host: dict[str, npt.NDArray[np.bool_]] = field(default_factory=dict)
    # pod → (reason, fix): its required pod affinity is unmet on every node (``pod_affinity_blocks``)
    pod_affinity_blocked: dict[str, tuple[str, str]] = field(default_factory=dict)

    def to_dict(self, *, shallow: bool = False) -> dict[str, Any]:
        """``shallow``: ``pending`` stays the list of ``Explanation`` objects (``cli.json_stream`` writes
        them one at a time: at 5,000 nodes and 1,000 Pending pods the document is 1.7 GB)."""
        return {
            "snapshot": self.description,
            "nodes": [n.to_dict() for n in self.nodes],
            "pending": self.pending if shallow else [p.to_dict() for p in self.pending],
            "otherPending": self.other_pending,
            "findings": [f.to_dict() for f in self.findings],
            "inputErrors": self.input_errors,
            "totals": self.totals,
        }


def diagnose(engine: Engine, pool_label: str = DEFAULT_POOL_LABEL) -> Diagnosis:
    snapshot = engine.snapshot
    pending = priority_sort(p for p in snapshot.pending_pods())
    gpu_pending = [p for p in pending if is_gpu_pod(p, snapshot.dra)]
    rows = node_rows(engine, pool_label)
    return Diagnosis(
        description=snapshot.description,
        nodes=rows,
        pending=explain_many(engine, gpu_pending),
        findings=double_counting(snapshot) + find(snapshot, pool_label, engine),  # errors first
        other_pending=len(pending) - len(gpu_pending),
        input_errors=[e.one_line() for e in snapshot.errors],
        totals=gpu_totals(engine),
        selector_admits=(admits := selector_admits(engine, gpu_pending)),
        could_host=could_host(engine, gpu_pending, admits),
        pod_affinity_blocked=pod_affinity_blocks(engine, gpu_pending),
    )


MIG_PRODUCT_MARK = "-MIG-"  # in GFD's product label under the single strategy
# the totals' key of a node's shared GPU replicas: the device plugin's time-slicing or MPS advertises each
# GPU ``replicas`` times, as nvidia.com/gpu (GFD labels nvidia.com/gpu.replicas) or renamed
# nvidia.com/gpu.shared (renameByDefault): units of a shared GPU, not GPUs
SHARED_TOTAL = f"{NVIDIA_GPU} (shared replicas)"
# the totals' key of nvidia.com/gpu on a node HAMi's device plugin registered (hami.io/node-nvidia-register): it
# advertises each physical GPU deviceSplitCount times (10 by default: 8 GPUs, 80 nvidia.com/gpu), so these are
# vGPU slots, not GPUs; the entry's "gpus" counts the physical GPUs the annotations list
HAMI_TOTAL = f"{NVIDIA_GPU} (HAMi vGPU slots)"
MIG_SINGLE_TOTAL = (
    f"{NVIDIA_GPU} (MIG devices, single strategy)"  # the totals' key for those nodes' nvidia.com/gpu
)


def gpu_totals(engine: Engine) -> dict[str, dict[str, int]]:
    """Per GPU resource (``model.resources.is_gpu``: whole, shared and MIG): whole units of capacity, allocatable and requested, summed over the
    nodes whose capacity lists it (each node's amount truncated before the sum)."""
    cluster = engine.cluster
    totals: dict[str, dict[str, int]] = {}
    # (total, resource) → rows of the nodes listing it under that total: one column sum each (a total may
    # gather several resources: shared replicas are nvidia.com/gpu on one node, nvidia.com/gpu.shared on another)
    holders: dict[tuple[str, str], list[int]] = {}
    for node in engine.snapshot.nodes:
        # MIG's single strategy: the device plugin offers each MIG device as nvidia.com/gpu, and GPU
        # Feature Discovery appends the profile to the product label (A100-SXM4-40GB-MIG-1g.5gb)
        slices = MIG_PRODUCT_MARK in node.labels.get(GPU_PRODUCT_LABEL, "")
        replicas = node.labels.get(GPU_REPLICAS_LABEL, "")
        shared = replicas.isascii() and replicas.isdigit() and int(replicas) > 1
        # with renameByDefault the replicas are nvidia.com/gpu.shared; a plain nvidia.com/gpu left in the
        # node's capacity then is what kubelet kept of the resource before the rename (0 once its plugin
        # went), not replicas (NVIDIA/k8s-device-plugin#321)
        renamed = NVIDIA_GPU + SHARED_SUFFIX in node.capacity
        hami = HAMI_NODE_REGISTER_ANNOTATION in node.annotations
        for r, cap in node.capacity.items():
            if is_gpu(r):  # a GPU: not the network operator's nvidia.com/hostdev or rdma_* NICs
                if hami and r == NVIDIA_GPU:
                    key = HAMI_TOTAL
                elif r == NVIDIA_GPU + SHARED_SUFFIX or (
                    shared and r == NVIDIA_GPU and not slices and not renamed
                ):
                    key = SHARED_TOTAL
                else:
                    key = MIG_SINGLE_TOTAL if slices and r == NVIDIA_GPU else r
                t = totals.setdefault(key, {"capacity": 0, "allocatable": 0, "requested": 0})
                t["capacity"] += cap // 1000
                t["allocatable"] += node.allocatable.get(r, 0) // 1000
                if key == HAMI_TOTAL:
                    registered = hami_registered_gpus(node)  # None: an annotation kubegpu cannot read
                    t["gpus"] = t.get("gpus", 0) + (registered or 0)
                    t["unread"] = t.get("unread", 0) + (registered is None)
                holders.setdefault((key, r), []).append(cluster.index[node.name])
    for (key, r), idxs in holders.items():
        col = cluster.col.get(r)
        if col is not None:
            totals[key]["requested"] += exact_sum(cluster.requested[idxs, col] // 1000)
    for name, published in dra_nodes(engine).items():  # GPUs served by DRA: in no node's status.capacity
        listed = engine.snapshot.node(name)
        if listed is not None and offered_gpus(listed):
            continue  # the same GPUs on both stacks, counted above (a finding says it is double-counted)
        for row, (total, taken) in published.rows.items():
            t = totals.setdefault(row, {"capacity": 0, "allocatable": 0, "requested": 0})
            t["capacity"] += total
            t["allocatable"] += total
            t["requested"] += taken
    return totals


def equivalence_key(pod: Pod) -> str | None:
    """What a pending pod's evaluation depends on; None for a pod that must be evaluated on its own."""
    if pod.nominated_node_name:
        return None
    same = replace(
        pod, name="", uid="", creation_timestamp="", source="", scheduled_condition=None, start_time=""
    )
    return repr(same)


def claims_key(pod: Pod, dra: DraObjects) -> str | None:
    """What of the pod's DRA claims (``dra.pod_claims``, beside the pod model) its evaluation reads, less the
    claims' names and templates; None when a claim is not plain (missing, allocated, reserved, being deleted,
    not owned by the pod, a reference of neither kind: messages that name the claim or the pod)."""
    pc = dra.pod_claims.get(pod.key)
    if pc is None:
        return ""
    claims, problem = resolve_claims(pod, dra)  # (upstream's rules: missing, deleting, not the pod's own)
    if problem or any(c.allocated is not None or c.reserved_for for c in claims):
        return None
    resolved = iter(claims)  # in spec order, a reference that needs no claim skipped
    parts: list[object] = []
    for ref in pc.refs:
        generated = ref.template_name and not ref.claim_name
        if generated and pc.statuses.get(ref.name) is None:  # no claim needed: skipped upstream
            parts.append((ref.name, None))
            continue
        claim = next(resolved)
        # a claim's name is left out, and whether it was generated (from which template) or named: a plain
        # claim reads the same either way, so pods whose claims ask alike share the evaluation (300 pods
        # each with its own claim on 2,000 nodes were 300 evaluations, 28 s and 3.3 GB); where an upstream
        # message names its claim, ``explain_many`` does not share it (``_names_own_claims``)
        parts.append((ref.name, replace(claim, name="", uid="", owners=(), source="")))
    return repr(parts)


def _names_own_claims(exp: Explanation) -> bool:
    """Whether ``exp`` (a pod's evaluation) names one of the pod's claims (``exp.claims``: generated or named)
    anywhere."""
    names = [key.partition("/")[2] for key in exp.claims.values()]
    if not names:
        return False
    texts = [exp.message, *exp.notes, *exp.unverified, exp.binding or ""]
    texts += [t for g in exp.groups for t in (g.reason, g.fix, g.pitfall, *g.commands)]
    texts += [line for n in exp.nodes for line in n.evidence]
    return any(name in text for text in texts for name in names)


def explain_many(engine: Engine, pods: list[Pod]) -> list[Explanation]:
    """``explain_pod`` for each pod, evaluating each equivalence class once (see module docstring)."""
    shared: dict[str, Explanation | None] = {}  # None: a class whose evaluation is not shared
    out = []
    dra = engine.snapshot.dra
    # pods that own a special claim for extended resources served by DRA (KEP-5004, made in an earlier
    # cycle): DynamicResources reads it, and it is outside both keys
    special = {(c.namespace, o.name, o.uid) for c in dra.claims.values() if c.extended_resource
               for o in c.owners if o.controller}  # fmt: skip
    for pod in pods:
        key = equivalence_key(pod) if (pod.namespace, pod.name, pod.uid) not in special else None
        if key is not None and pod.key in dra.pod_claims:
            claims = claims_key(pod, dra)
            key = None if claims is None else f"{key} {claims}"
        first = shared.get(key) if key is not None else None
        if first is None:
            exp = explain_pod(engine, pod)
            if key is not None and key not in shared:
                shared[key] = None if _names_own_claims(exp) else exp
        else:
            exp = replace(
                first,
                pod=pod.key,
                recorded_message=_recorded_condition(pod),
                queue=workload_status(engine.snapshot, pod),
                claims=own_claims(pod, dra),
            )
            if pod.scheduling_gates:  # each plain pod has its own Workload: not the first pod's
                exp.waiting, exp.kueue = schedulers.gated(engine.snapshot, pod)
            exp.observed = observed_for(engine, pod, exp)
            exp.autoscaler = autoscaler_for(engine, pod)
        out.append(exp)
    return out


def could_host(
    engine: Engine, pods: list[Pod], admits: dict[str, npt.NDArray[np.bool_]]
) -> dict[str, npt.NDArray[np.bool_]]:
    """Per pod, the nodes its selector admits (``admits``) whose allocatable holds each GPU resource it
    requests: a node short of allocatable never fits it, whatever is freed (pods with one selector and one
    GPU request share one array: never written to). Control-plane nodes (``CONTROL_PLANE_LABELS``) count only
    where no other node could host it: a GPU on the control plane is kept for it, so its taint is not the
    cause to lead with (a real cluster's master with a GPU tied with the GPU worker's port conflict)."""
    cluster = engine.cluster
    control = np.array([any(k in n.labels for k in CONTROL_PLANE_LABELS) for n in cluster.nodes], dtype=bool)
    seen: dict[tuple[int, tuple[tuple[str, int], ...]], npt.NDArray[np.bool_]] = {}
    out: dict[str, npt.NDArray[np.bool_]] = {}
    for pod in pods:
        base = admits[pod.key]
        gpus = tuple(sorted((r, v) for r, v in pod.requests.items() if v and is_gpu(r)))
        key = (id(base), gpus)
        if key not in seen:
            mask = base.copy()
            for r, v in gpus:
                col = cluster.col.get(r)
                if col is None:
                    mask[:] = False
                else:
                    mask &= cluster.allocatable[:, col] >= v
            if (mask & ~control).any():
                mask &= ~control
            seen[key] = mask
        out[pod.key] = seen[key]
    return out


def selector_admits(engine: Engine, pods: list[Pod]) -> dict[str, npt.NDArray[np.bool_]]:
    """The nodes each pod's nodeSelector and required node affinity admit (NodeAffinity's own mask over the
    cluster's rows; pods with one selector share one array: never written to)."""
    rows = np.arange(len(engine.cluster))
    seen: dict[str, npt.NDArray[np.bool_]] = {}
    out: dict[str, npt.NDArray[np.bool_]] = {}
    for pod in pods:
        key = repr((pod.node_selector, pod.required_affinity))
        if key not in seen:
            seen[key] = required_mask(pod, engine.cluster, rows)
        out[pod.key] = seen[key]
    return out


def pod_affinity_blocks(engine: Engine, pods: list[Pod]) -> dict[str, tuple[str, str]]:
    """Pending pods whose required pod affinity is unmet on every node (the profile's InterPodAffinity
    masks: no placed pod it selects in any node's domain, and it may not start the group itself), with the
    reason and its advice's fix. kube-scheduler names one filter per node, the first that fails: where
    NodeResourcesFit runs first, such a pod reads as short of GPUs on the full nodes, yet freeing GPUs would
    not place it (upstream's UnschedulableAndUnresolvable). Anti-affinity is left out: moving the pods it
    conflicts with (preemption does) can place the pod."""
    plugin = next((p for p in engine.framework.filter_plugins if isinstance(p, InterPodAffinity)), None)
    if plugin is None or not len(engine.cluster):
        return {}
    text = render(PodAffinityUnmet(), engine.framework.version)
    names = [n.name for n in engine.cluster.nodes]
    seen: dict[str, tuple[str, str] | None] = {}
    out: dict[str, tuple[str, str]] = {}
    for pod in pods:
        if not pod.pod_affinity.required:
            continue
        key = repr((pod.namespace, sorted(pod.labels.items()), pod.pod_affinity.required))
        if key not in seen:
            unmet = plugin.failures(pod, engine.cluster)[0].all()
            advice = causes.advice(causes.Context(engine, pod), PodAffinityUnmet(), names) if unmet else None
            seen[key] = (text, advice.fix) if advice is not None else None
        found = seen[key]
        if found is not None:
            out[pod.key] = found
    return out
