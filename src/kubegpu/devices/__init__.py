"""Device-level truth of a node: inventory, topology, sharing, device choice, labels, CDI (R2.2, R3, R6, R9).

Owns the frozen inventory model of a GPU node (GPUs, MIG devices, NVLink/PCIe links, NUMA, health) as
read by ``kubegpu.node`` or from a recorded reading, the link-weight topology model, the NVIDIA device
plugin's sharing/MIG configuration and the resources it advertises, the pure topology-aware device
selection that kubelet's ``GetPreferredAllocation`` and the scheduler both call, the device plugin's
Allocate response and the container's CUDA view (``container_view``), kubelet's Topology Manager
admission (``numa``), the MIG profile catalog with placements and mig-parted configs (``mig``), GFD-style
node labels and CDI specs computed from an inventory.

Must not: import ``grpc``, ``pynvml``, ``kubernetes``, ``click`` or ``rich``; read any file it was not
handed; keep mutable state. Every function here is a function of its arguments.

Layer (``.importlinter``, checked by ``lint-imports`` in CI): core, above ``model``; imports only ``model``
and ``errors``, never ``admission`` (its independent sibling), anything above, or ``kubegpu.kube``,
``kubernetes``, ``grpc``, ``prometheus_client`` or ``pynvml``. ``time_slicing`` is a node once the device plugin
time-slices it (shared by ``plan`` and ``sim``). ``dcgm_fields`` and ``gpu_series`` hold the
exporter's series names, so the core can query them without loading the exporter.
"""

from kubegpu.devices.allocator import distributed_allocation, preferred_allocation
from kubegpu.devices.cdi import cdi_spec
from kubegpu.devices.container_view import (
    AllocateError,
    ContainerAllocation,
    MpsDefaults,
    VisibleDevice,
    allocate_response,
)
from kubegpu.devices.health import HealthEvent, apply_health_event, xid_is_critical
from kubegpu.devices.inventory import (
    GiProfile,
    GpuDevice,
    Health,
    MigDevice,
    NodeInventory,
    NvLink,
    NvLinkRemote,
    PeerLevel,
    Process,
    inventory_to_reading,
    load_reading,
    parse_reading,
)
from kubegpu.devices.labels import gfd_labels
from kubegpu.devices.mig import (
    CATALOGS,
    MigCatalog,
    MigLayoutError,
    MigProfile,
    Placement,
    catalog_for,
    validate_layout,
)
from kubegpu.devices.mig_parted import MigPartedConfig, load_mig_parted_config, parse_mig_parted_config
from kubegpu.devices.numa import CpuRequest, Hint, NumaDecision, admit_container
from kubegpu.devices.plugin_config import load_plugin_config, parse_plugin_config
from kubegpu.devices.sharing import (
    AdvertisedDevice,
    DeviceIdStrategy,
    DeviceListStrategy,
    MigStrategy,
    PluginConfig,
    ReplicatedResource,
    ResourcePlan,
    SharingStrategy,
    annotated_id,
    plan_resources,
    strip_annotation,
)
from kubegpu.devices.topology import Link, P2PLevel, Topology, topology_from_inventory

__all__ = [
    "CATALOGS",
    "AdvertisedDevice",
    "AllocateError",
    "ContainerAllocation",
    "CpuRequest",
    "DeviceIdStrategy",
    "DeviceListStrategy",
    "GiProfile",
    "GpuDevice",
    "Health",
    "HealthEvent",
    "Hint",
    "Link",
    "MigCatalog",
    "MigDevice",
    "MigLayoutError",
    "MigPartedConfig",
    "MigProfile",
    "MigStrategy",
    "MpsDefaults",
    "NodeInventory",
    "NumaDecision",
    "NvLink",
    "NvLinkRemote",
    "P2PLevel",
    "PeerLevel",
    "Placement",
    "PluginConfig",
    "Process",
    "ReplicatedResource",
    "ResourcePlan",
    "SharingStrategy",
    "Topology",
    "VisibleDevice",
    "admit_container",
    "allocate_response",
    "annotated_id",
    "apply_health_event",
    "catalog_for",
    "cdi_spec",
    "distributed_allocation",
    "gfd_labels",
    "inventory_to_reading",
    "load_mig_parted_config",
    "load_plugin_config",
    "load_reading",
    "parse_mig_parted_config",
    "parse_plugin_config",
    "parse_reading",
    "plan_resources",
    "preferred_allocation",
    "strip_annotation",
    "topology_from_inventory",
    "validate_layout",
    "xid_is_critical",
]
