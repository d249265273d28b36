"""Volcano PodGroups not enqueued: Pending, so the vcjob controller creates no pod and nothing is Pending to
explain. Volcano's rule is volcano-sh/volcano @ed72c7c8 pkg/scheduler/plugins/proportion/proportion.go
(JobEnqueueableFn: a queue not Open rejects; ``minResources + allocated + inqueue - elastic`` must fit
``realCapability`` = the cluster total less the other queues' guarantees plus its own, capped by
``spec.capability``; a refusal writes the PodGroup event "queue resource quota insufficient")."""

from __future__ import annotations

from typing import Any

from tests.realcases.cases import case

PG_3426 = "podgroup.scheduling.volcano.sh/default/job-1-0b9d2c4e-6f1a-4c7e-9d0e-3a1b2c3d4e5f"
PG_2814 = "podgroup.scheduling.volcano.sh/default/job-b-7e4d2a90-5b3f-4f8e-8c2d-6a9b0c1d2e3f"


def finding(data: dict[str, Any], ref: str) -> dict[str, Any]:
    found = [f for f in data["findings"] if f["objects"] and f["objects"][0] == ref]
    assert len(found) == 1, [f["title"] for f in data["findings"]]
    return found[0]


def test_podgroup_refused_by_queue_is_not_silent_volcano_3426() -> None:
    """volcano#3426: the vcjob's PodGroup stays Pending with no pod; kubegpu's findings were empty."""
    f = finding(case("volcano-queue-quota-insufficient"), PG_3426)
    assert f["title"].startswith("Volcano has not enqueued PodGroup default/job-1-0b9d2c4e")
    assert "(queue a800, 3 nvidia.com/gpu)" in f["title"]
    assert 'volcano wrote "queue resource quota insufficient" (Unschedulable)' in f["detail"]
    # the point: capability 4 GPUs holds the 3 asked; what else Volcano weighs is said, not assumed
    assert "Queue a800's spec.capability (4 nvidia.com/gpu) holds minResources alone" in f["detail"]
    assert "not reproduced here: the queue's allocated and elastic resources" in f["detail"]
    assert f["severity"] == "info"
    assert "kubectl get queues.scheduling.volcano.sh a800 -o yaml" in f["commands"]


def test_inqueue_group_holds_the_queue_volcano_2814() -> None:
    """volcano#2814: job-a (2 GPUs, Inqueue, can never fit one node) holds the queue's share of the 2-GPU
    cluster, so job-b's PodGroup (1 GPU) is never enqueued: job-b was not mentioned at all."""
    f = finding(case("volcano-inqueue-holds-queue"), PG_2814)
    assert f["severity"] == "warning"
    assert "default/job-a-2b1c8f6e-0d7a-4c1e-9a51-1f0e6a3c7b10 (2 nvidia.com/gpu)" in f["detail"]
    assert "this one needs 3 nvidia.com/gpu, more than the 2 nvidia.com/gpu the queue can hold" in f["detail"]


def test_the_headline_names_the_podgroup_not_nothing_is_blocked_volcano_3426() -> None:
    """With no Pending GPU pod (the PodGroup's pods are never created), the first step names the PodGroup
    Volcano has not enqueued, as it names a Workload Kueue holds, instead of "nothing is blocked"."""
    from kubegpu.sources import load_files
    from tests.realcases.cases import HERE
    from tests.summaries import summary_of

    snap = load_files(HERE / "volcano-queue-quota-insufficient.yaml")
    first = summary_of(snap).first_step
    assert first.startswith(
        "no Pending GPU pod, but Volcano has not enqueued PodGroup default/job-1-0b9d2c4e"
    )
