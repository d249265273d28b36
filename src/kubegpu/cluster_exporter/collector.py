"""The cluster exporter's Prometheus collector: pool-level GPU series computed at scrape time (R13, R14.1, R16).

``ClusterCollector`` implements client_python's custom-collector protocol over a snapshot source (a file,
the demo, or the informer-fed store of ``watch``) and an engine factory. Each scrape that finds the last
computation older than ``ttl_s`` (default 10 s) takes a snapshot, builds the scheduling core's engine
and ``measure``s it; scrapes within the TTL (HA Prometheus pairs, retries) share that result, since a
1,000-node cluster takes a noticeable fraction of a second to recompute.

Series (labels: ``pool`` = the value of the configured pool label, ``resource`` where per GPU
resource, ``node`` where per node):

* ``kubegpu_pool_nodes``, ``kubegpu_pool_gpus``, ``kubegpu_pool_gpus_allocated``, ``_idle``,
  ``_unhealthy``, ``_stranded``, ``kubegpu_pool_largest_idle_block_gpus``;
* ``kubegpu_pool_fragmentation_gpus`` and ``kubegpu_pool_fragmentation_ratio`` (FGD; absent when the
  cluster has no GPU pod shapes, the ratio also when the pool has no free GPU);
* ``kubegpu_pool_devices{resource}``, ``kubegpu_pool_devices_requested{resource}``;
* ``kubegpu_node_gpus_idle``, ``kubegpu_node_gpus_stranded``, ``kubegpu_node_fragmentation_gpus``,
  ``kubegpu_node_accepts_pods``;
* ``kubegpu_pending_gpu_pods{resource}``;
* ``kubegpu_fragmentation_skipped_pods`` (GPU pods whose request is no GPU shape, left out of the
  fragmentation series; the log names them and why, once per change of that set);
* ``kubegpu_pool_dra_devices{pool,driver}``, ``kubegpu_pool_dra_devices_allocated{pool,driver}``,
  ``kubegpu_pool_dra_devices_free{pool,driver}`` (DRA: devices the ResourceSlices publish, those
  allocated claims hold, those still allocatable: a device whose pool's shared counters its allocated
  devices take, a full GPU beside its allocated MIG device, is neither; absent without ResourceSlices);
* ``kubegpu_cluster_exporter_source_up``, ``kubegpu_cluster_exporter_rejected_objects``.

A snapshot that cannot be taken (informers not yet synced, an unreadable file) or measured leaves only
``source_up`` 0 and makes ``/healthz`` unhealthy; the server keeps serving.

Must not: compute the numbers (``measure``) or encode them (``kubegpu.exporter.exposition``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client.metrics_core import Metric

from kubegpu.cluster_exporter.measure import UNADVERTISED, ClusterMeasure, measure
from kubegpu.explain.engine import Engine
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.gpu_shapes import MILLI
from kubegpu.ttl_cache import TtlCache

log = logging.getLogger(__name__)

DEFAULT_TTL_S = 10.0
POOL, RESOURCE, NODE, DRIVER = "pool", "resource", "node", "driver"

# name -> HELP
HELP = {
    "kubegpu_pool_nodes": "GPU nodes in the pool (nodes with a GPU resource or GPU labels).",
    "kubegpu_pool_gpus": "Physical GPUs on the pool's nodes, from the device model.",
    "kubegpu_pool_gpus_allocated": "GPUs of the pool with at least one device (whole GPU, MIG device or replica) held by a pod.",
    "kubegpu_pool_gpus_idle": "Healthy GPUs of the pool with no device held by any pod.",
    "kubegpu_pool_gpus_unhealthy": "GPUs of the pool with a device the device plugin reports Unhealthy.",
    "kubegpu_pool_gpus_stranded": "Idle GPUs on nodes that take no new pod (cordoned, NotReady, or out of pod slots, CPU or memory).",
    "kubegpu_pool_largest_idle_block_gpus": "Most idle GPUs on one node of the pool that takes new pods: the largest single-node request that fits now.",
    "kubegpu_pool_fragmentation_gpus": "FGD fragment amount (Weng et al., ATC '23): free GPU the cluster's popular GPU pod shapes cannot use, popularity-weighted, in GPUs.",
    "kubegpu_pool_fragmentation_ratio": "FGD fragment amount divided by the pool's free GPU.",
    "kubegpu_pool_devices": "Devices of a GPU resource the pool's nodes advertise as allocatable.",
    "kubegpu_pool_devices_requested": "Devices of a GPU resource that pods placed on the pool's nodes request.",
    "kubegpu_node_gpus_idle": "Healthy GPUs of the node with no device held by any pod.",
    "kubegpu_node_gpus_stranded": "Idle GPUs of the node when it takes no new pod, else 0.",
    "kubegpu_node_fragmentation_gpus": "FGD fragment amount of the node, in GPUs.",
    "kubegpu_node_accepts_pods": "1 when the node takes new pods (schedulable, Ready, pod slots, CPU and memory left), else 0.",
    "kubegpu_pending_gpu_pods": f'Pending pods that ask for a GPU resource (resource="{UNADVERTISED}": one no node advertises; resource="": pods that only tolerate the GPU taint or get GPUs through DRA claims).',
    "kubegpu_fragmentation_skipped_pods": "GPU pods left out of the fragmentation series: their kubegpu.io/gpu-milli request with annotation kubegpu.io/gpu-count is no GPU shape (the exporter's log names them).",
    "kubegpu_pool_dra_devices": "Devices a DRA driver publishes in the ResourceSlices of the pool's nodes (newest pool generation).",
    "kubegpu_pool_dra_devices_allocated": "DRA devices of the pool held by an allocated ResourceClaim (admin access takes none).",
    "kubegpu_pool_dra_devices_free": "DRA devices of the pool no allocated ResourceClaim holds and whose shared counters (partitionable devices) the allocated devices leave.",
    "kubegpu_cluster_exporter_source_up": "1 when the exporter's last snapshot of the cluster was taken and measured, else 0.",
    "kubegpu_cluster_exporter_rejected_objects": "Objects of the last snapshot that could not be parsed (`kubegpu diagnose` on the same source names them).",
}


@dataclass(slots=True)
class _Result:
    families: list[Metric]
    problem: str = ""


class ClusterCollector:
    """client_python custom collector over a cluster; thread-safe, measures at most once per ``ttl_s``."""

    def __init__(
        self,
        snapshot: Callable[[], ClusterSnapshot],
        engine: Callable[[ClusterSnapshot], Engine],
        pool_label: str,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._snapshot = snapshot
        self._engine = engine
        self._pool_label = pool_label
        self._cache = TtlCache(self._read, ttl_s, clock)
        self._said: tuple[tuple[str, str], ...] = ()  # the skipped pods last logged

    def collect(self) -> Iterator[Metric]:
        return iter(self._cache.get().families)

    def health(self) -> tuple[bool, str]:
        problem = self._cache.get().problem
        return (not problem, problem or "ok")

    def _read(self, _now: float) -> _Result:
        up = _family("kubegpu_cluster_exporter_source_up")
        try:
            snap = self._snapshot()
            result = measure(self._engine(snap), self._pool_label)
        except (
            Exception
        ) as exc:  # any failure is reported on /healthz and source_up; the server keeps serving
            log.warning("cluster snapshot failed: %s", exc)
            up.add_sample(up.name, {}, 0)
            return _Result([up], problem=f"cluster snapshot failed: {exc}")
        up.add_sample(up.name, {}, 1)
        if result.unshaped != self._said:  # said once per change, not on every computation
            self._said = result.unshaped
            for key, why in result.unshaped:
                log.warning("fragmentation leaves out pod %s: %s", key, why)
        families = families_of(result)
        rejected = _family("kubegpu_cluster_exporter_rejected_objects")
        rejected.add_sample(rejected.name, {}, result.rejected_objects)
        return _Result([f for f in families if f.samples] + [up, rejected])


def _family(name: str) -> Metric:
    return Metric(name, HELP[name], "gauge")


def families_of(m: ClusterMeasure) -> list[Metric]:
    """The metric families for one measurement (empty families are left out by the caller)."""
    fams = {name: _family(name) for name in HELP if not name.startswith("kubegpu_cluster_exporter")}

    def put(name: str, labels: dict[str, str], value: float) -> None:
        fams[name].add_sample(name, labels, value)

    for p in m.pools:
        s, pool = p.summary, {POOL: p.summary.pool}
        put("kubegpu_pool_nodes", pool, s.nodes)
        put("kubegpu_pool_gpus", pool, s.gpus)
        put("kubegpu_pool_gpus_allocated", pool, s.held)
        put("kubegpu_pool_gpus_idle", pool, s.idle)
        put("kubegpu_pool_gpus_unhealthy", pool, s.unhealthy)
        put("kubegpu_pool_gpus_stranded", pool, s.stranded)
        put("kubegpu_pool_largest_idle_block_gpus", pool, s.largest_idle_block)
        if p.fragment_milli is not None:
            put("kubegpu_pool_fragmentation_gpus", pool, p.fragment_milli / MILLI)
            if p.free_milli:
                put("kubegpu_pool_fragmentation_ratio", pool, p.fragment_milli / p.free_milli)
    for (pool_name, resource), (allocatable, requested) in sorted(m.devices.items()):
        labels = {POOL: pool_name, RESOURCE: resource}
        put("kubegpu_pool_devices", labels, allocatable)
        put("kubegpu_pool_devices_requested", labels, requested)
    for n in m.nodes:
        labels = {POOL: n.pool, NODE: n.name}
        put("kubegpu_node_gpus_idle", labels, n.gpus_idle)
        put("kubegpu_node_gpus_stranded", labels, n.gpus_stranded)
        put("kubegpu_node_accepts_pods", labels, 1 if n.accepts_pods else 0)
        if n.fragmentation is not None:
            put("kubegpu_node_fragmentation_gpus", labels, n.fragmentation.fragment_milli / MILLI)
    for (pool_name, driver), (total, allocated, free) in sorted(m.dra.items()):
        labels = {POOL: pool_name, DRIVER: driver}
        put("kubegpu_pool_dra_devices", labels, total)
        put("kubegpu_pool_dra_devices_allocated", labels, allocated)
        put("kubegpu_pool_dra_devices_free", labels, free)
    put("kubegpu_fragmentation_skipped_pods", {}, len(m.unshaped))  # (0 is a value)
    # 0 for every GPU resource the cluster has: no Pending pod is a value, not a missing one.
    for resource in sorted({r for _, r in m.devices} | set(m.pending)):
        put("kubegpu_pending_gpu_pods", {RESOURCE: resource}, m.pending.get(resource, 0))
    return list(fams.values())
