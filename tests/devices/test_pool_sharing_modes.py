"""The finding for a pool whose nodes share GPUs in different modes (issue 26 item 5).

Labels are GFD's ``nvidia.com/gpu.sharing-strategy`` (k8s-device-plugin v0.20.0 ``internal/lm/resource.go``
``baseLabeler``: none / time-slicing / mps) and the per-node config label ``nvidia.com/device-plugin.config``
(k8s-device-plugin v0.20.0 README, "Updating Per-Node Configuration With a Node Label").
"""

from __future__ import annotations

from kubegpu.explain.findings import Finding, find
from kubegpu.model.objects import Node
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.testing.builders import make_node

POOL = "accelerator.example.com/pool"


def _node(name: str, pool: str, mode: str | None, config: str = "") -> Node:
    b = make_node(name).gpus(4).label(POOL, pool)
    if mode is not None:
        b = b.label("nvidia.com/gpu.sharing-strategy", mode)
    if config:
        b = b.label("nvidia.com/device-plugin.config", config)
    return b.parsed()


def _sharing(snapshot: ClusterSnapshot) -> list[Finding]:
    return [f for f in find(snapshot) if "sharing modes" in f.title]


def test_mixed_pool_is_found_with_the_fix() -> None:
    snap = ClusterSnapshot(nodes=[
        _node("a", "train", "time-slicing", "ts-4"), _node("b", "train", "time-slicing", "ts-4"),
        _node("c", "train", "mps", "mps-2"), _node("d", "infer", "mps"),
    ])  # fmt: skip
    (f,) = _sharing(snap)
    assert f.title == f"pool {POOL}=train mixes GPU sharing modes"
    assert f.objects == ["node/c", "node/a", "node/b"]
    assert "mps: c; time-slicing: a, b" in f.detail
    # two of three nodes use time-slicing under config "ts-4": the odd node is moved onto it
    assert f.commands[1:] == ["kubectl label node c nvidia.com/device-plugin.config=ts-4 --overwrite"]


def test_exclusive_and_shared_nodes_mix_too() -> None:
    snap = ClusterSnapshot(nodes=[_node("a", "p", "none"), _node("b", "p", "mps")])
    (f,) = _sharing(snap)
    assert "mps: b; none: a" in f.detail
    # a tie goes to the mode first in name order ("mps"), and no config name is known: a placeholder
    assert f.commands[1:] == [
        "kubectl label node a nvidia.com/device-plugin.config=<config-name> --overwrite"
    ]


def test_one_mode_per_pool_and_unlabelled_nodes_give_nothing() -> None:
    snap = ClusterSnapshot(nodes=[
        _node("a", "p", "mps"), _node("b", "p", "mps"), _node("c", "p", None), _node("d", "q", "none"),
    ])  # fmt: skip
    assert _sharing(snap) == []
