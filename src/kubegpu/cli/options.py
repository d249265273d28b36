"""The options and helpers every source-reading command shares: ``--snapshot`` / ``--demo`` / ``--kube``,
``-o``, the engine options, loading the snapshot and building the ``Engine``.

Owns only what the command modules share, so that ``main`` and each ``*_cmd`` module import this
module and never each other (``main`` registers the command modules; they no longer reach back into it).

Must not import: ``kubegpu.cli.main`` or any ``*_cmd`` module; anything heavier than click and yaml at
import time (the core, sources and the engine are imported inside the helpers).
"""

from __future__ import annotations

import functools
import gc
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import click

if TYPE_CHECKING:
    from datetime import datetime

    from kubegpu.devices.sharing import PluginConfig
    from kubegpu.errors import InputError
    from kubegpu.model.snapshot import ClusterSnapshot
    from kubegpu.scheduler.assembly import Engine

F = TypeVar("F", bound=Callable[..., Any])
FORMATS = click.Choice(["table", "json", "yaml"])


class BadInput(click.ClickException):
    """Bad input (an ``InputError``) as one ``Error:`` line and exit status 2, as ``cli.main`` does."""

    exit_code = 2


SNAPSHOT_HELP: Final = "`kubectl get … -o yaml|json` or `kubectl cluster-info dump` output, a manifest file or a directory (repeatable)."


def source_options(f: F) -> F:
    """--snapshot / --demo / --kube: the three sources behind one interface."""
    options = [
        click.option("--snapshot", "snapshots", multiple=True, type=click.Path(path_type=Path),
                     help=SNAPSHOT_HELP),
        click.option("--demo", is_flag=True, help="Use the embedded demo cluster."),
        click.option("--kube", is_flag=True, help="Read a live cluster (list only, read-only)."),
        click.option("--context", default=None, help="kubeconfig context for --kube."),
        click.option("--kubeconfig", default=None, help="kubeconfig file for --kube."),
        click.option("--in-cluster", is_flag=True, help="Use the in-cluster service account for --kube."),
        click.option("--strict", is_flag=True, help="Exit with status 2 if any input object was rejected."),
        click.option("--kube-version", default=None, metavar="1.MINOR",
                     help="kube-scheduler release to reproduce (default: the API server's with --kube, else the "
                          "newest kubelet in the snapshot, else the newest supported)."),
    ]  # fmt: skip
    for option in reversed(options):
        f = option(f)
    return f


# ``main`` passes this as the root context's ``obj``: the process is the command line's, and ends with the
# command (``one_shot`` then freezes what the command made)
ONE_SHOT_PROCESS: Final = "one-shot process"


def one_shot(f: F) -> F:
    """A command that reads its source once, answers and ends: the cyclic collector stays paused for the
    whole of it (``bulk_load``), not only while the snapshot loads. The snapshot, the engine and the
    evidence are millions of small acyclic objects; each pass the collector made over them freed nothing
    reference counting does not, and cost 15-22 % of the CPU of explain, inspect, schedule and queues on
    5,000 nodes (29 % of explain on 5,000 DRA nodes). Run by ``main``, the command's objects are frozen at
    its end (``gc.freeze``), so that the interpreter's last full collection at exit does not walk them
    either; under another caller (a test's ``CliRunner``, many commands in one process) the collector just
    resumes. Never on a serving command: a long-running process keeps its collector."""

    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        from kubegpu.model.bulk import bulk_load

        with bulk_load():
            try:
                return f(*args, **kwargs)
            finally:
                _freeze_if_one_shot()  # (inside the pause: no collection ran between the command's end and this)

    return run  # type: ignore[return-value]


def _freeze_if_one_shot() -> None:
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.find_root().obj == ONE_SHOT_PROCESS:
        gc.freeze()


def output_starts() -> None:
    """The answer is made; writing it begins: in a ``one_shot`` command, what exists is frozen (when run as
    the command line) and the collector runs again for what writing makes (``model.bulk.resume``)."""
    from kubegpu.model.bulk import resume

    _freeze_if_one_shot()
    resume()


def all_option(dest: str, what: str) -> Callable[[F], F]:
    """``--all``: every row or panel of a view that groups alike ones on a large cluster (``what``: the help)."""
    return click.option("--all", dest, is_flag=True, help=what)


def output_option(f: F) -> F:
    return click.option("-o", "--output", "output", type=FORMATS, default="table", show_default=True)(f)


def load_snapshot(snapshots: tuple[Path, ...], demo: bool, kube: bool, context: str | None, kubeconfig: str | None,
                  in_cluster: bool, strict: bool, kube_version: str | None = None) -> ClusterSnapshot:  # fmt: skip
    from kubegpu import sources
    from kubegpu.errors import InputError

    check_kube_version(kube_version)

    chosen = sum([bool(snapshots), demo, kube])
    if chosen != 1:
        raise click.UsageError("give exactly one source: --snapshot PATH, --demo or --kube")
    if demo:
        snap = sources.load_demo()
    elif kube:
        snap = sources.load_live(context=context, kubeconfig=kubeconfig, in_cluster=in_cluster)
    else:
        snap = sources.load_files(*snapshots)
    _check_batch_objects(snap)
    _STRICT[id(snap)] = (strict, 0, 0)
    report_errors(snap)
    if snapshots and not (snap.raw_objects or snap.ignored or snap.not_modelled):
        # every file or object was refused, or there was none (`kubectl get … > f` that failed leaves an empty
        # f, its error on the terminal): an answer ("nothing is blocked") would describe an empty cluster
        why = (
            "(each refusal is above)"
            if snap.errors
            else "(an empty file? kubectl writes its errors to stderr)"
        )
        raise InputError(
            f"no object could be read {why}, so there is nothing to diagnose",
            source=", ".join(str(p) for p in snapshots),
        )
    note = snap.not_modelled_note()  # other projects' objects: accepted (not errors), said once
    for line in [*snap.notes, note] if note else snap.notes:
        click.echo(f"note: {line}", err=True)
    choose_kube_version(snap, kube_version)
    return snap


# id(snapshot) -> (--strict given, how many of its errors were handled, how many of those were printed)
_STRICT: dict[int, tuple[bool, int, int]] = {}
# input errors printed one by one; beyond, one line counts the rest (a file of 15,000 refused objects is not
# 15,000 lines of stderr: the first show the pattern, ``-o json``'s inputErrors lists every one)
ERRORS_SHOWN: Final = 20


def report_errors(snap: ClusterSnapshot, extra: Sequence[InputError] = ()) -> None:
    """Print the input errors not printed yet (``extra``: errors of other inputs the command read, such as
    ``--pods`` or ``--previous``, joined to the snapshot's); with ``--strict``, exit 2 if there is any.

    Called once the snapshot is read, and again at the end of every command: the engine finds some
    errors only when it looks (a node's device inventory or plugin config annotation), and ``--strict``
    means exit 2 whenever any input object was rejected, whenever that was found."""
    snap.errors.extend(extra)
    strict, handled, printed = _STRICT.get(id(snap), (False, 0, 0))
    new = snap.errors[handled:]
    room = max(ERRORS_SHOWN - printed, 0)
    for err in new[:room]:
        click.echo(f"error: {err.one_line()}", err=True)
    if len(new) > room:
        click.echo(
            f"error: … and {len(new) - room} more input object(s) refused (-o json lists each under inputErrors)",
            err=True,
        )
    _STRICT[id(snap)] = (strict, len(snap.errors), printed + min(room, len(new)))
    if snap.errors and strict:
        raise SystemExit(2)


def _check_batch_objects(snap: ClusterSnapshot) -> None:
    """GpuQueue, GpuCohort and PodGroup objects are read by every command, so that a broken one is an
    input error everywhere (and ``--strict`` exits 2), not only where queues are used."""
    if not snap.batch_objects:
        return
    from kubegpu.batch.objects import parse_batch_objects

    snap.errors.extend(parse_batch_objects(snap.batch_objects)[3])


def check_kube_version(given: str | None) -> None:
    """An unsupported or malformed ``--kube-version`` stops the command (exit 2) before anything is read."""
    from kubegpu.errors import ConfigError
    from kubegpu.scheduler.versions import behaviour

    if given is not None:
        try:
            behaviour(given)
        except ConfigError as err:
            raise click.BadParameter(str(err), param_hint="--kube-version") from None


def choose_kube_version(snap: ClusterSnapshot, given: str | None) -> None:
    """``--kube-version``, else the live API server's, else the newest kubelet's, else the newest supported."""
    from kubegpu.scheduler.versions import choose

    chosen, snap.kube_version_from, warning = choose(
        given, snap.server_version, snap.kubelet_versions(), snap.api_versions()
    )
    snap.kube_version = chosen.name
    if warning:
        click.echo(f"warning: {warning}", err=True)


def versioned(data: dict[str, Any], snap: ClusterSnapshot) -> dict[str, Any]:
    """``-o json|yaml``: the kube-scheduler release the answer reproduces, as ``kubeVersion``."""
    return {"kubeVersion": snap.kube_version, **data}


def version_line(snap: ClusterSnapshot, table: Callable[..., None], *args: Any, **kwargs: Any) -> None:
    """The table view: which kube-scheduler release the answer reproduces, then ``table(*args, **kwargs)``."""
    click.echo(f"kube-scheduler {snap.kube_version} (from {snap.kube_version_from})")
    table(*args, **kwargs)


def emit(data: Any, output: str, table: Callable[[], None]) -> None:
    output_starts()
    if output == "json":
        click.echo(json.dumps(data, indent=2))
    elif output == "yaml":
        import yaml

        click.echo(yaml.safe_dump(data, sort_keys=False, width=120), nl=False)
    else:
        table()


def engine_options(f: F) -> F:
    """--profile / --device-plugin-config / --seed: how the core is set up for the snapshot."""
    options = [
        click.option("--profile", type=click.Choice(["default", "kubegpu"]), default="default", show_default=True,
                     help="default = kube-scheduler as shipped (for --kube-version); kubegpu = plus device-level "
                          "placement."),
        click.option("--device-plugin-config", "plugin_configs", multiple=True, metavar="[NAME=]FILE",
                     help="NVIDIA device plugin config (version: v1); NAME matches the node label "
                          "nvidia.com/device-plugin.config, no NAME = the default (repeatable)."),
        click.option("--seed", default=0, show_default=True, help="Seed for upstream's random tie-breaks."),
    ]  # fmt: skip
    for option in reversed(options):
        f = option(f)
    return f


def load_plugin_configs(plugin_configs: tuple[str, ...]) -> dict[str, PluginConfig]:
    """``--device-plugin-config [NAME=]FILE`` items, read and checked: NAME (``""``: the default) → config."""
    from kubegpu.devices.plugin_config import load_plugin_config

    configs = {}
    for item in plugin_configs:
        name, _, path = item.rpartition("=")
        configs[name] = load_plugin_config(Path(path))
        for warning in configs[name].warnings:  # what the NVIDIA plugin would ignore: accepted, but said
            click.echo(f"warning: {warning}", err=True)
    return configs


def scheduler_config_option(f: F) -> F:
    """--scheduler-config: a kube-scheduler KubeSchedulerConfiguration file (explain, schedule, diagnose)."""
    return click.option(
        "--scheduler-config", "scheduler_config", type=click.Path(path_type=Path), default=None,
        help="kube-scheduler's KubeSchedulerConfiguration (v1) file: its profile (the pods' schedulerName, else "
             "the first) replaces --profile; what kubegpu cannot reproduce is named in the output.",
    )(f)  # fmt: skip


def load_scheduler_config(path: Path, kube_version: str | None) -> Any:
    """The file's ``SchedulerConfig`` (``scheduler.kube_config``); a bad file is one ``KubegpuError`` line."""
    import yaml

    from kubegpu.errors import ConfigError, read_text
    from kubegpu.scheduler.kube_config import parse_scheduler_config

    try:
        doc = yaml.safe_load(read_text(path, "the scheduler configuration"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not YAML: {str(exc).splitlines()[0]}") from None
    return parse_scheduler_config(doc, str(path), kube_version)


def make_engine(
    snap: ClusterSnapshot,
    profile: str,
    plugin_configs: tuple[str, ...],
    seed: int,
    scheduler_name: str | None = None,
    clock: Callable[[], datetime] | None = None,
    scheduler_config: Path | None = None,
) -> Engine:
    """The engine the engine options declare, built by the one assembly (``scheduler.assembly``)."""
    from kubegpu.scheduler.assembly import Engine, SchedulerSpec

    configs = load_plugin_configs(plugin_configs)
    if scheduler_config is None:
        spec = SchedulerSpec(profile, scheduler_name, seed=seed, clock=clock, plugin_configs=configs)
    else:
        if profile != "default":
            raise click.UsageError("give --profile or --scheduler-config, not both")
        chosen = load_scheduler_config(scheduler_config, snap.kube_version).profile(scheduler_name)
        spec = SchedulerSpec(chosen, seed=seed, clock=clock, plugin_configs=configs)
    return Engine(snap, spec)
