"""``kubegpu bench openb``: a grid of packing runs (traces × policies × seeds) on an executor: the local
process pool here (``local_pool``), or a Ray cluster (``kubegpu.sim.ray_executor``).

Writes, under the output folder:

- ``summary.csv``: one row per run — ``trace, policy, seed, pods, unallocated_gpu_pct_at_100,
  frag_amount_pct_at_100, frag_ratio_pct_at_100, failed_pods, failed_by_class, seconds`` (failed pods
  over the whole run, by class: ``cpu``, ``share``, ``n-gpu``);
- ``table.csv``: per trace and policy, mean and sample standard deviation over the seeds (the paper's
  table shape), with the published mean beside it when the artifact's results are given;
- ``runs/<trace>_<policy>_<seed>.csv``: the run on the artifact's grid, arrived 0…130 % of capacity;
- ``figures/<trace>_unallocated.png`` and ``figures/<trace>_frag.png``: unallocated GPU % and fragment
  amount % against arrived workload, one line per policy (mean over seeds).

The trace data is read from the data folder, never copied.
"""

from __future__ import annotations

import csv
import functools
import math
import os
import statistics
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from kubegpu.errors import InputError
from kubegpu.model.objects import Node
from kubegpu.sim.openb import TracePod, read_nodes, read_pods, to_node
from kubegpu.sim.packing import ARRIVED_POINTS, Curves, curves, run_packing

NODE_FILE = "openb_node_list_gpu_node.csv"
SUMMARY_COLUMNS = (
    "trace", "policy", "seed", "pods", "unallocated_gpu_pct_at_100", "frag_amount_pct_at_100",
    "frag_ratio_pct_at_100", "failed_pods", "failed_by_class", "seconds",
)  # fmt: skip
# the artifact's policy folder names in its published results (``analysis_allo_discrete.csv``)
PUBLISHED_POLICY = {
    "01-Random": "Random", "02-DotProd": "DotProd", "03-GpuClustering": "GpuClustering",
    "04-GpuPacking": "GpuPacking", "05-BestFit": "BestFit", "06-FGD": "FGD",
}  # fmt: skip


DATA_ENV = "KUBEGPU_OPENB_DATA"
DATA_CONFIG_KEY = "openb_data"
DATA_HINT = (
    f"pass --data DIR, set {DATA_ENV}=DIR, or put '{DATA_CONFIG_KEY}: DIR' in $XDG_CONFIG_HOME/kubegpu/config.yaml "
    "(default ~/.config/kubegpu/config.yaml); DIR is the folder holding csv/openb_node_list_gpu_node.csv"
)


def config_file() -> Path:
    """kubegpu's user config file: ``$XDG_CONFIG_HOME/kubegpu/config.yaml`` (XDG base directory spec)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "kubegpu" / "config.yaml"


def locate_data_dir() -> tuple[Path | None, str]:
    """Where the openb data is when ``--data`` is not given, and what said so.

    In order: ``$KUBEGPU_OPENB_DATA``; ``openb_data`` in the config file (a relative path is taken from
    the file's folder); ``../shared/data/alibaba-gpu-2023`` beside the repository when running from a
    checkout. A wheel install has no checkout, so it needs one of the first two.
    """
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser(), f"${DATA_ENV}"
    cfg = config_file()
    if cfg.is_file():
        try:
            raw = yaml.safe_load(cfg.read_text())
        except (OSError, yaml.YAMLError) as e:
            raise InputError(f"not readable YAML ({str(e).splitlines()[0]})", source=str(cfg)) from None
        value = raw.get(DATA_CONFIG_KEY) if isinstance(raw, dict) else None
        if value is not None:
            if not isinstance(value, str) or not value:
                raise InputError("must be a folder path", source=str(cfg), field=DATA_CONFIG_KEY)
            return cfg.parent / Path(value).expanduser(), f"{cfg} {DATA_CONFIG_KEY}"
    root = Path(__file__).resolve().parents[3]
    if (root / "pyproject.toml").is_file():
        return root.parent / "shared" / "data" / "alibaba-gpu-2023", "the checkout's ../shared/data"
    return None, ""


def default_data_dir() -> Path | None:
    """``locate_data_dir`` without saying where from (the benchmarks' ``--data`` default)."""
    return locate_data_dir()[0]


def trace_file(data: Path, trace: str) -> Path:
    return data / "csv" / f"openb_pod_list_{trace}.csv"


@functools.cache
def load_nodes(data: Path) -> list[Node]:
    return [to_node(n) for n in read_nodes(data / "csv" / NODE_FILE)]


@functools.cache
def load_trace(data: Path, trace: str) -> list[TracePod]:
    return read_pods(trace_file(data, trace))


@dataclass(frozen=True)
class RunResult:
    trace: str
    policy: str
    seed: int
    pods: int
    failed: dict[str, int]
    seconds: float
    curves: Curves

    @property
    def unallocated_at_100(self) -> float:
        return 100 - float(self.curves.allocation[100])

    def summary_row(self) -> dict[str, object]:
        c = self.curves
        return {
            "trace": self.trace,
            "policy": self.policy,
            "seed": self.seed,
            "pods": self.pods,
            "unallocated_gpu_pct_at_100": round(self.unallocated_at_100, 4),
            "frag_amount_pct_at_100": round(float(c.frag_amount[100]), 4),
            "frag_ratio_pct_at_100": round(float(c.frag_ratio[100]), 4),
            "failed_pods": sum(self.failed.values()),
            "failed_by_class": " ".join(f"{k}:{v}" for k, v in sorted(self.failed.items())),
            "seconds": round(self.seconds, 3),
        }


def run_one(data: Path, trace: str, policy: str, seed: int) -> RunResult:
    """One packing run (a process-pool task: nodes and traces are read once per worker process)."""
    return run_on(load_nodes(data), load_trace(data, trace), trace, policy, seed)


def run_on(nodes: list[Node], pods: list[TracePod], trace: str, policy: str, seed: int) -> RunResult:
    """One packing run on nodes and trace rows already read (a Ray task receives them as objects)."""
    run = run_packing(nodes, pods, policy, seed, trace_name=trace)
    return RunResult(trace, policy, seed, run.pods, dict(run.failed), run.seconds, curves(run))


Cell = tuple[str, str, int]  # (trace, policy, seed)
# An executor runs every cell of the grid and yields the results as they finish, in any order.
Executor = Callable[[Path, Sequence[Cell]], Iterator[RunResult]]


def local_pool(workers: int | None = None) -> Executor:
    """The local executor: a process pool of ``workers`` processes (default: one per CPU)."""

    def run(data: Path, grid: Sequence[Cell]) -> Iterator[RunResult]:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(run_one, data, t, p, s) for t, p, s in grid]
            for f in as_completed(futures):
                yield f.result()

    return run


def parse_seeds(text: str) -> list[int]:
    """``42-51`` or ``42,43,50`` (or a mix) → seeds in order."""
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            seeds.extend(range(int(lo), int(hi) + 1) if sep else [int(part)])
        except ValueError as e:
            raise InputError(f"bad seed list {text!r}: use e.g. 42-51 or 42,43", field="--seeds") from e
    return seeds


def run_grid(
    data: Path,
    traces: Sequence[str],
    policies: Sequence[str],
    seeds: Sequence[int],
    out: Path,
    *,
    workers: int | None = None,
    executor: Executor | None = None,
    published: dict[tuple[str, str], list[float]] | None = None,
    on_done: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    """Run every (trace, policy, seed), write the outputs, return the results in grid order.
    ``executor``: where the runs execute (default: ``local_pool(workers)``); ``on_done`` is called in
    this process as each run finishes. ``published``: the artifact's per-seed results
    (``published_unallocated``) for the table."""
    for trace in traces:
        if not trace_file(data, trace).is_file():
            raise InputError(f"no such trace: {trace_file(data, trace)}", field="--traces")
    grid = [(t, p, s) for t in traces for p in policies for s in seeds]
    results: dict[tuple[str, str, int], RunResult] = {}
    for r in (executor or local_pool(workers))(data, grid):
        results[(r.trace, r.policy, r.seed)] = r
        if on_done is not None:
            on_done(r)
    ordered = [results[k] for k in grid]
    write_outputs(ordered, out, published or {})
    return ordered


def published_unallocated(path: Path) -> dict[tuple[str, str], list[float]]:
    """The artifact's per-seed unallocated GPU % at arrived 100 %, by (trace, policy), from its
    ``analysis_allo_discrete.csv`` (allocation % per arrived point)."""
    out: dict[tuple[str, str], list[float]] = {}
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            policy = PUBLISHED_POLICY.get(row["sc_policy"], row["sc_policy"])
            trace = row["workload"].removeprefix("openb_pod_list_")
            out.setdefault((trace, policy), []).append(100 - float(row["100"]))
    return out


def write_outputs(
    results: Sequence[RunResult], out: Path, published: dict[tuple[str, str], list[float]]
) -> None:
    (out / "runs").mkdir(parents=True, exist_ok=True)
    with (out / "summary.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=SUMMARY_COLUMNS)
        w.writeheader()
        w.writerows(r.summary_row() for r in results)
    for r in results:
        with (out / "runs" / f"{r.trace}_{r.policy}_{r.seed}.csv").open("w", newline="") as f:
            w2 = csv.writer(f)
            w2.writerow(["arrived_pct", "allocation_pct", "frag_amount_pct", "frag_ratio_pct"])
            for x in ARRIVED_POINTS:
                w2.writerow(
                    [
                        int(x),
                        *(
                            _fmt(v[x])
                            for v in (r.curves.allocation, r.curves.frag_amount, r.curves.frag_ratio)
                        ),
                    ]
                )
    with (out / "table.csv").open("w", newline="") as f:
        w2 = csv.writer(f)
        w2.writerow(
            ["trace", "policy", "seeds", "unallocated_mean", "unallocated_sd", "published_mean", "delta"]
        )
        for row in table(results, published):
            w2.writerow(row)
    plot(results, out / "figures")


def _fmt(v: float) -> str:
    return "" if math.isnan(v) else f"{v:.4f}"


def table(
    results: Iterable[RunResult], published: dict[tuple[str, str], list[float]]
) -> list[tuple[str, str, int, str, str, str, str]]:
    """Per (trace, policy): seeds, mean and sd of unallocated GPU % at 100 %, published mean, difference."""
    groups: dict[tuple[str, str], list[float]] = {}
    for r in results:
        groups.setdefault((r.trace, r.policy), []).append(r.unallocated_at_100)
    rows = []
    for (trace, policy), vals in groups.items():
        seen = [v for v in vals if not math.isnan(v)]  # NaN: the run never arrived near 100 %
        mean = statistics.fmean(seen) if seen else math.nan
        sd = statistics.stdev(seen) if len(seen) > 1 else 0.0
        pub = published.get((trace, policy))
        pub_mean = statistics.fmean(pub) if pub else None
        rows.append(
            (
                trace,
                policy,
                len(vals),
                f"{mean:.2f}",
                f"{sd:.2f}",
                "" if pub_mean is None else f"{pub_mean:.2f}",
                "" if pub_mean is None else f"{mean - pub_mean:+.2f}",
            )
        )
    return rows


def plot(results: Sequence[RunResult], folder: Path) -> None:
    """Unallocated GPU % and fragment amount % against arrived workload, per trace, mean over seeds."""
    import matplotlib  # optional heavy import, only where figures are drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    by_trace: dict[str, dict[str, list[RunResult]]] = {}
    for r in results:
        by_trace.setdefault(r.trace, {}).setdefault(r.policy, []).append(r)
    for trace, policies in by_trace.items():
        for kind, label in (("unallocated", "unallocated GPU (%)"), ("frag", "fragment amount (% of GPUs)")):
            fig, ax = plt.subplots(figsize=(6.4, 4.0))
            for policy, runs in policies.items():
                stack = np.array(
                    [
                        100 - r.curves.allocation if kind == "unallocated" else r.curves.frag_amount
                        for r in runs
                    ]
                )
                seen = ~np.isnan(stack).all(axis=0)  # points some run reached
                ax.plot(ARRIVED_POINTS[seen], np.nanmean(stack[:, seen], axis=0), label=policy)
            ax.set_xlabel("arrived workload (% of GPU capacity)")
            ax.set_ylabel(label)
            ax.set_title(f"openb {trace}")
            ax.grid(alpha=0.3)
            ax.legend()
            fig.tight_layout()
            fig.savefig(folder / f"{trace}_{kind}.png", dpi=120)
            plt.close(fig)
