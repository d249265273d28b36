"""VolumeBinding's Score (KEP-4049 StorageCapacityScoring), hand-derived from kubernetes
``pkg/scheduler/framework/plugins/volumebinding/{volume_binding.go,scorer.go}``, ``plugins/helper/shape_score.go``
(BuildBrokenLinearFunction), ``apis/config/v1/defaults.go`` (SetDefaults_VolumeBindingArgs: shape 0 → 10,
100 → 0 when the gate is on) and ``pkg/features/kube_features.go`` (StorageCapacityScoring: alpha, off in
1.33–1.36; beta, on by default in 1.37), all read from the Go module cache (v1.32.13–v1.37.2).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubegpu.errors import ConfigError
from kubegpu.model import parse
from kubegpu.scheduler import resource_allocation as ra
from kubegpu.scheduler.kube_config import parse_scheduler_config
from kubegpu.testing.builders import make_node, make_pod
from tests.conftest import scheduler_for
from tests.realkube.volume_cases import claim, storage_class, uses, volume
from tests.volume_scoring import volume_scores

CPU = {"cpu": "4", "memory": "8Gi"}
LOCAL = "kubernetes.io/no-provisioner"


def cluster(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    """Nodes a and b, each with one local Available PV of class ``local`` (a 100Gi, b 20Gi), a 10Gi
    WaitForFirstConsumer claim ``data``."""
    return [make_node("a").capacity(**CPU).label("disk", "ssd-a").obj(),
            make_node("b").capacity(**CPU).label("disk", "ssd-b").obj(),
            storage_class("local", LOCAL, "WaitForFirstConsumer"),
            volume("pv-a", "local", "100Gi", disk="ssd-a"), volume("pv-b", "local", "20Gi", disk="ssd-b"),
            claim("data", "local", "10Gi"), *extra]  # fmt: skip


def test_default_shape_prefers_the_emptier_pv_in_1_37() -> None:
    """a: 10Gi of 100Gi → utilization 10·100/100 = 10 → 100 + (0 − 100)·10/100 = 90; b: 10 of 20 → 50 →
    50. Weight 1 (default_plugins.go lists VolumeBinding without a weight; getValidScoreWeights makes 0 → 1)."""
    pod = uses(make_pod("p").obj(), "data")
    assert volume_scores(cluster(), pod, "1.37") == {"a": 90, "b": 50}


@pytest.mark.parametrize("version", ["1.32", "1.33", "1.36"])
def test_no_volume_score_before_1_37(version: str) -> None:
    """The gate is off (1.33–1.36 StorageCapacityScoring alpha; 1.32 VolumeCapacityPriority alpha): the
    plugin has no scorer and returns 0 for every node."""
    assert volume_scores(cluster(), uses(make_pod("p").obj(), "data"), version) == {}


def test_classes_are_averaged_and_rounded() -> None:
    """Two claims in two classes on node a: local 10Gi of 100Gi → 90; fast 5Gi of a 9Gi PV → 5·100/9 = 55
    (integer) → 45. Mean (90 + 45)/2 = 67.5 → math.Round 68. Node b has no fast PV: infeasible, not scored."""
    extra = [storage_class("fast", LOCAL, "WaitForFirstConsumer"), volume("pv-f", "fast", "9Gi", disk="ssd-a"),
             claim("more", "fast", "5Gi")]  # fmt: skip
    pod = uses(make_pod("p").obj(), "data", "more")
    s = scheduler_for(*cluster(*extra), kube_version="1.37")
    result = s.schedule_one(parse.parse_pod(pod, "test"), assume=False)
    assert result.node == "a"
    assert volume_scores(cluster(*extra), pod, "1.37")["a"] == 68


def test_custom_shape_from_the_scheduler_config() -> None:
    """shape [(0, 0), (100, 10)] (×10: 0 → 0, 100 → 100) prefers the fuller PV: a 10, b 50."""
    args: dict[str, Any] = {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"pluginConfig": [{"name": "VolumeBinding", "args": args}]}]}  # fmt: skip
    profile = parse_scheduler_config(doc, "cfg.yaml", "1.37").profiles[0]
    assert profile.unmodelled == ()
    assert volume_scores(cluster(), uses(make_pod("p").obj(), "data"), "1.37", profile) == {"a": 10, "b": 50}
    before = parse_scheduler_config(doc, "cfg.yaml", "1.36").profiles[0]
    assert any("StorageCapacityScoring is off by default in 1.36" in n for n in before.unmodelled)
    args["shape"] = [{"utilization": 50}, {"utilization": 10}]
    with pytest.raises(ConfigError, match=r"shape\[1\]\.utilization: .*sorted in increasing order"):
        parse_scheduler_config(doc, "cfg.yaml", "1.37")


def test_an_empty_shape_is_the_default_shape() -> None:
    """``shape: []`` is defaulted, not refused: SetDefaults_VolumeBindingArgs (apis/config/v1/defaults.go,
    v1.37.2) replaces an empty shape with 0 → 10, 100 → 0 when the gate is on, before validation sees it; so
    the scores are the default shape's (the emptier PV preferred, as in the 1.37 default test above)."""
    args: dict[str, Any] = {"shape": []}
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"pluginConfig": [{"name": "VolumeBinding", "args": args}]}]}  # fmt: skip
    profile = parse_scheduler_config(doc, "cfg.yaml", "1.37").profiles[0]
    pod = uses(make_pod("p").obj(), "data")
    assert volume_scores(cluster(), pod, "1.37", profile) == {"a": 90, "b": 50}  # as the default-shape test


def test_broken_linear_truncates_toward_zero() -> None:
    """BuildBrokenLinearFunction in Go int64: (0 − 100)·(10 − 0)/30 = −33.3 truncates to −33 → 67 (floor
    division would give 66); below the first point its score, above the last the last score."""
    shape = ((0, 100), (30, 0))
    assert ra.broken_linear(shape)(np.array([10, 100])).tolist() == [67, 0]
    assert ra.broken_linear(((20, 50), (100, 0)))(np.array([5])).tolist() == [50]
