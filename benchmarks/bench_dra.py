"""One pending DRA pod explained on a 1,000-node DRA cluster (the goal: under a second).

Cluster: ``--nodes`` nodes without ``nvidia.com/gpu``, each publishing one ResourceSlice of 8 GPUs
shaped as NVIDIA's DRA driver publishes them (``tests/dra/objects.py``); half the nodes are A100 40GB,
half A100 80GB; on every node 6 of the 8 GPUs are held by allocated claims. The pod's claim asks for 4
GPUs with ``memory >= 80Gi`` (CEL ``compareTo``), so no node fits: every node runs the allocator and is
rejected ("cannot allocate all claims"), and the FailedScheduling message is built. Timed: parsing the
objects into a snapshot, and one scheduling cycle (PreFilter, Filter on every node, PostFilter) cold
(first cycle: CEL compile and device views) and warm (a second cycle over the same framework).

    python benchmarks/bench_dra.py [--nodes 1000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.dra import objects as o

from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.assembly import SchedulerSpec, assemble
from kubegpu.scheduler.cluster import ClusterState


def cluster(n: int) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = list(o.gpu_classes())
    for i in range(n):
        objs += o.held_node(f"node-{i:04d}", f"held-{i}", i % 2 == 0, (f"u{i}",))
    objs.append(o.claim("want", o.request("gpu", count=4, selectors=(o.SELECTOR_80GI,))))
    objs.append(o.pod("p", ("gpu", "want", "")))
    return objs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1000)
    args = ap.parse_args()
    objs = cluster(args.nodes)
    t0 = time.perf_counter()
    snap = build_snapshot([("bench", x) for x in objs])
    t_parse = time.perf_counter() - t0
    assert not snap.errors, snap.errors[:3]
    spec = SchedulerSpec(pdbs=tuple(snap.pdbs), dra=snap.dra)  # the newest release: DynamicResources on
    sched = assemble(spec, ClusterState(snap.nodes, snap.pods))
    pod = snap.pod("default/p")
    assert pod is not None
    t0, c0 = time.perf_counter(), time.process_time()
    r = sched.schedule_one(pod, assume=False)
    t_cold, c_cold = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    r = sched.schedule_one(pod, assume=False)
    t_warm, c_warm = time.perf_counter() - t0, time.process_time() - c0
    devices = sum(len(s.devices) for s in snap.dra.slices)
    # CPU time beside wall time: on a shared machine the wall clock also counts other processes
    print("| nodes | devices | parse snapshot | cycle, cold (wall / CPU) | cycle, warm (wall / CPU) |")
    print("|---:|---:|---:|---:|---:|")
    print(
        f"| {args.nodes:,} | {devices:,} | {t_parse * 1e3:.0f} ms | {t_cold * 1e3:.0f} / {c_cold * 1e3:.0f} ms "
        f"| {t_warm * 1e3:.0f} / {c_warm * 1e3:.0f} ms |"
    )
    print(f"\nmessage: {r.message}")


if __name__ == "__main__":
    main()
