"""Host selection among equally scored nodes: upstream picks at random (selectHost's reservoir sampling);
the FGD paper's simulator takes the first in node order. Both are reachable, the default is upstream's."""

from __future__ import annotations

import pytest

from kubegpu.errors import ConfigError
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import Framework
from kubegpu.scheduler.registry import default_profile, in_tree_registry
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.testing.builders import make_node, make_pod


def scheduler(tie_break: str, seed: int) -> Scheduler:
    snap = build_snapshot([("t", make_node(f"n{i}").gpus(8).obj()) for i in range(8)])
    return Scheduler(
        Framework(default_profile(), in_tree_registry()), ClusterState(snap.nodes), seed, tie_break=tie_break
    )


def test_first_tie_break_takes_the_first_node_in_order() -> None:
    pod = make_pod("p").gpu(1).parsed()
    assert {scheduler("first", seed).schedule_one(pod, assume=False).node for seed in range(10)} == {"n0"}


def test_random_tie_break_spreads_over_equal_nodes() -> None:
    pod = make_pod("p").gpu(1).parsed()
    assert len({scheduler("random", seed).schedule_one(pod, assume=False).node for seed in range(10)}) > 1


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


def test_unschedulable_plugins_name_the_filters_that_rejected_nodes() -> None:
    """Upstream ``Diagnosis.UnschedulablePlugins`` (pkg/scheduler/schedule_one.go findNodesThatFitPod: the
    plugins of the rejected nodes' statuses). Hand-built: n0 tainted (TaintToleration), n1 with 2 GPUs
    (NodeResourcesFit, for a 4-GPU pod), n2 without the label the pod's nodeSelector asks (NodeAffinity)."""
    nodes = [
        make_node("n0").gpus(8).label("pool", "a").taint("dedicated", "x").obj(),
        make_node("n1").gpus(2).label("pool", "a").obj(),
        make_node("n2").gpus(8).obj(),
    ]
    snap = build_snapshot([("t", n) for n in nodes])
    sched = Scheduler(Framework(default_profile(), in_tree_registry()), ClusterState(snap.nodes), 0)
    result = sched.schedule_one(make_pod("p").gpu(4).node_selector(pool="a").parsed(), preempt=False)
    assert result.diagnosis is not None
    assert result.diagnosis.unschedulable_plugins == {"TaintToleration", "NodeResourcesFit", "NodeAffinity"}


def test_signs_are_kept_on_a_pod_only_when_every_signing_filter_reads_the_spec_alone() -> None:
    """``Framework.signed_prefix`` keeps a pod's signs (``Pod.derived``) when every signing filter says
    ``sign_from_spec``; the kept value is matched by the framework's own owner object, so another framework
    (or a pickled copy in another process) computes afresh; a profile with InterPodAffinity (its sign reads
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
    assert other._sign_owner not in vars(copy)["_derived"]  # an unpickled owner matches no framework


def test_a_pod_keeps_a_bounded_number_of_derived_values() -> None:
    """``Pod.derived``: one value per owner, recomputed for a new owner, at most ``_DERIVED_OWNERS`` kept
    (frameworks come and go in a long-lived process; a pod must not hold all of them)."""
    from kubegpu.model.objects import _DERIVED_OWNERS

    pod = make_pod("p").gpu(1).parsed()
    calls: list[int] = []
    owners = [object() for _ in range(_DERIVED_OWNERS + 3)]
    for i, owner in enumerate(owners):
        assert pod.derived(owner, lambda p, i=i: calls.append(i) or i) == i
        assert pod.derived(owner, lambda p: -1) == i  # kept: not computed again
    assert calls == list(range(len(owners)))
    assert len(vars(pod)["_derived"]) <= _DERIVED_OWNERS
