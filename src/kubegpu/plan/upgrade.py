"""``kubegpu plan upgrade``: the device plugin, the driver or the GPU Operator on one pool, a node at a time (R15).

The GPU Operator owns the components: ``ClusterPolicy`` (``nvidia.com/v1``, cluster-scoped, the Helm
chart's instance is ``cluster-policy``) sets ``spec.devicePlugin.version`` and ``spec.driver.version``;
it runs them as the DaemonSets ``nvidia-device-plugin-daemonset`` and ``nvidia-driver-daemonset``
(labels ``app=<name>``) in the operator's namespace; the operator itself is the ``gpu-operator`` Helm
release. A version change rolls out to every node at once unless held: ``spec.daemonsets.updateStrategy:
OnDelete`` for the plugin (the driver DaemonSet is always OnDelete) and
``spec.driver.upgradePolicy.autoUpgrade: false`` so the driver upgrade controller does not drain nodes by
itself. Then each node is upgraded by deleting its component pod, after cordon and drain.

The plan: scope (the pool's nodes, GPUs, products and component images, the GPU pods and their
controllers, what stops a drain: bare pods, emptyDir data, PDBs, missing checkpoints), the canary chosen
by least disruption (``node_ops.choose_canary``), the effect of the canary window (the canary cordoned and
drained) from the scheduling core (``plan.effect.simulate``), the backups (ClusterPolicy, DaemonSets, Helm
values and history, running image digests, Node YAML), the hold, the version change with its
``--dry-run=server`` form, and per node cordon → drain → upgrade → verify (pod Ready, its log,
allocatable back, the test pods of ``plan.verify_pods``) → uncordon; then the rollback.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from kubegpu.errors import InputError
from kubegpu.explain.inspect import is_device_plugin
from kubegpu.explain.kubectl import mutate
from kubegpu.explain.operand_hints import OLD_VALIDATOR_IMAGE, validator_in_operator_image
from kubegpu.model.names import GPU_PRODUCT_LABEL as PRODUCT_LABEL
from kubegpu.model.objects import Node, Pod, image_repo_tag
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.plan.effect import simulate
from kubegpu.plan.node_ops import DRAIN, canary_change, choose_canary, drain_checks, gpu_pods, moved_pods
from kubegpu.plan.procedure import NodeChange, Step, gpu_capacity, uncordon_step
from kubegpu.plan.verify_pods import TEST_IMAGE, verify_manifests, verify_step

COMPONENTS = ("device-plugin", "driver", "gpu-operator")
PLUGIN_DS = "nvidia-device-plugin-daemonset"
DRIVER_DS = "nvidia-driver-daemonset"
CLUSTER_POLICY = "cluster-policy"
_VERSION_PATH = {"device-plugin": "/spec/devicePlugin/version", "driver": "/spec/driver/version"}
# the GPU Operator chart's defaults for the two settings the hold changes
RELEASE = json.dumps({"spec": {"daemonsets": {"updateStrategy": "RollingUpdate"},
                               "driver": {"upgradePolicy": {"autoUpgrade": True}}}}, separators=(",", ":"))  # fmt: skip
_SELECTOR = {"device-plugin": f"app={PLUGIN_DS}", "driver": f"app={DRIVER_DS}"}


def _is_driver(pod: Pod) -> bool:
    return DRIVER_DS in pod.name or (pod.owner is not None and pod.owner.name == DRIVER_DS)


def _component_pods(snapshot: ClusterSnapshot, component: str, nodes: set[str]) -> list[Pod]:
    test = {"device-plugin": is_device_plugin, "driver": _is_driver}.get(component)
    if test is None:  # the operator upgrade touches every operand in its namespace
        return [p for p in snapshot.pods if p.node_name in nodes and (is_device_plugin(p) or _is_driver(p))]
    return [p for p in snapshot.pods if p.node_name in nodes and test(p)]


def current_version(snapshot: ClusterSnapshot, component: str, operator_namespace: str) -> str:
    """The version running now, read off the component's pod images (driver: without the OS suffix)."""
    if component == "gpu-operator":
        tags = {image_repo_tag(c.image)[1] for p in snapshot.pods if p.namespace == operator_namespace
                for c in p.containers if "/gpu-operator:" in c.image}  # fmt: skip
    else:
        pods = _component_pods(snapshot, component, {p.node_name for p in snapshot.pods})
        tags = {image_repo_tag(c.image)[1] for p in pods for c in p.containers if c.image}
        if component == "driver":
            tags = {t.split("-", 1)[0] for t in tags}
    tags.discard("")
    return next(iter(tags)) if len(tags) == 1 else ""


def _node_upgrade(node: Node, component: str, opns: str, ns: str, test_ns: str, image: str) -> list[Step]:
    """cordon → drain → upgrade → verify → uncordon on one node."""
    on_node = f"--field-selector spec.nodeName={node.name}"
    selector = f"-l {_SELECTOR[component]} " if component in _SELECTOR else ""
    want = ", ".join(f"{r}={n}" for r, n in gpu_capacity(node).items()) or "no nvidia.com resources"
    what = {
        "device-plugin": "device plugin pod",
        "driver": "driver pod",
        "gpu-operator": "GPU Operator operand pods",
    }[component]
    return [
        Step(f"{node.name}: cordon (moves nothing)", mutate(ns, f"cordon {node.name}")),
        Step(
            f"{node.name}: drain through the Eviction API (PDBs honoured, no --force)",
            mutate(ns, DRAIN.format(node=node.name)),
            "read the drain checks above first; drain waits on PDBs instead of breaking them",
        ),
        Step(
            f"{node.name}: upgrade: delete the {what} so the DaemonSet recreates it at the new version",
            mutate(opns, f"delete pod {selector}{on_node}"),
            "the driver pod unloads and reloads the kernel modules; the node has no GPUs until it is Ready"
            if component != "device-plugin"
            else "kubelet drops the plugin's devices until the new pod registers",
        ),
        Step(
            f"{node.name}: verify the new pods, their logs and the allocatable GPUs",
            (
                f"kubectl -n {opns} wait pod {selector}{on_node} --for=condition=Ready --timeout=15m",
                f"kubectl -n {opns} get pod {selector}{on_node} -o custom-columns=NAME:.metadata.name,"
                "READY:.status.containerStatuses[*].ready,IMAGE:.spec.containers[*].image,DIGEST:.status.containerStatuses[*].imageID",
                # kubectl logs takes no field selector: list the node's pods, then read each
                f"for p in $(kubectl -n {opns} get pod {selector}{on_node} -o name); do "
                f"kubectl -n {opns} logs $p --all-containers --tail=100; done",
                f"kubectl -n {ns} get node {node.name} -o jsonpath='{{.status.allocatable}}'",
            ),
            f"expect every pod Ready with the new image, no errors in the log, allocatable {want} as before",
        ),
        verify_step(node, test_ns, verify_manifests(node, test_ns, image)),
        uncordon_step(node, ns, f"{node.name}: uncordon"),
    ]


def _patch_version(component: str, version: str, policy: str, opns: str) -> tuple[str, str]:
    ops = json.dumps(
        [{"op": "replace", "path": _VERSION_PATH[component], "value": version}], separators=(",", ":")
    )
    return mutate(opns, f"patch clusterpolicies.nvidia.com {policy} --type=json -p='{ops}'")


def plan_upgrade(
    snapshot: ClusterSnapshot,
    targets: Sequence[Node],
    component: str,
    version: str,
    now: datetime,
    *,
    operator_namespace: str = "gpu-operator",
    cluster_policy: str = CLUSTER_POLICY,
    helm_release: str = "gpu-operator",
    helm_chart: str = "nvidia/gpu-operator",
    test_namespace: str = "default",
    ns: str = "default",
    image: str = TEST_IMAGE,
) -> NodeChange:
    if component not in COMPONENTS:
        raise InputError(
            f"unknown component {component!r} (one of {', '.join(COMPONENTS)})", field="--component"
        )
    if not targets:
        raise InputError("the pool has no nodes", field="--pool")
    opns = operator_namespace
    names = {n.name for n in targets}
    canary, why = choose_canary(snapshot, targets, now)
    drained, checks = drain_checks(snapshot, canary.name)
    effect = simulate(
        snapshot, {canary.name: replace(canary, unschedulable=True)}, {p.key for p in drained}, now
    )
    previous = current_version(snapshot, component, opns)
    comp_pods = _component_pods(snapshot, component, names)
    all_checks = list(checks)
    for n in targets:
        if n.name != canary.name:
            all_checks += drain_checks(snapshot, n.name)[1]
    products = sorted({n.labels.get(PRODUCT_LABEL, "unknown") for n in targets})
    warnings = all_checks[:]
    if len(products) > 1:
        warnings.append(f"the pool mixes GPU products ({', '.join(products)}): verify the canary of each")
    if previous == version:
        warnings.append(f"{component} already runs {version} on the pool's pods")
    outside = sorted(n.name for n in snapshot.nodes if n.name not in names and gpu_capacity(n))
    if outside:
        warnings.append(
            f"the {'Helm release' if component == 'gpu-operator' else 'ClusterPolicy'} is cluster-wide: GPU nodes "
            f"outside the pool ({', '.join(outside)}) keep the old {component} only while the hold lasts"
        )
    if component in ("driver", "gpu-operator"):
        warnings.append(
            "the chart's driver upgrade controller drains with force (driver.upgradePolicy.drain.force: true), "
            "deleting bare pods; the hold (autoUpgrade: false) keeps it out, and this runbook drains without --force"
        )
    values_backup = f"{helm_release}-values-before.yaml"
    if component == "gpu-operator" and validator_in_operator_image(version) and (old_validator := [
        i for ds in snapshot.records.daemonsets if ds.namespace == opns for i in ds.images if OLD_VALIDATOR_IMAGE in i
    ]):  # fmt: skip
        warnings.append(
            f"{version} has no {OLD_VALIDATOR_IMAGE} image: from v25.10.0 the validator is in the operator's own "
            f"image (NVIDIA/gpu-operator PR 1483), and the operands now run {old_validator[0]}; remove "
            f"validator.repository / validator.image / validator.version from {values_backup} before step 3, or "
            "every operand's validator init container backs off pulling the old image (NVIDIA/gpu-operator#1968)"
        )
    missing = sorted(names - {p.node_name for p in comp_pods})
    if missing and component != "gpu-operator":
        warnings.append(
            f"no {component} pod found on {', '.join(missing)}: the snapshot may lack the operator's namespace"
        )
    policy_backup = f"{cluster_policy}-before.yaml"
    revision_file = f"{helm_release}-revision-before.txt"
    digests = f"{opns}-image-digests-before.txt"
    backups = [
        f"kubectl -n {opns} get clusterpolicies.nvidia.com {cluster_policy} -o yaml > {policy_backup}",
        f"kubectl -n {opns} get daemonsets -o yaml > {opns}-daemonsets-before.yaml",
        f"helm -n {opns} get values {helm_release} -o yaml > {values_backup}",
        f"helm -n {opns} history {helm_release}",
        # Helm's default storage driver keeps each revision as a Secret labelled owner=helm, name=<release>,
        # status=deployed|superseded, version=<revision>: the deployed one is the revision to roll back to
        f"kubectl -n {opns} get secret -l owner=helm,name={helm_release},status=deployed "
        f"-o jsonpath='{{.items[0].metadata.labels.version}}' > {revision_file}",
        f'kubectl -n {opns} get pods -o jsonpath=\'{{range .items[*]}}{{.metadata.name}}{{"\\t"}}{{.spec.nodeName}}'
        f'{{"\\t"}}{{.status.containerStatuses[*].imageID}}{{"\\n"}}{{end}}\' > {digests}',
        *(f"kubectl -n {ns} get node {n.name} -o yaml > {n.name}-before.yaml" for n in targets),
    ]
    hold_patch = json.dumps({"spec": {"daemonsets": {"updateStrategy": "OnDelete"}, "driver": {"upgradePolicy": {"autoUpgrade": False}}}},
                            separators=(",", ":"))  # fmt: skip
    if component == "gpu-operator":
        crds = [f"https://raw.githubusercontent.com/NVIDIA/gpu-operator/refs/tags/{version}/deployments/gpu-operator/crds/{f}"
                for f in ("nvidia.com_clusterpolicies.yaml", "nvidia.com_nvidiadrivers.yaml")]  # fmt: skip
        hold_flags = "--set daemonsets.updateStrategy=OnDelete --set driver.upgradePolicy.autoUpgrade=false"
        change_steps = [
            Step(
                "Update the CRDs first (Helm does not upgrade CRDs)",
                tuple(c for url in crds for c in mutate(opns, f"apply -f {url}")),
            ),
            Step(
                f"Upgrade the release to {version}, holding the operands (they change only where their pods are deleted)",
                (
                    f"helm -n {opns} upgrade {helm_release} {helm_chart} --version {version} -f {values_backup} {hold_flags} --dry-run=server",
                    f"helm -n {opns} upgrade {helm_release} {helm_chart} --version {version} -f {values_backup} {hold_flags}",
                    f"kubectl -n {opns} get clusterpolicies.nvidia.com {cluster_policy} -o jsonpath='{{.status.state}}'",
                ),
                "the operator pod restarts at the new version; ClusterPolicy goes notReady while operands differ",
            ),
        ]
    else:
        change_steps = [
            Step(
                "Hold the rollout: operand DaemonSets OnDelete, no automatic driver upgrades",
                mutate(
                    opns, f"patch clusterpolicies.nvidia.com {cluster_policy} --type=merge -p='{hold_patch}'"
                ),
                f"the values these replace are in {policy_backup}: restore them when the pool is done",
            ),
            Step(
                f"Set {component} {_VERSION_PATH[component].rsplit('/', 2)[1]}.version {previous or '(current)'} → {version}",
                (
                    *_patch_version(component, version, cluster_policy, opns),
                    f"kubectl -n {opns} get daemonset {PLUGIN_DS if component == 'device-plugin' else DRIVER_DS} "
                    "-o jsonpath='{.spec.template.spec.containers[*].image}'",
                ),
                "the DaemonSet template shows the new image; running pods keep the old one until deleted",
            ),
        ]
    steps = [
        Step(
            "Back up the ClusterPolicy, DaemonSets, Helm values and history, image digests and Nodes",
            tuple(backups),
            "Node YAML is for comparison, not to re-apply",
        ),
        *change_steps,
        *[
            replace(s, title=f"Canary {s.title}" if i == 0 else s.title)
            for i, s in enumerate(_node_upgrade(canary, component, opns, ns, test_namespace, image))
        ],
    ]
    others = [n for n in targets if n.name != canary.name]
    for n in others:
        steps += _node_upgrade(n, component, opns, ns, test_namespace, image)
    release_note = (
        "the chart's defaults; if the backup holds other values for spec.daemonsets.updateStrategy or "
        "spec.driver.upgradePolicy.autoUpgrade, put those instead. GPU nodes outside the pool then roll on their own"
    )
    if component == "gpu-operator":
        release = (
            f"helm -n {opns} upgrade {helm_release} {helm_chart} --version {version} -f {values_backup}",
        )
        steps.append(Step("Release the hold once the pool is done: the same upgrade without the hold flags",
                          (f"{release[0]} --dry-run=server", *release),
                          f"the values come back from {values_backup}; GPU nodes outside the pool then roll on their own"))  # fmt: skip
    else:
        steps.append(Step("Release the hold once the pool is done",
                          mutate(opns, f"patch clusterpolicies.nvidia.com {cluster_policy} --type=merge -p='{RELEASE}'"),
                          release_note))  # fmt: skip
    if component == "gpu-operator":
        rollback_change = Step(
            f"Roll the release back to the revision deployed before the upgrade (recorded in {revision_file})",
            (
                f'helm -n {opns} rollback {helm_release} "$(cat {revision_file})" --dry-run',
                f'helm -n {opns} rollback {helm_release} "$(cat {revision_file})"',
            ),
            f"then compare ClusterPolicy with {policy_backup} and the running digests with {digests}",
        )
    elif previous:
        rollback_change = Step(f"Set {component} back to {previous}", _patch_version(component, previous, cluster_policy, opns),
                               f"compare the recreated pods' imageID with {digests}")  # fmt: skip
    else:  # a patch with a made-up version would apply it: say what is missing instead
        rollback_change = Step(
            f"Set {component} back: not planned, the running {component} version is unknown (no tagged image "
            "in the snapshot)",
            (),
            f"read {_VERSION_PATH[component]} from {policy_backup} (step 1) and patch it back to that value",
        )
    rollback = [rollback_change]
    for n in [canary, *others]:
        rollback += _node_upgrade(n, component, opns, ns, test_namespace, image)
    scope = {
        "component": component,
        "from": previous,
        "to": version,
        "nodes": {
            n.name: {"gpus": gpu_capacity(n), "product": n.labels.get(PRODUCT_LABEL, "")} for n in targets
        },
        "gpu_pods": {
            n.name: [
                f"{p.key} ({p.owner.kind}/{p.owner.name})" if p.owner else f"{p.key} (bare)"
                for p in gpu_pods(snapshot, n.name)
            ]
            for n in targets
        },
        "component_pods": {p.key: [c.image for c in p.containers] for p in comp_pods},
        "drain_checks": all_checks,
    }
    summary = f"upgrade {component} {previous or '(current)'} → {version} on {len(targets)} node(s), canary {canary.name}"
    verify = {n.name: verify_manifests(n, test_namespace, image) for n in targets}
    return canary_change("upgrade", snapshot, targets, canary, why, effect, summary, moved_pods(drained), steps,
                         rollback, warnings, scope, verify_manifests=verify)  # fmt: skip
