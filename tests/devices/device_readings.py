"""Paths and builders shared by the device-model tests (a plain module: conftest names are not importable
reliably once several test directories have one)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from kubegpu.devices import MigDevice, NodeInventory

REPO = Path(__file__).parents[2]
SHARED_H200 = REPO / ".." / "shared" / "fixtures" / "nodes" / "h200-1gpu"
GENERATED = REPO / "tests" / "fixtures" / "nodes"

# The time-slicing example of the NVIDIA device plugin README (sharing.timeSlicing, replicas 10).
README_TIME_SLICING = """
version: v1
flags:
  migStrategy: none
sharing:
  timeSlicing:
    renameByDefault: true
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 10
"""


def mig_node(inv: NodeInventory, profiles: list[str]) -> NodeInventory:
    """``inv``'s first GPU with MIG enabled and one MIG device per profile (16 GiB each, GI ids from 1)."""
    gpu = inv.devices[0]
    migs = tuple(
        MigDevice(index=i, uuid=f"MIG-{i:08x}-0000-4000-8000-000000000000", profile=p, gi_id=i + 1, ci_id=0,
                  memory_total=16 * 1024**3)
        for i, p in enumerate(profiles)
    )  # fmt: skip
    return dataclasses.replace(inv, devices=(dataclasses.replace(gpu, mig_enabled=True, mig_devices=migs),))
