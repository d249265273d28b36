"""Per-device node selection (KEP-4815): a ResourceSlice with ``perDeviceNodeSelection: true`` whose devices
each say which nodes they reach (``nodeName``, ``nodeSelector`` or ``allNodes``).

Upstream (k8s.io/dynamic-resource-allocation v0.36.3 structured/internal/incubating): ``GatherPools``
(pools_incubating.go) takes such a slice for a node when one of its devices ``NodeMatches`` it, and skips it
when DRAPartitionableDevices is off; ``isSelectable`` (allocator_incubating.go) then refuses a device that
does not match the node. The gate is beta, on by default from 1.36 (pkg/features/kube_features.go v1.36.3);
off (1.35) the API server drops the fields (resourceslice strategy.go
``dropDisabledDRAPartitionableDevicesFields``). Validation texts: pkg/apis/resource/validation/validation.go
(v1.36.3) ``validateResourceSliceSpec`` / ``validateDevice``.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubegpu.errors import InputError
from kubegpu.explain.dra_gates import slice_lines
from kubegpu.explain.dra_inventory import devices
from kubegpu.model.dra import parse_resource_slice
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.dra_allocator import SliceIndex
from kubegpu.testing.builders import make_node
from tests.dra import objects as o
from tests.dra.schedulers import outcome

ZONE = "topology.kubernetes.io/zone"


def fabric() -> dict[str, Any]:
    """One slice (pool ``fabric``): gpu-a on n1 by name, gpu-b on the nodes of zone z2, gpu-c on all nodes."""
    a, b, c = (o.gpu_device(i, "fabric") for i in range(3))
    a["name"], b["name"], c["name"] = "gpu-a", "gpu-b", "gpu-c"
    a["nodeName"] = "n1"
    b["nodeSelector"] = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": ZONE, "operator": "In", "values": ["z2"]}]}]}  # fmt: skip
    c["allNodes"] = True
    s = o.node_slice("fabric", [a, b, c])
    del s["spec"]["nodeName"]
    s["spec"]["perDeviceNodeSelection"] = True
    return s


def nodes() -> list[dict[str, Any]]:
    return [make_node(n).label(ZONE, z).obj() for n, z in (("n1", "z1"), ("n2", "z2"), ("n3", "z1"))]


def test_a_node_reaches_only_the_devices_that_select_it() -> None:
    index = SliceIndex([parse_resource_slice(fabric())])
    reach = {}
    for n, zone in (("n1", "z1"), ("n2", "z2"), ("n3", "z1")):
        pools = index.pools(n, {ZONE: zone}, partitionable=True)
        reach[n] = [d.name for p in pools for s in p.slices for d in s.devices]
    # n1: gpu-a by name, gpu-c (all nodes); n2: gpu-b (zone z2), gpu-c; n3: only gpu-c
    assert reach == {"n1": ["gpu-a", "gpu-c"], "n2": ["gpu-b", "gpu-c"], "n3": ["gpu-c"]}
    # gate off: upstream GatherPools skips the slice
    assert index.pools("n1", {ZONE: "z1"}, partitionable=False) == []


def test_scheduling_counts_the_devices_per_node() -> None:
    def objs(count: int, only: str) -> list[dict[str, Any]]:
        ns = [n for n in nodes() if n["metadata"]["name"] == only]
        return [
            *o.gpu_classes(),
            *ns,
            fabric(),
            o.claim("c", o.request("g", count=count)),
            o.pod("p", ("g", "c", "")),
        ]

    # 2 devices: n1 and n2 reach 2 each, n3 only gpu-c
    assert outcome("1.36", *objs(2, "n1")) == "n1"
    assert outcome("1.37", *objs(2, "n2")) == "n2"
    assert outcome("1.36", *objs(2, "n3")).startswith(
        "0/1 nodes are available: 1 cannot allocate all claims."
    )
    assert outcome("1.36", *objs(1, "n3")) == "n3"
    # 1.35: the slice is skipped, no device reaches any node
    assert outcome("1.35", *objs(1, "n1")).startswith(
        "0/1 nodes are available: 1 cannot allocate all claims."
    )


def test_the_inventory_places_a_named_device_on_its_node_and_1_35_says_the_slice_is_skipped() -> None:
    snap = build_snapshot([("t", x) for x in (*nodes(), fabric())])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    assert [(d.name, d.node) for d in devices(snap)] == [("gpu-a", "n1"), ("gpu-b", ""), ("gpu-c", "")]
    (line,) = slice_lines(snap.dra, 35)
    assert line.startswith("ResourceSlices fabric-gpu.nvidia.com-x use perDeviceNodeSelection")
    assert slice_lines(snap.dra, 36) == []


def test_validation_refuses_what_the_api_server_refuses() -> None:
    s = fabric()
    del s["spec"]["devices"][2]["allNodes"]
    with pytest.raises(
        InputError, match=r"spec.devices\[2\].*exactly one of `nodeName`, `nodeSelector`, or `allNodes`"
    ):
        parse_resource_slice(s)
    s = o.node_slice("n1", [o.gpu_device(0, "n1")])
    s["spec"]["devices"][0]["allNodes"] = True
    with pytest.raises(InputError, match=r"can only be set if `perDeviceNodeSelection` is set to true"):
        parse_resource_slice(s)
    s = fabric()
    s["spec"]["nodeName"] = "n1"
    with pytest.raises(
        InputError, match=r"exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`"
    ):
        parse_resource_slice(s)
