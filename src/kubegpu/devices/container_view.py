"""What a container gets for its device ids: the device plugin's Allocate response and the CUDA view (R9.3, R12).

``allocate_response`` is the one implementation of the NVIDIA device plugin's ``Allocate`` for one
container; the node agent's gRPC server and the scheduler's explanations both call it. It mirrors
NVIDIA k8s-device-plugin ``internal/plugin/server.go`` (``getAllocateResponse``) and
``internal/plugin/mps.go``:

* the ids to inject are the requested ids with their replica suffix ``::<n>`` removed (upstream
  ``AnnotatedIDs.GetIDs``), or with ``deviceIDStrategy: index`` the GPU index (``<gpu>:<mig>`` for a MIG
  device), in request order and each once: two replicas of one GPU inject it once
  (``uniqueDeviceIDsFromAnnotatedDeviceIDs``, v0.18.0+, commit 75633e25);
* ``envvar``: ``NVIDIA_VISIBLE_DEVICES=<ids,…>``;
* ``volume-mounts``: ``NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices`` plus one mount per id,
  host ``/dev/null`` → ``/var/run/nvidia-container-devices/<id>``;
* ``cdi-annotations``: one annotation ``cdi.k8s.io/nvidia-device-plugin_<response id>`` whose value is the
  comma-joined CDI names (container-device-interface ``UpdateAnnotations``; the prefix follows
  ``flags.plugin.cdiAnnotationPrefix``). Upstream's response id is a fresh random UUID per container
  response (``uuid.New()``), and it must be: kubelet (``pod_devices.go`` ``deviceRunContainerOptions``)
  keeps the first of two equal annotation keys of one container, so a container with two resources would
  lose one resource's devices. Here it is a parameter: the node agent passes a fresh UUID, the offline
  explanation a fixed one;
* ``cdi-cri``: the CDI names in ``cdi_devices``. The NVIDIA plugin names devices with its own CDI vendor,
  ``k8s.device-plugin.nvidia.com/gpu=<id>`` (``cdi.WithVendor("k8s.device-plugin.nvidia.com")``, class
  ``gpu``); kubegpu's node agent instead points at the spec ``kubegpu node cdi`` prints (kind
  ``nvidia.com/gpu``, as ``nvidia-ctk cdi generate`` writes it) and passes that kind;
* ``passDeviceSpecs: true``: ``DeviceSpec`` entries (permissions ``rw``, host path under
  ``flags.nvidiaDevRoot``) for ``/dev/nvidiactl``, ``/dev/nvidia-uvm``, ``/dev/nvidia-uvm-tools`` and
  ``/dev/nvidia-modeset``, each only where it exists on the node, then each requested device's GPU node
  ``/dev/nvidia<minor>`` in request order, not de-duplicated (upstream passes ``requestIds`` to ``apiDeviceSpecs`` and
  ``GetDevicePaths``); a MIG device passes its parent GPU's node, then its GPU-instance and
  compute-instance access nodes ``/dev/nvidia-caps/nvidia-cap<N>`` (``kubegpu.devices.nvcaps``; a reading
  without ``mig_minors`` cannot name them, and a note says so);
* when every strategy is a CDI one, no environment, mounts or device specs are added (upstream
  ``AllCDIEnabled``);
* MPS: ``CUDA_MPS_PIPE_DIRECTORY=/mps/<resource>/pipe`` and two mounts, ``<mpsRoot>/<resource>/pipe`` and
  ``<mpsRoot>/shm`` → ``/dev/shm``. The per-replica limits are *not* environment variables the plugin
  injects: the MPS control daemon sets them as daemon defaults (``set_default_active_thread_percentage
  100/replicas``, ``set_default_device_pinned_mem_limit <index> <memory/replicas>M``), which is what a
  client would otherwise set with ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`` / ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``;
  ``MpsDefaults`` carries both spellings.

Errors carry the plugin's texts (``AllocateError``; ``admission_message`` is what kubelet then shows as
``UnexpectedAdmissionError``).

The container's view (``VisibleDevice``): the runtime exposes the injected GPUs and CUDA numbers them
0..n-1 in PCI bus order on a node of one GPU model (CUDA's default ``FASTEST_FIRST`` falls back to PCI order
between equal GPUs, and NVML indexes follow PCI order), so CUDA device k is the k-th injected GPU by host
index, never "host GPU k" (R9.3). Replicas of one GPU are one CUDA device sharing its memory (R17.3); a
CUDA process enumerates only one MIG device (MIG user guide, "CUDA Device Enumeration").
"""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kubegpu.devices.cdi import CONTROL_NODES
from kubegpu.devices.plugin_versions import (
    NEWEST,
    PluginVersion,
    refuses_more_than_one,
    shared_request_text,
    unknown_device_text,
)
from kubegpu.devices.sharing import (
    AdvertisedDevice,
    DeviceIdStrategy,
    DeviceListStrategy,
    PluginConfig,
    ReplicatedDevices,
    ResourcePlan,
    SharingStrategy,
    strip_annotation,
)
from kubegpu.errors import KubegpuError

ENV_VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
VOLUME_MOUNTS_ROOT = "/var/run/nvidia-container-devices"
VOLUME_MOUNTS_HOST_PATH = "/dev/null"
PLUGIN_CDI_KIND = "k8s.device-plugin.nvidia.com/gpu"
CDI_ANNOTATION_PLUGIN = "nvidia-device-plugin"
MPS_CONTAINER_ROOT = "/mps"
_CDI_STRATEGIES = (DeviceListStrategy.CDI_ANNOTATIONS, DeviceListStrategy.CDI_CRI)
# The plugin passes these only where they exist; the GPU nodes themselves always.
OPTIONAL_DEVICE_NODES = (*CONTROL_NODES, "/dev/nvidia-modeset")


class AllocateError(KubegpuError):
    """The device plugin refuses an Allocate request; the text is the plugin's own."""

    @property
    def admission_message(self) -> str:
        """The pod's ``UnexpectedAdmissionError`` message: kubelet wraps the plugin's gRPC error."""
        return f"Allocate failed due to rpc error: code = Unknown desc = {self}, which is unexpected"


@dataclass(frozen=True, slots=True)
class Mount:
    container_path: str
    host_path: str
    read_only: bool = False


@dataclass(frozen=True, slots=True)
class DeviceSpec:
    """A ``DeviceSpec`` of the Allocate response: a host device node the runtime adds to the container."""

    container_path: str
    host_path: str
    permissions: str = "rw"


@dataclass(frozen=True, slots=True)
class MpsDefaults:
    """The limits the NVIDIA MPS control daemon sets for every client of one MPS-shared resource."""

    active_thread_percentage: int
    pinned_device_mem_limit: Mapping[int, str]  # host GPU index → "<MiB>M"

    def control_commands(self) -> tuple[str, ...]:
        """What the daemon sends to ``nvidia-cuda-mps-control`` (daemon.go ``Start``)."""
        pinned = [
            f"set_default_device_pinned_mem_limit {i} {v}" for i, v in self.pinned_device_mem_limit.items()
        ]
        return (*pinned, f"set_default_active_thread_percentage {self.active_thread_percentage}")

    def client_env(self) -> dict[str, str]:
        """The same limits in the client environment variables' spelling (CUDA MPS documentation)."""
        env = {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(self.active_thread_percentage)}
        if self.pinned_device_mem_limit:
            env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = ",".join(
                f"{i}={v}" for i, v in self.pinned_device_mem_limit.items()
            )
        return env


@dataclass(frozen=True, slots=True)
class VisibleDevice:
    """One CUDA device inside the container and the hardware behind it."""

    cuda_index: int
    host_index: int  # NVML / nvidia-smi index of the physical GPU (parent GPU for MIG)
    uuid: str  # GPU UUID, or MIG device UUID
    mig_index: int | None
    device_ids: tuple[str, ...]  # the allocated ids behind it (several replicas of one GPU)


@dataclass(frozen=True, slots=True)
class ContainerAllocation:
    """The ``ContainerAllocateResponse`` for one container and what the container then sees."""

    resource: str
    device_ids: tuple[str, ...]
    envs: Mapping[str, str]
    mounts: tuple[Mount, ...]
    annotations: Mapping[str, str]
    cdi_devices: tuple[str, ...]
    visible: tuple[VisibleDevice, ...]
    mps: MpsDefaults | None = None
    device_specs: tuple[DeviceSpec, ...] = ()
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready form (``explain -o json``'s allocation entries use ``device_ids`` and ``env``)."""
        return {
            "resource": self.resource,
            "device_ids": list(self.device_ids),
            "env": dict(self.envs),
            "mounts": [
                {"container_path": m.container_path, "host_path": m.host_path, "read_only": m.read_only}
                for m in self.mounts
            ],
            "annotations": dict(self.annotations),
            "cdi_devices": list(self.cdi_devices),
            "device_specs": [
                {"container_path": d.container_path, "host_path": d.host_path, "permissions": d.permissions}
                for d in self.device_specs
            ],
            "visible": [
                {
                    "cuda_index": v.cuda_index,
                    "host_index": v.host_index,
                    "uuid": v.uuid,
                    "mig_index": v.mig_index,
                    "device_ids": list(v.device_ids),
                }
                for v in self.visible
            ],
            "mps": None
            if self.mps is None
            else {"control": list(self.mps.control_commands()), "client_env": self.mps.client_env()},
            "notes": list(self.notes),
        }


def new_response_id() -> str:
    """A fresh response id for one container's CDI annotation key, as upstream's ``uuid.New().String()``."""
    return str(uuid.uuid4())


def shared_request_error(plan: ResourcePlan, n: int, version: PluginVersion = NEWEST) -> AllocateError:
    """The plugin's refusal of ``n`` > 1 replicas of ``plan`` in one container, worded as ``version`` of the
    plugin words it (``plugin_versions.shared_request_text``; the newest release kubegpu models by default)."""
    return AllocateError(shared_request_text(plan.name, n, version))


def allocate_response(
    plan: ResourcePlan,
    config: PluginConfig,
    device_ids: Sequence[str],
    *,
    gpu_memory: Mapping[int, int] | None = None,
    response_id: str = "00000000-0000-0000-0000-000000000000",
    cdi_kind: str = PLUGIN_CDI_KIND,
    node_exists: Callable[[str], bool] | None = None,
) -> ContainerAllocation:
    """The Allocate response for one container's ``device_ids`` of ``plan``; raises ``AllocateError``.

    ``gpu_memory`` maps host GPU index → total memory in bytes (for the MPS pinned-memory limit; without
    it the limit is left out). ``response_id`` names the CDI annotation key; it stands for upstream's fresh
    per-response UUID, which a caller building a real response must pass (``new_response_id``).
    ``node_exists`` tells whether an optional device node exists where the plugin runs (the node agent
    passes ``os.path.exists``); without it, as offline, they are all listed and a note says so.
    """
    ids = list(device_ids)
    chosen = []
    # rm.go ValidateRequest: every id must be known, checked before the replica count.
    for i in ids:
        if (found := plan.lookup(i)) is None:
            raise AllocateError(unknown_device_text(plan.name, i))
        chosen.append(found)
    if refuses_more_than_one(plan) and len(ids) > 1 and any(strip_annotation(i) != i for i in ids):
        raise shared_request_error(plan, len(ids))
    if config.device_id_strategy is DeviceIdStrategy.INDEX:
        named = [str(d.gpu_index) if d.mig_index is None else f"{d.gpu_index}:{d.mig_index}" for d in chosen]
    else:
        named = [strip_annotation(i) for i in ids]
    injected = list(dict.fromkeys(named))  # each device once, in request order

    strategies = config.device_list_strategy
    envs: dict[str, str] = {}
    mounts: list[Mount] = []
    annotations: dict[str, str] = {}
    cdi_names = tuple(f"{cdi_kind}={i}" for i in injected)
    if DeviceListStrategy.CDI_ANNOTATIONS in strategies:
        key = f"{config.cdi_annotation_prefix}{CDI_ANNOTATION_PLUGIN}_{response_id}"
        annotations[key] = ",".join(cdi_names)
    cdi_devices = cdi_names if DeviceListStrategy.CDI_CRI in strategies else ()
    mps = None
    if plan.sharing is SharingStrategy.MPS:
        pipe = f"{MPS_CONTAINER_ROOT}/{plan.name}/pipe"
        envs["CUDA_MPS_PIPE_DIRECTORY"] = pipe
        root = config.mps_root.rstrip("/")
        mounts += [Mount(pipe, f"{root}/{plan.name}/pipe"), Mount("/dev/shm", f"{root}/shm")]
        mps = _mps_defaults(plan, gpu_memory or {})
    if not all(s in _CDI_STRATEGIES for s in strategies):
        if DeviceListStrategy.ENVVAR in strategies:
            envs[ENV_VISIBLE_DEVICES] = ",".join(injected)
        if DeviceListStrategy.VOLUME_MOUNTS in strategies:
            envs[ENV_VISIBLE_DEVICES] = VOLUME_MOUNTS_ROOT
            mounts += [Mount(f"{VOLUME_MOUNTS_ROOT}/{i}", VOLUME_MOUNTS_HOST_PATH) for i in injected]
    visible, notes = _cuda_view(plan, ids)
    specs: list[DeviceSpec] = []
    if config.pass_device_specs and not all(s in _CDI_STRATEGIES for s in strategies):
        specs, spec_notes = _device_specs(chosen, config.nvidia_dev_root, node_exists)
        notes = (*notes, *spec_notes)
    return ContainerAllocation(
        resource=plan.name,
        device_ids=tuple(ids),
        envs=envs,
        mounts=tuple(mounts),
        annotations=annotations,
        cdi_devices=cdi_devices,
        visible=visible,
        mps=mps,
        device_specs=tuple(specs),
        notes=notes,
    )


def _device_specs(
    chosen: Sequence[AdvertisedDevice], dev_root: str, node_exists: Callable[[str], bool] | None
) -> tuple[list[DeviceSpec], tuple[str, ...]]:
    notes: list[str] = []
    optional = list(OPTIONAL_DEVICE_NODES)
    if node_exists is None:
        notes.append(
            f"device specs list {', '.join(optional)} as present; the plugin passes each only where it exists"
        )
    else:
        optional = [p for p in optional if node_exists(p)]
    if any(d.mig_index is not None and not d.mig_caps for d in chosen):
        notes.append("the MIG devices' /dev/nvidia-caps nodes are not passed (the reading has no mig_minors)")
    paths = [*optional, *(p for d in chosen for p in (d.gpu_node, *d.mig_caps))]
    # Go's filepath.Join(root, "/dev/x"): the node path under the root, cleaned.
    specs = [DeviceSpec(p, posixpath.normpath(posixpath.join(dev_root, p.lstrip("/")))) for p in paths]
    return specs, tuple(notes)


def mps_defaults(plan: ResourcePlan, gpu_memory: Mapping[int, int]) -> MpsDefaults:
    """What the MPS control daemon of ``plan``'s resource sets (also what ``kubegpu.node.mps`` sends)."""
    return _mps_defaults(plan, gpu_memory)


def _mps_defaults(plan: ResourcePlan, gpu_memory: Mapping[int, int]) -> MpsDefaults:
    # daemon.go: replicas per device = advertised ids / distinct GPUs; limits are integer divisions.
    per_gpu: dict[int, int] = {}
    # every advertised id counts, also those beyond what kubegpu places one by one (ReplicatedDevices)
    replicated = plan.devices if isinstance(plan.devices, ReplicatedDevices) else None
    for d in replicated.base if replicated is not None else plan.devices:
        per_gpu[d.gpu_index] = per_gpu.get(d.gpu_index, 0) + (plan.replicas if replicated is not None else 1)
    replicas = plan.advertised // max(len(per_gpu), 1)
    pinned = {
        i: f"{gpu_memory[i] // n // 1024 // 1024}M" for i, n in sorted(per_gpu.items()) if gpu_memory.get(i)
    }
    return MpsDefaults(active_thread_percentage=100 // max(replicas, 1), pinned_device_mem_limit=pinned)


def _cuda_view(plan: ResourcePlan, ids: Sequence[str]) -> tuple[tuple[VisibleDevice, ...], tuple[str, ...]]:
    by_id = {i: d for i in ids if (d := plan.lookup(i)) is not None}  # ids were checked by the caller
    groups: dict[str, list[str]] = {}
    for i in ids:
        groups.setdefault(by_id[i].device, []).append(i)
    order = sorted(
        groups, key=lambda dev: (by_id[groups[dev][0]].gpu_index, by_id[groups[dev][0]].mig_index or 0)
    )
    visible = tuple(
        VisibleDevice(
            cuda_index=k,
            host_index=by_id[groups[dev][0]].gpu_index,
            uuid=dev,
            mig_index=by_id[groups[dev][0]].mig_index,
            device_ids=tuple(groups[dev]),
        )
        for k, dev in enumerate(order)
    )
    notes: list[str] = []
    for v in visible:
        if len(v.device_ids) > 1:
            notes.append(
                f"{len(v.device_ids)} replicas of {v.uuid} are one CUDA device: they share its memory and "
                "fault domain, no extra hardware"
            )
    if plan.shared:
        notes.append(
            f"{plan.name} is {plan.sharing} ({plan.replicas} replicas per GPU): a replica is not 1/{plan.replicas} "
            "of the GPU's memory; other pods share the same GPU and its faults"
        )
    if sum(1 for v in visible if v.mig_index is not None) > 1:
        notes.append("a CUDA process enumerates only one MIG device; use one process per MIG device")
    return visible, tuple(notes)
