"""One FGD-protocol packing run on the openb default trace (the issue's goal: <= 10 s on 2 cores).

1,213 nodes (6,212 GPUs), the default trace's 8,152 pods shuffled with the seed and topped up to 130 %
of GPU capacity (about 10,800 pods), each through the full scheduling cycle of the core (filters,
GpuShare, the policy's score over every feasible node, Reserve), with the cluster's fragment amount
recorded after every pod. The published Go simulator takes about 10 minutes for the same run on 2 vCPUs
(34 min 18 s measured for one run here, see ../shared/data/fgd-atc23-results/SOURCE.md).

    python benchmarks/bench_sim.py [--policy FGD] [--seed 42] [--data ../shared/data/alibaba-gpu-2023]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from kubegpu.sim.bench import default_data_dir, load_nodes, load_trace
from kubegpu.sim.packing import curves, run_packing


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="FGD")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--trace", default="default")
    ap.add_argument("--data", type=Path, default=default_data_dir())
    args = ap.parse_args()
    started = time.perf_counter()
    nodes, trace = load_nodes(args.data), load_trace(args.data, args.trace)
    loaded = time.perf_counter() - started
    run = run_packing(nodes, trace, args.policy, args.seed, trace_name=args.trace)
    c = curves(run)
    print(
        json.dumps(
            {
                "policy": args.policy,
                "trace": args.trace,
                "seed": args.seed,
                "nodes": len(nodes),
                "pods": run.pods,
                "load_seconds": round(loaded, 2),
                "run_seconds": round(run.seconds, 2),
                "pods_per_second": round(run.pods / run.seconds),
                "unallocated_gpu_pct_at_100": round(100 - float(c.allocation[100]), 2),
            }
        )
    )


if __name__ == "__main__":
    main()
