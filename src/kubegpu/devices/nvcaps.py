"""MIG capability device nodes: ``/proc/driver/nvidia-caps/mig-minors`` → ``/dev/nvidia-caps`` (R12).

A process reaches a MIG device through three device nodes: its parent GPU's ``/dev/nvidia<minor>`` and
the ``access`` capabilities of its GPU instance and compute instance, each a
``/dev/nvidia-caps/nvidia-cap<N>`` node (MIG user guide, "Device Nodes and Capabilities"). The driver
lists every capability's minor ``N`` in ``/proc/driver/nvidia-caps/mig-minors``, one per line:
``config <N>``, ``monitor <N>``, ``gpu<G>/gi<I>/access <N>`` and ``gpu<G>/gi<I>/ci<C>/access <N>``,
where ``G`` is the GPU's minor number (the ``<minor>`` of ``/dev/nvidia<minor>``), not its NVML index.

NVIDIA's device plugin reads that file when it builds each MIG device (k8s-device-plugin
``internal/rm/nvml_devices.go`` ``GetPaths``, ``internal/mig`` ``GetMigCapabilityDevicePaths``): it keys
every line by the capability's ``/proc/driver/nvidia/capabilities/...`` path, skips lines it cannot
parse, and gives a MIG device the paths ``[/dev/nvidia<G>, <GI access node>, <CI access node>]``, or
fails (the plugin does not start) when either capability is missing. Those paths become the device's
``DeviceSpec`` entries under ``passDeviceSpecs``.

Must not: open any file but the one ``read_mig_minors`` is handed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from kubegpu.errors import ConfigError, InputError

MIG_MINORS_PATH = Path("/proc/driver/nvidia-caps/mig-minors")
CAPABILITIES_ROOT = "/proc/driver/nvidia/capabilities"
CAPS_DEVICE_DIR = "/dev/nvidia-caps"

_CI = re.compile(r"gpu(\d+)/gi(\d+)/ci(\d+)/access (\d+)")
_GI = re.compile(r"gpu(\d+)/gi(\d+)/access (\d+)")
_GLOBAL = re.compile(r"(config|monitor) (\d+)")


def gi_capability(gpu_minor: int, gi: int) -> str:
    """The /proc path of a GPU instance's access capability (the key upstream looks up)."""
    return f"{CAPABILITIES_ROOT}/gpu{gpu_minor}/mig/gi{gi}/access"


def ci_capability(gpu_minor: int, gi: int, ci: int) -> str:
    """The /proc path of a compute instance's access capability."""
    return f"{CAPABILITIES_ROOT}/gpu{gpu_minor}/mig/gi{gi}/ci{ci}/access"


def parse_mig_minors(lines: Iterable[str]) -> dict[str, str]:
    """Capability path → ``/dev/nvidia-caps/nvidia-cap<N>``; unparsable lines are skipped, as upstream."""
    out: dict[str, str] = {}
    for raw in lines:
        line = raw.strip()
        if m := _CI.fullmatch(line):
            gpu, gi, ci, minor = (int(g) for g in m.groups())
            out[ci_capability(gpu, gi, ci)] = f"{CAPS_DEVICE_DIR}/nvidia-cap{minor}"
        elif m := _GI.fullmatch(line):
            gpu, gi, minor = (int(g) for g in m.groups())
            out[gi_capability(gpu, gi)] = f"{CAPS_DEVICE_DIR}/nvidia-cap{minor}"
        elif m := _GLOBAL.fullmatch(line):
            out[f"{CAPABILITIES_ROOT}/mig/{m[1]}"] = f"{CAPS_DEVICE_DIR}/nvidia-cap{m[2]}"
    return out


class MissingMigCapability(ValueError):
    """A MIG device whose GPU- or compute-instance capability is not in mig-minors."""


def mig_capability_nodes(minors: Mapping[str, str], gpu_minor: int, gi: int, ci: int) -> tuple[str, str]:
    """The GI and CI access nodes of the MIG device ``gi``/``ci`` on GPU ``/dev/nvidia<gpu_minor>``.

    Raises ``MissingMigCapability`` with upstream's text ``missing MIG GPU instance capability path:
    <path>``; for a missing compute instance upstream repeats that text with the GI path (a slip in
    ``GetPaths``), kubegpu names the compute instance and its path instead.
    """
    gi_path, ci_path = gi_capability(gpu_minor, gi), ci_capability(gpu_minor, gi, ci)
    if gi_path not in minors:
        raise MissingMigCapability(f"missing MIG GPU instance capability path: {gi_path}")
    if ci_path not in minors:
        raise MissingMigCapability(f"missing MIG compute instance capability path: {ci_path}")
    return minors[gi_path], minors[ci_path]


def mig_device_caps(
    minors: Mapping[str, str], gpu_minor: int, gi: int, ci: int, uuid: str
) -> tuple[str, str]:
    """``mig_capability_nodes`` for MIG device ``uuid``, a missing capability being a ``ConfigError``:
    upstream (device plugin and ``nvidia-ctk cdi generate`` alike) builds every MIG device's paths up
    front and refuses to go on without them."""
    try:
        return mig_capability_nodes(minors, gpu_minor, gi, ci)
    except MissingMigCapability as exc:
        raise ConfigError(f"error getting device paths of MIG device {uuid}: {exc}") from None


def read_mig_minors(path: Path = MIG_MINORS_PATH) -> list[str]:
    """The file's lines; ``[]`` where it does not exist (a driver without MIG support), as upstream."""
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise InputError(f"cannot read MIG minors: {exc.strerror}", source=str(path)) from exc
