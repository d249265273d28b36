"""Pod-level ``spec.resources`` (KEP-2837) count only where the release has PodLevelResources: beta and on by default
from 1.34 (pkg/features/kube_features.go v1.34.4). The 1.32-1.33 API server drops the field on create
(pkg/api/pod/util.go ``dropDisabledPodLevelResources``, v1.33.13) and their scheduler skips it
(pkg/scheduler/framework/types.go ``SkipPodLevelResources: !podLevelResourcesEnabled``, v1.33.13); 1.30-1.31 have
no such field. The real verdicts on the case below (golden/gpu, pod-level-resources-gpu): bound on 1.30.14 and
1.33.13, "0/1 nodes are available: 1 Insufficient cpu. …" on 1.37.2."""

from __future__ import annotations

import pytest

from kubegpu.model import parse
from tests.conftest import scheduler_for
from tests.realkube.gpu_cases import FIXTURES, load

CASE = load(FIXTURES / "pod-level-resources-gpu.yaml")


@pytest.mark.parametrize(
    ("minor", "fits"), [("1.30", True), ("1.33", True), ("1.34", False), ("1.37", False)]
)
def test_a_manifests_pod_level_cpu_counts_from_1_34(minor: str, fits: bool) -> None:
    result = scheduler_for(*CASE.objects, kube_version=minor).schedule_one(parse.parse_pod(CASE.pod, "case"))
    assert result.scheduled is fits
    if not fits:
        assert result.message.startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_a_stored_pod_with_the_field_was_created_with_the_gate_on_and_counts_on_1_33() -> None:
    """The 1.33 API server keeps spec.resources only with PodLevelResources on (pkg/api/pod/util.go
    dropDisabledPodLevelResources, v1.33.13), set cluster-wide: a pod it returned with the field counts it."""
    stored = {**CASE.pod, "metadata": {**CASE.pod["metadata"], "uid": "6f1d2c3b-0a9e-4e3f-8b7a-1c2d3e4f5a6b"}}
    result = scheduler_for(*CASE.objects, kube_version="1.33").schedule_one(parse.parse_pod(stored, "case"))
    assert not result.scheduled
    assert result.message.startswith("0/1 nodes are available: 1 Insufficient cpu.")


@pytest.mark.parametrize(("minor", "said"), [("1.33", True), ("1.34", False)])
def test_explain_says_a_manifests_pod_level_resources_are_left_out_before_1_34(
    minor: str, said: bool
) -> None:
    from kubegpu.explain.engine import Engine
    from kubegpu.explain.pending import explain_pod
    from tests.conftest import snapshot_of

    snap = snapshot_of(*CASE.objects, CASE.pod)
    snap.kube_version = minor
    pod = next(p for p in snap.pods if not p.node_name)
    notes = explain_pod(Engine(snap), pod).notes
    assert any("pod-level spec.resources" in n and "PodLevelResources" in n for n in notes) is said
