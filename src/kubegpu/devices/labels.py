"""GPU feature discovery (GFD) node labels computed from an inventory and a plugin config (R2.1, R5.1, R6).

Mirrors NVIDIA k8s-device-plugin ``internal/lm`` (GFD): driver/CUDA version labels, ``mig.capable``,
``mps.capable`` (true when the plugin shares with MPS), and per resource
``<resource>.product/count/replicas/sharing-strategy/memory`` (``sharing-strategy`` is the config's strategy
for a resource it replicates more than once, else ``none``; k8s-device-plugin v0.20.0 ``internal/lm/resource.go``
``baseLabeler``) plus, for whole GPUs, ``family`` and ``compute.major/minor``, and for MIG resources the
attribute labels ``memory``, ``multiprocessors``, ``slices.gi``, ``slices.ci``, ``engines.{copy,decoder,encoder,
jpeg,ofa}`` (``newMigAttributeLabels``; a reading without attributes gives ``memory`` from the memory total).
MIG resources are ``nvidia.com/mig-<profile>`` with ``+`` written ``.`` (``1g.10gb+me`` →
``nvidia.com/mig-1g.10gb.me.count``: a ``+`` is not valid in a label key). ``gpu.product`` is sanitised as GFD's
``getProductName`` does (each part loses every character but ``A-Za-z0-9-_.`` and space, its runs of
spaces become one ``-``) and gets ``-SHARED`` when the resource is time-sliced and not renamed. ``gpu.replicas`` is 0 for
MIG-enabled GPUs (labelled without sharing), otherwise the configured replicas (1 when not shared).
``nvidia.com/gpu.present`` is the GPU Operator's label (not GFD's); kubegpu sets it whenever the node
has a GPU. With several GPU models on one node upstream labels one of them (map order); kubegpu labels
the model of the lowest-index GPU. ``gpu.family`` follows upstream ``getArchFamily`` (8.0-8.8 ampere, 8.9
ada-lovelace, 9 hopper, 10 and 12 blackwell, 13 rubin; majors it does not list → ``undefined``).

``gpu.machine`` is ``newMachineTypeLabeler`` (``internal/lm/machine-type.go``): the machine type file's
text (``/sys/class/dmi/id/product_name``, the reading's ``machine_type``), trimmed and sanitised, or ``unknown``
when it could not be read. ``gpu.mode`` is ``newGPUModeLabeler`` (``internal/lm/nvml.go``) over the GPUs'
PCI classes (the reading's ``pci_class``): all ``0x030000`` (VGA controller) → ``graphics``, all ``0x030200``
(3D controller) → ``compute``; classes that differ, another class, or one that could not be read or parsed →
``unknown`` (since v0.18.0; v0.16.x-v0.17.x failed the whole labeler on an unreadable class). GFD reads the
class of full GPUs only, MIG-enabled or not (go-nvlib ``GetDevices``); go-nvlib reads the function's
``vendor``, ``device``, ``numa_node`` and ``resource`` files with it, and GFD says ``unknown`` when one of those
fails too; kubegpu reads the class alone, so it says ``compute`` where a host lacking one of those (``numa_node``
needs a kernel built with NUMA) would get ``unknown`` from GFD. A reading made before these keys were
recorded gives ``unknown`` for both, as GFD gives where it cannot read the files. Both labels come with every
node that has a GPU, whatever the MIG strategy or sharing (``NewDeviceLabeler`` merges them in always).

``nfd_feature_text`` writes labels in NFD's local feature file format (one ``name=value`` per line,
``#`` comments), the file nfd-worker reads from ``/etc/kubernetes/node-feature-discovery/features.d/``.

Not computed (the reading holds no data for them): vGPU, IMEX/fabric labels, ``gfd.timestamp``.
"""

from __future__ import annotations

import re

from kubegpu.devices.inventory import MIB, GpuDevice, NodeInventory, is_recorded_error
from kubegpu.devices.mig_parted import parse_uint32
from kubegpu.devices.sharing import (
    GPU_RESOURCE,
    MIG_RESOURCE_PREFIX,
    MigStrategy,
    PluginConfig,
    SharingStrategy,
)
from kubegpu.errors import InputError
from kubegpu.model.names import GPU_MACHINE_LABEL, GPU_MODE_LABEL

# getArchFamily (v0.20.0 internal/lm/resource.go): majors 7 and 8 split on the minor (below).
_FAMILIES = {
    1: "tesla",
    2: "fermi",
    3: "kepler",
    5: "maxwell",
    6: "pascal",
    9: "hopper",
    10: "blackwell",
    12: "blackwell",
    13: "rubin",
}


def gfd_labels(inv: NodeInventory, config: PluginConfig) -> dict[str, str]:
    """The ``nvidia.com/*`` labels GFD would put on this node, sorted by key; ``{}`` without GPUs."""
    if not inv.devices:
        return {}
    labels = {"nvidia.com/gpu.present": "true", GPU_MACHINE_LABEL: machine_label(inv.machine_type)}
    labels.update(_version_labels(inv))
    labels["nvidia.com/mig.capable"] = _bool(any(g.mig_capable for g in inv.devices))
    labels["nvidia.com/mps.capable"] = _bool(config.sharing_strategy is SharingStrategy.MPS)
    labels.update(_full_gpu_labels(inv, config))
    labels[GPU_MODE_LABEL] = gpu_mode(inv.devices)
    if config.mig_strategy is not MigStrategy.NONE:
        labels["nvidia.com/mig.strategy"] = str(config.mig_strategy)
        labels.update(_mig_labels(inv, config))
    return dict(sorted(labels.items()))


UNKNOWN = "unknown"  # GFD's machineTypeUnknown, and the mode it gives when it cannot tell
# go-nvlib nvpci PCIVgaControllerClass / PCI3dControllerClass: class, subclass and programming interface
PCI_VGA_CONTROLLER = 0x030000
PCI_3D_CONTROLLER = 0x030200


def machine_label(machine_type: str | None) -> str:
    """``gpu.machine``: GFD's ``getMachineType`` (text trimmed) then ``sanitise``; ``unknown`` when unread."""
    if machine_type is None or is_recorded_error(machine_type):
        return UNKNOWN
    return sanitise(machine_type.strip())


def gpu_mode(devices: tuple[GpuDevice, ...]) -> str:
    """``gpu.mode``: GFD's ``getDeviceClasses`` and ``getModeForClasses`` over the GPUs' PCI classes.

    A class other than the two gives ``unknown``, as ``getModeForClasses`` does (its test's NVSwitch case).
    The GFD binary never gets that far with one: ``nvmlDevice.GetPCIClass`` dereferences the nil that go-nvlib
    ``GetGPUByPciBusID`` returns for a function that is neither a VGA nor a 3D controller.
    """
    classes = {_pci_class(g.pci_class) for g in devices}
    (only,) = classes if len(classes) == 1 else (None,)
    if only is None:  # a class not read, or classes that differ
        return UNKNOWN
    return {PCI_VGA_CONTROLLER: "graphics", PCI_3D_CONTROLLER: "compute"}.get(only, UNKNOWN)


def _pci_class(text: str | None) -> int | None:
    """go-nvlib's ``strconv.ParseUint(TrimSpace(text), 0, 32)`` of a sysfs class; None where that fails."""
    if text is None or is_recorded_error(text):
        return None
    return parse_uint32(text.strip())


def _version_labels(inv: NodeInventory) -> dict[str, str]:
    parts = inv.driver.split(".")
    if not 2 <= len(parts) <= 3:
        raise InputError(f'driver version "{inv.driver}" does not match format "X.Y[.Z]"', field="driver")
    major, minor, rev = parts[0], parts[1], parts[2] if len(parts) == 3 else ""
    cuda_major, cuda_minor = str(inv.cuda_driver // 1000), str(inv.cuda_driver % 1000 // 10)
    return {
        "nvidia.com/cuda.driver.major": major,
        "nvidia.com/cuda.driver.minor": minor,
        "nvidia.com/cuda.driver.rev": rev,
        "nvidia.com/cuda.runtime.major": cuda_major,
        "nvidia.com/cuda.runtime.minor": cuda_minor,
        "nvidia.com/cuda.driver-version.major": major,
        "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": rev,
        "nvidia.com/cuda.driver-version.full": inv.driver,
        "nvidia.com/cuda.runtime-version.major": cuda_major,
        "nvidia.com/cuda.runtime-version.minor": cuda_minor,
        "nvidia.com/cuda.runtime-version.full": f"{cuda_major}.{cuda_minor}",
    }


def _full_gpu_labels(inv: NodeInventory, config: PluginConfig) -> dict[str, str]:
    model = inv.devices[0].name
    same = [g for g in inv.devices if g.name == model]
    full = [g for g in same if not g.mig_enabled]
    # Upstream labels MIG-enabled GPUs "without sharing" (replicas 0) unless a full GPU of the model exists.
    sharing = config if full else None
    labels = _resource_labels(GPU_RESOURCE, sharing, len(same), model)
    device = (full or same)[0]
    if device.memory_mib:
        labels[f"{GPU_RESOURCE}.memory"] = str(device.memory_mib)
    labels.update(_arch_labels(device))
    return labels


def _mig_labels(inv: NodeInventory, config: PluginConfig) -> dict[str, str]:
    mig_gpus = [g for g in inv.devices if g.mig_enabled]
    if not mig_gpus:
        return {}
    counts: dict[str, int] = {}
    attributes: dict[str, dict[str, str]] = {}
    for g in mig_gpus:
        for m in g.mig_devices:
            name = m.profile.replace("+", ".")  # nvml-mig-device.go GetName
            counts[name] = counts.get(name, 0) + 1
            attributes.setdefault(
                name, {k: str(v) for k, v in m.attributes} or {"memory": str(m.memory_total // MIB)}
            )
    model = mig_gpus[0].name
    if config.mig_strategy is MigStrategy.SINGLE:
        reason = _single_invalid(inv, mig_gpus, counts)
        if reason:
            return {
                f"{GPU_RESOURCE}.product": _product([model, "MIG", "INVALID"], shared=False),
                f"{GPU_RESOURCE}.count": "0",
                f"{GPU_RESOURCE}.replicas": "0",
                f"{GPU_RESOURCE}.sharing-strategy": "",
                f"{GPU_RESOURCE}.memory": "0",
            }
        (profile,) = counts
        labels = _resource_labels(GPU_RESOURCE, config, counts[profile], model, "MIG", profile)
        labels.update({f"{GPU_RESOURCE}.{k}": v for k, v in attributes[profile].items()})
        return labels
    labels = {}
    for profile, count in counts.items():
        resource = MIG_RESOURCE_PREFIX + profile
        labels.update(_resource_labels(resource, config, count, model, "MIG", profile))
        labels.update({f"{resource}.{k}": v for k, v in attributes[profile].items()})
    return labels


def _single_invalid(inv: NodeInventory, mig_gpus: list[GpuDevice], counts: dict[str, int]) -> str:
    if any(not g.mig_devices for g in mig_gpus):
        return "at least one MIG device is enabled but empty"
    if len(mig_gpus) != len(inv.devices):
        return "devices with MIG enabled and disable detected"
    if len(counts) != 1:
        return "more than one MIG device type present on node"
    return ""


def _resource_labels(resource: str, config: PluginConfig | None, count: int, *parts: str) -> dict[str, str]:
    replicas = 0 if config is None else config.replicas_for(resource)
    renamed = config is not None and config.renames_shared
    strategy = config.sharing_strategy if config is not None and replicas > 1 else SharingStrategy.NONE
    return {
        f"{resource}.product": _product(list(parts), shared=replicas > 1 and not renamed),
        f"{resource}.count": str(count),
        f"{resource}.replicas": str(replicas),
        f"{resource}.sharing-strategy": str(strategy),
    }


def _product(parts: list[str], *, shared: bool) -> str:
    stripped = [sanitise(p) for p in parts if p]
    if shared:
        stripped.append("SHARED")
    return "-".join(stripped)


def _arch_labels(g: GpuDevice) -> dict[str, str]:
    major, minor = g.cuda_cc
    if major == 0:
        return {}
    if major == 7:
        family = "volta" if minor < 5 else "turing"
    elif major == 8:
        family = "ampere" if minor < 9 else "ada-lovelace"
    else:
        family = _FAMILIES.get(major, "undefined")
    return {
        f"{GPU_RESOURCE}.family": family,
        f"{GPU_RESOURCE}.compute.major": str(major),
        f"{GPU_RESOURCE}.compute.minor": str(minor),
    }


def _bool(value: bool) -> str:
    return "true" if value else "false"


_UNSAFE = re.compile(r"[^A-Za-z0-9\-_. ]")
# Kubernetes label syntax (apimachinery validation): an optional DNS-subdomain prefix, a name of at most
# 63 characters, and a value of at most 63 characters; both begin and end alphanumeric.
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY = re.compile(rf"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_NAME}")
_VALUE = re.compile(rf"({_NAME})?")


def sanitise(part: str) -> str:
    """GFD's ``sanitise``: drop characters other than ``A-Za-z0-9-_.`` and space, join the words by ``-``."""
    return "-".join(_UNSAFE.sub("", part).split())


def nfd_feature_text(labels: dict[str, str]) -> str:
    """``labels`` as an NFD local feature file: ``name=value`` lines, keys with their ``nvidia.com/`` prefix.

    nfd-worker drops lines that are not valid labels without saying so; kubegpu refuses them here instead.
    """
    lines = ["# kubegpu node labels (GFD-compatible); written by `kubegpu node labels --nfd-feature-file`"]
    for key, value in labels.items():
        if not _KEY.fullmatch(key) or len(key.rpartition("/")[0]) > 253:
            raise InputError(f"label name {key!r} is not a valid Kubernetes label name", field=key)
        if not _VALUE.fullmatch(value):
            raise InputError(f"label value {value!r} is not a valid Kubernetes label value", field=key)
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"
