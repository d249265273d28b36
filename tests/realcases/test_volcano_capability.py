"""A Volcano job asking more than its Queue's spec.capability never runs: the proportion plugin allocates a task
only within the queue's deserved share, capped by realCapability <= spec.capability, and enqueues a gang only when
its minResources fit realCapability (volcano-sh/volcano @ed72c7c81, v1.16.0-alpha.1-42:
pkg/scheduler/plugins/proportion/proportion.go queueAllocatable, JobEnqueueableFn). The fixture is
volcano-sh/volcano#1331 (+#1330): capability nvidia.com/gtx-1080-ti 3, tasks of 2 and 5; kubegpu said only
"handled by volcano"."""

from __future__ import annotations

from pathlib import Path

from kubegpu.explain.volcano_queue import OVER_CAPABILITY, over_capability
from kubegpu.sources import load_files
from tests.realcases.cases import HERE, diagnosed
from tests.walks import CountedList

FIXTURE = HERE / "volcano-1331-task-over-queue-capability.yaml"


def test_gang_over_queue_capability_volcano_1331(tmp_path: Path) -> None:
    data = diagnosed(FIXTURE)
    assert data["summary"]["causes"] == [
        {"cause": "Volcano: the job asks more than its queue's spec.capability allows", "pods": 2}
    ]
    first = data["summary"]["firstStep"]
    assert "PodGroup zkzhu/model-transform needs minResources 7 nvidia.com/gtx-1080-ti" in first
    assert (
        "kubectl -n zkzhu patch queues.scheduling.volcano.sh a --type merge -p "
        """'{"spec":{"capability":{"nvidia.com/gtx-1080-ti":"7"}}}' --dry-run=server""" in first
    )
    assert 'rollback: the same patch with "3"' in first
    task2 = next(p for p in data["pending"] if p["pod"] == "zkzhu/model-transform-task2-0")
    assert any("the pod alone asks for 5 nvidia.com/gtx-1080-ti" in n for n in task2["notes"])
    # a capability that holds the gang: no such cause
    text = FIXTURE.read_text(encoding="utf-8").replace(
        'nvidia.com/gtx-1080-ti: "3"}', 'nvidia.com/gtx-1080-ti: "8"}'
    )
    (tmp_path / "fits.yaml").write_text(text, encoding="utf-8")
    assert diagnosed(tmp_path / "fits.yaml")["summary"]["causes"][0]["cause"] == "handled by volcano"


def test_sixteen_vgpus_on_eight_gpus_lead_hami_591() -> None:
    """Project-HAMi/HAMi#591 (HAMi v2.4.0 pkg/scheduler/score.go fitInDevices: "request devices nums cannot exceed
    the total number of devices on the node", 16 > 8): the established cause leads, not "handled by"."""
    data = diagnosed(HERE / "hami-591-sixteen-vgpus-eight-gpus.yaml")
    assert data["summary"]["causes"][0]["cause"] == (
        "hami-scheduler: more vGPUs in one container than any node has physical GPUs"
    )
    assert (
        "k8s-master1's hami.io/node-nvidia-register lists 8 physical GPU(s)" in data["summary"]["firstStep"]
    )
    assert "Ask for at most 8 in one container" in data["summary"]["firstStep"]


def test_each_pods_queue_and_podgroup_are_a_lookup_not_a_scan() -> None:
    """diagnose reads the Volcano Queue and PodGroup of each of up to 1,000 Pending pods: the snapshot's batch
    and queue objects are walked once to index them, not once per pod (the fixture's two tasks, 100 times)."""
    snap = load_files(FIXTURE)
    assert not snap.errors
    pods = [p for p in snap.pods if p.scheduler_name == "volcano"]
    assert len(pods) == 2
    snap.batch_objects = batch = CountedList(snap.batch_objects)
    snap.records.queues = queues = CountedList(snap.records.queues)
    for _ in range(100):
        for pod in pods:
            capped = over_capability(snap, pod)
            assert capped is not None and capped[0] == OVER_CAPABILITY
    assert batch.walks + queues.walks <= 2, (batch.walks, queues.walks)
