"""Scheduling throughput of the core on a generated cluster (the issue's goal: >= 1,000 pods/s on 2 cores).

Cluster: N nodes x 8 GPUs (default 5,000), in four pools (label accelerator.example.com/pool), three
zones, 20% of nodes tainted nvidia.com/gpu=present:NoSchedule, 1% cordoned. Workload: P pending pods
(default 10,000) asking for 1/2/4/8 GPUs (weights 50/25/15/10), with cpu/memory requests, a pool
constraint (nodeSelector or required node affinity) on 70% of them and the GPU toleration on 30%.
Every pod goes through the full cycle (PreFilter, Filter over all nodes, Score, preemption on failure)
with kube-scheduler's default profile and its adaptive percentageOfNodesToScore.

``--profile kubegpu`` adds device-level placement (GpuDeviceFit filter + reserve, device IDs tracked per
pod): every node gets a device model, and 20% of them carry a generated 8-GPU NVSwitch inventory with two
NUMA nodes and the Topology Manager policy ``single-numa-node``, so multi-GPU pods need a NUMA-aligned set.

``--affinity SHARE`` gives that share of the pods (e.g. 0.2) pod (anti-)affinity or topology spread, in
equal parts: required hostname anti-affinity to their own app (replicas on distinct nodes), a zone spread
constraint (maxSkew 1, DoNotSchedule), required zone affinity to their own app, and preferred hostname
anti-affinity plus a ScheduleAnyway zone spread (scores only). Pods belong to apps of about 20 replicas
(label ``app``); the other pods' apps carry no such terms, so they keep the equivalence-class cache.

``--nominated K`` holds K preemptors (priority 1000, 4 GPUs each) nominated to K nodes spread over the
cluster for the whole run, as pods waiting out their victims' grace period: every cycle then runs the
nominated-pods first pass on those K nodes (kube-scheduler's RunFilterPluginsWithNominatedPods), and the
figure shows what that costs against K = 0.

The before/after table of the latest performance round (pods per CPU second and per wall second, peak
RSS) is in docs/scheduling-core.md, "Performance design".

    python benchmarks/bench_schedule.py [--nodes 5000] [--pods 10000] [--seed 0] [--no-cache] [--profile kubegpu]
        [--nominated 0] [--affinity 0.2]
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from kubegpu.devices.node_devices import INVENTORY_ANNOTATION, TOPOLOGY_POLICY_ANNOTATION
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.assembly import device_models
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import Framework
from kubegpu.scheduler.loop import run_queue
from kubegpu.scheduler.registry import default_profile, in_tree_registry, kubegpu_profile
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.testing.builders import make_node, make_pod

POOLS = ["train", "infer", "batch", "dev"]
POOL_LABEL = "accelerator.example.com/pool"


NUMA_INVENTORY = (
    Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "nodes" / "hgx-8xh100-nvswitch.json"
)


def numa_annotations(i: int) -> dict[str, str]:
    reading = json.loads(NUMA_INVENTORY.read_text())
    for d in reading["devices"]:
        d["uuid"] = d["uuid"][:-4] + f"{i:04x}"  # each node its own UUIDs
    return {INVENTORY_ANNOTATION: json.dumps(reading), TOPOLOGY_POLICY_ANNOTATION: "single-numa-node"}


ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def with_affinity(b: Any, app: str, kind: int) -> None:
    """One of the four affinity shapes of ``--affinity`` for a pod of ``app``."""
    own = {"app": app}
    if kind == 0:
        b.pod_affinity(HOST, own, anti=True)
    elif kind == 1:
        b.spread(ZONE, 1, own)
    elif kind == 2:
        b.pod_affinity(ZONE, own)
    else:
        b.pod_affinity(HOST, own, anti=True, weight=50).spread(ZONE, 1, own, when="ScheduleAnyway")


def generate(
    nodes: int, pods: int, seed: int, numa: bool = False, affinity: float = 0.0
) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    objs = []
    for i in range(nodes):
        b = make_node(f"node-{i:05d}").capacity(cpu="128", memory="1Ti", pods="110").gpus(8)
        b.label(POOL_LABEL, POOLS[i % len(POOLS)]).label("topology.kubernetes.io/zone", f"zone-{i % 3}")
        if rng.random() < 0.2:
            b.taint("nvidia.com/gpu", "present")
        if rng.random() < 0.01:
            b.cordon()
        raw = b.obj()
        if numa and i % 5 == 0:
            raw["metadata"]["annotations"] = numa_annotations(i)
        objs.append(raw)
    sizes = rng.choice([1, 2, 4, 8], size=pods, p=[0.5, 0.25, 0.15, 0.10])
    for j in range(pods):
        g = int(sizes[j])
        b = make_pod(f"pod-{j:05d}").ns(f"team-{j % 7}").gpu(g).requests(cpu=str(4 * g), memory=f"{32 * g}Gi")
        b.created(f"2026-12-01T{j // 3600 % 24:02d}:{j // 60 % 60:02d}:{j % 60:02d}Z")
        r = rng.random()
        pool = POOLS[int(rng.integers(len(POOLS)))]
        if r < 0.35:
            b.selector(POOL_LABEL, pool)
        elif r < 0.7:
            b.require([(POOL_LABEL, "In", [pool, POOLS[(POOLS.index(pool) + 1) % 4]])])
        if rng.random() < 0.3:
            b.tolerate("nvidia.com/gpu", "present", "NoSchedule")
        app = j // 20  # apps of 20 replicas; whether an app uses affinity is decided per app
        if affinity and (app * 0.6180339887) % 1.0 < affinity:
            b.labels(app=f"aff-{app}")
            with_affinity(b, f"aff-{app}", app % 4)
        else:
            b.labels(app=f"plain-{app}")
        objs.append(b.obj())
    return objs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-cache", action="store_true", help="disable the equivalence-class filter cache")
    ap.add_argument("--profile", choices=["default", "kubegpu"], default="default")
    ap.add_argument("--nominated", type=int, default=0, help="preemptors held nominated to as many nodes")
    ap.add_argument("--affinity", type=float, default=0.0, help="share of pods with pod affinity / spread")
    args = ap.parse_args()

    t0 = time.perf_counter()
    kubegpu = args.profile == "kubegpu"
    snap = build_snapshot(
        [
            ("bench", o)
            for o in generate(args.nodes, args.pods, args.seed, numa=kubegpu, affinity=args.affinity)
        ]
    )
    t1 = time.perf_counter()
    models = device_models(snap) if kubegpu else None
    cluster = ClusterState(snap.nodes, snap.pods, models)
    profile = kubegpu_profile() if kubegpu else default_profile()
    pods = [replace(p, scheduler_name=profile.scheduler_name) for p in snap.pending_pods()]
    scheduler = Scheduler(
        Framework(profile, in_tree_registry()), cluster, seed=args.seed, use_cache=not args.no_cache
    )
    step = max(args.nodes // max(args.nominated, 1), 1)
    for k in range(args.nominated):
        waiting = make_pod(f"preemptor-{k:05d}").ns("prod").gpu(4).priority(1000).parsed()
        cluster.nominate(waiting, f"node-{(k * step) % args.nodes:05d}")
    t2, c2 = time.perf_counter(), time.process_time()
    outcomes = run_queue(scheduler, pods)
    t3, c3 = time.perf_counter(), time.process_time()

    bound = sum(o.scheduled for o in outcomes)
    with_terms = sum(1 for p in pods if p.pod_affinity or p.spread_constraints)
    gpus_used = int(cluster.requested[:, cluster.col["nvidia.com/gpu"]].sum() // 1000)
    rows = [
        ("nodes x GPUs", f"{args.nodes} x 8"),
        ("pending pods", f"{len(outcomes)}"),
        ("bound / unschedulable", f"{bound} / {len(outcomes) - bound}"),
        ("GPUs allocated", f"{gpus_used} of {args.nodes * 8}"),
        ("profile", args.profile),
        ("equivalence cache", "off" if args.no_cache else "on"),
        ("nominated pods held", f"{args.nominated}"),
        ("pods with pod affinity / spread", f"{with_terms}"),
        ("parse snapshot (s)", f"{t1 - t0:.2f}"),
        ("build cluster state (s)", f"{t2 - t1:.2f}"),
        ("schedule (s)", f"{t3 - t2:.2f}"),
        ("throughput (pods/s)", f"{len(outcomes) / (t3 - t2):.0f}"),
        # CPU seconds of this process: the figure that holds on a machine shared with other work
        ("schedule CPU (s)", f"{c3 - c2:.2f}"),
        ("throughput per CPU second (pods/s)", f"{len(outcomes) / (c3 - c2):.0f}"),
        ("peak RSS (MB)", f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}"),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()
