"""The Prometheus collector: one consistent snapshot of a node's GPUs per scrape, cached briefly (R13, R16).

``GpuCollector`` implements client_python's custom-collector protocol (``collect()`` yields metric
families) over a ``kubegpu.node`` discovery backend (NVML or a recorded reading). It reads at scrape
time, at most once per ``ttl_s`` (default 2 s): Prometheus servers scraping in HA pairs, or a scrape
retried after a timeout, get the same snapshot instead of a second NVML and kubelet round trip.

Series, with dcgm-exporter's labels on every one (``gpu``, ``UUID``, ``pci_bus_id``, ``device``,
``modelName``, ``GPU_I_PROFILE``/``GPU_I_ID`` on MIG devices, ``Hostname`` when set (4.5.3-4.8.2's
spelling: dcgm-exporter PR #655 renamed it ``hostname``, released in 4.6.0-4.8.3); on DCGM series also
``DCGM_FI_DRIVER_VERSION``, the reading's driver version, and on ``DCGM_FI_DEV_XID_ERRORS`` ``err_code`` and
``err_msg``, dcgm-exporter's text for the code, ``xid_text``):

* a GPU with MIG devices is exported through them only, as dcgm-exporter's default ``-d f`` monitors its
  GPU instances and not the GPU: each MIG device's series carry its own framebuffer and the GPU's value of
  every device-wide field (clocks, temperatures, power, energy, PCIe, XID, ECC, remapped rows), the same on
  each instance, and no utilisation (``values.mig_values``); the GPU itself keeps its ``kubegpu_*``
  series only.

* the DCGM fields of ``kubegpu.exporter.values.EXPORTED_FIELDS`` (values: ``kubegpu.exporter.values``). As with
  dcgm-exporter's ``--kubernetes-virtual-gpus`` mode, a device that several containers hold (time-slicing
  replicas) gets one copy of each series per container, with ``pod``, ``namespace``, ``container`` and
  ``vgpu`` (the replica number); such copies repeat one device value and must not be summed. As in that
  mode, a device no container holds keeps its series (without pod labels).
  Not modelled: that mode's per-process series of dcgm-exporter 4.5.3-4.8.2 (PR #594,
  transformation/kubernetes.go ``createPerProcessMetrics``). For ``DCGM_FI_DEV_FB_USED`` and
  ``DCGM_FI_DEV_GPU_UTIL`` only, it keeps the device's series without pod labels and gives each holder, in
  place of the copy, a series with ``pod``, ``namespace``, ``container``, ``pod_uid`` and ``vgpu`` valued at
  the sum over that pod's processes on the device (FB_USED: each process's NVML memory in whole MiB; GPU_UTIL:
  its NVML SM utilisation; 0 for a pod with no process; on a MIG device, memory only, from its own process
  list). Here those two fields are copied with the device's value like every other field (as 4.5.2-4.8.1
  did), and the per-process numbers are ``kubegpu_pod_gpu_memory_used_bytes`` and
  ``kubegpu_pod_gpu_sm_utilization_percent``: per container rather than per pod, in bytes, no series for a
  container without a process, and on a MIG GPU attributed to the GPU, not to the MIG device.
  A device a container got through a DRA claim (Pod Resources ``dynamic_resources``, mapped to its UUID
  by ``dra_devices``) gets the same pod labels plus dcgm-exporter's ``dra_claim_name``,
  ``dra_claim_namespace``, ``dra_driver_name``, ``dra_pool_name`` and ``dra_device_name``; a claimed MIG
  device labels the MIG device's series (as a device plugin's MIG device does), not its parent's.
* kubegpu's own (``kubegpu_*``), which dcgm-exporter does not give (per-pod ones: not in every mode):
  ``kubegpu_pod_gpu_memory_used_bytes`` and ``kubegpu_pod_gpu_sm_utilization_percent`` (per container,
  from NVML per-process memory and utilisation samples, PID -> cgroup -> pod),
  ``kubegpu_gpu_unattributed_memory_used_bytes``, ``kubegpu_gpu_allocated_containers``,
  ``kubegpu_gpu_processes``, ``kubegpu_gpu_seconds_since_process`` (allocated-but-idle: time since a
  compute process was last seen, counted from the exporter's start), ``kubegpu_gpu_memory_pressure_ratio``
  (time-sliced GPUs: processes' memory / card memory), ``kubegpu_gpu_healthy``, and
  ``kubegpu_exporter_source_up{source}`` for each input (``devices``, ``pod-resources``, ``kubelet-pods``,
  ``nvml-counters``).

An input that fails does not fail the scrape: its ``source_up`` is 0 and the series that need it are left
out (pod labels, per-container memory). Only a failed device reading makes ``/healthz`` unhealthy.

Must not: decide device health (``kubegpu.devices``) or format the exposition (``exposition``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.metrics_core import Metric

from kubegpu.devices import GpuDevice, Health, NodeInventory
from kubegpu.devices import dcgm_fields as F
from kubegpu.devices.cdi import CDI_DIRS
from kubegpu.devices.gpu_series import (
    ALLOCATED,
    HEALTHY,
    POD_MEMORY,
    POD_SM,
    PRESSURE,
    PROCESSES,
    SINCE_PROCESS,
    SOURCE_UP,
    UNATTRIBUTED_MEMORY,
)
from kubegpu.exporter.attribution import Holder, holders_by_device, per_container, process_memory
from kubegpu.exporter.cgroups import owner_of_pid
from kubegpu.exporter.dra_devices import CdiSpecs, resolve_all
from kubegpu.exporter.kubelet_pods import ContainerRef, PodIndex
from kubegpu.exporter.podresources import PodResourcesError, list_pod_resources
from kubegpu.exporter.process_util import latest_sm
from kubegpu.exporter.values import EXPORTED_FIELDS, Counters, gpu_values, mig_values
from kubegpu.exporter.xid_text import xid_text
from kubegpu.exporter.xids import XidLog
from kubegpu.node.discovery import DiscoveryBackend
from kubegpu.ttl_cache import TtlCache

log = logging.getLogger(__name__)

DEFAULT_TTL_S = 2.0
# dcgm-exporter 4.5.3-4.8.2 labels: default-counters.csv's label field, gpu_collector.go's XID attributes
LABEL_DRIVER_VERSION = "DCGM_FI_DRIVER_VERSION"
LABEL_ERR_CODE = "err_code"
LABEL_ERR_MSG = "err_msg"


@dataclass(frozen=True, slots=True)
class PodSources:
    """Where pod attribution comes from: kubelet's Pod Resources socket, ``/proc`` and kubelet's pods."""

    socket: Path
    pod_index: Callable[[], PodIndex] | None = None
    proc_root: Path = Path("/proc")
    extra_resources: tuple[str, ...] = ()
    # Where DRA drivers' per-claim CDI specs are (read to map a claim's device to its UUID; dra_devices).
    cdi_dirs: tuple[Path, ...] = tuple(Path(d) for d in CDI_DIRS)


@dataclass(frozen=True, slots=True)
class _Target:
    """One device a series is about: a whole GPU or a MIG device, with its dcgm-exporter labels."""

    uuid: str
    gpu: GpuDevice
    labels: dict[str, str]
    values: dict[str, float]
    health: Health

    @property
    def dcgm(self) -> bool:
        """Whether it is a DCGM entity with series of its own: not a GPU with MIG devices, which dcgm-exporter's
        default ``-d f`` monitors through its GPU instances only (device_monitoring.go monitorAllGPUInstances)."""
        return self.uuid != self.gpu.uuid or not self.gpu.mig_devices


@dataclass(slots=True)
class _Snapshot:
    families: list[Metric]
    problem: str = ""  # why the device reading failed; "" when it succeeded


@dataclass(slots=True)
class _IdleClock:
    """When each GPU last had a compute process, on the collector's clock."""

    started: float
    last_process: dict[str, float] = field(default_factory=dict)

    def seconds_since_process(self, g: GpuDevice, now: float) -> float:
        if g.processes:
            self.last_process[g.uuid] = now
        return now - self.last_process.get(g.uuid, self.started)


class GpuCollector:
    """client_python custom collector over one node's GPUs; thread-safe, reads at most once per ``ttl_s``."""

    def __init__(
        self,
        backend: DiscoveryBackend,
        *,
        counters: Callable[[], Counters] | None = None,
        xids: XidLog | None = None,
        pods: PodSources | None = None,
        hostname: str = "",
        ttl_s: float = DEFAULT_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._backend = backend
        self._counters = counters
        self._xids = xids
        self._pods = pods
        self._hostname = hostname
        self._cache = TtlCache(self._read, ttl_s, clock)
        self._idle = _IdleClock(started=clock())
        self._pod_index = PodIndex()
        self._pod_index_ok = True  # no read of kubelet's /pods has failed (none may have been needed yet)
        self._cdi = CdiSpecs(pods.cdi_dirs if pods is not None else ())

    def collect(self) -> Iterator[Metric]:
        return iter(self._cache.get().families)

    def health(self) -> tuple[bool, str]:
        """(healthy, reason): healthy when the latest device reading succeeded."""
        problem = self._cache.get().problem
        return (not problem, problem or "ok")

    def _read(self, now: float) -> _Snapshot:
        up = Metric(SOURCE_UP[0], SOURCE_UP[1], "gauge")
        try:
            inv = self._backend.inventory()
            # Validated with the reading: a malformed proc_util fails it, naming file, device and field.
            process_sm: dict[str, dict[int, float]] = {
                g.uuid: latest_sm(g, source=inv.source) for g in inv.devices
            }
        except Exception as exc:  # any failure of the source is reported, the server keeps serving
            log.warning("device reading failed: %s", exc)
            up.add_sample(SOURCE_UP[0], {"source": "devices"}, 0)
            return _Snapshot([up], problem=f"device reading failed: {exc}")
        up.add_sample(SOURCE_UP[0], {"source": "devices"}, 1)
        counters: dict[str, dict[str, float]] = {}
        if self._counters is not None:
            try:
                counters.update({k: dict(v) for k, v in self._counters().items()})
                up.add_sample(SOURCE_UP[0], {"source": "nvml-counters"}, 1)
            except Exception as exc:  # extra counters are optional; their series are left out
                log.warning("NVML counters failed: %s", exc)
                up.add_sample(SOURCE_UP[0], {"source": "nvml-counters"}, 0)
        if self._xids is not None:
            for uuid, values in self._xids.counters(inv).items():
                counters.setdefault(uuid, {}).update(values)
            inv = self._xids.apply(inv)
        holders, owner = self._attribution(inv, up)
        targets = self._targets(inv, counters)
        families = _dcgm_families(targets, holders, inv.driver)
        families += self._kubegpu_families(inv, targets, holders, owner, process_sm, now)
        families.append(up)
        # A family with no series (no shared GPU, no pod process) is left out, as dcgm-exporter leaves out fields.
        return _Snapshot([f for f in families if f.samples])

    def _attribution(
        self, inv: NodeInventory, up: Metric
    ) -> tuple[dict[str, tuple[Holder, ...]] | None, Callable[[int], ContainerRef | None] | None]:
        """Holders per device (None without pod resources) and the PID -> container lookup (None without)."""
        if self._pods is None:
            return None, None
        pods = self._pods
        holders: dict[str, tuple[Holder, ...]] | None = None
        try:
            listing = list_pod_resources(pods.socket)
            claims = resolve_all(inv, listing.claim_devices, self._cdi)
            holders = holders_by_device(inv, listing.assignments, pods.extra_resources, claims)
            up.add_sample(SOURCE_UP[0], {"source": "pod-resources"}, 1)
        except PodResourcesError as exc:
            log.warning("%s", exc)
            up.add_sample(SOURCE_UP[0], {"source": "pod-resources"}, 0)
        if pods.pod_index is None:
            return holders, None
        cgroups = {p.pid: owner_of_pid(pods.proc_root, p.pid) for g in inv.devices for p in g.processes}
        wanted = {(cg.pod_uid, cg.container_id) for cg in cgroups.values() if cg is not None}
        # kubelet's /pods is the costly input (a PodList of every pod on the node): read it only when a GPU
        # process belongs to a pod or container the last answer did not name, i.e. on a new or restarted pod.
        known = self._pod_index
        if any(uid not in known.pods or (cid and cid not in known.containers) for uid, cid in wanted):
            try:
                self._pod_index = pods.pod_index()
                self._pod_index_ok = True
            except Exception as exc:  # without names, per-container memory is left out
                log.warning("kubelet pods failed: %s", exc)
                self._pod_index_ok = False
        up.add_sample(SOURCE_UP[0], {"source": "kubelet-pods"}, 1 if self._pod_index_ok else 0)
        if not self._pod_index_ok:
            return holders, None
        index = self._pod_index

        def owner(pid: int) -> ContainerRef | None:
            cg = cgroups.get(pid)
            return index.container(cg.pod_uid, cg.container_id) if cg else None

        return holders, owner

    def _targets(self, inv: NodeInventory, counters: Counters) -> list[_Target]:
        out: list[_Target] = []
        for g in inv.devices:
            base = {
                F.LABEL_GPU: str(g.index),
                F.LABEL_UUID: g.uuid,
                F.LABEL_PCI_BUS_ID: g.pci_bus_id,
                F.LABEL_DEVICE: f"nvidia{g.index}",
                F.LABEL_MODEL: g.name,
            }
            host = {F.LABEL_HOSTNAME: self._hostname} if self._hostname else {}
            values = gpu_values(g, counters)
            out.append(_Target(g.uuid, g, base | host, values, g.health))
            for m in g.mig_devices:
                # dcgm-exporter labels a MIG device with its parent's gpu/UUID plus the GPU-instance profile and id.
                mig = {F.LABEL_MIG_PROFILE: m.profile, F.LABEL_MIG_ID: str(m.gi_id)}
                out.append(
                    _Target(m.uuid, g, base | mig | host, mig_values(m.uuid, values, counters), m.health)
                )
        return out

    def _kubegpu_families(
        self,
        inv: NodeInventory,
        targets: list[_Target],
        holders: dict[str, tuple[Holder, ...]] | None,
        owner: Callable[[int], ContainerRef | None] | None,
        process_sm: dict[str, dict[int, float]],
        now: float,
    ) -> list[Metric]:
        gpu_labels = {t.uuid: t.labels for t in targets if t.uuid == t.gpu.uuid}
        healthy = Metric(*HEALTHY, "gauge")
        for t in targets:
            healthy.add_sample(HEALTHY[0], t.labels, 1 if t.health is Health.HEALTHY else 0)
        processes = Metric(*PROCESSES, "gauge")
        since = Metric(*SINCE_PROCESS, "gauge")
        for g in inv.devices:
            processes.add_sample(PROCESSES[0], gpu_labels[g.uuid], len(g.processes))
            since.add_sample(SINCE_PROCESS[0], gpu_labels[g.uuid], self._idle.seconds_since_process(g, now))
        families = [healthy, processes, since]
        if holders is not None:
            allocated = Metric(*ALLOCATED, "gauge")
            pressure = Metric(*PRESSURE, "gauge")
            # Distinct containers per device: one container can hold several replicas of it (<uuid>::0, ::3).
            containers = {uuid: len({h.ref for h in held}) for uuid, held in holders.items()}
            for t in targets:
                allocated.add_sample(ALLOCATED[0], t.labels, containers.get(t.uuid, 0))
            for g in inv.devices:
                if containers.get(g.uuid, 0) > 1:  # shared by several containers
                    used = sum(p.used_memory or 0 for p in g.processes)
                    pressure.add_sample(PRESSURE[0], gpu_labels[g.uuid], used / g.memory_total)
            families += [allocated, pressure]
        memory = per_container(process_memory(inv), owner if owner is not None else lambda _pid: None)
        if owner is not None:
            pod_memory = Metric(*POD_MEMORY, "gauge")
            for (uuid, ref), used_bytes in sorted(memory.by_container.items()):
                pod_memory.add_sample(POD_MEMORY[0], gpu_labels[uuid] | _pod_labels(ref), used_bytes)
            pod_sm = Metric(*POD_SM, "gauge")
            sm = per_container(process_sm, owner)
            for (uuid, ref), percent in sorted(sm.by_container.items()):
                pod_sm.add_sample(POD_SM[0], gpu_labels[uuid] | _pod_labels(ref), percent)
            families += [pod_memory, pod_sm]
        unattributed = Metric(*UNATTRIBUTED_MEMORY, "gauge")
        for uuid, loose_bytes in memory.unattributed.items():
            unattributed.add_sample(UNATTRIBUTED_MEMORY[0], gpu_labels[uuid], loose_bytes)
        families.append(unattributed)
        return families


def _dcgm_families(
    targets: list[_Target], holders: dict[str, tuple[Holder, ...]] | None, driver: str
) -> list[Metric]:
    # dcgm-exporter's render template (rendermetrics/render_metrics.go): the fixed labels, then the label
    # fields of default-counters.csv (DCGM_FI_DRIVER_VERSION), then the attributes (err_*, pod labels).
    driver_label = {LABEL_DRIVER_VERSION: driver} if driver else {}
    entities = [t for t in targets if t.dcgm]
    families = []
    for f in EXPORTED_FIELDS:
        family = Metric(f.name, f.help, f.type.value)
        for t in entities:
            value = t.values.get(f.name)
            if value is None:
                continue  # NVML cannot give this field on this device: absent, not 0
            base = t.labels | driver_label | (_xid_labels(value) if f is F.XID_ERRORS else {})
            held = (holders or {}).get(t.uuid, ())
            for labels in [base | _holder_labels(h) for h in held] or [base]:
                family.add_sample(f.name, labels, value)
        if family.samples:
            families.append(family)
    return families


def _xid_labels(value: float) -> dict[str, str]:
    """gpu_collector.go ``toMetric``: the last XID's code and dcgm-exporter's text for it."""
    code = int(value)
    return {LABEL_ERR_CODE: str(code), LABEL_ERR_MSG: xid_text(code)}


def _pod_labels(ref: ContainerRef) -> dict[str, str]:
    return {F.LABEL_POD: ref.pod, F.LABEL_NAMESPACE: ref.namespace, F.LABEL_CONTAINER: ref.container}


def _holder_labels(h: Holder) -> dict[str, str]:
    """dcgm-exporter's pod labels, plus ``vgpu`` for a replica or its ``dra_*`` labels for a claim's device."""
    labels = _pod_labels(h.ref)
    if h.replica:
        labels[F.LABEL_VGPU] = h.replica
    if h.claim is not None:
        labels |= {
            F.LABEL_DRA_CLAIM_NAME: h.claim.claim_name,
            F.LABEL_DRA_CLAIM_NAMESPACE: h.claim.claim_namespace,
            F.LABEL_DRA_DRIVER_NAME: h.claim.driver,
            F.LABEL_DRA_POOL_NAME: h.claim.pool,
            F.LABEL_DRA_DEVICE_NAME: h.claim.device,
        }
    return labels
