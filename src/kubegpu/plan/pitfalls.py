"""The pitfalls of R17 (seed §17) a planned change walks into: id, objects and fix, for people and automation.

Each is appended to the plan's warnings as ``pitfall R17.n: …`` and listed in ``details.pitfalls``
(``{"id", "objects", "message"}``). What a plan can walk into:

- R17.1, ``plan label``: a node given the label (joining a pool) whose GPU labels say the hardware is there
  but that advertises no allocatable GPU — a working host driver is not a registered, healthy plugin;
- R17.3, ``plan time-slicing``: the pods that will hold replicas of the node's GPUs share each GPU's memory;
  none gets 1/N of it;
- R17.4, ``plan taint`` adding the GPU taint: pods on the nodes, or Pending, that tolerate it but ask no
  GPU (``gpu_pod.asks_for_gpu``: no GPU resource, KAI share annotation, Volcano vGPU or GPU claim) — the
  toleration lets them stay or land there and gives them no device (DaemonSet node agents and kube-system
  add-ons excepted: ``model.gpu_toleration``, the rule diagnose and the admission lint read);
- R17.5, every plan with an effect: pods the change leaves without a node although the free devices of
  the open nodes add up to their GPU request (``Effect.scattered``).

No plan walks into R17.2 (no plan takes utilisation as input: capacity is always requests) or R17.6 (no
plan deletes a Pending pod; the runbooks delete running pods, and a bare one is named because nothing
recreates it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from kubegpu.explain.findings import has_gpu_labels
from kubegpu.explain.gpu_pod import idle_gpu_toleration
from kubegpu.model.gpu_facts import GPU_TAINT_KEY
from kubegpu.model.names import pitfall_name
from kubegpu.model.objects import Node, Taint
from kubegpu.model.resources import gpu_requests
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.plan.effect import Effect
from kubegpu.plan.procedure import NodeChange


@dataclass(frozen=True, slots=True)
class Pitfall:
    id: str  # "R17.n"
    objects: tuple[str, ...]
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"id": pitfall_name(self.id), "objects": list(self.objects), "message": self.message}


def flagged(change: NodeChange, pitfalls: Sequence[Pitfall]) -> NodeChange:
    """``change`` with each pitfall among its warnings and in ``details.pitfalls``."""
    listed = [p.as_dict() for p in pitfalls]
    return replace(
        change,
        warnings=(*change.warnings, *(f"pitfall {pitfall_name(p.id)}: {p.message}" for p in pitfalls)),
        details={**change.details, "pitfalls": listed},
    )


def scattered_pods(effect: Effect) -> list[Pitfall]:
    """R17.5: the pods the change leaves without a node while enough GPUs are free, only not on one node."""
    return [
        Pitfall(
            "R17.5",
            (f"pod/{row['pod']}",),
            f"{row['pod']} needs {row['requested']} {row['resource']} on one node; after the change "
            f"{row['free_total']} are free in total but at most {row['largest_free']} on any open node: free GPUs on "
            "different nodes do not add up for one pod. Fix: keep a node with that many free (change fewer nodes, "
            "or move single-GPU pods together first), or run the job as several pods under a job framework.",
        )
        for row in effect.scattered
    ]


def tolerating_without_gpu(snapshot: ClusterSnapshot, targets: Sequence[Node], taint: Taint) -> list[Pitfall]:
    """R17.4, adding the GPU taint: pods on the nodes or Pending that tolerate it but request no GPU."""
    if taint.key != GPU_TAINT_KEY:
        return []
    names = {n.name for n in targets}
    pods = [
        p
        for p in snapshot.pods
        if not p.is_terminal
        and (p.node_name in names or not p.node_name)
        and idle_gpu_toleration(
            p, snapshot.dra, p.tolerates(taint)
        )  # the rule diagnose and the admission lint read
    ]
    if not pods:
        return []
    keys = ", ".join(p.key for p in pods)
    return [
        Pitfall(
            "R17.4",
            tuple(f"pod/{p.key}" for p in pods),
            f"{keys} tolerate {taint.key} but request no GPU: the taint keeps other pods off these nodes, not "
            "them, and a toleration gives no device — they take CPU and memory GPU pods need. Fix: request "
            "nvidia.com/gpu in their limits if they need a GPU, else drop the toleration from their templates.",
        )
    ]


def without_allocatable(targets: Sequence[Node], key: str, value: str | None) -> list[Pitfall]:
    """R17.1, setting a label: nodes that look like GPU nodes but advertise no allocatable GPU."""
    if value is None:
        return []
    empty = [n for n in targets if has_gpu_labels(n) and not gpu_requests(n.allocatable)]
    if not empty:
        return []
    names = ", ".join(n.name for n in empty)
    return [
        Pitfall(
            "R17.1",
            tuple(f"node/{n.name}" for n in empty),
            f"the label {key}={value} goes on {names}, which advertise(s) no allocatable GPU although the GPU labels "
            "say the hardware is there: host `nvidia-smi` working is not the container runtime, a registered device plugin and "
            "healthy devices, so GPU pods selecting the label cannot schedule there. Fix the plugin or the devices "
            "first and check status.allocatable before the label.",
        )
    ]
