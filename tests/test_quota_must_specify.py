"""The ResourceQuota admission's "must specify" constraint on GPU pods, against a real kube-apiserver.

A quota bounding cpu or memory (``cpu``, ``memory``, ``requests.*``, ``limits.*``: pods.go ``validationSet``)
makes each container and init container name what it bounds (``podEvaluator.Constraints``,
pkg/quota/v1/evaluator/core/pods.go), checked for every matching quota (in name order) before any usage is
compared (``checkRequest``, plugin/pkg/admission/resourcequota/controller.go). From 1.34 a pod with pod-level
``spec.resources`` skips it (``IsPodLevelResourcesSet``); 1.30 has no such field and drops it.
``fixtures/accounting/realkube-quota-must-specify-<release>.txt`` is what kube-apiserver 1.37.2 and 1.30.14
(``tools/kube``) answered, each quota's status set to used 0 by hand (no controller-manager)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubegpu.admission.admit import admit_pods
from kubegpu.model.snapshot import build_snapshot

FIXTURES = Path(__file__).parent / "fixtures" / "accounting"
GPU = {"limits": {"nvidia.com/gpu": "1"}}
FULL = {"limits": {"nvidia.com/gpu": "1", "cpu": "1", "memory": "1Gi"}}


def _c(name: str, res: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", "resources": res}


def _pod(name: str, containers: list[Any], init: list[Any] | None = None, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "none", **extra, "containers": containers}
    if init:
        spec["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


# namespace: (the quotas: name → spec.hard, the quotas' scope fields, the pods created in order)
CASES: dict[str, tuple[dict[str, dict[str, str]], dict[str, Any], list[dict[str, Any]]]] = {
    "compute": ({"a-compute": {"requests.cpu": "8", "limits.memory": "64Gi", "requests.nvidia.com/gpu": "4"}}, {}, [
        _pod("gpu-only", [_c("cuda", GPU)]),
        _pod("two-containers", [_c("cuda", FULL), _c("sidecar", {})]),
        _pod("init", [_c("cuda", FULL)], [_c("setup", {"requests": {"cpu": "100m"}})]),
        _pod("zero-cpu", [_c("cuda", {"requests": {"cpu": "0"}, "limits": {"nvidia.com/gpu": "1", "memory": "1Gi"}})]),
        _pod("ok", [_c("cuda", {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": "1", "memory": "1Gi"}})]),
    ]),
    "bare": ({"a-compute": {"cpu": "8", "memory": "64Gi"}}, {}, [_pod("gpu-only", [_c("cuda", GPU)])]),
    "scoped": ({"a-compute": {"requests.cpu": "8"}}, {"scopes": ["NotBestEffort"]}, [
        _pod("gpu-only", [_c("cuda", GPU)]),
        _pod("mem-only", [_c("cuda", {"limits": {"nvidia.com/gpu": "1", "memory": "1Gi"}})]),
    ]),
    "podlevel": ({"a-compute": {"requests.cpu": "8", "limits.memory": "64Gi"}}, {}, [
        _pod("pod-level", [_c("cuda", GPU)], resources={"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}}),
    ]),
    "twoquotas": ({"a-compute": {"limits.cpu": "8"}, "b-gpu": {"requests.nvidia.com/gpu": "0"}}, {}, [
        _pod("gpu-only", [_c("cuda", GPU)]),
    ]),
}  # fmt: skip


def _recorded(release: str) -> dict[tuple[str, str], tuple[int, str]]:
    out = {}
    for line in (FIXTURES / f"realkube-quota-must-specify-{release}.txt").read_text().splitlines():
        ns, name, rest = line.split(" ", 2)
        if name != "quota":
            status, _, said = rest.partition(" ")
            out[(ns, name)] = (int(status), said)
    return out


@pytest.mark.parametrize(("release", "pod_level"), [("1.37.2", True), ("1.30.14", False)])
@pytest.mark.parametrize("ns", sorted(CASES))
def test_must_specify_as_the_api_server(ns: str, release: str, pod_level: bool) -> None:
    quotas, scope, pods = CASES[ns]
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}]
    for name, hard in quotas.items():
        objects.append({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": ns},
                        "spec": {"hard": hard, **scope}, "status": {"hard": hard, "used": {k: "0" for k in hard}}})  # fmt: skip
    snap = build_snapshot([("t", o) for o in objects])
    assert not snap.errors
    manifests = [
        (f"{p['metadata']['name']}.yaml", {**p, "metadata": {**p["metadata"], "namespace": ns}}) for p in pods
    ]
    recorded = _recorded(release)
    for p, adm in zip(pods, admit_pods(snap, manifests, pod_level_resources=pod_level), strict=True):
        status, said = recorded[(ns, p["metadata"]["name"])]
        assert adm.admitted == (status == 201), (ns, p["metadata"]["name"], adm.message)
        assert adm.message == said


def test_the_recordings_cover_every_case() -> None:
    want = {(ns, p["metadata"]["name"]) for ns, (_, _, pods) in CASES.items() for p in pods}
    assert set(_recorded("1.37.2")) == want == set(_recorded("1.30.14"))
