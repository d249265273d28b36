"""Which HAMi rule establishes a Pending pod's cause, by the precedence KAI and Volcano follow
(``schedulers.establish``): only the rules of the scheduler the pod names, the first cause established
standing, the certain before what depends on time.

The HAMi messages are real: hami-scheduler's FailedScheduling "0/1 nodes are available: 1 NodeUnfitPod.
preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod." (posted verbatim in
Project-HAMi/HAMi#1368) and its extender's FilteringFailed "no available node, <n> nodes do not meet"
(Project-HAMi/HAMi pkg/scheduler/scheduler.go Filter: ``fmt.Errorf("no available node, %d nodes do not meet",
len(*args.NodeNames))``, recorded with reason EventReasonFilteringFailed, pkg/scheduler/event.go; posted as
"no available node, 3 nodes do not meet" in Project-HAMi/HAMi#1527). HAMi refuses a node whose registered
physical GPUs are fewer than one container's vGPUs (pkg/scheduler/score.go fitInDevices: ``int(k.Nums) >
len(typeDevices)`` -> NodeInsufficientDevice; Project-HAMi/HAMi#602)."""

from __future__ import annotations

from pathlib import Path

from tests.realcases.cases import HERE, diagnosed

VGPUS_OVER_PHYSICAL = "hami-scheduler: more vGPUs in one container than any node has physical GPUs"
FILTERING_FAILED = """- apiVersion: v1
  kind: Event
  metadata: {name: train-b-0.1368b, namespace: team-a}
  involvedObject: {kind: Pod, name: train-b-0, namespace: team-a}
  reason: FilteringFailed
  type: Warning
  count: 2
  lastTimestamp: "2025-09-25T02:20:05Z"
  source: {component: hami-scheduler}
  message: "no available node, 1 nodes do not meet"
"""


def test_vgpus_over_physical_leads_and_the_refusal_is_not_called_stale_hami_1368_602(tmp_path: Path) -> None:
    """The #1368 snapshot (the node empty since, hami-scheduler's NodeUnfitPod refusal still on the pod), with
    the pod asking 2 vGPUs of a node that registered one GPU: hami-scheduler refuses that node now too, so the
    cause is the vGPU rule, and the refusal is not said to predate the node's state. Before, the note said the
    refusal was stale (the node holds no GPU) beside the vGPU cause."""
    text = (HERE / "hami-node-unfit-stale.yaml").read_text(encoding="utf-8")
    limits = 'limits: {nvidia.com/gpu: "1", nvidia.com/gpumem: "24576"'
    assert limits in text and "- apiVersion: kueue.x-k8s.io/v1beta1\n  kind: Workload" in text
    text = text.replace(limits, limits.replace('gpu: "1"', 'gpu: "2"')).replace(
        "- apiVersion: kueue.x-k8s.io/v1beta1\n  kind: Workload",
        FILTERING_FAILED + "- apiVersion: kueue.x-k8s.io/v1beta1\n  kind: Workload",
    )
    (tmp_path / "two.yaml").write_text(text, encoding="utf-8")
    out = diagnosed(tmp_path / "two.yaml")
    assert out["summary"]["causes"] == [{"cause": VGPUS_OVER_PHYSICAL, "pods": 1}]
    assert "gpu-node-1's hami.io/node-nvidia-register lists 1 physical GPU(s)" in out["summary"]["firstStep"]
    notes = out["pending"][0]["notes"]
    assert not any("predates the node's present state" in n for n in notes), notes
    observed = out["pending"][0]["observed"]
    # the same attempt's two events: the extender's own one is what the cluster said (explain.observed)
    assert (observed["reporter"], observed["reason"], observed["message"]) == (
        "hami-scheduler",
        "FilteringFailed",
        "no available node, 1 nodes do not meet",
    )
    # the pod's own one vGPU again: the refusal is stale, and that is the cause (Project-HAMi/HAMi#1368)
    stale = diagnosed(HERE / "hami-node-unfit-stale.yaml")["summary"]["causes"][0]["cause"]
    assert stale.startswith("hami-scheduler's last refusal predates the node's state")


def test_a_pod_hami_scheduler_never_took_gets_no_hami_cause_hami_602(tmp_path: Path) -> None:
    """The #602 pod (2 vGPUs and nvidia.com/gpumem; the node registered one T4) naming schedulerName volcano:
    hami-scheduler never takes it (HAMi's webhook sets hami-scheduler; it did not here), so no rule of HAMi's
    is its cause, as no rule of KAI's is for a pod that does not name kai-scheduler. Before, the HAMi cause was
    given to any pod with HAMi resources that kube-scheduler does not take."""
    docs = (HERE / "hami-vgpu-count-over-physical.yaml").read_text(encoding="utf-8").split("---\n")
    kept = [d for d in docs if "\nkind: Event" not in d]  # hami-scheduler wrote none for this pod
    assert len(kept) == len(docs) - 2
    text = "---\n".join(kept)
    assert "schedulerName: hami-scheduler" in text
    (tmp_path / "volcano.yaml").write_text(
        text.replace("schedulerName: hami-scheduler", "schedulerName: volcano"), encoding="utf-8"
    )
    out = diagnosed(tmp_path / "volcano.yaml")
    assert out["summary"]["causes"] == [{"cause": "handled by volcano", "pods": 1}]
    notes = out["pending"][0]["notes"]
    assert any(
        "are HAMi's resources, but the pod names schedulerName volcano: hami-scheduler never took this pod"
        in n
        for n in notes
    ), notes
    # the same pod naming hami-scheduler: the vGPU rule is its cause (test_other_scheduler_first)
    own = diagnosed(HERE / "hami-vgpu-count-over-physical.yaml")["summary"]["causes"][0]["cause"]
    assert own == VGPUS_OVER_PHYSICAL
