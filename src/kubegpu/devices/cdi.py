"""CDI specification for a node's GPUs (R1, R6.1, R12): what a CDI-aware runtime injects per device name.

The spec follows the Container Device Interface format as NVIDIA Container Toolkit writes it for
``kind: nvidia.com/gpu``: one device per GPU named by its index and one named by its UUID (so both
``nvidia.com/gpu=0`` and ``nvidia.com/gpu=GPU-…`` resolve), plus ``all``; each device's edits add its
``/dev/nvidia<minor>`` node, and the spec-wide edits add the control nodes every CUDA process needs
(``/dev/nvidiactl``, ``/dev/nvidia-uvm``, ``/dev/nvidia-uvm-tools``) and ``NVIDIA_VISIBLE_DEVICES=void``
so that the legacy hook does not inject devices a second time.

A reading without ``minor`` (older readings) uses the NVML index as the minor number
(``GpuDevice.device_node``); a reading taken by ``kubegpu node discover`` records the real minor.

Not generated: driver library and binary mounts and the ``update-ldcache``/``create-symlinks`` hooks
(they need a scan of the host's driver files, which a reading does not hold), and MIG devices (their
``/dev/nvidia-caps`` nodes need ``/proc/driver/nvidia-caps/mig-minors``).
"""

from __future__ import annotations

from kubegpu.devices.inventory import NodeInventory

CDI_VERSION = "0.5.0"
CDI_KIND = "nvidia.com/gpu"
CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")


def cdi_spec(inv: NodeInventory, *, dev_root: str = "/dev") -> dict[str, object]:
    """The CDI spec document (a dict ready for JSON or YAML) for every GPU of ``inv``."""
    root = dev_root.rstrip("/")
    devices: list[dict[str, object]] = []
    all_nodes: list[dict[str, str]] = []
    for g in inv.devices:
        node = {"path": g.device_node.replace("/dev", root, 1)}
        all_nodes.append(node)
        for name in (str(g.index), g.uuid):
            devices.append({"name": name, "containerEdits": {"deviceNodes": [dict(node)]}})
    if inv.devices:
        devices.append({"name": "all", "containerEdits": {"deviceNodes": all_nodes}})
    control = [{"path": p.replace("/dev", root, 1)} for p in CONTROL_NODES]
    return {
        "cdiVersion": CDI_VERSION,
        "kind": CDI_KIND,
        "devices": devices,
        "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=void"], "deviceNodes": control},
    }
