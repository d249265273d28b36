"""``kubegpu plan time-slicing``: roll a time-slicing change out to one node (R6.2, R15).

The GPU Operator picks the device plugin's config per node from the ``nvidia.com/device-plugin.config``
label (a key of the plugin's ConfigMap). The plan writes the NVIDIA ``version: v1`` config for
``replicas`` (``renameByDefault``, ``failRequestsGreaterThanOne`` as asked), computes the new capacity
(``nvidia.com/gpu`` or ``nvidia.com/gpu.shared`` = GPUs × replicas), lists the GPU pods that must move and
whether they can come back (a rename means workloads must ask for the new name), and prints the
procedure of R6.2: back up the ConfigMap, add the config, cordon, move the GPU pods, label, verify
replicas and allocatable, canary, uncordon; and the rollback (previous label, ConfigMap backup).

The Node once the change is done is ``kubegpu.devices.time_slicing.time_sliced_node`` — the one
implementation of it, shared with ``kubegpu simulate --time-slicing`` (which may not import this face).

Replicas are neither GPUs nor fixed shares: they share memory and fault domain (R6.2, R17.3); the plan
says so. Pure: plain model objects in, a ``NodeChange`` out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from kubegpu.devices.time_slicing import plugin_config_text, time_sliced_node
from kubegpu.errors import InputError
from kubegpu.explain.kubectl import mutate
from kubegpu.model.names import DEVICE_PLUGIN_CONFIG_LABEL as CONFIG_LABEL
from kubegpu.model.names import GPU_COUNT_LABEL as COUNT_LABEL
from kubegpu.model.names import GPU_REPLICAS_LABEL as REPLICAS_LABEL
from kubegpu.model.names import GPU_SHARING_LABEL as SHARING_LABEL
from kubegpu.model.names import NVIDIA_GPU as GPU
from kubegpu.model.objects import Node, Pod
from kubegpu.plan.procedure import (
    NodeChange,
    Step,
    affected_pods,
    applyable,
    canary_pod_step,
    capacity_check,
    cordon_step,
    gpu_capacity,
    label_node,
    move_steps,
    record_steps,
    uncordon_step,
)
from kubegpu.plan.verify_pods import TEST_IMAGE


def time_sliced_after(node: Node, change: NodeChange) -> Node:
    """``node`` after ``change`` (a ``plan_time_slicing`` result): ``time_sliced_node`` with the change's
    replicas, resource name (renamed when it is ``nvidia.com/gpu.shared``) and device plugin config."""
    return time_sliced_node(
        node,
        int(str(change.details["replicas"])),
        rename=change.details["resource"] == GPU + ".shared",
        config_text=str(change.details["plugin_config"]),
    )


def plan_time_slicing(
    node: Node,
    pods: Sequence[Pod],
    replicas: int,
    *,
    rename: bool = False,
    fail_requests_greater_than_one: bool = True,
    config_name: str = "",
    configmap: str = "device-plugin-config",
    operator_namespace: str = "gpu-operator",
    test_namespace: str = "default",
    configmap_object: Mapping[str, Any] | None = None,
) -> NodeChange:
    """``configmap_object``: the device plugin ConfigMap as the snapshot holds it; its rollback manifest is
    that object without server-set fields. Without it the plan says the rollback of the ConfigMap is not
    known instead of re-applying a ``get -o yaml`` backup (its resourceVersion would conflict)."""
    if replicas < 1:
        raise InputError(f"replicas must be at least 1, got {replicas}", field="--replicas")
    raw = node.labels.get(COUNT_LABEL, "")
    if not raw.isdigit() or int(raw) == 0:
        raise InputError(f"{COUNT_LABEL} is {raw!r}: the GPU count is unknown", obj=f"Node {node.name}")
    gpus = int(raw)
    name = config_name or (f"time-sliced-{replicas}" if replicas > 1 else "exclusive")
    resource = GPU + ".shared" if rename and replicas > 1 else GPU
    text = plugin_config_text(
        replicas, rename=rename, fail_requests_greater_than_one=fail_requests_greater_than_one
    )
    before = gpu_capacity(node)
    after = gpu_capacity(time_sliced_node(node, replicas, rename=rename, config_text=text))
    affected = affected_pods(node, pods, after, only=(GPU, GPU + ".shared"))
    previous = node.labels.get(CONFIG_LABEL)
    ns = operator_namespace
    warnings = [
        f"a replica is not a GPU nor 1/{replicas} of one: the {replicas} pods on a GPU share its memory and "
        "faults; cap memory in the application and monitor it"
    ] if replicas > 1 else []  # fmt: skip
    if any(r.startswith("nvidia.com/mig-") for r in before):
        warnings.append("the node also has MIG resources: two sharing modes on one node")
    if rename and replicas > 1:
        warnings.append(
            f"renameByDefault: workloads must request {resource} instead of {GPU} (and quotas follow)"
        )
    for p in affected:
        if not p.controller:
            warnings.append(f"{p.namespace}/{p.name} is a bare pod: deleting it loses it")
    patch = json.dumps({"data": {name: text}})
    steps = (
        record_steps(node, affected, ns, (CONFIG_LABEL, REPLICAS_LABEL, SHARING_LABEL)),
        Step(
            f"Back up the device plugin ConfigMap and add the config {name}",
            (
                f"kubectl -n {ns} get configmap {configmap} -o yaml > {configmap}-before.yaml",
                *mutate(ns, f"patch configmap {configmap} --type merge -p '{patch}'"),
            ),
            f"config {name}:\n{text}",
        ),
        cordon_step(node, ns),
        move_steps(affected),
        Step(
            "Select the config on this node only (canary)",
            mutate(ns, label_node(node.name, CONFIG_LABEL, name)),
            "the device plugin and GFD restart with the new config",
        ),
        Step(
            "Verify the replica labels",
            (f"kubectl -n {ns} get node {node.name} -L {CONFIG_LABEL},{REPLICAS_LABEL},{SHARING_LABEL}",),
            f"expect {REPLICAS_LABEL}={replicas}, {SHARING_LABEL}={'time-slicing' if replicas > 1 else 'none'}",
        ),
        capacity_check(node, ns, after),
        canary_pod_step(node, test_namespace, [resource], TEST_IMAGE),
        Step(
            "Check concurrency and memory behaviour before opening the node",
            (),
            "two test pods on one GPU see the same UUID; run the real workload's memory peak side by side and "
            "watch for OOM; keep a whole-GPU pool for training",
        ),
        uncordon_step(node, ns),
    )
    restore = mutate(ns, label_node(node.name, CONFIG_LABEL, previous or None))
    rollback_file = f"{configmap}-rollback.yaml"
    if configmap_object is not None:
        restore_cm = Step(
            f"Restore the ConfigMap from {rollback_file} (the snapshot's object without server-set fields; "
            f"not {configmap}-before.yaml, whose resourceVersion would conflict)",
            (f"kubectl -n {ns} diff -f {rollback_file}", *mutate(ns, f"apply -f {rollback_file}")),
            yaml.safe_dump(applyable(configmap_object), sort_keys=False),
        )
    else:
        restore_cm = Step(
            f"Restore the ConfigMap: not planned, the snapshot does not hold ConfigMap {ns}/{configmap}",
            (),
            f"{configmap}-before.yaml (step 2) has its old data; re-applying that file as is conflicts on its "
            "resourceVersion: remove resourceVersion, uid, creationTimestamp and managedFields from it first",
        )
    # a node cordoned before the plan stays cordoned: the rollback restores that state, not a schedulable node
    reopen = (uncordon_step(node, ns),)
    rollback = (
        cordon_step(node, ns),
        Step(f"Restore the previous device plugin config ({previous or 'the default'})", restore),
        restore_cm,
        capacity_check(node, ns, before),
        *reopen,
    )
    return NodeChange(
        kind="time-slicing",
        node=node.name,
        summary=f"{node.name}: {gpus} GPU(s), {previous or 'default'} config → {name} ({replicas} per GPU as {resource})",
        capacity_before=before,
        capacity_after=after,
        affected=affected,
        steps=steps,
        rollback=rollback,
        warnings=tuple(warnings),
        details={"config": name, "replicas": replicas, "resource": resource, "plugin_config": text},
    )
