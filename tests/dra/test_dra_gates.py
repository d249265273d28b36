"""DRA features behind feature gates, per minor: device taints and DeviceTaintRules (KEP-5055), partitionable
devices' shared counters (KEP-4815), consumable capacity and ``distinctAttribute`` (KEP-5075).

Sources: each gate's default per tag in kubernetes pkg/features/kube_features.go (v1.34.4, v1.35.4,
v1.36.3, v1.37.2); the allocator in k8s.io/dynamic-resource-allocation structured/internal/incubating
(allocator_incubating.go ``allocateDevice``, ``checkAvailableCounters``; consumable_capacity.go;
constraint.go ``distinctAttributeConstraint``); GatherAllocatedState (dra_manager.go) for shares.
Fixtures: NVIDIA DRA driver shapes (``tests.dra.objects``: partitions.go counter sets, consumable_shares.go
memory policy). Every expected value is derived by hand in the comment beside it.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from kubegpu.errors import InputError
from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.model.dra import parse_resource_slice
from kubegpu.model.dra_capacity import CapacityPolicy
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.dra_capacity import consumed, violates
from kubegpu.scheduler.framework import CycleState
from kubegpu.scheduler.status import Code
from kubegpu.scheduler.versions import dra_gate
from kubegpu.testing.builders import make_node
from tests.dra import objects as o
from tests.dra.schedulers import outcome, plugin, scheduler

GI = 1 << 30
MI = 1 << 20


def test_gate_defaults_per_minor() -> None:
    # kube_features.go: DRADeviceTaints alpha 1.33 (off), beta 1.36 (on), GA 1.37; DRADeviceTaintRules alpha
    # 1.35, beta but off 1.36, GA 1.37; DRAConsumableCapacity alpha 1.34, beta 1.36; DRAPartitionableDevices
    # alpha 1.33, beta 1.36; DRAPrioritizedList beta 1.34, GA 1.36; DRAAdminAccess beta 1.34, GA 1.36
    expected = {
        "DRADeviceTaints": (False, False, True, True),
        "DRADeviceTaintRules": (False, False, False, True),
        "DRAConsumableCapacity": (False, False, True, True),
        "DRAPartitionableDevices": (False, False, True, True),
        "DRAPrioritizedList": (True, True, True, True),
        "DRAAdminAccess": (True, True, True, True),
    }
    for gate, per_minor in expected.items():
        assert tuple(dra_gate(m, gate) for m in (34, 35, 36, 37)) == per_minor, gate
        assert not dra_gate(33, gate)  # DRA itself is off by default before 1.34


# -- partitionable devices -------------------------------------------------------------------------------


def allocated_mig(start: int) -> dict[str, Any]:
    """A claim already holding the MIG device at memory slice ``start`` of n1's gpu-0."""
    return o.claim(
        "held",
        o.request("m", "mig.nvidia.com"),
        status=o.allocated("n1", ("m", f"gpu-0-mig-1g10gb-19-{start}"), reserved=("uid-x",)),
    )


def test_an_allocated_partition_takes_the_gpus_counters_from_1_36() -> None:
    # gpu-0-counter-set: copy-engines 8; the allocated MIG consumes 1, so 7 are left; the full GPU consumes
    # all 8 → refused in 1.36+. In 1.35 the API server drops the counters: the full GPU is just free.
    objs = [*o.gpu_classes(), *o.partitionable_node("n1", (0, 1)), allocated_mig(0),
            o.claim("c", o.request("g")), o.pod("p", ("g", "c", ""))]  # fmt: skip
    assert outcome("1.35", *objs) == "n1"
    assert outcome("1.36", *objs).startswith("0/1 nodes are available: 1 cannot allocate all claims.")
    # the other MIG consumes copy-engines 1 (7 left) and memory-slice-1 (1 left): it fits beside the held one
    objs[-2] = o.claim("c", o.request("m", "mig.nvidia.com"))
    objs[-1] = o.pod("p", ("m", "c", ""))
    assert outcome("1.36", *objs) == "n1"


def test_the_explainer_names_the_counter_and_its_values() -> None:
    snap = build_snapshot([("t", x) for x in [*o.gpu_classes(), *o.partitionable_node("n1", (0, 1)),
                                              allocated_mig(0), o.claim("c", o.request("g")),
                                              o.pod("p", ("g", "c", ""))]])  # fmt: skip
    snap.kube_version = "1.36"
    exp = explain_pod(Engine(snap), snap.pod("default/p"))
    (line,) = exp.nodes[0].evidence
    # counters checked in name order: copy-engines first; the full GPU needs 8, 8 − 1 (the held MIG) = 7
    assert (
        "refused: gpu-0: counter set gpu-0-counter-set counter copy-engines: needs 8 in all, 7 available"
        in line
    )
    assert "allocated partitions of the same GPU hold its counters" in exp.groups[0].fix


def test_a_device_consuming_an_unknown_counter_set_makes_the_pool_invalid() -> None:
    # pools_incubating.go validateDeviceCounterConsumption: "counter set gpu-9-counter-set not found" → the
    # pool is invalid: no device of it is allocated, and allocationMode All is upstream's error
    node = o.partitionable_node("n1", (0,))
    node[2]["spec"]["devices"][1]["consumesCounters"][0]["counterSet"] = "gpu-9-counter-set"
    objs = [*o.gpu_classes(), *node, o.claim("c", o.request("g")), o.pod("p", ("g", "c", ""))]
    assert outcome("1.36", *objs).startswith("0/1 nodes are available: 1 cannot allocate all claims.")
    objs[-2] = o.claim("c", o.request("g", mode="All"))
    s, snap = scheduler("1.36", *objs)
    pod = snap.pod("default/p")
    state = CycleState()
    assert plugin(s).pre_filter(state, pod, s.cluster)[1].is_success
    st = plugin(s).filter(state, pod, s.cluster.view(s.cluster.index["n1"]))
    assert st.code == Code.ERROR
    assert st.texts() == (
        "claim default/c, request g: asks for all devices, but resource pool gpu.nvidia.com/n1 is currently invalid",
    )


# -- consumable capacity ---------------------------------------------------------------------------------


def test_request_policy_rounding_and_violations() -> None:
    # consumable_capacity.go: a range rounds up to min + k·step; valid values round up to the next one;
    # no request takes the default; above max, off step or not a valid value violates
    rng = CapacityPolicy(default=Fraction(80 * GI), range_min=Fraction(MI), range_max=Fraction(80 * GI),
                         range_step=Fraction(MI))  # fmt: skip
    assert consumed(Fraction(3 * MI // 2), Fraction(80 * GI), rng) == 2 * MI  # 1.5Mi → 1Mi + 1·1Mi
    assert consumed(Fraction(MI // 2), Fraction(80 * GI), rng) == MI  # below min → min
    assert consumed(None, Fraction(80 * GI), rng) == 80 * GI  # the default
    assert consumed(None, Fraction(80 * GI), None) == 80 * GI  # no policy: the whole capacity
    assert violates(Fraction(81 * GI), rng) and not violates(Fraction(2 * MI), rng)
    vals = CapacityPolicy(default=Fraction(10 * GI), valid_values=(Fraction(10 * GI), Fraction(20 * GI)))
    assert consumed(Fraction(15 * GI), Fraction(80 * GI), vals) == 20 * GI
    assert consumed(Fraction(30 * GI), Fraction(80 * GI), vals) == 30 * GI  # above every value: as asked
    assert violates(Fraction(30 * GI), vals) and not violates(Fraction(20 * GI), vals)


def shared_node() -> list[dict[str, Any]]:
    return [make_node("n1").obj(), o.node_slice("n1", [o.shared_gpu_device(0, "n1")])]


def share(amount: str) -> dict[str, Any]:
    """A claim holding a share of n1's gpu-0 that consumes ``amount`` of its memory."""
    status = o.allocated("n1", ("g", "gpu-0"), reserved=("uid-x",))
    result = status["allocation"]["devices"]["results"][0]
    result["shareID"] = "2b4f3d9e-0000-4000-8000-000000000001"
    result["consumedCapacity"] = {"memory": amount}
    return o.claim("held", o.request("g"), status=status)


def test_allocated_shares_consume_capacity_from_1_36() -> None:
    # 80Gi, a share holds 60Gi: 20Gi fits (60 + 20 = 80), 30Gi does not (90 > 80). In 1.35 consumable
    # capacity is off: GatherAllocatedState's legacy mode counts the shared device as in use, whole.
    def want(amount: str) -> list[dict[str, Any]]:
        c = o.claim("c", o.request("g", capacity={"memory": amount}))
        return [*o.gpu_classes(), *shared_node(), share("60Gi"), c, o.pod("p", ("g", "c", ""))]

    assert outcome("1.36", *want("20Gi")) == "n1"
    assert outcome("1.36", *want("30Gi")).startswith("0/1 nodes are available: 1 cannot allocate all claims.")
    assert outcome("1.35", *want("20Gi")).startswith("0/1 nodes are available: 1 cannot allocate all claims.")


def test_a_request_without_capacity_takes_the_default_the_whole_memory() -> None:
    # consumableShares=memory: default = the device's memory (80Gi); with a 1Gi share held, 1 + 80 > 80
    objs = [
        *o.gpu_classes(),
        *shared_node(),
        share("1Gi"),
        o.claim("c", o.request("g")),
        o.pod("p", ("g", "c", "")),
    ]
    assert outcome("1.37", *objs).startswith("0/1 nodes are available: 1 cannot allocate all claims.")


def test_reserve_records_the_share_for_the_next_pod() -> None:
    # two pods asking 50Gi each of one 80Gi shared GPU: the first gets a share, the second finds 30Gi left
    c1 = o.claim("c1", o.request("g", capacity={"memory": "50Gi"}))
    c2 = o.claim("c2", o.request("g", capacity={"memory": "50Gi"}))
    s, snap = scheduler("1.36", *o.gpu_classes(), *shared_node(), c1, c2,
                        o.pod("p", ("g", "c1", "")), o.pod("q", ("g", "c2", ""), uid="uid-q"))  # fmt: skip
    assert s.schedule_one(snap.pod("default/p")).node == "n1"
    assert "cannot allocate all claims" in s.schedule_one(snap.pod("default/q"), assume=False).message


# -- distinctAttribute -----------------------------------------------------------------------------------


def test_distinct_attribute_explained_by_value() -> None:
    c = o.claim("c", o.request("a", "mig.nvidia.com"), o.request("b", "mig.nvidia.com"))
    c["spec"]["devices"]["constraints"] = [{"distinctAttribute": "gpu.nvidia.com/parentUUID"}]
    devs = [o.mig_device(0, j, "n1") for j in range(2)]
    snap = build_snapshot([("t", x) for x in [*o.gpu_classes(), make_node("n1").obj(), o.node_slice("n1", devs),
                                              c, o.pod("p", ("m", "c", ""))]])  # fmt: skip
    snap.kube_version = "1.37"
    exp = explain_pod(Engine(snap), snap.pod("default/p"))
    # both MIG devices sit on gpu-0 (parentUUID GPU-n1-0000): 2 devices, 1 value
    assert exp.nodes[0].evidence[-1] == (
        "pod claim m distinctAttribute gpu.nvidia.com/parentUUID over a, b: 2 device(s) must all have "
        "different values; free devices by value: GPU-n1-0000: 2"
    )
    snap.kube_version = "1.35"  # the API server refuses the claim there; kubegpu ignores the constraint
    exp = explain_pod(Engine(snap), snap.pod("default/p"))
    assert exp.node == "n1"
    assert any("distinctAttribute constraint: DRAConsumableCapacity is off by default in 1.35" in u
               for u in exp.unverified)  # fmt: skip


# -- device taints and DeviceTaintRules ------------------------------------------------------------------


def rule(**selector: str) -> dict[str, Any]:
    return {"apiVersion": o.API, "kind": "DeviceTaintRule", "metadata": {"name": "xid"},
            "spec": {"deviceSelector": selector,
                     "taint": {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoExecute"}}}  # fmt: skip


def test_device_taint_rules_apply_from_1_37() -> None:
    # DRADeviceTaintRules: off in 1.36 (the scheduler lists slices unpatched), GA in 1.37: the rule's
    # NoExecute taint lands on n1/gpu-0 (driver, pool and device all match) and nothing tolerates it
    base = [*o.gpu_classes(), *o.gpu_node("n1", 1), o.claim("c", o.request("g")), o.pod("p", ("g", "c", ""))]
    hit = rule(driver=o.DRIVER, pool="n1", device="gpu-0")
    assert outcome("1.36", *base, hit) == "n1"
    assert outcome("1.37", *base, hit).startswith("0/1 nodes are available: 1 cannot allocate all claims.")
    assert outcome("1.37", *base, rule(driver=o.DRIVER, pool="n2")) == "n1"  # another pool: no match
    tolerating = o.claim(
        "c", o.request("g", tolerations=[{"key": "gpu.nvidia.com/xid", "operator": "Exists"}])
    )
    assert outcome("1.37", *base[:-2], tolerating, base[-1], hit) == "n1"


def test_device_taint_effects() -> None:
    # DeviceTaintEffect: NoSchedule, NoExecute, None (1.36+); a node-only effect is refused clearly
    sl = o.node_slice("n1", [o.gpu_device(0, "n1")])
    sl["spec"]["devices"][0]["taints"] = [{"key": "k", "effect": "None"}]
    objs = [
        *o.gpu_classes(),
        make_node("n1").obj(),
        sl,
        o.claim("c", o.request("g")),
        o.pod("p", ("g", "c", "")),
    ]
    assert outcome("1.37", *objs) == "n1"  # None never prevents allocation (taintPreventsAllocation)
    sl["spec"]["devices"][0]["taints"] = [{"key": "k", "effect": "PreferNoSchedule"}]
    with pytest.raises(InputError) as err:
        parse_resource_slice(sl, "slices.yaml")
    assert "spec.devices[0].taints[0].effect" in str(err.value) and "PreferNoSchedule" in str(err.value)
    # the allowed values as a list a person reads, not a Python tuple repr (the three DeviceTaintEffect
    # constants of k8s.io/api resource/v1 types.go v0.37.2, the ones that repel first)
    assert str(err.value).endswith(
        "unsupported value 'PreferNoSchedule': must be one of NoSchedule, NoExecute, None"
    ), str(err.value)


def test_gated_slice_fields_are_unverified_where_the_gate_is_off() -> None:
    snap = build_snapshot([("t", x) for x in [*o.gpu_classes(), *o.partitionable_node("n1", (0,)),
                                              o.claim("c", o.request("g")), o.pod("p", ("g", "c", ""))]])  # fmt: skip
    snap.kube_version = "1.35"
    lines = explain_pod(Engine(snap), snap.pod("default/p")).unverified
    assert any(u.startswith("ResourceSlices n1-gpu.nvidia.com-counters, n1-gpu.nvidia.com-x use "
                            "sharedCounters/consumesCounters: DRAPartitionableDevices is off by default in 1.35")
               for u in lines), lines  # fmt: skip
    snap.kube_version = "1.36"
    assert not [u for u in explain_pod(Engine(snap), snap.pod("default/p")).unverified if "DRA" in u]


# -- pools: 1.34 and 1.35+ (structured allocator v0.34 vs v0.35 GatherPools) ------------------------------


def test_a_pool_split_over_node_selectors_is_complete_from_1_35() -> None:
    # one pool, resourceSliceCount 2: slice a reaches n1 (zone=a), slice b only zone=b nodes. 1.34's
    # GatherPools counts the slices reaching n1 (1 of 2: incomplete → All is an error); 1.35+ finds both
    # among all slices (checkSlicesInPool) → complete, and All takes n1's one GPU.
    def zone_slice(name: str, zone: str, gpu: int) -> dict[str, Any]:
        sl = o.node_slice("pool", [o.gpu_device(gpu, "pool")], count=2, name=name)
        del sl["spec"]["nodeName"]
        sl["spec"]["nodeSelector"] = {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "In", "values": [zone]}]}]}  # fmt: skip
        return sl

    objs = [*o.gpu_classes(), make_node("n1").label("zone", "a").obj(), zone_slice("sa", "a", 0),
            zone_slice("sb", "b", 1), o.claim("c", o.request("g", mode="All")), o.pod("p", ("g", "c", ""))]  # fmt: skip
    assert outcome("1.35", *objs) == "n1"
    s, snap = scheduler("1.34", *objs)
    pod = snap.pod("default/p")
    state = CycleState()
    assert plugin(s).pre_filter(state, pod, s.cluster)[1].is_success
    st = plugin(s).filter(state, pod, s.cluster.view(s.cluster.index["n1"]))
    assert st.texts() == (
        "claim default/c, request g: asks for all devices, but resource pool gpu.nvidia.com/pool is currently "
        "being updated",
    )


def test_a_device_name_twice_in_a_pool_makes_it_invalid() -> None:
    # poolIsInvalid (v0.34, v0.35 stable) / validateDeviceNames (incubating): "duplicate device name gpu-0";
    # an invalid pool gives no device (1.34 included: allocateOne skips IsInvalid pools)
    objs = [*o.gpu_classes(), make_node("n1").obj(),
            o.node_slice("n1", [o.gpu_device(0, "n1")], count=2, name="s1"),
            o.node_slice("n1", [o.gpu_device(0, "n1")], count=2, name="s2"),
            o.claim("c", o.request("g")), o.pod("p", ("g", "c", ""))]  # fmt: skip
    for version in ("1.34", "1.37"):
        assert outcome(version, *objs).startswith("0/1 nodes are available: 1 cannot allocate all claims."), (
            version
        )


def assert_filter_error_on_n1(objs: list[dict[str, Any]], want: dict[str, str]) -> None:
    """Per minor: PreFilter passes and Filter on n1 ends the cycle with an error of exactly that text."""
    for version, text in want.items():
        s, snap = scheduler(version, *objs)
        pod = snap.pod("default/p")
        state = CycleState()
        assert plugin(s).pre_filter(state, pod, s.cluster)[1].is_success
        st = plugin(s).filter(state, pod, s.cluster.view(s.cluster.index["n1"]))
        assert (st.code, st.texts()) == (Code.ERROR, (text,)), version


def test_the_claim_limit_text_names_the_request_from_1_37() -> None:
    # AllocationResultsMaxSize 32: 20 + 13 = 33. 1.36 (allocator_incubating.go v0.36.3): the claim's total;
    # 1.37 (v0.37.2): request b would add 13 to the 20 already counted, 13 > 32 − 20
    c = o.claim("c", o.request("a", count=20), o.request("b", count=13))
    objs = [*o.gpu_classes(), *o.gpu_node("n1", 1), c, o.pod("p", ("gpu", "c", ""))]
    want = {
        "1.36": "claim default/c: number of requested devices 33 exceeds the claim limit of 32",
        "1.37": "claim default/c, request b: adding 13 devices exceeds the claim limit of 32, with 20 already "
        "accounted for",
    }
    assert_filter_error_on_n1(objs, want)


def test_all_mode_counts_the_node_s_devices_against_the_claim_limit() -> None:
    # validateDeviceRequest (allocator_stable.go v0.36.3 l.454-481; v0.37.2 likewise) sets an All request's
    # numDevices to the selectable devices it lists on the node: 40 GPUs on n1 → 40 > 32
    # (AllocationResultsMaxSize). 1.34-1.36: the claim's total (allocator_stable.go v0.36.3 l.212); 1.37: per
    # request, with 0 counted before it (allocator_stable.go v0.37.2 l.205). Both are Filter errors. Before
    # the fix All counted as 0 devices and all 40 were allocated. Reproducer: review all_limit.py.
    objs = [*o.gpu_classes(), *o.gpu_node("n1", 40), o.claim("c", o.request("all", mode="All"))]
    objs.append(o.pod("p", ("a", "c", "")))
    want = {
        "1.34": "claim default/c: number of requested devices 40 exceeds the claim limit of 32",
        "1.36": "claim default/c: number of requested devices 40 exceeds the claim limit of 32",
        "1.37": "claim default/c, request all: adding 40 devices exceeds the claim limit of 32, with 0 already "
        "accounted for",
    }
    assert_filter_error_on_n1(objs, want)


def test_all_mode_within_the_claim_limit_takes_every_device() -> None:
    # 32 devices is the limit itself (> 32 fails, allocator_stable.go v0.36.3 l.212): All takes all 32
    objs = [*o.gpu_classes(), *o.gpu_node("n1", 32), o.claim("c", o.request("all", mode="All"))]
    objs.append(o.pod("p", ("a", "c", "")))
    for version in ("1.34", "1.37"):
        assert outcome(version, *objs) == "n1", version


def test_all_mode_lists_devices_by_static_capacity_from_1_37() -> None:
    # Two shared 80Gi GPUs, a share holds 60Gi of gpu-0; a claim asks All devices with 30Gi each.
    # 1.36 (allocator_incubating.go v0.36.3 validateDeviceRequest → alloc.CmpRequestOverCapacity with the
    # allocated shares): 60 + 30 > 80 leaves gpu-0 out of "all", gpu-1 alone is taken → n1.
    # 1.37 (v0.37.2 passes emptyConsumedCapacity, "Static capacity only"): 30 ≤ 80 keeps gpu-0 in "all",
    # allocateDevice then finds 60 + 30 > 80 and All fails without error. Reproducer: review all_static.py.
    devs = [o.shared_gpu_device(0, "n1"), o.shared_gpu_device(1, "n1")]
    c = o.claim("c", o.request("all", mode="All", capacity={"memory": "30Gi"}))
    objs = [*o.gpu_classes(), make_node("n1").obj(), o.node_slice("n1", devs), share("60Gi"), c]
    objs.append(o.pod("p", ("a", "c", "")))
    assert outcome("1.36", *objs) == "n1"
    assert outcome("1.37", *objs).startswith("0/1 nodes are available: 1 cannot allocate all claims.")


def test_a_filter_error_ends_the_cycle_with_the_wrapped_text() -> None:
    # RunFilterPlugins wraps a Filter error as `running "DynamicResources" filter plugin: <err>`
    # (framework.go v1.36.3 l.1118, v1.37.2 l.1130); findNodesThatPassFilters ends the cycle with it and
    # schedulingCycle returns it as the pod's error with the nomination cleared (schedule_one.go v1.37.2
    # l.178). Before, kubegpu's core raised RuntimeError("plugin DynamicResources returned an error").
    objs = [*o.gpu_classes(), *o.gpu_node("n1", 40), o.claim("c", o.request("all", mode="All"))]
    objs.append(o.pod("p", ("a", "c", "")))
    s, snap = scheduler("1.36", *objs)
    got = s.schedule_one(snap.pod("default/p"), assume=False)
    assert (got.node, got.clears_nomination) == (None, True)
    assert got.message == (
        'running "DynamicResources" filter plugin: claim default/c: number of requested devices 40 exceeds the '
        "claim limit of 32"
    )
