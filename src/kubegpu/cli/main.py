"""``kubegpu`` / ``kubectl gpu``: explain, schedule and diagnose GPU pods on a snapshot, the demo or a cluster."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import click

from kubegpu.cli.options import (
    ONE_SHOT_PROCESS,
    all_option,
    emit,
    engine_options,
    load_snapshot,
    make_engine,
    one_shot,
    output_option,
    output_starts,
    report_errors,
    scheduler_config_option,
    source_options,
    version_line,
    versioned,
)
from kubegpu.errors import InputError, KubegpuError

# The commands that live in their own modules: name -> (module, attribute, the line `kubegpu --help` shows).
# Imported only when run (or asked for their own --help), so that `kubegpu --help` and the commands
# defined here do not load numpy, rich, kubernetes, gRPC or Prometheus. tests/test_cli_startup.py checks
# each line against the command's own docstring.
LAZY_COMMANDS: dict[str, tuple[str, str, str]] = {
    "bench": ("kubegpu.cli.sim_cmd", "bench", "Benchmarks over published traces."),
    "cluster-exporter": ("kubegpu.cli.cluster_exporter_cmd", "cluster_exporter",
                         "Serve stranded GPUs, fragmentation and Pending GPU pods per pool, from the scheduling core."),
    "exporter": ("kubegpu.cli.exporter_cmd", "exporter",
                 "Serve DCGM-compatible GPU metrics, per-pod GPU memory and kubegpu's own metrics to Prometheus."),
    "extender": ("kubegpu.cli.live_cmd", "extender",
                 "Serve the kube-scheduler extender API (POST /filter, /prioritize, /bind, /preempt) from the core."),
    "lint": ("kubegpu.cli.live_cmd", "lint", "Check Pod and workload manifests against the webhook's GPU rules."),
    "node": ("kubegpu.cli.node_cmd", "node",
             "Node agent: discover GPUs, print labels and CDI spec, serve the kubelet device plugin."),
    "plan": ("kubegpu.cli.plan_cmd", "plan",
             "Plan a change (labels, taints, drain, quota, MIG, time-slicing, upgrades, kubelet policy) with its rollback."),
    "report": ("kubegpu.cli.report_cmd", "report",
               "Write the GPU map, Pending pods, quotas, fragmentation and findings as ONE self-contained HTML file."),
    "scheduler": ("kubegpu.cli.live_cmd", "scheduler",
                  "Run kubegpu as a second scheduler: bind the pods with spec.schedulerName = --scheduler-name."),
    "simulate": ("kubegpu.cli.sim_cmd", "simulate",
                 "Replay a workload in time (kube-scheduler's queue, node events) before and after a change; with "
                 "queue objects or pod groups among the inputs, through the batch layer (queues, quota, gangs)."),
    "ui": ("kubegpu.cli.report_cmd", "ui",
           "Serve the report on http://127.0.0.1:PORT/, re-reading the snapshot directory or --kube periodically."),
    "webhook": ("kubegpu.cli.live_cmd", "webhook",
                "Serve the GPU admission rules (POST /validate) and GPU pod mutations (POST /mutate), AdmissionReview v1."),
}  # fmt: skip


class _LazyGroup(click.Group):
    """A group whose ``LAZY_COMMANDS`` are imported the first time one of them is looked up to run."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS and cmd_name not in self.commands:
            module, attribute, _ = LAZY_COMMANDS[cmd_name]
            command = getattr(importlib.import_module(module), attribute)
            assert isinstance(command, click.Command)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list without importing the lazy commands: their line comes from ``LAZY_COMMANDS``."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            if name in LAZY_COMMANDS and name not in self.commands:
                rows.append(
                    (name, click.Command(name, help=LAZY_COMMANDS[name][2]).get_short_help_str(limit))
                )
            else:
                command = self.commands[name]
                if not command.hidden:
                    rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kubegpu")
def cli() -> None:
    """GPU scheduling, allocation and diagnosis for Kubernetes.

    Runs kube-scheduler's rules of the cluster's own release (Kubernetes 1.30 to 1.37) on a snapshot,
    the embedded demo or a live cluster (read-only) and explains every Pending GPU pod with evidence.
    """


@cli.command()
@click.argument("pod")
@source_options
@output_option
@engine_options
@scheduler_config_option
@all_option(
    "every_node", "A row for every refused node (on large clusters nodes that read alike share one row)."
)
@one_shot
def explain(
    pod: str, output: str, profile: str, plugin_configs: tuple[str, ...], seed: int,
    scheduler_config: Path | None, every_node: bool, **src: Any
) -> None:  # fmt: skip
    """Explain whether and where NAMESPACE/POD schedules, which devices it gets, and why not."""
    from kubegpu.cli import render
    from kubegpu.explain.pending import explain_pod

    snap = load_snapshot(**src)
    key = pod if "/" in pod else f"default/{pod}"
    target = snap.pod(key)
    if target is None:
        raise click.ClickException(f"pod {key} is not in the snapshot ({snap.description})")
    stuck = None
    if target.node_name:
        from dataclasses import replace

        from kubegpu.explain.findings_bound import why_not_running

        stuck = why_not_running(snap, target)  # read before the pod is unbound below
        click.echo(
            f"note: {key} is already bound to {target.node_name}; explaining it as if it were pending "
            f"(its own requests and host ports on {target.node_name} left out)",
            err=True,
        )
        # as a pending pod it holds nothing yet: left on its node it would block itself there (its own
        # hostPort, GPUs, DRA claim seen as taken), as the pending copies of plan/effect.py are unbound too
        bound, target = target, replace(target, node_name="", phase="Pending", start_time="")
        snap.pods = [target if p is bound else p for p in snap.pods]
    engine = make_engine(snap, profile, plugin_configs, seed, scheduler_config=scheduler_config,
                         scheduler_name=target.scheduler_name if scheduler_config else None)  # fmt: skip
    exp = explain_pod(engine, target)
    exp.bound = stuck.to_dict() if stuck is not None else None
    emit(versioned(exp.to_dict(), snap), output,
         lambda: version_line(snap, render.explanation, exp, every_node=every_node))  # fmt: skip
    report_errors(snap)


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
@scheduler_config_option
@all_option("every_pod", "A row for every pod (on long passes pods with the same outcome share one row).")
@one_shot
def schedule(output: str, pods_file: Path | None, write_to: Path | None, scheduler_name: str | None, profile: str,
             plugin_configs: tuple[str, ...], seed: int, scheduler_config: Path | None, every_pod: bool,
             **src: Any) -> None:  # fmt: skip
    """Schedule the pending pods in queue order (priority, then creation time) and print each outcome."""
    from kubegpu.admission.admit import admit_pods
    from kubegpu.cli import render
    from kubegpu.scheduler.loop import run_queue
    from kubegpu.snapshot_writer import write_snapshot
    from kubegpu.sources import read_path

    snap = load_snapshot(**src)
    admissions = []
    if pods_file is not None:
        errors: list[Any] = []
        try:
            from kubegpu.scheduler.versions import behaviour

            admissions = admit_pods(
                snap,
                read_path(pods_file, errors),
                pod_level_resources=behaviour(snap.kube_version).pod_level_resources,
            )
        except KubegpuError as exc:  # a missing file or directory: an input error like any other
            errors.append(exc)
        errors += [e for e in (a.input_error() for a in admissions) if e is not None]
        report_errors(snap, errors)
    new_pods = [a.pod for a in admissions if a.pod is not None]
    engine = make_engine(
        snap, profile, plugin_configs, seed, scheduler_name, scheduler_config=scheduler_config
    )
    ours = engine.profile.scheduler_name
    pending = [p for p in snap.pending_pods() if not p.scheduling_gates]
    others = [p for p in pending if p.scheduler_name != ours]
    outcomes = run_queue(engine.scheduler, [p for p in pending if p.scheduler_name == ours] + new_pods)
    data = render.schedule_data(outcomes, admissions, others)
    data = versioned(data, snap)
    emit(data, output, lambda: version_line(snap, render.schedule_table, data, every_pod))
    if write_to is not None:
        from kubegpu.scheduler.plugins.dynamic_resources import DynamicResources

        written = [a.raw for a in admissions if a.pod is not None and a.raw is not None]
        dra = next((p for p in engine.framework.plugins if isinstance(p, DynamicResources)), None)
        write_snapshot(snap, outcomes, write_to, written, dra.changed_claims() if dra is not None else None)
        click.echo(f"wrote {write_to}", err=True)
    report_errors(snap)


@cli.command()
@source_options
@output_option
@click.option(
    "--pool-label",
    default="accelerator.example.com/pool",
    show_default=True,
    help="Node label that names hardware pools; where a node lacks it, karpenter.sh/nodepool, "
    "cloud.google.com/gke-nodepool, eks.amazonaws.com/nodegroup, kubernetes.azure.com/agentpool, "
    "node.kubernetes.io/instance-type are tried in turn.",
)
@click.option(
    "--pod", "one_pod", default=None, metavar="NAMESPACE/NAME", help="Only this Pending pod, in full."
)
@click.option("--node", "one_node", default=None, metavar="NAME", help="Only this node, in full.")
@all_option("everything", "Every Pending pod and node (the grouped view's detail).")
@click.option(
    "--exit-code",
    "with_exit_code",
    is_flag=True,
    help="Exit 2 when a finding is critical, 1 when the worst is a warning, else 0 (as `inspect`).",
)
@engine_options  # fmt: skip
@scheduler_config_option
@one_shot
def diagnose(
    output: str, pool_label: str, one_pod: str | None, one_node: str | None, everything: bool, profile: str,
    plugin_configs: tuple[str, ...], seed: int, with_exit_code: bool, scheduler_config: Path | None, **src: Any
) -> None:  # fmt: skip
    """The main job: a headline, every Pending GPU pod explained (grouped by shape and cause on large
    clusters), the GPU nodes by pool, and what the snapshot shows is broken."""
    from kubegpu.cli import summary_view
    from kubegpu.explain.diagnose import diagnose as run_diagnose
    from kubegpu.explain.summary import pod_ask, summarize

    snap = load_snapshot(**src)
    engine = make_engine(snap, profile, plugin_configs, seed, scheduler_config=scheduler_config)
    report = run_diagnose(engine, pool_label=pool_label)
    asks = {str(p.key): pod_ask(p, snap.dra) for p in snap.pending_pods()}
    # -o json|yaml: the table view's headline and groups first (the table view summarizes for itself)
    head = {"summary": summarize(report, asks).to_dict()} if output != "table" else {}
    if output == "json":  # every node's evidence for every pod: 1.7 GB at 5,000 nodes, written piecewise
        from kubegpu.cli import json_stream

        output_starts()
        json_stream.dump(versioned({**head, **report.to_dict(shallow=True)}, snap), sys.stdout.write)
    else:  # the table view never needs the full dict
        emit(versioned({**head, **report.to_dict()}, snap) if output != "table" else None, output,
             lambda: version_line(snap, summary_view.show, report, asks, everything=everything, pod=one_pod,
                                  node=one_node))  # fmt: skip
    report_errors(snap)  # --strict: exit 2 on any input error, also those the engine found
    if with_exit_code:
        from kubegpu.explain.findings import exit_code

        raise SystemExit(exit_code(report.findings))


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
@all_option("every_workload", "A row for every workload (on long cycles workloads alike share one row).")
@one_shot
def queues(
    output: str, now: str | None, plugin_configs: tuple[str, ...], seed: int, every_workload: bool, **src: Any
) -> None:
    """Queues (GpuQueue/GpuCohort), their usage, borrowing and fair share, and one admission cycle:
    each pending workload's position, and where it goes or why it waits."""
    from kubegpu.batch.objects import parse_batch_objects
    from kubegpu.batch.session import BatchSession
    from kubegpu.cli import render
    from kubegpu.cli.when import command_now

    snap = load_snapshot(**src)
    queue_objs, cohorts, groups, _ = parse_batch_objects(snap.batch_objects)  # errors: load_snapshot's
    at = command_now(snap, now)
    engine = make_engine(
        snap, "kubegpu", plugin_configs, seed, clock=lambda: at
    )  # preemption priced at --now
    session = BatchSession(engine.scheduler, snap, queue_objs, cohorts, groups, now=at)
    before = render.queue_rows(session)
    decisions = session.run()
    data = {
        "now": at.isoformat(),
        "queues": before,
        "decisions": [d.to_dict() for d in decisions],
    }
    emit(data, output, lambda: render.queues_table(data, every_workload))
    report_errors(snap)


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
@one_shot
def quota(output: str, what_if: tuple[str, ...], **src: Any) -> None:
    """ResourceQuota usage per namespace and resource (requests.nvidia.com/gpu, MIG and renamed
    resources each on their own line), and what a changed limit would do."""
    from kubegpu.admission.quota_report import quota_rows
    from kubegpu.cli import render

    snap = load_snapshot(**src)
    rows = quota_rows(snap, what_if)
    emit({"quotas": rows}, output, lambda: render.quota_table(rows))
    report_errors(snap)


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
@all_option("everything", "A panel for every finding (past 30, findings of one title share a panel).")
@one_shot
def inspect(output: str, previous: Path | None, save_to: Path | None, pending_threshold: int, now: str | None,
            pool_label: str, prometheus_url: str | None, everything: bool, **src: Any) -> None:  # fmt: skip
    """Routine inspection: findings now, and changes since --previous. Exit 0 clean, 1 warnings, 2 errors."""
    from kubegpu.cli import render
    from kubegpu.cli.when import command_now
    from kubegpu.explain.inspect import inspect as run_inspect
    from kubegpu.snapshot_writer import write_snapshot
    from kubegpu.sources import load_files

    snap = load_snapshot(**src)
    before = None
    if previous is not None:
        try:
            before = load_files(previous)
        except InputError as exc:  # a missing file: said, and the inspection goes on without it
            report_errors(snap, [exc])
        else:
            report_errors(snap, [*before.errors])
    at = command_now(snap, now)
    from kubegpu.explain.device_metrics import Prometheus

    prom = Prometheus(prometheus_url) if prometheus_url else None
    report = run_inspect(snap, at, before, pending_threshold, pool_label, prom)
    emit(report.to_dict(), output, lambda: render.inspection(report, everything))
    if save_to is not None:
        write_snapshot(snap, [], save_to)
    report_errors(snap)
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


def main() -> None:
    try:
        cli.main(standalone_mode=False, obj=ONE_SHOT_PROCESS)
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
