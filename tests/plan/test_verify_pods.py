"""Generated test pods (R15.4): one per kind of GPU resource the node advertises, valid Kubernetes 1.34 Pods.

Resource names pinned down: whole GPUs ``nvidia.com/gpu``; time-slicing replicas ``nvidia.com/gpu`` (or
``nvidia.com/gpu.shared`` with renameByDefault) on nodes GFD labels ``nvidia.com/gpu.replicas`` > 1; MIG
``nvidia.com/mig-<profile>`` (mixed strategy). Extended resources go in limits (R4.1).
"""

from __future__ import annotations

import pytest

from kubegpu.plan.verify_pods import verify_manifests, verify_step
from kubegpu.testing.builders import make_node


def _limits(m: dict) -> dict:  # type: ignore[type-arg]
    return dict(m["spec"]["containers"][0]["resources"]["limits"])


def test_whole_gpu_node_gets_single_and_multi_gpu_pods() -> None:
    node = make_node("g8").gpus(8).taint("nvidia.com/gpu", "present").parsed()
    pods = verify_manifests(node, "gpu-tests")
    assert [(p["metadata"]["name"], _limits(p)) for p in pods] == [
        ("verify-g8-single-gpu", {"nvidia.com/gpu": "1"}),
        ("verify-g8-multi-gpu", {"nvidia.com/gpu": "8"}),
    ]
    for p in pods:
        assert p["metadata"]["namespace"] == "gpu-tests" and p["spec"]["nodeName"] == "g8"
        assert p["spec"]["tolerations"] == [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
        ]


def test_mixed_mig_and_renamed_sharing_nodes() -> None:
    mig = (make_node("mig").capacity(**{"nvidia.com/gpu": 1, "nvidia.com/mig-1g.18gb": 7, "nvidia.com/mig-3g.71gb": 2})
           .parsed())  # fmt: skip
    assert [(p["metadata"]["name"], _limits(p)) for p in verify_manifests(mig)] == [
        ("verify-mig-single-gpu", {"nvidia.com/gpu": "1"}),
        ("verify-mig-mig-1g-18gb", {"nvidia.com/mig-1g.18gb": "1"}),
        ("verify-mig-mig-3g-71gb", {"nvidia.com/mig-3g.71gb": "1"}),
    ]
    shared = (
        make_node("ts")
        .capacity(**{"nvidia.com/gpu.shared": 16})
        .label("nvidia.com/gpu.replicas", "4")
        .parsed()
    )
    assert [(p["metadata"]["name"], _limits(p)) for p in verify_manifests(shared)] == [
        ("verify-ts-shared", {"nvidia.com/gpu.shared": "1"}),
    ]
    # time-slicing without rename: nvidia.com/gpu are replicas, so no whole-GPU pods
    replicated = make_node("tr").gpus(8).label("nvidia.com/gpu.replicas", "4").parsed()
    assert [p["metadata"]["name"] for p in verify_manifests(replicated)] == ["verify-tr-shared"]


def test_every_manifest_validates_and_the_step_dry_runs_first() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    node = (make_node("n").capacity(**{"nvidia.com/gpu": 2, "nvidia.com/mig-1g.18gb": 7}).taint("maint", "", "NoExecute")
            .parsed())  # fmt: skip
    pods = verify_manifests(node, "default")
    for p in pods:
        kubernetes_validate.validate(p, "1.34.0", strict=True)
    step = verify_step(node, "default", pods)
    assert step.commands[:2] == ("kubectl -n default apply -f verify-n.yaml --dry-run=server",
                                 "kubectl -n default apply -f verify-n.yaml")  # fmt: skip
    assert step.commands[-2:] == ("kubectl -n default delete -f verify-n.yaml --dry-run=server",
                                  "kubectl -n default delete -f verify-n.yaml")  # fmt: skip
