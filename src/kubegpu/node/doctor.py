"""``kubegpu node doctor``: walk the node's GPU chain bottom-up and stop at the first broken layer (R1, R12).

The layers, in the order a GPU reaches a container:

1. PCI device: an NVIDIA function in ``/sys/bus/pci/devices`` (vendor 0x10de, display class 0x03xx) or
   in ``lspci`` output;
2. kernel module: ``nvidia`` in ``/proc/modules``, ``/sys/module/nvidia``, or ``/proc/driver/nvidia``;
3. device nodes: ``/dev/nvidiactl`` and at least one ``/dev/nvidia<N>``;
4. NVML: ``nvmlInit`` works, and its driver version and GPU count;
5. container toolkit or CDI: ``nvidia-container-runtime``/``nvidia-ctk`` on PATH, or a CDI spec naming
   ``nvidia.com/gpu`` under ``/etc/cdi`` or ``/var/run/cdi``;
6. device plugin: ``kubelet.sock`` and an ``nvidia-*.sock`` in the plugin directory, and the resource in
   kubelet's ``kubelet_internal_checkpoint`` (kubelet writes there what plugins registered);
7. CUDA: the driver's CUDA version (``nvmlSystemGetCudaDriverVersion``) at least the image's (``--cuda``).

Every probe is read into a ``HostFacts`` first, from the real host (``HostFacts.from_host``) or from a
recorded ``host.txt`` plus NVML reading (``HostFacts.from_recording``), so ``diagnose`` is a pure
function and tests can hand-build broken nodes. A layer whose facts were not gathered (a recording
without the plugin directory, no ``--cuda``) is reported as not checked and does not stop the walk.
"""

from __future__ import annotations

import enum
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kubegpu.devices import NodeInventory
from kubegpu.devices.cdi import CDI_DIRS
from kubegpu.node.discovery import NvmlBackend, NvmlUnavailable, RecordedBackend

NVIDIA_VENDOR = "0x10de"
TOOLKIT_BINARIES = ("nvidia-container-runtime", "nvidia-ctk", "nvidia-container-toolkit")
CHECKPOINT = "kubelet_internal_checkpoint"


@dataclass(frozen=True, slots=True)
class PluginDirFacts:
    """What the device plugin directory shows."""

    path: str
    kubelet_socket: bool
    plugin_sockets: tuple[str, ...]  # nvidia-*.sock file names
    registered: tuple[str, ...] | None  # nvidia.com/* resources in kubelet's checkpoint; None: no file


@dataclass(frozen=True, slots=True)
class HostFacts:
    """Everything ``diagnose`` looks at, gathered once. Empty tuples mean "looked, found nothing"."""

    pci: tuple[str, ...]  # NVIDIA PCI functions, one line of evidence each
    lspci: tuple[str, ...]  # NVIDIA lines of lspci output
    module: str | None  # evidence that the nvidia kernel module is loaded; None: not loaded
    dev_nodes: tuple[str, ...]
    nvml_driver: str | None  # None: NVML did not initialise (nvml_error says why)
    nvml_cuda: int  # nvmlSystemGetCudaDriverVersion, e.g. 13000 for 13.0; 0 when unknown
    nvml_gpus: int
    nvml_error: str
    toolkit: tuple[str, ...]  # paths of toolkit binaries on PATH
    cdi_specs: tuple[str, ...]  # CDI spec files that name nvidia.com/gpu
    plugin: PluginDirFacts | None  # None: not gathered

    @classmethod
    def from_host(cls, plugin_dir: Path | None, root: Path = Path("/")) -> HostFacts:
        """Read this host's facts (read-only); ``root`` prefixes /sys, /proc, /dev and CDI paths."""
        lspci = _run_lspci()
        driver, cuda, gpus, error = _nvml_facts(lambda: NvmlBackend().inventory())
        return cls(
            pci=_sysfs_nvidia_functions(root / "sys/bus/pci/devices"),
            lspci=lspci,
            module=_module_evidence(root),
            dev_nodes=tuple(sorted(str(Path("/dev") / p.name) for p in (root / "dev").glob("nvidia*"))),
            nvml_driver=driver,
            nvml_cuda=cuda,
            nvml_gpus=gpus,
            nvml_error=error,
            toolkit=tuple(p for name in TOOLKIT_BINARIES if (p := shutil.which(name)) is not None),
            cdi_specs=_cdi_specs(root),
            plugin=None if plugin_dir is None else plugin_dir_facts(plugin_dir),
        )

    @classmethod
    def from_recording(
        cls, host_txt: Path, reading: Path | None, plugin_dir: Path | None = None
    ) -> HostFacts:
        """Facts of a recorded node: ``host.txt`` (sections ``## lspci``, ``## lsmod``, …) and a reading."""
        sections = _sections(host_txt.read_text())
        driver, cuda, gpus, error = (
            _nvml_facts(lambda: RecordedBackend(reading).inventory())
            if reading is not None
            else (None, 0, 0, "no NVML reading recorded")
        )
        module = next((line for line in sections.get("lsmod", []) if line.split()[:1] == ["nvidia"]), None)
        if module is None and any(line.strip() for line in sections.get("/proc/driver/nvidia/version", [])):
            module = "/proc/driver/nvidia/version: " + sections["/proc/driver/nvidia/version"][0].strip()
        which = sections.get("which", [])
        return cls(
            # host.txt records /sys/bus/pci/devices lines (with class, without vendor) under "numa".
            pci=tuple(line for line in sections.get("numa", []) if re.search(r"class=0x03", line)),
            lspci=tuple(line for line in sections.get("lspci", []) if "nvidia" in line.lower()),
            module=module,
            dev_nodes=tuple(
                sorted({m.group(1) for line in sections.get("dev", []) for m in [_DEV.search(line)] if m})
            ),
            nvml_driver=driver,
            nvml_cuda=cuda,
            nvml_gpus=gpus,
            nvml_error=error,
            toolkit=tuple(p for p in which if Path(p.strip()).name in TOOLKIT_BINARIES),
            cdi_specs=tuple(
                line.strip()
                for line in sections.get("cdi", [])
                if line.strip().endswith((".yaml", ".json")) and not line.startswith("ls:")
            ),
            plugin=None if plugin_dir is None else plugin_dir_facts(plugin_dir),
        )


_DEV = re.compile(r"(/dev/nvidia[\w-]*)\s*$")


class Status(enum.StrEnum):
    OK = "ok"
    BROKEN = "broken"
    NOT_CHECKED = "not checked"


@dataclass(frozen=True, slots=True)
class Layer:
    name: str
    status: Status
    evidence: str
    next_command: str = ""


def diagnose(facts: HostFacts, cuda_required: tuple[int, int] | None = None) -> list[Layer]:
    """The layers bottom-up, up to and including the first broken one."""
    layers: list[Layer] = []
    for check in (_pci, _module, _dev_nodes, _nvml, _toolkit, _plugin):
        layer = check(facts)
        layers.append(layer)
        if layer.status is Status.BROKEN:
            return layers
    layers.append(_cuda(facts, cuda_required))
    return layers


def _pci(f: HostFacts) -> Layer:
    name = "PCI device"
    if f.pci or f.lspci:
        evidence = "; ".join([*f.pci, *f.lspci])
        if not f.lspci:
            evidence += " (lspci shows none: not installed or no output; sysfs is the kernel's own view)"
        return Layer(name, Status.OK, evidence)
    return Layer(
        name,
        Status.BROKEN,
        "no NVIDIA function (vendor 0x10de, class 0x03xx) under /sys/bus/pci/devices, none in lspci",
        "lspci -nn -d 10de: ; dmesg | grep -i -e pci -e nvrm  (is the GPU attached to this machine/VM?)",
    )


def _module(f: HostFacts) -> Layer:
    name = "kernel module"
    if f.module:
        return Layer(name, Status.OK, f.module)
    return Layer(
        name,
        Status.BROKEN,
        "nvidia not in /proc/modules, no /sys/module/nvidia, no /proc/driver/nvidia",
        "modprobe nvidia && dmesg | grep -i nvrm  (install the NVIDIA driver if the module is missing)",
    )


def _dev_nodes(f: HostFacts) -> Layer:
    name = "device nodes"
    gpus = [d for d in f.dev_nodes if re.fullmatch(r"/dev/nvidia\d+", d)]
    if gpus and "/dev/nvidiactl" in f.dev_nodes:
        return Layer(name, Status.OK, " ".join(f.dev_nodes))
    return Layer(
        name,
        Status.BROKEN,
        f"found: {' '.join(f.dev_nodes) or 'no /dev/nvidia*'}; need /dev/nvidiactl and /dev/nvidia<N>",
        "nvidia-modprobe -c 0 -u  (or run nvidia-smi once as root, which creates the nodes)",
    )


def _nvml(f: HostFacts) -> Layer:
    name = "NVML"
    if f.nvml_driver is not None and f.nvml_gpus > 0:
        return Layer(
            name, Status.OK, f"driver {f.nvml_driver}, CUDA {_cuda_text(f.nvml_cuda)}, {f.nvml_gpus} GPU(s)"
        )
    evidence = f.nvml_error or f"driver {f.nvml_driver} but NVML lists no GPU"
    return Layer(
        name,
        Status.BROKEN,
        evidence,
        "nvidia-smi  (a 'Driver/library version mismatch' means libnvidia-ml and the module differ: "
        "reboot or reload the module)",
    )


def _toolkit(f: HostFacts) -> Layer:
    name = "container toolkit / CDI"
    if f.toolkit or f.cdi_specs:
        return Layer(name, Status.OK, " ".join([*f.toolkit, *f.cdi_specs]))
    return Layer(
        name,
        Status.BROKEN,
        f"none of {', '.join(TOOLKIT_BINARIES)} on PATH; no CDI spec for nvidia.com/gpu in "
        f"{' or '.join(CDI_DIRS)}",
        "install nvidia-container-toolkit, then: nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml "
        "(or: kubegpu node cdi > /etc/cdi/nvidia.yaml)",
    )


def _plugin(f: HostFacts) -> Layer:
    name = "device plugin"
    if f.plugin is None:
        return Layer(name, Status.NOT_CHECKED, "plugin directory not given (--plugin-dir)")
    p = f.plugin
    run = f"kubegpu node device-plugin --plugin-dir {p.path}  (or: kubectl logs of the node agent DaemonSet)"
    if not p.kubelet_socket:
        return Layer(
            name,
            Status.BROKEN,
            f"no kubelet.sock in {p.path}: kubelet is not running or uses another root dir",
            "systemctl status kubelet; journalctl -u kubelet | grep -i device",
        )
    if not p.plugin_sockets:
        return Layer(name, Status.BROKEN, f"kubelet.sock present, no nvidia-*.sock in {p.path}", run)
    if p.registered is not None and not p.registered:
        return Layer(
            name,
            Status.BROKEN,
            f"{', '.join(p.plugin_sockets)} present but {CHECKPOINT} registers no nvidia.com/* resource",
            run,
        )
    registered = "not known (no checkpoint)" if p.registered is None else ", ".join(p.registered)
    return Layer(name, Status.OK, f"sockets {', '.join(p.plugin_sockets)}; registered: {registered}")


def _cuda(f: HostFacts, required: tuple[int, int] | None) -> Layer:
    name = "CUDA driver vs image"
    if required is None:
        return Layer(name, Status.NOT_CHECKED, "no image CUDA version given (--cuda X.Y)")
    have = (f.nvml_cuda // 1000, f.nvml_cuda % 1000 // 10)
    if have >= required:
        return Layer(
            name, Status.OK, f"driver supports CUDA {have[0]}.{have[1]} >= {required[0]}.{required[1]}"
        )
    return Layer(
        name,
        Status.BROKEN,
        f"driver {f.nvml_driver} supports CUDA up to {have[0]}.{have[1]}; the image needs "
        f"{required[0]}.{required[1]}",
        f"upgrade the driver to one for CUDA {required[0]}.{required[1]}+, or use an image built for "
        f"CUDA <= {have[0]}.{have[1]}",
    )


def _cuda_text(version: int) -> str:
    return f"{version // 1000}.{version % 1000 // 10}" if version else "unknown"


def parse_cuda(text: str) -> tuple[int, int]:
    """``"12.4"`` → ``(12, 4)``; ``ValueError`` otherwise."""
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+)?", text.strip())
    if m is None:
        raise ValueError(f"CUDA version {text!r} is not MAJOR.MINOR")
    return int(m.group(1)), int(m.group(2))


def plugin_dir_facts(path: Path) -> PluginDirFacts:
    """Sockets in the device plugin directory and what kubelet's checkpoint says was registered."""
    sockets = tuple(sorted(p.name for p in path.glob("nvidia-*.sock"))) if path.is_dir() else ()
    registered: tuple[str, ...] | None = None
    try:
        data = json.loads((path / CHECKPOINT).read_text())
        devices = data.get("Data", {}).get("RegisteredDevices") or {}
        registered = tuple(sorted(r for r in devices if r.startswith("nvidia.com/")))
    except (OSError, ValueError, AttributeError):
        registered = None
    return PluginDirFacts(str(path), (path / "kubelet.sock").exists(), sockets, registered)


def _nvml_facts(read: Callable[[], NodeInventory]) -> tuple[str | None, int, int, str]:
    try:
        inv = read()
    except NvmlUnavailable as exc:
        return None, 0, 0, str(exc)
    return inv.driver, inv.cuda_driver, len(inv.devices), ""


def _sysfs_nvidia_functions(devices: Path) -> tuple[str, ...]:
    out = []
    for dev in sorted(devices.glob("*")):
        try:
            vendor = (dev / "vendor").read_text().strip()
            cls = (dev / "class").read_text().strip()
            device = (dev / "device").read_text().strip()
        except OSError:
            continue
        if vendor == NVIDIA_VENDOR and cls.startswith("0x03"):
            out.append(f"/sys/bus/pci/devices/{dev.name} class={cls} device={device}")
    return tuple(out)


def _run_lspci() -> tuple[str, ...]:
    if shutil.which("lspci") is None:
        return ()
    try:
        result = subprocess.run(["lspci", "-nn"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(line for line in result.stdout.splitlines() if "[10de:" in line)


def _module_evidence(root: Path) -> str | None:
    try:
        for line in (root / "proc/modules").read_text().splitlines():
            if line.split()[:1] == ["nvidia"]:
                return f"/proc/modules: {line}"
    except OSError:
        pass
    if (root / "sys/module/nvidia").is_dir():
        return "/sys/module/nvidia exists"
    version = root / "proc/driver/nvidia/version"
    if version.is_file():
        return f"/proc/driver/nvidia/version: {version.read_text().splitlines()[0].strip()}"
    return None


def _cdi_specs(root: Path) -> tuple[str, ...]:
    found = []
    for d in CDI_DIRS:
        for spec in sorted((root / d.lstrip("/")).glob("*")):
            if spec.suffix in (".yaml", ".json"):
                try:
                    text = spec.read_text()
                except OSError:
                    continue
                if "nvidia.com/gpu" in text:
                    found.append(str(Path(d) / spec.name))
    return tuple(found)


def _sections(text: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:].strip(), [])
        else:
            current.append(line)
    return {k: [line for line in v if line.strip()] for k, v in sections.items()}
