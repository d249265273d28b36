"""R17.4, tolerating the GPU taint without a GPU, read the same by its four faces: ``diagnose``'s finding,
``explain``'s note, ``plan taint``'s pitfall and the admission lint's ``toleration-without-gpu``
(``kubegpu.model.gpu_toleration``). Before, explain's note alone excepted kube-system, so a kube-system
Deployment tolerating the taint was a warning in ``diagnose``, ``plan`` and the lint and not in ``explain``.

What is excepted, by how clusters run (each pod built by hand here):
- a DaemonSet's pod anywhere: NVIDIA's GPU Operator runs its node agents so (its operands' DaemonSets
  tolerate ``nvidia.com/gpu`` Exists NoSchedule: NVIDIA/gpu-operator deployments/gpu-operator/values.yaml
  ``daemonsets.tolerations``), as do monitoring agents;
- any pod in kube-system, "the namespace for objects created by the Kubernetes system" (kubernetes.io,
  Concepts > Namespaces, Initial namespaces): the cluster's add-ons, Deployments among them;
- not a tenant's Deployment in its own namespace: its replicas take GPU nodes' CPU and memory.
"""

from __future__ import annotations

from typing import Any

from kubegpu.admission.lint import LintContext, lint_object
from kubegpu.explain.engine import Engine
from kubegpu.explain.inspect import inspect
from kubegpu.explain.notes import pod_notes
from kubegpu.plan.node_ops import plan_taint
from kubegpu.testing.builders import make_node, make_pod
from tests.plan.snapshots import GPU_TAINT, NOW, snap

TOL = {"key": "nvidia.com/gpu", "operator": "Exists"}
NOTE = "the pod tolerates the GPU taint but requests no GPU"


def _deployment(namespace: str) -> dict[str, Any]:
    template = make_pod("x").ns(namespace).tolerate(**TOL).obj()
    template["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "addon", "namespace": namespace},
        "spec": {"template": {"metadata": {}, "spec": template["spec"]}},
    }  # fmt: skip


def _faces(namespace: str, owner: str) -> dict[str, bool]:
    """Whether each face flags one pod of ``owner`` in ``namespace`` on the tainted GPU node g."""
    s = snap(
        make_node("g").gpus(2).taint("nvidia.com/gpu", "present").obj(),
        make_pod("p").ns(namespace).owner(owner, "addon-1").tolerate(**TOL).on("g").obj(),
    )  # fmt: skip
    pod = s.pods[0]
    plan = plan_taint(s, [s.node("g")], GPU_TAINT, False, NOW).details["pitfalls"]
    return {
        "diagnose": any(f.pitfall == "R17.4" for f in inspect(s, NOW).findings),
        "explain": any(n.startswith(NOTE) for n in pod_notes(Engine(s), pod)),
        "plan": any(r["id"] == "toleration-without-gpu-request" for r in plan),  # type: ignore[index,union-attr]
    }


def test_a_kube_system_deployment_is_excepted_by_every_face() -> None:
    """Fails before: diagnose and plan flagged this pod of a kube-system ReplicaSet, explain did not."""
    assert _faces("kube-system", "ReplicaSet") == {"diagnose": False, "explain": False, "plan": False}
    assert not [
        v
        for v in lint_object(_deployment("kube-system"), LintContext())
        if v.rule == "toleration-without-gpu"
    ]


def test_a_tenant_deployment_is_flagged_and_a_daemonset_is_not_by_every_face() -> None:
    assert _faces("ml", "ReplicaSet") == {"diagnose": True, "explain": True, "plan": True}
    assert _faces("monitoring", "DaemonSet") == {"diagnose": False, "explain": False, "plan": False}
    assert [v.rule for v in lint_object(_deployment("ml"), LintContext())] == ["toleration-without-gpu"]
