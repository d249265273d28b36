"""Seconds per openb packing run, per policy, for this checkout and (optionally) a baseline: the table of
issue 25's "packing runs in a second", with a check that both give the same run.

Each run (one trace, one policy, one seed: about 10,800 pods on 1,213 nodes for the default trace) is
timed in a fresh process as CPU time (``time.process_time``) of ``run_packing`` alone, trace loading
excluded: the machine this was written on is shared, and CPU time moves far less with the neighbours'
load than wall time. With ``--baseline-src DIR`` (the ``src`` folder of another version, e.g. from
``git archive <commit> src | tar -x -C /tmp/base``) every run is also timed there, interleaved with
this checkout's, and the per-pod arrays of the two runs (GPU arrived, allocated, fragment amount) are
compared bit for bit: ``same`` is ``yes`` only when all three are equal.

    python benchmarks/bench_openb_packing.py [--traces default] [--policies all] [--seeds 42] \\
        [--baseline-src /tmp/base/src] [--repeat 1]

Prints a Markdown table: trace, policy, seed, baseline s, this s, ratio, same (and the best of
``--repeat`` timings of each).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
SRC = HERE.parents[1] / "src"
POLICIES = ("Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD", "KubegpuCpuFrag")


def worker(data: str, trace: str, policy: str, seed: int) -> None:
    """In the child process (``PYTHONPATH`` picks the version): one run, its CPU seconds and a digest."""
    import time

    from kubegpu.sim.bench import load_nodes, load_trace
    from kubegpu.sim.packing import run_packing

    nodes, pods = load_nodes(Path(data)), load_trace(Path(data), trace)
    started = time.process_time()
    run = run_packing(nodes, pods, policy, seed, trace_name=trace)
    cpu = time.process_time() - started
    digest = hashlib.sha256(b"".join(a.tobytes() for a in (run.arrived, run.allocated, run.frag))).hexdigest()
    print(json.dumps({"cpu_s": cpu, "pods": run.pods, "digest": digest}))


def timed(src: Path, data: Path, trace: str, policy: str, seed: int) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, str(HERE), "--worker", str(data), trace, policy, str(seed)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
        return
    sys.path.insert(0, str(SRC))
    from kubegpu.sim.bench import default_data_dir

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=default_data_dir())
    ap.add_argument("--traces", default="default")
    ap.add_argument("--policies", default="all", help="comma-separated, or 'all' (the seven policies)")
    ap.add_argument("--seeds", default="42")
    ap.add_argument(
        "--baseline-src", type=Path, default=None, help="the src folder of the version to compare"
    )
    ap.add_argument("--repeat", type=int, default=1, help="timings per run and version; the best is shown")
    args = ap.parse_args()
    policies = POLICIES if args.policies == "all" else tuple(args.policies.split(","))
    versions = [("baseline", args.baseline_src)] if args.baseline_src else []
    versions.append(("this", SRC))
    print("| trace | policy | seed | pods | baseline s | this s | ratio | same |")
    print("|---|---|---|---:|---:|---:|---:|---|")
    for trace in args.traces.split(","):
        for policy in policies:
            for seed in (int(s) for s in args.seeds.split(",")):
                best: dict[str, float] = {}
                digests: dict[str, str] = {}
                pods = 0
                for _ in range(args.repeat):
                    for name, src in versions:  # interleaved, so both see the same neighbours
                        r = timed(src, args.data, trace, policy, seed)
                        best[name] = min(best.get(name, float("inf")), float(r["cpu_s"]))  # type: ignore[arg-type]
                        digests[name], pods = str(r["digest"]), int(r["pods"])  # type: ignore[call-overload]
                base = best.get("baseline")
                ratio = f"{base / best['this']:.1f}×" if base else ""
                same = ("yes" if digests["baseline"] == digests["this"] else "NO") if base else ""
                print(
                    f"| {trace} | {policy} | {seed} | {pods} | {'' if base is None else f'{base:.2f}'} "
                    f"| {best['this']:.2f} | {ratio} | {same} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
