"""``nvidia-smi -q -x`` output as a device inventory (R2.2): the reading every GPU host can produce.

Read from the XML: driver and CUDA driver version, and per GPU (in the order nvidia-smi lists them, which
is the NVML index order) the PCI bus id, product name and architecture, UUID, minor number, framebuffer
total/used, MIG mode (current and pending) and compute processes. What the XML does not carry stays
unknown rather than invented: NUMA node, NVLink/P2P topology, CUDA compute capability, and MIG devices'
profiles and UUIDs (nvidia-smi's XML lists MIG devices without either). For those, use the NVML reading
(``kubegpu node discover -o json``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from kubegpu.devices.inventory import GpuDevice, GpuUuid, NodeInventory, Process
from kubegpu.errors import InputError

MIB = 1024 * 1024
# nvmlDeviceArchitecture_t values, as the NVML reading records them (nvml.h: NVML_DEVICE_ARCH_BLACKWELL 10,
# NVML_DEVICE_ARCH_RUBIN 13; 11 and 12 are unnamed in the header)
ARCHITECTURES = {
    "Kepler": 2, "Maxwell": 3, "Pascal": 4, "Volta": 5, "Turing": 6, "Ampere": 7, "Ada Lovelace": 8,
    "Hopper": 9, "Blackwell": 10, "Rubin": 13,
}  # fmt: skip


def _text(node: ET.Element, path: str, source: str, obj: str, *, required: bool = True) -> str:
    found = node.find(path)
    value = (found.text or "").strip() if found is not None else ""
    if required and not value:
        raise InputError("required element is missing", source=source, obj=obj, field=path)
    return value


def _mib(text: str, source: str, obj: str, field: str) -> int:
    number, _, unit = text.partition(" ")
    if unit != "MiB" or not (number.isascii() and number.isdigit()):  # ASCII digits: isdigit() takes "²"
        raise InputError(f"expected '<n> MiB', got {text[:60]!r}", source=source, obj=obj, field=field)
    if len(number) > 10 or int(number) > 2**33:  # 8 PiB: far above any GPU, and inside int64 bytes
        raise InputError(
            f"{number[:40]} MiB is more than kubegpu models (2**33 MiB)", source=source, obj=obj, field=field
        )
    return int(number) * MIB


def parse_smi_xml(text: str, *, source: str = "") -> NodeInventory:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise InputError(f"not XML: {exc}", source=source) from None
    if root.tag != "nvidia_smi_log":
        raise InputError(f"expected <nvidia_smi_log>, got <{root.tag}>", source=source)
    cuda = _text(root, "cuda_version", source, "nvidia_smi_log")
    major, _, minor = cuda.partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise InputError(f"expected a version like 13.0, got {cuda!r}", source=source, field="cuda_version")
    devices = []
    for index, gpu in enumerate(root.findall("gpu")):
        obj = f"gpu {gpu.get('id', index)}"
        mig_current = _text(gpu, "mig_mode/current_mig", source, obj, required=False)
        mig_pending = _text(gpu, "mig_mode/pending_mig", source, obj, required=False)
        minor_text = _text(gpu, "minor_number", source, obj, required=False)
        processes = []
        for proc in gpu.findall("processes/process_info"):
            used = _text(proc, "used_memory", source, obj, required=False)
            processes.append(Process(
                pid=int(_text(proc, "pid", source, obj)),
                used_memory=_mib(used, source, obj, "processes/process_info/used_memory") if used.endswith("MiB") else None,
            ))  # fmt: skip
        devices.append(GpuDevice(
            index=index,
            uuid=GpuUuid(_text(gpu, "uuid", source, obj)),
            name=_text(gpu, "product_name", source, obj),
            memory_total=_mib(_text(gpu, "fb_memory_usage/total", source, obj), source, obj, "fb_memory_usage/total"),
            memory_used=_mib(_text(gpu, "fb_memory_usage/used", source, obj), source, obj, "fb_memory_usage/used"),
            pci_bus_id=_text(gpu, "pci/pci_bus_id", source, obj),
            arch=ARCHITECTURES.get(_text(gpu, "product_architecture", source, obj, required=False), 0),
            cuda_cc=(0, 0),  # not in the XML
            mig_capable=mig_current not in ("", "N/A"),
            mig_enabled=mig_current == "Enabled",
            mig_pending=mig_pending == "Enabled",
            numa_node=None,  # not in the XML
            minor=int(minor_text) if minor_text.isdigit() else None,
            processes=tuple(processes),
        ))  # fmt: skip
    return NodeInventory(
        driver=_text(root, "driver_version", source, "nvidia_smi_log"),
        nvml="",
        cuda_driver=int(major) * 1000 + int(minor) * 10,
        devices=tuple(devices),
        source=source,
    )
