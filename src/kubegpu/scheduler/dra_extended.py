"""Extended resources served by DRA (KEP-5004, feature gate ``DRAExtendedResource``), as kube-scheduler does it.

A DeviceClass serves two extended-resource names: its ``spec.extendedResourceName`` (say
``nvidia.com/gpu``) and the implicit ``deviceclass.resource.kubernetes.io/<class>``. When two classes name
the same resource the newer one (``creationTimestamp``) wins and the lower name breaks a tie
(``k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache``). On a node whose allocatable
lacks such a resource (no device plugin advertises it) the pod's request is allocated from DRA devices
through one special ResourceClaim per pod, whose requests are built per container
(``createRequestsAndMappings`` in ``pkg/scheduler/framework/plugins/dynamicresources/
extendeddynamicresources.go``): request ``container-<i>-request-<j>`` (``i`` the container's index in
init containers then containers, ``j`` the resource's index among the container's sorted request names),
``ExactCount`` of the container's quantity; a plain init container first reuses the devices of the
long-lived containers after it and only asks for the rest, and only the largest such request is kept.
Imports the model only.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubegpu.model.dra import DeviceClass, DeviceRequest, DeviceSubRequest
from kubegpu.model.names import DRA_DEVICE_CLASS_RESOURCE_PREFIX
from kubegpu.model.objects import Container, Pod
from kubegpu.model.resources import is_extended

# upstream specialClaimInMemName: the special claim's name until PreBind creates it (not a valid name)
IN_MEMORY_NAME = "<extended-resources>"
MILLI = 1000


def is_dra_extended_name(name: str) -> bool:
    """``schedutil.IsDRAExtendedResourceName``: an extended resource name or a class's implicit one."""
    return is_extended(name) or name.startswith(DRA_DEVICE_CLASS_RESOURCE_PREFIX)


class ClassResolver:
    """Extended resource name → the DeviceClass serving it (upstream ``DeviceClassResolver``)."""

    def __init__(self, classes: Mapping[str, DeviceClass]) -> None:
        self.by_resource: dict[str, DeviceClass] = {
            DRA_DEVICE_CLASS_RESOURCE_PREFIX + c.name: c for c in classes.values()
        }
        explicit: dict[str, DeviceClass] = {}
        for c in sorted(classes.values(), key=lambda c: c.name):
            if not c.extended_resource_name:
                continue
            have = explicit.get(c.extended_resource_name)
            if have is None or c.created > have.created:  # equal: the lower name, seen first, stays
                explicit[c.extended_resource_name] = c
        self.by_resource.update(explicit)

    def get(self, resource: str) -> DeviceClass | None:
        return self.by_resource.get(resource)

    def mapped(self, requests: Mapping[str, int]) -> list[str]:
        """The pod's non-zero requests a DeviceClass serves, by name."""
        return sorted(
            r for r, q in requests.items() if q and is_dra_extended_name(r) and r in self.by_resource
        )


def _container_request(
    index: int, c: Container, resource: str, cls: str, reusable: list[DeviceRequest | None]
) -> DeviceRequest | None:
    milli = c.requests.get(resource, 0)
    if milli == 0 or milli % MILLI:  # upstream AsInt64 fails on a fraction: no request
        return None
    want = milli // MILLI
    have = 0
    for r in reusable:
        if r is not None and r.exactly is not None:
            have += r.exactly.count
            if have >= want:
                return None
    name = f"container-{index}-request-{sorted(c.requests).index(resource)}"
    return DeviceRequest(name, DeviceSubRequest(name, cls, count=want - have))


def _count(r: DeviceRequest) -> int:
    return r.exactly.count if r.exactly is not None else 0


def extended_requests(pod: Pod, resources: list[str], resolver: ClassResolver) -> tuple[DeviceRequest, ...]:
    """The special claim's requests for the ``resources`` that must come from DRA on one node."""
    containers = [*pod.init_containers, *pod.containers]
    n_init = len(pod.init_containers)
    short_lived = [i for i, c in enumerate(containers) if i < n_init and c.restart_policy != "Always"]
    long_lived = [i for i in range(len(containers)) if i not in short_lived]
    out: list[DeviceRequest] = []
    for resource in sorted(resources):
        cls = resolver.get(resource)
        if cls is None:
            continue
        long_reqs: list[DeviceRequest | None] = [None] * len(containers)
        for i in long_lived:
            long_reqs[i] = _container_request(i, containers[i], resource, cls.name, [])
        biggest: DeviceRequest | None = None
        for i in short_lived:
            r = _container_request(i, containers[i], resource, cls.name, long_reqs[i:])
            if r is not None and (biggest is None or _count(biggest) < _count(r)):
                biggest = r
        if biggest is not None:
            out.append(biggest)
        out.extend(r for r in long_reqs if r is not None)
    return tuple(sorted(out, key=lambda r: r.name))
