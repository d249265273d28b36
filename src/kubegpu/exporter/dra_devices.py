"""Which GPU or MIG device a DRA claim's device is, on the node, without the API server (R13.4).

kubelet's Pod Resources ``List`` names a DRA device by its driver/pool/device triplet and the CDI device
names the driver returned from ``NodePrepareResources`` (``kubegpu.exporter.podresources.ClaimDevice``);
the exporter reads GPUs by UUID. NVIDIA's DRA driver (driver name ``gpu.nvidia.com``,
k8s-dra-driver-gpu ``cmd/gpu-kubelet-plugin``) joins them as follows, and this module follows it back:

* device names are ``gpu-<minor>`` for a whole GPU (``GpuInfo.CanonicalName``: the number is the GPU's
  device minor, ``/dev/nvidia<minor>``, not its NVML index) and ``gpu-<parent minor>-mig-…`` for a MIG
  device, whose tail changed between releases (``gpu-%d-mig-%d-%d-%d`` profile id / placement start /
  size up to 25.8; ``gpu-%d-mig-<profile>-%d-%d`` since 25.12): a MIG name alone cannot be matched to an
  NVML MIG device without placement data the exporter does not read;
* on prepare it writes one transient CDI spec per claim (``CreateClaimSpecFile``) to ``/var/run/cdi``
  (``k8s.gpu.nvidia.com-claim_<claim UID>.yaml``, kind ``k8s.gpu.nvidia.com/claim``), with one CDI
  device per prepared device named ``<claim UID>-<device name>`` (``GetClaimDeviceName``); that device's
  edits carry the device nodes NVIDIA Container Toolkit's nvcdi gives it: ``/dev/nvidia<minor>`` (plus
  DRM nodes) for a GPU, and the parent's ``/dev/nvidia<minor>`` plus the GPU- and compute-instance
  ``/dev/nvidia-caps/nvidia-cap<N>`` nodes for a MIG device.

So a claim device is resolved through its CDI device's nodes: the ``nvidia-cap`` nodes, looked up in the
reading's ``mig_minors`` (``kubegpu.devices.nvcaps``), name one MIG device exactly; otherwise the
``/dev/nvidia<minor>`` node names the GPU. Where no spec holds the CDI device (the exporter cannot read
``/var/run/cdi``) a whole GPU is still resolved from its ``gpu-<N>`` device name, and a MIG device is
left unresolved, never guessed. That name is read as a minor only where it cannot be misread: older
releases (NVIDIA/k8s-dra-driver ``cmd/nvidia-dra-plugin/deviceinfo.go``: ``fmt.Sprintf("gpu-%d",
d.index)``) named a GPU by its NVML index, so the fallback is used only on a node where every GPU's
index equals its minor; elsewhere the device stays unresolved and the exporter says so once. The ResourceSlice's ``uuid`` attribute (what dcgm-exporter reads with an
informer under ``--kubernetes-enable-dra``) would need API-server access, which this face does not have.

Among a claim's CDI names kubelet sends, the device's own is the one ending in ``-<device name>``: since
1.32 kubelet appends each device's CDI names to one list per driver, so later devices carry earlier ones'.

Must not: read anything but the CDI spec directories it is handed; decide which container holds a device
(``attribution`` does).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from kubegpu.devices import NodeInventory
from kubegpu.devices.nvcaps import (
    CAPS_DEVICE_DIR,
    MissingMigCapability,
    mig_capability_nodes,
    parse_mig_minors,
)
from kubegpu.exporter.podresources import ClaimDevice
from kubegpu.model.names import NVIDIA_DRA_DRIVER  # main.go DriverName (dcgm-exporter: DRAGPUDriverName)

log = logging.getLogger(__name__)

_GPU_NAME = re.compile(r"gpu-(\d+)")
_GPU_NODE = re.compile(r"/dev/nvidia(\d+)")
# CDI reads *.json and *.yaml spec files from each directory (container-device-interface pkg/cdi/cache.go).
_SPEC_SUFFIXES = (".json", ".yaml")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml where PyYAML was built with it


@dataclass(frozen=True, slots=True)
class CdiDevices:
    """Device nodes of every CDI device found in the spec directories, by fully qualified name."""

    nodes: dict[str, tuple[str, ...]]  # "<vendor>/<class>=<name>" -> deviceNodes[].path


class CdiSpecs:
    """The CDI spec directories, indexed on demand; a file is parsed again only when its mtime or size
    changed (a scrape every few seconds must not re-parse NVIDIA's full-node spec each time). A spec that
    cannot be read or parsed is skipped with one warning per version of the file naming it and the field,
    as CDI's own cache skips it: the other specs still resolve."""

    def __init__(self, dirs: Iterable[Path]) -> None:
        self.dirs = tuple(dirs)
        self._files: dict[Path, tuple[tuple[int, int], dict[str, tuple[str, ...]]]] = {}
        self.unresolved: set[ClaimDevice] = set()  # claim devices already warned about
        self.said_name_ambiguous = False  # the index-vs-minor warning is logged once per process

    def devices(self) -> CdiDevices:
        seen: dict[Path, tuple[tuple[int, int], dict[str, tuple[str, ...]]]] = {}
        for directory in self.dirs:
            try:
                files = sorted(p for p in directory.iterdir() if p.suffix in _SPEC_SUFFIXES)
            except OSError:
                continue  # no such directory (or not mounted): nothing to index there
            for path in files:
                try:
                    st = path.stat()
                except OSError:
                    continue  # removed since the listing (a claim unprepared)
                version = (st.st_mtime_ns, st.st_size)
                cached = self._files.get(path)
                if cached is None or cached[0] != version:
                    try:
                        cached = (version, _spec_devices(path))
                    except (OSError, ValueError, yaml.YAMLError) as exc:
                        log.warning("CDI spec %s skipped: %s", path, exc)
                        cached = (version, {})
                seen[path] = cached
        self._files = seen
        nodes: dict[str, tuple[str, ...]] = {}
        for _, devices in seen.values():
            nodes.update(devices)
        return CdiDevices(nodes)


def _spec_devices(path: Path) -> dict[str, tuple[str, ...]]:
    text = path.read_text(encoding="utf-8")
    raw = json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=_LOADER)
    if not isinstance(raw, dict) or not isinstance(raw.get("kind"), str) or "/" not in raw["kind"]:
        raise ValueError("kind: missing or not <vendor>/<class>")
    devices = raw.get("devices")
    if not isinstance(devices, list):
        raise ValueError("devices: missing or not a list")
    out: dict[str, tuple[str, ...]] = {}
    for i, dev in enumerate(devices):
        name = dev.get("name") if isinstance(dev, dict) else None
        if not isinstance(name, str) or not name:
            raise ValueError(f"devices[{i}].name: missing or not a string")
        edits = dev.get("containerEdits") or {}
        nodes = (edits.get("deviceNodes") or []) if isinstance(edits, dict) else None
        if not isinstance(nodes, list) or not all(isinstance(n, dict) for n in nodes):
            raise ValueError(f"devices[{i}].containerEdits.deviceNodes: not a list of device nodes")
        paths = [n.get("path") for n in nodes]
        if not all(isinstance(p, str) for p in paths):
            raise ValueError(f"devices[{i}].containerEdits.deviceNodes: path not a string")
        out[f"{raw['kind']}={name}"] = tuple(str(p) for p in paths)
    return out


def own_cdi_names(claim: ClaimDevice) -> tuple[str, ...]:
    """The CDI names of this device itself: those ending ``-<device name>``; the only one if just one."""
    own = tuple(n for n in claim.cdi_devices if n.partition("=")[2].endswith(f"-{claim.device}"))
    return own or (claim.cdi_devices if len(claim.cdi_devices) == 1 else ())


def resolve(inv: NodeInventory, claim: ClaimDevice, cdi: CdiDevices) -> str | None:
    """The GPU or MIG UUID the claim device is, or None (another driver, or not resolvable exactly)."""
    if claim.driver != NVIDIA_DRA_DRIVER:
        return None
    specs = [cdi.nodes[n] for n in own_cdi_names(claim) if n in cdi.nodes]
    if specs:
        return _by_nodes(inv, {p for nodes in specs for p in nodes})
    # No spec to read: a whole GPU's name carries its minor (its NVML index in older releases: read only
    # where the two agree on every GPU); a MIG device's does not identify it.
    m = _GPU_NAME.fullmatch(claim.device)
    return _gpu_by_minor(inv, {int(m[1])}) if m and index_is_minor(inv) else None


def index_is_minor(inv: NodeInventory) -> bool:
    """Every GPU's NVML index equals its device minor: ``gpu-<N>`` names the same GPU read either way."""
    return all(g.index == g.device_minor for g in inv.devices)


def _by_nodes(inv: NodeInventory, nodes: set[str]) -> str | None:
    minors = {int(m[1]) for p in nodes if (m := _GPU_NODE.fullmatch(p))}
    if not any(p.startswith(f"{CAPS_DEVICE_DIR}/") for p in nodes):
        return _gpu_by_minor(inv, minors)
    caps = parse_mig_minors(inv.mig_minors) if inv.mig_minors is not None else {}
    for g in inv.devices:
        if g.device_minor not in minors:
            continue
        for mig in g.mig_devices:
            try:
                gi_node, ci_node = mig_capability_nodes(caps, g.device_minor, mig.gi_id, mig.ci_id)
            except MissingMigCapability:
                continue
            if gi_node in nodes and ci_node in nodes:
                return mig.uuid
    return None


def _gpu_by_minor(inv: NodeInventory, minors: set[int]) -> str | None:
    if len(minors) != 1:
        return None  # a CDI device for one GPU has exactly one /dev/nvidia<minor>
    hits = [g.uuid for g in inv.devices if g.device_minor in minors]
    return hits[0] if len(hits) == 1 else None


def resolve_all(
    inv: NodeInventory, claims: Iterable[ClaimDevice], specs: CdiSpecs
) -> Mapping[ClaimDevice, str | None]:
    """``resolve`` for each NVIDIA claim device; the CDI directories are read only when there is one."""
    ours = [c for c in claims if c.driver == NVIDIA_DRA_DRIVER]
    if not ours:
        return {}
    cdi = specs.devices()
    out = {c: resolve(inv, c, cdi) for c in ours}
    if not specs.said_name_ambiguous and not index_is_minor(inv):
        by_name = [c for c, uuid in out.items() if uuid is None and _GPU_NAME.fullmatch(c.device)]
        if by_name and not any(n in cdi.nodes for c in by_name for n in own_cdi_names(c)):
            specs.said_name_ambiguous = True
            log.warning(
                "no CDI spec of NVIDIA's DRA driver is readable (%s) and this node's GPU indexes differ from "
                "their device minors: a device name gpu-<N> may be either (older driver releases used the "
                "index), so DRA devices named that way are left without pod labels",
                ", ".join(str(d) for d in specs.dirs) or "no directory given",
            )
    specs.unresolved &= out.keys()  # forget claims that are gone: the set stays as small as the node's
    for c, uuid in out.items():
        if uuid is None and c not in specs.unresolved:  # said once per claim device, not per scrape
            specs.unresolved.add(c)
            log.warning(
                "DRA device %s/%s/%s of claim %s/%s (pod %s/%s) matches no GPU on this node: no pod labels",
                c.driver, c.pool, c.device, c.claim_namespace, c.claim_name, c.namespace, c.pod,
            )  # fmt: skip
    return out
