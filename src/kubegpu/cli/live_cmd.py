"""``kubegpu scheduler`` (and the other live control-plane commands): thin wrappers over ``kubegpu.live``.

Each command parses its flags, builds the component and runs it until SIGTERM/SIGINT. The commands are
plain click commands for the main CLI to register; ``python -m kubegpu.cli.live_cmd <command>`` runs them
without it (the tests start the components that way, as real processes).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import socket
import sys
import threading
import uuid
from pathlib import Path

import click

from kubegpu.admission.dra import namespace_quotas
from kubegpu.admission.gpu_access import Exemptions
from kubegpu.admission.lint import (
    INVALID_RULES,
    UNREADABLE_RULE,
    LintContext,
    env_sources,
    lint_object,
    namespace_labels,
    node_facts,
)
from kubegpu.admission.mutate import MutationOptions
from kubegpu.cli.options import check_kube_version
from kubegpu.cli.signals import stop_on_signals
from kubegpu.errors import InputError, KubegpuError
from kubegpu.kube.client import ApiError, KubeApi
from kubegpu.kube.leader import LeaseConfig, other_holder
from kubegpu.live import extender as extender_api
from kubegpu.live.metrics import SchedulerMetrics, serve
from kubegpu.live.scheduler import DEFAULT_SCHEDULER_NAME, LiveConfig, LiveScheduler
from kubegpu.live.webhook import ClusterFacts, Limits, Policy, WebhookServer, start_informers
from kubegpu.model.parse import describe
from kubegpu.sources import read_path


@click.command("scheduler")
@click.option(
    "--kubeconfig", default=None, help="Kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)."
)
@click.option("--context", default=None, help="Kubeconfig context (default: the current context).")
@click.option("--in-cluster", is_flag=True, help="Use the pod's service account.")
@click.option("--scheduler-name", default=DEFAULT_SCHEDULER_NAME, show_default=True,
              help="Schedule the pods whose spec.schedulerName is this.")  # fmt: skip
@click.option("--profile", type=click.Choice(["default", "kubegpu"]), default="default", show_default=True,
              help="kubegpu: device-level placement; the chosen device IDs are recorded on the pod.")  # fmt: skip
@click.option("--kube-version", default=None, metavar="1.MINOR",
              help="kube-scheduler release whose decisions and messages to reproduce (default: the API "
                   "server's /version, else the newest supported).")  # fmt: skip
@click.option("--leader-elect/--no-leader-elect", default=True, show_default=True)
@click.option("--lease-namespace", default="kube-system", show_default=True)
@click.option("--lease-name", default="kubegpu-scheduler", show_default=True)
@click.option("--lease-duration", type=float, default=15.0, show_default=True, help="Seconds.")
@click.option("--renew-deadline", type=float, default=10.0, show_default=True, help="Seconds.")
@click.option("--retry-period", type=float, default=2.0, show_default=True, help="Seconds.")
@click.option("--identity", default=None, help="Leader-election identity (default: hostname_<random>).")
@click.option("--pod-initial-backoff", type=float, default=1.0, show_default=True, help="Seconds.")
@click.option("--pod-max-backoff", type=float, default=10.0, show_default=True, help="Seconds.")
@click.option("--metrics-port", type=int, default=10259, show_default=True,
              help="Port of /healthz and /metrics (plain HTTP); 0 picks a free one.")  # fmt: skip
@click.option("--metrics-bind-address", default="0.0.0.0", show_default=True)
@click.option("--checkpoint-deadline", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Seconds preemption victims get to report kubegpu.io/last-checkpoint-time after "
              "kubegpu.io/checkpoint-requested before they are evicted; 0 evicts at once.")  # fmt: skip
@click.option("-v", "--verbose", count=True, help="-v: info logs, -vv: debug logs.")
def scheduler(
    kubeconfig: str | None,
    context: str | None,
    in_cluster: bool,
    scheduler_name: str,
    profile: str,
    kube_version: str | None,
    leader_elect: bool,
    lease_namespace: str,
    lease_name: str,
    lease_duration: float,
    renew_deadline: float,
    retry_period: float,
    identity: str | None,
    pod_initial_backoff: float,
    pod_max_backoff: float,
    metrics_port: int,
    metrics_bind_address: str,
    checkpoint_deadline: float,
    verbose: int,
) -> None:
    """Run kubegpu as a second scheduler: bind the pods with spec.schedulerName = --scheduler-name."""
    _logging(verbose)
    check_kube_version(kube_version)
    try:
        lease = LeaseConfig(lease_namespace, lease_name, lease_duration, renew_deadline, retry_period)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    # client-go's default identity: hostname plus a random suffix, so two replicas on one host differ
    ident = identity or f"{socket.gethostname()}_{uuid.uuid4()}"
    config = LiveConfig(
        scheduler_name=scheduler_name,
        profile=profile,
        identity=ident,
        leader_elect=leader_elect,
        lease=lease,
        initial_backoff_s=pod_initial_backoff,
        max_backoff_s=pod_max_backoff,
        checkpoint_deadline_s=checkpoint_deadline,
    )
    try:
        api = KubeApi.from_kubeconfig(
            context, kubeconfig, in_cluster, user_agent=f"kubegpu-scheduler/{ident}"
        )
    except KubegpuError as exc:
        raise click.ClickException(str(exc)) from None
    config.kube_version = _compatible_with(api, kube_version)
    if not leader_elect:  # a second active replica would bind beside the holder: refused, not raced
        _refuse_beside_holder(api, ident, lease)
    metrics = SchedulerMetrics(scheduler_name)
    server = serve(metrics, metrics_port, metrics_bind_address)
    click.echo(
        f"kubegpu scheduler {ident!r}: /healthz and /metrics on port {server.server_address[1]}", err=True
    )
    live = LiveScheduler(api, config, metrics)
    stop_on_signals(live.stop)
    code = live.run()
    server.shutdown()
    api.close()
    if code:
        click.echo("leader election lost", err=True)
    sys.exit(code)


def _compatible_with(api: KubeApi, given: str | None) -> str:
    """The release the live scheduler reproduces: ``--kube-version``, else the API server's ``/version``
    (``versions.choose``, the rule every command uses), else the newest supported; said on stderr."""
    from kubegpu.scheduler.versions import choose

    server = ""
    if given is None:
        try:
            server = str(api.get("/version").get("gitVersion") or "")
        except ApiError as exc:
            click.echo(f"warning: could not read the API server's /version ({exc})", err=True)
    chosen, where, warning = choose(given, server, [])
    if warning:
        click.echo(f"warning: {warning}", err=True)
    click.echo(f"kubegpu scheduler: compatible with kube-scheduler {chosen.name} (from {where})", err=True)
    return chosen.name


def _refuse_beside_holder(api: KubeApi, identity: str, lease: LeaseConfig) -> None:
    """Exit 1 with one line when another replica holds the Lease (``--no-leader-elect`` was given)."""
    try:
        holder = other_holder(api, identity, lease, dt.datetime.now(dt.UTC))
    except ApiError as exc:
        api.close()
        raise click.ClickException(
            f"--no-leader-elect: cannot read lease {lease.namespace}/{lease.name} to check that no other "
            f"replica is active: {exc}"
        ) from None
    if holder is not None:
        api.close()
        raise click.ClickException(
            f"lease {lease.namespace}/{lease.name} is held by {holder}: another replica is active; "
            "refusing to start a second one without leader election (drop --no-leader-elect, or stop it)"
        )


@click.command("webhook")
@click.option("--tls-cert-file", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--tls-private-key-file", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--port", type=int, default=8443, show_default=True, help="HTTPS port; 0 picks a free one.")
@click.option("--bind-address", default="0.0.0.0", show_default=True)
@click.option("--kubeconfig", default=None, help="Watch Namespaces and Nodes through this kubeconfig.")
@click.option("--context", default=None)
@click.option("--in-cluster", is_flag=True, help="Watch Namespaces and Nodes with the pod's service account.")
@click.option(
    "--mutate-gpu-toleration/--no-mutate-gpu-toleration",
    default=True,
    show_default=True,
    help="/mutate: add {key: <GPU resource>, operator: Exists, effect: NoSchedule} to GPU pods "
    "(ExtendedResourceToleration for GPU resources).",
)
@click.option(
    "--mutate-visible-devices/--no-mutate-visible-devices",
    default=True,
    show_default=True,
    help="/mutate: NVIDIA_VISIBLE_DEVICES=void on containers without a GPU in GPU namespaces.",
)
@click.option(
    "--mutate-scheduler-name",
    default="",
    help="/mutate: set spec.schedulerName to this name for GPU pods in namespaces labelled "
    "kubegpu.io/scheduler=enabled (needs API access); empty: off.",
)
@click.option(
    "--exempt-daemonsets",
    multiple=True,
    metavar="NAMESPACE[:SA,SA]",
    help="Namespaces whose DaemonSet pods (created by the DaemonSet controller) and operand pods (created by an "
    "allowed service account, running as it, with a controller owner) skip the GPU-access rules; the service "
    "accounts allowed there (none listed: any). Default: gpu-operator (its operands' accounts) and "
    "nvidia-device-plugin.",
)
@click.option(
    "--scheduler-user",
    default="",
    help="The one user that may set kubegpu.io/allocated-devices on a pod "
    "(system:serviceaccount:<namespace>:<scheduler account>); empty: nobody.",
)
@click.option(
    "--max-body-bytes",
    type=click.IntRange(1),
    default=Limits.max_body,
    show_default=True,
    help="Largest AdmissionReview accepted; a larger one is answered 400 without being read.",
)
@click.option(
    "--handshake-timeout",
    type=click.FloatRange(min=0.1),
    default=Limits.handshake_s,
    show_default=True,
    help="Seconds a client has for its TLS handshake.",
)
@click.option(
    "--request-timeout",
    type=click.FloatRange(min=0.1),
    default=Limits.request_s,
    show_default=True,
    help="Seconds from a request's first byte to its answer (a slow sender is cut off).",
)
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0.1),
    default=Limits.idle_s,
    show_default=True,
    help="Seconds a keep-alive connection may wait for its next request.",
)
@click.option(
    "--max-connections",
    type=click.IntRange(1),
    default=Limits.max_connections,
    show_default=True,
    help="Connections open at once; beyond it the oldest idle one is closed.",
)
@click.option("-v", "--verbose", count=True)
def webhook(
    tls_cert_file: str,
    tls_private_key_file: str,
    port: int,
    bind_address: str,
    kubeconfig: str | None,
    context: str | None,
    in_cluster: bool,
    mutate_gpu_toleration: bool,
    mutate_visible_devices: bool,
    mutate_scheduler_name: str,
    exempt_daemonsets: tuple[str, ...],
    scheduler_user: str,
    max_body_bytes: int,
    handshake_timeout: float,
    request_timeout: float,
    idle_timeout: float,
    max_connections: int,
    verbose: int,
) -> None:
    """Serve the GPU admission rules (POST /validate) and GPU pod mutations (POST /mutate), AdmissionReview v1."""
    _logging(verbose)
    facts = ClusterFacts()
    stop = threading.Event()
    if kubeconfig or context or in_cluster:
        try:
            api = KubeApi.from_kubeconfig(context, kubeconfig, in_cluster, user_agent="kubegpu-webhook")
        except KubegpuError as exc:
            raise click.ClickException(str(exc)) from None
        start_informers(api, facts, stop)
    mutation = MutationOptions(mutate_gpu_toleration, mutate_visible_devices, mutate_scheduler_name)
    exemptions = Exemptions.parse(list(exempt_daemonsets)) if exempt_daemonsets else Exemptions()
    policy = Policy(exemptions, scheduler_user)
    limits = Limits(max_body_bytes, handshake_timeout, request_timeout, idle_timeout, max_connections)
    server = WebhookServer(
        facts, bind_address, port, tls_cert_file, tls_private_key_file, mutation, policy, limits=limits
    )
    click.echo(f"kubegpu webhook: https on port {server.port}", err=True)
    stop_on_signals(stop)
    threading.Thread(
        target=server.httpd.serve_forever, args=(0.1,), name="webhook-https", daemon=True
    ).start()
    stop.wait()
    server.httpd.shutdown()


@click.command("extender")
@click.option(
    "--kubeconfig", default=None, help="Kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)."
)
@click.option("--context", default=None)
@click.option("--in-cluster", is_flag=True, help="Use the pod's service account.")
@click.option("--port", type=int, default=8888, show_default=True, help="HTTP port; 0 picks a free one.")
@click.option("--bind-address", default="0.0.0.0", show_default=True)
@click.option("--profile", default="default-scheduler", show_default=True,
              help="Scheduler profile name the decisions are made for.")  # fmt: skip
@click.option("-v", "--verbose", count=True)
def extender(
    kubeconfig: str | None,
    context: str | None,
    in_cluster: bool,
    port: int,
    bind_address: str,
    profile: str,
    verbose: int,
) -> None:
    """Serve the kube-scheduler extender API (POST /filter, /prioritize, /bind, /preempt) from the core."""
    _logging(verbose)
    try:
        api = KubeApi.from_kubeconfig(context, kubeconfig, in_cluster, user_agent="kubegpu-extender")
    except KubegpuError as exc:
        raise click.ClickException(str(exc)) from None
    state = extender_api.ExtenderState(profile)
    stop = threading.Event()
    extender_api.start_informers(api, state, stop)
    server = extender_api.serve(state, api, bind_address, port)
    click.echo(f"kubegpu extender: http on port {server.server_address[1]}", err=True)
    stop_on_signals(stop)
    threading.Thread(target=server.serve_forever, args=(0.1,), name="extender-http", daemon=True).start()
    stop.wait()
    server.shutdown()


@click.command("lint")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--strict", is_flag=True,
              help="Exit with status 2 also for objects the API server would refuse as invalid (not only for "
                   "unreadable files).")  # fmt: skip
def lint(files: tuple[Path, ...], output: str, strict: bool) -> None:
    """Check Pod and workload manifests against the webhook's GPU rules. Namespaces and Nodes among the
    FILES supply namespace labels (opt-out, GPU namespaces) and the resource names nodes offer.
    Exit status: 0 clean (warnings alone included), 1 violations found, 2 unreadable input (a file, or a
    field that must be an object and is not; with --strict: or invalid objects)."""
    errors: list[InputError] = []
    objects = []
    for path in files:
        try:
            objects.extend(read_path(path, errors))
        except InputError as exc:
            errors.append(exc)
    ctx = LintContext(namespace_labels(objects), node_facts(objects), env_sources=env_sources(objects),
                      quotas=namespace_quotas(objects))  # fmt: skip
    findings = [(source, obj, v) for source, obj in objects for v in lint_object(obj, ctx)]
    if output == "json":
        rows = [{"source": source, "object": describe(obj), "rule": v.rule, "field": v.field, "message": v.message,
                 "warning": v.warning} for source, obj, v in findings]  # fmt: skip
        click.echo(json.dumps(rows, indent=2))
    else:
        for source, obj, v in findings:
            tag = f"{v.rule}, warning" if v.warning else v.rule
            click.echo(f"{source}: {describe(obj)}: {v.field}: {v.message} [{tag}]")
    for error in errors:
        click.echo(f"error: {error}", err=True)
    # an unreadable field is unreadable input, like a file that does not parse; warnings do not fail
    invalid = any(v.rule == UNREADABLE_RULE or (strict and v.rule in INVALID_RULES) for _, _, v in findings)
    sys.exit(2 if errors or invalid else 1 if any(not v.warning for _, _, v in findings) else 0)


def _logging(verbose: int) -> None:
    logging.basicConfig(
        level=logging.WARNING - 10 * min(verbose, 2), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


@click.group("live")
def live_group() -> None:
    """The live control-plane commands (for ``python -m kubegpu.cli.live_cmd``)."""


for _command in (scheduler, extender, webhook, lint):
    live_group.add_command(_command)

if __name__ == "__main__":
    live_group()
