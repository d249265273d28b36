"""NodeUnschedulable, NodeName and NodePorts reasons: the cordon, the pinned name, the taken host ports."""

from __future__ import annotations

from kubegpu.explain.causes.base import Advice, Context, Hooks
from kubegpu.scheduler.reasons import Cordoned, HostPortConflict, NodeNameMismatch, Reason


def cordoned_evidence(ctx: Context, reason: Cordoned, idx: int) -> list[str]:
    return ["spec.unschedulable is true (cordoned)"]


def cordoned_advice(ctx: Context, reason: Cordoned, nodes: list[str]) -> Advice:
    first = nodes[0]
    return Advice(
        "The nodes are cordoned. Cordon stops new pods only; uncordon when maintenance is done and verified.",
        "Cordoning moves nothing: running pods stay until drained.",
        [
            ctx.cmd(f"get node {first} -o jsonpath='{{.spec.unschedulable}}'"),
            ctx.cmd(f"uncordon {first} --dry-run=server"),
        ],
    )


def node_name_evidence(ctx: Context, reason: NodeNameMismatch, idx: int) -> list[str]:
    return [f"pod is pinned to spec.nodeName={reason.node_name}"]


def ports_evidence(ctx: Context, reason: HostPortConflict, idx: int) -> list[str]:
    used = {(hp.port, hp.protocol) for hp in ctx.engine.cluster.view(idx).host_ports}
    return [
        f"hostPort {hp.port}/{hp.protocol} already used on the node"
        for hp in ctx.pod.host_ports
        if (hp.port, hp.protocol) in used
    ]


def ports_advice(ctx: Context, reason: HostPortConflict, nodes: list[str]) -> Advice:
    return Advice(
        "Another pod holds the same hostPort on these nodes; avoid hostPort or spread the pods.",
        "",
        [ctx.cmd(f"get pods -A -o wide --field-selector spec.nodeName={nodes[0]}")],
    )


HOOKS: dict[type[Reason], Hooks] = {
    Cordoned: Hooks(cordoned_evidence, cordoned_advice),
    NodeNameMismatch: Hooks(node_name_evidence),
    HostPortConflict: Hooks(ports_evidence, ports_advice),
}
