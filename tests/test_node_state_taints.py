"""A taint Kubernetes puts on a node for its state (k8s.io/api/core/v1 well_known_taints.go: the node
lifecycle controller's ``node.kubernetes.io/not-ready``, ``unreachable``, ``*-pressure``,
``network-unavailable``, the cloud controller manager's ``node.cloudprovider.kubernetes.io/*``) is
reported by TaintToleration like any other, but the fix is the node, never a toleration on the pod, nor
removing the taint by hand (which a commenter suggested in kubernetes/minikube#14924: the controller puts
it back while the condition holds).

The node objects are shaped as the reports show them: kubernetes-sigs/kubespray#9989 (FailedScheduling
``3 node(s) had untolerated taint {node.kubernetes.io/not-ready: }``), kind-ci/examples#33 (the Ready
condition ``KubeletNotReady``: ``container runtime network not ready: NetworkReady=false
reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized``) and
kubernetes/minikube#14924 (``1 node(s) had untolerated taint {node.kubernetes.io/disk-pressure: }``).
"""

from __future__ import annotations

from typing import Any

from kubegpu.explain.engine import Engine
from kubegpu.explain.explanation import Explanation
from kubegpu.explain.pending import explain_pod
from kubegpu.model.snapshot import build_snapshot
from kubegpu.testing.builders import make_node, make_pod

CNI_NOT_READY = (
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
    "message:Network plugin returns error: cni plugin not initialized"
)


def _node(name: str, taint: str, condition: tuple[str, str, str] | None) -> dict[str, Any]:
    raw = make_node(name).gpus(1).taint(taint, "", "NoSchedule").obj()
    if condition is not None:
        kind, status, message = condition
        raw["status"]["conditions"] = [
            {"type": "Ready", "status": "True" if kind != "Ready" else status, "reason": "KubeletReady"},
            *([{"type": kind, "status": status, "message": message}] if kind != "Ready" else []),
        ]
        if kind == "Ready":
            raw["status"]["conditions"][0].update(reason="KubeletNotReady", message=message)
    return raw


def _explain(*nodes: dict[str, Any], kube_version: str = "1.33") -> Explanation:
    pod = make_pod("p").gpu(1).obj()
    snap = build_snapshot([("t", o) for o in (*nodes, pod)])
    assert not snap.errors
    snap.kube_version = kube_version
    found = snap.pod("default/p")
    assert found is not None
    return explain_pod(Engine(snap), found)


def test_a_not_ready_node_is_to_be_repaired_not_tolerated() -> None:
    nodes = [
        _node(f"node{i}", "node.kubernetes.io/not-ready", ("Ready", "False", CNI_NOT_READY))
        for i in (1, 2, 3)
    ]
    exp = _explain(*nodes)
    assert exp.message == (
        "0/3 nodes are available: 3 node(s) had untolerated taint {node.kubernetes.io/not-ready: }. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    (group,) = exp.groups
    assert group.nodes == ["node1", "node2", "node3"]
    assert group.fix.startswith(
        "These nodes carry node.kubernetes.io/not-ready:NoSchedule: they are NotReady"
    )
    assert f"node1 reports Ready=False: {CNI_NOT_READY}." in group.fix  # the node's own words
    assert (
        "add a toleration" not in group.fix and "Adding a toleration to the pod is not the fix" in group.fix
    )
    assert "removing one by hand does not repair the node" in group.pitfall
    assert group.commands == [
        "kubectl -n default describe node node1",
        "kubectl -n default get node node1 -o jsonpath='{.status.conditions}'",
    ]


def test_disk_pressure_names_the_condition_and_what_fills_a_gpu_node() -> None:
    node = _node(
        "minikube", "node.kubernetes.io/disk-pressure", ("DiskPressure", "True", "kubelet has disk pressure")
    )
    exp = _explain(node)
    assert exp.message == (
        "0/1 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/disk-pressure: }. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    fix = exp.groups[0].fix
    assert "are short of disk: the kubelet reports DiskPressure" in fix
    assert "minikube reports DiskPressure=True: kubelet has disk pressure." in fix


def test_a_state_taint_without_its_condition_in_the_snapshot_still_gets_the_node_advice() -> None:
    """A manifest with no status.conditions: the advice says what the taint means, and quotes nothing."""
    exp = _explain(_node("n", "node.cloudprovider.kubernetes.io/uninitialized", None))
    fix = exp.groups[0].fix
    assert "are not initialized yet" in fix and "cloud-controller-manager" in fix
    assert " reports " not in fix


def test_any_other_taint_keeps_the_toleration_advice() -> None:
    exp = _explain(make_node("n").gpus(1).taint("dedicated", "ml", "NoSchedule").obj())
    assert "add a toleration (key: dedicated, operator: Equal, value: ml" in exp.groups[0].fix


def test_a_taint_without_a_value_is_tolerated_by_exists_on_its_key() -> None:
    """elyra-ai/elyra#2681 (OpenShift): nodes tainted ``node-role.kubernetes.io/infra:NoSchedule`` (no
    value; the posted message reads ``{node-role.kubernetes.io/infra: }``). The advice names ``Exists``,
    not ``Equal`` with an empty value (which matches too, but reads as a value left out)."""
    exp = _explain(make_node("n").gpus(1).taint("node-role.kubernetes.io/infra", "", "NoSchedule").obj())
    fix = exp.groups[0].fix
    assert "(key: node-role.kubernetes.io/infra, operator: Exists, effect: NoSchedule)" in fix
    assert "value: ," not in fix


def test_from_1_34_one_taint_text_is_advised_taint_by_taint() -> None:
    """kubernetes PR #134740 (1.35, cherry-picked to 1.34) words every untolerated taint alike, so one group
    holds nodes refused for different taints; its advice names each taint with its count, the plain ones in
    one sentence, the node-state one with its own repair (1.33 keeps a group per taint)."""
    nodes = [
        make_node("s1").gpus(1).taint("spot", "true", "NoSchedule").obj(),
        make_node("s2").gpus(1).taint("spot", "true", "NoSchedule").obj(),
        make_node("b").gpus(1).taint("nvidia.com/gpu", "present", "NoSchedule").obj(),
        _node("nr", "node.kubernetes.io/not-ready", ("Ready", "False", CNI_NOT_READY)),
    ]
    exp = _explain(*nodes, kube_version="1.37")
    assert exp.message.startswith("0/4 nodes are available: 4 node(s) had untolerated taint(s).")
    (group,) = exp.groups
    assert group.fix.startswith(
        "2 node(s) with spot=true:NoSchedule, 1 node(s) with nvidia.com/gpu=present:NoSchedule: if the pod "
        "belongs on them, add a toleration for that taint"
    )
    assert "1 node(s) with node.kubernetes.io/not-ready:NoSchedule: These nodes carry" in group.fix
    assert f"nr reports Ready=False: {CNI_NOT_READY}." in group.fix
    assert len(_explain(*nodes, kube_version="1.33").groups) == 3
