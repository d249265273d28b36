"""Scrape latency of ``kubegpu cluster-exporter`` on the openb cluster (1,213 GPU nodes of Alibaba's trace).

Cluster: the trace's GPU nodes (``openb_node_list_gpu_node.csv``), each in a pool named after its GPU
model (label ``accelerator.example.com/pool``), and the default pod list's workload drawn as the FGD
artifact draws it (``kubegpu.sim.packing.fgd_workload``) up to ``--fill`` of the GPU capacity, placed one
pod at a time by the FGD packing policy over the scheduling core; pods that fit nowhere stay Pending.
The result is written as raw API objects, as the API server would send them.

Each timed scrape goes the whole way with the cache off (``ttl_s=0``), as the first scrape after the
cache expires does with ``--kube``: ``build_snapshot`` over the raw objects (what ``WatchedCluster``
hands over), the engine (device models, cluster state), the report's pool summary, FGD's fragment
amount, the families, the text encoding and the HTTP server, to a urllib client. A second run times
scrapes served from the cache (the default 10 s TTL), which is what every other scrape costs.

    python benchmarks/bench_cluster_exporter.py [--scrapes 30] [--fill 0.9]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
from prometheus_client.registry import CollectorRegistry

from kubegpu.cluster_exporter.collector import ClusterCollector
from kubegpu.cluster_exporter.measure import measure
from kubegpu.explain.engine import Engine
from kubegpu.exporter.server import start_server
from kubegpu.model.gpu_facts import DEFAULT_POOL_LABEL, GPU_PRODUCT_LABEL
from kubegpu.model.names import GPU_COUNT_ANNOTATION
from kubegpu.model.resources import NVIDIA_GPU
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.assembly import SchedulerSpec, assemble
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.gpu_ledger import GpuShareLedger
from kubegpu.scheduler.gpu_shapes import GPU_MILLI_RESOURCE, MILLI
from kubegpu.sim.openb import (
    NAMESPACE,
    NODE_MAX_PODS,
    TraceNode,
    TracePod,
    read_nodes,
    read_pods,
    to_node,
    to_pod,
)
from kubegpu.sim.packing import fgd_workload, typical_pods

REPO = Path(__file__).resolve().parents[1]
CSV = REPO.parent / "shared" / "data" / "alibaba-gpu-2023" / "csv"


def place(
    nodes: list[TraceNode], trace: list[TracePod], fill: float, seed: int
) -> list[tuple[str, TracePod, str]]:
    """(pod name, trace row, node or "") for the workload, placed by the FGD policy."""
    rng = np.random.default_rng(seed)
    model_nodes = [to_node(n) for n in nodes]
    capacity = sum(n.allocatable.get(NVIDIA_GPU, 0) for n in model_nodes)
    cluster = ClusterState(model_nodes)
    ledger = GpuShareLedger(cluster, typical_pods(trace))
    scheduler = assemble(SchedulerSpec("packing", policy="FGD", seed=seed), cluster, sharing=ledger)
    out = []
    for name, row in fgd_workload(trace, capacity, rng, fill):
        result = scheduler.schedule_one(to_pod(row, name), preempt=False)
        out.append((name, row, result.node or ""))
    return out


def raw_node(n: TraceNode) -> dict[str, Any]:
    """The node as ``to_node`` models it, in the API server's JSON (quantities as strings)."""
    resources = {
        "cpu": f"{n.cpu_milli}m",
        "memory": f"{n.memory_mib}Mi",
        "pods": str(NODE_MAX_PODS),
        NVIDIA_GPU: str(n.gpus),
        GPU_MILLI_RESOURCE: str(n.gpus * MILLI),
    }
    labels = {"kubernetes.io/hostname": n.name, DEFAULT_POOL_LABEL: n.model, GPU_PRODUCT_LABEL: n.model}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": n.name, "labels": labels},
        "spec": {},
        "status": {
            "capacity": resources,
            "allocatable": dict(resources),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def raw_pod(name: str, p: TracePod, node: str) -> dict[str, Any]:
    """The pod as ``to_pod`` models it, bound to ``node`` (Running) or Pending."""
    requests = {"cpu": f"{p.cpu_milli}m", "memory": f"{p.memory_mib}Mi"}
    spec: dict[str, Any] = {}
    annotations = {}
    if p.num_gpu:
        requests[GPU_MILLI_RESOURCE] = str(p.total_gpu_milli)
        annotations[GPU_COUNT_ANNOTATION] = str(p.num_gpu)
        if p.gpu_spec:
            term = {"key": GPU_PRODUCT_LABEL, "operator": "In", "values": sorted(p.gpu_spec)}
            spec["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [term]}]
                    }
                }
            }
    spec["containers"] = [{"name": "main", "resources": {"requests": requests, "limits": dict(requests)}}]
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "annotations": annotations},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def scrape_ms(url: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        with urllib.request.urlopen(url, timeout=120) as resp:
            resp.read()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def row(name: str, ms: list[float]) -> str:
    q = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else [ms[0]] * 99
    return f"| {name} | {len(ms)} | {q[49]:.1f} | {q[98]:.1f} | {max(ms):.1f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scrapes", type=int, default=30)
    parser.add_argument("--fill", type=float, default=0.9, help="workload GPU request / GPU capacity")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    nodes = read_nodes(CSV / "openb_node_list_gpu_node.csv")
    trace = read_pods(CSV / "openb_pod_list_default.csv")
    t0 = time.perf_counter()
    placed = place(nodes, trace, args.fill, args.seed)
    setup_s = time.perf_counter() - t0
    objects = [("openb", raw_node(n)) for n in nodes] + [("openb", raw_pod(*p)) for p in placed]
    bound = sum(1 for *_, node in placed if node)
    print(
        f"openb: {len(nodes)} nodes, {sum(n.gpus for n in nodes)} GPUs, {len(placed)} pods "
        f"({bound} placed by FGD, {len(placed) - bound} Pending) in {setup_s:.0f} s",
        file=sys.stderr,
    )

    def snapshot() -> Any:
        return build_snapshot(objects, description="openb")

    # Where the time of one computation goes (median of 5).
    parts: dict[str, list[float]] = {"build_snapshot": [], "Engine": [], "measure": []}
    for _ in range(5):
        t = time.perf_counter()
        snap = snapshot()
        parts["build_snapshot"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        engine = Engine(snap)
        parts["Engine"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        result = measure(engine, DEFAULT_POOL_LABEL)
        parts["measure"].append((time.perf_counter() - t) * 1000)
    rows = []
    for ttl, label in ((0.0, "scrape, cache off (a full computation)"), (3600.0, "scrape, from the cache")):
        collector = ClusterCollector(snapshot, Engine, DEFAULT_POOL_LABEL, ttl_s=ttl)
        server = start_server(collector_registry(collector), collector.health, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        try:
            scrape_ms(url, 1)  # warm-up (and the cache's one computation)
            rows.append(row(label, scrape_ms(url, args.scrapes if ttl == 0 else 10 * args.scrapes)))
            if ttl:
                with urllib.request.urlopen(url, timeout=120) as resp:
                    body = resp.read()
        finally:
            server.shutdown()
            server.server_close()
    stranded = sum(p.summary.stranded for p in result.pools)
    frag = sum(p.fragment_milli or 0 for p in result.pools) / MILLI
    print("| step | runs | p50 ms | p99 ms | max ms |")
    print("| --- | --- | --- | --- | --- |")
    for name, ms in parts.items():
        print(row(name, ms))
    print("\n".join(rows))
    lines = body.count(b"\n")
    print(
        f"\nexposition: {len(body)} bytes, {lines} lines; pools {len(result.pools)}, "
        f"stranded GPUs {stranded}, FGD fragment {frag:.1f} GPUs, Pending GPU pods {sum(result.pending.values())}"
    )


def collector_registry(collector: ClusterCollector) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


if __name__ == "__main__":
    main()
