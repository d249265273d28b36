"""The same ``bench openb`` grid on the local process pool and on Ray: wall time, and whether they agree.

Runs traces × policies × seeds (default: the openb default trace × FGD, BestFit × seeds 42–45) once per
executor, writing each executor's outputs to a temporary folder, and prints one row per executor: runs,
wall seconds (a local Ray's start and stop included), the sum of the runs' own seconds, and whether the
summary (wall times aside) equals the local pool's. Needs the ``ray`` extra.

    python benchmarks/bench_executors.py [--workers 2] [--ray-address HOST:PORT] [--seeds 42-45]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from kubegpu.sim.bench import RunResult, default_data_dir, local_pool, parse_seeds, run_grid
from kubegpu.sim.ray_executor import ray_executor


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=default_data_dir())
    ap.add_argument("--traces", default="default")
    ap.add_argument("--policies", default="FGD,BestFit")
    ap.add_argument("--seeds", default="42-45")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--ray-address", default=None)
    args = ap.parse_args()
    grid = (args.traces.split(","), args.policies.split(","), parse_seeds(args.seeds))
    executors = {
        "local": local_pool(args.workers),
        "ray": ray_executor(args.ray_address, None if args.ray_address else args.workers),
    }
    rows: dict[str, list[dict[str, object]]] = {}
    print(f"{'executor':<9} {'runs':>4} {'wall s':>8} {'run s (sum)':>12}  same as local")
    with tempfile.TemporaryDirectory() as tmp:
        for name, executor in executors.items():
            started = time.perf_counter()
            results = run_grid(args.data, *grid, Path(tmp) / name, executor=executor)
            wall = time.perf_counter() - started
            rows[name] = [_without_seconds(r) for r in results]
            same = "yes" if rows[name] == rows["local"] else "NO"
            ran = sum(r.seconds for r in results)
            print(f"{name:<9} {len(results):>4} {wall:>8.1f} {ran:>12.1f}  {same}")


def _without_seconds(r: RunResult) -> dict[str, object]:
    row = r.summary_row()
    del row["seconds"]
    return row


if __name__ == "__main__":
    main()
