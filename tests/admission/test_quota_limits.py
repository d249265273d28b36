"""``limits.<r>`` quota usage as kube-apiserver's quota evaluator counts it (pkg/quota/v1/evaluator/core/pods.go
v1.37.2 → component-helpers ``PodLimits``): a sidecar's limit adds to the app containers' (KEP-753), and
``spec.overhead`` (here from the RuntimeClass) is added to every non-zero limit. The pods follow the
kubernetes.io "Sidecar Containers" example (myapp + logshipper with ``restartPolicy: Always``) and the
"Pod Overhead" example's RuntimeClass kata-fc, with cpu limits; both messages are what kube-apiserver 1.37.2
answered for these objects (tools/kube/controlplane.py, ResourceQuota status set by hand as the absent
controller-manager would).
"""

from __future__ import annotations

from kubegpu.admission.admit import admit_pods
from kubegpu.model.snapshot import build_snapshot

QUOTA = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "compute", "namespace": "q"},
         "spec": {"hard": {"limits.cpu": "2"}}, "status": {"hard": {"limits.cpu": "2"}, "used": {"limits.cpu": "0"}}}  # fmt: skip
KATA_FC = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "kata-fc"},
           "handler": "kata-fc", "overhead": {"podFixed": {"memory": "120Mi", "cpu": "250m"}}}  # fmt: skip
MYAPP = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "myapp", "namespace": "q"}, "spec": {
    "initContainers": [{"name": "logshipper", "image": "alpine:latest", "restartPolicy": "Always",
                        "resources": {"limits": {"cpu": "1500m"}}}],
    "containers": [{"name": "myapp", "image": "alpine:latest", "resources": {"limits": {"cpu": "1"}}}]}}  # fmt: skip
KATA = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "kata", "namespace": "q"}, "spec": {
    "runtimeClassName": "kata-fc",
    "containers": [{"name": "myapp", "image": "alpine:latest", "resources": {"limits": {"cpu": "1900m"}}}]}}  # fmt: skip


def test_sidecar_limits_add_up_and_overhead_counts_against_limits_quota() -> None:
    snap = build_snapshot([("t", QUOTA), ("t", KATA_FC)])
    assert not snap.errors
    myapp, kata = admit_pods(snap, [("pods.yaml", MYAPP), ("pods.yaml", KATA)])
    assert myapp.message == (
        'pods "myapp" is forbidden: exceeded quota: compute, requested: limits.cpu=2500m, used: limits.cpu=0, '
        "limited: limits.cpu=2"
    )
    assert kata.message == (
        'pods "kata" is forbidden: exceeded quota: compute, requested: limits.cpu=2150m, used: limits.cpu=0, '
        "limited: limits.cpu=2"
    )


def test_finished_pods_still_count_in_count_pods() -> None:
    """pods.go v1.37.2 PodUsageFunc: "count/pods tracks all pods independent of state" while "pods" and
    the compute resources leave a Succeeded/Failed pod (QuotaV1Pod). With count/pods=2, a namespace
    holding one finished Job pod and one running pod has no room for a third."""
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "object-counts", "namespace": "q"},
             "spec": {"hard": {"count/pods": "2", "pods": "2"}}}  # fmt: skip

    def pod(name: str, phase: str) -> dict[str, object]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "q"},
                "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "x"}]}, "status": {"phase": phase}}  # fmt: skip

    snap = build_snapshot([("t", quota), ("t", pod("pi-xk2f9", "Succeeded")), ("t", pod("web-0", "Running"))])
    [new] = admit_pods(
        snap, [("pods.yaml", {k: v for k, v in pod("web-1", "Pending").items() if k != "status"})]
    )
    assert new.message == (
        'pods "web-1" is forbidden: exceeded quota: object-counts, requested: count/pods=1, used: count/pods=2, '
        "limited: count/pods=2"
    )
