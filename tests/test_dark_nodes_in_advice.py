"""A Pending GPU pod refused on nodes whose device plugin registered no GPU: the advice says their GPUs are
missing, not short, and whether the pod would fit there once registered.

The GPU Operator's and the device plugin's DaemonSets often fail to reach a node (a taint, a selector on
labels Node Feature Discovery sets, a crashing driver container): the node keeps its GPU Feature Discovery
labels (``nvidia.com/gpu.present``, ``nvidia.com/gpu.count``: NVIDIA/k8s-device-plugin v0.17.0
docs/gpu-feature-discovery/README.md, "Generated Labels") but has no ``nvidia.com/gpu`` in
``status.capacity`` (kubelet's device manager only lists resources a plugin registered,
pkg/kubelet/cm/devicemanager/manager.go GetCapacity). kube-scheduler then refuses it as
``Insufficient nvidia.com/gpu`` like a full node (noderesources/fit.go), so on a fleet where it misses a few
hundred nodes the FailedScheduling message reads as fragmentation. Found on the issue-25 5,000-node fleet
with the plugin gone from 300 nodes: the advice was "free devices on one node", with 150 empty dark nodes
that would each take the 8-GPU pod.
"""

from __future__ import annotations

from typing import Any

from kubegpu.model.snapshot import build_snapshot
from kubegpu.testing.builders import make_node, make_pod
from tests.summaries import summary_of

COUNT = "nvidia.com/gpu.count"


def _objects(dark_count: str | None) -> list[Any]:
    """Two nodes of 8 GPUs, 4 taken on each (4 free on each: 8 in all, scattered); one node labelled as a GPU
    node by GFD whose plugin registered nothing; a Pending 8-GPU pod."""
    objs = [make_node(f"gpu-{i}").gpus(8).obj() for i in range(2)]
    objs += [make_pod(f"half-{i}").ns("ops").gpu(4).on(f"gpu-{i}").obj() for i in range(2)]
    dark = make_node("dark-0").label("nvidia.com/gpu.present", "true")
    if dark_count is not None:
        dark.label(COUNT, dark_count)
    objs.append(dark.obj())
    objs.append(make_pod("train").ns("team-a").gpu(8).obj())
    return objs


def _fix(dark_count: str | None) -> str:
    snap = build_snapshot([("hand-built.yaml", o) for o in _objects(dark_count)])
    assert not snap.errors
    (group,) = [g for g in summary_of(snap).groups if "team-a/train" in g.pods]
    assert group.cause == "Insufficient nvidia.com/gpu"
    return group.fix


def test_a_dark_node_with_enough_gpus_by_its_label_would_take_the_pod() -> None:
    fix = _fix("8")
    assert "no single one has 8: the free devices are scattered" in fix  # the registered GPUs, as before
    assert "1 of these nodes is a GPU node whose device plugin registered no nvidia.com/gpu" in fix
    assert "(dark-0; " in fix
    assert "1 of them has at least 8 by their nvidia.com/gpu.count label: the pod would fit there" in fix
    assert "Repair the device plugin there before adding capacity" in fix
    # its own fix, not the fragmentation one (which would have it move single-GPU pods)
    assert "wait for or move single-GPU pods" not in fix


def test_a_dark_node_too_small_by_its_label_is_said_not_to_take_the_pod() -> None:
    fix = _fix("4")
    assert "none has 8 by its nvidia.com/gpu.count label, so they would not take this pod" in fix


def test_a_dark_node_without_a_count_label_says_so() -> None:
    fix = _fix(None)
    assert "their labels do not say how many GPUs they have (nvidia.com/gpu.count absent)" in fix
