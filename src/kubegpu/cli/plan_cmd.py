"""``kubegpu plan``: change plans for one node's GPUs (R6.2, R6.3, R15).

``plan mig NODE --config LAYOUT.yaml [--config-name NAME]`` validates a mig-parted layout against the MIG
catalog and prints the new capacity, the pods that must move and the procedure with its rollback;
``plan time-slicing NODE --replicas N`` does the same for a time-slicing rollout. Both read the cluster
from ``--snapshot``/``--demo``/``--kube`` like every other command. Thin: parse options, call
``kubegpu.plan``, render.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import yaml
from rich.console import Console

from kubegpu.errors import InputError
from kubegpu.model.objects import Node, Pod
from kubegpu.plan import NodeChange, plan_mig, plan_time_slicing


class _SourceCommand(click.Command):
    """A command that takes ``kubegpu.cli.main``'s source options.

    ``main`` imports this module to register the group, so its ``source_options`` cannot be applied at
    import time here; the options are added the first time click asks for the parameters.
    """

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        if not any(p.name == "snapshots" for p in self.params):
            from kubegpu.cli.main import source_options

            def holder() -> None: ...

            decorated = source_options(holder)
            # click.option stacks parameters in reverse order of application on __click_params__.
            self.params = [*self.params, *reversed(getattr(decorated, "__click_params__", []))]
        return super().get_params(ctx)


_output = click.option(
    "-o", "--output", type=click.Choice(["table", "json", "yaml"]), default="table", show_default=True
)
_operator_ns = click.option(
    "--operator-namespace",
    default="gpu-operator",
    show_default=True,
    help="Namespace of the GPU Operator (MIG manager, device plugin ConfigMap).",
)
_test_ns = click.option(
    "--test-namespace", default="default", show_default=True, help="Namespace for the test pods."
)


@click.group()
def plan() -> None:
    """Plan a change of one node's GPU resource model (MIG layout, time-slicing) with its rollback."""


@plan.command("mig", cls=_SourceCommand)
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
@_output
def mig(
    node_name: str,
    config_path: Path,
    config_name: str | None,
    operator_namespace: str,
    test_namespace: str,
    output: str,
    **src: Any,
) -> None:
    """Re-partition NODE's MIG GPUs to a mig-parted layout: new capacity, pods to move, procedure."""
    from kubegpu.devices.mig import load_mig_parted_config

    node, pods = _node_and_pods(node_name, src)
    config = load_mig_parted_config(config_path)
    change = plan_mig(
        node, pods, config, config_name, operator_namespace=operator_namespace, test_namespace=test_namespace
    )
    _emit(change, output)


@plan.command("time-slicing", cls=_SourceCommand)
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
@_output
def time_slicing(
    node_name: str,
    replicas: int,
    rename: bool,
    fail_requests_greater_than_one: bool,
    config_name: str,
    configmap: str,
    operator_namespace: str,
    test_namespace: str,
    output: str,
    **src: Any,
) -> None:
    """Roll time-slicing (N replicas per GPU) out to NODE: config, new capacity, pods to move, procedure."""
    node, pods = _node_and_pods(node_name, src)
    change = plan_time_slicing(
        node,
        pods,
        replicas,
        rename=rename,
        fail_requests_greater_than_one=fail_requests_greater_than_one,
        config_name=config_name,
        configmap=configmap,
        operator_namespace=operator_namespace,
        test_namespace=test_namespace,
    )
    _emit(change, output)


def _node_and_pods(name: str, src: dict[str, Any]) -> tuple[Node, list[Pod]]:
    from kubegpu.cli.main import load_snapshot

    snap = load_snapshot(**src)
    node = snap.node(name)
    if node is None:
        known = ", ".join(n.name for n in snap.nodes[:10])
        raise InputError(f"no node {name!r} in {snap.description or 'the snapshot'} (nodes: {known})")
    return node, list(snap.pods)


def _emit(change: NodeChange, output: str) -> None:
    data = change.as_dict()
    if output == "json":
        click.echo(json.dumps(data, indent=2))
    elif output == "yaml":
        click.echo(yaml.safe_dump(data, sort_keys=False, width=120), nl=False)
    else:
        _table(change)


def _table(change: NodeChange) -> None:
    console = Console(highlight=False, soft_wrap=True)
    console.print(f"[bold]{change.kind} plan[/bold]: {change.summary}")
    names = sorted(set(change.capacity_before) | set(change.capacity_after))
    console.print("\n[bold]Capacity[/bold] (before → after)")
    for n in names:
        b, a = change.capacity_before.get(n, 0), change.capacity_after.get(n, 0)
        console.print(f"  {n}: {b} → {a}" + ("" if a == b else f"  ({a - b:+d})"), markup=False)
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
