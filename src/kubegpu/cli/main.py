"""``kubegpu`` / ``kubectl gpu``: explain, schedule and diagnose GPU pods on a snapshot, the demo or a cluster."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import yaml

from kubegpu.cli import render
from kubegpu.cli.cluster_exporter_cmd import cluster_exporter
from kubegpu.cli.exporter_cmd import exporter
from kubegpu.cli.live_cmd import extender, lint, scheduler, webhook
from kubegpu.cli.node_cmd import node
from kubegpu.cli.plan_cmd import plan
from kubegpu.cli.report_cmd import report, ui
from kubegpu.cli.sim_cmd import bench, simulate
from kubegpu.errors import KubegpuError
from kubegpu.model.snapshot import ClusterSnapshot

if TYPE_CHECKING:
    from kubegpu.explain.engine import Engine

F = TypeVar("F", bound=Callable[..., Any])
FORMATS = click.Choice(["table", "json", "yaml"])


def source_options(f: F) -> F:
    """--snapshot / --demo / --kube: the three sources behind one interface."""
    options = [
        click.option("--snapshot", "snapshots", multiple=True, type=click.Path(path_type=Path),
                     help="`kubectl get … -o yaml|json` output, a manifest file or a directory (repeatable)."),
        click.option("--demo", is_flag=True, help="Use the embedded demo cluster."),
        click.option("--kube", is_flag=True, help="Read a live cluster (list only, read-only)."),
        click.option("--context", default=None, help="kubeconfig context for --kube."),
        click.option("--kubeconfig", default=None, help="kubeconfig file for --kube."),
        click.option("--in-cluster", is_flag=True, help="Use the in-cluster service account for --kube."),
        click.option("--strict", is_flag=True, help="Exit with status 2 if any input object was rejected."),
    ]  # fmt: skip
    for option in reversed(options):
        f = option(f)
    return f


def output_option(f: F) -> F:
    return click.option("-o", "--output", "output", type=FORMATS, default="table", show_default=True)(f)


def load_snapshot(snapshots: tuple[Path, ...], demo: bool, kube: bool, context: str | None, kubeconfig: str | None,
                  in_cluster: bool, strict: bool) -> ClusterSnapshot:  # fmt: skip
    from kubegpu import sources

    chosen = sum([bool(snapshots), demo, kube])
    if chosen != 1:
        raise click.UsageError("give exactly one source: --snapshot PATH, --demo or --kube")
    if demo:
        snap = sources.load_demo()
    elif kube:
        snap = sources.load_live(context=context, kubeconfig=kubeconfig, in_cluster=in_cluster)
    else:
        snap = sources.load_files(*snapshots)
    for err in snap.errors:
        click.echo(f"error: {err.one_line()}", err=True)
    if snap.errors and strict:
        raise SystemExit(2)
    return snap


def emit(data: Any, output: str, table: Callable[[], None]) -> None:
    if output == "json":
        click.echo(json.dumps(data, indent=2))
    elif output == "yaml":
        click.echo(yaml.safe_dump(data, sort_keys=False, width=120), nl=False)
    else:
        table()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kubegpu")
def cli() -> None:
    """GPU scheduling, allocation and diagnosis for Kubernetes.

    Runs kube-scheduler's rules (1.34) on a snapshot, the embedded demo or a live cluster (read-only)
    and explains every Pending GPU pod with evidence.
    """


def engine_options(f: F) -> F:
    """--profile / --device-plugin-config / --seed: how the core is set up for the snapshot."""
    options = [
        click.option("--profile", type=click.Choice(["default", "kubegpu"]), default="default", show_default=True,
                     help="default = kube-scheduler 1.34 as shipped; kubegpu = plus device-level placement."),
        click.option("--device-plugin-config", "plugin_configs", multiple=True, metavar="[NAME=]FILE",
                     help="NVIDIA device plugin config (version: v1); NAME matches the node label "
                          "nvidia.com/device-plugin.config, no NAME = the default (repeatable)."),
        click.option("--seed", default=0, show_default=True, help="Seed for upstream's random tie-breaks."),
    ]  # fmt: skip
    for option in reversed(options):
        f = option(f)
    return f


def make_engine(
    snap: ClusterSnapshot,
    profile: str,
    plugin_configs: tuple[str, ...],
    seed: int,
    scheduler_name: str | None = None,
    plugin_args: Mapping[str, Mapping[str, object]] | None = None,
) -> Engine:
    from kubegpu.devices.sharing import load_plugin_config
    from kubegpu.explain.engine import Engine
    from kubegpu.scheduler.registry import profile_named

    configs = {}
    for item in plugin_configs:
        name, _, path = item.rpartition("=")
        configs[name] = load_plugin_config(Path(path))
    return Engine(
        snap, profile_named(profile, scheduler_name, plugin_args), seed=seed, plugin_configs=configs
    )


@cli.command()
@click.argument("pod")
@source_options
@output_option
@engine_options
def explain(
    pod: str, output: str, profile: str, plugin_configs: tuple[str, ...], seed: int, **src: Any
) -> None:
    """Explain whether and where NAMESPACE/POD schedules, which devices it gets, and why not."""
    from kubegpu.explain.pending import explain_pod

    snap = load_snapshot(**src)
    key = pod if "/" in pod else f"default/{pod}"
    target = snap.pod(key)
    if target is None:
        raise click.ClickException(f"pod {key} is not in the snapshot ({snap.description})")
    if target.node_name:
        click.echo(
            f"note: {key} is already bound to {target.node_name}; explaining it as if it were pending",
            err=True,
        )
    exp = explain_pod(make_engine(snap, profile, plugin_configs, seed), target)
    emit(exp.to_dict(), output, lambda: render.explanation(exp))


@cli.command()
@source_options
@output_option
@click.option(
    "--pods",
    "pods_file",
    type=click.Path(path_type=Path),
    default=None,
    help="Pod manifests to create first (validated and admitted as the API server would).",
)
@click.option(
    "--write",
    "write_to",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the resulting snapshot (bound pods get spec.nodeName) as a YAML List.",
)
@click.option(
    "--scheduler-name",
    default=None,
    help="Schedule pods with this spec.schedulerName (default: the profile's, default-scheduler or kubegpu).",
)
@engine_options
def schedule(output: str, pods_file: Path | None, write_to: Path | None, scheduler_name: str | None, profile: str,
             plugin_configs: tuple[str, ...], seed: int, **src: Any) -> None:  # fmt: skip
    """Schedule the pending pods in queue order (priority, then creation time) and print each outcome."""
    from kubegpu.admission.admit import admit_pods
    from kubegpu.scheduler.loop import run_queue
    from kubegpu.snapshot_writer import write_snapshot
    from kubegpu.sources import read_path

    snap = load_snapshot(**src)
    admissions = []
    if pods_file is not None:
        errors: list[Any] = []
        admissions = admit_pods(snap, read_path(pods_file, errors))
        for err in errors:
            click.echo(f"error: {err.one_line()}", err=True)
    new_pods = [a.pod for a in admissions if a.pod is not None]
    engine = make_engine(snap, profile, plugin_configs, seed, scheduler_name)
    ours = engine.profile.scheduler_name
    pending = [p for p in snap.pending_pods() if not p.scheduling_gates]
    others = [p for p in pending if p.scheduler_name != ours]
    outcomes = run_queue(engine.scheduler, [p for p in pending if p.scheduler_name == ours] + new_pods)
    data = render.schedule_data(outcomes, admissions, others)
    emit(data, output, lambda: render.schedule_table(data))
    if write_to is not None:
        written = [a.raw for a in admissions if a.pod is not None and a.raw is not None]
        write_snapshot(snap, outcomes, write_to, written)
        click.echo(f"wrote {write_to}", err=True)


@cli.command()
@source_options
@output_option
@click.option("--pool-label", default="accelerator.example.com/pool", show_default=True,
              help="Node label that names hardware pools; where a node lacks it, karpenter.sh/nodepool, "
                   "cloud.google.com/gke-nodepool, eks.amazonaws.com/nodegroup, kubernetes.azure.com/agentpool, "
                   "node.kubernetes.io/instance-type are tried in turn.")
@click.option("--pod", "one_pod", default=None, metavar="NAMESPACE/NAME", help="Only this Pending pod, in full.")
@click.option("--node", "one_node", default=None, metavar="NAME", help="Only this node, in full.")
@click.option("--all", "everything", is_flag=True, help="Every Pending pod and node (the grouped view's detail).")
@engine_options  # fmt: skip
def diagnose(
    output: str, pool_label: str, one_pod: str | None, one_node: str | None, everything: bool, profile: str,
    plugin_configs: tuple[str, ...], seed: int, **src: Any
) -> None:  # fmt: skip
    """The main job: a headline, every Pending GPU pod explained (grouped by shape and cause on large
    clusters), the GPU nodes by pool, and what the snapshot shows is broken."""
    from kubegpu.cli import summary_view
    from kubegpu.explain.diagnose import diagnose as run_diagnose
    from kubegpu.explain.summary import pod_shape

    snap = load_snapshot(**src)
    report = run_diagnose(make_engine(snap, profile, plugin_configs, seed), pool_label=pool_label)
    shapes = {str(p.key): pod_shape(p) for p in snap.pending_pods()}
    # the table view never needs the full dict (every node's evidence for every pod: 800 MB at 5,000 nodes)
    emit(report.to_dict() if output != "table" else None, output,
         lambda: summary_view.show(report, shapes, everything=everything, pod=one_pod, node=one_node))  # fmt: skip


@cli.command()
@source_options
@output_option
@click.option(
    "--now",
    default=None,
    help="RFC 3339 time that eviction costs are measured at (default: the snapshot's newest pod timestamp).",
)
@click.option("--device-plugin-config", "plugin_configs", multiple=True, metavar="[NAME=]FILE")
@click.option("--seed", default=0, show_default=True)
def queues(output: str, now: str | None, plugin_configs: tuple[str, ...], seed: int, **src: Any) -> None:
    """Queues (GpuQueue/GpuCohort), their usage, borrowing and fair share, and one admission cycle:
    each pending workload's position, and where it goes or why it waits."""
    from kubegpu.batch.objects import parse_batch_objects
    from kubegpu.batch.session import BatchSession
    from kubegpu.model.podgroup import parse_time, snapshot_time

    snap = load_snapshot(**src)
    queue_objs, cohorts, groups, errors = parse_batch_objects(snap.batch_objects)
    for err in errors:
        click.echo(f"error: {err.one_line()}", err=True)
    at = parse_time(now) if now else snapshot_time(snap.pods)
    if now and at is None:
        raise click.BadParameter(f"not an RFC 3339 time: {now}", param_hint="--now")
    args = {"CheckpointAwarePreemption": {"now": at.isoformat()}} if at else {}
    engine = make_engine(snap, "kubegpu", plugin_configs, seed, plugin_args=args)
    session = BatchSession(engine.scheduler, snap, queue_objs, cohorts, groups, now=at)
    before = render.queue_rows(session)
    decisions = session.run()
    data = {
        "now": at.isoformat() if at else None,
        "queues": before,
        "decisions": [d.to_dict() for d in decisions],
    }
    emit(data, output, lambda: render.queues_table(data))


@cli.command()
@source_options
@output_option
@click.option(
    "--set",
    "what_if",
    multiple=True,
    metavar="NAMESPACE/QUOTA:RESOURCE=QUANTITY",
    help="What if this hard limit were lowered (or raised)? Repeatable.",
)
def quota(output: str, what_if: tuple[str, ...], **src: Any) -> None:
    """ResourceQuota usage per namespace and resource (requests.nvidia.com/gpu, MIG and renamed
    resources each on their own line), and what a changed limit would do (R8)."""
    from kubegpu.admission.quota_report import quota_rows

    snap = load_snapshot(**src)
    rows = quota_rows(snap, what_if)
    emit({"quotas": rows}, output, lambda: render.quota_table(rows))


@cli.command()
@source_options
@output_option
@click.option(
    "--previous",
    "previous",
    type=click.Path(path_type=Path),
    default=None,
    help="An earlier snapshot of the same cluster: report what changed since.",
)
@click.option(
    "--save",
    "save_to",
    type=click.Path(path_type=Path),
    default=None,
    help="Write this snapshot (as read) to PATH, to compare against next time.",
)
@click.option("--pending-threshold", default=600, show_default=True, help="Seconds a GPU pod may be Pending.")
@click.option(
    "--now", default=None, help="RFC 3339 time of the inspection (default: the snapshot's newest pod time)."
)
@click.option("--pool-label", default="accelerator.example.com/pool", show_default=True)
@click.option("--prometheus", "prometheus_url", default=None, metavar="URL",
              help="Prometheus scraping `kubegpu exporter`: add Xid, memory and idle-GPU findings.")  # fmt: skip
def inspect(output: str, previous: Path | None, save_to: Path | None, pending_threshold: int, now: str | None,
            pool_label: str, prometheus_url: str | None, **src: Any) -> None:  # fmt: skip
    """Routine inspection (R16): findings now, and changes since --previous. Exit 0 clean, 1 warnings, 2 errors."""
    from kubegpu.explain.inspect import inspect as run_inspect
    from kubegpu.model.podgroup import parse_time, snapshot_time
    from kubegpu.snapshot_writer import write_snapshot
    from kubegpu.sources import load_files

    snap = load_snapshot(**src)
    before = load_files(previous) if previous is not None else None
    at = parse_time(now) if now else snapshot_time(snap.pods)
    if at is None:
        raise click.BadParameter("give --now: the snapshot has no pod timestamps", param_hint="--now")
    from kubegpu.explain.device_metrics import Prometheus

    prom = Prometheus(prometheus_url) if prometheus_url else None
    report = run_inspect(snap, at, before, pending_threshold, pool_label, prom)
    emit(report.to_dict(), output, lambda: render.inspection(report))
    if save_to is not None:
        write_snapshot(snap, [], save_to)
    raise SystemExit(report.exit_code)


@cli.group()
def demo() -> None:
    """The embedded demo cluster."""


@demo.command("export")
@click.argument("directory", type=click.Path(path_type=Path))
def demo_export(directory: Path) -> None:
    """Write the demo cluster and the demo's new pod manifests into DIRECTORY."""
    from importlib import resources

    directory.mkdir(parents=True, exist_ok=True)
    for name in ("cluster.yaml", "new-pods.yaml"):
        text = resources.files("kubegpu.demo").joinpath(name).read_text(encoding="utf-8")
        (directory / name).write_text(text, encoding="utf-8")
        click.echo(str(directory / name))


cli.add_command(node)
cli.add_command(plan)
cli.add_command(exporter)
cli.add_command(cluster_exporter)
cli.add_command(report)
cli.add_command(ui)
for live_command in (scheduler, extender, webhook, lint):
    cli.add_command(live_command)
cli.add_command(bench)
cli.add_command(simulate)


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KubegpuError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except SystemExit:
        raise
    except BrokenPipeError:
        sys.exit(0)
