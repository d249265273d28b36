"""``kubegpu plan kubelet-policy``: change kubelet's CPU Manager / Topology Manager policy on a pool (R10.2, R15).

Both policies are kubelet configuration (``cpuManagerPolicy``, ``topologyManagerPolicy`` in the
KubeletConfiguration file), read at start: a change means a kubelet restart, one node at a time. Changing
the CPU Manager policy also needs the node drained and kubelet's checkpoint ``/var/lib/kubelet/cpu_manager_state``
removed while kubelet is stopped, or kubelet refuses to start ("could not restore state from checkpoint");
``static`` needs a CPU reservation above zero (``reservedSystemCPUs``, or ``kubeReserved``/``systemReserved``
cpu). kubegpu reads a node's Topology Manager policy from the ``kubegpu.io/topology-manager-policy``
annotation, so the runbook updates it with the kubelet.

Effect, from the core's model of kubelet's Topology Manager (``devices.numa`` through
``scheduler.device_ledger.choose``): the pool's GPU pods re-admitted on their node under the new policy, in
creation order as after a drain that brings them back, compared with the same under the old policy (those
refused fail with ``TopologyAffinityError``, those admitted may land on other NUMA nodes); pending pods that
kube-scheduler (which counts, it does not align) would bind to a pool node where kubelet then fails them; and the canary window (the canary cordoned and
drained) from ``plan.effect.simulate``. CPU hints are not modelled: the node's per-NUMA CPUs are not in the
snapshot, so a Guaranteed pod with whole CPUs may still be refused on CPU grounds the plan cannot see.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from kubegpu.devices.node_devices import (
    INVENTORY_ANNOTATION,
    TOPOLOGY_POLICIES,
    TOPOLOGY_POLICY_ANNOTATION,
    NodeDevices,
)
from kubegpu.devices.numa import TOPOLOGY_AFFINITY_ERROR
from kubegpu.errors import InputError
from kubegpu.explain.kubectl import mutate
from kubegpu.model.objects import Node, Pod
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.plan.effect import kubelet_refusals, simulate
from kubegpu.plan.node_ops import DRAIN, canary_change, choose_canary, drain_checks, moved_pods
from kubegpu.plan.procedure import NodeChange, Step, gpu_capacity, uncordon_step
from kubegpu.plan.verify_pods import TEST_IMAGE, numa_pod, verify_manifests, verify_step
from kubegpu.scheduler.assembly import Engine
from kubegpu.scheduler.device_ledger import Refusal, choose, container_requests

CPU_POLICIES = ("none", "static")
CPU_STATE = "/var/lib/kubelet/cpu_manager_state"  # kubelet root dir + cpumanager.CPUManagerStateFileName
KUBELET_CONFIG = "/var/lib/kubelet/config.yaml"  # where kubeadm writes the KubeletConfiguration


def guaranteed_whole_cpus(pod: Pod) -> bool:
    """Guaranteed QoS (every container: cpu and memory requests = limits) with whole CPUs: the pods the
    static CPU Manager gives exclusive CPUs."""
    if not pod.containers:
        return False
    for c in pod.containers:
        for r in ("cpu", "memory"):
            if not c.limits.get(r) or c.requests.get(r) != c.limits.get(r):
                return False
    return all(c.requests["cpu"] % 1000 == 0 for c in pod.containers)


def _readmit(engine: Engine, node: str) -> dict[str, tuple[list[str], Refusal | None]]:
    """kubelet admitting the node's GPU pods one after another, oldest first, on an empty node."""
    idx = engine.cluster.index[node]
    model = engine.cluster.devices.models[idx]
    out: dict[str, tuple[list[str], Refusal | None]] = {}
    if model is None:
        return out
    taken: dict[str, set[str]] = {}
    pods = sorted((p for p in engine.snapshot.pods_on(node) if container_requests(p)),
                  key=lambda p: (p.creation_timestamp, p.name))  # fmt: skip
    for pod in pods:
        assignment, refusal = choose(pod, model, taken, as_kubelet=True)
        for res in (assignment or {}).values():
            for r, ids in res.items():
                taken.setdefault(r, set()).update(ids)
        out[pod.key] = (
            sorted(i for res in (assignment or {}).values() for ids in res.values() for i in ids),
            refusal,
        )
    return out


def _numa(model: NodeDevices, ids: list[str]) -> list[int]:
    return sorted({n for n in (model.numa_of(i) for i in ids) if n is not None})


def readmission(before: Engine, after: Engine, node: str) -> list[dict[str, Any]]:
    """Pods whose admission on ``node`` differs between the old and the new policy, when drained pods
    come back to it: refused by the new one, or given devices on other NUMA nodes."""
    old, new = _readmit(before, node), _readmit(after, node)
    model = after.cluster.devices.models[after.cluster.index[node]]
    rows = []
    for key, (ids, refusal) in new.items():
        was, was_refusal = old.get(key, ([], None))
        if refusal is not None and was_refusal is None:
            rows.append({"pod": key, "node": node, "kind": "running", "before": was, "after": None,
                         "reason": refusal.kubelet_reason, "message": refusal.kubelet_error,
                         "evidence": refusal.evidence})  # fmt: skip
        elif refusal is None and model is not None:
            # a change of NUMA node is what the policy does; other device IDs on the same node are the allocator's
            numa_was, numa_now = _numa(model, was), _numa(model, ids)
            if numa_was != numa_now:
                rows.append({"pod": key, "node": node, "kind": "running", "before": was, "after": ids,
                             "reason": "", "message": f"admitted on NUMA {numa_now} instead of {numa_was}",
                             "evidence": ""})  # fmt: skip
    return rows


def _node_steps(node: Node, cpu: str | None, topo: str | None, ns: str, test_ns: str, config: str,
                image: str, rollback: bool) -> list[Step]:  # fmt: skip
    on = f"on {node.name}: "
    old_topo = node.annotations.get(TOPOLOGY_POLICY_ANNOTATION, "none")
    fields = []
    if cpu is not None:
        fields.append(f"cpuManagerPolicy: {cpu}")
    if topo is not None:
        fields.append(f"topologyManagerPolicy: {topo}")
    restart = [f"{on}sudo systemctl stop kubelet"]
    if cpu is not None:
        restart.append(f"{on}sudo rm -f {CPU_STATE}")
    if rollback:
        restart += [f"{on}sudo cp {config}.before {config}", f"{on}sudo systemctl start kubelet"]
        edit_note = f"restores the configuration saved before the change; {CPU_STATE} is rebuilt at start"
    else:
        restart += [f"{on}sudoedit {config}", f"{on}sudo systemctl start kubelet"]
        edit_note = "set " + ", ".join(fields) + (
            "; static needs a CPU reservation above zero (reservedSystemCPUs, or kubeReserved/systemReserved cpu)"
            if cpu == "static" else "") + f". Without removing {CPU_STATE} kubelet refuses to start after a CPU " \
            "Manager policy change (could not restore state from checkpoint)"  # fmt: skip
    annotate = []
    if topo is not None:
        value = old_topo if rollback else topo
        annotate = list(
            mutate(ns, f"annotate node {node.name} {TOPOLOGY_POLICY_ANNOTATION}={value} --overwrite")
        )
    configz = f"kubectl -n {ns} get --raw /api/v1/nodes/{node.name}/proxy/configz"
    manifests = [*verify_manifests(node, test_ns, image), numa_pod(node, test_ns, image)]
    want = ", ".join(f"{r}={n}" for r, n in gpu_capacity(node).items()) or "no nvidia.com resources"
    steps = [
        Step(f"{node.name}: cordon (moves nothing)", mutate(ns, f"cordon {node.name}")),
        Step(
            f"{node.name}: drain through the Eviction API (PDBs honoured, no --force)",
            mutate(ns, DRAIN.format(node=node.name)),
        ),
        Step(
            f"{node.name}: stop kubelet, {'restore' if rollback else 'change'} its configuration, start it",
            tuple(restart),
            edit_note,
        ),
    ]
    if annotate:
        steps.append(
            Step(f"{node.name}: record the Topology Manager policy where kubegpu reads it", tuple(annotate))
        )
    steps += [
        Step(
            f"{node.name}: verify kubelet is back with the policy and the GPUs",
            (
                f"kubectl -n {ns} wait node/{node.name} --for=condition=Ready --timeout=10m",
                f"{configz} | python3 -m json.tool | grep -E '\"(cpuManagerPolicy|topologyManagerPolicy)\"'",
                f"kubectl -n {ns} get node {node.name} -o jsonpath='{{.status.allocatable}}'",
                f"{on}sudo journalctl -u kubelet --since=-15m --no-pager | grep -iE 'cpu_manager|topology|error'",
            ),
            f"expect allocatable {want} as before",
        ),
        verify_step(node, test_ns, manifests),
        uncordon_step(node, ns, f"{node.name}: uncordon"),
    ]
    return steps


def plan_kubelet_policy(
    snapshot: ClusterSnapshot,
    targets: Sequence[Node],
    now: datetime,
    *,
    cpu_manager: str | None = None,
    topology_manager: str | None = None,
    ns: str = "default",
    test_namespace: str = "default",
    kubelet_config: str = KUBELET_CONFIG,
    image: str = TEST_IMAGE,
) -> NodeChange:
    if cpu_manager is None and topology_manager is None:
        raise InputError("give --cpu-manager and/or --topology-manager", field="--cpu-manager")
    if cpu_manager is not None and cpu_manager not in CPU_POLICIES:
        raise InputError(f"unknown CPU Manager policy {cpu_manager!r} (one of {', '.join(CPU_POLICIES)})",
                         field="--cpu-manager")  # fmt: skip
    if topology_manager is not None and topology_manager not in TOPOLOGY_POLICIES:
        raise InputError(f"unknown Topology Manager policy {topology_manager!r} (one of {', '.join(TOPOLOGY_POLICIES)})",
                         field="--topology-manager")  # fmt: skip
    if not targets:
        raise InputError("the pool has no nodes", field="--pool")
    names = {n.name for n in targets}
    changed: dict[str, Node] = {}
    for n in targets:
        annotations = dict(n.annotations)
        if topology_manager is not None:
            annotations[TOPOLOGY_POLICY_ANNOTATION] = topology_manager
        changed[n.name] = replace(n, annotations=annotations)
    after_snap = replace(snapshot, nodes=[changed.get(n.name, n) for n in snapshot.nodes], errors=[])
    before, after = Engine(snapshot), Engine(after_snap)
    canary, why = choose_canary(snapshot, targets, now)
    drained, checks = drain_checks(snapshot, canary.name)
    effect = simulate(
        snapshot, {canary.name: replace(canary, unschedulable=True)}, {p.key for p in drained}, now
    )
    for n in targets:
        effect.kubelet_rejections += readmission(before, after, n.name)
    effect.kubelet_rejections += kubelet_refusals(before, after, names, TOPOLOGY_AFFINITY_ERROR)
    all_checks = [
        *checks,
        *(c for n in targets if n.name != canary.name for c in drain_checks(snapshot, n.name)[1]),
    ]
    exclusive = sorted(p.key for n in targets for p in snapshot.pods_on(n.name) if guaranteed_whole_cpus(p))
    current = {n.name: n.annotations.get(TOPOLOGY_POLICY_ANNOTATION, "none") for n in targets}
    warnings = list(all_checks)
    refused = [r["pod"] for r in effect.kubelet_rejections if r["reason"] == TOPOLOGY_AFFINITY_ERROR]
    if refused:
        warnings.append(
            f"kubelet would fail {', '.join(refused)} at admission with {TOPOLOGY_AFFINITY_ERROR} (not retried: "
            "the controller must recreate them, and they may land on the same node again)"
        )
    if cpu_manager == "static" and exclusive:
        warnings.append(
            f"Guaranteed pods with whole CPUs get exclusive CPUs under static: {', '.join(exclusive)}"
        )
    if cpu_manager is not None:
        warnings.append("CPU topology hints are not modelled (the snapshot has no per-NUMA CPU counts)")
    if topology_manager in ("restricted", "single-numa-node") and cpu_manager != "static":
        warnings.append(f"{topology_manager} without the static CPU Manager aligns devices only, not CPUs")
    blind = [n.name for n in targets if (m := after.devices.get(n.name)) is not None and m.synthesized]
    if blind and topology_manager not in (None, "none"):
        warnings.append(
            f"the GPUs' NUMA nodes are unknown on {', '.join(blind)} (no {INVENTORY_ANNOTATION} annotation): "
            f"kubegpu cannot predict {TOPOLOGY_AFFINITY_ERROR} there; run the numa test pod on the canary"
        )
    ordered = [canary, *(n for n in targets if n.name != canary.name)]
    backup = [f"kubectl -n {ns} get --raw /api/v1/nodes/{n.name}/proxy/configz > {n.name}-kubelet-configz-before.json"
              for n in targets]  # fmt: skip
    backup += [f"on {n.name}: sudo cp {kubelet_config} {kubelet_config}.before" for n in targets]
    backup += [f"kubectl -n {ns} get node {n.name} -o yaml > {n.name}-before.yaml" for n in targets]
    steps = [Step("Back up each kubelet's running configuration and config file, and the Nodes", tuple(backup),
                  "configz is what kubelet runs with; Node YAML is for comparison, not to re-apply")]  # fmt: skip
    for i, n in enumerate(ordered):
        node_steps = _node_steps(
            n, cpu_manager, topology_manager, ns, test_namespace, kubelet_config, image, False
        )
        if i == 0:
            node_steps[0] = replace(node_steps[0], title=f"Canary {node_steps[0].title} ({why})")
        steps += node_steps
    rollback = [s for n in ordered
                for s in _node_steps(n, cpu_manager, topology_manager, ns, test_namespace, kubelet_config, image, True)]  # fmt: skip
    policies = ", ".join(p for p in (f"cpuManagerPolicy {cpu_manager}" if cpu_manager else "",
                                      f"topologyManagerPolicy {topology_manager}" if topology_manager else "") if p)  # fmt: skip
    scope = {
        "topology_manager_now": current,
        "exclusive_cpu_pods": exclusive,
        "gpu_pods": {
            n.name: [p.key for p in snapshot.pods_on(n.name) if container_requests(p)] for n in targets
        },
        "drain_checks": all_checks,
    }
    summary = f"kubelet {policies} on {len(targets)} node(s), canary {canary.name}"
    return canary_change("kubelet-policy", snapshot, targets, canary, why, effect, summary,
                         moved_pods(drained, refused), steps, rollback, warnings, scope)  # fmt: skip
