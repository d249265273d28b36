"""Which device IDs each placed pod holds, per node: the kubelet device manager's view (R3.2, R6, R9.3).

The scheduler counts; kubelet assigns device IDs at admission. kubegpu keeps the assignment beside the
counts so it can say which GPU a pod gets and refuse placements whose devices cannot really be
assigned. Assignments come from, in order: a Reserve by the device plugin of the core
(``GpuDeviceFit``), the pod's ``kubegpu.io/allocated-devices`` annotation (written by kubegpu's live
scheduler), or — for pods whose devices nobody recorded — a stand-in chosen the way the device plugin
would choose, flagged ``assumed``.

``choose`` is the one device-choice rule, shared by Filter, Reserve and ``explain``: per container and
resource, whole GPUs by ``devices.preferred_allocation`` (NVLink, then PCIe distance, then NUMA),
time-sliced replicas spread over physical GPUs (``devices.distributed_allocation``), MIG devices in
advertised order; unhealthy devices never; and first the node's Topology Manager policy
(``devices.numa.admit_container``: kubelet's hint merging for none / best-effort / restricted /
single-numa-node), choosing from the devices inside the NUMA affinity it settles on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from kubegpu.devices.allocator import distributed_allocation, preferred_allocation
from kubegpu.devices.container_view import shared_request_error
from kubegpu.devices.inventory import Health
from kubegpu.devices.node_devices import NodeDevices
from kubegpu.devices.numa import admit_container
from kubegpu.devices.plugin_versions import NEWEST, PluginVersion, refuses_more_than_one, why_refused
from kubegpu.devices.sharing import ResourcePlan, strip_annotation
from kubegpu.model.names import ALLOCATION_ANNOTATION as ALLOCATION_ANNOTATION
from kubegpu.model.objects import Pod, PodKey
from kubegpu.model.resources import is_gpu
from kubegpu.scheduler.reasons import (
    NO_DEVICES,
    NUMA_UNALIGNED,
    REPLICAS_ON_FEWER_GPUS,
    SHARED_MORE_THAN_ONE,
    TOO_FEW_DEVICES,
    DeviceRefused,
)

# container name → resource → device IDs
Assignment = dict[str, dict[str, list[str]]]


@dataclass(frozen=True)
class Refusal:
    """Why a pod's devices cannot be assigned on a node: a reason for the histogram and the evidence."""

    reason: DeviceRefused
    evidence: str
    unresolvable: bool = False
    kubelet_error: str = ""  # what kubelet would report at admission
    kubelet_reason: str = "UnexpectedAdmissionError"


def container_requests(pod: Pod) -> list[tuple[str, dict[str, int]]]:
    """GPU requests per container, whole units, in the order kubelet allocates them: init containers (plain
    ones and sidecars) as declared, then app containers (``ManagerImpl.Allocate``, pkg/kubelet/cm/
    devicemanager/manager.go v1.37.2: "Allocate resources for init containers first")."""
    out = []
    for c in (*pod.init_containers, *pod.containers):
        req = {r: v // 1000 for r, v in c.requests.items() if is_gpu(r) and v}
        if req:
            out.append((c.name, req))
    return out


REPLICA_POLICIES = ("spread", "pack")


def packed_replicas(available: list[str], size: int) -> list[str]:
    """``size`` replicas on distinct physical GPUs, the most-used GPUs first (fewest free replicas), so
    whole GPUs stay free for pods that need them; ``[]`` when fewer GPUs have a free replica."""
    by_gpu: dict[str, list[str]] = {}
    for i in available:
        by_gpu.setdefault(strip_annotation(i), []).append(i)
    order = sorted(by_gpu, key=lambda g: (len(by_gpu[g]), available.index(by_gpu[g][0])))
    return [by_gpu[g][0] for g in order[:size]] if len(order) >= size else []


def choose(
    pod: Pod,
    devices: NodeDevices,
    taken: Mapping[str, set[str]],
    replica_policy: str = "spread",
    *,
    as_kubelet: bool = False,
    plugin_version: PluginVersion = NEWEST,
) -> tuple[Assignment | None, Refusal | None]:
    """Assign devices to every container of ``pod`` from what is free on the node, or say why not.

    ``replica_policy`` places time-sliced/MPS replicas: ``spread`` (the NVIDIA plugin's distributed
    policy: the least-used GPUs first) or ``pack`` (the most-used first, keeping whole GPUs free).
    ``as_kubelet``: what kubelet and the device plugin do, without kubegpu's device-aware refusals
    (replicas on fewer physical GPUs than asked): the devices a pod kube-scheduler placed gets, or kubelet's
    own refusal. A resource no device plugin on the node registers is then no refusal: kubelet drops the
    extended resources the node does not advertise before its admission fit check
    (``removeMissingExtendedResources``, pkg/kubelet/lifecycle/predicate.go) and its device manager
    allocates only resources a plugin registered (``allocateContainerResources`` skips the others,
    ``isDevicePluginResource``, pkg/kubelet/cm/devicemanager/manager.go).
    ``plugin_version``: the NVIDIA plugin release whose refusal text and MPS rule apply
    (``devices.plugin_versions``)."""
    assignment: Assignment = {}
    used: dict[str, set[str]] = {r: set(ids) for r, ids in taken.items()}
    # kubelet's devicesToReuse: a plain init container's devices, once it is done, go to the containers
    # after it, taken before any free device (devicesToAllocate: "Allocates from reusableDevices list
    # first"); a sidecar's or app container's devices stay its own and leave that list
    # (addContainerAllocatedResources / removeContainerAllocatedResources, manager.go v1.37.2). The pod
    # holds the union until it ends (podDevices.devices()), which is what the scheduler counts (KEP-753).
    plain_init = {c.name for c in pod.init_containers if c.restart_policy != "Always"}
    reusable: dict[str, list[str]] = {}
    for container, req in container_requests(pod):
        reused = {r: reusable[r][:n] for r, n in req.items() if reusable.get(r)}
        rest = {r: n - len(reused.get(r, ())) for r, n in req.items() if n > len(reused.get(r, ()))}
        picked: dict[str, list[str]] = {}
        if rest:
            got, refusal = _pick_container(rest, devices, used, replica_policy, as_kubelet, plugin_version)
            if got is None:
                return None, refusal
            picked = got
            for r, ids in picked.items():
                used.setdefault(r, set()).update(ids)
        mine = {r: [*reused.get(r, ()), *picked.get(r, ())] for r in req if reused.get(r) or picked.get(r)}
        for r, ids in mine.items():
            if container in plain_init:
                reusable[r] = [*reusable.get(r, ()), *(i for i in ids if i not in reusable.get(r, ()))]
            else:
                reusable[r] = [i for i in reusable.get(r, ()) if i not in ids]
        assignment[container] = mine
    return assignment, None


def _free(plan: ResourcePlan, used: Mapping[str, set[str]]) -> list[str]:
    return [d.id for d in plan.devices if d.health == Health.HEALTHY and d.id not in used.get(plan.name, ())]


def _pick_container(
    req: dict[str, int],
    devices: NodeDevices,
    used: Mapping[str, set[str]],
    replica_policy: str,
    as_kubelet: bool,
    plugin_version: PluginVersion,
) -> tuple[dict[str, list[str]] | None, Refusal | None]:
    plans: dict[str, ResourcePlan] = {}
    for resource, n in sorted(req.items()):
        plan = devices.plans.get(resource)
        if plan is None and as_kubelet:
            continue  # kubelet's device manager skips a resource no plugin registers (choose's docstring)
        if plan is None:
            advertised = sorted(devices.plans) or "nothing"
            return None, Refusal(
                DeviceRefused(NO_DEVICES, (resource,)), f"the node's devices advertise {advertised}", True
            )
        if n > 1 and refuses_more_than_one(plan, plugin_version):
            error = shared_request_error(plan, n, plugin_version)
            return None, Refusal(
                DeviceRefused(SHARED_MORE_THAN_ONE, (resource,), sharing=plan.sharing.value),
                f"a container asks for {n} {resource}; {why_refused(plan, plugin_version)}",
                True,
                error.admission_message,
            )
        plans[resource] = plan
    req = {r: n for r, n in req.items() if r in plans}  # as kubelet: only what a plugin registers
    free = {r: _free(p, used) for r, p in plans.items()}
    for resource, n in req.items():
        if len(free[resource]) < n:
            # devicemanager devicesToAllocate's error, wrapped as admission.go's UnexpectedAdmissionError
            # (pkg/kubelet/cm/devicemanager/manager.go, pkg/kubelet/cm/admission/errors.go, v1.37.2)
            unavailable = (
                f"requested number of devices unavailable for {resource}. Requested: {n}, "
                f"Available: {len(free[resource])}"
            )
            return None, Refusal(
                DeviceRefused(TOO_FEW_DEVICES, (resource,)),
                f"{len(free[resource])} healthy free, {n} needed",
                kubelet_error=f"Allocate failed due to {unavailable}, which is unexpected",
            )
    # kubelet's Topology Manager decides NUMA alignment before the devices are chosen
    numa_of = {r: {d.id: d.numa_node for d in p.devices} for r, p in plans.items()}
    nodes = sorted({n for m in numa_of.values() for n in m.values() if n is not None})
    decision = admit_container(devices.topology_policy, numa_of, free, req, nodes)
    if not decision.admit:
        per_numa = "; ".join(
            f"{r}: " + ", ".join(
                f"NUMA {node} has {sum(1 for i in free[r] if numa_of[r][i] == node)}" for node in nodes
            ) + f" free, {req[r]} needed"
            for r in sorted(req)
        )  # fmt: skip
        return None, Refusal(
            DeviceRefused(NUMA_UNALIGNED, tuple(sorted(req)), devices.topology_policy),
            f"{per_numa} — the {devices.topology_policy} policy admits no wider NUMA affinity",
            kubelet_error=decision.message,
            kubelet_reason=decision.reason,
        )
    picked: dict[str, list[str]] = {}
    for resource, n in sorted(req.items()):
        plan = plans[resource]
        # kubelet allocates from the devices inside the chosen NUMA affinity first
        aligned = list(decision.aligned.get(resource, ())) or free[resource]
        if plan.shared and replica_policy == "pack":
            ids = packed_replicas(aligned, n) or distributed_allocation(
                aligned, [], n, plan.replicas_per_gpu()
            )
        elif plan.shared:
            ids = distributed_allocation(aligned, [], n, plan.replicas_per_gpu())
            gpus = {strip_annotation(i) for i in ids}
            if len(gpus) < n and not as_kubelet:
                # the device plugin itself hands out any free replicas (NVIDIA/k8s-device-plugin
                # internal/rm/allocate.go, distributedAlloc: it only spreads them as far as it can)
                return None, Refusal(
                    DeviceRefused(REPLICAS_ON_FEWER_GPUS, (resource,)),
                    f"{n} replicas would land on {len(gpus)} physical GPU(s): replicas share one GPU's memory and "
                    "compute, so the extra replica adds no hardware",
                )
        elif any(d.mig_index is not None for d in plan.devices):
            ids = aligned[:n]
        else:
            ids = preferred_allocation(aligned, [], n, devices.topology)
        if len(ids) < n:
            return None, Refusal(
                DeviceRefused(TOO_FEW_DEVICES, (resource,)), f"{len(aligned)} free, {n} needed"
            )
        picked[resource] = ids
    return picked, None


def recorded_assignment(pod: Pod) -> Assignment | None:
    raw = pod.annotations.get(ALLOCATION_ANNOTATION)
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    return {
        str(c): {str(r): [str(i) for i in ids] for r, ids in res.items()}
        for c, res in data.items()
        if isinstance(res, dict)
    }


class DeviceLedger:
    """Per node: device model and which IDs are held by which pod; changes are undone by the cluster journal.

    The pods a ``ClusterState`` starts with are replayed per node on first use (``defer``): a node's
    devices are chosen, in the order its pods were added, the first time anything reads or changes that
    node's devices, so a command that never looks at device IDs (``diagnose`` of the default profile
    on thousands of nodes) does not pay for choosing them. The answers are those of an eager replay: a
    node's choices depend only on that node's model and its earlier pods. ``held``, ``assignments`` and
    ``assumed`` (read from outside) replay every node first."""

    def __init__(self, models: list[NodeDevices | None]) -> None:
        self.models = models
        self._held: list[dict[str, dict[str, PodKey]]] = [{} for _ in models]  # node → resource → id → pod
        self._assignments: dict[PodKey, Assignment] = {}
        self._assumed: set[PodKey] = set()
        self._deferred: dict[int, list[Pod]] = {}  # node → its pods whose devices are not replayed yet

    def defer(self, pod: Pod, idx: int) -> None:
        """Record ``pod`` on node ``idx`` now, its devices when node ``idx``'s devices are first used."""
        if self.models[idx] is not None and container_requests(pod):
            self._deferred.setdefault(idx, []).append(pod)

    def settle(self, idx: int) -> None:
        """Replay the deferred pods of node ``idx`` (nothing when there are none)."""
        pods = self._deferred.pop(idx, None)
        for pod in pods or ():
            self._assign(pod, idx, None, False)

    def settle_all(self) -> None:
        for idx in sorted(self._deferred):
            self.settle(idx)

    @property
    def held(self) -> list[dict[str, dict[str, PodKey]]]:
        self.settle_all()
        return self._held

    @property
    def assignments(self) -> dict[PodKey, Assignment]:
        self.settle_all()
        return self._assignments

    @property
    def assumed(self) -> set[PodKey]:
        self.settle_all()
        return self._assumed

    def is_assumed(self, key: PodKey, idx: int) -> bool:
        """Whether ``key``, placed on node ``idx``, holds a stand-in assignment nobody recorded."""
        self.settle(idx)
        return key in self._assumed

    def assignment(self, key: PodKey, idx: int) -> Assignment | None:
        """The devices ``key`` holds on node ``idx`` (None: none, or count-only)."""
        self.settle(idx)
        return self._assignments.get(key)

    def taken(self, idx: int, excluding: PodKey | None = None) -> dict[str, set[str]]:
        """Device IDs held on node ``idx`` per resource (those of ``excluding`` left out)."""
        self.settle(idx)
        held = self._held[idx]
        if excluding is None:  # the filter's and score's call, once per pod and node: no per-ID test
            return {r: set(ids) for r, ids in held.items()}
        return {r: {i for i, k in ids.items() if k != excluding} for r, ids in held.items()}

    def assign(
        self, pod: Pod, idx: int, assignment: Assignment | None, assumed: bool = False
    ) -> Assignment | None:
        """Record ``pod``'s devices on node ``idx``; without an assignment, recover or assume one.
        ``assumed`` keeps a restored stand-in assignment flagged as such (journal rollback)."""
        self.settle(idx)
        return self._assign(pod, idx, assignment, assumed)

    def _assign(self, pod: Pod, idx: int, assignment: Assignment | None, assumed: bool) -> Assignment | None:
        model = self.models[idx]
        if model is None or not container_requests(pod):
            return None
        if assignment is None:
            assignment = recorded_assignment(pod)
        if assignment is None:
            assignment, _ = choose(pod, model, self.taken(idx), as_kubelet=True)  # what kubelet gave it
            if assignment is None:
                return None  # over-committed already (snapshot disagrees with itself): count only
            self._assumed.add(pod.key)
        elif assumed:
            self._assumed.add(pod.key)
        held = self._held[idx]
        for res in assignment.values():
            for r, ids in res.items():
                for i in ids:
                    held.setdefault(r, {})[i] = pod.key
        self._assignments[pod.key] = assignment
        return assignment

    def release(self, pod: Pod, idx: int) -> Assignment | None:
        self.settle(idx)
        assignment = self._assignments.pop(pod.key, None)
        self._assumed.discard(pod.key)
        if assignment:
            for res in assignment.values():
                for r, ids in res.items():
                    for i in ids:
                        self._held[idx].get(r, {}).pop(i, None)
        return assignment
