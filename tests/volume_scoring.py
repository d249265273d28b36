"""VolumeBinding's score per node for one pod, as the scheduler's framework computes it: for the tests of
KEP-4049 StorageCapacityScoring (test_volume_score.py, test_volume_capacity.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubegpu.model import parse
from kubegpu.scheduler.framework import CycleState
from kubegpu.scheduler.plugins import names
from tests.conftest import scheduler_for


def volume_scores(
    objects: list[dict[str, Any]], pod: dict[str, Any], version: str, profile: Any = None
) -> dict[str, int]:
    s = scheduler_for(*objects, kube_version=version, profile=profile)
    p = parse.parse_pod(pod, "test")
    state = CycleState()
    s.framework.run_pre_filter(state, p, s.cluster)
    rows = np.arange(len(s.cluster), dtype=np.intp)
    _, parts = s.framework.run_scores(state, p, s.cluster, rows)
    got = parts.get(names.VOLUME_BINDING)
    return (
        {} if got is None else {s.cluster.nodes[i].name: v for i, v in zip(rows, got.tolist(), strict=True)}
    )
