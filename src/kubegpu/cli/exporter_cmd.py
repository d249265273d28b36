"""``kubegpu exporter``: serve the node's GPU metrics to Prometheus (R13, R16).

Wires ``kubegpu.node`` (NVML or a recorded reading, the XID watcher) to ``kubegpu.exporter`` (collector,
Pod Resources client, kubelet pods, HTTP server). Flags follow dcgm-exporter where it has one: listen on
``:9400``, ``--kubernetes`` turns pod attribution on, ``Hostname`` is ``$NODE_NAME`` or the host name.
``--once`` prints one scrape and exits. Thin: parse options, build, serve.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import click
from prometheus_client.registry import CollectorRegistry

from kubegpu.cli.signals import stop_on_signals
from kubegpu.devices.cdi import CDI_DIRS
from kubegpu.exporter.collector import DEFAULT_TTL_S, GpuCollector, PodSources
from kubegpu.exporter.exposition import encode
from kubegpu.exporter.kubelet_pods import KubeletPods
from kubegpu.exporter.nvml_counters import NvmlCounters
from kubegpu.exporter.podresources.v1 import SOCKET
from kubegpu.exporter.server import start_server
from kubegpu.exporter.xids import XidLog
from kubegpu.node.discovery import DiscoveryBackend, NvmlBackend, NvmlUnavailable, RecordedBackend

SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")


@click.command("exporter")
@click.option(
    "--backend",
    type=click.Choice(["nvml", "recorded"]),
    default=None,
    help="Where GPU readings come from [default: nvml, or recorded with --reading].",
)
@click.option(
    "--reading",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A recorded reading (the JSON `node discover -o json` writes).",
)
@click.option(
    "--listen", default=":9400", show_default=True, help="HOST:PORT to serve /metrics and /healthz on."
)
@click.option(
    "--hostname",
    default=None,
    help="Value of the Hostname label [default: $NODE_NAME, else this host's name].",
)
@click.option(
    "--no-hostname",
    is_flag=True,
    help="Leave the Hostname label out, as dcgm-exporter's --no-hostname did up to 3.x (4.x ignores it).",
)
@click.option(
    "--kubernetes", is_flag=True, help="Add pod/namespace/container labels from kubelet's Pod Resources API."
)
@click.option("--pod-resources-socket", type=click.Path(path_type=Path), default=SOCKET, show_default=True)
@click.option(
    "--kubelet-pods-url",
    default=None,
    help="kubelet's /pods, for per-container memory [default: https://$NODE_IP:10250/pods with --kubernetes].",
)
@click.option(
    "--kubelet-token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=f"Bearer token for kubelet [default: {SERVICE_ACCOUNT_TOKEN} when it exists].",
)
@click.option("--kubelet-ca-file", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option(
    "--kubelet-insecure-skip-tls-verify",
    is_flag=True,
    help="Accept kubelet's self-signed serving certificate.",
)
@click.option(
    "--proc-root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("/proc"),
    show_default=True,
    help="The host's /proc (the DaemonSet runs with hostPID).",
)
@click.option(
    "--resource-name",
    "resource_names",
    multiple=True,
    help="Extra resource names to attribute (e.g. nvidia.com/gpu.shared); repeatable.",
)
@click.option(
    "--cdi-spec-dir",
    "cdi_spec_dirs",
    type=click.Path(file_okay=False, path_type=Path),
    multiple=True,
    help=f"Where DRA drivers write per-claim CDI specs, to map a claim's device to its GPU; repeatable "
    f"[default: {', '.join(CDI_DIRS)}].",
)
@click.option(
    "--cache-ttl",
    type=click.FloatRange(min=0),
    default=DEFAULT_TTL_S,
    show_default=True,
    help="Seconds a reading serves scrapes.",
)
@click.option(
    "--xid/--no-xid",
    default=True,
    show_default=True,
    help="Watch NVML XID events (DCGM_FI_DEV_XID_ERRORS, health); NVML only.",
)
@click.option("--once", is_flag=True, help="Print one scrape to stdout and exit.")
def exporter(
    backend: str | None,
    reading: Path | None,
    listen: str,
    hostname: str | None,
    no_hostname: bool,
    kubernetes: bool,
    pod_resources_socket: Path,
    kubelet_pods_url: str | None,
    kubelet_token_file: Path | None,
    kubelet_ca_file: Path | None,
    kubelet_insecure_skip_tls_verify: bool,
    proc_root: Path,
    resource_names: tuple[str, ...],
    cdi_spec_dirs: tuple[Path, ...],
    cache_ttl: float,
    xid: bool,
    once: bool,
) -> None:
    """Serve DCGM-compatible GPU metrics, per-pod GPU memory and kubegpu's own metrics to Prometheus."""
    source: DiscoveryBackend
    chosen = backend or ("recorded" if reading is not None else "nvml")
    counters: NvmlCounters | None = None
    if chosen == "recorded":
        if reading is None:
            raise click.UsageError("--backend recorded needs --reading FILE")
        source = RecordedBackend(reading)
    else:
        if reading is not None:
            raise click.UsageError("--reading is only read with --backend recorded")
        source = NvmlBackend()
        try:
            counters = NvmlCounters()
            counters.hold()
        except NvmlUnavailable as exc:
            raise click.ClickException(str(exc)) from exc
    pods = None
    if kubernetes:
        url = kubelet_pods_url or f"https://{os.environ.get('NODE_IP', '127.0.0.1')}:10250/pods"
        token = kubelet_token_file or (SERVICE_ACCOUNT_TOKEN if SERVICE_ACCOUNT_TOKEN.exists() else None)
        index = KubeletPods(url, token, kubelet_ca_file, verify=not kubelet_insecure_skip_tls_verify)
        cdi_dirs = cdi_spec_dirs or tuple(Path(d) for d in CDI_DIRS)
        pods = PodSources(pod_resources_socket, index, proc_root, resource_names, cdi_dirs)
    xids = XidLog(os.environ.get("DP_DISABLE_HEALTHCHECKS", "")) if xid and counters is not None else None
    collector = GpuCollector(
        source,
        counters=counters,
        xids=xids,
        pods=pods,
        hostname="" if no_hostname else (hostname or os.environ.get("NODE_NAME") or socket.gethostname()),
        ttl_s=cache_ttl,
    )
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    if once:
        ok, reason = collector.health()
        if not ok:
            raise click.ClickException(reason)
        click.echo(encode(registry).decode(), nl=False)
        return
    _serve(registry, collector, listen, xids)


def _serve(registry: CollectorRegistry, collector: GpuCollector, listen: str, xids: XidLog | None) -> None:
    host, _, port = listen.rpartition(":")
    if not port.isdigit():
        raise click.UsageError(f"--listen {listen!r}: expected HOST:PORT or :PORT")
    done = threading.Event()
    stop_on_signals(done)
    watcher = None
    if xids is not None:
        from kubegpu.node.health import NvmlHealthWatcher

        watcher = NvmlHealthWatcher(xids.on_event)
        watcher.start()
    try:
        server = start_server(registry, collector.health, host or "0.0.0.0", int(port))
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {listen}: {exc}") from exc
    click.echo(f"serving /metrics and /healthz on {listen}")
    try:
        done.wait()
    finally:
        server.shutdown()
        if watcher is not None:
            watcher.stop()
