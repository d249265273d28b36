"""``kubegpu diagnose`` and Pending pods that get their GPUs only through DRA claims (no ``nvidia.com/*``
request): they are GPU pods to explain, not "other pending pods that request no GPU", and two pods whose
specs differ only in the claims they name are evaluated each on its own (the claims live beside the pod
model, so the pod equivalence class cannot see them).

Expected values by hand: n1 publishes 1 GPU, n2 publishes 2 (``tests.dra.objects.gpu_node``); claim
``small`` asks 1 GPU (fits either node), claim ``big`` asks 3 (fits none): kube-scheduler's
DynamicResources Filter says ``cannot allocate all claims`` on each node (the real scheduler's text is
pinned in tests/realkube/golden/1.34.5.json, case dra-gpu-count-too-many).
"""

from __future__ import annotations

from typing import Any

import pytest

from kubegpu.explain import diagnose as diagnose_module
from kubegpu.explain.diagnose import diagnose, explain_many
from kubegpu.explain.engine import Engine
from kubegpu.explain.gpu_pod import is_gpu_pod
from kubegpu.explain.pending import explain_pod
from kubegpu.model.snapshot import ClusterSnapshot, build_snapshot
from kubegpu.testing.builders import make_node, make_pod
from tests.dra import objects as o


def _snapshot() -> object:
    objs = [
        *o.gpu_classes(),
        *o.gpu_node("n1", 1),
        *o.gpu_node("n2", 2),
        o.claim("small", o.request("gpu", count=1)),
        o.claim("big", o.request("gpu", count=3)),
        o.pod("a", ("gpu", "small", "")),
        o.pod("b", ("gpu", "big", "")),
    ]
    snap = build_snapshot([("t.yaml", x) for x in objs])
    assert not snap.errors
    snap.kube_version = "1.34"
    return snap


def test_claim_only_pending_pods_are_explained_as_gpu_pods() -> None:
    d = diagnose(Engine(_snapshot()))  # type: ignore[arg-type]
    assert d.other_pending == 0
    assert sorted(e.pod for e in d.pending) == ["default/a", "default/b"]


def test_pods_naming_different_claims_are_not_one_equivalence_class() -> None:
    d = diagnose(Engine(_snapshot()))  # type: ignore[arg-type]
    by_pod = {e.pod: e for e in d.pending}
    assert by_pod["default/a"].schedulable is True
    assert by_pod["default/b"].schedulable is False
    assert "cannot allocate all claims" in by_pod["default/b"].message


# kubernetes-sigs/dranet README ("DeviceClass that selects all the network interfaces"): the NIC driver's
# class names its own driver, ``device.driver == "dra.net"``
DRANET_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "dranet"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "dra.net"'}}]},
}


def _nic_snapshot() -> object:
    objs = [
        *o.gpu_classes(),
        DRANET_CLASS,
        *o.gpu_node("n1", 1),
        o.claim("nic", o.request("eth", cls="dranet")),
        o.claim("gpu1", o.request("gpu", count=1)),
        o.pod("net-only", ("eth", "nic", "")),
        o.pod("both", ("eth", "nic", ""), ("gpu", "gpu1", "")),
        o.pod("missing-claim", ("gpu", "absent", "")),
    ]
    snap = build_snapshot([("t.yaml", x) for x in objs])
    assert not snap.errors
    snap.kube_version = "1.34"
    return snap


def test_a_nic_claim_alone_is_not_a_gpu_pod() -> None:
    """net-only names only the dranet claim (class selects driver dra.net): not a GPU pod; "both" also
    names a gpu.nvidia.com claim; "missing-claim" names a claim the snapshot lacks, which cannot be read
    and so is explained rather than hidden. Expected: 2 explained, 1 other."""
    snap = _nic_snapshot()
    d = diagnose(Engine(snap))  # type: ignore[arg-type]
    assert sorted(e.pod for e in d.pending) == ["default/both", "default/missing-claim"]
    assert d.other_pending == 1
    dra = snap.dra  # type: ignore[attr-defined]
    pods = {p.name: p for p in snap.pods}  # type: ignore[attr-defined]
    assert not is_gpu_pod(pods["net-only"], dra)
    assert is_gpu_pod(pods["both"], dra)


@pytest.mark.parametrize("driver", ["gpu.amd.com", "gpu.intel.com", "gpu.example.com"])
def test_a_claim_for_another_vendors_gpu_driver_is_a_gpu_pod(driver: str) -> None:
    """AMD's DRA driver (ROCm/k8s-gpu-dra-driver, DeviceClass selector ``device.driver == 'gpu.amd.com'``),
    Intel's (intel-resource-drivers-for-kubernetes: gpu.intel.com) and the DRA example driver's
    (kubernetes-sigs/dra-example-driver: gpu.example.com) serve GPUs: a Pending pod whose claim asks their
    class is explained, not counted among the pods that request no GPU."""
    cls = {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "vendor-gpu"},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{driver}'"}}]},
    }  # fmt: skip
    objs = [
        cls,
        *o.gpu_node("n1", 1),
        o.claim("c", o.request("gpu", cls="vendor-gpu")),
        o.pod("p", ("gpu", "c", "")),
    ]
    snap = build_snapshot([("t.yaml", x) for x in objs])
    assert not snap.errors
    assert is_gpu_pod(next(p for p in snap.pods if p.name == "p"), snap.dra)
    assert [e.pod for e in diagnose(Engine(snap)).pending] == ["default/p"]


def test_an_allocated_claim_counts_by_the_driver_of_its_results() -> None:
    """An allocated claim's results name the driver (tests.dra.objects.allocated writes gpu.nvidia.com),
    whatever its class says: the class here is the NIC one, the result is a GPU."""
    objs = [
        DRANET_CLASS,
        *o.gpu_node("n1", 1),
        o.claim("c", o.request("gpu", cls="dranet"), status=o.allocated("n1", ("gpu", "gpu-0"))),
        o.pod("p", ("gpu", "c", "")),
    ]
    snap = build_snapshot([("t.yaml", x) for x in objs])
    assert not snap.errors
    assert is_gpu_pod(next(p for p in snap.pods if p.name == "p"), snap.dra)


def _template_pods(*pods: tuple[str, int, str]) -> ClusterSnapshot:
    """n-80 (2 × 80Gi) and n-40 (4 × 40Gi, off the selector); per (pod, GPUs, owner uid of its generated
    claim) a pod whose template made claim ``<pod>-gpu-x`` asking that many 80Gi GPUs."""
    objs: list[dict[str, Any]] = [
        *o.gpu_classes(),
        *o.gpu_node("n-80", 2),
        *o.gpu_node("n-40", 4, "NVIDIA A100-PCIE-40GB", "40Gi"),
    ]
    for name, count, owner in pods:
        objs += o.generated(
            name, o.request("gpu", count=count, selectors=(o.SELECTOR_80GI,)), owner_uid=owner
        )
    snap = build_snapshot([("t.yaml", x) for x in objs])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    return snap


def _alone_and_shared(
    monkeypatch: pytest.MonkeyPatch, snap: ClusterSnapshot
) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
    """Each Pending pod explained alone; then ``explain_many`` of them all: the pods it evaluated (the rest
    took a shared evaluation) and what it gave each."""
    engine = Engine(snap)
    alone = {p.key: explain_pod(engine, p).to_dict() for p in snap.pending_pods()}
    calls: list[str] = []
    real = diagnose_module.explain_pod
    monkeypatch.setattr(diagnose_module, "explain_pod", lambda e, p: calls.append(p.key) or real(e, p))
    got = {e.pod: e.to_dict() for e in explain_many(engine, list(snap.pending_pods()))}
    return alone, calls, got


def test_pods_whose_generated_claims_ask_alike_share_one_evaluation_that_fits_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """a, b, c: 4 GPUs each from one template (no node has 4 of 80Gi); d: 1 GPU (fits n-80); e: 4, but
    its claim is owned by another pod (upstream refuses it naming the claim: its own evaluation). a, b, c
    are one class: explained once, and each one's explanation equals explaining it alone, texts included
    (the evidence names the claim as the pod does, ``pod claim gpu``, not ``a-gpu-x``)."""
    snap = _template_pods(("a", 4, "uid-a"), ("b", 4, "uid-b"), ("c", 4, "uid-c"), ("d", 1, "uid-d"),
                          ("e", 4, "uid-somebody-else"))  # fmt: skip
    alone, calls, got = _alone_and_shared(monkeypatch, snap)
    assert calls == ["default/a", "default/d", "default/e"]
    assert got == alone
    assert alone["default/b"]["nodes"][0]["evidence"][0].startswith("pod claim gpu request gpu wants 4: ")
    # upstream's owner check names the claim and the pod (dynamicresources.go ``foreachPodResourceClaim`` via
    # k8s.io/dynamic-resource-allocation/resourceclaim ``IsForPod``: "... was not created for pod ... (pod
    # is not owner)")
    assert (
        "ResourceClaim default/e-gpu-x was not created for pod default/e (pod is not owner)"
        in (alone["default/e"]["message"])
    )


def test_a_class_whose_evaluation_names_its_own_claim_is_not_shared() -> None:
    """A selector that fails at run time: upstream's allocator error quotes the claim ("claim
    default/a-gpu-x: selector #0: CEL runtime error"), so a and b, alike otherwise, are evaluated each on
    its own and each message names its own claim."""
    objs: list[dict[str, Any]] = [*o.gpu_classes(), *o.gpu_node("n1", 2)]
    broken = "device.attributes['gpu.nvidia.com'].noSuchAttribute == 'x'"
    for name in ("a", "b"):
        objs += o.generated(name, o.request("gpu", selectors=(broken,)))
    snap = build_snapshot([("t.yaml", x) for x in objs])
    assert not snap.errors
    got = {e.pod: e.message for e in explain_many(Engine(snap), list(snap.pending_pods()))}
    # the allocator's CEL error, as k8s.io/dynamic-resource-allocation structured ``allocator.go``
    # (``isSelectable``) wraps it: "claim <key>: selector #<i>: CEL runtime error: ..."
    for name in ("a", "b"):
        assert f"claim default/{name}-gpu-x: selector #0: CEL runtime error" in got[f"default/{name}"], got


def _explained_alike(snap: ClusterSnapshot) -> dict[str, Any]:
    """``explain_many`` gives each pod what explaining it alone gives (returned, per pod)."""
    engine = Engine(snap)
    pods = list(snap.pending_pods())
    alone = {p.key: explain_pod(engine, p).to_dict() for p in pods}
    assert {e.pod: e.to_dict() for e in explain_many(engine, pods)} == alone
    return alone


def test_a_class_whose_unverified_lines_name_its_claim_is_not_shared() -> None:
    """1.34 does not model device tolerations (DRADeviceTaints is off there): the unverified line names
    the claim ("claim default/a-gpu-x sets device tolerations …"), so b must not read a's claim there."""
    objs: list[dict[str, Any]] = [*o.gpu_classes(), *o.gpu_node("n1", 1)]
    tolerate = [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
    for name in ("a", "b"):
        objs += o.generated(name, o.request("gpu", count=4, tolerations=tolerate))
    snap = build_snapshot([("t.yaml", x) for x in objs])
    assert not snap.errors
    snap.kube_version = "1.34"
    alone = _explained_alike(snap)
    for name in ("a", "b"):  # (each pod's own claim named: what must not be shared)
        assert alone[f"default/{name}"]["unverified"][0].startswith(
            f"claim default/{name}-gpu-x sets device tolerations"
        )


@pytest.mark.parametrize("with_pod_claims", [False, True])
def test_a_pod_owning_a_special_extended_resource_claim_is_evaluated_alone(with_pod_claims: bool) -> None:
    """KEP-5004 (1.36): a class serves nvidia.com/gpu; p owns a special claim left with requests by an
    earlier cycle (upstream then refuses every DRA node: "cannot schedule extended resource claim"), q
    owns none. Both ask nvidia.com/gpu: 1 and are otherwise alike; the special claim is outside the keys,
    so p must not take q's verdict (with or without template claims of their own)."""
    cls = o.device_class("gpu.nvidia.com", "gpu", extended="nvidia.com/gpu")
    stale = o.claim("p-extended-resources-x7k2q", o.request("container-0-request-0"), owner_uid="uid-p")
    stale["metadata"]["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "true"}
    objs: list[dict[str, Any]] = [cls, *o.gpu_node("n1", 2), make_node("n2").gpus(1).obj(), stale]
    for name in ("q", "p"):
        if with_pod_claims:
            made, pod = o.generated(name, o.request("gpu"))
            objs.append(made)
            pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
            pod["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
        else:
            pod = make_pod(name).gpu(1).obj()
            pod["metadata"]["uid"] = f"uid-{name}"
        objs.append(pod)
    snap = build_snapshot([("t.yaml", x) for x in objs])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    snap.kube_version = "1.36"
    alone = _explained_alike(snap)
    # the two verdicts differ: q fits, p meets upstream's stale-claim refusal (DynamicResources Filter,
    # KEP-5004, pkg/scheduler/framework/plugins/dynamicresources: "cannot schedule extended resource claim")
    assert alone["default/q"]["schedulable"] and not alone["default/p"]["schedulable"]
    assert "cannot schedule extended resource claim" in alone["default/p"]["message"]


def test_pods_each_naming_its_own_claim_of_one_spec_share_one_evaluation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """a, b, c each name their own ResourceClaim (``resourceClaimName``), all three asking 1 GPU of 80Gi (fits
    n2 alone); d and e name ones asking 3 (no node has 3), and f's template made it one of that spec. The
    claims' names are not what the evaluation reads, nor whether a template made the claim: a, b, c are one
    class, d, e and f another, each explained once, and each explanation equals explaining the pod alone
    (300 such pods on 2,000 nodes were 300 evaluations: 28 s and 3.3 GB). The refused pods' evidence names
    the claim by the pod's own name for it (``pod claim gpu``), and each pod's ``claims`` says which
    ResourceClaim that is: its own."""
    objs: list[dict[str, Any]] = [
        *o.gpu_classes(),
        *o.gpu_node("n1", 2, "NVIDIA A100-PCIE-40GB", "40Gi"),
        *o.gpu_node("n2", 2),  # 80 GB: the only node the selector admits
    ]
    for name, count in (("a", 1), ("b", 1), ("c", 1), ("d", 3), ("e", 3)):
        objs.append(o.claim(f"{name}-claim", o.request("gpu", count=count, selectors=(o.SELECTOR_80GI,))))
        objs.append(o.pod(name, ("gpu", f"{name}-claim", "")))
    objs += o.generated("f", o.request("gpu", count=3, selectors=(o.SELECTOR_80GI,)))
    snap = build_snapshot([("t.yaml", x) for x in objs])
    assert not snap.errors
    snap.kube_version = "1.34"
    alone, calls, got = _alone_and_shared(monkeypatch, snap)
    assert calls == ["default/a", "default/d"]
    assert got == alone
    assert alone["default/b"]["schedulable"] is True
    assert alone["default/e"]["message"].startswith("0/2 nodes are available: 2 cannot allocate all claims.")
    assert alone["default/e"]["nodes"][0]["evidence"][0].startswith("pod claim gpu request gpu wants 3")
    assert got["default/e"]["claims"] == {"gpu": "default/e-claim"}
    assert got["default/d"]["claims"] == {"gpu": "default/d-claim"}
    assert got["default/f"]["claims"] == {"gpu": "default/f-gpu-x"}


def test_named_claims_whose_evaluation_names_them_are_not_shared() -> None:
    """The allocator's CEL runtime error quotes the claim ("claim default/a-claim: selector #0: …"): a and b,
    each naming its own claim of one spec, are evaluated each on its own, each message naming its claim."""
    objs: list[dict[str, Any]] = [*o.gpu_classes(), *o.gpu_node("n1", 2)]
    broken = "device.attributes['gpu.nvidia.com'].noSuchAttribute == 'x'"
    for name in ("a", "b"):
        objs.append(o.claim(f"{name}-claim", o.request("gpu", selectors=(broken,))))
        objs.append(o.pod(name, ("gpu", f"{name}-claim", "")))
    snap = build_snapshot([("t.yaml", x) for x in objs])
    assert not snap.errors
    got = {e.pod: e.message for e in explain_many(Engine(snap), list(snap.pending_pods()))}
    for name in ("a", "b"):
        assert f"claim default/{name}-claim: selector #0: CEL runtime error" in got[f"default/{name}"], got
