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
