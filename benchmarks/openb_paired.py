"""Paired comparison of two packing policies from a ``kubegpu bench openb`` output (its summary.csv).

Per trace: unallocated GPU % at arrived = 100 % of the baseline and the candidate (mean ± sample sd over
the seeds both ran), the per-seed paired difference candidate − baseline (mean ± sd), on how many seeds
the candidate is lower, and a verdict: "beats" when the mean improvement is larger than the baseline's
seed-to-seed sd, "worse" when the mean difference is positive by more than that sd, else "noise".

    kubegpu bench openb --traces default --policies FGD,KubegpuCpuFrag --seeds 42-51 --out DIR
    python benchmarks/openb_paired.py DIR/summary.csv --baseline FGD --candidate KubegpuCpuFrag

Several summary.csv files (runs split over several ``bench openb`` calls) are read as one.
"""

from __future__ import annotations

import argparse
import csv
import statistics
from collections.abc import Iterable, Mapping
from pathlib import Path

COLUMN = "unallocated_gpu_pct_at_100"


def paired_rows(rows: Iterable[Mapping[str, str]], baseline: str, candidate: str) -> list[list[str]]:
    """Markdown cells per trace (in first-seen order) for the seeds on which both policies ran."""
    runs: dict[str, dict[str, dict[int, float]]] = {}
    for r in rows:
        runs.setdefault(r["trace"], {}).setdefault(r["policy"], {})[int(r["seed"])] = float(r[COLUMN])
    out = []
    for trace, by_policy in runs.items():
        base, cand = by_policy.get(baseline, {}), by_policy.get(candidate, {})
        seeds = sorted(base.keys() & cand.keys())
        if len(seeds) < 2:
            continue
        b = [base[s] for s in seeds]
        c = [cand[s] for s in seeds]
        diff = [y - x for x, y in zip(b, c, strict=True)]
        noise = statistics.stdev(b)
        mean = statistics.fmean(diff)
        verdict = "beats" if -mean > noise else "worse" if mean > noise else "noise"
        out.append(
            [
                trace,
                f"{seeds[0]}–{seeds[-1]}"
                if seeds == list(range(seeds[0], seeds[-1] + 1))
                else str(len(seeds)),
                f"{statistics.fmean(b):.2f} ± {noise:.2f}",
                f"{statistics.fmean(c):.2f} ± {statistics.stdev(c):.2f}",
                f"{mean:+.2f} ± {statistics.stdev(diff):.2f}",
                f"{sum(d < 0 for d in diff)}/{len(seeds)}",
                verdict,
            ]
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("summary", type=Path, nargs="+", help="summary.csv files written by kubegpu bench openb")
    ap.add_argument("--baseline", default="FGD")
    ap.add_argument("--candidate", default="KubegpuCpuFrag")
    args = ap.parse_args()
    rows: list[dict[str, str]] = []
    for path in args.summary:
        with path.open(newline="") as f:
            rows.extend(csv.DictReader(f))
    cells = paired_rows(rows, args.baseline, args.candidate)
    head = ["trace", "seeds", args.baseline, args.candidate, "paired difference", "lower on", "verdict"]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for row in cells:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
