"""DynamicResources' Score (1.35+): prefer the node where a prioritized-list request got an earlier
alternative. Pinned to kubernetes v1.35.4 / v1.37.2 ``pkg/scheduler/framework/plugins/dynamicresources``
``computeScore`` (8 − i per allocated ``firstAvailable`` subrequest, ``FirstAvailableDeviceRequestMaxSize``
= 8), ``NormalizeScore`` = ``helper.DefaultNormalizeScore(100, false)``, and
``apis/config/v1/default_plugins.go`` (weight 2 from 1.35; no Score in 1.34)."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.assembly import SchedulerSpec, assemble
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import CycleState
from kubegpu.scheduler.plugins.dynamic_resources import DynamicResources
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.scheduler.status import Code
from tests.dra import objects as o

TWO_ELSE_ONE = {"name": "gpu", "firstAvailable": [
    {"name": "two", "deviceClassName": "gpu.nvidia.com", "count": 2},
    {"name": "one", "deviceClassName": "gpu.nvidia.com", "count": 1},
]}  # fmt: skip


def scheduler(version: str, *objs: dict[str, Any]) -> tuple[Scheduler, Any]:
    snap = build_snapshot([("t", x) for x in objs])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    spec = SchedulerSpec("default", kube_version=version, dra=snap.dra)
    return assemble(spec, ClusterState(snap.nodes, snap.pods)), snap


def objects() -> list[dict[str, Any]]:
    # n1 has 1 GPU (only the second alternative fits), n2 has 2 (the first does)
    return [*o.gpu_classes(), *o.gpu_node("n1", 1), *o.gpu_node("n2", 2), o.claim("c", TWO_ELSE_ONE),
            o.pod("p", ("gpu", "c", ""))]  # fmt: skip


def test_the_earlier_alternative_scores_higher() -> None:
    s, snap = scheduler("1.35", *objects())
    pod = snap.pod("default/p")
    fw = s.framework
    plugin = next(p for p in fw.plugins if isinstance(p, DynamicResources))
    assert fw.weights[plugin.name] == 2
    state = CycleState()
    fw.run_pre_filter(state, pod, s.cluster)
    for i in range(len(s.cluster)):
        assert plugin.filter(state, pod, s.cluster.view(i)).code == Code.SUCCESS
    rows = np.arange(len(s.cluster), dtype=np.intp)
    assert plugin.pre_score(state, pod, s.cluster, rows).code == Code.SUCCESS
    raw = np.array([plugin.score(state, pod, s.cluster.view(i)) for i in rows], dtype=np.int64)
    names = [s.cluster.nodes[i].name for i in rows]
    # n1: "one" is the 2nd alternative → 8 − 1 = 7; n2: "two", the 1st → 8; normalized 100·7//8 = 87, 100
    assert dict(zip(names, raw.tolist(), strict=True)) == {"n1": 7, "n2": 8}
    assert dict(zip(names, plugin.normalize(state, pod, raw).tolist(), strict=True)) == {"n1": 87, "n2": 100}


def test_no_score_in_1_34_and_none_for_pods_without_claims() -> None:
    s, _ = scheduler("1.34", *objects())
    assert s.framework.weights["DynamicResources"] == 0
    assert "DynamicResources" not in [p.name for p in s.framework.score_plugins]
    s, snap = scheduler("1.37", *o.gpu_classes(), *o.gpu_node("n1", 1), o.pod("q"))
    state = CycleState()
    pod = snap.pod("default/q")
    s.framework.run_pre_filter(state, pod, s.cluster)
    plugin = next(p for p in s.framework.plugins if isinstance(p, DynamicResources))
    rows = np.arange(len(s.cluster), dtype=np.intp)
    assert plugin.pre_score(state, pod, s.cluster, rows).code == Code.SKIP
