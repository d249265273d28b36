"""kubelet Topology Manager admission (pkg/kubelet/cm/topologymanager, scope container) (R10.2).

Each case names the kubelet behaviour it pins: device hints from devicemanager/topology_hints.go, CPU hints
from cpumanager/policy_static.go, merging and comparison from topologymanager/policy.go, the policies'
admit rules, and the TopologyAffinityError reason/message from topology_manager.go.
"""

from __future__ import annotations

import pytest
from device_readings import GENERATED, SHARED_H200

from kubegpu.devices import load_reading
from kubegpu.devices.numa import (
    TOPOLOGY_AFFINITY_ERROR,
    TOPOLOGY_AFFINITY_MESSAGE,
    CpuRequest,
    Hint,
    _merge,
    admit_container,
    device_hints,
)
from kubegpu.devices.sharing import GPU_RESOURCE, PluginConfig, plan_resources
from kubegpu.errors import InputError

GPU = GPU_RESOURCE
# 8 GPUs, 4 per NUMA node (a DGX-like two-socket board).
EIGHT = {f"g{i}": i // 4 for i in range(8)}


def test_four_free_on_one_socket_is_single_numa_preferred() -> None:
    d = admit_container("single-numa-node", {GPU: EIGHT}, {GPU: list(EIGHT)}, {GPU: 4}, [0, 1])
    assert (d.admit, d.affinity, d.preferred) == (True, frozenset({0}), True)
    assert d.aligned[GPU] == ("g0", "g1", "g2", "g3")


def test_split_two_plus_two_is_refused_by_single_numa_node_and_restricted() -> None:
    # 2 free on each node: only {0,1} holds 4, and it is not preferred (the min over all devices is 1 node).
    free = ["g2", "g3", "g6", "g7"]
    assert device_hints(EIGHT, free, 4, [0, 1]) == (Hint(frozenset({0, 1}), False),)
    for policy in ("single-numa-node", "restricted"):
        d = admit_container(policy, {GPU: EIGHT}, {GPU: free}, {GPU: 4}, [0, 1])
        assert not d.admit
        assert (d.reason, d.message) == (TOPOLOGY_AFFINITY_ERROR, TOPOLOGY_AFFINITY_MESSAGE)
        assert d.message == "Resources cannot be allocated with Topology locality"
    d = admit_container("best-effort", {GPU: EIGHT}, {GPU: free}, {GPU: 4}, [0, 1])
    assert (d.admit, d.affinity, d.preferred) == (True, frozenset({0, 1}), False)
    d = admit_container("none", {GPU: EIGHT}, {GPU: free}, {GPU: 4}, [0, 1])
    assert (d.admit, d.affinity) == (True, None)


def test_narrowest_then_lowest_numa_node_wins() -> None:
    # Both nodes can hold 2: both {0} and {1} are preferred, IsNarrowerThan picks the lower bitmask.
    d = admit_container("single-numa-node", {GPU: EIGHT}, {GPU: list(EIGHT)}, {GPU: 2}, [0, 1])
    assert d.affinity == frozenset({0})
    d = admit_container("single-numa-node", {GPU: EIGHT}, {GPU: ["g1", "g4", "g5"]}, {GPU: 2}, [0, 1])
    assert d.affinity == frozenset({1})


def test_gpus_on_one_node_and_cpus_on_the_other_are_not_aligned() -> None:
    # CPU manager static policy: 16 CPUs per node, only node 0 has 8 free; the GPUs are free on node 1 only.
    cpus = CpuRequest(count=8, total_per_numa={0: 16, 1: 16}, free_per_numa={0: 12, 1: 2})
    free = ["g4", "g5", "g6", "g7"]
    d = admit_container("restricted", {GPU: EIGHT}, {GPU: free}, {GPU: 4}, [0, 1], cpus)
    assert not d.admit and d.reason == TOPOLOGY_AFFINITY_ERROR
    assert d.hints["cpu"] == (Hint(frozenset({0}), True), Hint(frozenset({0, 1}), False))
    assert admit_container("best-effort", {GPU: EIGHT}, {GPU: free}, {GPU: 4}, [0, 1], cpus).admit
    # With CPUs free on node 1 too, both align there.
    cpus = CpuRequest(count=8, total_per_numa={0: 16, 1: 16}, free_per_numa={0: 12, 1: 10})
    d = admit_container("single-numa-node", {GPU: EIGHT}, {GPU: free}, {GPU: 4}, [0, 1], cpus)
    assert (d.admit, d.affinity) == (True, frozenset({1}))


def test_preferred_only_when_every_provider_prefers_the_same_nodes() -> None:
    # mergePermutation: "Only mark preferred if all affinities are equal". 20 CPUs need both 16-CPU nodes
    # ({0,1} preferred for CPUs) while 4 GPUs prefer node 0: no merge is preferred.
    cpus = CpuRequest(count=20, total_per_numa={0: 16, 1: 16}, free_per_numa={0: 16, 1: 16})
    free = list(EIGHT)
    d = admit_container("restricted", {GPU: EIGHT}, {GPU: free}, {GPU: 4}, [0, 1], cpus)
    assert (d.admit, d.preferred) == (False, False)
    d = admit_container("best-effort", {GPU: EIGHT}, {GPU: free}, {GPU: 4}, [0, 1], cpus)
    assert (d.admit, d.affinity) == (True, frozenset({0, 1}))  # steered to maxOfMinAffinityCounts = 2


def test_more_than_free_gives_no_hint_and_is_refused() -> None:
    # "requested number of devices unavailable": an empty hint list, i.e. a non-preferred don't-care.
    assert device_hints(EIGHT, ["g0"], 2, [0, 1]) == ()
    assert not admit_container("restricted", {GPU: EIGHT}, {GPU: ["g0"]}, {GPU: 2}, [0, 1]).admit


def test_devices_without_numa_information_do_not_care() -> None:
    # The real H200 VM: NVML answers NotSupported for NUMA, the plugin sends no topology → nil hints.
    h200 = load_reading(SHARED_H200 / "nvml.json")
    (plan,) = plan_resources(h200, PluginConfig())
    numa = {d.id: d.numa_node for d in plan.devices}
    assert device_hints(numa, list(numa), 1, [0]) is None
    d = admit_container("single-numa-node", {GPU: numa}, {GPU: list(numa)}, {GPU: 1}, [0])
    assert (d.admit, d.affinity) == (True, None)


def test_no_numa_node_known_at_all_admits_under_every_policy() -> None:
    # A node whose devices carry no NUMA node and whose NUMA nodes are unknown (a device model synthesised
    # from capacity): every provider says "don't care", which kubelet admits under every policy; an empty
    # machine mask must not turn that into a refusal.
    numa: dict[str, int | None] = {"g0": None, "g1": None}
    for policy in ("best-effort", "restricted", "single-numa-node"):
        d = admit_container(policy, {GPU: numa}, {GPU: list(numa)}, {GPU: 2}, [])
        assert (d.admit, d.affinity) == (True, None), policy


def test_generated_dgx1_reading_admits_four_gpus_of_one_socket() -> None:
    inv = load_reading(GENERATED / "dgx1-8xv100.json")
    (plan,) = plan_resources(inv, PluginConfig())
    numa = {d.id: d.numa_node for d in plan.devices}
    nodes = sorted({n for n in numa.values() if n is not None})
    d = admit_container("single-numa-node", {GPU: numa}, {GPU: list(numa)}, {GPU: 4}, nodes)
    assert d.admit and d.affinity is not None and len(d.affinity) == 1
    assert {numa[g] for g in d.aligned[GPU]} == set(d.affinity)


def test_merge_steers_non_preferred_hints_like_kubelet() -> None:
    # policy_test.go: provider 1 offers {0} and {1} preferred, provider 2 only {0,1} non-preferred → {0}, not
    # preferred (both merges are non-preferred and one node wide; the lower bitmask wins).
    p1 = (Hint(frozenset({0}), True), Hint(frozenset({1}), True))
    p2 = (Hint(frozenset({0, 1}), False),)
    assert _merge([p1, p2], frozenset({0, 1})) == Hint(frozenset({0}), False)
    # No provider at all, or only don't-cares: the default affinity, preferred.
    assert _merge([(Hint(None, True),)], frozenset({0, 1})) == Hint(frozenset({0, 1}), True)
    # Disjoint preferred hints merge to nothing: kubelet falls back to the default affinity, not preferred.
    assert _merge([(Hint(frozenset({0}), True),), (Hint(frozenset({1}), True),)], frozenset({0, 1})) == Hint(
        frozenset({0, 1}), False
    )


def test_bad_policy_and_too_many_numa_nodes_are_input_errors() -> None:
    with pytest.raises(InputError, match="unknown topology manager policy 'strict'"):
        admit_container("strict", {}, {}, {}, [0])
    with pytest.raises(InputError, match="at most 8"):
        admit_container("restricted", {}, {}, {}, list(range(9)))


def test_explain_names_the_error_and_the_affinity() -> None:
    d = admit_container("single-numa-node", {GPU: EIGHT}, {GPU: ["g2", "g3", "g6", "g7"]}, {GPU: 4}, [0, 1])
    assert d.explain().startswith(
        "TopologyAffinityError: Resources cannot be allocated with Topology locality"
    )
