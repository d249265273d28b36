"""``kubegpu plan``: change plans for one node's GPUs (R6.2, R6.3, R15).

``plan mig NODE --config LAYOUT.yaml [--config-name NAME]`` validates a mig-parted layout against the MIG
catalog and prints the new capacity, the pods that must move and the procedure with its rollback;
``plan time-slicing NODE --replicas N`` does the same for a time-slicing rollout; ``plan dra-migration
--pool P --to dra|device-plugin`` moves a pool between NVIDIA's device plugin and its DRA driver. Both read the cluster
from ``--snapshot``/``--demo``/``--kube`` like every other command. Thin: parse options, call
``kubegpu.plan``, render.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from kubegpu.cli.options import emit, load_snapshot, one_shot, source_options
from kubegpu.cli.when import command_now
from kubegpu.errors import InputError, read_text, yaml_documents
from kubegpu.model.objects import Node
from kubegpu.plan import NodeChange, plan_mig, plan_time_slicing


def _namespace(_ctx: click.Context, param: click.Parameter, value: str) -> str:
    """Refuse a namespace kubectl's ``-n`` would refuse (``IsDNS1123Label``): one line, exit 2."""
    from kubegpu.plan.inputs import check_namespace

    check_namespace(value, param.opts[0] if param.opts else "--namespace")
    return value


_output = click.option(
    "-o", "--output", type=click.Choice(["table", "json", "yaml"]), default="table", show_default=True
)
_operator_ns = click.option(
    "--operator-namespace",
    default="gpu-operator",
    callback=_namespace,
    show_default=True,
    help="Namespace of the GPU Operator (MIG manager, device plugin ConfigMap).",
)
_test_ns = click.option(
    "--test-namespace",
    default="default",
    show_default=True,
    callback=_namespace,
    help="Namespace for the test pods.",
)

_when = click.option(
    "--now",
    default=None,
    help="RFC 3339 time for GPU-hours at risk (default: the snapshot's newest pod time).",
)


@click.group()
def plan() -> None:
    """Plan a change (labels, taints, drain, quota, MIG, time-slicing, upgrades, kubelet policy) with its rollback."""


@plan.command("mig")
@click.argument("node_name", metavar="NODE")
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="A mig-parted config file (version: v1, mig-configs).",
)
@click.option(
    "--config-name", default=None, help="Which mig-configs entry (needed when the file has several)."
)
@_operator_ns
@_test_ns
@_when
@_output
@source_options
def mig(
    node_name: str,
    config_path: Path,
    config_name: str | None,
    operator_namespace: str,
    test_namespace: str,
    now: str | None,
    output: str,
    **src: Any,
) -> None:
    """Re-partition NODE's MIG GPUs to a mig-parted layout: new capacity, pods to move, the effect on the
    cluster (the scheduling core on the re-partitioned node), procedure and rollback."""
    from kubegpu.devices.mig_parted import load_mig_parted_config
    from kubegpu.plan.device_effect import with_effect
    from kubegpu.plan.mig import mig_partitioned_node

    snap, node = _node(node_name, src)
    config = load_mig_parted_config(config_path)
    change = plan_mig(
        node,
        snap.pods,
        config,
        config_name,
        operator_namespace=operator_namespace,
        test_namespace=test_namespace,
    )
    _emit(with_effect(snap, change, mig_partitioned_node(node, change), command_now(snap, now)), output)


@plan.command("time-slicing")
@click.argument("node_name", metavar="NODE")
@click.option(
    "--replicas", required=True, type=click.IntRange(min=1), help="Replicas per GPU (1 = exclusive)."
)
@click.option("--rename/--no-rename", default=False, help="renameByDefault: advertise nvidia.com/gpu.shared.")
@click.option(
    "--fail-requests-greater-than-one/--allow-requests-greater-than-one",
    default=True,
    show_default=True,
    help="failRequestsGreaterThanOne in the generated config.",
)
@click.option("--config-name", default="", help="Key of the config in the device plugin ConfigMap.")
@click.option(
    "--configmap", default="device-plugin-config", show_default=True, help="The device plugin ConfigMap."
)
@_operator_ns
@_test_ns
@_when
@_output
@source_options
def time_slicing(
    node_name: str,
    replicas: int,
    rename: bool,
    fail_requests_greater_than_one: bool,
    config_name: str,
    configmap: str,
    operator_namespace: str,
    test_namespace: str,
    now: str | None,
    output: str,
    **src: Any,
) -> None:
    """Roll time-slicing (N replicas per GPU) out to NODE: config, new capacity, pods to move, the effect on
    the cluster (the scheduling core on the time-sliced node), procedure and rollback."""
    from kubegpu.plan.device_effect import with_effect
    from kubegpu.plan.time_slicing import time_sliced_after

    snap, node = _node(node_name, src)
    change = plan_time_slicing(
        node,
        snap.pods,
        replicas,
        rename=rename,
        fail_requests_greater_than_one=fail_requests_greater_than_one,
        config_name=config_name,
        configmap=configmap,
        operator_namespace=operator_namespace,
        test_namespace=test_namespace,
        configmap_object=next(
            (
                o
                for o in snap.raw_objects
                if o.get("kind") == "ConfigMap"
                and (o.get("metadata") or {}).get("name") == configmap
                and (o.get("metadata") or {}).get("namespace") == operator_namespace
            ),
            None,
        ),
    )
    _emit(with_effect(snap, change, time_sliced_after(node, change), command_now(snap, now)), output)


def _targets(names: tuple[str, ...], selector: str | None, snap: Any) -> list[Node]:
    """The nodes a change applies to: named ones, or those matching ``--selector key=value``."""
    if selector:
        key, _, value = selector.partition("=")
        found = [n for n in snap.nodes if n.labels.get(key) == value]
        if not found:
            raise InputError(f"no node has label {selector}", field="--selector")
        return found
    if not names:
        raise click.UsageError("name at least one NODE or give --selector key=value")
    out = []
    for name in names:
        node = snap.node(name)
        if node is None:
            raise InputError(f"no node {name!r} in {snap.description or 'the snapshot'}")
        out.append(node)
    return out


_nodes_arg = click.argument("node_names", metavar="[NODE]...", nargs=-1)
_selector = click.option("--selector", default=None, metavar="KEY=VALUE", help="Every node with this label.")
_node_ns = click.option(
    "--namespace",
    "ns",
    default="default",
    show_default=True,
    callback=_namespace,
    help="Namespace written into kubectl lines for cluster-scoped objects (it changes nothing).",
)


@plan.command("label")
@click.argument("label", metavar="KEY=VALUE|KEY-")
@_nodes_arg
@_selector
@_when
@_node_ns
@_output
@source_options
@one_shot
def label(label: str, node_names: tuple[str, ...], selector: str | None, now: str | None, ns: str, output: str,
          **src: Any) -> None:  # fmt: skip
    """Set or remove a node label (a pool move): who selects on it, which pending pods change, the runbook."""
    from kubegpu.plan.node_ops import plan_label

    snap = load_snapshot(**src)
    if label.endswith("-"):
        key, value = label[:-1], None
    elif "=" in label:
        key, _, value = label.partition("=")
    else:
        raise click.BadParameter("expected KEY=VALUE or KEY-", param_hint="LABEL")
    _emit(
        plan_label(snap, _targets(node_names, selector, snap), key, value, command_now(snap, now), ns), output
    )


@plan.command("taint")
@click.argument("taint", metavar="KEY[=VALUE]:EFFECT[-]")
@_nodes_arg
@_selector
@_when
@_node_ns
@_output
@source_options
@one_shot
def taint(taint: str, node_names: tuple[str, ...], selector: str | None, now: str | None, ns: str, output: str,
          **src: Any) -> None:  # fmt: skip
    """Add (or, with a trailing -, remove) a taint: DaemonSets that do not tolerate it, evictions, the runbook."""
    from kubegpu.model.objects import Taint
    from kubegpu.plan.node_ops import plan_taint

    snap = load_snapshot(**src)
    remove = taint.endswith("-")
    body = taint[:-1] if remove else taint
    head, _, effect = body.rpartition(":")
    if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute") or not head:
        raise click.BadParameter("expected KEY[=VALUE]:EFFECT with EFFECT NoSchedule, PreferNoSchedule or NoExecute",
                                 param_hint="TAINT")  # fmt: skip
    key, _, value = head.partition("=")
    spec = Taint(key, value, effect)
    _emit(
        plan_taint(snap, _targets(node_names, selector, snap), spec, remove, command_now(snap, now), ns),
        output,
    )


@plan.command("drain")
@_nodes_arg
@_selector
@click.option("--cordon-only", is_flag=True, help="Plan a cordon (moves nothing) instead of a drain.")
@_when
@_node_ns
@_output
@source_options
@one_shot
def drain(node_names: tuple[str, ...], selector: str | None, cordon_only: bool, now: str | None, ns: str,
          output: str, **src: Any) -> None:  # fmt: skip
    """Cordon and drain nodes (scale-in, maintenance): where evicted pods land, PDBs, GPU-hours at risk."""
    from kubegpu.plan.node_ops import plan_drain

    snap = load_snapshot(**src)
    targets = _targets(node_names, selector, snap)
    _emit(plan_drain(snap, targets, command_now(snap, now), evict=not cordon_only, ns=ns), output)


_pool = click.option("--pool", required=True, help="The pool: every node whose --pool-label has this value.")
_pool_label = click.option("--pool-label", default="accelerator.example.com/pool", show_default=True)


@plan.command("quota")
@click.argument("target", metavar="NAMESPACE/NAME")
@click.option("--hard", "hard", multiple=True, required=True, metavar="RESOURCE=QUANTITY",
              help="New spec.hard entry, e.g. requests.nvidia.com/gpu=4 (repeatable).")  # fmt: skip
@click.option("--pod", "pod_files", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Pod manifests about to be created: admitted before and after the change (repeatable).")  # fmt: skip
@_output
@source_options
@one_shot
def quota(target: str, hard: tuple[str, ...], pod_files: tuple[Path, ...], output: str, **src: Any) -> None:
    """Change a ResourceQuota: who counts against it, which new pods the API server would then reject
    (exceeded quota; nothing is evicted), the runbook with diff, server-side dry run and rollback."""
    from kubegpu.admission.quota_report import parse_what_if
    from kubegpu.model.snapshot import split_documents
    from kubegpu.plan.quota_change import plan_quota

    ns, _, name = target.partition("/")
    if not (ns and name):
        raise click.BadParameter("expected NAMESPACE/NAME", param_hint="NAMESPACE/NAME")
    from kubegpu.plan.inputs import check_namespace

    check_namespace(ns, "NAMESPACE/NAME")
    snap = load_snapshot(**src)
    limits: dict[str, int] = {}
    texts: dict[str, str] = {}
    for h in hard:
        if "=" not in h or h.startswith("="):
            raise InputError(
                "expected RESOURCE=QUANTITY", obj=f"ResourceQuota {ns}/{name}", field=f"--hard {h}"
            )
        try:
            limits.update({r: v for (_, _, r), v in parse_what_if((f"{ns}/{name}:{h}",)).items()})
        except InputError as exc:
            raise InputError(exc.problem, obj=f"ResourceQuota {ns}/{name}", field=f"--hard {h}") from None
        resource, _, text = h.partition("=")
        texts[resource] = text
    manifests: list[tuple[str, Any]] = []
    for path in pod_files:
        docs = yaml_documents(read_text(path, "pod manifests"), str(path))
        for doc in docs:
            manifests.extend(split_documents(doc, str(path)))
    _emit(plan_quota(snap, ns, name, limits, manifests, texts), output)


@plan.command("upgrade")
@_pool
@_pool_label
@click.option("--component", required=True, type=click.Choice(["device-plugin", "driver", "gpu-operator"]))
@click.option(
    "--to", "version", required=True, help="The version to install (ClusterPolicy version or chart version)."
)
@click.option(
    "--cluster-policy", default="cluster-policy", show_default=True, help="The ClusterPolicy's name."
)
@click.option("--helm-release", default="gpu-operator", show_default=True)
@click.option("--helm-chart", default="nvidia/gpu-operator", show_default=True)
@_operator_ns
@_test_ns
@_when
@_node_ns
@_output
@source_options
@one_shot
def upgrade(pool: str, pool_label: str, component: str, version: str, cluster_policy: str, helm_release: str,
            helm_chart: str, operator_namespace: str, test_namespace: str, now: str | None, ns: str, output: str,
            **src: Any) -> None:  # fmt: skip
    """Upgrade the device plugin, driver or GPU Operator on a pool, one node at a time from a canary."""
    from kubegpu.plan.upgrade import plan_upgrade

    if not version.strip():
        raise InputError("must be a version, got an empty string", field="--to")
    snap = load_snapshot(**src)
    targets = _targets((), f"{pool_label}={pool}", snap)
    _emit(plan_upgrade(snap, targets, component, version, command_now(snap, now), operator_namespace=operator_namespace,
                       cluster_policy=cluster_policy, helm_release=helm_release, helm_chart=helm_chart,
                       test_namespace=test_namespace, ns=ns), output)  # fmt: skip


@plan.command("kubelet-policy")
@_pool
@_pool_label
@click.option("--cpu-manager", type=click.Choice(["static", "none"]), default=None)
@click.option("--topology-manager", type=click.Choice(["none", "best-effort", "restricted", "single-numa-node"]),
              default=None)  # fmt: skip
@click.option("--kubelet-config", default="/var/lib/kubelet/config.yaml", show_default=True,
              help="The KubeletConfiguration file on the nodes.")  # fmt: skip
@_test_ns
@_when
@_node_ns
@_output
@source_options
@one_shot
def kubelet_policy(pool: str, pool_label: str, cpu_manager: str | None, topology_manager: str | None,
                   kubelet_config: str, test_namespace: str, now: str | None, ns: str, output: str,
                   **src: Any) -> None:  # fmt: skip
    """Change kubelet's CPU Manager / Topology Manager policy on a pool: TopologyAffinityError rejections,
    the drain, the cpu_manager_state removal, restart, verification and rollback per node."""
    from kubegpu.plan.kubelet_policy import plan_kubelet_policy

    snap = load_snapshot(**src)
    targets = _targets((), f"{pool_label}={pool}", snap)
    _emit(plan_kubelet_policy(snap, targets, command_now(snap, now), cpu_manager=cpu_manager,
                              topology_manager=topology_manager, ns=ns, test_namespace=test_namespace,
                              kubelet_config=kubelet_config), output)  # fmt: skip


@plan.command("dra-migration")
@_pool
@_pool_label
@click.option("--to", "direction", required=True, type=click.Choice(["dra", "device-plugin"]),
              help="Which stack the pool's GPUs move to.")  # fmt: skip
@click.option("--device-class", default="gpu.nvidia.com", show_default=True,
              help="The DeviceClass for whole GPUs (NVIDIA's DRA driver chart's name).")  # fmt: skip
@_test_ns
@_when
@_node_ns
@_output
@source_options
@one_shot
def dra_migration(pool: str, pool_label: str, direction: str, device_class: str, test_namespace: str,
                  now: str | None, ns: str, output: str, **src: Any) -> None:  # fmt: skip
    """Move a pool's GPUs from the device plugin to DRA (or back): the pods on each path, the DeviceClass and
    claims needed, the effect by the scheduling core, a canary by least disruption, verification, rollback."""
    from kubegpu.plan.dra_migration import TO_DEVICE_PLUGIN, TO_DRA, plan_dra_migration

    snap = load_snapshot(**src)
    targets = _targets((), f"{pool_label}={pool}", snap)
    _emit(plan_dra_migration(snap, targets, TO_DRA if direction == "dra" else TO_DEVICE_PLUGIN, command_now(snap, now),
                             ns=ns, test_namespace=test_namespace, device_class=device_class), output)  # fmt: skip


def _node(name: str, src: dict[str, Any]) -> tuple[Any, Node]:

    snap = load_snapshot(**src)
    node = snap.node(name)
    if node is None:
        known = ", ".join(n.name for n in snap.nodes[:10])
        raise InputError(f"no node {name!r} in {snap.description or 'the snapshot'} (nodes: {known})")
    return snap, node


def _emit(change: NodeChange, output: str) -> None:
    emit(change.as_dict(), output, lambda: _table(change))


def _table(change: NodeChange) -> None:
    console = Console(highlight=False, soft_wrap=True)
    console.print(f"[bold]{change.kind} plan[/bold]: {change.summary}")
    names = sorted(set(change.capacity_before) | set(change.capacity_after))
    scope = change.details.get("scope")
    if isinstance(scope, dict):
        console.print("\n[bold]Scope[/bold]")
        for k, v in scope.items():
            console.print(f"  {k}: {json.dumps(v)}", markup=False)
    if names:
        console.print("\n[bold]Capacity[/bold] (before → after)")
    for n in names:
        b, a = change.capacity_before.get(n, 0), change.capacity_after.get(n, 0)
        console.print(f"  {n}: {b} → {a}" + ("" if a == b else f"  ({a - b:+d})"), markup=False)
    effect = change.details.get("effect")
    if isinstance(effect, dict):
        reason = change.details.get("canary_reason")
        where = f"; canary {change.node}: {reason}" if reason else ""
        console.print(
            f"\n[bold]Effect[/bold] (the scheduling core and admission on the changed snapshot{where})"
        )
        for row in effect["newly_pending"]:
            console.print(
                f"  becomes Pending: {row['pod']} (fits {row['before']} today) — {row['message']}",
                markup=False,
            )
        for row in effect["newly_schedulable"]:
            console.print(f"  becomes schedulable: {row['pod']} → {row['node']}", markup=False)
        for row in effect["evicted"]:
            where = f"lands on {row['lands']}" if row["lands"] else f"does not land: {row['message']}"
            console.print(f"  evicted: {row['pod']} from {row['node']} ({row['gpu_hours_at_risk']} GPU-h at risk); {where}",
                          markup=False)  # fmt: skip
        for row in effect["quota_rejections"]:
            what = (
                f"new pod {row['pod']} ({row['source']})"
                if row["kind"] == "new"
                else f"a replacement for {row['pod']}"
            )
            when = "starts being rejected" if row["starts"] else "is rejected already"
            console.print(f"  {what} {when}: {row['message']}", markup=False)
        for row in effect["kubelet_rejections"]:
            verdict = f"{row['reason']}: {row['message']}" if row["reason"] else row["message"]
            console.print(
                f"  kubelet on {row['node']}, {row['kind']} pod {row['pod']}: {verdict}", markup=False
            )
        for node, rows in effect["nodes"].items():
            for r, v in rows.items():
                cap, alloc = v["capacity"], v["allocatable"]
                console.print(f"  {node} {r}: capacity {cap['before']} → {cap['after']}, "
                              f"allocatable {alloc['before']} → {alloc['after']}", markup=False)  # fmt: skip
        for row in effect.get("devices_kept", ()):
            console.print(f"  keeps its devices: {row['pod']} ({json.dumps(row['resources'])})", markup=False)
        if "device_plugin" in change.details:
            console.print(f"  why: {change.details['device_plugin']}", markup=False)
        if not any(effect[k] for k in ("newly_pending", "newly_schedulable", "evicted", "quota_rejections",
                                       "kubelet_rejections")):  # fmt: skip
            console.print("  no pod changes: no pending pod gains or loses a node, nothing is evicted")
        console.print(f"  GPU-hours at risk: {effect['gpu_hours_at_risk']}")
    console.print(f"\n[bold]Pods that must move[/bold] ({len(change.affected)})")
    for p in change.affected:
        console.print(f"  {p.why}", markup=False)
    for w in change.warnings:
        console.print(f"[yellow]warning:[/yellow] {w}")
    for title, steps in (("Procedure", change.steps), ("Rollback", change.rollback)):
        console.print(f"\n[bold]{title}[/bold]")
        for i, step in enumerate(steps, 1):
            console.print(f"  {i}. {step.title}", markup=False)
            for c in step.commands:
                console.print(f"       {c}", markup=False)
            if step.note:
                for line in step.note.rstrip().splitlines():
                    console.print(f"       # {line}", markup=False)
