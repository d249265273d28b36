"""Client of kubelet's Pod Resources API v1 (R13.4): which container holds which device ID.

``list_assignments`` calls ``List`` and ``list_allocatable`` calls ``GetAllocatableResources`` over the
unix socket kubelet serves (``v1.SOCKET``), each with a deadline, and return plain values; the stubs in
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


class PodResourcesError(RuntimeError):
    """kubelet's Pod Resources API could not be reached or answered with an error."""


def list_assignments(socket: Path, deadline_s: float = DEADLINE_S) -> tuple[Assignment, ...]:
    """Every (container, resource, device IDs) that kubelet reports through ``List``."""
    with _channel(socket) as channel:
        stub = pb_grpc.PodResourcesListerStub(channel)  # type: ignore[no-untyped-call]  # generated, unannotated
        try:
            resp = stub.List(pb.ListPodResourcesRequest(), timeout=deadline_s)
        except grpc.RpcError as exc:
            raise PodResourcesError(f"{socket}: List: {_rpc_text(exc)}") from exc
    return tuple(
        Assignment(pod.namespace, pod.name, container.name, dev.resource_name, tuple(dev.device_ids))
        for pod in resp.pod_resources
        for container in pod.containers
        for dev in container.devices
    )


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
