"""Shared test helpers: build a scheduler over builder-made objects, and locate ../shared."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubegpu.model.snapshot import ClusterSnapshot, build_snapshot
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import Framework, Profile
from kubegpu.scheduler.plugins.volume_objects import with_volumes
from kubegpu.scheduler.registry import default_profile, in_tree_registry
from kubegpu.scheduler.schedule_one import Scheduler

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def snapshot_of(*objects: dict[str, Any]) -> ClusterSnapshot:
    snap = build_snapshot([("test", o) for o in objects])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    return snap


def scheduler_for(
    *objects: dict[str, Any], profile: Profile | None = None, seed: int = 0, kube_version: str | None = None
) -> Scheduler:
    """A scheduler over the objects: ``profile``, else kube-scheduler's default profile of ``kube_version``
    (None: the newest supported minor)."""
    snap = snapshot_of(*objects)
    cluster = ClusterState(snap.nodes, snap.pods)
    chosen = with_volumes(profile or default_profile(kube_version=kube_version), snap.volumes)
    return Scheduler(Framework(chosen, in_tree_registry(), snap.pdbs), cluster, seed=seed)


@pytest.fixture
def shared() -> Path:
    if not SHARED.exists():
        pytest.fail(f"{SHARED} is missing: tests read the project's shared data beside the checkout")
    return SHARED
