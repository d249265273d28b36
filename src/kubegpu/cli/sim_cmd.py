"""``kubegpu bench openb`` and ``kubegpu simulate``: the trace-driven simulator's commands (R9.2, R14.1).

Thin: parse options, call ``kubegpu.sim``, render. ``bench openb`` runs the FGD paper's packing protocol
over a grid of traces × policies × seeds on a local process pool or a Ray cluster; ``simulate`` replays
a workload (the openb trace, a SimWorkload or Kubernetes manifests) on the openb cluster, a snapshot or a
live cluster's free capacity (``--kube``), as is and with a change (policy, nodes added, time-slicing,
a queue's nominal quota, a pool relabel, a MIG layout), in batch mode when the inputs carry queues or
pod groups, and prints a
before/after table (``kubegpu.sim.whatif``) and optionally writes it as an HTML page with figures.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kubegpu.cli.options import BadInput
from kubegpu.errors import InputError, KubegpuError
from kubegpu.scheduler.registry import PACKING_POLICIES
from kubegpu.sim.bench import (
    DATA_HINT,
    RunResult,
    local_pool,
    locate_data_dir,
    parse_seeds,
    published_unallocated,
    run_grid,
    table,
)
from kubegpu.sim.ray_executor import ray_executor
from kubegpu.sim.replay import SimPod

if TYPE_CHECKING:
    from kubegpu.model.objects import Node, Pod
    from kubegpu.sim.whatif import Scenario
    from kubegpu.sim.workload import SimInput


def _data_dir(data: Path | None) -> Path:
    # --data wins over $KUBEGPU_OPENB_DATA, the config file and a checkout's ../shared/data.
    found, origin = (data, "--data") if data is not None else locate_data_dir()
    if found is None:
        raise click.UsageError(f"openb data not found: {DATA_HINT}")
    if not (found / "csv").is_dir():
        raise click.UsageError(
            f"openb data not found at {found} (from {origin}): no csv/ folder there; {DATA_HINT}"
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
    help="The openb data folder (default: $KUBEGPU_OPENB_DATA, else openb_data in ~/.config/kubegpu/config.yaml, else ../shared/data/alibaba-gpu-2023 beside a checkout).",
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
    except InputError as e:
        raise BadInput(str(e)) from e  # one line and exit 2, as on every command
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
@click.option("--trace", default="default", show_default=True, help="openb pod list with times (11 columns).")
@click.option(
    "--snapshot",
    "snapshots",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Replay on this snapshot's cluster instead of openb's (repeatable).",
)
@click.option("--demo", is_flag=True, help="Replay on the embedded demo cluster.")
@click.option(
    "--workload",
    "workloads",
    multiple=True,
    type=click.Path(path_type=Path),
    help="SimWorkload YAML or Kubernetes manifests (Pod, Deployment, StatefulSet, Job); repeatable. "
    "Without it, the openb trace is the workload.",
)
@click.option(
    "--policy",
    "policies",
    default=None,
    help="BEFORE[,AFTER]: placement policies on openb (default BestFit,FGD), profiles default/kubegpu "
    "on a snapshot (default: default).",
)
@click.option("--add-nodes", default=None, metavar="N[:NODE]", help="After: N more nodes like NODE.")
@click.option("--time-slicing", type=int, default=None, metavar="R", help="After: every GPU shared R ways.")
@click.option(
    "--queue-nominal",
    "queue_nominal",
    multiple=True,
    metavar="QUEUE=RESOURCE=QTY",
    help="After: a GpuQueue's nominal quota for RESOURCE (repeatable), e.g. training=nvidia.com/gpu=16.",
)
@click.option(
    "--relabel",
    "relabels",
    multiple=True,
    metavar="SEL_KEY=VALUE:KEY=VALUE|KEY-",
    help="After: nodes labelled SEL_KEY=VALUE get (or lose) a label, e.g. pool=spare:pool=training (repeatable).",
)
@click.option(
    "--mig-layout",
    "mig_layouts",
    multiple=True,
    metavar="SEL_KEY=VALUE:FILE[:CONFIG]",
    help="After: nodes labelled SEL_KEY=VALUE re-partitioned to a mig-parted config (as plan mig plans it).",
)
@click.option(
    "--preemption",
    is_flag=True,
    help="Let pending pods preempt: with queues, reclaim + checkpoint-aware preemption (gangs whole); "
    "else the profile's PostFilter.",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the table and figures of the replay series as one self-contained HTML page.",
)
@click.option("--seed", type=int, default=42, show_default=True)
@click.option("--nodes", type=int, default=None, help="openb: only the first N nodes.")
@click.option(
    "--nodes-fraction", type=float, default=None, help="openb: a seeded random fraction of the nodes."
)
@click.option(
    "--time-scale",
    type=float,
    default=1.0,
    show_default=True,
    help="openb: arrivals K times faster (creation_time / K), run times unchanged.",
)
@click.option(
    "--series",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write queue lengths and GPU allocation over time (CSV).",
)
@click.option(
    "--kube", is_flag=True, help="Replay the openb trace onto a live cluster's free capacity (read-only)."
)
@click.option("--context", default=None, help="kubeconfig context for --kube.")
@click.option("--kubeconfig", default=None, help="kubeconfig file for --kube.")
@click.option("--in-cluster", is_flag=True, help="Use the in-cluster service account for --kube.")
@click.option("--strict", is_flag=True,
              help="Exit with status 2 if any input object was rejected (simulate always does: it never replays "
                   "a workload with an input it could not read; accepted like on every command).")  # fmt: skip
def simulate(
    data: Path | None, trace: str, snapshots: tuple[Path, ...], demo: bool, workloads: tuple[Path, ...],
    policies: str | None, add_nodes: str | None, time_slicing: int | None, queue_nominal: tuple[str, ...],
    relabels: tuple[str, ...], mig_layouts: tuple[str, ...], preemption: bool, report_path: Path | None, seed: int, nodes: int | None, nodes_fraction: float | None,
    time_scale: float, series: Path | None, kube: bool, context: str | None, kubeconfig: str | None,
    in_cluster: bool, strict: bool,
) -> None:  # fmt: skip
    """Replay a workload in time (kube-scheduler's queue, node events) before and after a change; with
    queue objects or pod groups among the inputs, through the batch layer (queues, quota, gangs)."""
    from kubegpu.sim.node_changes import parse_mig_layout, parse_relabel
    from kubegpu.sim.whatif import Change, compare, parse_queue_nominal, table_rows

    names = [p.strip() for p in (policies or "").split(",") if p.strip()]
    if len(names) > 2:
        raise click.UsageError("--policy takes BEFORE or BEFORE,AFTER")
    count, like = _add_nodes(add_nodes)
    try:
        live = _live_nodes(context, kubeconfig, in_cluster, nodes) if kube else None
        scenario = _scenario(
            data, trace, snapshots, demo, workloads, seed, nodes, nodes_fraction, time_scale, live
        )
        if not names:
            names = ["BestFit", "FGD"] if scenario.openb else ["default"]
        nominal = tuple(parse_queue_nominal(v) for v in queue_nominal)
        relabel = tuple(parse_relabel(v) for v in relabels)
        mig = tuple(parse_mig_layout(v) for v in mig_layouts)
        after = names[1] if len(names) == 2 else None
        change = Change(after, count, like, time_slicing, nominal, relabel, mig)
        reports = compare(scenario, names[0], change, seed, preemption)
    except InputError as e:
        raise BadInput(str(e)) from e  # one line and exit 2, as on every command
    except KubegpuError as e:
        raise click.ClickException(str(e)) from e
    where = f"openb {trace} on the free capacity of {len(live)} live node(s), " if live else ""
    mode = "batch replay: queues, quota, gangs" if scenario.batch is not None else "replay"
    title = f"{where}{mode}{', preemption' if preemption else ''} (seed {seed})"
    t = Table(title=title)
    t.add_column("metric")
    for r in reports:
        t.add_column(r.label, justify="right")
    for label, values in table_rows(reports):
        t.add_row(label, *values)
    Console().print(t)
    if scenario.openb:
        _say_unshaped([sp.pod for sp in scenario.pods])
    if series is not None:
        from kubegpu.sim.replay import write_series

        write_series(reports, series)
        click.echo(f"wrote {series}")
    if report_path is not None:
        from kubegpu.sim.html_report import render_replay

        report_path.write_text(render_replay(title, reports), encoding="utf-8")
        click.echo(f"wrote {report_path}")


def _say_unshaped(pods: list[Pod]) -> None:
    """The workload's pods whose GPU request is no GPU shape: the packing profile's GpuShare refuses them
    at PreFilter, so they stay pending in every run, and the table does not say why (at most 10 named)."""
    from kubegpu.scheduler.gpu_shapes import pod_shape

    bad = [(p.key, why) for p in pods if (why := pod_shape(p).problem)]
    for key, why in bad[:_NAMED]:
        click.echo(f"note: pod {key} is never placed: {why}", err=True)
    if len(bad) > _NAMED:
        click.echo(f"note: and {len(bad) - _NAMED} more pod(s) whose GPU request is no GPU shape", err=True)


_NAMED = 10


def _add_nodes(value: str | None) -> tuple[int, str | None]:
    if not value:
        return 0, None
    n, _, like = value.partition(":")
    if not n.isdigit() or int(n) < 1:
        raise click.UsageError(f"--add-nodes takes N[:NODE] with N ≥ 1, got {value!r}")
    return int(n), like or None


def _scenario(
    data: Path | None, trace: str, snapshots: tuple[Path, ...], demo: bool, workloads: tuple[Path, ...],
    seed: int, nodes: int | None, nodes_fraction: float | None, time_scale: float,
    live: list[Node] | None = None,
) -> Scenario:  # fmt: skip
    from kubegpu import sources
    from kubegpu.model.podgroup import snapshot_time
    from kubegpu.sim.bench import load_nodes, load_trace
    from kubegpu.sim.onto_cluster import without_gpu_models
    from kubegpu.sim.openb_replay import node_subset, sim_pods
    from kubegpu.sim.packing import typical_pods
    from kubegpu.sim.replay import EPOCH
    from kubegpu.sim.whatif import Scenario, batch_setup

    if sum((bool(snapshots), demo, live is not None)) > 1:
        raise click.UsageError("give one of --snapshot, --demo and --kube")
    extra = _load_workloads(workloads, seed) if workloads else None
    if snapshots or demo:
        snap = sources.load_demo() if demo else sources.load_files(*snapshots)
        if snap.errors:
            raise snap.errors[0]
        bound = tuple(p for p in snap.pods if p.node_name and not p.is_terminal)
        pending = [SimPod(p, 0.0, math.inf) for p in snap.pods if not p.node_name and not p.is_terminal]
        pods = pending + (extra.pods if extra else [])
        events = tuple(extra.node_events) if extra else ()
        epoch = snapshot_time(snap.pods) or EPOCH
        batch = batch_setup([*snap.batch_objects, *(extra.batch_objects if extra else ())])
        dra = snap.dra
        if extra is not None:  # the workload's claims and templates, and the claims its pods' templates yield
            from kubegpu.sim.workload_claims import with_workload_claims

            dra = with_workload_claims(snap.dra, extra)
        return Scenario(list(snap.nodes), pods, False, None, bound, events, epoch, batch=batch, dra=dra)
    folder = _data_dir(data)
    if live is not None:
        # the trace meets the live cluster's GPUs, not Alibaba's models (kubegpu.sim.onto_cluster)
        chosen, openb_pods = live, without_gpu_models(load_trace(folder, trace))
    else:
        all_nodes = load_nodes(folder)
        chosen = all_nodes[:nodes] if nodes else all_nodes
        openb_pods = load_trace(folder, trace)
    if nodes_fraction is not None:
        chosen = node_subset(chosen, nodes_fraction, seed)
    if extra is not None and (extra.dra_objects or extra.claim_pods):
        raise click.UsageError(
            "workload pods with DRA claims need --snapshot or --demo (the cluster's slices and classes)"
        )
    if extra is not None:
        batch = batch_setup(extra.batch_objects)
        return Scenario(
            chosen, extra.pods, True, typical_pods(openb_pods), (), tuple(extra.node_events), batch=batch
        )
    return Scenario(
        chosen, sim_pods(openb_pods, time_scale), True, typical_pods(openb_pods), arrival_window=True
    )


def _live_nodes(
    context: str | None, kubeconfig: str | None, in_cluster: bool, nodes: int | None
) -> list[Node]:
    """The live cluster's schedulable nodes, each with its allocatable minus what bound pods request."""
    from kubegpu.sim.onto_cluster import free_capacity_nodes
    from kubegpu.sources import load_live

    found = free_capacity_nodes(load_live(context, kubeconfig, in_cluster))[:nodes]
    if not found:
        raise click.ClickException("the cluster has no schedulable nodes to replay onto")
    return found


def _load_workloads(paths: tuple[Path, ...], seed: int) -> SimInput:
    from kubegpu.sim.workload import load_workload
    from kubegpu.sources import read_path

    errors: list[InputError] = []
    objects = [o for p in paths for o in read_path(p, errors)]
    if errors:
        raise errors[0]
    loaded = load_workload(objects, seed)
    for note in loaded.notes:
        click.echo(f"note: {note}", err=True)
    return loaded
