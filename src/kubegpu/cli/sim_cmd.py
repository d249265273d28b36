"""``kubegpu bench openb`` and ``kubegpu simulate``: the trace-driven simulator's commands (R9.2, R14.1).

Thin: parse options, call ``kubegpu.sim``, render. ``bench openb`` runs the FGD paper's packing protocol
over a grid of traces × policies × seeds on a local process pool or a Ray cluster; ``simulate`` replays
one openb trace with creation and deletion times under two policies and prints a before/after table.
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kubegpu.errors import KubegpuError
from kubegpu.scheduler.registry import PACKING_POLICIES
from kubegpu.sim.bench import (
    RunResult,
    default_data_dir,
    load_trace,
    local_pool,
    parse_seeds,
    published_unallocated,
    run_grid,
    table,
)
from kubegpu.sim.ray_executor import ray_executor
from kubegpu.sim.replay import compare_policies, replay


def _data_dir(data: Path | None) -> Path:
    found = data or default_data_dir()
    if found is None or not (found / "csv").is_dir():
        raise click.UsageError(
            "openb data not found: pass --data DIR (the folder holding csv/openb_node_list_gpu_node.csv)"
        )
    return found


def _published(data: Path) -> dict[tuple[str, str], list[float]]:
    """The FGD artifact's results beside the data folder (``../fgd-atc23-results``), when present."""
    candidate = data.parent / "fgd-atc23-results" / "analysis_allo_discrete.csv"
    return published_unallocated(candidate) if candidate.is_file() else {}


def _given(ctx: click.Context, name: str) -> bool:
    """The option was on the command line (not from its environment variable or default)."""
    return ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE


_data_option = click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The openb data folder (default: ../shared/data/alibaba-gpu-2023 beside a checkout).",
)


@click.group()
def bench() -> None:
    """Benchmarks over published traces."""


@bench.command("openb")
@_data_option
@click.option(
    "--traces", default="default", show_default=True, help="Comma-separated, e.g. default,gpushare40."
)
@click.option(
    "--policies", default=",".join(PACKING_POLICIES), show_default=True, help="Comma-separated policy names."
)
@click.option("--seeds", default="42-51", show_default=True, help="e.g. 42-51 or 42,43.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Output folder.")
@click.option(
    "--workers", type=int, default=None, help="Processes, or a local Ray's CPUs (default: one per CPU)."
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where the runs execute: a local process pool, or Ray (extra: pip install 'kubegpu[ray]').",
)
@click.option(
    "--ray-address",
    envvar="RAY_ADDRESS",
    default=None,
    help="With --executor ray: an existing cluster, e.g. head-node:6379 (default: start a local Ray).",
)
def bench_openb(
    data: Path | None,
    traces: str,
    policies: str,
    seeds: str,
    out: Path,
    workers: int | None,
    executor: str,
    ray_address: str | None,
) -> None:
    """The FGD paper's packing runs on Alibaba's openb trace: summary.csv, table.csv, runs/, figures/."""
    folder = _data_dir(data)
    if ray_address and executor != "ray" and _given(click.get_current_context(), "ray_address"):
        raise click.UsageError("--ray-address needs --executor ray")
    policy_list = [p.strip() for p in policies.split(",") if p.strip()]
    unknown = [p for p in policy_list if p not in PACKING_POLICIES]
    if unknown:
        raise click.UsageError(f"unknown policies {unknown}: use {', '.join(PACKING_POLICIES)}")
    trace_list = [t.strip() for t in traces.split(",") if t.strip()]
    console = Console(stderr=True)
    published = _published(folder)
    try:
        seed_list = parse_seeds(seeds)
        runner = ray_executor(ray_address, workers) if executor == "ray" else local_pool(workers)
        total = len(trace_list) * len(policy_list) * len(seed_list)
        with Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=console,
        ) as progress:  # fmt: skip
            task = progress.add_task("packing runs", total=total)

            def done(r: RunResult) -> None:
                progress.update(task, advance=1, description=f"{r.trace} {r.policy} {r.seed}")

            results = run_grid(
                folder, trace_list, policy_list, seed_list, out,
                executor=runner, published=published, on_done=done,
            )  # fmt: skip
    except KubegpuError as e:
        raise click.ClickException(str(e)) from e
    rows = table(results, published)
    t = Table(title="unallocated GPU % at arrived = 100 % (mean ± sd over seeds)")
    for col in ("trace", "policy", "seeds", "kubegpu", "published", "Δ"):
        t.add_column(col)
    for trace, policy, n, mean, sd, pub, delta in rows:
        t.add_row(trace, policy, str(n), f"{mean} ± {sd}", pub, delta)
    Console().print(t)
    click.echo(f"wrote {out / 'summary.csv'}, {out / 'table.csv'}, {out / 'runs'}/, {out / 'figures'}/")


@click.command()
@_data_option
@click.option(
    "--trace", default="default", show_default=True, help="An openb pod list with times (11 columns)."
)
@click.option("--policy", "policies", default="BestFit,FGD", show_default=True, help="Before,after policies.")
@click.option("--seed", type=int, default=42, show_default=True)
@click.option("--nodes", type=int, default=None, help="Use only the first N nodes (a smaller cluster).")
@click.option("--kube", is_flag=True, help="Replay onto a live cluster's free capacity (read-only).")
@click.option("--context", default=None, help="kubeconfig context for --kube.")
@click.option("--kubeconfig", default=None, help="kubeconfig file for --kube.")
@click.option("--in-cluster", is_flag=True, help="Use the in-cluster service account for --kube.")
def simulate(
    data: Path | None,
    trace: str,
    policies: str,
    seed: int,
    nodes: int | None,
    kube: bool,
    context: str | None,
    kubeconfig: str | None,
    in_cluster: bool,
) -> None:
    """Replay an openb trace (pods arrive at creation_time, leave at deletion_time) under two policies.

    With --kube the trace meets a live cluster's free capacity now instead of the trace's own nodes."""
    folder = _data_dir(data)
    names = [p.strip() for p in policies.split(",") if p.strip()]
    if len(names) != 2 or any(p not in PACKING_POLICIES for p in names):
        raise click.UsageError(f"--policy takes two of {', '.join(PACKING_POLICIES)}, e.g. BestFit,FGD")
    where = f"openb {trace}"
    try:
        if kube:
            from kubegpu.replay_input import free_capacity_nodes, without_gpu_models
            from kubegpu.sources import load_live

            live_nodes = free_capacity_nodes(load_live(context, kubeconfig, in_cluster))[:nodes]
            if not live_nodes:
                raise click.ClickException("the cluster has no schedulable nodes to replay onto")
            pods = without_gpu_models(load_trace(folder, trace))
            before, after = (replay(live_nodes, pods, name, seed) for name in names)
            where += f" on the free capacity of {len(live_nodes)} live node(s)"
        else:
            before, after = compare_policies(folder, trace, names[0], names[1], seed, node_limit=nodes)
    except KubegpuError as e:
        raise click.ClickException(str(e)) from e
    t = Table(title=f"{where}, replayed (seed {seed})")
    t.add_column("metric")
    t.add_column(f"before: {names[0]}", justify="right")
    t.add_column(f"after: {names[1]}", justify="right")
    for label, a, b in zip(before.labels(), before.values(), after.values(), strict=True):
        t.add_row(label, a, b)
    Console().print(t)
