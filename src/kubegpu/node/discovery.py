"""Where a node's inventory comes from: NVML on the host, or a recorded reading (R2.2, R3.1).

Both backends produce the same *reading* (the JSON format described in ``kubegpu.devices.inventory``)
and parse it with the same function, so a recorded node and a live one cannot drift apart: ``node
discover -o json`` on a GPU host writes a file that ``--backend recorded`` reads back unchanged.

``pynvml`` (nvidia-ml-py) is imported only inside ``NvmlBackend.reading()``: CI machines have no driver,
and importing ``kubegpu.node`` must not need ``libnvidia-ml.so``. Every NVML query that fails is
recorded as ``"ERR:<error class>:<message>"`` instead of aborting the reading, because a node with one
unsupported query (NUMA on a VM, NVLink on PCIe cards) is still a node to inventory.

Two files are read beside NVML, where GFD reads them for its ``gpu.mode`` and ``gpu.machine`` labels: each
GPU's sysfs ``class`` and the DMI product name. A file that cannot be read is recorded the same way,
``"ERR:<exception class>:<message>"``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from kubegpu.devices import NodeInventory, load_reading, parse_reading
from kubegpu.devices.inventory import recorded_error
from kubegpu.devices.nvcaps import read_mig_minors

# Profile indices NVML defines for GPU-instance profiles, NVML_GPU_INSTANCE_PROFILE_1_SLICE (0) up to
# NVML_GPU_INSTANCE_PROFILE_COUNT - 1 (nvml.h of CUDA 13.2.1: COUNT 0x12, so 2_SLICE_ALL_ME 0x10, which is
# the RTX PRO 6000's 2g.48gb+me.all, and 3_SLICE_GFX 0x11 are read too). A driver that predates an index
# answers it with an error, which the reading records as such.
GI_PROFILE_IDS = range(0x12)
# How far back a reading asks nvmlDeviceGetProcessUtilization for per-process samples: several of the
# driver's sample periods (1/6 s to 1 s), so that a process busy right now always has one.
PROCESS_UTIL_WINDOW_US = 5_000_000
# go-nvlib nvpci PCIDevicesRoot: GFD reads a GPU's class under it (internal/resource/nvml-device.go GetPCIClass)
PCI_DEVICES_ROOT = Path("/sys/bus/pci/devices")
# gpu-feature-discovery's --machine-type-file default (k8s-device-plugin cmd/gpu-feature-discovery/main.go)
MACHINE_TYPE_FILE = Path("/sys/class/dmi/id/product_name")


class DiscoveryBackend(Protocol):
    """A source of node inventories. ``inventory()`` reads the node anew on every call."""

    def inventory(self) -> NodeInventory: ...


class RecordedBackend:
    """A node read from a recorded reading file (fixture format)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def inventory(self) -> NodeInventory:
        return load_reading(self.path)


class NvmlBackend:
    """The node this process runs on, read through NVML (read-only queries only)."""

    def inventory(self) -> NodeInventory:
        return parse_reading(self.reading(), source="nvml")

    def reading(self) -> dict[str, object]:
        """One reading of every GPU; raises ``NvmlUnavailable`` when NVML cannot be loaded or initialised."""
        nvml = load_pynvml()
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            raise NvmlUnavailable(f"NVML init failed: {exc}") from exc
        try:
            count = nvml.nvmlDeviceGetCount()
            handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            devices = [_device(nvml, i, h, handles) for i, h in enumerate(handles)]
            return {
                "driver": text_of(nvml.nvmlSystemGetDriverVersion()),
                "nvml": text_of(nvml.nvmlSystemGetNVMLVersion()),
                "cuda_driver": nvml.nvmlSystemGetCudaDriverVersion(),
                "devices": devices,
                # not NVML's: the driver's /proc list of MIG capability minors (MIG devices' /dev nodes)
                "mig_minors": read_mig_minors(),
                "machine_type": read_file_text(MACHINE_TYPE_FILE),
            }
        finally:
            nvml.nvmlShutdown()


class NvmlUnavailable(RuntimeError):
    """NVML could not be loaded or initialised on this host (no driver, no GPU, no permission)."""


def load_pynvml() -> Any:
    """Import pynvml lazily; its absence is reported as ``NvmlUnavailable``, not ImportError."""
    try:
        import pynvml
    except ImportError as exc:
        raise NvmlUnavailable("nvidia-ml-py (pynvml) is not installed") from exc
    return pynvml


def _device(nvml: Any, index: int, h: Any, handles: list[Any]) -> dict[str, object]:
    def q(fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except nvml.NVMLError as exc:
            return recorded_error(exc)

    mem = nvml.nvmlDeviceGetMemoryInfo(h)
    util = q(nvml.nvmlDeviceGetUtilizationRates, h)
    mig_mode = q(nvml.nvmlDeviceGetMigMode, h)
    max_mig = q(nvml.nvmlDeviceGetMaxMigDeviceCount, h)
    bus_id = text_of(nvml.nvmlDeviceGetPciInfo(h).busId)
    out: dict[str, object] = {
        "index": index,
        "name": text_of(nvml.nvmlDeviceGetName(h)),
        "uuid": text_of(nvml.nvmlDeviceGetUUID(h)),
        "serial": text_of(q(nvml.nvmlDeviceGetSerial, h)),
        "memory": {"total": mem.total, "used": mem.used, "free": mem.free},
        "pci_bus_id": bus_id,
        "pci_class": read_file_text(PCI_DEVICES_ROOT / sysfs_bus_id(bus_id) / "class"),
        "arch": q(nvml.nvmlDeviceGetArchitecture, h),
        "cuda_cc": list(nvml.nvmlDeviceGetCudaComputeCapability(h)),
        "brand": q(nvml.nvmlDeviceGetBrand, h),
        "mig_mode": list(mig_mode) if isinstance(mig_mode, list | tuple) else mig_mode,
        "max_mig": max_mig,
        "numa": q(nvml.nvmlDeviceGetNumaNodeId, h),
        "minor": q(nvml.nvmlDeviceGetMinorNumber, h),
        "temp": q(nvml.nvmlDeviceGetTemperature, h, nvml.NVML_TEMPERATURE_GPU),
        "power_mw": q(nvml.nvmlDeviceGetPowerUsage, h),
        "power_limit_mw": q(nvml.nvmlDeviceGetPowerManagementLimit, h),
        "util": util if isinstance(util, str) else {"gpu": util.gpu, "memory": util.memory},
        "compute_mode": q(nvml.nvmlDeviceGetComputeMode, h),
        "persistence": q(nvml.nvmlDeviceGetPersistenceMode, h),
        "ecc": _listify(q(nvml.nvmlDeviceGetEccMode, h)),
        "clocks": {
            "sm": q(nvml.nvmlDeviceGetClockInfo, h, nvml.NVML_CLOCK_SM),
            "mem": q(nvml.nvmlDeviceGetClockInfo, h, nvml.NVML_CLOCK_MEM),
        },
        "nvlink": _nvlinks(nvml, h, q),
        "p2p": [
            {"peer": j, "level": level}
            for j, other in enumerate(handles)
            if j != index and isinstance(level := q(nvml.nvmlDeviceGetTopologyCommonAncestor, h, other), int)
        ],
        "gi_profiles": gi_profile_readings(nvml, h, q),
        "mig_devices": _mig_devices(nvml, h, mig_mode, max_mig, q),
        "procs": [
            {"pid": p.pid, "used_memory": p.usedGpuMemory}
            for p in _listify(q(nvml.nvmlDeviceGetComputeRunningProcesses, h))
            if not isinstance(p, str)
        ],
        "proc_util": process_utilization(nvml, h, int(time.time() * 1_000_000) - PROCESS_UTIL_WINDOW_US),
    }
    # A minor number we could not read is "not recorded", not an error string in an integer field.
    if not isinstance(out["minor"], int):
        del out["minor"]
    return out


def _nvlinks(nvml: Any, h: Any, q: Callable[..., Any]) -> list[dict[str, object]]:
    links: list[dict[str, object]] = []
    for link in range(nvml.NVML_NVLINK_MAX_LINKS):
        # go-gpuallocator's walk: skip links whose state is unsupported; count only enabled ones.
        if q(nvml.nvmlDeviceGetNvLinkState, h, link) != nvml.NVML_FEATURE_ENABLED:
            continue
        remote = q(nvml.nvmlDeviceGetNvLinkRemotePciInfo, h, link)
        if isinstance(remote, str):
            continue
        kind = q(nvml.nvmlDeviceGetNvLinkRemoteDeviceType, h, link)
        links.append(
            {
                "link": link,
                "remote_pci_bus_id": text_of(remote.busId),
                "remote_type": kind if isinstance(kind, int) else 0xFF,
            }
        )
    return links


def gi_profile_readings(nvml: Any, h: Any, q: Callable[..., Any]) -> list[dict[str, object]]:
    """``nvmlDeviceGetGpuInstanceProfileInfo`` for every profile index NVML defines (``GI_PROFILE_IDS``);
    ``q`` turns an NVML error into its ``"ERR:…"`` text."""
    return [_gi_profile(nvml, h, p, q) for p in GI_PROFILE_IDS]


def _gi_profile(nvml: Any, h: Any, profile: int, q: Callable[..., Any]) -> dict[str, object]:
    info = q(nvml.nvmlDeviceGetGpuInstanceProfileInfo, h, profile)
    if isinstance(info, str):
        return {"profile": profile, "err": info}
    return {
        "profile": profile,
        "id": info.id,
        "slices": info.sliceCount,
        "instances": info.instanceCount,
        "memMiB": info.memorySizeMB,
        "copyEngines": info.copyEngineCount,
        "decoders": info.decoderCount,
        "name": text_of(info.name),
    }


def _mig_devices(
    nvml: Any, h: Any, mig_mode: Any, max_mig: Any, q: Callable[..., Any]
) -> list[dict[str, object]]:
    if isinstance(mig_mode, str) or not mig_mode or mig_mode[0] != 1 or not isinstance(max_mig, int):
        return []
    out: list[dict[str, object]] = []
    for i in range(max_mig):
        m = q(nvml.nvmlDeviceGetMigDeviceHandleByIndex, h, i)
        if isinstance(m, str):
            continue  # slot i holds no MIG device
        name = text_of(nvml.nvmlDeviceGetName(m))
        out.append(
            {
                "index": i,
                "uuid": text_of(nvml.nvmlDeviceGetUUID(m)),
                # NVML names a MIG device "<GPU name> MIG <profile>"; the profile is the resource suffix.
                "profile": name.rsplit("MIG ", 1)[-1],
                "gi_id": nvml.nvmlDeviceGetGpuInstanceId(m),
                "ci_id": nvml.nvmlDeviceGetComputeInstanceId(m),
                "memory_total": nvml.nvmlDeviceGetMemoryInfo(m).total,
                **_mig_attributes(q(nvml.nvmlDeviceGetAttributes, m)),
            }
        )
    return out


# nvmlDeviceAttributes_t fields → GFD's MIG attribute label suffixes
# (k8s-device-plugin v0.20.0 internal/resource/nvml-mig-device.go GetAttributes).
_MIG_ATTRIBUTES = {
    "memory": "memorySizeMB",
    "multiprocessors": "multiprocessorCount",
    "slices.gi": "gpuInstanceSliceCount",
    "slices.ci": "computeInstanceSliceCount",
    "engines.copy": "sharedCopyEngineCount",
    "engines.decoder": "sharedDecoderCount",
    "engines.encoder": "sharedEncoderCount",
    "engines.jpeg": "sharedJpegCount",
    "engines.ofa": "sharedOfaCount",
}


def _mig_attributes(attrs: Any) -> dict[str, object]:
    if isinstance(attrs, str) or attrs is None:
        return {}  # NVML could not tell: the labels fall back to the memory total
    return {
        "attributes": {k: int(getattr(attrs, f)) for k, f in _MIG_ATTRIBUTES.items() if hasattr(attrs, f)}
    }


def process_utilization(nvml: Any, h: Any, since_us: int) -> object:
    """``nvmlDeviceGetProcessUtilization`` samples newer than ``since_us`` (CPU time, µs since the epoch).

    As recorded: ``{"since_us", "samples": [{"pid", "ts", "sm", "mem", "enc", "dec"}]}``, one sample per
    process that had non-zero utilisation in a sample period since then, or NVML's refusal as
    ``"ERR:…"`` (``NotFound`` when no process had a sample, ``NotSupported`` on cards without it).
    """
    try:
        samples = nvml.nvmlDeviceGetProcessUtilization(h, since_us)
    except nvml.NVMLError as exc:
        # pynvml raises its base class with NVML_SUCCESS when the sizing call already found nothing to return.
        if getattr(exc, "value", None) != nvml.NVML_SUCCESS:
            return recorded_error(exc)
        samples = []
    return {
        "since_us": since_us,
        "samples": [
            {
                "pid": s.pid,
                "ts": s.timeStamp,
                "sm": s.smUtil,
                "mem": s.memUtil,
                "enc": s.encUtil,
                "dec": s.decUtil,
            }
            for s in samples
        ],
    }


def sysfs_bus_id(nvml_bus_id: str) -> str:
    """The name sysfs gives a PCI function NVML calls ``nvml_bus_id`` (``00000000:1A:00.0`` → ``0000:1a:00.0``).

    go-nvlib ``GetPCIBusID``: lower case, and a domain of eight digits whose first four are zeros loses them.
    """
    bus_id = nvml_bus_id.lower()
    return bus_id[4:] if re.match(r"0{4}[0-9a-f]{4}:", bus_id) else bus_id


def read_file_text(path: Path) -> str:
    """A sysfs file's text without surrounding whitespace (GFD trims it too), or ``"ERR:…"`` when unreadable.

    Bytes that are not UTF-8 become U+FFFD, which GFD's ``sanitise`` drops as it drops Go's invalid bytes.
    """
    try:
        return path.read_bytes().decode("utf-8", "replace").strip()
    except OSError as exc:
        return recorded_error(exc)


def text_of(value: object) -> str:
    # Older nvidia-ml-py releases return bytes where newer ones return str.
    return value.decode() if isinstance(value, bytes) else str(value)


def _listify(value: Any) -> Any:
    return list(value) if isinstance(value, list | tuple) else value
