"""CDI specification for a node's GPUs (R1, R6.1, R12): what a CDI-aware runtime injects per device name.

The spec follows the Container Device Interface format as NVIDIA Container Toolkit writes it for
``kind: nvidia.com/gpu``: one device per GPU named by its index and one named by its UUID (so both
``nvidia.com/gpu=0`` and ``nvidia.com/gpu=GPU-…`` resolve), plus ``all``; each device's edits add its
``/dev/nvidia<minor>`` node, and the spec-wide edits add the control nodes every CUDA process needs
(``/dev/nvidiactl``, ``/dev/nvidia-uvm``, ``/dev/nvidia-uvm-tools``) and ``NVIDIA_VISIBLE_DEVICES=void``
so that the legacy hook does not inject devices a second time.

A reading without ``minor`` (older readings) uses the NVML index as the minor number
(``GpuDevice.device_node``); a reading taken by ``kubegpu node discover`` records the real minor.

MIG devices follow the GPUs, as ``nvidia-ctk cdi generate`` lists them (``pkg/nvcdi``: GPU specs, then
MIG specs): named ``<gpu index>:<mig index>`` (the toolkit's default index naming) and by their
``MIG-…`` UUID, each with its parent's ``/dev/nvidia<minor>`` and its GPU- and compute-instance
``access`` nodes under ``/dev/nvidia-caps`` (``kubegpu.devices.nvcaps``); ``all`` holds every node once.
They need the reading's ``mig_minors``: a reading that did not record the file gets no MIG entries.

Not generated: driver library and binary mounts and the ``update-ldcache``/``create-symlinks`` hooks
(they need a scan of the host's driver files, which a reading does not hold).
"""

from __future__ import annotations

from kubegpu.devices.inventory import NodeInventory
from kubegpu.devices.nvcaps import mig_device_caps, parse_mig_minors

CDI_VERSION = "0.5.0"
# Where CDI-aware runtimes read specs (container-device-interface pkg/cdi: DefaultStaticDir, DefaultDynamicDir);
# DRA drivers write their per-claim ("transient") specs to the second.
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
CDI_KIND = "nvidia.com/gpu"
CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")


def cdi_spec(inv: NodeInventory, *, dev_root: str = "/dev") -> dict[str, object]:
    """The CDI spec document (a dict ready for JSON or YAML) for every GPU of ``inv``."""
    root = dev_root.rstrip("/")
    devices: list[dict[str, object]] = []
    all_nodes: list[dict[str, str]] = []

    def on_root(path: str) -> dict[str, str]:
        return {"path": path.replace("/dev", root, 1)}

    def add(names: tuple[str, ...], paths: tuple[str, ...]) -> None:
        nodes = [on_root(p) for p in paths]
        all_nodes.extend(n for n in nodes if n not in all_nodes)
        for name in names:
            devices.append({"name": name, "containerEdits": {"deviceNodes": [dict(n) for n in nodes]}})

    for g in inv.devices:
        add((str(g.index), g.uuid), (g.device_node,))
    if inv.mig_minors is not None:
        minors = parse_mig_minors(inv.mig_minors)
        for g in inv.devices:
            for m in g.mig_devices if g.mig_enabled else ():
                caps = mig_device_caps(minors, g.device_minor, m.gi_id, m.ci_id, m.uuid)
                add((f"{g.index}:{m.index}", m.uuid), (g.device_node, *caps))
    if inv.devices:
        devices.append({"name": "all", "containerEdits": {"deviceNodes": all_nodes}})
    control = [{"path": p.replace("/dev", root, 1)} for p in CONTROL_NODES]
    return {
        "cdiVersion": CDI_VERSION,
        "kind": CDI_KIND,
        "devices": devices,
        "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=void"], "deviceNodes": control},
    }
