"""Which devices a schedulable pod gets on its node (logical CUDA index → host GPU) — or why kubelet
would still refuse it there although kube-scheduler, counting devices, would bind it.

kubelet's side follows upstream: the extended resources the node does not advertise are dropped before
its admission fit check (``removeMissingExtendedResources``, pkg/kubelet/lifecycle/predicate.go) and its
device manager allocates only resources a device plugin registered (pkg/kubelet/cm/devicemanager/
manager.go), so a resource only another scheduler resolves (HAMi's ``nvidia.com/gpumem``) is no kubelet
rejection. The NVIDIA plugin's refusal is worded as the release running on the node words it
(``devices.plugin_versions``: read from the plugin's image, else the newest release kubegpu models).
"""

from __future__ import annotations

from kubegpu.devices.container_view import allocate_response
from kubegpu.devices.plugin_versions import PluginVersion, version_in_use
from kubegpu.devices.sharing import ResourcePlan, SharingStrategy
from kubegpu.explain import schedulers
from kubegpu.explain.explanation import DeviceGrant, Explanation
from kubegpu.explain.hami_reads import hami_reads
from kubegpu.explain.shared_evidence import store_for
from kubegpu.model.gpu_facts import hami_registered_gpus, volcano_registered_gpus
from kubegpu.model.names import (
    HAMI_NODE_REGISTER_ANNOTATION,
    HAMI_RESOURCES,
    HAMI_SCHEDULER,
    VOLCANO_NODE_REGISTER_ANNOTATION,
    VOLCANO_SCHEDULER,
    VOLCANO_VGPU_NUMBER,
)
from kubegpu.model.objects import Pod
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.assembly import Engine, SchedulerSpec, assemble
from kubegpu.scheduler.device_ledger import Assignment, Refusal, choose, container_requests


def _plugin_versions(snapshot: ClusterSnapshot) -> tuple[dict[str, PluginVersion], PluginVersion]:
    """Per node, the release its plugin pod's image names; and the release of the plugin DaemonSets'
    images (else the newest kubegpu models, ``assumed``) for the nodes without one."""
    images: dict[str, list[str]] = {}
    for p in snapshot.pods:
        if p.node_name:
            images.setdefault(p.node_name, []).extend(c.image for c in p.containers)
    per_node = {n: v for n, imgs in images.items() if not (v := version_in_use(imgs)).assumed}
    return per_node, version_in_use(i for ds in snapshot.records.daemonsets for i in ds.images)


def plugin_version(engine: Engine, node_name: str) -> PluginVersion:
    """The NVIDIA device plugin release on ``node_name``: its plugin pod's image, else the plugin
    DaemonSets' images, else the newest release kubegpu models (``assumed``). Read once per engine."""
    per_node, fallback = store_for(engine).fact(
        (_plugin_versions,), lambda: _plugin_versions(engine.snapshot)
    )
    return per_node.get(node_name, fallback)


def _replica_note(container: str, plan: ResourcePlan) -> str:
    """What one container holding replicas of ``plan`` shares, by sharing mode."""
    if plan.sharing is SharingStrategy.MPS:
        # cmd/mps-control-daemon/mps/daemon.go: set_default_active_thread_percentage 100/replicas and
        # set_default_device_pinned_mem_limit <index> <memory/replicas>M, daemon defaults for every client
        return (
            f"{container} gets MPS replicas of {plan.name}: the MPS control daemon limits each client to 1/"
            f"{plan.replicas} of the GPU's memory and active threads (daemon defaults, per client process, not "
            "per replica), and the replicas share the GPU's fault domain."
        )
    return (
        f"{container} gets time-sliced replicas of {plan.name}: they share the physical GPU's memory and fault "
        "domain with every other replica; a replica is not 1/N of the GPU."
    )


def _unregistered_note(engine: Engine, pod: Pod, node_name: str, exp: Explanation) -> None:
    """The pod's device resources no plugin on the node registers: kubelet admits the pod without them."""
    model = engine.cluster.devices.models[engine.cluster.index[node_name]]
    assert model is not None
    node = engine.snapshot.node(node_name)
    advertised = node.allocatable if node is not None else {}
    missing = sorted({r for _, req in container_requests(pod) for r in req if r not in model.plans})
    if not missing:
        return
    unadvertised = [r for r in missing if r not in advertised]
    if unadvertised:
        exp.notes.append(
            f"kubelet on {node_name} ignores {', '.join(unadvertised)}: the node does not advertise it and no device "
            "plugin registers it, so kubelet drops it from its admission fit check and its device manager "
            "allocates nothing for it (no admission error)."
        )
    other = [r for r in missing if r in advertised]
    if other:
        exp.notes.append(
            f"{', '.join(other)}: advertised by {node_name} but not by the NVIDIA device plugin kubegpu models; the "
            "plugin that registers it allocates it at admission, which kubegpu does not model."
        )


def _hami_note(engine: Engine, pod: Pod, node_name: str, exp: Explanation) -> bool:
    """For a pod of HAMi's (its scheduler or its resources): HAMi's own rule for a container's vGPU count,
    which kubegpu states but does not evaluate, and that its devices are HAMi's choice. False otherwise."""
    if pod.scheduler_name != HAMI_SCHEDULER and not any(r in HAMI_RESOURCES for r in pod.requests):
        return False
    over = [(c, req) for c, req in container_requests(pod) if any(n > 1 for n in req.values())]
    node = engine.snapshot.node(node_name)
    physical = hami_registered_gpus(node) if node is not None else None
    refused_here = False  # a container asks more vGPUs than the node's physical GPUs
    for container, req in over:
        asked = ", ".join(f"{n} {r}" for r, n in sorted(req.items()) if r not in HAMI_RESOURCES)
        rule = (
            f"HAMi: {container} asks for {asked}; hami-scheduler puts each vGPU of one container on a different "
            "physical GPU, so the node needs that many physical GPUs (its nvidia.com/gpu count is vGPU slots, "
            "not GPUs)."
        )
        vgpus = max((n for r, n in req.items() if r not in HAMI_RESOURCES), default=0)
        if physical is None:
            exp.notes.append(
                f"{rule} The physical GPUs are listed in {node_name}'s {HAMI_NODE_REGISTER_ANNOTATION} annotation, "
                "which kubegpu could not read here: this limit is not checked."
            )
        elif vgpus > physical:
            refused_here = True
            exp.notes.append(
                f"{rule} {node_name}'s {HAMI_NODE_REGISTER_ANNOTATION} lists {physical} physical GPU(s): "
                f"hami-scheduler refuses the node (NodeInsufficientDevice) whatever its free vGPU slots. Ask for "
                f"at most {physical} in one container, or run it where HAMi registered {vgpus} GPUs."
            )
            # no node HAMi knows could take it (every node's annotation read once per snapshot)
            if exp.handled_by and hami_reads(engine.snapshot).registered_below(vgpus):
                schedulers.establish(exp, pod, HAMI_SCHEDULER, (HAMI_VGPUS_OVER_PHYSICAL, exp.notes[-1]))
        else:
            exp.notes.append(f"{rule} {node_name} registered {physical} with HAMi: enough for {vgpus}.")
    if not refused_here:  # hami-scheduler refuses this node now too: its last refusal is not stale
        _hami_stale_note(engine, pod, node_name, exp)
    exp.notes.append(
        f"HAMi: which GPUs {pod.key} gets on {node_name} is decided by hami-scheduler and HAMi's device plugin, "
        "which kubegpu does not model: no device grant or kubelet device check is shown for it."
    )
    return True


def _volcano_registered(snapshot: ClusterSnapshot) -> tuple[int, bool]:
    """The most physical GPUs Volcano's device plugin registered on any node (``volcano.sh/node-vgpu-register``),
    and whether every node carrying that annotation could be read: once per snapshot, not per refused pod."""

    def make() -> tuple[int, bool]:
        listed = [
            volcano_registered_gpus(n)
            for n in snapshot.nodes
            if VOLCANO_NODE_REGISTER_ANNOTATION in n.annotations
        ]
        read = [c for c in listed if c is not None]
        return max(read, default=0), len(read) == len(listed)

    return snapshot.derived(_volcano_registered, make, over=(snapshot.nodes,))


def _volcano_note(engine: Engine, pod: Pod, node_name: str, exp: Explanation) -> bool:
    """For a pod asking Volcano's vGPUs: the deviceshare plugin puts each vGPU of one container on a
    different physical GPU, so a container asking more vgpu-number than the node's registered GPUs is refused
    there ("no enough gpu cards on node"; Project-HAMi/volcano-vgpu-device-plugin#7, README: "The number of
    vgpu used by a container can not exceed the number of gpus on that node"). False for another pod."""
    asks = [
        (c.name, c.requests[VOLCANO_VGPU_NUMBER] // 1000)
        for c in (*pod.init_containers, *pod.containers)
        if c.requests.get(VOLCANO_VGPU_NUMBER)
    ]
    if not asks:
        return False
    node = engine.snapshot.node(node_name)
    physical = volcano_registered_gpus(node) if node is not None else None
    for container, vgpus in asks:
        if vgpus <= 1:
            continue
        rule = (
            f"Volcano: {container} asks for {vgpus} {VOLCANO_VGPU_NUMBER}; Volcano's deviceshare plugin puts each "
            "vGPU of one container on a different physical GPU, so the node needs that many physical GPUs (its "
            f"{VOLCANO_VGPU_NUMBER} count is split slots, not GPUs)."
        )
        if physical is None:
            exp.notes.append(
                f"{rule} The physical GPUs are listed in {node_name}'s {VOLCANO_NODE_REGISTER_ANNOTATION} "
                "annotation, which kubegpu could not read here: this limit is not checked."
            )
        elif vgpus > physical:
            exp.notes.append(
                f"{rule} {node_name}'s {VOLCANO_NODE_REGISTER_ANNOTATION} lists {physical} physical GPU(s): Volcano "
                f'refuses the node ("no enough gpu cards on node {node_name}") whatever its free slots. Ask for at '
                f"most {physical} in one container, or run it where {vgpus} GPUs are registered."
            )
            # no node the plugin registered could take it; one whose annotation kubegpu cannot read might, so
            # it is not counted as refusing (the rule HAMi's pods are read by: hami_reads.registered_below)
            most, all_read = _volcano_registered(engine.snapshot)
            if exp.handled_by and all_read and most < vgpus:
                schedulers.establish(
                    exp, pod, VOLCANO_SCHEDULER, (VOLCANO_VGPUS_OVER_PHYSICAL, exp.notes[-1])
                )
    exp.notes.append(
        f"Volcano: which GPUs {pod.key} gets on {node_name} is decided by the Volcano scheduler and its vGPU "
        "device plugin, which kubegpu does not model: no device grant or kubelet device check is shown for it."
    )
    return True


VOLCANO_VGPUS_OVER_PHYSICAL = "volcano: more vGPUs in one container than the node has physical GPUs"
HAMI_STALE_REFUSAL = "hami-scheduler's last refusal predates the node's state: no GPU on it is held now"
HAMI_VGPUS_OVER_PHYSICAL = "hami-scheduler: more vGPUs in one container than any node has physical GPUs"


# hami-scheduler's extender marks a node whose devices do not fit the pod NodeUnfitPod (HAMi
# pkg/scheduler/score.go; the per-card reason is only in its log)
HAMI_NODE_UNFIT = "NodeUnfitPod"


def _hami_stale_note(engine: Engine, pod: Pod, node_name: str, exp: Explanation) -> None:
    """hami-scheduler refused the pod (NodeUnfitPod) while its devices were held, yet no pod on the node the
    checks pass now holds any GPU and no quota in the namespace names a HAMi resource: the refusal predates
    the node's present state (Project-HAMi/HAMi#1368: a pod refused while the previous one was terminating was
    not tried again for ~5 minutes, kube-scheduler's podMaxInUnschedulablePodsDuration default)."""
    events = [
        e
        for e in engine.snapshot.records.events_about("Pod", pod.namespace, pod.name)
        if e.component == HAMI_SCHEDULER and HAMI_NODE_UNFIT in e.message
    ]
    if not events:
        return
    hami = hami_reads(engine.snapshot)  # read once per snapshot, not per pod
    if hami.held_by_another(node_name, pod.key) or hami.quoted(pod.namespace):
        return
    last = events[-1]
    exp.notes.append(
        f'HAMi: hami-scheduler last refused it with "{last.message}"{f" ({last.last_seen})" if last.last_seen else ""}: '
        f"{HAMI_NODE_UNFIT} means no GPU of the node fit its device request then. Now no pod on {node_name} holds "
        "a GPU, so that refusal predates the node's present state (the GPUs were held by pods since gone). "
        "hami-scheduler tries it again on a cluster event or, at the latest, when kube-scheduler moves it out of "
        "the unschedulable queue after 5 minutes (podMaxInUnschedulablePodsDuration); Project-HAMi/HAMi#1368 "
        "reports such waits. Still Pending after that: hami-scheduler's log gives the per-card reason of "
        f"{HAMI_NODE_UNFIT}."
    )
    if exp.handled_by:
        schedulers.establish(exp, pod, HAMI_SCHEDULER, (HAMI_STALE_REFUSAL, exp.notes[-1]))


def explain_devices(
    engine: Engine, pod: Pod, node_name: str, allocation: Assignment | None, exp: Explanation
) -> None:
    """Which devices the pod gets on ``node_name`` — or why kubelet would still refuse it there."""
    if _volcano_note(engine, pod, node_name, exp):
        return
    idx = engine.cluster.index[node_name]
    model = engine.cluster.devices.models[idx]
    if model is None or not container_requests(pod):
        return
    if _hami_note(engine, pod, node_name, exp):
        return
    if allocation is None:
        taken = engine.cluster.devices.taken(idx)
        version = plugin_version(engine, node_name)
        allocation, refusal = choose(pod, model, taken, as_kubelet=True, plugin_version=version)
        if refusal is not None:
            _refused_note(engine, pod, node_name, refusal, exp, kubelet_admits=False)
            return
        _unregistered_note(engine, pod, node_name, exp)
        # kubelet admits it; kubegpu's device-aware choice differs only on shared replicas, and may refuse
        assert allocation is not None
        if any(model.plans[r].shared for res in allocation.values() for r in res):
            refusal = choose(
                schedulers.common_pod(pod, pod.scheduler_name), model, taken, plugin_version=version
            )[1]
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
                exp.notes.append(_replica_note(container, plan))
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
    # the pod as every scheduler's checks see it: resources only HAMi or Volcano resolve are left out, as
    # the handling note says (no node advertises them)
    other = alt.schedule_one(schedulers.common_pod(pod, pod.scheduler_name), assume=False)
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
