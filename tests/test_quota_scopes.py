"""ResourceQuota scopes (``spec.scopes``, ``spec.scopeSelector``) on GPU pods, against a real kube-apiserver.

``fixtures/accounting/realkube-quota-scopes.txt`` is what kube-apiserver 1.30.14 and 1.37.2 (built from
k8s.io/kubernetes by ``tools/kube/build.py``, run by ``tools/kube/controlplane.py``; both printed the same
lines) answered for the namespaces below: one quota ``gpu`` each, its status set to used 0 as the quota
controller would, then the pods in order (``201 <status.qosClass>`` or ``403 <message>``). The rules it pins:
``podMatchesScopeFunc`` and ``podMatchesSelector`` (pkg/quota/v1/evaluator/core/pods.go) and ``qos.GetPodQOS``
(pkg/apis/core/v1/helper/qos/qos.go: cpu and memory only, so a pod asking only for ``nvidia.com/gpu`` is
BestEffort and a NotBestEffort quota on ``requests.nvidia.com/gpu`` never bounds it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubegpu.admission.admit import admit_pods
from kubegpu.model.parse import parse_pod
from kubegpu.model.snapshot import build_snapshot
from kubegpu.plan.quota_change import plan_quota

RECORDED = Path(__file__).parent / "fixtures" / "accounting" / "realkube-quota-scopes.txt"
GPU = {"limits": {"nvidia.com/gpu": "2"}}
WITH_CPU = {"requests": {"cpu": "100m"}, "limits": {"nvidia.com/gpu": "2"}}
XNS = {"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {
    "labelSelector": {"matchLabels": {"app": "x"}}, "namespaces": ["other"], "topologyKey": "kubernetes.io/hostname"}}]}}}  # fmt: skip
HIGH = {"priorityClassName": "high"}
PC_PODS = [("plain", {}, GPU), ("high", HIGH, GPU)]


def _selector(operator: str, *values: str) -> dict[str, Any]:
    expr: dict[str, Any] = {"scopeName": "PriorityClass", "operator": operator}
    if values:
        expr["values"] = list(values)
    return {"scopeSelector": {"matchExpressions": [expr]}}


# namespace: (the quota's scope fields, spec.hard, the pods created in order: name, spec fields, resources)
CASES: dict[str, tuple[dict[str, Any], dict[str, str], list[tuple[str, dict[str, Any], dict[str, Any]]]]] = {
    "pc-in": (_selector("In", "high"), {"requests.nvidia.com/gpu": "1"}, PC_PODS),
    "pc-notin": (_selector("NotIn", "high"), {"requests.nvidia.com/gpu": "1"}, PC_PODS),
    "pc-dne": (_selector("DoesNotExist"), {"requests.nvidia.com/gpu": "1"}, PC_PODS),
    "pc-exists": ({"scopes": ["PriorityClass"]}, {"requests.nvidia.com/gpu": "1"}, PC_PODS),
    "notbesteffort": (
        {"scopes": ["NotBestEffort"]}, {"requests.nvidia.com/gpu": "1"}, [("gpu-only", {}, GPU), ("with-cpu", {}, WITH_CPU)]
    ),
    "besteffort": ({"scopes": ["BestEffort"]}, {"pods": "1"}, [("first", {}, GPU), ("second", {}, GPU)]),
    "terminating": (
        {"scopes": ["Terminating"]}, {"requests.nvidia.com/gpu": "1"},
        [("no-deadline", {}, GPU), ("deadline", {"activeDeadlineSeconds": 600}, GPU)],
    ),
    "notterminating": (
        {"scopes": ["NotTerminating"]}, {"requests.nvidia.com/gpu": "1"},
        [("no-deadline", {}, GPU), ("deadline", {"activeDeadlineSeconds": 600}, GPU)],
    ),
    "crossns": ({"scopes": ["CrossNamespacePodAffinity"]}, {"requests.nvidia.com/gpu": "1"}, [("plain", {}, GPU), ("affinity", XNS, GPU)]),
}  # fmt: skip


def _recorded() -> dict[tuple[str, str], tuple[int, str]]:
    out = {}
    for line in RECORDED.read_text().splitlines():
        ns, name, rest = line.split(" ", 2)  # (the first line is the PriorityClass's)
        status, _, said = rest.partition(" ")
        if name != "quota" and ns in CASES:
            out[(ns, name)] = (int(status), said)
    return out


def _pod(ns: str, name: str, extra: dict[str, Any], resources: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"schedulerName": "none", **extra,
                     "containers": [{"name": "c", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", "resources": resources}]}}  # fmt: skip


def _snapshot(ns: str) -> Any:
    scope, hard, _ = CASES[ns]
    objects = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpu", "namespace": ns},
         "spec": {"hard": hard, **scope}, "status": {"hard": hard, "used": {k: "0" for k in hard}}},
    ]  # fmt: skip
    snap = build_snapshot([("t", o) for o in objects])
    assert not snap.errors, snap.errors
    return snap


@pytest.mark.parametrize("ns", sorted(CASES))
def test_scoped_quotas_admit_and_refuse_as_the_api_server(ns: str) -> None:
    recorded = _recorded()
    _, _, pods = CASES[ns]
    manifests = [(f"{name}.yaml", _pod(ns, name, extra, res)) for name, extra, res in pods]
    for (name, _, _), adm in zip(pods, admit_pods(_snapshot(ns), manifests), strict=True):
        status, said = recorded[(ns, name)]
        assert adm.admitted == (status == 201), (ns, name, adm.message)
        if status == 201:
            assert adm.pod is not None and adm.pod.best_effort == (said == "BestEffort")
        else:
            assert adm.message == said


def test_the_recording_covers_every_case() -> None:
    assert set(_recorded()) == {(ns, name) for ns, (_, _, pods) in CASES.items() for name, _, _ in pods}


def test_stored_qos_class_is_read_and_pod_level_resources_decide_when_present() -> None:
    """``GetPodQOS`` returns ``status.qosClass`` when set; ``ComputePodQOS`` reads pod-level
    ``spec.resources`` alone when the pod has it (PodLevelResources), else every container."""
    stored = _pod("a", "p", {}, WITH_CPU) | {"status": {"qosClass": "BestEffort"}}
    assert parse_pod(stored).best_effort
    pod_level = _pod("a", "p", {"resources": {"limits": {"cpu": "1"}}}, GPU)
    assert not parse_pod(pod_level).best_effort
    assert (
        parse_pod(_pod("a", "p", {}, {"limits": {"nvidia.com/gpu": "1", "memory": "1Gi"}})).best_effort
        is False
    )


def test_a_pod_with_active_deadline_zero_is_refused_as_the_api_server_does() -> None:
    """ValidatePodSpec: activeDeadlineSeconds must be in [1, MaxInt32] (``InclusiveRangeError``)."""
    from kubegpu.errors import InputError

    with pytest.raises(InputError, match="must be between 1 and 2147483647, inclusive"):
        parse_pod(_pod("a", "p", {"activeDeadlineSeconds": 0}, GPU))


def test_plan_quota_probe_is_a_pod_the_scoped_quota_selects() -> None:
    """Lowering a PriorityClass-scoped quota: the dry-run probe must carry the priority class the quota
    selects, else the API server admits it whatever the limit (the pc-in case above: 'plain' is admitted)."""
    change = plan_quota(_snapshot("pc-in"), "pc-in", "gpu", {"requests.nvidia.com/gpu": 0})
    probe = yaml.safe_load(change.details["manifests"]["gpu-probe.yaml"])
    assert probe["spec"]["priorityClassName"] == "high"
    text = yaml.safe_dump(change.details)
    assert "exceeded quota: gpu" in text
    assert "does not evaluate scoped quotas" not in text


def test_quota_rows_name_the_scopes_and_warn_that_gpu_only_pods_escape_not_best_effort() -> None:
    from kubegpu.admission.quota_report import quota_rows

    [row] = quota_rows(_snapshot("notbesteffort"))
    assert row["scopes"] == "NotBestEffort"
    assert "BestEffort and is neither counted nor limited" in row["note"]
    [row] = quota_rows(_snapshot("pc-in"))
    assert row["scopes"] == "PriorityClass In (high)" and "note" not in row
