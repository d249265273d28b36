"""PodTopologySpread's advice when the emptiest domain has no node offering the pod's GPUs
(kubernetes/kubernetes#129762: GPU nodes span 2 zones, the other nodes 3; a 3-replica GPU Deployment spread over
zones with DoNotSchedule leaves its third replica Pending, because the GPU-less zone counts as a domain holding 0).
"Free or add capacity there" cannot help: the pod can never land in that zone. Restricting the pod to GPU nodes
makes nodeAffinityPolicy Honor (the default; podtopologyspread/common.go ``matchNodeInclusionPolicies``) leave
the zone out. The real kube-scheduler's refusal (1.30.14, 1.33.13, 1.37.2) is in golden/gpu, case
spread-gpu-zones-honor-taints."""

from __future__ import annotations

import copy
from typing import Any

from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.model import parse
from tests.conftest import scheduler_for, snapshot_of
from tests.realkube.gpu_cases import FIXTURES, load, with_full_gpu

SPREAD = "node(s) didn't match pod topology spread constraints"
CASE = load(FIXTURES / "spread-gpu-zones-honor-taints.yaml")


def _fix(objects: tuple[dict[str, Any], ...], pod: dict[str, Any]) -> str:
    snap = snapshot_of(*objects, pod)
    found = snap.pod("default/" + pod["metadata"]["name"])
    assert found is not None
    exp = explain_pod(Engine(snap), found)
    return next(g.fix for g in exp.groups if g.reason == SPREAD)


def test_a_domain_without_gpu_nodes_is_named_and_restricting_the_pod_is_advised() -> None:
    fix = _fix(CASE.objects, CASE.pod)
    assert fix.startswith(
        "topology.kubernetes.io/zone us-east-1c hold(s) the fewest (0), yet no node there has nvidia.com/gpu"
    )
    assert "Restrict the pod to nodes with nvidia.com/gpu" in fix and "free or add capacity" not in fix


def test_restricting_the_pod_to_gpu_nodes_lets_it_schedule() -> None:
    pod = copy.deepcopy(CASE.pod)
    pod["spec"]["nodeSelector"] = {"node.kubernetes.io/instance-type": "g5.12xlarge"}
    assert scheduler_for(*CASE.objects).schedule_one(parse.parse_pod(pod, "case")).scheduled


def test_a_domain_with_a_gpu_node_keeps_the_capacity_advice() -> None:
    objects = with_full_gpu(CASE.objects, "regular-c")
    assert _fix(objects, CASE.pod).startswith(
        "topology.kubernetes.io/zone us-east-1c hold(s) the fewest (0): free or add capacity there"
    )
