"""The committed v1beta1 stubs are what grpcio-tools makes of api.proto, and api.proto is kubelet's API.

The field table below is read off kubelet's published api.proto (k8s.io/kubelet/pkg/apis/deviceplugin/
v1beta1): kubelet and kubegpu only understand each other if every name and number matches.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubegpu.node.v1beta1 import api_pb2 as pb
from kubegpu.node.v1beta1 import regenerate

UPSTREAM_FIELDS = {
    "DevicePluginOptions": {"pre_start_required": 1, "get_preferred_allocation_available": 2},
    "RegisterRequest": {"version": 1, "endpoint": 2, "resource_name": 3, "options": 4},
    "Empty": {},
    "ListAndWatchResponse": {"devices": 1},
    "TopologyInfo": {"nodes": 1},
    "NUMANode": {"ID": 1},
    "Device": {"ID": 1, "health": 2, "topology": 3},
    "PreStartContainerRequest": {"devices_ids": 1},
    "PreStartContainerResponse": {},
    "PreferredAllocationRequest": {"container_requests": 1},
    "ContainerPreferredAllocationRequest": {
        "available_deviceIDs": 1,
        "must_include_deviceIDs": 2,
        "allocation_size": 3,
    },
    "PreferredAllocationResponse": {"container_responses": 1},
    "ContainerPreferredAllocationResponse": {"deviceIDs": 1},
    "AllocateRequest": {"container_requests": 1},
    "ContainerAllocateRequest": {"devices_ids": 1},
    "CDIDevice": {"name": 1},
    "AllocateResponse": {"container_responses": 1},
    "ContainerAllocateResponse": {"envs": 1, "mounts": 2, "devices": 3, "annotations": 4, "cdi_devices": 5},
    "Mount": {"container_path": 1, "host_path": 2, "read_only": 3},
    "DeviceSpec": {"container_path": 1, "host_path": 2, "permissions": 3},
}

UPSTREAM_SERVICES = {
    "Registration": {"Register": ("RegisterRequest", "Empty", False)},
    "DevicePlugin": {
        "GetDevicePluginOptions": ("Empty", "DevicePluginOptions", False),
        "ListAndWatch": ("Empty", "ListAndWatchResponse", True),
        "GetPreferredAllocation": ("PreferredAllocationRequest", "PreferredAllocationResponse", False),
        "Allocate": ("AllocateRequest", "AllocateResponse", False),
        "PreStartContainer": ("PreStartContainerRequest", "PreStartContainerResponse", False),
    },
}


def test_package_messages_and_field_numbers_are_kubelets() -> None:
    assert pb.DESCRIPTOR.package == "v1beta1"
    got = {
        name: {f.name: f.number for f in message.fields}
        for name, message in pb.DESCRIPTOR.message_types_by_name.items()
    }
    assert got == UPSTREAM_FIELDS


def test_services_and_rpcs_are_kubelets() -> None:
    got = {
        name: {m.name: (m.input_type.name, m.output_type.name, m.server_streaming) for m in service.methods}
        for name, service in pb.DESCRIPTOR.services_by_name.items()
    }
    assert got == UPSTREAM_SERVICES


def test_committed_stubs_equal_freshly_generated_ones(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools", reason="grpcio-tools (test extra) regenerates the stubs")
    regenerate.generate(tmp_path)
    for name in regenerate.STUBS:
        committed = (regenerate.HERE / name).read_text(encoding="utf-8")
        assert (tmp_path / name).read_text(encoding="utf-8") == committed, (
            f"{name} is stale: run python -m kubegpu.node.v1beta1.regenerate"
        )
