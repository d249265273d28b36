"""Which pods a ResourceQuota charges: finished pods and pods being deleted (``admission.quota.charged``).

Upstream rule, ``QuotaV1Pod`` (kubernetes/kubernetes pkg/quota/v1/evaluator/core/pods.go, read at commit
05e7cb29dcda163fe2adfc6952f89c164dc061b3; the same body as the pre-v1 ``QuotaPod``, unchanged through the 1.30-1.37
releases kubegpu supports): a pod in phase Succeeded or Failed is not charged for compute quota; neither is a
pod with ``metadata.deletionTimestamp`` and ``metadata.deletionGracePeriodSeconds`` once the clock is after the
one plus the other ("if pods are stuck terminating (for example, a node is lost), we do not want to charge the
user for that pod in quota"). ``count/pods`` counts every pod whatever its state (``PodUsageFunc``).

The pods below are upstream's own cases, TestPodEvaluatorUsage in pkg/quota/v1/evaluator/core/pods_test.go
(kubernetes/kubernetes commit 008b3652959ca58af8be3fb5b6ecfe9ae7638282): "terminated generic count still appears",
"pod deletion timestamp exceeded" (deleted 2 × 30 s before the clock, grace 30 s, reason NodeLost) and "pod
deletion timestamp not exceeded" (deleted at the clock), with their expected usage; the GPU cases put
``nvidia.com/gpu`` where a GPU tenant has it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kubegpu.admission.admit import admit_pods
from kubegpu.admission.quota import charged, namespace_usage, pod_usage
from kubegpu.explain.findings import find
from kubegpu.model.parse import parse_pod
from kubegpu.model.podgroup import rfc3339
from kubegpu.model.snapshot import build_snapshot
from tests.admission.quota_pods import GPU, GRACE, NOW, gpu_quota, quota_pod
from tests.conftest import snapshot_of

CPU_MEM = {"requests": {"cpu": "1", "memory": "50M"}, "limits": {"cpu": "2", "memory": "100M"}}
CPU = {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}


def test_upstream_terminated_pod_counts_in_count_pods_only() -> None:
    """Upstream's "terminated generic count still appears": a Succeeded pod with example.com/dongle 3 → count/pods 1."""
    pod = parse_pod(quota_pod("done", {"requests": {"example.com/dongle": "3"}, "limits": {"example.com/dongle": "3"}},
                              phase="Succeeded"))  # fmt: skip
    assert pod_usage(pod, NOW) == {"count/pods": 1000}
    failed = parse_pod(quota_pod("failed", GPU, phase="Failed"))
    assert pod_usage(failed, NOW) == {"count/pods": 1000}


def test_upstream_deletion_timestamp_exceeded_is_not_charged() -> None:
    """Upstream's "pod deletion timestamp exceeded": deletionTimestamp 60 s before the clock, grace 30 s → count/pods only."""
    pod = parse_pod(quota_pod("lost", CPU_MEM, deleted=NOW - timedelta(seconds=2 * GRACE), reason="NodeLost"))
    assert pod.deletion_grace_period_seconds == GRACE
    assert pod_usage(pod, NOW) == {"count/pods": 1000}


def test_upstream_deletion_timestamp_not_exceeded_is_charged_in_full() -> None:
    """Upstream's "pod deletion timestamp not exceeded": deleted at the clock, grace 30 s → requests.cpu 1, limits.cpu 2,
    pods 1, cpu 1, count/pods 1."""
    pod = parse_pod(quota_pod("going", CPU, deleted=NOW, reason="NodeLost"))
    assert pod_usage(pod, NOW) == {
        "requests.cpu": 1000, "limits.cpu": 2000, "pods": 1000, "cpu": 1000, "count/pods": 1000,
    }  # fmt: skip


def test_grace_boundary_and_missing_grace_follow_now_after() -> None:
    """``now.After(deletionTime.Add(gracePeriod))`` is strict: at exactly deletion + grace the pod is still
    charged; one second later it is not. Without deletionGracePeriodSeconds (or without a clock) it is charged."""
    pod = parse_pod(quota_pod("g", GPU, deleted=NOW))
    assert charged(pod, NOW + timedelta(seconds=GRACE))
    assert not charged(pod, NOW + timedelta(seconds=GRACE + 1))
    assert charged(parse_pod(quota_pod("g", GPU, deleted=NOW, grace=None)), NOW + timedelta(days=1))
    assert charged(pod, None)


def _snapshot(deleted_ago: int) -> Any:
    """team-a: quota gpu (requests.nvidia.com/gpu 1, no status: usage is summed from the pods), pod old-0
    holding the GPU and deleted ``deleted_ago`` seconds before the newest pod (sleeper, CPU only) was created."""
    return snapshot_of(
        gpu_quota("1"),
        quota_pod("old-0", GPU, deleted=NOW - timedelta(seconds=deleted_ago), created=NOW - timedelta(hours=1),
                  reason="NodeLost"),
        quota_pod("sleeper", CPU, created=NOW),
    )  # fmt: skip


def test_admission_frees_the_quota_of_a_pod_stuck_terminating_past_its_grace() -> None:
    """The snapshot's time (its newest pod's creation) is past old-0's deletion + grace: the API server no
    longer charges old-0, so a new 1-GPU pod fits the quota."""
    snap = _snapshot(deleted_ago=2 * GRACE)
    assert namespace_usage(snap.quotas[0], snap.pods) == {"requests.nvidia.com/gpu": 0}
    [adm] = admit_pods(snap, [("new.yaml", quota_pod("new", GPU))])
    assert adm.admitted, adm.message


def test_admission_still_charges_a_pod_within_its_grace() -> None:
    """Within the grace period old-0 is charged in full: the new pod is refused with upstream's text
    (plugin/pkg/admission/resourcequota/controller.go: ``exceeded quota: %s, requested: %s, used: %s,
    limited: %s`` under ``pods "<name>" is forbidden: ``)."""
    snap = _snapshot(deleted_ago=GRACE // 3)
    [adm] = admit_pods(snap, [("new.yaml", quota_pod("new", GPU))])
    assert not adm.admitted
    assert adm.message == (
        'pods "new" is forbidden: exceeded quota: gpu, requested: requests.nvidia.com/gpu=1, '
        "used: requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=1"
    )


def _exhausted(extra: list[dict[str, Any]]) -> Any:
    """A quota the API server reports full (status.used 2 of 2): one running pod, and ``extra``."""
    return snapshot_of(gpu_quota("2", used="2"), quota_pod("run-0", GPU, created=NOW), *extra)


def test_diagnose_names_the_terminating_pods_that_hold_an_exhausted_gpu_quota() -> None:
    deleted = NOW - timedelta(seconds=10)
    snap = _exhausted(
        [quota_pod("old-0", GPU, deleted=deleted, created=NOW - timedelta(hours=1), reason="NodeLost")]
    )
    [f] = [f for f in find(snap) if f.title == "GPU quota exhausted in team-a"]
    assert (
        f"1 pod(s) being deleted still hold requests.nvidia.com/gpu=1 of it: team-a/old-0 "
        f"(deletionTimestamp {rfc3339(deleted)}, grace 30s)" in f.detail
    )
    assert "gets it back when those pods are gone" in f.detail
    assert any(".metadata.deletionTimestamp" in c and "-n team-a" in c for c in f.commands)


def test_diagnose_does_not_name_a_pod_past_its_grace_or_a_finished_pod() -> None:
    """Neither is charged by the API server (QuotaV1Pod), so neither holds what the quota reports."""
    snap = _exhausted([
        quota_pod("lost", GPU, deleted=NOW - timedelta(seconds=2 * GRACE), created=NOW - timedelta(hours=1)),
        quota_pod("done", GPU, phase="Succeeded", created=NOW - timedelta(hours=2)),
    ])  # fmt: skip
    [f] = [f for f in find(snap) if f.title == "GPU quota exhausted in team-a"]
    assert "being deleted" not in f.detail
    assert f.commands == ["kubectl -n team-a describe resourcequota gpu"]


def test_failed_create_advice_names_terminating_holders_and_no_longer_says_finished_pods_count() -> None:
    """The ReplicaSet refusal of ministryofjustice/cloud-platform#590 (tests/realcases/replicaset-exceeded-quota
    .yaml, verbatim), with one replica of the same ReplicaSet being deleted within its grace: the advice names
    it, and no longer claims finished pods hold quota (QuotaV1Pod charges them in count/pods only)."""
    from pathlib import Path

    import yaml

    case = Path(__file__).parent.parent / "realcases" / "replicaset-exceeded-quota.yaml"
    objects = [o for o in yaml.safe_load_all(case.read_text()) if o]
    deleted = NOW - timedelta(seconds=5)
    going = quota_pod("allocation-manager-6597bc46dc-x7k2q", {"limits": {"cpu": "1", "memory": "2Gi"}},
                      ns="offender-management-staging", deleted=deleted, created=NOW - timedelta(hours=3))  # fmt: skip
    snap = build_snapshot(
        [("rs.yaml", o) for o in [*objects, going, quota_pod("x", CPU, ns="other", created=NOW)]]
    )
    assert not snap.errors, snap.errors
    [f] = [f for f in find(snap) if "cannot create its pods" in f.title]
    assert "finished pods still count" not in f.detail
    assert "a Succeeded or Failed pod counts in count/pods only" in f.detail
    assert (
        "1 pod(s) being deleted still hold limits.cpu=1,limits.memory=2Gi of it: "
        f"offender-management-staging/allocation-manager-6597bc46dc-x7k2q (deletionTimestamp {rfc3339(deleted)}, "
        "grace 30s)" in f.detail
    )


def test_many_full_quotas_read_the_deleting_pods_and_the_time_once() -> None:
    """diagnose on a multi-tenant fleet: every namespace's GPU quota full (status.used), each with a pod being
    deleted within its grace. Each finding names its own namespace's pod, and the pods are walked a fixed number
    of times, not twice per quota (the deleting pods, then every pod's timestamps for the snapshot's time):
    300 such namespaces of 100 pods took 34 s before."""
    from kubegpu.explain.findings_quota import quota_findings
    from tests.walks import CountedList

    tenants = 40
    deleted = NOW - timedelta(seconds=10)
    objects: list[dict[str, Any]] = []
    for i in range(tenants):
        quota = gpu_quota("2", used="2")
        quota["metadata"]["namespace"] = f"t{i}"
        objects += [
            quota,
            quota_pod("run-0", GPU, ns=f"t{i}", created=NOW),
            quota_pod("old-0", GPU, ns=f"t{i}", deleted=deleted, created=NOW - timedelta(hours=1)),
        ]
    snap = snapshot_of(*objects)
    snap.pods = pods = CountedList(snap.pods)
    found = [f for f in quota_findings(snap) if f.title.startswith("GPU quota exhausted")]
    assert [f.title for f in found] == [f"GPU quota exhausted in t{i}" for i in range(tenants)]
    for i, f in enumerate(found):
        assert f"still hold requests.nvidia.com/gpu=1 of it: t{i}/old-0 (deletionTimestamp" in f.detail
    assert pods.walks <= 2, pods.walks


def test_deleting_a_pod_past_its_grace_gives_back_nothing() -> None:
    """``plan.effect.released_quotas`` (what a quota holds once a pod is deleted, for its replacement's
    admission): a pod past deletionTimestamp + grace is already not charged (QuotaV1Pod), so its deletion gives
    nothing back and run-0 still holds 1 of 2. Before, its whole GPU was taken off the usage that did not count
    it: 0 used."""
    from kubegpu.plan.effect import released_quotas

    snap = snapshot_of(
        gpu_quota("2"),
        quota_pod("run-0", GPU, created=NOW - timedelta(hours=1)),
        quota_pod("lost", GPU, deleted=NOW - timedelta(seconds=2 * GRACE), created=NOW - timedelta(hours=1)),
        quota_pod("sleeper", CPU, created=NOW),
    )
    lost, run = snap.pod("team-a/lost"), snap.pod("team-a/run-0")
    assert lost is not None and run is not None
    assert released_quotas(snap.quotas, snap.pods, lost)[0].used == {"requests.nvidia.com/gpu": 1000}
    # a pod charged gives back its GPU
    assert released_quotas(snap.quotas, snap.pods, run)[0].used == {"requests.nvidia.com/gpu": 0}
