"""A bound volume's node affinity where none of the nodes it allows has the pod's GPUs (opendatahub-io/odh-manifests
#259: the notebook's EBS volume in one availability zone, the GPU node in another). "Free one of those nodes"
cannot help there: the step is a GPU node in the volume's zone or the data moved. The real kube-scheduler's refusal
("node(s) had volume node affinity conflict" to 1.32, "node(s) didn't match PersistentVolume's node affinity" from
1.33, kubernetes PR #129887) is recorded in golden/gpu, case pv-zone-gpu-node."""

from __future__ import annotations

from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from tests.conftest import snapshot_of
from tests.realkube.gpu_cases import FIXTURES, load, with_full_gpu

CASE = load(FIXTURES / "pv-zone-gpu-node.yaml")
REASON = "node(s) didn't match PersistentVolume's node affinity"


def _fix(*objects: dict) -> str:  # type: ignore[type-arg]
    snap = snapshot_of(*objects, CASE.pod)
    pod = snap.pod("default/jupyter-nb-alice-0")
    assert pod is not None
    return next(g.fix for g in explain_pod(Engine(snap), pod).groups if g.reason == REASON)


def test_no_gpu_node_in_the_volumes_zone_is_said() -> None:
    fix = _fix(*CASE.objects)
    assert "none of them has nvidia.com/gpu: add a node with it there, or move the data" in fix
    assert "free one of those nodes" not in fix
    assert fix.endswith("a bound CSI volume stays in its topology (a zonal disk in its zone).")


def test_a_gpu_node_in_the_volumes_zone_keeps_the_free_advice() -> None:
    objects = with_full_gpu(CASE.objects, "cpu-1a-0")
    assert "free one of those nodes (taints, resources) or move the data" in _fix(*objects)
