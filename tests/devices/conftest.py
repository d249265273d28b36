"""Readings the device-model tests use: the real shared H200 reading and the generated multi-GPU ones.

Inventories are frozen, so session-scoped ones are safe to share between tests and Hypothesis examples.
"""

from __future__ import annotations

import pytest
from device_readings import GENERATED, SHARED_H200

from kubegpu.devices import NodeInventory, Topology, load_reading, topology_from_inventory


@pytest.fixture
def h200() -> NodeInventory:
    """Real reading of one H200 (driver 580.159.04, MIG off), shared with the other kubegpu tests."""
    return load_reading(SHARED_H200 / "nvml.json")


@pytest.fixture(scope="session")
def dgx1() -> NodeInventory:
    return load_reading(GENERATED / "dgx1-8xv100.json")


@pytest.fixture(scope="session")
def dgx1_topology(dgx1: NodeInventory) -> Topology:
    return topology_from_inventory(dgx1)


@pytest.fixture
def hgx() -> NodeInventory:
    return load_reading(GENERATED / "hgx-8xh100-nvswitch.json")


@pytest.fixture
def pcie4() -> NodeInventory:
    return load_reading(GENERATED / "pcie-4gpu-2socket.json")
