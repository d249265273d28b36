"""LimitRanges that hand out or demand GPUs (``explain.findings_limits``), on objects a real kube-apiserver
1.37.2 stored (``fixtures/accounting/limitrange-gpu-stored.yaml``: its header has the API server's refusals of
the same pod in the other two namespaces, which the findings quote). LimitRanger (plugin/pkg/admission/
limitranger/admission.go v1.37.2) gave the pod ``web`` (two containers and an init container, none with a
GPU) 2 nvidia.com/gpu in each, from a Container item that set only ``max``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kubegpu.admission.admit import admit_pods
from kubegpu.explain.findings import Finding, find
from kubegpu.model.snapshot import ClusterSnapshot, build_snapshot

FIXTURE = Path(__file__).parent / "fixtures" / "accounting" / "limitrange-gpu-stored.yaml"


def _snapshot() -> tuple[ClusterSnapshot, list[str]]:
    text = FIXTURE.read_text()
    snap = build_snapshot([("lr.yaml", o) for o in yaml.safe_load(text)["items"]])
    assert not snap.errors
    return snap, [line[2:] for line in text.splitlines() if line.startswith("# ml-")]


def _by_title() -> dict[str, Finding]:
    snap, _ = _snapshot()
    return {f.title: f for f in find(snap) if f.objects[0].startswith("limitrange/")}


def test_a_container_max_becomes_every_containers_gpu_and_the_pod_it_defaulted_is_named() -> None:
    f = _by_title()["LimitRange ml-notebooks/gpu-limits gives every container 2 nvidia.com/gpu by default"]
    assert "pod/ml-notebooks/web" in f.objects
    assert "(its max:" in f.detail
    assert f.commands[1].endswith("--dry-run=server -o yaml")
    assert '"path": "/spec/limits/0/default/nvidia.com~1gpu", "value": "0"' in f.commands[2]
    assert "rollback" in f.commands[3] and '"value": "2"' in f.commands[3]


def test_the_stored_pod_shows_the_defaulting_the_finding_describes() -> None:
    """The evidence itself: each of web's three containers holds 2 GPUs, so the pod asks for 4."""
    snap, _ = _snapshot()
    [web] = [p for p in snap.pods if p.name == "web"]
    assert [c.limits.get("nvidia.com/gpu") for c in (*web.containers, *web.init_containers)] == [
        2000,
        2000,
        2000,
    ]
    assert web.requests["nvidia.com/gpu"] == 4000


def test_pod_max_and_container_min_findings_quote_the_refusals_the_api_server_gave() -> None:
    _, refusals = _snapshot()
    by_title = _by_title()
    pod_max = by_title["LimitRange ml-batch/gpu-limits refuses every pod that sets no nvidia.com/gpu limit"]
    quoted = pod_max.detail.split('"')[1]
    assert any(line.endswith(quoted) for line in refusals if line.startswith("ml-batch"))
    minimum = by_title["LimitRange ml-serve/gpu-limits makes every container set a nvidia.com/gpu limit"]
    assert any(minimum.detail.split('"')[1] in line for line in refusals if line.startswith("ml-serve"))


def test_kubegpus_own_admission_refuses_and_defaults_the_same_pod_alike() -> None:
    """The admission model (``admission.limit_ranger``) agrees with the recorded answers for ``web``."""
    snap, refusals = _snapshot()
    [web] = [o for o in yaml.safe_load(FIXTURE.read_text())["items"] if o["kind"] == "Pod"]
    manifest: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                "spec": {k: v for k, v in web["spec"].items() if k in ("initContainers", "containers")}}  # fmt: skip
    for c in (*manifest["spec"]["initContainers"], *manifest["spec"]["containers"]):
        c["resources"] = {
            k: {r: q for r, q in v.items() if r != "nvidia.com/gpu"}
            for k, v in c.get("resources", {}).items()
        }
        c["resources"] = {k: v for k, v in c["resources"].items() if v}
    results = {
        ns: admit_pods(snap, [("web.yaml", {**manifest, "metadata": {"name": "web", "namespace": ns}})])[0]
        for ns in ("ml-notebooks", "ml-batch", "ml-serve")
    }
    assert results["ml-notebooks"].admitted
    assert (
        results["ml-notebooks"].pod is not None
        and results["ml-notebooks"].pod.requests["nvidia.com/gpu"] == 4000
    )
    for ns in ("ml-batch", "ml-serve"):
        recorded = next(line for line in refusals if line.startswith(ns)).split(" ", 3)[3]
        assert results[ns].message == recorded
