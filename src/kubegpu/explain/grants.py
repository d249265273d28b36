"""Which devices a schedulable pod gets on its node (logical CUDA index → host GPU) — or why kubelet
would still refuse it there although kube-scheduler, counting devices, would bind it."""

from __future__ import annotations

from kubegpu.devices.container_view import allocate_response
from kubegpu.explain.explanation import DeviceGrant, Explanation
from kubegpu.model.objects import Pod
from kubegpu.scheduler.assembly import Engine, SchedulerSpec, assemble
from kubegpu.scheduler.device_ledger import Assignment, Refusal, choose, container_requests


def explain_devices(
    engine: Engine, pod: Pod, node_name: str, allocation: Assignment | None, exp: Explanation
) -> None:
    """Which devices the pod gets on ``node_name`` — or why kubelet would still refuse it there."""
    idx = engine.cluster.index[node_name]
    model = engine.cluster.devices.models[idx]
    if model is None or not container_requests(pod):
        return
    if allocation is None:
        taken = engine.cluster.devices.taken(idx)
        allocation, refusal = choose(pod, model, taken, as_kubelet=True)
        if refusal is not None:
            _refused_note(engine, pod, node_name, refusal, exp, kubelet_admits=False)
            return
        # kubelet admits it; kubegpu's device-aware choice differs only on shared replicas, and may refuse
        assert allocation is not None
        if any(model.plans[r].shared for res in allocation.values() for r in res):
            refusal = choose(pod, model, taken)[1]
            if refusal is not None:
                _refused_note(engine, pod, node_name, refusal, exp, kubelet_admits=True)
    assert allocation is not None
    gpu_memory = {i: model.memory_mib * 1024 * 1024 for i in range(64)} if model.memory_mib else None
    for container, resources in allocation.items():
        for resource, ids in resources.items():
            plan = model.plans[resource]
            response = allocate_response(plan, model.config, ids, gpu_memory=gpu_memory)
            gpus = [
                {"logical": v.cuda_index, "host_index": v.host_index, "uuid": v.uuid,
                 **({"mig_index": v.mig_index} if v.mig_index is not None else {})}
                for v in response.visible
            ]  # fmt: skip
            exp.allocation.append(
                DeviceGrant(container, resource, list(ids), gpus, dict(response.envs), plan.shared)
            )
            if plan.shared:
                exp.notes.append(
                    f"{container} gets time-sliced replicas of {resource}: they share the physical GPU's memory and "
                    "fault domain with every other replica; a replica is not 1/N of the GPU."
                )
    if model.synthesized:
        exp.notes.append(
            f"{node_name}'s devices are synthesised from its capacity and labels (no device inventory annotation): "
            "device IDs are stand-ins and links/NUMA are unknown."
        )


def _refused_note(
    engine: Engine, pod: Pod, node_name: str, refusal: Refusal, exp: Explanation, *, kubelet_admits: bool
) -> None:
    """kube-scheduler, counting devices, binds the pod where the devices refuse it: kubelet fails it at
    admission, or (``kubelet_admits``) admits it with devices kubegpu's device-aware profile would not give;
    and where that profile would place it."""
    if not kubelet_admits:
        exp.kubelet = {
            "admitted": False,
            "node": node_name,
            "reason": refusal.kubelet_reason,
            "message": refusal.kubelet_error,
            "evidence": refusal.evidence,
        }
    alt = assemble(
        SchedulerSpec("kubegpu", kube_version=engine.profile.kube_version, pdbs=tuple(engine.snapshot.pdbs)),
        engine.cluster,
    )
    other = alt.schedule_one(pod, assume=False)
    outcome = (
        f"kubelet and the device plugin would admit it, but {refusal.evidence}"
        if kubelet_admits
        else f"kubelet would then fail it at admission ({refusal.kubelet_reason}: {refusal.evidence})"
    )
    exp.notes.append(
        f"kube-scheduler counts devices, so it would bind the pod to {node_name}; {outcome}. kubegpu's "
        "device-aware profile "
        + (f"would place it on {other.node} instead." if other.node else f"finds no node: {other.message}")
    )
