"""Pod-level limits (``spec.resources.limits``, PodLevelResources, beta and on from 1.34) in ResourceQuota
usage and LimitRanger's Pod items, against a real kube-apiserver 1.37.2.

Quota: ``resourcehelper.PodLimits`` (component-helpers resource/helpers.go v0.37.2) takes the containers'
aggregate limits, puts each pod-level cpu/memory/hugepages limit in place of the aggregate's
(``applyPodLevelResources``: higher or lower), then adds ``spec.overhead`` to every non-zero limit.
LimitRanger's Pod items read ``podLimits`` (plugin/pkg/admission/limitranger/admission.go v1.37.2) the same
way for cpu and memory. ``fixtures/accounting/realkube-pod-level-limits-1.37.2.txt`` is what the API server
(``tools/kube``) answered; the quota's status was set to used 0 by hand (no controller-manager)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubegpu.admission.admit import admit_pods
from kubegpu.model.snapshot import build_snapshot

RECORDED = Path(__file__).parent / "fixtures" / "accounting" / "realkube-pod-level-limits-1.37.2.txt"
HARD = {"limits.cpu": "1", "limits.memory": "1Gi"}


def _pod(
    ns: str, name: str, limits: dict[str, str], pod_level: dict[str, str], runtime: str = ""
) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "none", "resources": {"limits": pod_level},
                            "containers": [{"name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                                            "resources": {"limits": {"nvidia.com/gpu": "1", **limits}}}]}  # fmt: skip
    if runtime:
        spec["runtimeClassName"] = runtime
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}


PODS = [
    _pod("pl", "pod-level-over", {}, {"cpu": "2", "memory": "2Gi"}),
    _pod("pl", "pod-level-lower", {"cpu": "3", "memory": "3Gi"}, {"cpu": "4", "memory": "4Gi"}),
    _pod("pl", "pod-level-cpu-only", {"memory": "3Gi"}, {"cpu": "2"}),
    _pod("pl", "pod-level-overhead", {}, {"cpu": "2", "memory": "2Gi"}, runtime="kata"),
    _pod("lr", "lr-pod-level", {"cpu": "500m", "memory": "512Mi"}, {"cpu": "2", "memory": "2Gi"}),
]
OBJECTS = [
    {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "kata"}, "handler": "kata",
     "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}}},
    {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "lim", "namespace": "pl"}, "spec": {"hard": HARD},
     "status": {"hard": HARD, "used": {k: "0" for k in HARD}}},
    {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "per-pod", "namespace": "lr"},
     "spec": {"limits": [{"type": "Pod", "max": {"cpu": "1", "memory": "1Gi"}}]}},
]  # fmt: skip


def _recorded() -> dict[str, tuple[int, str]]:
    out = {}
    for line in RECORDED.read_text().splitlines():
        name, status, *said = line.split(" ", 2)
        if name != "limitrange":
            out[name] = (int(status), said[0] if said else "")
    return out


@pytest.mark.parametrize("index", range(len(PODS)))
def test_pod_level_limits_count_as_the_api_server_counts_them(index: int) -> None:
    snap = build_snapshot([("t", o) for o in OBJECTS])
    assert not snap.errors
    pod = PODS[index]
    [adm] = admit_pods(snap, [("p.yaml", pod)])
    status, said = _recorded()[pod["metadata"]["name"]]
    assert adm.admitted == (status == 201)
    assert adm.message == said


def test_the_recording_covers_every_pod() -> None:
    assert set(_recorded()) == {p["metadata"]["name"] for p in PODS}
