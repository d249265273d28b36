"""Host selection among equally scored nodes: upstream picks at random (selectHost's reservoir sampling) up
to 1.34, and from 1.35 pops a heap whose tie-breaker is set only for extender scores (``release``); the FGD
paper's simulator takes the first in node order. All are reachable, the default is upstream's random intent."""

from __future__ import annotations

import numpy as np
import pytest

from kubegpu.errors import ConfigError
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import Framework
from kubegpu.scheduler.registry import default_profile, in_tree_registry
from kubegpu.scheduler.schedule_one import Scheduler, heap_top
from kubegpu.testing.builders import make_node, make_pod


def scheduler(tie_break: str, seed: int, kube_version: str | None = None) -> Scheduler:
    snap = build_snapshot([("t", make_node(f"n{i}").gpus(8).obj()) for i in range(8)])
    profile = default_profile(kube_version=kube_version)
    return Scheduler(
        Framework(profile, in_tree_registry()), ClusterState(snap.nodes), seed, tie_break=tie_break
    )


def test_first_tie_break_takes_the_first_node_in_order() -> None:
    pod = make_pod("p").gpu(1).parsed()
    assert {scheduler("first", seed).schedule_one(pod, assume=False).node for seed in range(10)} == {"n0"}


def test_random_tie_break_spreads_over_equal_nodes() -> None:
    pod = make_pod("p").gpu(1).parsed()
    assert len({scheduler("random", seed).schedule_one(pod, assume=False).node for seed in range(10)}) > 1


def test_heap_top_is_what_go_container_heap_pops_first() -> None:
    """``heap.Init`` then ``heap.Pop`` (go/src/container/heap/heap.go: ``down`` swaps a parent with its larger
    child only when that child is strictly greater, the left child winning a tie) over a max-heap, as
    kube-scheduler 1.35+ pops its host (framework/sorted_nodes.go of v1.37.2, ``Less``: the greater
    TotalScore, then the greater Randomizer, 0 for every node when no extender scored). Hand-worked:
    [1, 2, 9, 3, 9]: sifting position 1 lifts the 9 at 4 above the 2; sifting 0 compares the 9s at 1 and 2,
    the left one wins, so the node found fifth is taken, not the third. [1, 9, 9]: the left 9 (position 1)."""
    assert heap_top(np.array([1, 2, 9, 3, 9])) == 4
    assert heap_top(np.array([1, 9, 9])) == 1
    assert heap_top(np.array([7, 7, 7, 7])) == 0
    assert heap_top(np.array([3, 8, 1, 8, 2])) == 1


def test_release_tie_break_follows_each_minor() -> None:
    """Eight equal GPU nodes, a GPU-only pod (extended resources are not scored by default, so every total is
    equal): 1.35+ (kubernetes PR #135231, KEP-5598) pops the first node found, whatever the seed, so GPU pods
    fill the node tree in order; 1.34's selectHost (schedule_one.go of v1.34.5) samples them at random."""
    pod = make_pod("p").gpu(1).parsed()
    for minor in ("1.35", "1.37"):
        got = {scheduler("release", seed, minor).schedule_one(pod, assume=False).node for seed in range(10)}
        assert got == {"n0"}, minor
    assert (
        len({scheduler("release", seed, "1.34").schedule_one(pod, assume=False).node for seed in range(10)})
        > 1
    )


def test_unknown_tie_break_is_refused() -> None:
    with pytest.raises(ConfigError):
        scheduler("last", 0)


def test_failed_cycle_message_is_the_fit_error_text_read_lazily() -> None:
    """A failed cycle's message is upstream's ``FitError.Error()`` (pkg/scheduler/framework/types.go:
    "0/%v nodes are available: %s." with "<count> <reason>"), built only when read; a pickled result
    carries the text. Hand-derived: 9 GPUs asked of 8 nodes with 8 each → every node short of GPUs."""
    import pickle

    result = scheduler("first", 0).schedule_one(make_pod("big").gpu(9).parsed(), assume=False, preempt=False)
    assert not result.scheduled
    assert "_message" in vars(result) and not isinstance(vars(result)["_message"], str)  # not built yet
    expected = "0/8 nodes are available: 8 Insufficient nvidia.com/gpu."
    assert pickle.loads(pickle.dumps(result)).message == expected
    assert result.message == expected
    assert vars(result)["_message"] == expected  # built once, kept


def test_signs_are_kept_on_a_pod_only_when_every_signing_filter_reads_the_spec_alone() -> None:
    """``Framework.signed_prefix`` keeps a pod's signs (``Pod.derived``) when every signing filter says
    ``sign_from_spec``; the kept value is matched by the framework's own owner object, so another framework
    computes afresh (a pickled copy carries none); a profile with InterPodAffinity (its sign reads
    the pod's key) or PodTopologySpread (the cluster's owners) never keeps them."""
    import pickle

    from kubegpu.scheduler.framework import Profile
    from kubegpu.scheduler.plugins import names
    from kubegpu.scheduler.plugins.dynamic_resources import DYNAMIC_RESOURCES

    cluster_wide = {names.INTER_POD_AFFINITY, names.POD_TOPOLOGY_SPREAD, DYNAMIC_RESOURCES}
    spec_only = Profile("s", tuple(p for p in default_profile().plugins if p.name not in cluster_wide))
    pod = make_pod("p").gpu(1).parsed()
    kept = Framework(spec_only, in_tree_registry())
    default = Framework(default_profile(), in_tree_registry())
    assert kept._sign_owner is not None and default._sign_owner is None
    first = kept.signed_prefix(pod)
    assert first[0] == len(kept.filter_plugins)  # every filter signed: the pod's whole class
    assert vars(pod)["_derived"][kept._sign_owner] == first
    assert kept.signed_prefix(pod) is first  # kept, not recomputed
    signs = default.signed_prefix(pod)
    assert signs[0] == len(default.filter_plugins)
    assert signs not in vars(pod)["_derived"].values()  # the default profile keeps no signs
    other = Framework(spec_only, in_tree_registry())
    assert other._sign_owner not in vars(pod)["_derived"]
    assert other.signed_prefix(pod) == first and vars(pod)["_derived"][other._sign_owner] == first
    copy = pickle.loads(pickle.dumps(pod))
    assert "_derived" not in vars(copy) and copy == pod  # kept values are this process's: not pickled


def test_a_pod_keeps_a_bounded_number_of_derived_values() -> None:
    """``Pod.derived``: one value per owner, recomputed for a new owner, at most ``_DERIVED_OWNERS`` kept
    (frameworks come and go in a long-lived process; a pod must not hold all of them)."""
    from collections.abc import Callable

    from kubegpu.model.objects import _DERIVED_OWNERS, Pod

    pod = make_pod("p").gpu(1).parsed()
    calls: list[int] = []
    owners = [object() for _ in range(_DERIVED_OWNERS + 3)]

    def counted(i: int) -> Callable[[Pod], int]:
        def compute(_: Pod) -> int:
            calls.append(i)
            return i

        return compute

    for i, owner in enumerate(owners):
        assert pod.derived(owner, counted(i)) == i
        assert pod.derived(owner, counted(-1)) == i  # kept: not computed again
    assert calls == list(range(len(owners)))
    assert len(vars(pod)["_derived"]) <= _DERIVED_OWNERS


def test_filters_that_sign_from_the_spec_give_a_renamed_pod_the_same_sign() -> None:
    """``sign_from_spec`` says a filter's sign reads the pod's spec alone (``Framework.signed_prefix`` then
    keeps it on the pod, shared by ``sim.openb.renamed`` copies). Pinned: which filters say it (not the
    three whose sign reads the pod's key or other objects: InterPodAffinity, PodTopologySpread,
    DynamicResources), and that for varied pods each such sign is the same for the pod and for a copy
    under another name (a sign reading the name or key would differ). A sign reading other objects
    (volumes, the ledger) would pass here: the twelve were read by hand for that (review, 2026-12-05)."""
    from kubegpu.scheduler.assembly import SchedulerSpec, assemble
    from kubegpu.scheduler.gpu_ledger import GpuShareLedger
    from kubegpu.scheduler.registry import kubegpu_profile
    from kubegpu.sim.openb import renamed

    snap = build_snapshot([("t", make_node("n0").gpus(8).obj())])
    cluster = ClusterState(snap.nodes)
    frameworks = [
        Framework(default_profile(), in_tree_registry()),
        Framework(kubegpu_profile(), in_tree_registry()),
        assemble(
            SchedulerSpec("packing", policy="BestFit"), cluster, sharing=GpuShareLedger(cluster)
        ).framework,
    ]
    spec_only = {p.name for f in frameworks for p in f.filter_plugins if getattr(p, "sign_from_spec", False)}
    assert spec_only == {
        "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
        "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "GpuDeviceFit", "GpuShare",
    }  # fmt: skip
    pods = [
        make_pod("a").gpu(2).tolerate("dedicated", "x", "NoSchedule").node_selector(pool="a").parsed(),
        make_pod("b").requests(cpu="2", memory="1Gi").host_port(8080).parsed(),
        make_pod("c").gpu(1).require([("gpu", "In", ["h100"])]).parsed(),
    ]
    for f in frameworks:
        for p in f.filter_plugins:
            if getattr(p, "sign_from_spec", False):
                for pod in pods:
                    sign = getattr(p, "sign")  # noqa: B009 (FilterPlugin does not declare it)
                    assert sign(pod) == sign(renamed(pod, pod.name + "-copy")), (p.name, pod.name)


def test_a_kept_pre_filter_outcome_replays_what_running_the_pre_filters_gives() -> None:
    """Where every PreFilter says ``pre_filter_from_spec`` (the packing profiles: NodeAffinity, NodePorts,
    NodeResourcesFit, GpuShare), a pod keeps its PreFilter outcome: the node names, status, narrowing
    plugins, skipped filters and what the PreFilters wrote into the cycle state, replayed for the pod and
    its renamed copies exactly as running them gives; the default profile (InterPodAffinity's and the
    volume plugins' PreFilters read other objects) keeps nothing."""
    from kubegpu.scheduler.assembly import SchedulerSpec, assemble
    from kubegpu.scheduler.framework import CycleState
    from kubegpu.scheduler.gpu_ledger import GpuShareLedger
    from kubegpu.scheduler.status import Code
    from kubegpu.sim.openb import renamed

    snap = build_snapshot([("t", make_node("n0").gpus(8).label("pool", "a").obj())])
    cluster = ClusterState(snap.nodes)
    packing = assemble(SchedulerSpec("packing", policy="BestFit"), cluster, sharing=GpuShareLedger(cluster))
    fw = packing.framework
    assert fw._pre_filter_owner is not None
    assert Framework(default_profile(), in_tree_registry())._pre_filter_owner is None
    assert {p.name for p in fw.pre_filter_plugins if getattr(p, "pre_filter_from_spec", False)} == {
        "NodeAffinity", "NodePorts", "NodeResourcesFit", "GpuShare",
    }  # fmt: skip
    pods = [
        make_pod("a").gpu(2).node_selector(pool="a").parsed(),
        make_pod("b").requests(cpu="2", memory="1Gi").host_port(8080).parsed(),
        make_pod("c").require([], fields=[("metadata.name", "In", ["n0", "n9"])]).parsed(),
        make_pod("d").require([], fields=[("metadata.name", "In", [])]).parsed(),
    ]
    # hand-derived: every pod skips GpuShare (none asks kubegpu.io/gpu-milli: whole nvidia.com/gpu only);
    # "a" and "c" skip NodePorts (no host port), "b" NodeAffinity (no selector, no affinity); "c" narrows
    # to the nodes its matchFields name; "d"'s empty name set is NodeAffinity's PreFilter rejection
    skips = {
        "a": {"NodePorts", "GpuShare"},
        "b": {"NodeAffinity", "GpuShare"},
        "c": {"NodePorts", "GpuShare"},
    }
    names = {"a": None, "b": None, "c": frozenset({"n0", "n9"})}
    for pod in pods:
        want_state = CycleState()
        want = fw._pre_filter(want_state, pod, cluster)
        if pod.name == "d":
            assert want[1].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and want[1].plugin == "NodeAffinity"
        else:
            assert (
                want[0] == names[pod.name]
                and want[1].is_success
                and want_state.skip_filter == skips[pod.name]
            )
        for copy in (pod, pod, renamed(pod, pod.name + "-copy")):
            got_state = CycleState()
            assert fw.run_pre_filter(got_state, copy, cluster) == want, pod.name
            assert got_state.skip_filter == want_state.skip_filter
            assert got_state.written() == want_state.written()
