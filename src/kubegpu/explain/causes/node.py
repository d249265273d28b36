"""NodeUnschedulable, NodeName and NodePorts reasons: the cordon, the pinned name, the taken host ports."""

from __future__ import annotations

from kubegpu.explain.causes.base import Advice, Context, Hooks
from kubegpu.explain.kubectl import mutate
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
            mutate(ctx.pod.namespace, f"uncordon {first}")[0],
        ],
    )


def node_name_evidence(ctx: Context, reason: NodeNameMismatch, idx: int) -> list[str]:
    return [f"pod is pinned to spec.nodeName={reason.node_name}"]


def ports_evidence(ctx: Context, reason: HostPortConflict, idx: int) -> list[str]:
    used = {(hp.port, hp.protocol) for hp in ctx.engine.cluster.view(idx).host_ports}
    placed = ctx.engine.snapshot.pods_on(ctx.engine.cluster.nodes[idx].name)
    out = []
    for hp in ctx.pod.host_ports:
        if (hp.port, hp.protocol) not in used:
            continue
        holders = [str(p.key) for p in placed if any(hp.conflicts(theirs) for theirs in p.host_ports)]
        by = f" by {', '.join(holders)}" if holders else ""
        out.append(f"hostPort {hp.port}/{hp.protocol} already used on the node{by}")
    return out


def ports_advice(ctx: Context, reason: HostPortConflict, nodes: list[str]) -> Advice:
    if ctx.pod.host_network:  # it set no hostPort: hostNetwork made each containerPort one (SetDefaults_Pod)
        fix = (
            "The pod runs with hostNetwork: true, so each of its containerPorts is a hostPort too, and another pod "
            "holds one on these nodes: run one such pod per node (a DaemonSet, or required pod anti-affinity on "
            "kubernetes.io/hostname), give the replicas different ports, or drop hostNetwork if the pod does not "
            "need the node's network (RDMA/NCCL pods usually do)."
        )
    else:
        fix = "Another pod holds the same hostPort on these nodes; avoid hostPort or spread the pods."
    return Advice(fix, "", [ctx.cmd(f"get pods -A -o wide --field-selector spec.nodeName={nodes[0]}")])


HOOKS: dict[type[Reason], Hooks] = {
    Cordoned: Hooks(cordoned_evidence, cordoned_advice),
    NodeNameMismatch: Hooks(node_name_evidence),
    HostPortConflict: Hooks(ports_evidence, ports_advice),
}
