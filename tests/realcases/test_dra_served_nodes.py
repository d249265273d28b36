"""Nodes whose GPUs reach pods through DRA, not a device plugin: the GPU Operator deployed with the device
plugin off (``nvidia.com/gpu.deploy.device-plugin=false``) and NVIDIA's DRA driver publishing the GPUs in
ResourceSlices (NVIDIA/k8s-dra-driver-gpu cmd/gpu-kubelet-plugin). No ``nvidia.com/gpu`` in such a node's
status.capacity is the design: no "advertises no GPU" finding; a pod asking ``nvidia.com/gpu`` served by a
DeviceClass's ``extendedResourceName`` (KEP-5004) is not "waiting for a resource no node advertises"; and a
pod that tolerates the GPU taint and gets its GPU from a claim is not "requesting no GPU".

Fixtures: dra-extres-gh200.yaml (NVIDIA/k8s-dra-driver-gpu demo/specs/extended-resources, Helm DeviceClasses
verbatim) and dra-shared-allnodes-gke.yaml (kubernetes/kubernetes#139016's manifest, GKE L4 GPU slices);
their headers say what was filled in.
"""

from __future__ import annotations

from kubegpu.explain.diagnose import diagnose
from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.explain.summary import pod_ask, summarize
from kubegpu.sources import load_files
from tests.realcases.cases import HERE, case

DEVICE_PLUGIN_FINDINGS = (
    "GPU node advertises no GPU resource",
    "pod tolerates the GPU taint but requests no GPU",
)


def test_extended_resources_served_by_dra_raise_no_device_plugin_finding() -> None:
    data = case("dra-extres-gh200")
    titles = [f["title"] for f in data["findings"]]
    assert not [t for t in titles if t in DEVICE_PLUGIN_FINDINGS or "which no node advertises" in t], titles
    # the pods are still explained, through the DeviceClass (1.36: DRAExtendedResource on)
    assert sorted(p["pod"] for p in data["pending"]) == [
        "extended-resource-gpu-full/gpu-2x-pod",
        "extended-resource-gpu-full/gpu-full-pod",
        "extended-resource-mig-1g12gb/mig-1g12gb-pod",
    ]


def test_claim_pods_tolerating_the_gpu_taint_are_gpu_pods_kubernetes_139016() -> None:
    data = case("dra-shared-allnodes-gke")
    titles = [f["title"] for f in data["findings"]]
    assert not [t for t in titles if t in DEVICE_PLUGIN_FINDINGS], titles
    for p in data["pending"]:
        assert not any("requests no GPU" in n for n in p["notes"]), p["notes"]


def test_the_grouped_view_words_a_toleration_as_one() -> None:
    """A group's phrase puts the nodes a pod selects after "on" and its toleration apart: "2 nvidia.com/gpu,
    tolerating the GPU taint", not "… on tolerates the GPU taint"."""
    snap = load_files(HERE / "dra-extres-gh200.yaml")
    report = diagnose(Engine(snap))
    summary = summarize(report, {p.key: pod_ask(p, snap.dra) for p in snap.pods})
    phrases = [g.shape for g in summary.groups]
    assert "2 nvidia.com/gpu, tolerating the GPU taint" in phrases, phrases
    assert not [s for s in phrases if " on tolerates" in s]


def test_mixed_allocated_and_new_claims_are_unverified_on_1_35_and_1_36_kubernetes_139016() -> None:
    """kubernetes/kubernetes#139016: pod1 shares the allocated multi-node claim "shared" and gets a new
    per-node GPU claim; kube-scheduler 1.35 and 1.36 before the cherry-picks (#139362, #139363) fail it in
    Score; 1.34 has no DynamicResources scoring and 1.37 has the fix (#139017): nothing to say there."""
    for minor, said in (("1.34", False), ("1.35", True), ("1.36", True), ("1.37", False)):
        snap = load_files(HERE / "dra-shared-allnodes-gke.yaml")
        snap.kube_version = minor
        exp = explain_pod(Engine(snap), next(p for p in snap.pods if p.name == "pod1"))
        lines = [u for u in exp.unverified if "kubernetes#139016" in u]
        assert bool(lines) is said, (minor, exp.unverified)
        if said:
            assert "allocated claim(s) (default/shared)" in lines[0]
