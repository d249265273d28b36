"""Move a GPU pool between NVIDIA's device plugin and NVIDIA's DRA driver, either way (R15).

Scope: per node, the pods on each path (``nvidia.com/gpu`` through the device plugin; ResourceClaims, or
a plain request served by DRA through the scheduler's special claim, ``explain.dra.dra_users``), the
DeviceClass the DRA side needs and whether the release lets it serve ``nvidia.com/gpu`` itself
(KEP-5004, ``Behaviour.dra_extended_resource``: 1.36+) or the pods need a ResourceClaim instead. Effect:
the one scheduling core on the changed snapshot (``plan.effect.simulate`` with the DRA objects after the
change): the moved node advertises its GPUs through the other stack only (DRA: one device per GPU in a
ResourceSlice of NVIDIA's driver shape, the driver's real slices when it already publishes some; device
plugin: ``nvidia.com/gpu`` = its GPUs), the pods on the path that goes away are evicted and recreated.
Runbook: record, the DeviceClass (``--dry-run=server`` first), then per node from the canary (least
disruption: fewest pods that move, then GPU-hours at risk) cordon, move the pods, switch the stack
(the GPU Operator's per-node ``nvidia.com/gpu.deploy.device-plugin`` label), verify allocatable, slices
and a test pod, uncordon; the rollback switches back, canary first. Every kubectl line carries ``-n``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from kubegpu.explain.dra import dra_users
from kubegpu.explain.kubectl import mutate
from kubegpu.model.dra import Device, DraObjects, ResourceSlice, parse_device_class
from kubegpu.model.gpu_facts import labelled_gpu_count
from kubegpu.model.names import (
    DEVICE_PLUGIN_DEPLOY_LABEL,
    GPU_PRODUCT_LABEL,
    NVIDIA_DRA_DRIVER,
    NVIDIA_GPU,
)
from kubegpu.model.objects import Node, Pod
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.plan.effect import Effect, simulate
from kubegpu.plan.node_ops import canary_change, checkpoint_warnings, choose_canary, moved_pods, pdb_warnings
from kubegpu.plan.procedure import AffectedPod, NodeChange, Step, label_node, uncordon_step
from kubegpu.scheduler.versions import behaviour, choose

TO_DRA = "to-dra"
TO_DEVICE_PLUGIN = "to-device-plugin"
DIRECTIONS = (TO_DRA, TO_DEVICE_PLUGIN)
API = "resource.k8s.io/v1"


def paths(snapshot: ClusterSnapshot, node: str) -> tuple[list[Pod], list[Pod]]:
    """The pods on ``node`` using the device plugin, and those using DRA."""
    dra = set(dra_users(snapshot, node))
    pods = [p for p in snapshot.pods_on(node) if not p.is_terminal]
    plugin = [p for p in pods if p.requests.get(NVIDIA_GPU, 0) and p.key not in dra]
    return plugin, [p for p in pods if p.key in dra]


def _nvidia_gpus(dra: DraObjects, node: str) -> list[Device]:
    return [d for s in dra.slices if s.driver == NVIDIA_DRA_DRIVER and s.node_name == node for d in s.devices
            if d.attributes.get(f"{NVIDIA_DRA_DRIVER}/type") == "gpu"]  # fmt: skip


def _moved(evicted: Sequence[Pod], effect: Effect) -> tuple[AffectedPod, ...]:
    """The moved pods: device-plugin ones by their ``nvidia.com/*`` requests, DRA ones by their claims;
    one returns when the core lands its replacement somewhere after the change."""
    lands = {r["pod"]: r.get("lands") for r in effect.evicted}
    plugin = {f"{a.namespace}/{a.name}": a for a in moved_pods(evicted)}
    out = []
    for p in evicted:
        got = plugin.get(p.key)
        owner = f"{p.owner.kind}/{p.owner.name}" if p.owner else ""
        row = got or AffectedPod(p.namespace, p.name, {"resourceclaims": 1}, owner, True)
        out.append(replace(row, returns=lands.get(p.key) is not None))
    return tuple(out)


def _slice_for(node: Node, gpus: int) -> ResourceSlice:
    """The slice NVIDIA's driver would publish for the node's GPUs (the attributes the classes select on)."""
    product = node.labels.get(GPU_PRODUCT_LABEL, "")
    devices = tuple(
        Device(
            f"gpu-{i}",
            {
                f"{NVIDIA_DRA_DRIVER}/type": "gpu",
                f"{NVIDIA_DRA_DRIVER}/index": i,
                f"{NVIDIA_DRA_DRIVER}/productName": product,
            },
            {},
            {},
        )
        for i in range(gpus)
    )
    return ResourceSlice(f"{node.name}-{NVIDIA_DRA_DRIVER}-planned", NVIDIA_DRA_DRIVER, node.name, 1, 1,
                         node_name=node.name, devices=devices, source="plan dra-migration")  # fmt: skip


def _labelled(node: Node) -> int:
    """GPU Feature Discovery's count: the GPUs a node has even where no plugin advertises them."""
    return labelled_gpu_count(node.labels) or 0


def _with_gpus(node: Node, gpus: int) -> Node:
    def set_(res: dict[str, int]) -> dict[str, int]:
        out = {r: v for r, v in res.items() if r != NVIDIA_GPU}
        if gpus:
            out[NVIDIA_GPU] = gpus * 1000
        return out

    return replace(node, capacity=set_(dict(node.capacity)), allocatable=set_(dict(node.allocatable)))


def device_class_manifest(name: str, extended: bool) -> dict[str, Any]:
    """The DeviceClass NVIDIA's DRA driver chart installs for whole GPUs; ``extended``: it also serves
    ``nvidia.com/gpu`` (KEP-5004), so plain requests need no change."""
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": (
        f"device.driver == '{NVIDIA_DRA_DRIVER}' && device.attributes['{NVIDIA_DRA_DRIVER}'].type == 'gpu'")}}]}  # fmt: skip
    if extended:
        spec["extendedResourceName"] = NVIDIA_GPU
    return {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def claim_template_manifest(namespace: str, device_class: str, count: int) -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": device_class, "count": count}}
    return {"apiVersion": API, "kind": "ResourceClaimTemplate",
            "metadata": {"name": f"gpu-{count}", "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": [request]}}}}  # fmt: skip


def _apply(ns: str, manifest: dict[str, Any]) -> tuple[str, str]:
    """``kubectl apply`` of a manifest saved as ``<kind>-<name>.yaml`` from ``details.manifests``."""
    return mutate(ns, f"apply -f {manifest_file(manifest)}")


def manifest_file(manifest: dict[str, Any]) -> str:
    return f"{manifest['kind'].lower()}-{manifest['metadata']['name']}.yaml"


def _test_pod(node: str, ns: str, to_dra: bool, device_class: str, extended: bool, image: str) -> Step:
    """A throw-away pod pinned to the node, through the new path: a claim (or plain nvidia.com/gpu, where a
    class serves it) on DRA, nvidia.com/gpu on the device plugin."""
    name = "gpu-test-dra" if to_dra else "gpu-test-plugin"
    container: dict[str, Any] = {"name": "t", "image": image, "command": ["nvidia-smi", "-L"]}
    spec: dict[str, Any] = {"nodeName": node, "restartPolicy": "Never", "containers": [container]}
    commands: list[str] = []
    if to_dra and not extended:
        commands += _apply(ns, claim_template_manifest(ns, device_class, 1))
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu-1"}]
        container["resources"] = {"claims": [{"name": "gpu"}]}
    else:
        container["resources"] = {"limits": {NVIDIA_GPU: "1"}}
    overrides = json.dumps({"spec": spec}, separators=(",", ":"))
    commands += mutate(ns, f"run {name} --image={image} --restart=Never --overrides='{overrides}'")
    commands += [f"kubectl -n {ns} logs {name}", *mutate(ns, f"delete pod {name}")]
    return Step(
        "Run a test pod through the new path", tuple(commands), "nvidia-smi -L must list exactly one GPU"
    )


def _node_steps(n: Node, movers: Sequence[Pod], ns: str, to_dra: bool, gpus: int, test: Step) -> list[Step]:
    switch = label_node(n.name, DEVICE_PLUGIN_DEPLOY_LABEL, "false" if to_dra else "true")
    moves: list[str] = []
    for p in movers:
        moves += mutate(p.namespace, f"delete pod {p.name} --wait=true")
    verify = [f"kubectl -n {ns} get node {n.name} -o jsonpath='{{.status.allocatable}}'",
              f"kubectl -n {ns} get resourceslices --field-selector spec.nodeName={n.name}"]  # fmt: skip
    expect = (f"no {NVIDIA_GPU} in allocatable; {gpus} GPU device(s) of driver {NVIDIA_DRA_DRIVER} in the slices"
              if to_dra else f"{NVIDIA_GPU}={gpus} in allocatable; no {NVIDIA_DRA_DRIVER} slices")  # fmt: skip
    stack = ("the DRA driver's kubelet plugin must run here (its DaemonSet's node selector) to publish the slices"
             if to_dra else "stop the DRA driver's kubelet plugin here (its DaemonSet's node selector): else the "
             "GPUs are advertised twice")  # fmt: skip
    return [
        Step(f"{n.name}: cordon (moves nothing)", mutate(ns, f"cordon {n.name}")),
        Step(f"{n.name}: move the pods on the old path, one at a time", tuple(moves),
             "PDBs are not consulted by delete: wait for each replacement to be Ready" if movers else "none here"),
        Step(f"{n.name}: switch the stack", mutate(ns, switch), stack),
        Step(f"{n.name}: verify", tuple(verify), expect),
        test,
        uncordon_step(n, ns, f"{n.name}: uncordon"),
    ]  # fmt: skip


def plan_dra_migration(snapshot: ClusterSnapshot, targets: Sequence[Node], direction: str, now: datetime, *,
                       ns: str = "default", test_namespace: str = "default", device_class: str = NVIDIA_DRA_DRIVER,
                       image: str = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04") -> NodeChange:  # fmt: skip
    """The plan that moves ``targets`` to DRA (``to-dra``) or back to the device plugin."""
    to_dra = direction == TO_DRA
    release = behaviour(snapshot.kube_version) if snapshot.kube_version else (
        choose(None, snapshot.server_version, snapshot.kubelet_versions(), snapshot.api_versions())[0])  # fmt: skip
    extended = to_dra and release.dra_extended_resource
    changed: dict[str, Node] = {}
    slices = [s for s in snapshot.dra.slices if not (s.driver == NVIDIA_DRA_DRIVER and s.node_name in
                                                      {n.name for n in targets})]  # fmt: skip
    movers: dict[str, list[Pod]] = {}
    gpus: dict[str, int] = {}
    for n in targets:
        plugin, dra = paths(snapshot, n.name)
        published = _nvidia_gpus(snapshot.dra, n.name)
        if to_dra:
            gpus[n.name] = len(published) or n.allocatable.get(NVIDIA_GPU, 0) // 1000 or _labelled(n)
            changed[n.name] = _with_gpus(n, 0)
            slices += [s for s in snapshot.dra.slices if s.driver == NVIDIA_DRA_DRIVER and s.node_name == n.name] \
                or [_slice_for(n, gpus[n.name])]  # fmt: skip
            movers[n.name] = plugin
        else:
            gpus[n.name] = n.capacity.get(NVIDIA_GPU, 0) // 1000 or len(published)
            changed[n.name] = _with_gpus(n, gpus[n.name])
            movers[n.name] = dra
    evicted = [p for ps in movers.values() for p in ps]
    gone = {p.uid for p in evicted if p.uid}
    # claims only the moved pods held: the claim controller deallocates them once the pods are gone
    claims = {k: (replace(c, allocated=None, allocation_node_selector=None, reserved_for=())
                  if set(c.reserved_for) & gone and not set(c.reserved_for) - gone else c)
              for k, c in snapshot.dra.claims.items()}  # fmt: skip
    classes = dict(snapshot.dra.classes)
    if to_dra and device_class not in classes:
        classes[device_class] = parse_device_class(device_class_manifest(device_class, extended), "plan")
    dra_after = DraObjects(
        classes, slices, claims, dict(snapshot.dra.templates), dict(snapshot.dra.pod_claims)
    )
    effect = simulate(snapshot, changed, {p.key for p in evicted}, now, dra_after=dra_after)
    canary, why = choose_canary(snapshot, targets, now, lambda name: movers.get(name, []))
    order = [canary, *(n for n in targets if n.name != canary.name)]
    record = [f"kubectl -n {ns} get node {n.name} -o yaml > {n.name}-before.yaml" for n in targets]
    record += [
        f"kubectl -n {ns} get pods -A -o wide --field-selector spec.nodeName={n.name}" for n in targets
    ]
    record += [f"kubectl -n {ns} get resourceslices -o yaml > resourceslices-before.yaml",
               f"kubectl -n {ns} get deviceclasses -o yaml > deviceclasses-before.yaml"]  # fmt: skip
    steps = [
        Step(
            "Record the nodes, their pods and the DRA objects (for comparison, not to re-apply)",
            tuple(record),
        )
    ]
    warnings: list[str] = []
    plain = sorted(p.key for ps in movers.values() for p in ps if p.requests.get(NVIDIA_GPU, 0))
    manifests: dict[str, Any] = {}
    if to_dra:
        manifests["deviceclass"] = device_class_manifest(device_class, extended)
        if not extended:
            manifests["test_claim_template"] = claim_template_manifest(test_namespace, device_class, 1)
        have = classes.get(device_class)
        if device_class not in snapshot.dra.classes:
            steps.append(Step(f"Create DeviceClass {device_class}", _apply(ns, manifests["deviceclass"]),
                              f"{manifest_file(manifests['deviceclass'])}: details.manifests.deviceclass; NVIDIA's "
                              "DRA driver chart creates it when installed"))  # fmt: skip
        if plain and not extended:
            counts = sorted({p.requests[NVIDIA_GPU] // 1000 for ps in movers.values() for p in ps})
            manifests["claim_templates"] = [
                claim_template_manifest("<namespace>", device_class, c) for c in counts
            ]
            warnings.append(
                f"Kubernetes {release.name} cannot serve {NVIDIA_GPU} from a DeviceClass (DRAExtendedResource is on "
                f"from 1.36): {', '.join(plain)} must ask through a ResourceClaimTemplate (details.manifests) or "
                "they land only on device-plugin nodes")  # fmt: skip
        elif plain and have is not None and have.extended_resource_name != NVIDIA_GPU:
            warnings.append(f"DeviceClass {device_class} does not set extendedResourceName: {NVIDIA_GPU}: "
                            f"{', '.join(plain)} land only on device-plugin nodes until it does")  # fmt: skip
    tests = {
        n.name: _test_pod(n.name, test_namespace, to_dra, device_class, extended, image) for n in targets
    }
    for i, n in enumerate(order):
        node_steps = _node_steps(n, movers[n.name], ns, to_dra, gpus[n.name], tests[n.name])
        if i == 0:
            node_steps[0] = replace(node_steps[0], title=f"Canary: {n.name} ({why}): cordon (moves nothing)")
        steps += node_steps
    undo = label_node("{node}", DEVICE_PLUGIN_DEPLOY_LABEL, None if to_dra else "false")
    # (a node cordoned before the plan is not uncordoned: uncordon_step gives it no command)
    rollback = (Step("Switch back, canary first: cordon, restore the label, uncordon (pods that took the new path "
                     "keep running until they are moved)", tuple(c for n in order for c in (*mutate(ns, f"cordon {n.name}"),
                                                                   *mutate(ns, undo.format(node=n.name)),
                                                                   *uncordon_step(n, ns).commands))),)  # fmt: skip
    summary = (f"move {len(targets)} node(s) from the device plugin to DRA ({sum(gpus.values())} GPUs)" if to_dra
               else f"move {len(targets)} node(s) from DRA to the device plugin ({sum(gpus.values())} GPUs)")  # fmt: skip
    scope = {n.name: {"device_plugin_pods": [p.key for p in paths(snapshot, n.name)[0]],
                      "dra_pods": [p.key for p in paths(snapshot, n.name)[1]], "gpus": gpus[n.name]}
             for n in targets}  # fmt: skip
    return canary_change("dra-migration", snapshot, targets, canary, why, effect, summary, _moved(evicted, effect),
                         steps, rollback, warnings + pdb_warnings(snapshot, evicted, deleted=True)
                         + checkpoint_warnings(evicted), scope, direction=direction,
                         kube_release=release.name, extended_resource=extended, manifests=manifests)  # fmt: skip
