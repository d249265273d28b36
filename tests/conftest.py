"""Shared test helpers: build a scheduler over builder-made objects, and locate ../shared."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from kubegpu.model.default_spread import SpreadOwners
from kubegpu.model.snapshot import ClusterSnapshot, build_snapshot
from kubegpu.scheduler.assembly import SchedulerSpec, assemble
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import Profile
from kubegpu.scheduler.schedule_one import Scheduler

REPO = Path(__file__).resolve().parents[1]
# The table view honours COLUMNS (also when piped): a CI runner's own COLUMNS must not reflow the output the
# tests read; tests/test_narrow_output.py sets it where width is what it tests.
os.environ.pop("COLUMNS", None)
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
    # the snapshot's DRA objects reach DynamicResources (and NodeResourcesFit's KEP-5004 delegation) through
    # the handle, as every face builds it
    spec = SchedulerSpec(
        profile or "default",
        kube_version=kube_version,
        seed=seed,
        pdbs=tuple(snap.pdbs),
        dra=snap.dra,
        volumes=snap.volumes,
        spread_owners=SpreadOwners.of(snap.records),
    )
    return assemble(spec, ClusterState(snap.nodes, snap.pods))


@pytest.fixture
def shared() -> Path:
    if not SHARED.exists():
        pytest.fail(f"{SHARED} is missing: tests read the project's shared data beside the checkout")
    return SHARED
