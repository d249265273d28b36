"""DRA cases from public issues (QA round 18): what kubegpu says where it does not reproduce the cluster's
scheduler exactly, and what kubelet's DRA refusals mean. Fixtures cite their issue and say what was filled in.

- dra-class-missing-eks132 (kubernetes-sigs/dra-driver-nvidia-gpu#338) and dra-template-deleted-132
  (kubernetes/kubernetes#129362): Kubernetes 1.32, where DynamicResources runs only with the
  DynamicResourceAllocation gate (beta, off by default: pkg/features/kube_features.go v1.32.13); the API server
  keeps pod.spec.resourceClaims only with its gate on (pkg/api/pod/util.go v1.32.13
  dropDisabledDynamicResourceAllocationFields). kubegpu reproduces the default scheduler; the claims must be
  said to be unchecked, not passed over.
- dra-taintrule-no-selector-137 (kubernetes/kubernetes#141620): kube-scheduler 1.37.0 applies a DeviceTaintRule
  without deviceSelector to every device; v1.37.1 (#141998, CHANGELOG-1.37.md) and dynamic-resource-allocation
  v0.37.2 resourceslice/tracker applyPatches ("No selector matches no devices") match none.
- dra-scheduler-without-dra-132 (google/dranet#30) and dra-claim-reserved-for-gone-pod (Project-HAMi/HAMi-DRA#21):
  kubelet's "is not allowed to use ResourceClaim" is its own reservedFor check before any driver call
  (pkg/kubelet/cm/dra/manager.go v1.34.4 "pod %s (%s) is not allowed to use ResourceClaim %s (%s)", v1.32.13
  "pod %s(%s) is not allowed to use resource claim %s(%s)").
"""

from __future__ import annotations

from kubegpu.explain.engine import Engine
from kubegpu.explain.explanation import Explanation
from kubegpu.explain.pending import explain_pod
from kubegpu.sources import load_files
from tests.realcases.cases import HERE, case


def _explain(name: str, pod: str, minor: str | None = None) -> Explanation:
    snap = load_files(HERE / f"{name}.yaml")
    assert not snap.errors, [e.one_line() for e in snap.errors]
    if minor is not None:
        snap.kube_version = minor
    return explain_pod(Engine(snap), next(p for p in snap.pods if p.key == pod))


def test_claims_on_1_32_are_said_to_be_unchecked_dra_driver_nvidia_gpu_338() -> None:
    exp = _explain("dra-class-missing-eks132", "gpu-test1/gpu-pod")
    lines = [u for u in exp.unverified if "DynamicResourceAllocation feature gate" in u]
    assert lines and "the claims were not checked" in lines[0], exp.unverified
    # with the 1.34 rules the class is missing, in kube-scheduler's words (dynamicresources.go v1.32.13 and
    # v1.34.4: "request %s: device class %s does not exist")
    exp34 = _explain("dra-class-missing-eks132", "gpu-test1/gpu-pod", "1.34")
    assert not exp34.schedulable
    assert "request gpu: device class gpu.nvidia.com does not exist" in exp34.message
    assert not [u for u in exp34.unverified if "DynamicResourceAllocation" in u]
    # the cluster has NVIDIA's compute-domain classes and not gpu.nvidia.com: the driver runs with its GPU part off
    # (#338/#438's values; the chart's resources.gpus.enabled, kubernetes-sigs/dra-driver-nvidia-gpu PR #185)
    fix = next(g.fix for g in exp34.groups if "gpu.nvidia.com does not exist" in g.reason)
    assert "NVIDIA's DRA driver is installed with its GPU part off" in fix
    assert "resources.gpus.enabled=true" in fix


def test_template_deleted_on_1_32_is_not_passed_as_schedulable_silently_kubernetes_129362() -> None:
    data = case("dra-template-deleted-132")
    p = next(x for x in data["pending"] if x["pod"] == "gpu-test2/gpu-deployment-6965899554-k7x2p")
    assert any("the claims were not checked" in u for u in p["unverified"]), p["unverified"]


def test_a_selectorless_device_taint_rule_is_named_on_1_37_kubernetes_141620() -> None:
    exp = _explain("dra-taintrule-no-selector-137", "default/pod0")
    lines = [u for u in exp.unverified if "kubernetes/kubernetes#141620" in u]
    assert lines and "taint-no-selector" in lines[0] and "1.37.0" in lines[0], exp.unverified
    # 1.36 does not apply DeviceTaintRules by default (DRADeviceTaintRules beta, off): nothing to say there
    exp36 = _explain("dra-taintrule-no-selector-137", "default/pod0", "1.36")
    assert not [u for u in exp36.unverified if "#141620" in u]


def test_kubelet_refusing_an_unallocated_claim_points_at_the_scheduler_gate_google_dranet_30() -> None:
    data = case("dra-scheduler-without-dra-132")
    f = next(x for x in data["findings"] if "is not reserved for it" in x["title"])
    assert "pve-interfaces" in f["title"]
    assert "The claim is not allocated, yet the pod is bound" in f["detail"]
    assert "DynamicResourceAllocation feature gate" in f["detail"]
    assert "plugin failed NodePrepareResources" not in f["detail"]  # kubelet refused before any plugin call
    assert "kubectl -n default get resourceclaim pve-interfaces -o yaml" in f["commands"]


def test_kubelet_refusing_a_claim_reserved_for_a_gone_pod_names_it_hami_dra_21() -> None:
    data = case("dra-claim-reserved-for-gone-pod")
    f = next(x for x in data["findings"] if "is not reserved for it" in x["title"])
    assert "3b0f4c2e-81d6-4f55-9a3e-6c1d2e7f8a90" in f["detail"]  # the reservedFor uid no snapshot pod has
    assert "resource claim controller" in f["detail"]
    assert "plugin failed NodePrepareResources" not in f["detail"]


def test_an_empty_string_attribute_is_a_value_google_dranet_30() -> None:
    """dranet publishes ``alias: {string: ""}``; validation.go validateDeviceAttribute (v1.34.4) counts the set
    pointer, so the API server stores it: reading the slice must not fail."""
    snap = load_files(HERE / "dra-scheduler-without-dra-132.yaml")
    assert not snap.errors, [e.one_line() for e in snap.errors]
    dev = snap.dra.slices[0].devices[0]
    assert dev.attributes["dra.net/alias"] == ""


def test_nvidia_documented_lower_ascii_selector_allocates_gpu_test6() -> None:
    """demo/specs/quickstart/v1/gpu-test6.yaml: productName.lowerAscii().matches('^.*a100.*$') && index in
    {0,2,4,6}: cel-go's strings extension is in kube-scheduler's CEL environment (apiserver
    pkg/cel/environment/base.go v0.37.2: ext.Strings(ext.StringsVersion(2))); the pod fits, on an even GPU."""
    exp = _explain("dra-cel-lowerascii-gpu-test6", "gpu-test6/pod-6c9f8d7b5-x8k2v")
    assert exp.schedulable, exp.message
    assert "CEL runtime error" not in exp.message
    # evaluated, not passed over as something kubegpu's CEL cannot evaluate (which would also let the pod fit)
    assert not [u for u in exp.unverified if "cannot evaluate" in u], exp.unverified


def test_a_fit_resting_on_what_kubegpu_does_not_model_is_not_schedulable_now_kubernetes_141620() -> None:
    """The cluster refused the pod ("cannot allocate all claims"); kubegpu's model of 1.37.1+ fits it, but
    names the 1.37.0 DeviceTaintRule bug it cannot rule out. The headline must not say "schedulable now" /
    "nothing is blocked": the doubt is the cause and the first step, with the cluster's own message."""
    from kubegpu.explain.summary import FITS_UNVERIFIED, SCHEDULABLE_NOW
    from tests.summaries import summary_of

    snap = load_files(HERE / "dra-taintrule-no-selector-137.yaml")
    s = summary_of(snap)
    assert dict(s.causes) == {FITS_UNVERIFIED: 1}
    assert SCHEDULABLE_NOW not in dict(s.causes)
    assert "kubernetes/kubernetes#141620" in s.first_step and s.first_step != "nothing is blocked"
    assert (
        "The cluster's last attempt said: 0/2 nodes are available: 1 cannot allocate all claims"
        in s.first_step
    )


def test_a_doubt_about_ranking_only_leaves_a_fit_schedulable_now() -> None:
    """The default spread's line (no Service objects in the snapshot) may change only where a pod that fits
    lands when every default constraint is ScheduleAnyway (kube-scheduler's system defaults,
    pkg/scheduler/framework/plugins/podtopologyspread/plugin.go systemDefaultConstraints v1.37.2): such a
    pod stays "schedulable now"; a DoNotSchedule default would make it a doubt about the fit."""
    from kubegpu.explain.summary import SCHEDULABLE_NOW
    from kubegpu.model.snapshot import build_snapshot
    from kubegpu.testing.builders import make_node, make_pod
    from tests.summaries import summary_of

    pod = make_pod("p").gpu(1).owner("ReplicaSet", "web-1").obj()  # (owned: its spread selector is unknown)
    snap = build_snapshot([("t.yaml", o) for o in [make_node("n1").gpus(1).obj(), pod]])
    exp = explain_pod(Engine(snap), snap.pods[0])
    assert exp.schedulable and exp.unverified and exp.ranking_only == len(exp.unverified)
    assert dict(summary_of(snap).causes) == {SCHEDULABLE_NOW: 1}
