"""Client of kubelet's Pod Resources API v1 (R13.4): which container holds which device ID.

``list_pod_resources`` calls ``List`` (``list_assignments`` keeps its device-plugin part) and
``list_allocatable`` calls ``GetAllocatableResources`` over the unix socket kubelet serves, each with a
deadline, and return plain values. ``List`` reports two kinds of devices per container: the device
plugins' (``devices``: resource name and device IDs) and, where the ``KubeletPodResourcesDynamicResources``
gate is on, DRA's (``dynamic_resources``: per claim, each device's driver/pool/device triplet and its CDI
device names). That gate is alpha and off by default in 1.27-1.33, beta and on from 1.34, GA and locked on
in 1.36 (pkg/features/kube_features.go). The stubs in
``v1`` are generated from ``v1/api.proto``. Must not: interpret device IDs (``kubegpu.exporter.attribution``
does), or keep a connection between calls (kubelet may restart and recreate the socket at any time).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc

from kubegpu.exporter.podresources.v1 import api_pb2 as pb
from kubegpu.exporter.podresources.v1 import api_pb2_grpc as pb_grpc

# dcgm-exporter's connectionTimeout for the same calls (transformation/kubernetes.go): 10 s.
DEADLINE_S = 10.0


@dataclass(frozen=True, slots=True)
class Assignment:
    """Devices of one resource that kubelet assigned to one container."""

    namespace: str
    pod: str
    container: str
    resource: str
    device_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ClaimDevice:
    """One device of a ResourceClaim that kubelet prepared for one container (a ``ClaimResource``).

    ``cdi_devices`` is the ``ClaimResource``'s list as kubelet sends it. Since 1.32 kubelet builds it with
    one slice per driver that it appends to for each device (``GetDynamicResources`` in
    pkg/kubelet/cm/container_manager_linux.go), so a claim's second device of a driver also lists the
    first one's CDI names: a consumer must not read the list as "this device's only".
    """

    namespace: str
    pod: str
    container: str
    claim_name: str
    claim_namespace: str
    driver: str
    pool: str
    device: str
    cdi_devices: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PodResourcesListing:
    """What one ``List`` call returned: device-plugin assignments and DRA claim devices."""

    assignments: tuple[Assignment, ...]
    claim_devices: tuple[ClaimDevice, ...]


class PodResourcesError(RuntimeError):
    """kubelet's Pod Resources API could not be reached or answered with an error."""


def list_assignments(socket: Path, deadline_s: float = DEADLINE_S) -> tuple[Assignment, ...]:
    """Every (container, resource, device IDs) that kubelet reports through ``List``."""
    return list_pod_resources(socket, deadline_s).assignments


def list_pod_resources(socket: Path, deadline_s: float = DEADLINE_S) -> PodResourcesListing:
    """Device-plugin assignments and DRA claim devices of every container, from one ``List``."""
    with _channel(socket) as channel:
        stub = pb_grpc.PodResourcesListerStub(channel)  # type: ignore[no-untyped-call]  # generated, unannotated
        try:
            resp = stub.List(pb.ListPodResourcesRequest(), timeout=deadline_s)
        except grpc.RpcError as exc:
            raise PodResourcesError(f"{socket}: List: {_rpc_text(exc)}") from exc
    assignments = tuple(
        Assignment(pod.namespace, pod.name, container.name, dev.resource_name, tuple(dev.device_ids))
        for pod in resp.pod_resources
        for container in pod.containers
        for dev in container.devices
    )
    claim_devices = tuple(
        ClaimDevice(
            pod.namespace,
            pod.name,
            container.name,
            dyn.claim_name,
            dyn.claim_namespace,
            res.driver_name,
            res.pool_name,
            res.device_name,
            tuple(cdi.name for cdi in res.cdi_devices),
        )
        for pod in resp.pod_resources
        for container in pod.containers
        for dyn in container.dynamic_resources
        for res in dyn.claim_resources
    )
    return PodResourcesListing(assignments, claim_devices)


def list_allocatable(socket: Path, deadline_s: float = DEADLINE_S) -> dict[str, tuple[str, ...]]:
    """Device IDs kubelet can allocate, per resource name (``GetAllocatableResources``)."""
    with _channel(socket) as channel:
        stub = pb_grpc.PodResourcesListerStub(channel)  # type: ignore[no-untyped-call]  # generated, unannotated
        try:
            resp = stub.GetAllocatableResources(pb.AllocatableResourcesRequest(), timeout=deadline_s)
        except grpc.RpcError as exc:
            raise PodResourcesError(f"{socket}: GetAllocatableResources: {_rpc_text(exc)}") from exc
    out: dict[str, tuple[str, ...]] = {}
    for dev in resp.devices:
        out[dev.resource_name] = out.get(dev.resource_name, ()) + tuple(dev.device_ids)
    return out


def _channel(socket: Path) -> grpc.Channel:
    return grpc.insecure_channel(f"unix://{socket}")


def _rpc_text(exc: grpc.RpcError) -> str:
    code = exc.code() if isinstance(exc, grpc.Call) else None
    details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
    return f"{code.name if code else 'error'}: {details}"
