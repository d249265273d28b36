"""An Immediate claim of a StorageClass whose provisioner is ``kubernetes.io/no-provisioner`` (the marker of
statically provisioned volumes, pkg/volume/util ``NotSupportedProvisioner``): no provisioner will ever make its
volume, so "check the provisioner" misleads; only a matching PersistentVolume (or another class) helps. Shape of
kubeflow/kubeflow#5082 ("PV provisioner not working": my-first-notebook-0 Pending on "pod has unbound immediate
PersistentVolumeClaims"); the real kube-scheduler's message (1.30.14, 1.33.13, 1.37.2) is in golden/gpu, case
unbound-pvc-gpu-preemption."""

from __future__ import annotations

import copy

from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from tests.conftest import snapshot_of
from tests.realkube.gpu_cases import FIXTURES, load

CASE = load(FIXTURES / "unbound-pvc-gpu-preemption.yaml")
REASON = "pod has unbound immediate PersistentVolumeClaims"


def _fix(objects: tuple[dict, ...]) -> str:  # type: ignore[type-arg]
    snap = snapshot_of(*objects, CASE.pod)
    pod = snap.pod("default/my-notebook-0")
    assert pod is not None
    return next(g.fix for g in explain_pod(Engine(snap), pod).groups if g.reason == REASON)


def test_a_class_without_provisioner_asks_for_a_persistent_volume() -> None:
    assert _fix(CASE.objects).startswith(
        "The claim's StorageClass standard has no provisioner (kubernetes.io/no-provisioner): no volume will be "
        "made for it. Create a PersistentVolume it matches"
    )


def test_a_class_with_a_provisioner_keeps_the_provisioner_advice() -> None:
    objects = copy.deepcopy(CASE.objects)
    next(o for o in objects if o["kind"] == "StorageClass")["provisioner"] = "ebs.csi.aws.com"
    assert _fix(objects).startswith(
        "An Immediate claim must be bound before scheduling: check the provisioner"
    )
