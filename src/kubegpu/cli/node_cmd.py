"""``kubegpu node``: the node agent's commands (R2.2, R3, R6, R12).

``discover`` prints a node's GPU inventory (``-o json`` writes a reading in the fixture format),
``labels`` the GFD-style labels (``--nfd-feature-file`` also writes them for NFD), ``cdi`` the CDI spec,
``device-plugin`` (alias ``serve``) runs the kubelet device plugin, and ``doctor`` checks the GPU chain.
Inventories come from NVML (``--backend nvml``, the default) or a recorded reading (``--reading FILE``).
Thin: parse options, call ``kubegpu.devices``/``kubegpu.node``, render.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

import click
import yaml
from rich.console import Console
from rich.table import Table

from kubegpu.cli.options import BadInput
from kubegpu.devices import (
    MigStrategy,
    NodeInventory,
    PluginConfig,
    ResourcePlan,
    cdi_spec,
    gfd_labels,
    inventory_to_reading,
    load_plugin_config,
    plan_resources,
)
from kubegpu.devices.health import HealthChecks
from kubegpu.devices.inventory import MIB
from kubegpu.devices.labels import nfd_feature_text
from kubegpu.errors import InputError, KubegpuError
from kubegpu.node.discovery import NvmlBackend, NvmlUnavailable, RecordedBackend
from kubegpu.node.v1beta1 import DEVICE_PLUGIN_PATH

if TYPE_CHECKING:
    from kubegpu.node.health import NvmlHealthWatcher
    from kubegpu.node.plugin import DevicePluginServer
    from kubegpu.node.scheduler_choice import SchedulerChoice

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def _backend_options(*reading_flags: str) -> Callable[[F], F]:
    """--backend and the reading option, named by ``reading_flags``."""

    def decorate(f: F) -> F:
        f = click.option(
            *reading_flags,
            "reading",
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            help="A recorded reading (the JSON `node discover -o json` writes).",
        )(f)
        return click.option(
            "--backend",
            type=click.Choice(["nvml", "recorded"]),
            default=None,
            help="Read the GPUs through NVML (default) or a recorded reading (default with a reading).",
        )(f)

    return decorate


_config_option = click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="NVIDIA device plugin config file (version: v1; flags, sharing.timeSlicing).",
)


def _config_dir_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Per-node configs as NVIDIA's config manager lays them out: one file per name in a directory (the
    device plugin ConfigMap's keys), picked by the node's ``nvidia.com/device-plugin.config`` label."""
    f = click.option("--default-config", default="", envvar="DEFAULT_CONFIG",
                     help="Config name used when the node label is unset.")(f)  # fmt: skip
    f = click.option("--config-name", default="", envvar="CONFIG_NAME",
                     help="Value of the node's nvidia.com/device-plugin.config label (the DaemonSet passes it).")(f)  # fmt: skip
    return click.option("--config-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                        envvar="CONFIG_FILE_SRCDIR", help="Directory of named configs (a mounted ConfigMap).")(f)  # fmt: skip


def select_config_file(config_dir: Path, name: str, default: str) -> Path:
    """The file the label names, else the default one; a name without a file is an error, as upstream."""
    chosen = name or default
    if not chosen:
        raise InputError("no config name: give --config-name (the node label's value) or --default-config",
                         source=str(config_dir))  # fmt: skip
    for candidate in (config_dir / chosen, config_dir / f"{chosen}.yaml", config_dir / f"{chosen}.yml"):
        if candidate.is_file():
            return candidate
    known = sorted(p.name for p in config_dir.iterdir() if p.is_file() and not p.name.startswith("."))
    raise InputError(
        f"no config named {chosen!r} (available: {', '.join(known) or 'none'})", source=str(config_dir)
    )


_mig_option = click.option(
    "--mig-strategy",
    type=click.Choice([s.value for s in MigStrategy]),
    default=None,
    help="Overrides flags.migStrategy of the config file.",
)


@click.group("node")
def node() -> None:
    """Node agent: discover GPUs, print labels and CDI spec, serve the kubelet device plugin."""


@node.command("discover")
@_backend_options("--reading")
@click.option("-o", "--output", type=click.Choice(["table", "json", "yaml"]), default="table")
def discover(backend: str | None, reading: Path | None, output: str) -> None:
    """Print this node's GPU inventory (json: a reading in the fixture format)."""
    inv = _inventory(backend, reading)
    if output == "table":
        _print_inventory(inv)
    else:
        _dump(inventory_to_reading(inv), output)


@node.command("labels")
@_backend_options("--reading")
@_config_option
@_mig_option
@click.option("-o", "--output", type=click.Choice(["table", "json", "yaml"]), default="table")
@click.option(
    "--nfd-feature-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the labels as an NFD local feature file (e.g. "
    "/etc/kubernetes/node-feature-discovery/features.d/kubegpu).",
)
def labels(
    backend: str | None,
    reading: Path | None,
    config_file: Path | None,
    mig_strategy: str | None,
    output: str,
    nfd_feature_file: Path | None,
) -> None:
    """Print the GFD-style nvidia.com/* labels this node would carry."""
    result = _guard(lambda: gfd_labels(_inventory(backend, reading), _config(config_file, mig_strategy)))
    if nfd_feature_file is not None:
        _write_feature_file(nfd_feature_file, _guard(lambda: nfd_feature_text(result)))
    if output == "table":
        table = Table("label", "value")
        for key, value in result.items():
            table.add_row(key, value)
        Console().print(table)
    else:
        _dump(result, output)


@node.command("cdi")
@_backend_options("--reading")
@click.option("-o", "--output", type=click.Choice(["json", "yaml"]), default="yaml")
def cdi(backend: str | None, reading: Path | None, output: str) -> None:
    """Print the CDI spec (kind nvidia.com/gpu) for this node's GPUs."""
    _dump(cdi_spec(_inventory(backend, reading)), output)


@node.command("device-plugin")
@_backend_options("--nvml-reading", "--reading")
@_config_option
@_mig_option
@click.option(
    "--plugin-dir",
    "--socket-dir",
    "plugin_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEVICE_PLUGIN_PATH,
    show_default=True,
    help="kubelet's device plugin directory: holds kubelet.sock, gets one socket per resource.",
)
@click.option(
    "--health-recovery-seconds",
    type=click.FloatRange(min=0),
    default=300.0,
    show_default=True,
    help="Quiet period after a critical XID before a probe may return the device to Healthy; "
    "0 keeps it Unhealthy until restart, as the NVIDIA plugin does.",
)
@click.option(
    "--disable-healthchecks",
    envvar="DP_DISABLE_HEALTHCHECKS",
    default="",
    help="As the NVIDIA plugin's DP_DISABLE_HEALTHCHECKS: all, xids, or XID numbers to skip.",
)
@click.option(
    "--enable-healthchecks",
    envvar="DP_ENABLE_HEALTHCHECKS",
    default="",
    help="As the NVIDIA plugin's DP_ENABLE_HEALTHCHECKS (v0.18.0+): XIDs that count even if skipped, or all.",
)
@click.option(
    "--node-name",
    envvar="NODE_NAME",
    default="",
    help="This node's name (downward API spec.nodeName). With --in-cluster or --kubeconfig, "
    "GetPreferredAllocation returns the devices kubegpu's scheduler recorded on the pod being admitted.",
)
@click.option("--kubeconfig", default=None, help="Read this node's pods through this kubeconfig.")
@click.option("--in-cluster", is_flag=True, help="Read this node's pods with the pod's service account.")
@click.option(
    "--mps-compute-mode/--no-mps-compute-mode",
    default=True,
    show_default=True,
    help="With sharing.mps: set each shared GPU to EXCLUSIVE_PROCESS while its MPS daemon runs, as the "
    "NVIDIA mps-control-daemon does.",
)
@_config_dir_options
def device_plugin(
    backend: str | None,
    reading: Path | None,
    config_file: Path | None,
    mig_strategy: str | None,
    plugin_dir: Path,
    health_recovery_seconds: float,
    disable_healthchecks: str,
    enable_healthchecks: str,
    node_name: str,
    kubeconfig: str | None,
    in_cluster: bool,
    mps_compute_mode: bool,
    config_dir: Path | None,
    config_name: str,
    default_config: str,
) -> None:
    """Run the kubelet device plugin (one socket per resource) until SIGINT/SIGTERM.

    With ``sharing.mps`` on a real node it first starts one MPS control daemon per shared resource and
    supervises it (``kubegpu.node.mps``), as the NVIDIA plugin's mps-control-daemon does.

    Re-registers every resource when kubelet.sock is recreated (kubelet restarted). On SIGHUP it restarts
    its servers: re-reads the inventory and the config, serves on fresh sockets and registers again, as
    the NVIDIA plugin does (cmd/nvidia-device-plugin/main.go: "Received SIGHUP, restarting."; its
    config-manager sidecar sends SIGHUP after writing a new config).
    """
    # grpc is imported here, not at the top: discover/labels/cdi must work on hosts without grpc.

    from kubegpu.node.plugin import DevicePluginServer, register_with_retry, serve_until

    if config_dir is not None and config_file is not None:
        raise click.UsageError("give --config or --config-dir, not both")
    choice = _scheduler_choice(node_name, kubeconfig, in_cluster)
    checks = HealthChecks.parse(disable_healthchecks, enable_healthchecks)

    def load() -> tuple[NodeInventory, PluginConfig, tuple[ResourcePlan, ...], list[DevicePluginServer]]:
        """The inventory, config, resources and (not yet started) servers, read afresh."""
        inv = _inventory(backend, reading)
        path = config_file
        if config_dir is not None:
            path = _guard(lambda: select_config_file(config_dir, config_name, default_config))
        config = _config(path, mig_strategy)
        plans = _guard(lambda: plan_resources(inv, config))
        servers = _guard(
            lambda: [
                DevicePluginServer(
                    inv,
                    config,
                    p.base_name,
                    plugin_dir,
                    checks,
                    choice=choice,
                )
                for p in plans
            ]
        )
        return inv, config, plans, servers

    inv, config, plans, servers = load()
    life = _Lifecycle()
    mps = None
    if inv.source == "nvml":
        from kubegpu.node.mps import supervise, supervisor_for

        mps = supervisor_for(inv, config, plans, set_compute_mode=mps_compute_mode)
    try:
        if mps is not None:
            for status in _guard(mps.start):
                if not status.healthy:  # upstream's plugin waits for a healthy daemon before serving
                    raise click.ClickException(f"MPS daemon for {status.resource}: {status.detail}")
                click.echo(f"MPS control daemon for {status.resource} healthy")
            supervise(mps, life.done)
        while True:
            generation = life.new_generation()
            watcher = None
            try:
                for s in servers:
                    _guard(s.start)
                    click.echo(f"serving {s.resource_name} on {s.socket_path}")
                # kubelet may not answer yet: retried with backoff (logged), never a reason to exit
                if register_with_retry(servers, generation):
                    click.echo(f"registered {', '.join(s.resource_name for s in servers)} with kubelet")
                # upstream checkHealth returns at once when every check is disabled: no NVML event watcher
                if inv.source == "nvml" and not checks.all_off:
                    watcher = _start_health(inv, servers, health_recovery_seconds, checks, generation)
                serve_until(servers, plugin_dir, generation)
            finally:
                generation.set()
                if watcher is not None:
                    watcher.stop()
                for s in servers:
                    s.stop()
            if life.done.is_set():
                break
            # MPS daemons keep running: upstream runs them in a separate container that SIGHUP does not restart.
            click.echo("received SIGHUP: re-reading the config, serving and registering again")
            inv, config, plans, servers = load()
    finally:
        life.done.set()
        for problem in mps.stop() if mps is not None else []:
            click.echo(f"warning: {problem}", err=True)


class _Lifecycle:
    """The agent's signals: SIGTERM/SIGINT end it (kubelet stopping the pod, Ctrl-C); SIGHUP ends only the
    current generation of servers, which the agent then builds again from a fresh config."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.generation = threading.Event()
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        signal.signal(signal.SIGHUP, self._restart)

    def new_generation(self) -> threading.Event:
        """The event that ends the generation about to start (already set when the agent is stopping)."""
        self.generation = threading.Event()
        if self.done.is_set():
            self.generation.set()
        return self.generation

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        self.done.set()
        self.generation.set()

    def _restart(self, signum: int, frame: FrameType | None) -> None:
        self.generation.set()


def _scheduler_choice(node_name: str, kubeconfig: str | None, in_cluster: bool) -> SchedulerChoice | None:
    """API access for honouring the scheduler's recorded devices; None (topology choice only) without it."""
    if not (kubeconfig or in_cluster):
        return None
    if not node_name:
        raise click.UsageError("--node-name (or NODE_NAME) is needed with --kubeconfig/--in-cluster")
    from kubegpu.kube.client import KubeApi  # the kubernetes client only when API access is asked for

    api = _guard(
        lambda: KubeApi.from_kubeconfig(
            None, kubeconfig, in_cluster, user_agent="kubegpu-device-plugin", timeout_s=5.0
        )
    )
    from kubegpu.node.scheduler_choice import SchedulerChoice

    return SchedulerChoice(api, node_name)


# `serve` was this command's first name; kept so existing manifests and scripts still run.
node.add_command(device_plugin, "serve")


def _start_health(
    inv: NodeInventory,
    servers: list[DevicePluginServer],
    quiet_seconds: float,
    checks: HealthChecks,
    done: threading.Event,
) -> NvmlHealthWatcher:
    """Watch NVML XID events for ``servers`` and recover quiet devices until ``done``; the watcher."""
    from kubegpu.node.health import HealthMonitor, NvmlHealthWatcher

    monitor = HealthMonitor(
        inv,
        report=lambda event: [s.report(event) for s in servers],
        recover=lambda key: [s.recover(key) for s in servers],
        quiet_seconds=quiet_seconds or None,
        checks=checks,
    )
    threading.Thread(target=monitor.run, args=(done,), name="health-recovery", daemon=True).start()
    watcher = NvmlHealthWatcher(monitor.on_event)
    watcher.start()
    return watcher


@node.command("doctor")
@click.option(
    "--host-facts",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A recorded host.txt (## lspci, ## lsmod, ## dev, ## which, ## cdi, ## numa …) instead of this host.",
)
@click.option(
    "--nvml-reading",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="With --host-facts: the node's recorded NVML reading (default: nvml.json beside host.txt).",
)
@click.option(
    "--plugin-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Device plugin directory to check (kubelet.sock, nvidia-*.sock, kubelet_internal_checkpoint). "
    f"Without it the layer is not checked; kubelet's is {DEVICE_PLUGIN_PATH}.",
)
@click.option("--cuda", default=None, help="The CUDA version an image needs, e.g. 12.4.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
def doctor(
    host_facts: Path | None, nvml_reading: Path | None, plugin_dir: Path | None, cuda: str | None, output: str
) -> None:
    """Walk the GPU chain bottom-up (PCI, module, /dev, NVML, toolkit/CDI, plugin, CUDA); stop at the first break.

    Exit code 1 when a layer is broken.
    """
    from kubegpu.node.doctor import HostFacts, Status, diagnose, parse_cuda

    try:
        required = None if cuda is None else parse_cuda(cuda)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--cuda") from exc
    if host_facts is not None:
        beside = host_facts.parent / "nvml.json"
        reading = nvml_reading or (beside if beside.is_file() else None)
        facts = _guard(lambda: HostFacts.from_recording(host_facts, reading, plugin_dir))
    else:
        facts = HostFacts.from_host(plugin_dir)
    layers = diagnose(facts, required)
    if output == "json":
        _dump([dataclasses.asdict(layer) for layer in layers], "json")
    else:
        table = Table("layer", "status", "evidence")
        for layer in layers:
            table.add_row(layer.name, str(layer.status), layer.evidence)
        Console().print(table)
        broken = layers[-1] if layers[-1].status is Status.BROKEN else None
        click.echo(f"next: {broken.next_command}" if broken else "no broken layer")
    if layers[-1].status is Status.BROKEN:
        raise SystemExit(1)


def _inventory(backend: str | None, reading: Path | None) -> NodeInventory:
    chosen = backend or ("recorded" if reading is not None else "nvml")
    if chosen == "recorded":
        if reading is None:
            raise click.UsageError("--backend recorded needs a reading (--reading FILE)")
        path = reading
        return _guard(lambda: RecordedBackend(path).inventory())
    if reading is not None:
        raise click.UsageError("--reading is only read with --backend recorded")
    return _guard(lambda: NvmlBackend().inventory())


def _config(config_file: Path | None, mig_strategy: str | None) -> PluginConfig:
    config = _guard(lambda: load_plugin_config(config_file)) if config_file is not None else PluginConfig()
    for warning in config.warnings:  # what the NVIDIA plugin would ignore: accepted, but said
        click.echo(f"warning: {warning}", err=True)
    if mig_strategy is not None:
        config = dataclasses.replace(config, mig_strategy=MigStrategy(mig_strategy))
    return config


def _guard(fn: Callable[[], T]) -> T:
    """Run ``fn``; bad input becomes one line on stderr and exit code 2 (as on every command), a missing
    NVML one line and exit code 1."""
    try:
        return fn()
    except InputError as exc:
        raise BadInput(str(exc)) from exc
    except (KubegpuError, NvmlUnavailable) as exc:
        raise click.ClickException(str(exc)) from exc


def _write_feature_file(path: Path, text: str) -> None:
    """Replace ``path`` atomically: nfd-worker may read the directory at any moment and skips dot files,
    so the text goes to ``.<name>.tmp`` beside it first and is renamed over it (as GFD does)."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text)
        tmp.replace(path)
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc.strerror}") from exc


def _dump(data: object, output: str) -> None:
    if output == "json":
        click.echo(json.dumps(data, indent=1))
    else:
        click.echo(yaml.safe_dump(data, sort_keys=False), nl=False)


def _print_inventory(inv: NodeInventory) -> None:
    console = Console()
    title = f"driver {inv.driver}, CUDA {inv.cuda_driver // 1000}.{inv.cuda_driver % 1000 // 10}"
    if inv.generated:
        title += " (generated reading)"
    table = Table("idx", "uuid", "name", "memory MiB", "pci", "numa", "mig", "nvlinks", "health", title=title)
    for g in inv.devices:
        mig = "n/a" if not g.mig_capable else ("on" if g.mig_enabled else "off")
        if g.mig_devices:
            mig += f" ({', '.join(m.profile for m in g.mig_devices)})"
        table.add_row(
            str(g.index),
            g.uuid,
            g.name,
            str(g.memory_total // MIB),
            g.pci_bus_id,
            "-" if g.numa_node is None else str(g.numa_node),
            mig,
            str(len(g.nvlinks)),
            str(g.health) + (f" ({g.health_reason})" if g.health_reason else ""),
        )
    console.print(table)
