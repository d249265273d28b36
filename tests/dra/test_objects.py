"""Parsing resource.k8s.io objects: v1, v1beta2 and v1beta1 (by conversion), errors as one line.

Shapes: k8s.io/api/resource/v1 types.go (``exactly`` / ``firstAvailable``), v1beta1 types.go (request
fields inline, device attributes under ``basic``); the v1beta1 slice mirrors the one posted in
ROCm/k8s-gpu-dra-driver PR #21; the v1 slice the one in kubernetes-sigs/dra-driver-nvidia-gpu #719.
"""

from __future__ import annotations

from fractions import Fraction

from kubegpu.model.snapshot import build_snapshot
from tests.dra import objects as o


def test_v1_nvidia_slice_qualifies_names_with_the_driver_domain() -> None:
    snap = build_snapshot([("f.yaml", o.node_slice("n1", [o.gpu_device(0, "n1")]))])
    assert not snap.errors
    (s,) = snap.dra.slices
    assert (s.driver, s.pool, s.generation, s.slice_count, s.node_name) == (
        "gpu.nvidia.com",
        "n1",
        1,
        1,
        "n1",
    )
    d = s.devices[0]
    # unqualified names take the driver's domain (cel/compile.go parseQualifiedName)
    assert d.attributes["gpu.nvidia.com/productName"] == "NVIDIA A100 80GB PCIe"
    assert d.attributes["gpu.nvidia.com/driverVersion"] == ("version", "580.95.5")
    assert d.attributes["gpu.nvidia.com/index"] == 0
    assert d.capacity["gpu.nvidia.com/memory"] == Fraction(80 * 2**30)


def test_v1beta1_basic_device_and_inline_request_are_converted() -> None:
    rslice = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceSlice",
        "metadata": {"name": "gpu-operator-2-gpu.amd.com-fk4fq"},
        "spec": {
            "driver": "gpu.amd.com",
            "nodeName": "gpu-operator-2",
            "pool": {"name": "gpu-operator-2", "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": "gpu-32-160",
                    "basic": {
                        "attributes": {
                            "cardIndex": {"int": 32},
                            "resource.kubernetes.io/pcieRoot": {"string": "pci0003:00"},
                        },
                        "capacity": {"memory": {"value": "98296Mi"}},
                    },
                }
            ],
        },
    }
    rclaim = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.amd.com", "count": 2}]}},
    }
    snap = build_snapshot([("f", rslice), ("f", rclaim)])
    assert not snap.errors
    d = snap.dra.slices[0].devices[0]
    assert d.attributes == {"gpu.amd.com/cardIndex": 32, "resource.kubernetes.io/pcieRoot": "pci0003:00"}
    assert d.capacity["gpu.amd.com/memory"] == Fraction(98296 * 2**20)
    req = snap.dra.claims["ns/c"].requests[0]
    assert req.exactly is not None and (req.exactly.device_class_name, req.exactly.count) == (
        "gpu.amd.com",
        2,
    )


def test_bad_fields_are_one_line_naming_file_object_and_field() -> None:
    bad_mode = o.claim("c", o.request("gpu", mode="Some"))
    no_class = o.claim("d", {"name": "gpu", "exactly": {"count": 1}})
    bad_api = {**o.device_class("x", "gpu"), "apiVersion": "resource.k8s.io/v1alpha3"}
    snap = build_snapshot([("a.yaml", bad_mode), ("b.yaml", no_class), ("c.yaml", bad_api)])
    assert [e.one_line() for e in snap.errors] == [
        "a.yaml: ResourceClaim default/c: spec.devices.requests[0].exactly.allocationMode: unsupported value "
        "'Some': must be one of ('ExactCount', 'All')",
        "b.yaml: ResourceClaim default/d: spec.devices.requests[0].exactly.deviceClassName: required field is missing",
        "c.yaml: DeviceClass x: apiVersion: unsupported 'resource.k8s.io/v1alpha3': kubegpu reads "
        "resource.k8s.io/v1, resource.k8s.io/v1beta2, resource.k8s.io/v1beta1",
    ]


def test_pod_claims_and_generated_claim_status_are_read() -> None:
    p = o.pod("p", ("gpu", "", "tmpl"), ("shared", "team-claim", ""), statuses={"gpu": "p-gpu-7x2k"})
    snap = build_snapshot([("f", p)])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    pc = snap.dra.pod_claims["default/p"]
    assert [(r.name, r.claim_name, r.template_name) for r in pc.refs] == [
        ("gpu", "", "tmpl"),
        ("shared", "team-claim", ""),
    ]
    assert pc.statuses == {"gpu": "p-gpu-7x2k"}


def test_claim_status_allocation_and_reserved_for() -> None:
    c = o.claim("c", o.request("gpu"), status=o.allocated("n1", ("gpu", "gpu-0"), reserved=("uid-a",)))
    snap = build_snapshot([("f", c)])
    rc = snap.dra.claims["default/c"]
    assert rc.allocated is not None and [d.device_id for d in rc.allocated] == [
        ("gpu.nvidia.com", "n1", "gpu-0")
    ]
    assert rc.reserved_for == ("uid-a",)
    assert rc.allocation_node_selector is not None
