"""TaintToleration, pinned to kube-scheduler 1.34 plugins/tainttoleration and v1 Toleration.ToleratesTaint."""

from __future__ import annotations

import numpy as np
import pytest

from kubegpu.model.objects import Taint, Toleration
from kubegpu.scheduler.framework import default_normalize
from kubegpu.scheduler.plugins.taint_toleration import count_intolerable_prefer_no_schedule, first_untolerated
from kubegpu.testing.builders import make_node, make_pod
from tests.conftest import scheduler_for

GPU = Taint("nvidia.com/gpu", "present", "NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        (Toleration("nvidia.com/gpu", "Equal", "present", "NoSchedule"), GPU, True),
        (Toleration("nvidia.com/gpu", "Equal", "absent", "NoSchedule"), GPU, False),
        (Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"), GPU, True),
        (Toleration("nvidia.com/gpu", "Exists", "", ""), GPU, True),
        (Toleration("nvidia.com/gpu", "Exists", "", "NoExecute"), GPU, False),
        (Toleration("", "Exists", "", ""), GPU, True),
        (Toleration("", "Exists", "", "NoSchedule"), GPU, True),
        (Toleration("other", "Exists", "", ""), GPU, False),
        (Toleration("nvidia.com/gpu", "Equal", "present", "PreferNoSchedule"), GPU, False),
        (Toleration("k", "Equal", "", ""), Taint("k", "", "NoExecute"), True),
        (Toleration("k", "Equal", "v", ""), Taint("k", "", "NoExecute"), False),
    ],
    ids=[
        "equal key value effect",
        "equal with another value",
        "exists with effect",
        "exists any effect",
        "exists wrong effect",
        "empty key exists tolerates everything",
        "empty key exists with effect",
        "another key",
        "effect must match exactly",
        "equal empty value",
        "equal value vs empty taint value",
    ],
)
def test_toleration_matches_taint(toleration: Toleration, taint: Taint, tolerated: bool) -> None:
    assert toleration.tolerates(taint) is tolerated


def test_only_no_schedule_and_no_execute_taints_filter_and_the_first_untolerated_is_reported() -> None:
    taints = (
        Taint("soft", "", "PreferNoSchedule"),
        Taint("a", "1", "NoExecute"),
        Taint("b", "2", "NoSchedule"),
    )
    assert first_untolerated(taints, ()) == taints[1]
    assert first_untolerated(taints, (Toleration("a", "Exists"),)) == taints[2]
    assert first_untolerated(taints, (Toleration("", "Exists"),)) is None


def test_filter_message_shows_key_and_value_not_effect() -> None:
    """Up to 1.33: errReason = fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value)
    (the text kubernetes issue #116133 quotes from a real cluster: `{node-role.kubernetes.io/control-plane: }`)."""
    objs = (
        make_node("cp").taint("node-role.kubernetes.io/control-plane").obj(),
        make_node("gpu").gpus(8).taint("nvidia.com/gpu", "present").obj(),
    )
    result = scheduler_for(*objs, kube_version="1.33").schedule_one(make_pod("p").parsed(), preempt=False)
    assert result.message == (
        "0/2 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "1 node(s) had untolerated taint {nvidia.com/gpu: present}."
    )


def test_from_1_34_every_taint_is_one_text_and_counts_merge() -> None:
    """kubernetes PR #134740 (1.35; cherry-pick #135023 to 1.34): "node(s) had untolerated taint(s)" for
    every taint, so different taints add up to one count (the real 1.37.2 scheduler printed "3 node(s) had
    untolerated taint(s)" for three nodes with two different taints: tests/realkube/golden/1.37.2.json)."""
    objs = (
        make_node("cp").taint("node-role.kubernetes.io/control-plane").obj(),
        make_node("gpu").gpus(8).taint("nvidia.com/gpu", "present").obj(),
    )
    for version in ("1.34", "1.37"):
        result = scheduler_for(*objs, kube_version=version).schedule_one(
            make_pod("p").parsed(), preempt=False
        )
        assert result.message == "0/2 nodes are available: 2 node(s) had untolerated taint(s)."


def test_a_toleration_allows_but_does_not_attract() -> None:
    """R5.3/R17.4: a pod tolerating the GPU taint but requesting no GPU is as happy on a plain node."""
    s = scheduler_for(make_node("plain").obj())
    result = s.schedule_one(make_pod("p").tolerate("nvidia.com/gpu", "present", "NoSchedule").parsed())
    assert result.node == "plain"


def test_prefer_no_schedule_score_counts_untolerated_and_reverses() -> None:
    taints = (
        Taint("a", "1", "PreferNoSchedule"),
        Taint("b", "2", "PreferNoSchedule"),
        Taint("c", "", "NoSchedule"),
    )
    assert count_intolerable_prefer_no_schedule(taints, ()) == 2
    # a NoSchedule-only toleration does not count for scoring; an empty-effect one does
    assert count_intolerable_prefer_no_schedule(taints, (Toleration("a", "Exists", "", "NoSchedule"),)) == 2
    assert count_intolerable_prefer_no_schedule(taints, (Toleration("a", "Exists"),)) == 1
    # DefaultNormalizeScore(100, reverse=true): [2, 1, 0] → [0, 50, 100]
    assert default_normalize(np.array([2, 1, 0]), reverse=True).tolist() == [0, 50, 100]
    assert default_normalize(np.array([0, 0]), reverse=True).tolist() == [100, 100]


def test_scheduler_prefers_the_node_without_prefer_no_schedule_taints() -> None:
    s = scheduler_for(
        make_node("soft").gpus(8).taint("spot", "true", "PreferNoSchedule").obj(),
        make_node("clean").gpus(8).obj(),
    )
    assert s.schedule_one(make_pod("p").gpu(1).parsed()).node == "clean"
