"""matchAttribute constraints and extended resources served by DRA (KEP-5004), as kube-scheduler decides.

Sources: the structured allocator's ``matchAttributeConstraint`` and ``allocateDevice``
(staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/allocator_stable.go, 1.34-1.37:
the first device fixes the value, a device without the attribute never fits, values compare by type, a
constraint that excludes one of ``All`` devices is the error ``claim %s, request %s: cannot add device %s
because a claim constraint would not be satisfied``); the scheduler's ``extendeddynamicresources.go`` and
NodeResourcesFit's ``shouldDelegateResourceToDRA`` (1.36, 1.37); the DRAExtendedResource gate in
pkg/features/kube_features.go (alpha 1.34, beta and on 1.36, GA 1.37). The MIG-on-one-GPU claim is the
shape of NVIDIA/k8s-dra-driver-gpu's quickstart ``gpu-test4`` (several MIG requests, ``constraints:
matchAttribute: gpu.nvidia.com/parentUUID``). Every expected value is derived by hand in the comments.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubegpu.errors import InputError
from kubegpu.model.dra import parse_resource_claim
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.dra_extended import ClassResolver, extended_requests
from kubegpu.scheduler.framework import CycleState
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.scheduler.status import Code
from kubegpu.testing.builders import make_node, make_pod
from tests.dra import objects as o
from tests.dra.schedulers import plugin, scheduler

NOT_HELPFUL = "preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."


def mig_node(node: str, per_gpu: list[int]) -> list[dict[str, Any]]:
    """A DRA node whose GPU ``g`` holds ``per_gpu[g]`` 1g.10gb MIG devices (parentUUID GPU-<node>-000g)."""
    devs = [o.mig_device(g, j, node) for g, n in enumerate(per_gpu) for j in range(n)]
    return [make_node(node).obj(), o.node_slice(node, devs)]


def two_migs(constraint: dict[str, Any] | None, mode: str = "") -> dict[str, Any]:
    c = o.claim("c", o.request("a", "mig.nvidia.com", mode=mode), o.request("b", "mig.nvidia.com"))
    if constraint is not None:
        c["spec"]["devices"]["constraints"] = [constraint]
    return c


PARENT = {"matchAttribute": "gpu.nvidia.com/parentUUID"}


def allocated(s: Scheduler, key: str) -> list[tuple[str, str]]:
    result, _, _ = plugin(s).assumed[key]
    return [(d.request, d.device) for d in result.devices]


def test_match_attribute_backtracks_to_the_gpu_holding_both_mig_devices() -> None:
    # gpu-0 has one MIG device, gpu-1 two. Device order: gpu-0-mig-0, gpu-1-mig-0, gpu-1-mig-1.
    # a takes gpu-0-mig-0 (parent GPU-n1-0000); b finds no other device of that parent → backtrack;
    # a takes gpu-1-mig-0, b the next free one of the same parent: gpu-1-mig-1.
    s, snap = scheduler(
        "1.34", *o.gpu_classes(), *mig_node("n1", [1, 2]), two_migs(PARENT), o.pod("p", ("m", "c", ""))
    )
    assert s.schedule_one(snap.pod("default/p")).node == "n1"
    assert allocated(s, "default/c") == [("a", "gpu-1-mig-0"), ("b", "gpu-1-mig-1")]


def test_without_the_constraint_the_first_free_devices_are_taken() -> None:
    # the same claim without constraints: a = gpu-0-mig-0, b = the next in order, gpu-1-mig-0
    s, snap = scheduler(
        "1.34", *o.gpu_classes(), *mig_node("n1", [1, 2]), two_migs(None), o.pod("p", ("m", "c", ""))
    )
    assert s.schedule_one(snap.pod("default/p")).node == "n1"
    assert allocated(s, "default/c") == [("a", "gpu-0-mig-0"), ("b", "gpu-1-mig-0")]


def test_no_gpu_with_two_free_mig_devices_is_cannot_allocate_all_claims() -> None:
    # each GPU has one MIG device: no parent can give both → the Filter text; no pod holds a claim the
    # PostFilter could deallocate → "still not schedulable" (1.34), then preemption is not helpful.
    s, snap = scheduler(
        "1.34", *o.gpu_classes(), *mig_node("n1", [1, 1]), two_migs(PARENT), o.pod("p", ("m", "c", ""))
    )
    assert s.schedule_one(snap.pod("default/p"), assume=False).message == (
        "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, "
        + NOT_HELPFUL.format(n=1)
    )


def test_still_not_schedulable_is_gone_in_1_37() -> None:
    # PR #140222 (1.37): PostFilter returns a bare Unschedulable, so only the preemption text follows
    s, snap = scheduler(
        "1.37", *o.gpu_classes(), *mig_node("n1", [1, 1]), two_migs(PARENT), o.pod("p", ("m", "c", ""))
    )
    assert s.schedule_one(snap.pod("default/p"), assume=False).message == (
        "0/1 nodes are available: 1 cannot allocate all claims. " + NOT_HELPFUL.format(n=1)
    )


def test_a_constraint_naming_one_request_leaves_the_other_free() -> None:
    # requests: ["a"] → only a's devices are compared (a single device: always satisfied), b is free
    s, snap = scheduler(
        "1.34", *o.gpu_classes(), *mig_node("n1", [1, 1]),
        two_migs({**PARENT, "requests": ["a"]}), o.pod("p", ("m", "c", "")),
    )  # fmt: skip
    assert s.schedule_one(snap.pod("default/p")).node == "n1"
    assert allocated(s, "default/c") == [("a", "gpu-0-mig-0"), ("b", "gpu-1-mig-0")]


def test_a_device_without_the_attribute_never_satisfies_the_constraint() -> None:
    # whole GPUs have no parentUUID: two GPUs under that constraint cannot be allocated
    c = o.claim("c", o.request("g", count=2))
    c["spec"]["devices"]["constraints"] = [PARENT]
    s, snap = scheduler("1.34", *o.gpu_classes(), *o.gpu_node("n1", 2), c, o.pod("p", ("g", "c", "")))
    assert "1 cannot allocate all claims" in s.schedule_one(snap.pod("default/p"), assume=False).message


def test_all_mode_breaking_a_constraint_is_upstreams_error() -> None:
    # a asks for All MIG devices (gpu-0-mig-0 then gpu-1-mig-0): the second has another parent → error
    # naming the claim, the request and the device as driver/pool/device (DeviceID.String)
    s, snap = scheduler(
        "1.34", *o.gpu_classes(), *mig_node("n1", [1, 1]), two_migs(PARENT, mode="All"),
        o.pod("p", ("m", "c", "")),
    )  # fmt: skip
    p, pod, state = plugin(s), snap.pod("default/p"), CycleState()
    assert p.pre_filter(state, pod, s.cluster)[1].is_success
    st = p.filter(state, pod, s.cluster.view(s.cluster.index["n1"]))
    assert st.code == Code.ERROR
    assert st.texts() == (
        "claim default/c, request a: cannot add device gpu.nvidia.com/n1/gpu-1-mig-0 because a claim "
        "constraint would not be satisfied",
    )


def test_values_compare_by_type_an_int_is_not_a_bool() -> None:
    # gpu-0 has flag int 1, gpu-1 flag bool true: equal in Python, different attribute types upstream
    node = o.gpu_node("n1", 2)
    node[1]["spec"]["devices"][0]["attributes"]["flag"] = {"int": 1}
    node[1]["spec"]["devices"][1]["attributes"]["flag"] = {"bool": True}
    c = o.claim("c", o.request("g", count=2))
    c["spec"]["devices"]["constraints"] = [{"matchAttribute": "gpu.nvidia.com/flag"}]
    s, snap = scheduler("1.34", *o.gpu_classes(), *node, c, o.pod("p", ("g", "c", "")))
    assert "cannot allocate all claims" in s.schedule_one(snap.pod("default/p"), assume=False).message


@pytest.mark.parametrize(
    ("constraint", "text"),
    [
        (
            {"distinctAttribute": "gpu.nvidia.com/uuid", "matchAttribute": "gpu.nvidia.com/uuid"},
            'exactly one of "matchAttribute" or "distinctAttribute" is required',
        ),
        ({"distinctAttribute": "uuid"}, "must be a fully qualified name (domain/id), got 'uuid'"),
        ({"matchAttribute": "parentUUID"}, "must be a fully qualified name (domain/id), got 'parentUUID'"),
    ],
)
def test_unmodelled_or_invalid_constraints_are_one_clear_error(constraint: dict[str, Any], text: str) -> None:
    c = two_migs(constraint)
    with pytest.raises(InputError) as err:
        parse_resource_claim(c, "claims.yaml")
    assert text in str(err.value) and "claims.yaml" in str(err.value)


# -- extended resources served by DRA -----------------------------------------------------------------


def mixed(*extra: dict[str, Any], created: str = "") -> list[dict[str, Any]]:
    """n1: a DRA node with 2 GPUs, no nvidia.com/gpu; n2: a device-plugin node with 1 nvidia.com/gpu.
    The GPU class serves nvidia.com/gpu (the driver chart's class with extendedResourceName set)."""
    cls = o.device_class("gpu.nvidia.com", "gpu", extended="nvidia.com/gpu")
    if created:
        cls["metadata"]["creationTimestamp"] = created
    return [cls, *o.gpu_node("n1", 2), make_node("n2").gpus(1).obj(), *extra]


def test_plain_gpu_request_lands_on_the_dra_node_through_the_special_claim_in_1_36() -> None:
    # 2 GPUs: n2's plugin has 1 → Insufficient; n1 lacks nvidia.com/gpu, so Fit leaves it to DRA, whose
    # special claim asks container 0 for 2 devices: request container-0-request-0 (nvidia.com/gpu is the
    # container's only request name → index 0) → gpu-0, gpu-1, held as default/p-extended-resources.
    s, snap = scheduler("1.36", *mixed(make_pod("p").gpu(2).obj()))
    assert s.schedule_one(snap.pod("default/p")).node == "n1"
    assert allocated(s, "default/p-extended-resources") == [
        ("container-0-request-0", "gpu-0"),
        ("container-0-request-0", "gpu-1"),
    ]
    # the devices are now in use: a second 2-GPU pod finds none on n1 and too few on n2
    q = make_pod("q").gpu(2).parsed()
    assert s.schedule_one(q, assume=False).message.startswith(
        "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 cannot allocate all claims."
    )


def test_before_1_36_the_gate_is_off_and_dra_nodes_lack_the_resource() -> None:
    # 1.35: DRAExtendedResource alpha, off → plain NodeResourcesFit on both nodes (n1 has 0 of it)
    s, snap = scheduler("1.35", *mixed(make_pod("p").gpu(2).obj()))
    assert s.schedule_one(snap.pod("default/p"), assume=False).message == (
        "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. no new claims to deallocate, "
        + NOT_HELPFUL.format(n=2)
    )


def test_too_many_gpus_for_either_path_names_both_reasons() -> None:
    # 3 GPUs: n2 Insufficient (3 > allocatable 1: unresolvable), n1 cannot allocate (2 devices);
    # reasons sort "1 Insufficient…" before "1 cannot…"; the special claim is in memory, nothing to delete
    # → "still not schedulable" (1.36); both nodes unresolvable → preemption not helpful on 2.
    s, snap = scheduler("1.36", *mixed(make_pod("p").gpu(3).obj()))
    assert s.schedule_one(snap.pod("default/p"), assume=False).message == (
        "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 cannot allocate all claims. "
        "still not schedulable, " + NOT_HELPFUL.format(n=2)
    )


def test_the_implicit_device_class_resource_name_is_served_too() -> None:
    pod = make_pod("p").gpu(1, resource="deviceclass.resource.kubernetes.io/gpu.nvidia.com").obj()
    s, snap = scheduler("1.37", *mixed(pod))
    assert s.schedule_one(snap.pod("default/p")).node == "n1"


def test_a_device_plugin_node_with_enough_keeps_the_pod_off_dra() -> None:
    # 1 GPU: n2's plugin covers it (allocatable > 0: not delegated, no special request on n2); n1 would
    # also fit through DRA → two feasible nodes; the special claim of n2's variant is empty, so if n2 is
    # chosen nothing is allocated. Checked on n2 alone through Filter: success without an allocation.
    s, snap = scheduler("1.36", *mixed(make_pod("p").gpu(1).obj()))
    r = s.schedule_one(snap.pod("default/p"))
    assert r.node in ("n1", "n2")
    held = "default/p-extended-resources" in plugin(s).assumed
    assert held == (r.node == "n1")


def test_the_newer_class_wins_a_shared_extended_resource_name() -> None:
    # extendedresourcecache: the newer creationTimestamp wins; equal times → the lower name
    a = o.device_class("a-gpu", "gpu", extended="nvidia.com/gpu")
    b = o.device_class("b-gpu", "gpu", extended="nvidia.com/gpu")
    a["metadata"]["creationTimestamp"] = "2026-05-01T00:00:00Z"
    b["metadata"]["creationTimestamp"] = "2026-04-01T00:00:00Z"
    snap = build_snapshot([("t", a), ("t", b)])
    got = ClassResolver(snap.dra.classes).get("nvidia.com/gpu")
    assert got is not None and got.name == "a-gpu"
    b["metadata"]["creationTimestamp"] = a["metadata"]["creationTimestamp"]
    snap = build_snapshot([("t", a), ("t", b)])
    got = ClassResolver(snap.dra.classes).get("nvidia.com/gpu")
    assert got is not None and got.name == "a-gpu"  # tie: "a-gpu" < "b-gpu"


def test_init_container_reuses_the_long_lived_containers_devices() -> None:
    # createRequestsAndMappings: init container 0 (plain) wants 3, main container (index 1) wants 2 →
    # main: container-1-request-0 count 2; init reuses those 2 and asks for 1 more: container-0-request-0
    # count 1. Sorted by name: container-0…, container-1….
    raw = make_pod("p").gpu(2).init_container("warm", {"nvidia.com/gpu": "3"}).obj()
    snap = build_snapshot([("t", o.device_class("g", "gpu", extended="nvidia.com/gpu")), ("t", raw)])
    pod = snap.pod("default/p")
    reqs = extended_requests(pod, ["nvidia.com/gpu"], ClassResolver(snap.dra.classes))
    assert [(r.name, r.exactly.count if r.exactly else 0) for r in reqs] == [
        ("container-0-request-0", 1),
        ("container-1-request-0", 2),
    ]


def test_a_special_claim_left_by_a_prior_cycle_is_rejected_then_deleted() -> None:
    # a claim annotated resource.kubernetes.io/extended-resource-claim=true, owned by the pod, with
    # requests: Filter "cannot schedule extended resource claim" on every node, PostFilter deletes it.
    stale = o.claim("p-extended-resources-x7k2q", o.request("container-0-request-0"), owner_uid="uid-p")
    stale["metadata"]["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "true"}
    raw = make_pod("p").gpu(1).obj()
    raw["metadata"]["uid"] = "uid-p"
    s, snap = scheduler("1.36", *mixed(raw, stale))
    assert s.schedule_one(snap.pod("default/p"), assume=False).message == (
        "0/2 nodes are available: 2 cannot schedule extended resource claim. "
        "deletion of ResourceClaim completed, " + NOT_HELPFUL.format(n=2)
    )
