"""Device-level truth of a node: inventory, topology, sharing, device choice, labels, CDI (R2.2, R3, R6, R9).

Owns the frozen inventory model of a GPU node (GPUs, MIG devices, NVLink/PCIe links, NUMA, health) as
read by ``kubegpu.node`` or from a recorded reading, the link-weight topology model, the NVIDIA device
plugin's sharing/MIG configuration and the resources it advertises, the pure topology-aware device
selection that kubelet's ``GetPreferredAllocation`` and the scheduler both call, GFD-style node labels
and CDI specs computed from an inventory.

Must not: import ``grpc``, ``pynvml``, ``kubernetes``, ``click`` or ``rich``; read any file it was not
handed; keep mutable state. Every function here is a function of its arguments.
"""

from kubegpu.devices.allocator import distributed_allocation, preferred_allocation
from kubegpu.devices.cdi import cdi_device_name, cdi_spec
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
from kubegpu.devices.sharing import (
    AdvertisedDevice,
    DeviceIdStrategy,
    DeviceListStrategy,
    MigStrategy,
    PluginConfig,
    ReplicatedResource,
    ResourcePlan,
    annotated_id,
    load_plugin_config,
    parse_plugin_config,
    plan_resources,
    strip_annotation,
)
from kubegpu.devices.topology import Link, P2PLevel, Topology, topology_from_inventory

__all__ = [
    "AdvertisedDevice",
    "DeviceIdStrategy",
    "DeviceListStrategy",
    "GiProfile",
    "GpuDevice",
    "Health",
    "HealthEvent",
    "Link",
    "MigDevice",
    "MigStrategy",
    "NodeInventory",
    "NvLink",
    "NvLinkRemote",
    "P2PLevel",
    "PeerLevel",
    "PluginConfig",
    "Process",
    "ReplicatedResource",
    "ResourcePlan",
    "Topology",
    "annotated_id",
    "apply_health_event",
    "cdi_device_name",
    "cdi_spec",
    "distributed_allocation",
    "gfd_labels",
    "inventory_to_reading",
    "load_plugin_config",
    "load_reading",
    "parse_plugin_config",
    "parse_reading",
    "plan_resources",
    "preferred_allocation",
    "strip_annotation",
    "topology_from_inventory",
    "xid_is_critical",
]
