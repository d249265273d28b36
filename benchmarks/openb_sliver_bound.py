"""A lower bound on unallocated GPU % at arrived = 100 % that no placement policy can go under, and
what an offline packing of the same sharing pods leaves.

A sharing pod of m > 1000 − θ milli leaves at most θ free on its GPU, and only pods of at most θ milli
fit there. So, over the FGD protocol's pods up to arrived = 100 % (the seed's shuffle and top-up, as
``kubegpu bench openb`` draws them), whatever the policy:

    unallocated ≥ Σ_{sharing pods, m ≥ 1000 − θ} (1000 − m) − Σ_{pods with 0 < m ≤ θ} m

(a pod of the first kind that fails counts its whole m ≥ 1000 − θ ≥ its slack instead). The bound is
the largest over θ < 500 (two pods above 500 milli never share a GPU). On openb the 810-milli pods
(about a third of the sharing pods) give most of it: 190 milli each, fillable only by the few pods of
160, 110 and 50 milli.

For reference (not a bound: a heuristic that knows every pod in advance) the table also gives the free
milli an offline first-fit-decreasing packing of the same sharing pods leaves on the GPUs it uses.

    python benchmarks/openb_sliver_bound.py --traces default,multigpu40 --seeds 42-46
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from kubegpu.model.resources import NVIDIA_GPU
from kubegpu.scheduler.gpu_shapes import MILLI
from kubegpu.sim.bench import default_data_dir, load_nodes, load_trace, parse_seeds
from kubegpu.sim.openb import TracePod
from kubegpu.sim.packing import fgd_workload, shape_kind


def arrived_pods(trace: list[TracePod], capacity: int, seed: int) -> list[TracePod]:
    """The protocol's pods in arrival order until the arrived GPU request reaches capacity."""
    out, arrived = [], 0
    for _, p in fgd_workload(trace, capacity, np.random.default_rng(seed)):
        if arrived >= capacity:
            break
        out.append(p)
        arrived += p.total_gpu_milli
    return out


def shared_gpus(pods: list[TracePod]) -> list[int]:
    """The milli each sharing pod takes, once per GPU it asks for (openb's sharing pods ask for one)."""
    return [p.gpu_milli for p in pods if shape_kind(p) == "share" for _ in range(p.num_gpu)]


def sliver_bound(pods: list[TracePod]) -> tuple[int, int]:
    """(bound in milli-GPU, the θ that gives it)."""
    shares = shared_gpus(pods)
    best = (0, 0)
    for theta in sorted({MILLI - m for m in shares if m > MILLI // 2}):
        slack = sum(MILLI - m for m in shares if m >= MILLI - theta)
        fill = sum(p.total_gpu_milli for p in pods if 0 < p.gpu_milli <= theta)
        best = max(best, (slack - fill, theta))
    return best


def offline_slack(pods: list[TracePod]) -> int:
    """Free milli left on the GPUs a first-fit-decreasing packing of the sharing pods uses."""
    free: list[int] = []
    for m in sorted(shared_gpus(pods), reverse=True):
        gpu = next((i for i, f in enumerate(free) if f >= m), None)
        if gpu is None:
            free.append(MILLI - m)
        else:
            free[gpu] -= m
    return sum(free)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default="default")
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--data", type=Path, default=default_data_dir())
    args = ap.parse_args()
    if args.data is None:
        ap.error("openb data not found: pass --data DIR (the folder holding csv/)")
    capacity = sum(n.allocatable.get(NVIDIA_GPU, 0) for n in load_nodes(args.data))  # milli-GPU
    print("| trace | seed | bound (% of GPUs) | θ (milli) | offline FFD slack (% of GPUs) |")
    print("| --- | --- | --- | --- | --- |")
    for name in args.traces.split(","):
        trace = load_trace(args.data, name)
        for seed in parse_seeds(args.seeds):
            pods = arrived_pods(trace, capacity, seed)
            bound, theta = sliver_bound(pods)
            slack = offline_slack(pods)
            print(
                f"| {name} | {seed} | {100 * bound / capacity:.2f} | {theta} | {100 * slack / capacity:.2f} |"
            )


if __name__ == "__main__":
    main()
