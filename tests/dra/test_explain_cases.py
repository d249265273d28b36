"""The DRA explainer on three realistic cases, through ``explain_pod`` (what ``kubegpu explain`` prints).

1. A training claim for two 80 GB A100s (a capacity selector, the quantity comparison NVIDIA's demos use)
   on a node of four 40 GB A100s and a node of two 80 GB A100s, one held by another claim.
2. Two MIG devices that must share a parent GPU (``matchAttribute: gpu.nvidia.com/parentUUID``,
   NVIDIA/k8s-dra-driver-gpu quickstart gpu-test4's shape) where each GPU has one.
3. A plain ``nvidia.com/gpu: 4`` pod on 1.36 in a mixed cluster: a DRA node of 2 GPUs whose class serves
   ``nvidia.com/gpu`` (KEP-5004) and a device-plugin node of 2.
Every expected number is counted by hand from the fixtures.
"""

from __future__ import annotations

from typing import Any

from kubegpu.explain.engine import Engine
from kubegpu.explain.explanation import Explanation
from kubegpu.explain.pending import explain_pod
from kubegpu.model.snapshot import build_snapshot
from kubegpu.testing.builders import make_node, make_pod
from tests.dra import objects as o

MEM80 = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0"


def explain(version: str, *objs: dict[str, Any]) -> Explanation:
    snap = build_snapshot([("t", x) for x in objs])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    snap.kube_version = version
    return explain_pod(Engine(snap), snap.pod("default/p"))


def evidence(exp: Explanation) -> dict[str, list[str]]:
    return {n.name: n.evidence for n in exp.nodes}


def test_case_1_capacity_selector_and_a_held_device() -> None:
    other = o.claim(
        "other", o.request("gpu"), status=o.allocated("n2", ("gpu", "gpu-0"), reserved=("uid-x",))
    )
    exp = explain("1.34", *o.gpu_classes(), *o.gpu_node("n1", 4, "NVIDIA A100-SXM4-40GB", "40Gi"),
                  *o.gpu_node("n2", 2), other, o.claim("train", o.request("gpu", count=2, selectors=(MEM80,))),
                  o.pod("p", ("gpu", "train", "")))  # fmt: skip
    ev = evidence(exp)
    # n1: 4 GPUs, the class admits all (type gpu), the selector none (40Gi < 80Gi)
    assert ev["n1"] == [
        "pod claim gpu request gpu wants 2: 4 device(s) in reach; class admits 4; selectors admit 0; "
        "free 0 → the claim's selectors admit none of 4 devices: pod claim gpu selector #0: "
        f"`{MEM80}` is false (memory=40Gi)"
    ]
    # n2: both 80Gi GPUs admitted, gpu-0 held by default/other → 1 free, 1 short
    assert ev["n2"] == [
        "pod claim gpu request gpu wants 2: 2 device(s) in reach; class admits 2; selectors admit 2; "
        "free 1; held: gpu-0 by default/other → 1 matching device(s) are allocated to default/other; "
        "free 1 more or ask for fewer"
    ]
    # the evidence names the claim by the pod's name for it, and the explanation says which claim that is
    assert exp.claims == {"gpu": "default/train"}
    assert exp.claims_line() == "pod claim gpu is ResourceClaim default/train"
    (group,) = exp.groups
    assert group.fix == (
        "Nearest: n2: 1 matching device(s) are allocated to default/other; free 1 more or ask for fewer"
    )


def test_case_2_mig_devices_that_must_share_a_parent() -> None:
    c = o.claim("migs", o.request("a", "mig.nvidia.com"), o.request("b", "mig.nvidia.com"))
    c["spec"]["devices"]["constraints"] = [{"matchAttribute": "gpu.nvidia.com/parentUUID"}]
    node_slice = o.node_slice("n1", [o.mig_device(g, 0, "n1") for g in range(2)])
    exp = explain(
        "1.35", *o.gpu_classes(), make_node("n1").obj(), node_slice, c, o.pod("p", ("m", "migs", ""))
    )
    assert exp.message.startswith("0/1 nodes are available: 1 cannot allocate all claims.")
    # each request alone sees both MIG devices free; together they need 2 with one parentUUID, each has 1
    assert evidence(exp)["n1"][-1] == (
        "pod claim m matchAttribute gpu.nvidia.com/parentUUID over a, b: 2 device(s) must share one "
        "value; free devices by value: GPU-n1-0000: 1, GPU-n1-0001: 1"
    )
    assert "must share one value of gpu.nvidia.com/parentUUID" in exp.groups[0].fix


def test_case_3_plain_gpu_request_on_a_mixed_cluster() -> None:
    exp = explain("1.36", o.device_class("gpu.nvidia.com", "gpu", extended="nvidia.com/gpu"),
                  *o.gpu_node("n1", 2), make_node("n2").gpus(2).obj(), make_pod("p").gpu(4).obj())  # fmt: skip
    assert exp.message.startswith(
        "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 cannot allocate all claims."
    )
    # n1 has no nvidia.com/gpu allocatable → the special claim asks container 0 for 4; 2 devices → 2 short
    assert evidence(exp)["n1"] == [
        "the extended-resource claim (nvidia.com/gpu) request container-0-request-0 wants 4: 2 device(s) in "
        "reach; class "
        "admits 2; selectors admit 2; free 2 → only 2 matching device(s) here, 2 short: ask for fewer or use "
        "a larger node"
    ]
