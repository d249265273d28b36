"""Pitfalls visible from the pod and its namespace alone, whatever the nodes say."""

from __future__ import annotations

from kubegpu.admission.quota import is_gpu_key, quotas_in
from kubegpu.explain.engine import Engine
from kubegpu.explain.gpu_pod import idle_gpu_toleration
from kubegpu.model.objects import Pod
from kubegpu.model.quantity import format_milli, is_saturated, saturated_total


def pod_notes(engine: Engine, pod: Pod) -> list[str]:
    """Pitfalls visible from the pod and its namespace alone (R8, R17)."""
    notes: list[str] = []
    parts = (*pod.containers, *pod.init_containers)
    notes.extend(  # a total of several amounts at the int64 bound (one amount's own note comes from parsing)
        saturated_total(r, f"pod {pod.key}: summed requests")
        for r, v in pod.requests.items()
        if is_saturated(r, v) and sum(1 for c in parts if c.requests.get(r)) + bool(pod.overhead.get(r)) > 1
    )
    if idle_gpu_toleration(pod, engine.snapshot.dra):
        notes.append(
            "the pod tolerates the GPU taint but requests no GPU: it may land on a GPU node yet gets no device, "
            "and takes CPU and memory that GPU pods need. Request nvidia.com/gpu in limits, or drop the toleration."
        )
    if pod.owner and pod.owner.kind in (
        "ReplicaSet",
        "StatefulSet",
        "Job",
        "DaemonSet",
        "ReplicationController",
    ):
        notes.append(
            f"the pod is owned by {pod.owner.kind} {pod.owner.name}: deleting it only makes the controller create "
            "another one with the same spec. Fix the template or the cluster, not the pod."
        )
    if pod.unmodelled_constraints:
        notes.append(
            f"the pod uses {', '.join(pod.unmodelled_constraints)}, which kubegpu does not evaluate yet: nodes shown "
            "as feasible may still be rejected by kube-scheduler."
        )
    if engine.scheduler.skips_pod_level(pod):
        notes.append(
            f"the pod sets pod-level spec.resources, which the kube-scheduler {engine.profile.kube_version} "
            "reproduced skips and its API server drops at creation unless the PodLevelResources feature gate "
            "(alpha before 1.34) is on: it is scheduled by its containers' requests alone. If the cluster has the "
            "gate on, `--kube-version 1.34` counts them."
        )
    for quota in quotas_in(engine.snapshot, pod.namespace):  # (a lookup: 1,000 Pending pods)
        for r, hard in quota.hard.items():
            used = quota.used.get(r, 0)
            if is_gpu_key(r) and hard and used >= hard:
                notes.append(
                    f"ResourceQuota {quota.name} in {quota.namespace}: {r} used {format_milli(r, used)} of "
                    f"{format_milli(r, hard)}: new pods asking for it are rejected at admission, not left Pending."
                )
    return notes
