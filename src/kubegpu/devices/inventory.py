"""The inventory of one GPU node and its reading format (R2.2, R3.1, R6.3, R9.3).

An inventory is what NVML says about a node at one moment: driver and CUDA versions, and per GPU its
index, UUID, memory, architecture, PCI bus id, NUMA node, NVLinks, PCIe distance to every peer, MIG mode,
MIG devices, GPU-instance profiles, processes and health. ``kubegpu.node`` produces the same *reading*
(a JSON document) from NVML or from a file, and ``parse_reading`` turns it into frozen dataclasses.

The reading format is the one of ``shared/fixtures/nodes/h200-1gpu/nvml.json``. kubegpu adds optional
keys that a single-GPU VM cannot show, all absent from that file and all read as "nothing recorded":
``minor`` (device minor number, ``/dev/nvidia<minor>``), ``nvlink`` items ``{"link", "remote_pci_bus_id",
"remote_type"}`` (active links only; ``remote_type`` is NVML's ``nvmlIntNvLinkDeviceType_t``: 0 GPU,
1 IBM NPU, 2 NVSwitch), ``p2p`` items ``{"peer": index, "level": nvmlGpuTopologyLevel_t}``,
``mig_devices``, ``health``/``health_reason``, ``proc_util`` (per-process utilisation samples, kept as
telemetry: ``kubegpu.node.discovery.process_utilization`` describes it), a top-level ``generated`` note
that marks a synthetic reading, and a top-level ``mig_minors``: the lines of
``/proc/driver/nvidia-caps/mig-minors`` as read (``[]`` where the file does not exist; see
``kubegpu.devices.nvcaps``). Two more come from files, for GFD's ``gpu.mode`` and ``gpu.machine`` labels
(``kubegpu.devices.labels``): per device ``pci_class``, the text of sysfs
``/sys/bus/pci/devices/<bus id>/class`` (``"0x030200"``; the bus id as sysfs names it, lower case with a
4-digit domain: ``0000:1a:00.0``), and top-level ``machine_type``, the text of
``/sys/class/dmi/id/product_name`` (``"Standard PC (Q35 + ICH9, 2009)"``), each without its surrounding
whitespace (GFD trims both); a reading without them (every one made before they were recorded) leaves both
labels ``unknown``. Readings store what NVML returned; a failed query (or file read) is the string
``"ERR:<error>"``.

Must not: call NVML or open files other than the one ``load_reading`` is handed.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NewType, TypeVar

from kubegpu.errors import InputError, json_document, read_text

GpuUuid = NewType("GpuUuid", str)
_E = TypeVar("_E", bound=enum.Enum)

MIB = 1024 * 1024
# What a reading stores for a query NVML answered NVML_ERROR_NOT_SUPPORTED (pynvml's error class and text).
NOT_SUPPORTED = "ERR:NVMLError_NotSupported:Not Supported"

# Keys of a device entry that kubegpu does not interpret but keeps, so that ``-o json`` writes back
# what NVML said (telemetry read at the same moment as the inventory).
TELEMETRY_KEYS = (
    "serial",
    "brand",
    "temp",
    "power_mw",
    "power_limit_mw",
    "util",
    "compute_mode",
    "persistence",
    "ecc",
    "clocks",
    "proc_util",
)


class Health(enum.StrEnum):
    """Device health as kubelet's device plugin API spells it (v1beta1 constants.go)."""

    HEALTHY = "Healthy"
    UNHEALTHY = "Unhealthy"


class NvLinkRemote(enum.IntEnum):
    """What is at the far end of an NVLink (NVML ``nvmlIntNvLinkDeviceType_t``)."""

    GPU = 0
    IBMNPU = 1
    SWITCH = 2
    UNKNOWN = 0xFF


class PeerLevel(enum.IntEnum):
    """PCIe distance between two GPUs (NVML ``nvmlGpuTopologyLevel_t``; ``nvidia-smi topo -m`` names)."""

    INTERNAL = 0  # same board (multi-GPU card)
    SINGLE = 10  # PIX: at most one PCIe switch
    MULTIPLE = 20  # PXB: several PCIe switches, no host bridge
    HOSTBRIDGE = 30  # PHB: through a PCIe host bridge
    NODE = 40  # NODE: host bridges within one NUMA node
    SYSTEM = 50  # SYS: across the inter-socket link


@dataclass(frozen=True, slots=True)
class NvLink:
    """One active NVLink of a GPU and what its far end is."""

    link: int
    remote_pci_bus_id: str
    remote_type: NvLinkRemote


@dataclass(frozen=True, slots=True)
class GiProfile:
    """A MIG GPU-instance profile the GPU offers (``nvmlDeviceGetGpuInstanceProfileInfo``)."""

    profile: int
    id: int
    slices: int
    instances: int
    mem_mib: int
    copy_engines: int
    decoders: int
    name: str


@dataclass(frozen=True, slots=True)
class MigDevice:
    """A MIG device (GPU instance + compute instance) on a MIG-enabled GPU."""

    index: int
    uuid: str
    profile: str  # "1g.18gb": the part after "nvidia.com/mig-" in the resource name
    gi_id: int
    ci_id: int
    memory_total: int  # bytes
    health: Health = Health.HEALTHY
    # nvmlDeviceGetAttributes as GFD names them (``memory``, ``multiprocessors``, ``slices.gi``, ``slices.ci``,
    # ``engines.copy|decoder|encoder|jpeg|ofa``); empty in readings made before they were recorded.
    attributes: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Process:
    """A compute process running on a GPU."""

    pid: int
    used_memory: int | None  # bytes; None where NVML could not tell


@dataclass(frozen=True, slots=True)
class GpuDevice:
    """One physical GPU as NVML reports it."""

    index: int
    uuid: GpuUuid
    name: str
    memory_total: int  # bytes
    memory_used: int
    pci_bus_id: str
    arch: int  # nvmlDeviceArchitecture_t (9 = Hopper)
    cuda_cc: tuple[int, int]
    mig_capable: bool
    mig_enabled: bool  # current MIG mode
    mig_pending: bool  # pending MIG mode (takes effect after a GPU reset)
    numa_node: int | None
    minor: int | None = None
    nvlinks: tuple[NvLink, ...] = ()
    peers: tuple[tuple[int, PeerLevel], ...] = ()  # (peer index, PCIe distance)
    gi_profiles: tuple[GiProfile, ...] = ()
    mig_devices: tuple[MigDevice, ...] = ()
    processes: tuple[Process, ...] = ()
    health: Health = Health.HEALTHY
    health_reason: str = ""
    # sysfs class of the GPU's PCI function as read ("0x030200"); "ERR:…" when unreadable; None: not recorded
    pci_class: str | None = None
    telemetry: Mapping[str, object] = field(default_factory=dict, compare=False)

    @property
    def memory_mib(self) -> int:
        """Total memory in MiB, as GFD's ``nvidia.com/gpu.memory`` label counts it."""
        return self.memory_total // MIB

    @property
    def device_minor(self) -> int:
        """The minor number of ``/dev/nvidia<minor>``.

        A reading without ``minor`` uses the NVML index: the driver numbers ``/dev/nvidiaN`` in PCI order,
        as NVML numbers indexes (the shared H200 reading shows index 0 on ``/dev/nvidia0``).
        """
        return self.minor if self.minor is not None else self.index

    @property
    def device_node(self) -> str:
        """The GPU's character device, ``/dev/nvidia<minor>``."""
        return f"/dev/nvidia{self.device_minor}"


@dataclass(frozen=True, slots=True)
class NodeInventory:
    """Everything NVML says about one node's GPUs at one moment."""

    driver: str
    nvml: str
    cuda_driver: int  # nvmlSystemGetCudaDriverVersion: 1000 * major + 10 * minor
    devices: tuple[GpuDevice, ...]
    source: str = ""
    generated: str = ""  # non-empty for synthetic readings: where their topology comes from
    mig_minors: tuple[str, ...] | None = None  # lines of mig-minors; None: not recorded
    # the DMI product name (GFD's machine type file) as read; "ERR:…" when unreadable; None: not recorded
    machine_type: str | None = None

    def device(self, uuid: str) -> GpuDevice:
        """The GPU with this UUID; KeyError if the node has none."""
        for d in self.devices:
            if d.uuid == uuid:
                return d
        raise KeyError(uuid)


MAX_READING_INT = 2**63 - 1
MAX_GPU_INDEX = 1023


def load_reading(path: Path) -> NodeInventory:
    """Read a reading file (the fixture format) into an inventory; bad input raises ``InputError``."""
    raw = json_document(read_text(path, "reading"), str(path))
    return parse_reading(raw, source=str(path))


def parse_reading(raw: object, *, source: str = "") -> NodeInventory:
    """Turn a decoded reading into an inventory, naming file, device and field on bad input."""
    top = _Fields(raw, source, "", "")
    devices_raw = top.array("devices")
    devices = tuple(_parse_device(item, source, i) for i, item in enumerate(devices_raw))
    indexes = [d.index for d in devices]
    if len(set(indexes)) != len(indexes):
        raise InputError("device indexes repeat", source=source, field="devices")
    uuids = [d.uuid for d in devices]
    if len(set(uuids)) != len(uuids):
        raise InputError("device UUIDs repeat", source=source, field="devices")
    return NodeInventory(
        driver=top.text("driver"),
        nvml=top.text("nvml"),
        cuda_driver=top.integer("cuda_driver"),
        devices=tuple(sorted(devices, key=lambda d: d.index)),
        source=source,
        generated=top.text("generated", default=""),
        mig_minors=_mig_minors(top),
        machine_type=_optional_text(top, "machine_type"),
    )


def _optional_text(f: _Fields, key: str) -> str | None:
    """A string key that older readings lack (None then)."""
    return None if f.get(key) is None else f.text(key)


def _mig_minors(top: _Fields) -> tuple[str, ...] | None:
    raw = top.get("mig_minors")
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(line, str) for line in raw):
        raise top.error("mig_minors", "expected a list of the lines of /proc/driver/nvidia-caps/mig-minors")
    return tuple(raw)


def inventory_to_reading(inv: NodeInventory) -> dict[str, object]:
    """Write an inventory back in the reading format (inverse of ``parse_reading``)."""
    out: dict[str, object] = {"driver": inv.driver, "nvml": inv.nvml, "cuda_driver": inv.cuda_driver}
    if inv.generated:
        out["generated"] = inv.generated
    out["devices"] = [_device_to_reading(d) for d in inv.devices]
    if inv.mig_minors is not None:
        out["mig_minors"] = list(inv.mig_minors)
    if inv.machine_type is not None:
        out["machine_type"] = inv.machine_type
    return out


def _device_to_reading(d: GpuDevice) -> dict[str, object]:
    out: dict[str, object] = {"index": d.index, "name": d.name, "uuid": d.uuid}
    out.update({k: v for k, v in d.telemetry.items() if k == "serial"})
    out["memory"] = {"total": d.memory_total, "used": d.memory_used, "free": d.memory_total - d.memory_used}
    out["pci_bus_id"] = d.pci_bus_id
    if d.pci_class is not None:
        out["pci_class"] = d.pci_class
    out["arch"] = d.arch
    out["cuda_cc"] = list(d.cuda_cc)
    out["mig_mode"] = [int(d.mig_enabled), int(d.mig_pending)] if d.mig_capable else NOT_SUPPORTED
    out["numa"] = d.numa_node if d.numa_node is not None else NOT_SUPPORTED
    if d.minor is not None:
        out["minor"] = d.minor
    out.update({k: v for k, v in d.telemetry.items() if k != "serial"})
    out["nvlink"] = [
        {"link": n.link, "remote_pci_bus_id": n.remote_pci_bus_id, "remote_type": int(n.remote_type)}
        for n in d.nvlinks
    ]
    if d.peers:
        out["p2p"] = [{"peer": peer, "level": int(level)} for peer, level in d.peers]
    out["gi_profiles"] = [
        {
            "profile": p.profile,
            "id": p.id,
            "slices": p.slices,
            "instances": p.instances,
            "memMiB": p.mem_mib,
            "copyEngines": p.copy_engines,
            "decoders": p.decoders,
            "name": p.name,
        }
        for p in d.gi_profiles
    ]
    if d.mig_devices:
        out["mig_devices"] = [
            {
                "index": m.index,
                "uuid": m.uuid,
                "profile": m.profile,
                "gi_id": m.gi_id,
                "ci_id": m.ci_id,
                "memory_total": m.memory_total,
                "health": str(m.health),
                **({"attributes": dict(m.attributes)} if m.attributes else {}),
            }
            for m in d.mig_devices
        ]
    out["procs"] = [{"pid": p.pid, "used_memory": p.used_memory} for p in d.processes]
    if d.health is not Health.HEALTHY:
        out["health"] = str(d.health)
        out["health_reason"] = d.health_reason
    return out


def recorded_error(exc: BaseException) -> str:
    """How a reading records a failed query or file read: ``"ERR:<exception class>:<message>"``."""
    return f"ERR:{type(exc).__name__}:{exc}"


def is_recorded_error(value: object) -> bool:
    """Whether a reading's value is a failed query or file read (``"ERR:<error>"``) rather than an answer."""
    return isinstance(value, str) and value.startswith("ERR:")


def _parse_device(raw: object, source: str, position: int) -> GpuDevice:
    f = _Fields(raw, source, f"device {position}", "")
    index = f.integer("index")
    if index > MAX_GPU_INDEX:  # the index names /dev/nvidia<index> and is looped over
        raise f.error("index", f"{index} is more than kubegpu models (GPU indexes up to {MAX_GPU_INDEX})")
    f = _Fields(raw, source, f"device {index}", "")
    mig_mode = f.get("mig_mode")
    if is_recorded_error(mig_mode):
        mig_capable, mig_enabled, mig_pending = False, False, False
    else:
        mode = f.int_list("mig_mode", length=2)
        mig_capable, mig_enabled, mig_pending = True, mode[0] == 1, mode[1] == 1
    numa_raw = f.get("numa")
    # NVML answers NotSupported on VMs and single-socket boards, and sysfs says -1: "no NUMA affinity".
    numa = None if is_recorded_error(numa_raw) or numa_raw is None else f.integer("numa")
    if numa is not None and numa < 0:
        numa = None
    memory = f.sub("memory")
    cc = f.int_list("cuda_cc", length=2)
    health_raw = f.text("health", default=str(Health.HEALTHY))
    return GpuDevice(
        index=index,
        uuid=GpuUuid(f.text("uuid")),
        name=f.text("name"),
        memory_total=memory.integer("total"),
        memory_used=memory.integer("used"),
        pci_bus_id=f.text("pci_bus_id"),
        arch=f.integer("arch"),
        cuda_cc=(cc[0], cc[1]),
        mig_capable=mig_capable,
        mig_enabled=mig_enabled,
        mig_pending=mig_pending,
        numa_node=numa,
        minor=f.integer("minor") if f.get("minor") is not None else None,
        nvlinks=tuple(_parse_nvlink(item) for item in f.items("nvlink")),
        peers=tuple(_parse_peer(item) for item in f.items("p2p")),
        gi_profiles=tuple(
            _parse_gi_profile(item) for item in f.items("gi_profiles") if item.get("err") is None
        ),
        mig_devices=tuple(_parse_mig(item) for item in f.items("mig_devices")),
        processes=tuple(_parse_process(item) for item in f.items("procs")),
        health=_enum(Health, health_raw, f, "health"),
        health_reason=f.text("health_reason", default=""),
        pci_class=_optional_text(f, "pci_class"),
        telemetry={k: f.get(k) for k in TELEMETRY_KEYS if f.get(k) is not None},
    )


def _parse_nvlink(f: _Fields) -> NvLink:
    return NvLink(
        link=f.integer("link"),
        remote_pci_bus_id=f.text("remote_pci_bus_id"),
        remote_type=_enum(NvLinkRemote, f.integer("remote_type"), f, "remote_type"),
    )


def _parse_peer(f: _Fields) -> tuple[int, PeerLevel]:
    return f.integer("peer"), _enum(PeerLevel, f.integer("level"), f, "level")


def _parse_gi_profile(f: _Fields) -> GiProfile:
    return GiProfile(
        profile=f.integer("profile"),
        id=f.integer("id"),
        slices=f.integer("slices"),
        instances=f.integer("instances"),
        mem_mib=f.integer("memMiB"),
        copy_engines=f.integer("copyEngines"),
        decoders=f.integer("decoders"),
        name=f.text("name"),
    )


def _parse_mig(f: _Fields) -> MigDevice:
    return MigDevice(
        index=f.integer("index"),
        uuid=f.text("uuid"),
        profile=f.text("profile"),
        gi_id=f.integer("gi_id"),
        ci_id=f.integer("ci_id"),
        memory_total=f.integer("memory_total"),
        health=_enum(Health, f.text("health", default=str(Health.HEALTHY)), f, "health"),
        attributes=_mig_attributes(f),
    )


def _mig_attributes(f: _Fields) -> tuple[tuple[str, int], ...]:
    raw = f.get("attributes")
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in raw.items()
    ):
        raise f.error("attributes", "expected a mapping of attribute name to integer")
    return tuple(sorted(raw.items()))


def _parse_process(f: _Fields) -> Process:
    used = f.get("used_memory")
    return Process(pid=f.integer("pid"), used_memory=None if used is None else f.integer("used_memory"))


def _enum(kind: type[_E], value: object, f: _Fields, key: str) -> _E:
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(str(m.value) for m in kind)
        raise f.error(key, f"{value!r} is not one of {allowed}") from None


class _Fields:
    """Typed access to one JSON object of a reading; every failure names file, object and field."""

    def __init__(self, raw: object, source: str, obj: str, prefix: str) -> None:
        if not isinstance(raw, dict):
            raise InputError(
                f"expected an object, got {type(raw).__name__}", source=source, obj=obj, field=prefix
            )
        self._raw: dict[str, object] = raw
        self._source = source
        self._obj = obj
        self._prefix = prefix

    def error(self, key: str, problem: str) -> InputError:
        return InputError(problem, source=self._source, obj=self._obj, field=self._prefix + key)

    def get(self, key: str) -> object:
        return self._raw.get(key)

    def _required(self, key: str) -> object:
        if key not in self._raw:
            raise self.error(key, "missing")
        return self._raw[key]

    def text(self, key: str, *, default: str | None = None) -> str:
        if default is not None and key not in self._raw:
            return default
        value = self._required(key)
        if not isinstance(value, str):
            raise self.error(key, f"expected a string, got {value!r}")
        return value

    def integer(self, key: str) -> int:
        value = self._required(key)
        # bool is an int subclass in Python; a reading never stores a count as true/false.
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.error(key, f"expected an integer, got {value!r}")
        # NVML's counters and sizes are unsigned 64-bit; kubegpu's columns are int64
        if not 0 <= value <= MAX_READING_INT:
            raise self.error(key, f"{value} is out of range (0 to {MAX_READING_INT})")
        return value

    def int_list(self, key: str, *, length: int) -> list[int]:
        value = self._required(key)
        if (
            not isinstance(value, list)
            or len(value) != length
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        ):
            raise self.error(key, f"expected a list of {length} integers, got {value!r}")
        return list(value)

    def array(self, key: str) -> Sequence[object]:
        value = self._required(key)
        if not isinstance(value, list):
            raise self.error(key, f"expected a list, got {type(value).__name__}")
        return value

    def sub(self, key: str) -> _Fields:
        return _Fields(self._required(key), self._source, self._obj, self._prefix + key + ".")

    def items(self, key: str) -> list[_Fields]:
        """The objects of an optional list (absent means empty)."""
        if key not in self._raw:
            return []
        return [
            _Fields(item, self._source, self._obj, f"{self._prefix}{key}[{i}].")
            for i, item in enumerate(self.array(key))
        ]
