"""The DRA devices a cluster publishes and who holds them: for the report's GPU map and the cluster exporter.

A device counts once, from the newest generation of its resource pool (``SliceIndex.pools``' rule); it is
held by the claim whose ``status.allocation`` names it (admin access takes nothing), and through the claim
by the pods in its ``status.reservedFor``. NVIDIA's driver (``gpu.nvidia.com``) types its devices with the
``type`` attribute: ``gpu`` devices sit on GPU ``index``, ``mig`` devices on GPU ``parentIndex`` with their
``profile``.

A free device of a partitionable pool (KEP-4815, ``DRAPartitionableDevices``) is not free when the shared
counters it consumes are already taken by the pool's allocated devices (a full GPU once one of its MIG
devices is allocated): the allocator's rule (``scheduler.dra_capacity.counters_left`` and
``device_counters_short``) gives the reason, kept in ``DraDevice.unavailable``. With the gate off the API
server drops ``sharedCounters`` / ``consumesCounters`` and no device consumes counters. A pool whose
counter sets are invalid (a set or counter a device names is missing) is skipped by the allocator: its
free devices say so. Imports the model and the scheduler's DRA rules.

Also ``diagnose``'s view of DRA GPUs: per node its NVIDIA DRA devices counted as the overview rows
``gpu (DRA)`` / ``mig (DRA)`` (``node_devices``: a DRA node lists no ``nvidia.com/gpu`` in status.capacity,
so a cluster served by DRA read as "0 GPU nodes"), and what a Pending pod's claims ask for, in the phrase
that groups Pending pods (``claim_phrase``); and a node whose GPU DRA driver publishes slices listing no device
(``empty_gpu_slices``, ``empty_slice_text``: the finding, ``empty_slice_finding``, and the unschedulable pod's
advice say it in one text).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubegpu.explain.engine import Engine
from kubegpu.explain.findings_base import Finding
from kubegpu.model.dra import DeviceRequest, DraObjects, ResourceSlice
from kubegpu.model.gpu_facts import gpu_signs
from kubegpu.model.names import GPU_DRA_DRIVERS, NVIDIA_DRA_DRIVER
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.dra_allocator import SliceIndex
from kubegpu.scheduler.dra_capacity import CounterSets, counters_left, device_counters_short
from kubegpu.scheduler.versions import dra_gate


@dataclass(frozen=True, slots=True)
class DraDevice:
    driver: str
    pool: str
    name: str
    node: str  # "" for a network device (its slice's, or per device, nodeSelector / allNodes)
    kind: str  # NVIDIA's "gpu" | "mig", else "" (another driver's device)
    gpu_index: int  # the physical GPU (index, or parentIndex of a MIG device); -1 unknown
    profile: str  # MIG profile ("1g.10gb"), "" otherwise
    claim: str  # "ns/name" of the allocated claim holding it, ""
    pods: tuple[str, ...]  # the pods the claim is reserved for
    # why a device no claim holds still cannot be allocated ("" when it can): its pool's shared counters
    unavailable: str = ""
    product: str = ""  # NVIDIA's productName attribute of a GPU ("" otherwise)
    # a MIG device drawing on a shared counter set (KEP-4815, gate on): part of a GPU already listed
    partition: bool = False

    @property
    def free(self) -> bool:
        return not self.claim and not self.unavailable

    @property
    def device_id(self) -> str:
        return f"{self.driver}/{self.pool}/{self.name}"

    @property
    def holder(self) -> str:
        """Who to show on the device: its first pod, else the claim (allocated, no pod reserved yet)."""
        return self.pods[0] if self.pods else self.claim


def _int(v: object) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else -1


def partitionable(engine: Engine) -> bool:
    """Whether the engine's minor has DRAPartitionableDevices on (``devices``' ``partitionable``)."""
    return dra_gate(engine.framework.handle.behaviour.minor, "DRAPartitionableDevices")


def devices(snapshot: ClusterSnapshot, partitionable: bool = True) -> list[DraDevice]:
    """Every published device with its holder, per pool (driver, name order) in slice then device order.
    ``partitionable``: the minor's DRAPartitionableDevices gate (on by default from 1.36)."""
    dra: DraObjects = snapshot.dra
    uid_to_pod = {p.uid: p.key for p in snapshot.pods if p.uid}
    held: dict[tuple[str, str, str], tuple[str, tuple[str, ...]]] = {}
    for c in dra.claims.values():
        pods = tuple(uid_to_pod.get(u, "") for u in c.reserved_for)
        for got in c.allocated or ():
            if not got.admin_access:
                held[got.device_id] = (c.key, tuple(p for p in pods if p))
    out = []
    index = SliceIndex(dra.slices)  # newest generation of each pool, its counter slices with it
    for (drv, pool), slices in sorted(index.by_pool.items()):
        left: CounterSets = {}
        invalid = ""
        if partitionable:
            sets, device_slices, invalid = index.counters((drv, pool), slices[0].generation)
            left = counters_left(sets, device_slices, held)
        for s in sorted(slices, key=lambda s: s.name):
            for d in s.devices:
                a = d.attributes
                kind = str(a.get(f"{s.driver}/type", "")) if s.driver == NVIDIA_DRA_DRIVER else ""
                index_attr = f"{s.driver}/parentIndex" if kind == "mig" else f"{s.driver}/index"
                claim, pods = held.get((s.driver, s.pool, d.name), ("", ()))
                profile = str(a.get(f"{s.driver}/profile", "")) if kind == "mig" else ""
                why = ""
                if not claim and partitionable:
                    why = (
                        f"pool {drv}/{pool} is invalid: {invalid}"
                        if invalid
                        else device_counters_short(left, d)
                    )
                gpu = _int(a.get(index_attr))
                node = s.node_name or d.node_name  # per-device node selection: the device's own node
                name = a.get(f"{s.driver}/productName") if kind == "gpu" else None
                product = name if isinstance(name, str) else ""
                part = partitionable and kind == "mig" and bool(d.consumes_counters)  # (gate off: dropped)
                out.append(
                    DraDevice(
                        s.driver, s.pool, d.name, node, kind, gpu, profile, claim, pods, why, product, part
                    )
                )
    return out


def pool_counts(
    snapshot: ClusterSnapshot, pool_label: str, unpooled: str, partitionable: bool = True
) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(kubegpu pool of the device's node, driver) → (devices, allocated, free); network devices go to
    ``unpooled``. A device neither allocated nor free is one its pool's shared counters no longer supply."""
    pool_of = {n.name: n.labels.get(pool_label, "") or unpooled for n in snapshot.nodes}
    out: dict[tuple[str, str], tuple[int, int, int]] = {}
    for d in devices(snapshot, partitionable):
        key = (pool_of.get(d.node, unpooled), d.driver)
        total, allocated, free = out.get(key, (0, 0, 0))
        out[key] = (total + 1, allocated + (1 if d.claim else 0), free + (1 if d.free else 0))
    return out


# the overview's rows for NVIDIA's DRA devices (by their ``type``): a DRA node lists no nvidia.com/gpu in
# status.capacity, so without them a cluster served by DRA reads as "0 GPU nodes"
DRA_ROWS = {"gpu": "gpu (DRA)", "mig": "mig (DRA)"}


@dataclass
class NodeDevices:
    """One node's NVIDIA DRA devices: per row of ``DRA_ROWS`` [devices, taken]; the first GPU's product."""

    rows: dict[str, list[int]]
    product: str = ""
    holders: dict[str, dict[str, int]] = field(default_factory=dict)  # pod key → row → devices it holds


def node_devices(snapshot: ClusterSnapshot, partitionable: bool = True) -> dict[str, NodeDevices]:
    """Per node, its node-local NVIDIA DRA devices (``devices``) as the overview counts them: a device is
    taken when a claim holds it or its pool's shared counters no longer supply it (not ``free``); a MIG
    device that draws on a shared counter set (KEP-4815) is a partition of a GPU already counted, not a
    device of its own, so only GPUs count there (else a partitionable H100 read as 1 GPU + 7 MIG devices)."""
    out: dict[str, NodeDevices] = {}
    for d in devices(snapshot, partitionable):  # (the newest generation of each pool only)
        row = DRA_ROWS.get(d.kind)
        if row is None or not d.node:
            continue
        found = out.get(d.node)
        if found is None:
            found = out[d.node] = NodeDevices({}, d.product)
        found.product = found.product or d.product
        for pod in d.pods:  # (a partition's holder too: it holds part of a counted GPU)
            held = found.holders.setdefault(pod, {})
            held[row] = held.get(row, 0) + 1
        if d.partition:
            continue
        counts = found.rows.setdefault(row, [0, 0])
        counts[0] += 1
        counts[1] += not d.free
    return {name: n for name, n in out.items() if n.rows}


def claim_phrase(pod_key: str, dra: DraObjects) -> str:
    """What the pod's claims ask for, one part per request: ``4 gpu.nvidia.com (DRA claim)``, ``all
    mig.nvidia.com (DRA claim)``, with the request's CEL selectors written out (pods asking for different
    devices must not share a group); the first alternative of a ``firstAvailable`` request, marked so. A
    claim or template the snapshot lacks reads ``DRA claim <name> (not in the snapshot)``."""
    pc = dra.pod_claims.get(pod_key)
    if pc is None:
        return ""
    ns = pod_key.split("/", 1)[0]
    parts: list[str] = []
    for ref in pc.refs:
        if ref.template_name and not ref.claim_name and ref.name in pc.statuses and not pc.statuses[ref.name]:
            continue  # no claim needed (the controller decided so): no devices asked
        name = pc.claim_name(ref)
        claim = dra.claims.get(f"{ns}/{name}") if name else None
        template = dra.templates.get(f"{ns}/{ref.template_name}") if ref.template_name else None
        requests = (
            claim.requests if claim is not None else template.requests if template is not None else None
        )
        if requests is None:
            parts.append(f"DRA claim {ref.claim_name or ref.template_name or ref.name} (not in the snapshot)")
            continue
        parts += [_request_phrase(r) for r in requests]
    return ", ".join(parts)


def _request_phrase(request: DeviceRequest) -> str:
    alternatives = request.alternatives
    if not alternatives:
        return f"DRA request {request.name}"
    sub = alternatives[0]
    amount = "all" if sub.allocation_mode == "All" else str(sub.count)
    where = "".join(f" where {s}" for s in sub.selectors)
    more = f" or {len(alternatives) - 1} alternative(s)" if len(alternatives) > 1 else ""
    return f"{amount} {sub.device_class_name}{where}{more} (DRA claim)"


def empty_gpu_slices(snapshot: ClusterSnapshot) -> dict[str, list[ResourceSlice]]:
    """Per node, the ResourceSlices of a GPU DRA driver that lists no device on it at all (every slice of that
    driver for the node empty, counter-only slices aside): the plugin published, yet offers nothing."""
    by_node: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in snapshot.dra.slices:
        if s.node_name and s.driver in GPU_DRA_DRIVERS:
            by_node.setdefault((s.node_name, s.driver), []).append(s)
    out: dict[str, list[ResourceSlice]] = {}
    for (node, _), slices in sorted(by_node.items()):
        if not any(s.devices for s in slices) and not any(s.shared_counters for s in slices):
            out.setdefault(node, []).extend(slices)
    return out


def empty_slice_text(node: str, slices: list[ResourceSlice]) -> str:
    """Why no claim for a GPU DRA driver's devices can be allocated on ``node``: its slices list none."""
    named = ", ".join(f"{s.name} ({s.driver}, pool {s.pool})" for s in slices)
    return (
        f"{node}'s ResourceSlice {named} lists no devices: the DRA driver's kubelet plugin runs there and "
        "published, but offered no GPU, so no claim for its devices can be allocated on the node. "
        "kubernetes-sigs/dra-driver-nvidia-gpu#1008: on a new node the plugin started while the node's GPU driver "
        "was still being installed and found none. Read the plugin's log on the node, and restart its pod once "
        "the GPU driver is ready"
    )


def empty_slice_finding(snapshot: ClusterSnapshot, name: str, slices: list[ResourceSlice]) -> Finding:
    """A GPU DRA driver's kubelet plugin published no device on ``name``. Its chart runs the plugin only on nodes
    NFD or GFD labels as NVIDIA's (NVIDIA/k8s-dra-driver-gpu, now kubernetes-sigs/dra-driver-nvidia-gpu,
    deployments/helm/nvidia-dra-driver-gpu/values.yaml ``kubeletPlugin.affinity``:
    ``feature.node.kubernetes.io/pci-10de.present``, ``cpu-model.vendor_id=NVIDIA``,
    ``nvidia.com/gpu.present``), but a nodeSelector or affinity of one's own can put it on any node: a node
    nothing marks as a GPU node is not called one, and offering no GPU there may be right."""
    node = snapshot.node(name)
    command = [f"kubectl get resourceslices --field-selector spec.nodeName={name} -o yaml"]
    if node is not None and gpu_signs(node):
        return Finding(
            "critical", "driver/device-plugin", "GPU node's DRA driver publishes no device", [f"node/{name}"],
            empty_slice_text(name, slices) + ".", "R3.4", command,
        )  # fmt: skip
    return Finding(
        "warning", "driver/device-plugin", "GPU DRA driver publishes no device on a node not marked as a GPU node",
        [f"node/{name}"],
        empty_slice_text(name, slices) + f". No label or taint marks {name} as a GPU node (GPU Feature Discovery's, "
        "NFD's PCI vendor label, a provider's GPU label, the nvidia.com/gpu taint): if it has no GPU, the plugin's "
        "DaemonSet selects it by mistake; narrow its nodeSelector or affinity to GPU nodes.",
        "R3.4", command,
    )  # fmt: skip
