"""The NVIDIA device plugin's config file and the resources a node advertises under it (R6.1–R6.3, R7.3).

``parse_plugin_config`` reads the plugin's config file (``version: v1``; NVIDIA k8s-device-plugin
``api/config/v1``; what is accepted, refused and warned about is ``kubegpu.devices.plugin_config``):
``flags.migStrategy`` (none/single/mixed), ``flags.plugin.deviceListStrategy``
(``envvar``, ``volume-mounts``, ``cdi-annotations``, ``cdi-cri``: what ``container_view.allocate_response``
injects), ``flags.plugin.deviceIDStrategy`` (uuid/index), ``flags.plugin.cdiAnnotationPrefix``,
``flags.plugin.passDeviceSpecs``, ``flags.nvidiaDevRoot``, ``flags.mpsRoot``, ``sharing.timeSlicing`` and
``sharing.mps``
(``renameByDefault``, ``failRequestsGreaterThanOne``, ``resources[].name/replicas``).

``plan_resources`` turns an inventory and a config into the extended resources the node advertises and
the device ids behind each, as the NVIDIA plugin does:

* MIG strategy ``none``: every GPU is one ``nvidia.com/gpu``.
* ``single``: when every GPU has MIG enabled and all MIG devices have one profile, each MIG device is one
  ``nvidia.com/gpu``; any other MIG layout is a configuration error. Without MIG it is ``none``.
* ``mixed``: GPUs without MIG are ``nvidia.com/gpu``; each MIG device is one ``nvidia.com/mig-<profile>``.
* time-slicing with ``replicas: N > 1``: each device is advertised N times as ``<id>::<n>``, n = 0..N-1;
  ``renameByDefault: true`` advertises ``<name>.shared`` instead of ``<name>``. A replica is not a GPU and
  not a share of one: replicas share memory and fault domain (R6.2). Upstream sets no upper bound on N; the
  ids are computed on demand (``ReplicatedDevices``), and above ``MAX_MODELLED_REPLICA_IDS`` per resource and
  node only that many are placed device by device (``ResourcePlan.modelled_replicas``; the caller says so).
* MPS (``sharing.mps``, NVIDIA plugin v0.15+): the same ``<id>::<n>`` replicas and ``.shared`` renaming, but
  the MPS control daemon gives each replica an equal share: ``set_default_active_thread_percentage
  100/replicas`` and ``set_default_device_pinned_mem_limit <index> <memory/replicas>M``
  (``cmd/mps-control-daemon/mps/daemon.go``). Only whole GPUs (``nvidia.com/gpu``) can be shared with MPS
  (README "With CUDA MPS"); a MIG device under MPS stops the plugin ("sharing using MPS is not supported
  for MIG devices", ``internal/plugin/mps.go``); and the plugin refuses more than one MPS replica per
  container unless ``failRequestsGreaterThanOne: false`` is set (``config.go`` ``NewConfig`` defaults it to
  true for MPS; ``internal/rm/rm.go`` ``ValidateRequest``).

``sharing.mps`` together with ``sharing.timeSlicing`` is accepted with a warning (upstream uses MPS and
drops time-slicing); MPS on a node with MIG-enabled GPUs is a ``ConfigError`` from ``plan_resources``
(upstream refuses to start). Pools mixing modes across nodes are an ``explain`` finding.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import overload

from kubegpu.devices.inventory import Health, NodeInventory
from kubegpu.devices.nvcaps import mig_device_caps, parse_mig_minors
from kubegpu.errors import ConfigError
from kubegpu.model.names import MIG_RESOURCE_PREFIX as MIG_RESOURCE_PREFIX
from kubegpu.model.names import NVIDIA_GPU

GPU_RESOURCE = NVIDIA_GPU  # defined once, in kubegpu.model.names; the name other modules import from here
SHARED_SUFFIX = ".shared"
# upstream sets no upper bound on replicas (api/config/v1/replicas.go: only "must be >= 2"; a Go int, so at most
# 2**63 - 1). Replica ids are computed on demand (``ReplicatedDevices``), so memory stays one record per physical
# device; but each placement still lists the free ids, so per resource and node kubegpu places at most this
# many device by device (the old materialised bound, 1024 GPUs x 1024 replicas) and says so beyond it.
MAX_MODELLED_REPLICA_IDS = 1 << 20
GO_MAX_INT = 2**63 - 1  # Go's int on the 64-bit platforms the plugin ships for: json.Unmarshal refuses more
REPLICA_SEPARATOR = "::"


class MigStrategy(enum.StrEnum):
    NONE = "none"
    SINGLE = "single"
    MIXED = "mixed"


class DeviceListStrategy(enum.StrEnum):
    """``flags.plugin.deviceListStrategy`` values (api/config/v1 consts.go)."""

    ENVVAR = "envvar"
    VOLUME_MOUNTS = "volume-mounts"
    CDI_ANNOTATIONS = "cdi-annotations"
    CDI_CRI = "cdi-cri"


class DeviceIdStrategy(enum.StrEnum):
    UUID = "uuid"
    INDEX = "index"


class SharingStrategy(enum.StrEnum):
    """Upstream ``Sharing.SharingStrategy()``; also GFD's ``nvidia.com/gpu.sharing-strategy`` label."""

    NONE = "none"
    TIME_SLICING = "time-slicing"
    MPS = "mps"


DEFAULT_MPS_ROOT = "/run/nvidia/mps"


@dataclass(frozen=True, slots=True)
class ReplicatedResource:
    name: str
    replicas: int


@dataclass(frozen=True, slots=True)
class PluginConfig:
    """The parts of the NVIDIA device plugin config that decide what is advertised and injected."""

    mig_strategy: MigStrategy = MigStrategy.NONE
    device_list_strategy: tuple[DeviceListStrategy, ...] = (DeviceListStrategy.ENVVAR,)
    device_id_strategy: DeviceIdStrategy = DeviceIdStrategy.UUID
    rename_by_default: bool = False  # sharing.timeSlicing.renameByDefault
    fail_requests_greater_than_one: bool = False  # sharing.timeSlicing.failRequestsGreaterThanOne
    time_slicing: tuple[ReplicatedResource, ...] = ()
    mps: tuple[ReplicatedResource, ...] = ()
    mps_rename_by_default: bool = False
    mps_fail_requests_greater_than_one: bool = True  # NewConfig: true unless the file says false
    mps_root: str = DEFAULT_MPS_ROOT  # flags.mpsRoot: host directory of the MPS pipes and shm
    cdi_annotation_prefix: str = "cdi.k8s.io/"  # flags.plugin.cdiAnnotationPrefix
    pass_device_specs: bool = False  # flags.plugin.passDeviceSpecs: Allocate also returns DeviceSpecs
    nvidia_dev_root: str = "/"  # flags.nvidiaDevRoot: where the host's /dev/nvidia* live, seen from the host
    # what the file sets that the NVIDIA plugin ignores (one line each, naming the field)
    warnings: tuple[str, ...] = dataclasses.field(default=(), compare=False)

    @property
    def sharing_strategy(self) -> SharingStrategy:
        """Upstream ``Sharing.SharingStrategy()``: MPS when it replicates anything, else time-slicing."""
        if any(r.replicas > 1 for r in self.mps):
            return SharingStrategy.MPS
        if any(r.replicas > 1 for r in self.time_slicing):
            return SharingStrategy.TIME_SLICING
        return SharingStrategy.NONE

    @property
    def shared_resources(self) -> tuple[ReplicatedResource, ...]:
        """The replicated resources of the active sharing strategy."""
        return self.mps if self.sharing_strategy is SharingStrategy.MPS else self.time_slicing

    @property
    def renames_shared(self) -> bool:
        """``renameByDefault`` of the active sharing strategy."""
        if self.sharing_strategy is SharingStrategy.MPS:
            return self.mps_rename_by_default
        return self.rename_by_default

    def replicas_for(self, resource: str) -> int:
        """Replicas per device of a base resource name; 1 when it is not shared."""
        for r in self.shared_resources:
            if r.name == resource:
                return r.replicas
        return 1


@dataclass(frozen=True, slots=True)
class AdvertisedDevice:
    """One device id kubelet sees, and the physical device behind it."""

    id: str  # what kubelet allocates: a GPU/MIG UUID, or "<uuid>::<n>" for a replica
    device: str  # GPU or MIG UUID injected into the container
    gpu_index: int  # index of the physical GPU (parent GPU for MIG)
    mig_index: int | None  # MIG device index on its GPU, None for a whole GPU
    health: Health
    numa_node: int | None
    gpu_node: str  # character device of the physical GPU (parent GPU for MIG), e.g. /dev/nvidia0
    # a MIG device's GPU- and compute-instance access nodes (/dev/nvidia-caps/nvidia-cap<N>); empty for a
    # whole GPU, or when the reading has no mig-minors to take them from
    mig_caps: tuple[str, ...] = ()


class ReplicatedDevices(Sequence[AdvertisedDevice]):
    """The replica ids of shared devices, in the plugin's order (each device's ``<id>::0`` .. ``<id>::N-1``),
    computed on demand: one record per physical device whatever the replica count.

    ``modelled`` replicas per device are listed (``replicas`` capped so that the whole stays within
    ``MAX_MODELLED_REPLICA_IDS``); ``replicas`` is what the plugin advertises."""

    __slots__ = ("_index", "base", "modelled", "replicas")

    def __init__(self, base: Sequence[AdvertisedDevice], replicas: int) -> None:
        self.base = tuple(base)
        self.replicas = replicas
        self.modelled = min(replicas, max(MAX_MODELLED_REPLICA_IDS // max(len(self.base), 1), 1))
        self._index = {d.id: k for k, d in enumerate(self.base)}

    @property
    def advertised(self) -> int:
        """How many replica ids the plugin advertises for these devices."""
        return len(self.base) * self.replicas

    def __len__(self) -> int:
        return len(self.base) * self.modelled

    def _at(self, i: int) -> AdvertisedDevice:
        d = self.base[i // self.modelled]
        return dataclasses.replace(d, id=annotated_id(d.id, i % self.modelled))

    @overload
    def __getitem__(self, i: int) -> AdvertisedDevice: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[AdvertisedDevice, ...]: ...
    def __getitem__(self, i: int | slice) -> AdvertisedDevice | tuple[AdvertisedDevice, ...]:
        if isinstance(i, slice):
            return tuple(self._at(k) for k in range(*i.indices(len(self))))
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        return self._at(i % len(self))

    def __iter__(self) -> Iterator[AdvertisedDevice]:
        for d in self.base:
            for n in range(self.modelled):
                yield dataclasses.replace(d, id=annotated_id(d.id, n))

    def lookup(self, device_id: str) -> AdvertisedDevice | None:
        """The modelled replica with this id, or None."""
        base, _, n = device_id.partition(REPLICA_SEPARATOR)
        k = self._index.get(base)
        if k is None or not (n.isascii() and n.isdigit()) or str(int(n)) != n or int(n) >= self.modelled:
            return None
        return dataclasses.replace(self.base[k], id=device_id)

    def __contains__(self, item: object) -> bool:
        return isinstance(item, AdvertisedDevice) and self.lookup(item.id) == item

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ReplicatedDevices):
            return (self.base, self.replicas) == (other.base, other.replicas)
        return (
            isinstance(other, tuple)
            and len(other) == len(self)
            and all(a == b for a, b in zip(self, other, strict=True))
        )

    def __hash__(self) -> int:
        return hash((self.base, self.replicas))

    def __repr__(self) -> str:
        return f"ReplicatedDevices({len(self.base)} devices x {self.replicas} replicas)"


@dataclass(frozen=True, slots=True)
class ResourcePlan:
    """One extended resource the node advertises, with its device ids."""

    name: str  # advertised name, e.g. "nvidia.com/gpu.shared"
    base_name: str  # name before renaming, e.g. "nvidia.com/gpu"
    # whole GPUs / MIG devices: a tuple; replicas: ``ReplicatedDevices`` (ids computed on demand)
    devices: Sequence[AdvertisedDevice]
    replicas: int = 1
    fail_requests_greater_than_one: bool = False
    sharing: SharingStrategy = SharingStrategy.NONE  # how the replicas are shared (none when replicas == 1)

    @property
    def shared(self) -> bool:
        return self.replicas > 1

    @property
    def advertised(self) -> int:
        """How many device ids the plugin advertises to kubelet (every replica, modelled or not)."""
        return self.devices.advertised if isinstance(self.devices, ReplicatedDevices) else len(self.devices)

    @property
    def modelled_replicas(self) -> int:
        """Replicas per device that kubegpu places device by device (``replicas`` unless capped)."""
        return self.devices.modelled if isinstance(self.devices, ReplicatedDevices) else self.replicas

    def lookup(self, device_id: str) -> AdvertisedDevice | None:
        """The advertised device with this id, or None (without listing every replica)."""
        if isinstance(self.devices, ReplicatedDevices):
            return self.devices.lookup(device_id)
        return next((d for d in self.devices if d.id == device_id), None)

    def replicas_per_gpu(self) -> Mapping[str, int]:
        """Advertised replica count per underlying device (for ``distributed_allocation``)."""
        counts: dict[str, int] = {}
        if isinstance(self.devices, ReplicatedDevices):
            for d in self.devices.base:
                counts[d.device] = counts.get(d.device, 0) + self.devices.modelled
            return counts
        for d in self.devices:
            counts[d.device] = counts.get(d.device, 0) + 1
        return counts


def replica_model_note(replicas: int, devices: int) -> str:
    """The one line saying that kubegpu places fewer replicas device by device than the plugin advertises."""
    modelled = max(MAX_MODELLED_REPLICA_IDS // max(devices, 1), 1)
    return (
        f"{replicas} replicas per device on {devices} device(s): the plugin accepts this; kubegpu places at most "
        f"{MAX_MODELLED_REPLICA_IDS} replica ids per resource and node one by one, so {modelled} per device here "
        "(counts from status.allocatable still cover all; device-level checks see only those)"
    )


def annotated_id(device: str, replica: int) -> str:
    """The replica id the NVIDIA plugin advertises for time-slicing: ``<id>::<replica>``."""
    return f"{device}{REPLICA_SEPARATOR}{replica}"


def strip_annotation(device_id: str) -> str:
    """The device behind a replica id (identity for an unannotated id)."""
    return device_id.split(REPLICA_SEPARATOR, 1)[0]


def plan_resources(inv: NodeInventory, config: PluginConfig) -> tuple[ResourcePlan, ...]:
    """The extended resources this node advertises under ``config``, each with its device ids.

    Raises ``ConfigError`` when the MIG layout does not fit ``mig-strategy=single`` (the NVIDIA plugin
    refuses to start in that case).
    """
    groups: dict[str, list[AdvertisedDevice]] = {}

    def add(resource: str, dev: AdvertisedDevice) -> None:
        groups.setdefault(resource, []).append(dev)

    mig_gpus = [g for g in inv.devices if g.mig_enabled]
    if (
        config.sharing_strategy is SharingStrategy.MPS
        and mig_gpus
        and config.mig_strategy is not MigStrategy.NONE
    ):
        raise ConfigError(
            "sharing using MPS is not supported for MIG devices: MPS and MIG on one node are two sharing "
            f"modes; MIG-enabled GPUs: {', '.join(str(g.index) for g in mig_gpus)}"
        )
    if config.mig_strategy is MigStrategy.SINGLE and mig_gpus:
        profiles = {m.profile for g in mig_gpus for m in g.mig_devices}
        if (
            len(mig_gpus) != len(inv.devices)
            or len(profiles) != 1
            or any(not g.mig_devices for g in mig_gpus)
        ):
            raise ConfigError(
                "mig-strategy=single needs every GPU MIG-enabled with MIG devices of one profile; "
                f"found {len(mig_gpus)}/{len(inv.devices)} MIG-enabled GPUs and profiles {sorted(profiles)}"
            )
    minors = parse_mig_minors(inv.mig_minors) if inv.mig_minors is not None else None
    for g in inv.devices:
        if config.mig_strategy is MigStrategy.NONE or not g.mig_enabled:
            add(
                GPU_RESOURCE,
                AdvertisedDevice(g.uuid, g.uuid, g.index, None, g.health, g.numa_node, g.device_node),
            )
            continue
        for m in g.mig_devices:
            health = Health.UNHEALTHY if Health.UNHEALTHY in (g.health, m.health) else Health.HEALTHY
            resource = (
                GPU_RESOURCE if config.mig_strategy is MigStrategy.SINGLE else MIG_RESOURCE_PREFIX + m.profile
            )
            caps: tuple[str, ...] = ()
            if minors is not None:
                caps = mig_device_caps(minors, g.device_minor, m.gi_id, m.ci_id, m.uuid)
            add(
                resource,
                AdvertisedDevice(m.uuid, m.uuid, g.index, m.index, health, g.numa_node, g.device_node, caps),
            )
    plans = []
    for base, devs in groups.items():
        replicas = config.replicas_for(base)
        mps = replicas > 1 and config.sharing_strategy is SharingStrategy.MPS
        plans.append(
            ResourcePlan(
                name=base + SHARED_SUFFIX if replicas > 1 and config.renames_shared else base,
                base_name=base,
                devices=ReplicatedDevices(devs, replicas) if replicas > 1 else tuple(devs),
                replicas=replicas,
                # rm.go ValidateRequest: failRequestsGreaterThanOne of the active strategy (MPS: true unless false).
                fail_requests_greater_than_one=(mps and config.mps_fail_requests_greater_than_one)
                or (not mps and config.fail_requests_greater_than_one and replicas > 1),
                sharing=config.sharing_strategy if replicas > 1 else SharingStrategy.NONE,
            )
        )
    return tuple(plans)
