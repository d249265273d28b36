"""``diagnose``'s GPU totals count GPU resources only (``model.resources.is_gpu``): NVIDIA Network
Operator's SR-IOV / RDMA device plugins also advertise ``nvidia.com/*`` names (``nvidia.com/hostdev``,
``nvidia.com/rdma_shared_device_a`` in Mellanox/network-operator's example NicClusterPolicy,
example/crs/mellanox.com_v1alpha1_nicclusterpolicy_cr.yaml), and those NICs are no GPUs.

Expected by hand: one node with 8 nvidia.com/gpu and 4 nvidia.com/hostdev → totals hold only
nvidia.com/gpu with capacity 8.
"""

from __future__ import annotations

from kubegpu.explain.diagnose import diagnose
from kubegpu.explain.engine import Engine
from kubegpu.model.snapshot import build_snapshot
from kubegpu.testing.builders import make_node


def test_network_operator_nics_are_not_gpu_totals() -> None:
    node = make_node("n1").gpus(8).capacity(**{"nvidia.com/hostdev": 4}).obj()
    snap = build_snapshot([("hand-built.yaml", node)])
    assert not snap.errors
    totals = diagnose(Engine(snap)).totals
    assert totals == {"nvidia.com/gpu": {"capacity": 8, "allocatable": 8, "requested": 0}}
