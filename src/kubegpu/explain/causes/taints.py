"""TaintToleration's reason (``UntoleratedTaint``): the taint itself, and whether it also keeps the
NVIDIA device plugin off the node.

The device plugin runs as a DaemonSet; NVIDIA's static manifest (``deployments/static/
nvidia-device-plugin.yml`` in NVIDIA/k8s-device-plugin) tolerates only ``nvidia.com/gpu`` with effect
NoSchedule. A node whose labels say it has GPUs but that advertises none, tainted with something that
toleration does not cover, needs the DaemonSet fixed too: a pod toleration alone would land the pod on
a node with no GPU to give.
"""

from __future__ import annotations

from kubegpu.explain import device_plugin
from kubegpu.explain.causes.base import Advice, Context, Hooks, nothing_of_the_pod
from kubegpu.explain.causes.resources import offered_gpus
from kubegpu.explain.findings import has_gpu_labels
from kubegpu.explain.shared_evidence import store_for
from kubegpu.model.gpu_facts import GPU_TAINT_KEY
from kubegpu.model.objects import Taint, Toleration
from kubegpu.scheduler.reasons import Reason, UntoleratedTaint

# NVIDIA/k8s-device-plugin deployments/static/nvidia-device-plugin.yml, spec.template.spec.tolerations
DEVICE_PLUGIN_TOLERATIONS = (Toleration(GPU_TAINT_KEY, "Exists", "", "NoSchedule"),)


def taint_evidence(ctx: Context, reason: UntoleratedTaint, idx: int) -> list[str]:
    return [f"taint {reason.taint} is not tolerated by the pod"]


def taint_evidence_many(ctx: Context, reason: UntoleratedTaint, idxs: list[int]) -> list[list[str]]:
    lines = [f"taint {reason.taint} is not tolerated by the pod"]  # the same on every node: one list
    return [lines] * len(idxs)


def _labelled_without_gpus(ctx: Context) -> frozenset[str]:
    """The snapshot's nodes whose labels say GPUs but that advertise none: worked out once per engine (a
    taint's group is thousands of nodes, asked for every Pending pod it refuses)."""
    return store_for(ctx.engine).fact(
        (_labelled_without_gpus,),
        lambda: frozenset(
            n.name for n in ctx.engine.snapshot.nodes if not offered_gpus(n) and has_gpu_labels(n)
        ),
    )


def keeps_device_plugin_off(taint: Taint) -> bool:
    return not any(t.tolerates(taint) for t in DEVICE_PLUGIN_TOLERATIONS)


def taint_advice(ctx: Context, reason: UntoleratedTaint, nodes: list[str]) -> Advice:
    taint = reason.taint
    fix = (
        f"These nodes keep pods off with taint {taint}. If the pod belongs on them, add a toleration "
        f"(key: {taint.key}, operator: Equal, value: {taint.value}, effect: {taint.effect}) to its template; "
        "otherwise leave them alone."
    )
    snapshot = ctx.engine.snapshot
    unoffered = _labelled_without_gpus(ctx)
    dark = (
        [n for n in (snapshot.node(name) for name in nodes if name in unoffered) if n is not None]
        if unoffered
        else []
    )
    known_plugins = [ds for ds in snapshot.records.daemonsets if (k := device_plugin.known(ds)) and k.plugin]
    if known_plugins:  # the DaemonSets the cluster runs decide, not the stock manifest
        blocked = sorted({d for n in dark for d in device_plugin.keeps_plugin_off(snapshot, n, taint)})
        if blocked:
            fix = (
                f"Taint {taint} keeps both this pod and the device plugin ({', '.join(blocked)}) off "
                f"{', '.join(n.name for n in dark)}: those nodes advertise no GPU, so a toleration on the pod alone "
                f"would still find no GPU there. First add a toleration for {taint.key} (effect {taint.effect}) to the "
                "device plugin DaemonSet's pod template; once the nodes advertise GPUs, add the same toleration to the "
                "pod if it belongs there."
            )
    elif dark and keeps_device_plugin_off(taint):
        fix += (
            f" On {', '.join(n.name for n in dark)} the taint also keeps the NVIDIA device plugin off: the labels say GPUs, yet "
            "the node advertises none. Add the same toleration to the device plugin's DaemonSet (its stock "
            f"manifest tolerates only {GPU_TAINT_KEY}:NoSchedule), or the pod would land on a node with no GPU to give."
        )
    pitfall = (
        "A toleration only allows the pod onto the node; it neither attracts it there nor gives it a GPU: "
        "the pod must also request nvidia.com/gpu."
        if taint.key == GPU_TAINT_KEY
        else "A toleration allows, it does not attract: pair it with node affinity if the pod must land there."
    )
    return Advice(
        fix,
        pitfall,
        [
            ctx.cmd(f"get node {nodes[0]} -o jsonpath='{{.spec.taints}}'"),
            ctx.cmd(f"get pod {ctx.pod.name} -o jsonpath='{{.spec.tolerations}}'"),
        ],
    )


HOOKS: dict[type[Reason], Hooks] = {
    UntoleratedTaint: Hooks(taint_evidence, taint_advice, taint_evidence_many, pod_part=nothing_of_the_pod)
}
