"""DynamicResources through the scheduling cycle: decisions and messages as kube-scheduler 1.34's.

Texts: pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go (Filter ``cannot allocate
all claims`` / ``resourceclaim not available on the node``, PreFilter ``request %s: device class %s does
not exist``, PostFilter ``no new claims to deallocate`` / ``deallocation of ResourceClaim completed``;
every rejection through statusUnschedulable = UnschedulableAndUnresolvable); resourceclaim.go (``Name``,
``IsForPod``); the structured allocator (staging/src/k8s.io/dynamic-resource-allocation/structured,
allocator_test.go cases named below). Expected values are derived by hand from those rules.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import Framework, PluginSpec
from kubegpu.scheduler.plugins.dynamic_resources import DynamicResources
from kubegpu.scheduler.registry import default_profile, in_tree_registry
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.scheduler.status import Code
from kubegpu.testing.builders import make_node
from tests.dra import objects as o

PREEMPTION_NOT_HELPFUL = (
    "preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
)


def scheduler(*objs: dict[str, Any]) -> tuple[Scheduler, Any]:
    snap = build_snapshot([("t", x) for x in objs])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    # 1.34: the release whose DynamicResources texts these tests pin (the plugin is in its default profile)
    fw = Framework(default_profile(kube_version="1.34"), in_tree_registry(), snap.pdbs, dra=snap.dra)
    return Scheduler(fw, ClusterState(snap.nodes, snap.pods)), snap


def dra_plugin(s: Scheduler) -> DynamicResources:
    return next(p for p in s.framework.plugins if isinstance(p, DynamicResources))


def cluster(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    """Two A100 80GB nodes with 1 GPU (n1) and 2 GPUs (n2), the driver's classes."""
    return [*o.gpu_classes(), *o.gpu_node("n1", 1), *o.gpu_node("n2", 2), *extra]


def test_count_larger_than_any_node_is_cannot_allocate_all_claims_on_each() -> None:
    # 3 GPUs asked, nodes hold 1 and 2: the allocator fails on both → the Filter text on 2 nodes;
    # UnschedulableAndUnresolvable → preemption "not helpful" on both. PostFilter: the pod has claims
    # but none is "unavailable" (that set only holds allocated claims whose node selector failed), so
    # its loop finds nothing → "still not schedulable".
    s, snap = scheduler(*cluster(o.claim("c", o.request("gpu", count=3)), o.pod("p", ("gpu", "c", ""))))
    r = s.schedule_one(snap.pod("default/p"), assume=False)
    assert r.node is None or r.node == ""
    assert r.message == (
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
        + PREEMPTION_NOT_HELPFUL.format(n=2)
    )


def test_count_two_lands_on_the_two_gpu_node_and_reserve_holds_both_devices() -> None:
    s, snap = scheduler(*cluster(o.claim("c", o.request("gpu", count=2)), o.pod("p", ("gpu", "c", ""))))
    r = s.schedule_one(snap.pod("default/p"))
    assert r.node == "n2"
    result, node, _ = dra_plugin(s).assumed["default/c"]
    assert node == "n2" and [d.device for d in result.devices] == ["gpu-0", "gpu-1"]


def test_devices_of_allocated_claims_are_in_use() -> None:
    # n2's gpu-0 and gpu-1 are held by claim "old": a 1-GPU claim fits only n1.
    old = o.claim(
        "old",
        o.request("gpu", count=2),
        status=o.allocated("n2", ("gpu", "gpu-0"), ("gpu", "gpu-1"), reserved=("x",)),
    )
    s, snap = scheduler(*cluster(old, o.claim("c", o.request("gpu")), o.pod("p", ("gpu", "c", ""))))
    assert s.schedule_one(snap.pod("default/p"), assume=False).node == "n1"


def test_cel_selector_on_memory_capacity_rejects_smaller_gpus() -> None:
    # n1: A100 40GB, n2: A100 80GB; the request wants memory >= 80Gi → only n2.
    objs = [
        *o.gpu_classes(),
        *o.gpu_node("n1", 1, "NVIDIA A100-PCIE-40GB", "40Gi"),
        *o.gpu_node("n2", 1),
        o.claim(
            "c",
            o.request(
                "gpu",
                selectors=("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0",),
            ),
        ),
        o.pod("p", ("gpu", "c", "")),
    ]
    s, snap = scheduler(*objs)
    assert s.schedule_one(snap.pod("default/p"), assume=False).node == "n2"


def test_missing_device_class_is_the_prefilter_message() -> None:
    s, snap = scheduler(
        *cluster(o.claim("c", o.request("gpu", cls="h100.example.com")), o.pod("p", ("gpu", "c", "")))
    )
    r = s.schedule_one(snap.pod("default/p"), assume=False)
    assert r.message == (
        "0/2 nodes are available: request gpu: device class h100.example.com does not exist. "
        "no new claims to deallocate, " + PREEMPTION_NOT_HELPFUL.format(n=2)
    )


def test_mig_class_sees_only_mig_devices() -> None:
    # n1 publishes one whole GPU and two 1g.10gb MIG devices (both types in one slice, as issue #719
    # shows): a count-2 mig request fits n1; a count-3 one does not.
    n1 = o.node_slice("n1", [o.gpu_device(0, "n1"), o.mig_device(0, 0, "n1"), o.mig_device(0, 1, "n1")])
    base = [*o.gpu_classes(), o.gpu_node("n1", 0)[0], n1]
    s, snap = scheduler(
        *base, o.claim("c", o.request("mig", cls="mig.nvidia.com", count=2)), o.pod("p", ("mig", "c", ""))
    )
    assert s.schedule_one(snap.pod("default/p"), assume=False).node == "n1"
    s, snap = scheduler(
        *base, o.claim("c", o.request("mig", cls="mig.nvidia.com", count=3)), o.pod("p", ("mig", "c", ""))
    )
    assert "1 cannot allocate all claims" in s.schedule_one(snap.pod("default/p"), assume=False).message


def test_first_available_falls_back_to_the_second_subrequest() -> None:
    # KEP-4816 prioritized list: "two GPUs, else one"; nodes have 1 GPU → the 1-GPU alternative on n1.
    req = {"name": "gpu", "firstAvailable": [
        {"name": "two", "deviceClassName": "gpu.nvidia.com", "count": 2},
        {"name": "one", "deviceClassName": "gpu.nvidia.com", "count": 1},
    ]}  # fmt: skip
    s, snap = scheduler(
        *o.gpu_classes(), *o.gpu_node("n1", 1), o.claim("c", req), o.pod("p", ("gpu", "c", ""))
    )
    assert s.schedule_one(snap.pod("default/p")).node == "n1"
    result, _, _ = dra_plugin(s).assumed["default/c"]
    assert [(d.request, d.device) for d in result.devices] == [("gpu/one", "gpu-0")]


def test_all_devices_plus_another_cannot_fit() -> None:
    # allocator_test.go "all-devices-plus-another": claim0 takes All devices, claim1 wants one more of
    # the same class → nothing is left for claim1 on any node; all-or-nothing over the pod's claims.
    c0 = o.claim("c0", o.request("all", mode="All"))
    c1 = o.claim("c1", o.request("one"))
    s, snap = scheduler(*cluster(c0, c1, o.pod("p", ("a", "c0", ""), ("b", "c1", ""))))
    assert "2 cannot allocate all claims" in s.schedule_one(snap.pod("default/p"), assume=False).message


def test_all_mode_on_an_incomplete_pool_is_an_error_with_upstream_text() -> None:
    # allocator_test.go "all-devices-invalid-pool"-style: resourceSliceCount 2 but one slice published.
    s, snap = scheduler(
        *o.gpu_classes(), o.gpu_node("n1", 0)[0], o.node_slice("n1", [o.gpu_device(0, "n1")], count=2),
        o.claim("c", o.request("all", mode="All")), o.pod("p", ("a", "c", "")),
    )  # fmt: skip
    state_status = _prefilter_then_filter(s, snap, "n1")
    assert state_status.code == Code.ERROR
    assert state_status.texts() == (
        "claim default/c, request all: asks for all devices, but resource pool gpu.nvidia.com/n1 is currently being updated",
    )


def test_only_the_newest_pool_generation_counts() -> None:
    # generation 1 lists gpu-0 and gpu-1, generation 2 only gpu-0 (GatherPools keeps the newest):
    # a 2-GPU claim no longer fits.
    objs = [
        *o.gpu_classes(), o.gpu_node("n1", 0)[0],
        o.node_slice("n1", [o.gpu_device(0, "n1"), o.gpu_device(1, "n1")], generation=1, name="old"),
        o.node_slice("n1", [o.gpu_device(0, "n1")], generation=2, name="new"),
        o.claim("c", o.request("gpu", count=2)), o.pod("p", ("gpu", "c", "")),
    ]  # fmt: skip
    s, snap = scheduler(*objs)
    assert "1 cannot allocate all claims" in s.schedule_one(snap.pod("default/p"), assume=False).message


def test_shared_claim_follows_its_allocation_node() -> None:
    # Claim "team" is allocated on n1 and reserved by pod a: pod b sharing it may only go to n1; with n1
    # cordoned it gets "resourceclaim not available on the node" from n2, and PostFilter declines to
    # deallocate a claim another pod holds ("still not schedulable").
    team = o.claim("team", o.request("gpu"), status=o.allocated("n1", ("gpu", "gpu-0"), reserved=("uid-a",)))
    s, snap = scheduler(*cluster(team, o.pod("b", ("gpu", "team", ""))))
    assert s.schedule_one(snap.pod("default/b"), assume=False).node == "n1"
    s.cluster.set_unschedulable(s.cluster.index["n1"], True)
    r = s.schedule_one(snap.pod("default/b"), assume=False)
    assert "1 resourceclaim not available on the node" in r.message
    assert "still not schedulable, preemption:" in r.message


def test_template_claim_not_created_yet_is_a_pre_enqueue_rejection() -> None:
    # resourceclaim.Name: a template entry with no resourceClaimStatuses entry → ErrClaimNotFound.
    s, snap = scheduler(*cluster(o.pod("p", ("gpu", "", "tmpl"))))
    st = dra_plugin(s).pre_enqueue(snap.pod("default/p"))
    assert st.texts() == ('pod "default/p": ResourceClaim not created yet',)


def test_generated_claim_not_owned_by_the_pod_is_refused() -> None:
    c = o.claim("p-gpu-abc", o.request("gpu"), owner_uid="someone-else")
    s, snap = scheduler(*cluster(c, o.pod("p", ("gpu", "", "tmpl"), statuses={"gpu": "p-gpu-abc"})))
    st = dra_plugin(s).pre_enqueue(snap.pod("default/p"))
    assert st.texts() == (
        "ResourceClaim default/p-gpu-abc was not created for pod default/p (pod is not owner)",
    )
    c = o.claim("p-gpu-abc", o.request("gpu"), owner_uid="uid-p")
    s, snap = scheduler(*cluster(c, o.pod("p", ("gpu", "", "tmpl"), statuses={"gpu": "p-gpu-abc"})))
    assert dra_plugin(s).pre_enqueue(snap.pod("default/p")).is_success
    assert s.schedule_one(snap.pod("default/p"), assume=False).node in ("n1", "n2")


def test_pod_without_claims_gets_no_new_claims_to_deallocate_before_preemption() -> None:
    # 1.34's PostFilter with empty state: the text every 1.34 FailedScheduling event shows, e.g.
    # "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: ..."
    # (the preemption part is the core's own: a request above allocatable is not helped by preemption)
    big = o.pod("big", ("x", "c", ""))
    big["spec"]["resourceClaims"] = []
    big["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "64"}}
    s, snap = scheduler(*cluster(big))
    assert s.schedule_one(snap.pod("default/big"), assume=False).message == (
        "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, "
        + PREEMPTION_NOT_HELPFUL.format(n=2)
    )


def _prefilter_then_filter(s: Scheduler, snap: Any, node: str) -> Any:
    from kubegpu.scheduler.framework import CycleState

    plugin = dra_plugin(s)
    state = CycleState()
    pod = snap.pod("default/p")
    _, st = plugin.pre_filter(state, pod, s.cluster)
    assert st.is_success, st
    return plugin.filter(state, pod, s.cluster.view(s.cluster.index[node]))


def test_network_slices_by_node_selector_and_all_nodes() -> None:
    # allocator_test.go "network-attached-device": a slice with a nodeSelector (label region=r1) serves
    # only matching nodes; an allNodes slice serves every node. n1 has region=r1, n2 has none.
    def net(name: str, extra: dict[str, Any]) -> dict[str, Any]:
        s = o.node_slice("x", [o.gpu_device(0, name)], name=name)
        del s["spec"]["nodeName"]
        s["spec"]["pool"]["name"] = name
        s["spec"].update(extra)
        return s

    sel = {
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "region", "operator": "In", "values": ["r1"]}]}
            ]
        }
    }
    n1 = make_node("n1").label("region", "r1").obj()
    n2 = make_node("n2").obj()
    c = o.claim("c", o.request("gpu"))
    s, snap = scheduler(*o.gpu_classes(), n1, n2, net("regional", sel), c, o.pod("p", ("gpu", "c", "")))
    r = s.schedule_one(snap.pod("default/p"), assume=False)
    assert r.node == "n1"
    s, snap = scheduler(
        *o.gpu_classes(), n2, net("everywhere", {"allNodes": True}), c, o.pod("p", ("gpu", "c", ""))
    )
    assert s.schedule_one(snap.pod("default/p"), assume=False).node == "n2"


def test_pods_without_claims_keep_the_equivalence_class_cache() -> None:
    # the framework caches filter answers per pod class only when every filter plugin signs
    s, snap = scheduler(*cluster(o.claim("c", o.request("gpu")), o.pod("p", ("gpu", "c", ""))))
    plain = o.pod("q")
    plain["spec"]["resourceClaims"] = []
    s2, snap2 = scheduler(*cluster(plain))
    assert s2.framework.signature(snap2.pod("default/q")) is not None
    assert s.framework.signature(snap.pod("default/p")) is None


def test_admin_access_neither_needs_nor_takes_a_free_device() -> None:
    # allocator.go: a request with adminAccess skips the "already allocated" check, and an allocation
    # result with adminAccess is not in ListAllAllocatedDevices. n1's only GPU is held by "old".
    old = o.claim("old", o.request("gpu"), status=o.allocated("n1", ("gpu", "gpu-0"), reserved=("x",)))
    admin_req = o.request("gpu")
    admin_req["exactly"]["adminAccess"] = True
    objs = [
        *o.gpu_classes(),
        *o.gpu_node("n1", 1),
        old,
        o.claim("mon", admin_req),
        o.pod("p", ("gpu", "mon", "")),
    ]
    s, snap = scheduler(*objs)
    assert s.schedule_one(snap.pod("default/p"), assume=False).node == "n1"
    s, snap = scheduler(*objs[:-2], o.claim("c", o.request("gpu")), o.pod("p", ("gpu", "c", "")))
    assert "1 cannot allocate all claims" in s.schedule_one(snap.pod("default/p"), assume=False).message


def test_device_taints_count_only_with_the_feature_gate() -> None:
    # DRADeviceTaints (pkg/features/kube_features.go): alpha, off in 1.34-1.35; beta, on in 1.36; GA in 1.37.
    # An untolerated NoSchedule device taint refuses the device (allocator_incubating.go allocateDevice,
    # taintPreventsAllocation) where the gate is on; the plugin arg deviceTaints turns it on in 1.35.
    sl = o.node_slice("n1", [o.gpu_device(0, "n1")])
    sl["spec"]["devices"][0]["taints"] = [{"key": "nvidia.com/xid", "value": "79", "effect": "NoSchedule"}]
    objs = [
        *o.gpu_classes(),
        make_node("n1").obj(),
        sl,
        o.claim("c", o.request("gpu")),
        o.pod("p", ("gpu", "c", "")),
    ]
    snap = build_snapshot([("t", x) for x in objs])
    pod = snap.pod("default/p")
    assert pod is not None
    for version, gate, expected in (
        ("1.35", None, "n1"),
        ("1.35", True, ""),
        ("1.36", None, ""),
        ("1.37", None, ""),
    ):
        profile = default_profile(kube_version=version)
        if gate is not None:
            specs = tuple(
                PluginSpec(p.name, p.weight, {**p.args, "deviceTaints": gate})
                if p.name == "DynamicResources"
                else p
                for p in profile.plugins
            )
            profile = replace(profile, plugins=specs)
        s = Scheduler(
            Framework(profile, in_tree_registry(), dra=snap.dra), ClusterState(snap.nodes, snap.pods)
        )
        assert (s.schedule_one(pod, assume=False).node or "") == expected, version


def test_more_than_32_devices_per_claim_is_an_error() -> None:
    # allocator.go: "claim %s: number of requested devices %d exceeds the claim limit of %d"
    # (AllocationResultsMaxSize = 32); 20 + 13 = 33 devices in one claim.
    c = o.claim("c", o.request("a", count=20), o.request("b", count=13))
    s, snap = scheduler(*cluster(c), o.pod("p", ("gpu", "c", "")))
    st = _prefilter_then_filter(s, snap, "n1")
    assert (st.code, st.texts()) == (
        Code.ERROR,
        ("claim default/c: number of requested devices 33 exceeds the claim limit of 32",),
    )


def test_a_cycle_that_only_asks_allocates_nothing() -> None:
    # assume=False (explain): the chosen devices are not committed, so asking twice gives the same node
    # and a following real cycle still finds n1's only GPU free.
    s, snap = scheduler(
        *o.gpu_classes(), *o.gpu_node("n1", 1), o.claim("c", o.request("gpu")), o.pod("p", ("gpu", "c", ""))
    )
    pod = snap.pod("default/p")
    assert [s.schedule_one(pod, assume=False).node for _ in range(2)] == ["n1", "n1"]
    assert dra_plugin(s).assumed == {}
    assert s.schedule_one(pod).node == "n1"
    assert list(dra_plugin(s).assumed) == ["default/c"]
