"""``kubegpu node``: the node agent's commands (R2.2, R3, R6, R12).

``discover`` prints a node's GPU inventory (``-o json`` writes a reading in the fixture format),
``labels`` the GFD-style labels, ``cdi`` the CDI spec, and ``serve`` runs the kubelet device plugin.
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
from typing import Any, TypeVar

import click
import yaml
from rich.console import Console
from rich.table import Table

from kubegpu.devices import (
    MigStrategy,
    NodeInventory,
    PluginConfig,
    cdi_spec,
    gfd_labels,
    inventory_to_reading,
    load_plugin_config,
    plan_resources,
)
from kubegpu.devices.health import HealthEvent
from kubegpu.devices.inventory import MIB
from kubegpu.errors import KubegpuError
from kubegpu.node.discovery import NvmlBackend, NvmlUnavailable, RecordedBackend
from kubegpu.node.v1beta1 import DEVICE_PLUGIN_PATH

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def _backend_options(f: F) -> F:
    f = click.option(
        "--reading",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="A recorded reading (the JSON `node discover -o json` writes).",
    )(f)
    return click.option(
        "--backend",
        type=click.Choice(["nvml", "recorded"]),
        default=None,
        help="Read the GPUs through NVML (default) or a recorded reading (default with --reading).",
    )(f)


_config_option = click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="NVIDIA device plugin config file (version: v1; flags, sharing.timeSlicing).",
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
@_backend_options
@click.option("-o", "--output", type=click.Choice(["table", "json", "yaml"]), default="table")
def discover(backend: str | None, reading: Path | None, output: str) -> None:
    """Print this node's GPU inventory (json: a reading in the fixture format)."""
    inv = _inventory(backend, reading)
    if output == "table":
        _print_inventory(inv)
    else:
        _dump(inventory_to_reading(inv), output)


@node.command("labels")
@_backend_options
@_config_option
@_mig_option
@click.option("-o", "--output", type=click.Choice(["table", "json", "yaml"]), default="table")
def labels(
    backend: str | None, reading: Path | None, config_file: Path | None, mig_strategy: str | None, output: str
) -> None:
    """Print the GFD-style nvidia.com/* labels this node would carry."""
    result = _guard(lambda: gfd_labels(_inventory(backend, reading), _config(config_file, mig_strategy)))
    if output == "table":
        table = Table("label", "value")
        for key, value in result.items():
            table.add_row(key, value)
        Console().print(table)
    else:
        _dump(result, output)


@node.command("cdi")
@_backend_options
@click.option("-o", "--output", type=click.Choice(["json", "yaml"]), default="yaml")
def cdi(backend: str | None, reading: Path | None, output: str) -> None:
    """Print the CDI spec (kind nvidia.com/gpu) for this node's GPUs."""
    _dump(cdi_spec(_inventory(backend, reading)), output)


@node.command("serve")
@_backend_options
@_config_option
@_mig_option
@click.option(
    "--socket-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEVICE_PLUGIN_PATH,
    show_default=True,
    help="Device plugin directory holding kubelet.sock.",
)
def serve(
    backend: str | None,
    reading: Path | None,
    config_file: Path | None,
    mig_strategy: str | None,
    socket_dir: Path,
) -> None:
    """Run the kubelet device plugin (one socket per resource) until SIGINT/SIGTERM."""
    # grpc is imported here, not at the top: discover/labels/cdi must work on hosts without grpc.
    import grpc

    from kubegpu.node.plugin import DevicePluginServer, serve_until

    inv = _inventory(backend, reading)
    config = _config(config_file, mig_strategy)
    plans = _guard(lambda: plan_resources(inv, config))
    servers = _guard(lambda: [DevicePluginServer(inv, config, p.base_name, socket_dir) for p in plans])
    done = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    watcher = None
    try:
        for s in servers:
            s.start()
            s.register()
            click.echo(f"serving {s.resource_name} on {s.socket_path}, registered with kubelet")
        if inv.source == "nvml":
            from kubegpu.node.health import NvmlHealthWatcher

            def report(event: HealthEvent) -> None:
                for s in servers:
                    s.report(event)

            watcher = NvmlHealthWatcher(report)
            watcher.start()
        serve_until(servers, socket_dir, done)
    except grpc.RpcError as exc:
        raise click.ClickException(
            f"registration with kubelet at {socket_dir}/kubelet.sock failed: {_rpc_text(exc)}"
        ) from exc
    finally:
        if watcher is not None:
            watcher.stop()
        for s in servers:
            s.stop()


def _inventory(backend: str | None, reading: Path | None) -> NodeInventory:
    chosen = backend or ("recorded" if reading is not None else "nvml")
    if chosen == "recorded":
        if reading is None:
            raise click.UsageError("--backend recorded needs --reading FILE")
        path = reading
        return _guard(lambda: RecordedBackend(path).inventory())
    if reading is not None:
        raise click.UsageError("--reading is only read with --backend recorded")
    return _guard(lambda: NvmlBackend().inventory())


def _config(config_file: Path | None, mig_strategy: str | None) -> PluginConfig:
    config = _guard(lambda: load_plugin_config(config_file)) if config_file is not None else PluginConfig()
    if mig_strategy is not None:
        config = dataclasses.replace(config, mig_strategy=MigStrategy(mig_strategy))
    return config


def _guard(fn: Callable[[], T]) -> T:
    """Run ``fn``; bad input and a missing NVML become one line on stderr and exit code 1."""
    try:
        return fn()
    except (KubegpuError, NvmlUnavailable) as exc:
        raise click.ClickException(str(exc)) from exc


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


def _rpc_text(exc: Exception) -> str:
    # A failed call is also a grpc.Call whose details() is the server's one-line message.
    details = getattr(exc, "details", None)
    return str(details()) if callable(details) else str(exc)
