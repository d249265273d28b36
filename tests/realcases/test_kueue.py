"""Pods and jobs Kueue holds: kubegpu must say Kueue (not kube-scheduler, not a GPU shortage) keeps them,
name the Workload, the ClusterQueue and the quota numbers of Kueue's own message, quoted as Kueue wrote it,
and say what to do. Each fixture's header cites its public source; the expected values below are the
sources' own (the issue's message and ClusterQueue, the docs' condition, the lab's captured output), and
Kueue's rules are those of kubernetes-sigs/kueue @ff69552e (files named per test).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from kubegpu.explain.diagnose import diagnose
from kubegpu.explain.engine import Engine
from kubegpu.explain.kueue import KUEUE_GET
from kubegpu.explain.kueue_objects import Shortfall, parse_shortfalls
from kubegpu.sources import load_files
from tests.realcases.cases import HERE, case, pending
from tests.summaries import summary_of

# kueue#3909, the Workload condition as posted (YAML-folded there; one line here)
MSG_3909 = (
    "couldn't assign flavors to pod set master: insufficient unused quota for nvidia.com/gpu in flavor "
    "multi-node-h100, 8 more needed, insufficient unused quota for nvidia.com/gpu in flavor single-node-h100, 8 "
    "more needed; couldn't assign flavors to pod set worker: insufficient quota for nvidia.com/gpu in flavor "
    "multi-node-h100, request > maximum capacity (16 > 8), insufficient quota for nvidia.com/gpu in flavor "
    "single-node-h100, request > maximum capacity (24 > 16)"
)
WL_3909 = "workload.kueue.x-k8s.io/default/pytorchjob-pytorch-simple-high-priority-8d2e7"


def held(data: dict[str, Any], ref: str) -> dict[str, Any]:
    found = [f for f in data["findings"] if f["objects"] and f["objects"][0] == ref]
    assert len(found) == 1, [f["title"] for f in data["findings"]]
    return found[0]


def diagnose_text(text: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "snapshot.yaml"
        path.write_text(text)
        snap = load_files(path)
    assert not snap.errors, [e.one_line() for e in snap.errors]
    out: dict[str, Any] = diagnose(Engine(snap)).to_dict()
    return out


def test_parse_shortfalls_kueue_3909_message() -> None:
    """flavorassigner.go ``Assignment.Message`` / ``fitsResourceQuota`` (≤ 0.14 wording), on kueue#3909's text."""
    assert parse_shortfalls(MSG_3909) == [
        Shortfall("master", "nvidia.com/gpu", "multi-node-h100", more_needed="8"),
        Shortfall("master", "nvidia.com/gpu", "single-node-h100", more_needed="8"),
        Shortfall("worker", "nvidia.com/gpu", "multi-node-h100", request="16", maximum="8"),
        Shortfall("worker", "nvidia.com/gpu", "single-node-h100", request="24", maximum="16"),
    ]


def test_parse_shortfalls_0_15_wording() -> None:
    """Kueue 0.15+ splits the request (kueue#7232, CHANGELOG-0.15 example: "previously considered podsets
    requests (16) + current podset request (8) > maximum capacity (16)"), inside ``Assignment.Message``'s
    "couldn't assign flavors to pod set <ps>: " as flavorassigner.go writes it."""
    msg = (
        "couldn't assign flavors to pod set main: insufficient quota for resource-type in flavor example-flavor, "
        "previously considered podsets requests (16) + current podset request (8) > maximum capacity (16)"
    )
    assert parse_shortfalls(msg) == [
        Shortfall("main", "resource-type", "example-flavor", request="8", previous="16", maximum="16")
    ]
    assert parse_shortfalls("LocalQueue user-queue doesn't exist") == []


def test_job_held_by_kueue_is_not_nothing_blocked_kueue_3909() -> None:
    """kueue#3909: a PyTorchJob Kueue keeps suspended has no pod; diagnose used to say "nothing is blocked"."""
    data = case("kueue-3909-max-capacity")
    assert data["pending"] == []
    f = held(data, WL_3909)
    assert "PyTorchJob pytorch-simple-high-priority" in f["title"]
    assert f["severity"] == "warning"  # no wait admits it
    assert "the request exceeds the ClusterQueue's maximum" in f["title"]
    assert f'Kueue wrote "{MSG_3909}"' in f["detail"]  # quoted, whitespace as the API server keeps it
    assert "clusterqueue.kueue.x-k8s.io/cluster-queue-asr" in f["objects"]
    # the ClusterQueue: nominalQuota 8 / 16, borrowingLimit 8, cohort h100-dev
    assert "flavor multi-node-h100 nvidia.com/gpu: nominalQuota 8, borrowingLimit 8" in f["detail"]
    assert "flavor single-node-h100 nvidia.com/gpu: nominalQuota 16, borrowingLimit 8" in f["detail"]
    assert "cohort h100-dev" in f["detail"]
    # the thread's question was why no preemption: past the maximum Kueue returns noFit before it simulates
    # preemption (fitsResourceQuota), for the worker pod set in both flavors
    assert "pod set worker fits no flavor it may use" in f["detail"]
    assert "multi-node-h100 16 > 8, single-node-h100 24 > 16" in f["detail"]
    assert "no wait or preemption makes it fit" in f["detail"]
    # 24 = the master's 8 + the workers' 16 (Kueue ≤ 0.14 prints the sum: kueue#3990 / #7232)
    assert "pod sets before it" in f["detail"]
    # 24 GPUs of quota in single-node-h100 would be more than its two 8-GPU nodes: no patch proposed
    assert not any("patch" in c for c in f["commands"])
    assert "more than its nodes hold" in f["detail"]
    assert summary_of(load_files(HERE / "kueue-3909-max-capacity.yaml")).first_step.startswith(
        "no Pending GPU pod, but Kueue has not admitted Workload default/pytorchjob-pytorch-simple-high-priority"
    )
    # the admitted low-priority Workload is not reported
    assert not [x for x in data["findings"] if "low-priority" in x["title"]]


def test_suspended_job_v1beta2_hami_lab() -> None:
    """Kueue 0.18.1 v1beta2 (HAMi website Lab 9): the third Job stays suspended; the ClusterQueue's quota is
    the lab's 02-queues.yaml, the message the lab's captured condition."""
    data = case("kueue-hami-lab-v1beta2")
    f = held(data, "workload.kueue.x-k8s.io/hami-kueue-demo/job-hami-kueue-pending-c-d854d")
    assert (
        "of Job hami-kueue-pending-c (waiting for Kueue admission: ClusterQueue quota in use)" in f["title"]
    )
    assert f["severity"] == "info"  # the lab's point: the third Job waits for quota, as intended
    assert "flavor hami-t4 nvidia.com/gpu: nominalQuota 2" in f["detail"]
    assert "flavor hami-t4 nvidia.com/total-gpucores: nominalQuota 100" in f["detail"]
    assert (
        "1 more nvidia.com/gpu in flavor hami-t4 and 50 more nvidia.com/total-gpucores in flavor hami-t4"
        in f["detail"]
    )
    assert "has no cohort, so it cannot borrow" in f["detail"]  # the lab's ClusterQueue names none
    assert "withinClusterQueue Never" in f["detail"]  # Kueue's default (+kubebuilder:default=Never)
    # HAMi in DRA mode: the T4 node advertises no nvidia.com/gpu, so the quota is not weighed against it
    assert "not checked against nodes" in f["detail"]
    # the raise of nvidia.com/gpu 2 → 3: dry run first, then the change, then its rollback
    path = "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota"
    gpu = [c for c in f["commands"] if path in c]
    assert len(gpu) == 3 and gpu[0].endswith("--dry-run=server") and gpu[2].startswith("# rollback: ")
    assert f"""-p '[{{"op": "replace", "path": "{path}", "value": "3"}}]'""" in gpu[1]
    assert gpu[2].endswith(f"""-p '[{{"op": "replace", "path": "{path}", "value": "2"}}]'""")
    assert "-n hami-kueue-demo patch clusterqueues.kueue.x-k8s.io hami-cq" in gpu[1]
    assert not [x for x in data["findings"] if "running-a" in x["title"]]  # admitted


def test_localqueue_missing_docs_troubleshooting() -> None:
    """Kueue docs (troubleshooting_jobs.md): "LocalQueue user-queue doesn't exist", reason Inadmissible."""
    data = case("kueue-localqueue-missing")
    p = pending(data, "default/kueue-sleep-9kx2t")
    k = p["kueue"]
    assert (k["workload"], k["state"], k["message"]) == (
        "default/pod-kueue-sleep-9kx2t-5e1b0",
        "queue-missing",
        "LocalQueue user-queue doesn't exist",
    )
    assert k["condition"] == "QuotaReserved=False, reason Inadmissible"
    assert "LocalQueues in default: team-queue" in k["advice"][0]
    causes = summary_of(load_files(HERE / "kueue-localqueue-missing.yaml")).causes
    assert causes == [("Kueue cannot admit it: its LocalQueue or ClusterQueue does not exist", 1)]
    assert "no FailedScheduling event is written" in p["waiting"]


def test_localqueue_missing_0_19_reason_misconfigured() -> None:
    """0.19+ writes reason Misconfigured for the same message (workload_controller.go getQueueBlocker,
    kueue#12510, feature gate UnadmittedWorkloadsObservability beta on in 0.19): read by the message, the
    state is the same."""
    text = (
        (HERE / "kueue-localqueue-missing.yaml")
        .read_text()
        .replace("reason: Inadmissible", "reason: Misconfigured")
    )
    k = pending(diagnose_text(text), "default/kueue-sleep-9kx2t")["kueue"]
    assert (k["state"], k["condition"]) == ("queue-missing", "QuotaReserved=False, reason Misconfigured")


def test_pod_group_inactive_cluster_queue() -> None:
    """A plain-pod group (Kueue's kueue-pod-group.yaml) whose ClusterQueue lacks its ResourceFlavor: the
    Active=False FlavorNotFound message of pkg/cache/scheduler/clusterqueue.go, quoted."""
    data = case("kueue-pod-group-cq-inactive")
    for pod in ("default/sample-leader-x7k2p", "default/sample-worker-q8m4d"):
        k = pending(data, pod)["kueue"]
        assert (k["workload"], k["clusterQueue"], k["state"]) == (
            "default/sample-group",
            "cluster-queue",
            "queue-inactive",
        )
        assert k["message"] == "ClusterQueue cluster-queue is inactive"
        assert (
            "ClusterQueue cluster-queue Active=False (FlavorNotFound): Kueue wrote \"Can't admit new workloads: "
            'references missing ResourceFlavor(s): default-flavor."' in k["facts"]
        )
        assert "create the ResourceFlavor(s) its Active condition names" in k["advice"][0]


def test_pod_group_workload_found_by_group_name() -> None:
    """Kueue names a group's Workload after kueue.x-k8s.io/pod-group-name (pod_controller.go workloadName):
    found by it even where the snapshot's Workload lists no ownerReferences."""
    text = (HERE / "kueue-pod-group-cq-inactive.yaml").read_text()
    start = text.index("  ownerReferences:\n  - {apiVersion: v1, kind: Pod, name: sample-leader")
    end = text.index("spec:\n  queueName: user-queue")
    k = pending(diagnose_text(text[:start] + text[end:]), "default/sample-worker-q8m4d")["kueue"]
    assert k["workload"] == "default/sample-group"


def test_plain_pods_alike_keep_their_own_workload() -> None:
    """Two plain pods with the same spec share one evaluation (``explain_many``), but each has its own
    Workload (pod-<name>-<hash>): the second must not be told the first one's."""
    text = (HERE / "kueue-localqueue-missing.yaml").read_text()
    pod_start = text.index("apiVersion: v1\nkind: Pod")
    wl_end = text.index("apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue")
    twin = text[pod_start:wl_end].replace("kueue-sleep-9kx2t", "kueue-sleep-2m7fq").replace("5e1b0", "0c4d9")
    twin = twin.replace("LocalQueue user-queue doesn't exist", "LocalQueue user-queue is inactive")
    data = diagnose_text(text + "---\n" + twin)
    assert (
        pending(data, "default/kueue-sleep-9kx2t")["kueue"]["workload"]
        == "default/pod-kueue-sleep-9kx2t-5e1b0"
    )
    second = pending(data, "default/kueue-sleep-2m7fq")["kueue"]
    assert (second["workload"], second["state"]) == ("default/pod-kueue-sleep-2m7fq-0c4d9", "queue-inactive")


def test_gated_pod_without_kueue_objects_is_said_not_assumed() -> None:
    """A snapshot from the default ``kubectl get`` holds no Workload: the reason is unknown, and said so."""
    text = (HERE / "kueue-localqueue-missing.yaml").read_text()
    text = text[: text.index("apiVersion: kueue.x-k8s.io/v1beta1\nkind: Workload")]
    k = pending(diagnose_text(text), "default/kueue-sleep-9kx2t")["kueue"]
    assert k["state"] == "no-kueue-objects" and "not modelled" in k["condition"]
    assert KUEUE_GET in k["commands"] and "workloads.kueue.x-k8s.io" in KUEUE_GET


def test_quota_reserved_waiting_for_admission_checks_docs() -> None:
    """Kueue docs (troubleshooting_jobs.md "Pending Admission Checks"): quota reserved in dws-cluster-queue,
    admission check dws-prov Pending, no Admitted condition: the pod stays gated until the check is Ready."""
    text = (HERE / "kueue-localqueue-missing.yaml").read_text()
    start = text.index('status:\n  conditions:\n  - lastTransitionTime: "2024-03-21T13:55:21Z"')
    end = text.index("---", start)
    status = (
        "status:\n  admission:\n    clusterQueue: dws-cluster-queue\n  admissionChecks:\n"
        '  - lastTransitionTime: "2024-05-03T20:01:59Z"\n    message: ""\n    name: dws-prov\n    state: Pending\n'
        '  conditions:\n  - lastTransitionTime: "2024-05-03T20:01:59Z"\n'
        "    message: Quota reserved in ClusterQueue dws-cluster-queue\n    reason: QuotaReserved\n"
        '    status: "True"\n    type: QuotaReserved\n'
    )
    k = pending(diagnose_text(text[:start] + status + text[end:]), "default/kueue-sleep-9kx2t")["kueue"]
    assert (k["state"], k["clusterQueue"]) == ("admission-checks", "dws-cluster-queue")
    assert "admission check dws-prov is Pending" in k["facts"]


def test_failed_admission_check_is_the_cause_kueue_5129() -> None:
    """kueue#5129 (GKE DWS): the ProvisioningRequest check dws-prov is Retry ("Max nodepool size reached");
    Kueue evicted the Workload ("At least one admission check is false") and its QuotaReserved=False says only
    "The workload has failed admission checks". The check's message is the cause (Kueue
    pkg/controller/core/workload_controller.go reconcileCheckBasedEviction: Retry evicts and requeues,
    Rejected deactivates); kubegpu used to answer "act on the message itself" and drop the check."""
    data = case("kueue-dws-check-retry")
    f = held(data, "workload.kueue.x-k8s.io/default/job-a100-4x-train-3b1c2")
    assert "a Kueue admission check failed" in f["title"]
    assert (
        'admission check dws-prov is Retry: "Retrying after failure: Max nodepool size reached, affected '
        'nodepools: dws-a100-40gb-4x-node-pool"' in f["detail"]
    )
    assert "the cause is admission check dws-prov's message" in f["detail"]
    assert "names no quota shortfall" not in f["detail"]
    assert "kubectl get admissionchecks.kueue.x-k8s.io dws-prov -o yaml" in f["commands"]
    # a Rejected check: Kueue deactivates the Workload
    text = (HERE / "kueue-dws-check-retry.yaml").read_text().replace("state: Retry", "state: Rejected")
    g = held(diagnose_text(text), "workload.kueue.x-k8s.io/default/job-a100-4x-train-3b1c2")
    assert "admission check dws-prov is Rejected" in g["detail"] and "spec.active: false" in g["detail"]
