"""``kubegpu cluster-exporter``: serve pool-level GPU series (stranded GPUs, fragmentation) to Prometheus.

Wires a cluster source — ``--kube`` (list+watch of Nodes and Pods, read-only: ``kubegpu.cluster_exporter.
watch``), ``--snapshot DIR`` or ``--demo`` (read again on every computation) — to the collector and the
node exporter's HTTP server (``/metrics``, ``/healthz``, port 9401 next to dcgm-exporter's 9400).
``--once`` prints one exposition and exits. Thin: parse options, build, serve.
"""

from __future__ import annotations

import threading
from pathlib import Path

import click
from prometheus_client.registry import CollectorRegistry

from kubegpu.cli.options import SNAPSHOT_HELP, load_plugin_configs, make_engine
from kubegpu.cli.signals import stop_on_signals
from kubegpu.cluster_exporter.collector import DEFAULT_TTL_S, ClusterCollector
from kubegpu.errors import KubegpuError
from kubegpu.exporter.exposition import encode
from kubegpu.exporter.server import start_server
from kubegpu.model.gpu_facts import DEFAULT_POOL_LABEL
from kubegpu.model.snapshot import ClusterSnapshot

SYNC_WAIT_S = 60.0  # --once --kube: how long to wait for the first list of Nodes and Pods


@click.command("cluster-exporter")
@click.option("--kube", is_flag=True, help="Watch the live cluster (list/watch Nodes and Pods, read-only).")
@click.option("--context", default=None, help="kubeconfig context for --kube (default: the current one).")
@click.option(
    "--kubeconfig", default=None, help="kubeconfig file for --kube (default: $KUBECONFIG, ~/.kube/config)."
)
@click.option("--in-cluster", is_flag=True, help="Use the pod's service account for --kube.")
@click.option(
    "--snapshot",
    "snapshots",
    multiple=True,
    type=click.Path(path_type=Path),
    help=SNAPSHOT_HELP,
)
@click.option("--demo", is_flag=True, help="Use the embedded demo cluster.")
@click.option(
    "--pool-label",
    default=DEFAULT_POOL_LABEL,
    show_default=True,
    help="Node label whose value names the pool.",
)
@click.option(
    "--device-plugin-config",
    "plugin_configs",
    multiple=True,
    metavar="[NAME=]FILE",
    help="NVIDIA device plugin config, as for `kubegpu explain` (repeatable).",
)
@click.option(
    "--listen", default="0.0.0.0:9401", show_default=True, help="HOST:PORT for /metrics and /healthz."
)
@click.option(
    "--cache-ttl",
    type=click.FloatRange(min=0),
    default=DEFAULT_TTL_S,
    show_default=True,
    help="Seconds one computation serves scrapes.",
)
@click.option("--once", is_flag=True, help="Print one exposition to stdout and exit.")
def cluster_exporter(
    kube: bool,
    context: str | None,
    kubeconfig: str | None,
    in_cluster: bool,
    snapshots: tuple[Path, ...],
    demo: bool,
    pool_label: str,
    plugin_configs: tuple[str, ...],
    listen: str,
    cache_ttl: float,
    once: bool,
) -> None:
    """Serve stranded GPUs, fragmentation and Pending GPU pods per pool, from the scheduling core."""
    from kubegpu import sources

    if sum([bool(snapshots), demo, kube]) != 1:
        raise click.UsageError("give exactly one source: --snapshot PATH, --demo or --kube")
    host, _, port = listen.rpartition(":")
    if not port.isdigit():
        raise click.UsageError(f"--listen {listen!r}: expected HOST:PORT or :PORT")
    try:  # a bad --device-plugin-config fails here, before anything is served
        load_plugin_configs(plugin_configs)
    except KubegpuError as exc:
        raise click.ClickException(str(exc)) from None
    stop = threading.Event()
    if kube:
        from kubegpu.cluster_exporter.watch import WatchedCluster
        from kubegpu.kube.client import KubeApi

        try:
            api = KubeApi.from_kubeconfig(
                context, kubeconfig, in_cluster, user_agent="kubegpu-cluster-exporter"
            )
        except KubegpuError as exc:
            raise click.ClickException(str(exc)) from None
        watched = WatchedCluster(
            api, f"live cluster {'in-cluster' if in_cluster else context or '(current context)'}"
        )
        watched.start(stop)
        source = watched.snapshot
        if once and not watched.wait_synced(SYNC_WAIT_S):
            stop.set()
            raise click.ClickException(f"Nodes and Pods not listed after {SYNC_WAIT_S:.0f} s")
    else:

        def source() -> ClusterSnapshot:
            # Read again for every computation: a snapshot directory that a job refreshes stays current.
            return sources.load_demo() if demo else sources.load_files(*snapshots)

    collector = ClusterCollector(
        source, lambda snap: make_engine(snap, "default", plugin_configs, 0), pool_label, ttl_s=cache_ttl
    )
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    try:
        if once:
            ok, reason = collector.health()
            if not ok:
                raise click.ClickException(reason)
            click.echo(encode(registry).decode(), nl=False)
            return
        stop_on_signals(stop)
        try:
            server = start_server(registry, collector.health, host or "0.0.0.0", int(port))
        except OSError as exc:
            raise click.ClickException(f"cannot listen on {listen}: {exc}") from exc
        click.echo(f"serving /metrics and /healthz on {listen}")
        stop.wait()
        server.shutdown()
    finally:
        stop.set()
