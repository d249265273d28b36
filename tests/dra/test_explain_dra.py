"""The DRA explainer (per node, request, device) and the mixed-cluster double-counting finding.

Expected values are counted by hand from the objects built below (NVIDIA-driver-shaped, see
tests/dra/objects.py); the rules are the allocator's (class selectors, then request selectors, then
devices in use), so the explainer's counts must agree with the Filter's verdict.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from kubegpu.explain.dra import double_counting, explain_claims, fix, nearest, split_conjuncts
from kubegpu.model.dra import AllocatedDevice
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.dra_allocator import REFUSED_TAINT
from kubegpu.scheduler.dra_capacity import Features
from kubegpu.testing.builders import make_node, make_pod
from tests.dra import objects as o

SEL = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100 80GB PCIe' && device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0"


def test_split_respects_strings_and_brackets() -> None:
    assert split_conjuncts("a == 'x && y' && (b || c && d) && e") == ["a == 'x && y'", "(b || c && d)", "e"]


def test_per_device_reasons_name_the_clause_and_values() -> None:
    # n1: 2 A100 40GB (selector's first clause false); n2: 2 A100 80GB, gpu-0 held by claim "old";
    # the claim wants 2 → n1 has 0 admitted, n2 has 1 free and is 1 short → nearest is n2.
    old = o.claim("old", o.request("gpu"), status=o.allocated("n2", ("gpu", "gpu-0"), reserved=("x",)))
    want = o.claim("want", o.request("gpu", count=2, selectors=(SEL,)))
    snap = build_snapshot(
        [
            ("t", x)
            for x in (
                *o.gpu_classes(),
                *o.gpu_node("n1", 2, "NVIDIA A100-PCIE-40GB", "40Gi"),
                *o.gpu_node("n2", 2),
                old,
                want,
            )
        ]
    )
    assert not snap.errors
    per = explain_claims([snap.dra.claims["default/want"]], snap.nodes, snap.dra)
    (r1,) = per["n1"]
    assert (r1.in_reach, r1.class_admits, r1.selector_admits) == (2, 2, 0)
    assert r1.rejected["gpu-0"] == (
        "claim default/want selector #0: `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100 80GB PCIe'` "
        "is false (productName='NVIDIA A100-PCIE-40GB')"
    )
    (r2,) = per["n2"]
    assert (r2.selector_admits, r2.free, r2.held, r2.short) == (2, ["gpu-1"], {"gpu-0": "default/old"}, 1)
    assert nearest(per) == "n2"
    assert fix(r2) == "1 matching device(s) are allocated to default/old; free 1 more or ask for fewer"
    assert fix(r1).startswith(
        "the claim's selectors admit none of 2 devices: claim default/want selector #0:"
    )


def test_node_with_device_plugin_and_dra_driver_is_double_counted() -> None:
    # n1 advertises nvidia.com/gpu: 2 and publishes 2 gpu-type devices from gpu.nvidia.com; pod "a" uses
    # the device plugin, pod "b" a claim. n2 is DRA only → no finding.
    n1 = make_node("n1").gpus(2).obj()
    a = make_pod("a").gpu(1).on("n1").obj()
    b = o.pod("b", ("gpu", "c", ""))
    b["spec"]["nodeName"] = "n1"
    objs = [
        *o.gpu_classes(),
        n1,
        o.node_slice("n1", [o.gpu_device(0, "n1"), o.gpu_device(1, "n1")]),
        *o.gpu_node("n2", 2),
        a,
        b,
    ]
    snap = build_snapshot([("t", x) for x in objs])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    (f,) = double_counting(snap)
    assert f.title == "n1 advertises its GPUs twice: 2 through the device plugin and 2 through the DRA driver"
    assert f.objects == ["Node n1", "Pod default/a", "Pod default/b"]
    assert (
        "device plugin (nvidia.com/gpu: 2) is used by default/a; DRA (gpu.nvidia.com: gpu-0, gpu-1) by default/b."
        in f.detail
    )


def test_diagnose_findings_include_double_counting_with_the_extended_resource_path() -> None:
    # n1: device plugin nvidia.com/gpu 2 and NVIDIA's DRA slice of 2 GPUs. Pod x asked plain nvidia.com/gpu
    # but was served by DRA (1.36+): its special claim (annotation resource.kubernetes.io/extended-resource-
    # claim, owner x) holds gpu-0, so x counts on the DRA path; pod a (plain, no such claim) on the plugin's.
    from kubegpu.explain.diagnose import diagnose
    from kubegpu.explain.engine import Engine

    n1 = make_node("n1").gpus(2).obj()
    x = make_pod("x").gpu(1).on("n1").obj()
    a = make_pod("a").gpu(1).on("n1").obj()
    special = o.claim("x-extended-resources-q8z4", o.request("container-0-request-0"),
                      status=o.allocated("n1", ("container-0-request-0", "gpu-0")))  # fmt: skip
    special["metadata"]["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "true"}
    special["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "x", "uid": "u", "controller": True}]
    objs = [
        *o.gpu_classes(),
        n1,
        o.node_slice("n1", [o.gpu_device(0, "n1"), o.gpu_device(1, "n1")]),
        x,
        a,
        special,
    ]
    snap = build_snapshot([("t", y) for y in objs])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    (f,) = [f for f in diagnose(Engine(snap)).findings if "advertises its GPUs twice" in f.title]
    assert f.objects == ["Node n1", "Pod default/a", "Pod default/x"]
    assert (
        "device plugin (nvidia.com/gpu: 2) is used by default/a; DRA (gpu.nvidia.com: gpu-0, gpu-1) by default/x."
        in f.detail
    )
    assert "looks like it has 4 GPUs" in f.detail
    assert f.commands[1:] == [
        "kubectl -n default label node n1 nvidia.com/gpu.deploy.device-plugin=false --overwrite --dry-run=server",
        "kubectl -n default label node n1 nvidia.com/gpu.deploy.device-plugin=false --overwrite",
        "kubectl -n default label node n1 nvidia.com/gpu.deploy.device-plugin-  # rollback",
    ]


def test_a_refusal_keeps_its_kind_and_the_fix_follows_the_kind() -> None:
    # 1.37 (DRADeviceTaints GA): n1's only GPU carries k=v:NoSchedule, the request tolerates nothing →
    # the allocator's check (Allocator.refusal, allocator_incubating.go taintPreventsAllocation) refuses it
    # as a taint; 1 wanted, 0 free → 1 short, and the fix is the taint's, chosen by the kind.
    sl = o.node_slice("n1", [o.gpu_device(0, "n1")])
    sl["spec"]["devices"][0]["taints"] = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    c = o.claim("c", o.request("gpu"))
    snap = build_snapshot([("t", x) for x in (*o.gpu_classes(), make_node("n1").obj(), sl, c)])
    assert not snap.errors
    (r,) = explain_claims([snap.dra.claims["default/c"]], snap.nodes, snap.dra, Features.for_minor(37))["n1"]
    assert r.refused == {"gpu-0": (REFUSED_TAINT, "taint k=v:NoSchedule not tolerated")}
    assert (r.tainted, r.short) == (["gpu-0"], 1)
    assert fix(r) == (
        "1 matching device(s) refused (gpu-0: taint k=v:NoSchedule not tolerated): tolerate the taint in the "
        "request (spec.devices.requests[].exactly.tolerations) or clear it (a driver taints a device it found "
        "unhealthy)"
    )


def test_the_explainer_sees_a_claim_replaced_in_place() -> None:
    # sim/claim_controller.py replaces claims in dra.claims in place (same object, same counts). n1's
    # shared 80Gi GPU (1.36: consumable capacity on): first the claim "held" is unallocated, so a 30Gi
    # request fits (0 + 30 ≤ 80); then "held" is replaced by its allocated form holding a 60Gi share, so
    # the same request is refused (60 + 30 > 80: 20Gi of 80Gi left; capacity_short's wording). A cache
    # keyed on the DraObjects' identity and object counts kept the first answer.
    dev = o.shared_gpu_device(0, "n1")
    want = o.claim("want", o.request("g", capacity={"memory": "30Gi"}))
    objs = (
        *o.gpu_classes(),
        make_node("n1").obj(),
        o.node_slice("n1", [dev]),
        o.claim("held", o.request("g")),
        want,
    )
    snap = build_snapshot([("t", x) for x in objs])
    assert not snap.errors
    dra, f = snap.dra, Features.for_minor(36)
    (r,) = explain_claims([dra.claims["default/want"]], snap.nodes, dra, f)["n1"]
    assert (r.free, r.refused) == (["gpu-0"], {})
    gib = Fraction(1 << 30)
    share = AllocatedDevice(
        "g", "gpu.nvidia.com", "n1", "gpu-0", share_id="s1", consumed=(("gpu.nvidia.com/memory", 60 * gib),)
    )
    dra.claims["default/held"] = replace(dra.claims["default/held"], allocated=(share,))
    (r,) = explain_claims([dra.claims["default/want"]], snap.nodes, dra, f)["n1"]
    assert r.free == []
    assert r.refused["gpu-0"][1] == "capacity memory: needs 30Gi, 20Gi of 80Gi left"


def test_a_claim_naming_a_missing_device_class_is_advised_to_fix_the_class_name() -> None:
    """DynamicResources' PreFilter refuses a request whose DeviceClass does not exist ("request gpu: device
    class h100.example.com does not exist", dynamicresources.go); the group's advice names the class, the
    classes the cluster has, and the two fixes (it had none)."""
    from kubegpu.explain.engine import Engine
    from kubegpu.explain.pending import explain_pod
    from kubegpu.model.snapshot import build_snapshot
    from tests.dra import objects as o

    objs = [
        *o.gpu_classes(),
        *o.gpu_node("n1", 2),
        o.claim("c", o.request("gpu", cls="h100.example.com")),
        o.pod("p", ("gpu", "c", "")),
    ]
    snap = build_snapshot([("t", x) for x in objs])
    pod = snap.pod("default/p")
    assert pod is not None and not snap.errors
    (group,) = explain_pod(Engine(snap), pod).groups
    assert group.reason == "request gpu: device class h100.example.com does not exist"
    assert group.fix == (
        "No DeviceClass h100.example.com exists for request gpu (the cluster has gpu.nvidia.com, "
        "mig.nvidia.com). Fix the claim's (or its ResourceClaimTemplate's) deviceClassName, or install the DRA "
        "driver whose chart creates h100.example.com."
    )
    assert group.commands[0] == "kubectl -n default get deviceclasses"
