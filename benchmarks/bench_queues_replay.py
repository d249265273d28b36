"""Issue 6's replay benchmark: openb with three team queues under kube-scheduler, queues+gang, and
queues+gang+checkpoint-aware preemption (teams, gangs, quotas and arms: ``kubegpu.sim.queue_bench``).

Contention: the default trace never fills the 6,212-GPU cluster, so the replay runs on a seeded
random 10 % of the nodes with arrivals 200× faster (``--nodes-fraction 0.1 --time-scale 200``); run
times and each pod's patience (trace deletion − creation) are the trace's. Prints a Markdown table;
``--write-docs`` also replaces the table between the markers in docs/batch.md. One process, a few
minutes on the 2-core machine.

    python benchmarks/bench_queues_replay.py [--seed 42] [--nodes-fraction 0.1] [--time-scale 200]
        [--write-docs] [--series queues.csv]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from kubegpu.sim.bench import default_data_dir, load_nodes, load_trace
from kubegpu.sim.queue_bench import ARMS, DECAY, TEAMS, UNPROTECTED, run_arm
from kubegpu.sim.replay import ReplayReport, write_series

DOCS = Path(__file__).parents[1] / "docs" / "batch.md"
START, END = "<!-- queues-replay:start -->", "<!-- queues-replay:end -->"


def table(reports: list[tuple[ReplayReport, float]], command: str) -> str:
    teams = list(TEAMS)
    head = [
        "arm", "pending p50 (s)", "pending p95 (s)",
        *(f"p95 {t} (s)" for t in teams),
        "given up", "GPU allocated (%)", "useful GPU utilisation (%)", "pods evicted",
        "GPU-hours lost to preemption", "run time (s)",
    ]  # fmt: skip
    lines = [f"`{command}`", "", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r, seconds in reports:
        row = [
            r.label, f"{r.pending_pct(50):.0f}", f"{r.pending_pct(95):.0f}",
            *(f"{r.pending_pct(95, t):.0f}" for t in teams),
            f"{r.given_up} ({r.given_up_classes()})", f"{r.mean_allocation_pct:.2f}",
            f"{r.useful_utilisation_pct:.2f}", str(r.evictions), f"{r.gpu_hours_lost:.1f}", f"{seconds:.0f}",
        ]  # fmt: skip
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--nodes-fraction", type=float, default=0.1)
    ap.add_argument("--time-scale", type=float, default=200.0)
    ap.add_argument("--trace", default="default")
    ap.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated; also {UNPROTECTED}, {DECAY}")
    ap.add_argument("--data", type=Path, default=default_data_dir())
    ap.add_argument("--write-docs", action="store_true")
    ap.add_argument("--series", type=Path, default=None, help="CSV of queue lengths and allocation over time")
    args = ap.parse_args()
    nodes, trace = load_nodes(args.data), load_trace(args.data, args.trace)
    reports = []
    for arm in args.arms.split(","):
        started = time.perf_counter()
        r = run_arm(
            arm, nodes, trace, time_scale=args.time_scale, nodes_fraction=args.nodes_fraction, seed=args.seed
        )
        reports.append((r, time.perf_counter() - started))
        print(f"{arm}: {reports[-1][1]:.0f} s", flush=True)
    command = (
        f"python benchmarks/bench_queues_replay.py --seed {args.seed} --nodes-fraction {args.nodes_fraction:g} "
        f"--time-scale {args.time_scale:g}"
    )
    if args.arms != ",".join(ARMS):
        command += f" --arms {args.arms}"
    text = table(reports, command)
    print(text)
    if args.series is not None:
        write_series([r for r, _ in reports], args.series)
        print(f"wrote {args.series}")
    if args.write_docs:
        doc = DOCS.read_text(encoding="utf-8")
        before, _, rest = doc.partition(START)
        _, _, after = rest.partition(END)
        DOCS.write_text(f"{before}{START}\n{text}{END}{after}", encoding="utf-8")
        print(f"wrote {DOCS}")


if __name__ == "__main__":
    main()
