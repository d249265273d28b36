"""A multi-tenant GPU cluster: every namespace its own ResourceQuota and LimitRange. A ResourceQuota "sets
aggregate quota restrictions enforced per namespace" (core/v1 ResourceQuota API reference) and "a LimitRange is
enforced in a particular namespace when there is a LimitRange object in that namespace"
(https://kubernetes.io/docs/concepts/policy/limit-range/), so what diagnose reads for one namespace is that
namespace's objects: the quotas of a Pending pod's namespace (``explain.notes.pod_notes``), the pods being
deleted that still hold a full GPU quota (``explain.findings_quota.deleting_note``), the pods LimitRanger
defaulted (``explain.findings_limits``). Each is read once per snapshot and looked up after: the walks over the
snapshot's pod and quota lists do not grow with the namespaces (before, ``find`` walked every pod once per full
quota and once per GPU-defaulting LimitRange, and each Pending pod's notes walked every quota).

Each namespace holds what ``tests/admission/test_quota_terminating.py`` builds from upstream's
TestPodEvaluatorUsage cases (a GPU quota the API server reports full, status.used 2 of 2, held by a running pod
and by one deleted 10 s before the snapshot within its 30 s grace, which QuotaV1Pod still charges), a Pending
pod created before the quota filled, and the LimitRange and defaulted pod ``web`` a real kube-apiserver 1.37.2
stored (``fixtures/accounting/limitrange-gpu-stored.yaml``).
"""

from __future__ import annotations

import copy
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from kubegpu.explain.engine import Engine
from kubegpu.explain.findings import find
from kubegpu.explain.pending import explain_pod
from kubegpu.model.podgroup import rfc3339
from kubegpu.model.snapshot import ClusterSnapshot
from tests.admission.quota_pods import GPU, NOW, gpu_quota, quota_pod
from tests.conftest import snapshot_of
from tests.walks import CountedList

STORED = Path(__file__).parent / "fixtures" / "accounting" / "limitrange-gpu-stored.yaml"
DELETED = NOW - timedelta(seconds=10)


def _tenants(n: int) -> ClusterSnapshot:
    """``n`` namespaces tenant-00 … as the module docstring says, with the pod and quota lists counted."""
    stored = yaml.safe_load(STORED.read_text())["items"]
    limits = next(
        o for o in stored if o["kind"] == "LimitRange" and o["metadata"]["namespace"] == "ml-notebooks"
    )
    web = next(o for o in stored if o["kind"] == "Pod")
    objects: list[dict[str, Any]] = []
    for i in range(n):
        ns = f"tenant-{i:02d}"
        quota = gpu_quota("2", used="2")
        quota["metadata"]["namespace"] = ns
        waiting = quota_pod("wait-0", GPU, ns=ns, created=NOW - timedelta(hours=2))
        del waiting["spec"]["nodeName"]
        waiting["status"] = {"phase": "Pending"}
        objects += [
            quota,
            quota_pod("run-0", GPU, ns=ns, created=NOW),
            quota_pod(
                "old-0", GPU, ns=ns, deleted=DELETED, created=NOW - timedelta(hours=1), reason="NodeLost"
            ),
            waiting,
        ]
        for stored_object in (limits, web):
            copied = copy.deepcopy(stored_object)
            copied["metadata"]["namespace"] = ns
            # (stored after the snapshot's other pods: made older, so the snapshot's time stays NOW)
            copied["metadata"]["creationTimestamp"] = rfc3339(NOW - timedelta(hours=3))
            objects.append(copied)
    snap = snapshot_of(*objects)
    snap.pods = CountedList(snap.pods)
    snap.quotas = CountedList(snap.quotas)
    return snap


def _find_walks(n: int) -> int:
    snap = _tenants(n)
    findings = {f.title: f for f in find(snap)}
    for i in range(n):
        ns = f"tenant-{i:02d}"
        full = findings[f"GPU quota exhausted in {ns}"]
        # its own namespace's deleting pod, no other's
        assert (
            f"1 pod(s) being deleted still hold requests.nvidia.com/gpu=1 of it: {ns}/old-0 "
            f"(deletionTimestamp {rfc3339(DELETED)}, grace 30s)" in full.detail
        ), full.detail
        defaulted = findings[f"LimitRange {ns}/gpu-limits gives every container 2 nvidia.com/gpu by default"]
        assert [o for o in defaulted.objects if o.startswith("pod/")] == [f"pod/{ns}/web"]
    return int(snap.pods.walks + snap.quotas.walks)


def test_findings_walk_the_pods_and_quotas_as_often_for_40_namespaces_as_for_2() -> None:
    """main at 0db8bac: 16 walks for 2 namespaces, 54 for 40 (a walk of every pod per GPU-defaulting LimitRange)."""
    assert _find_walks(40) == _find_walks(2)


def test_each_pending_pods_notes_name_its_own_namespaces_full_quota_by_lookup() -> None:
    """The quota note of each of 40 Pending pods names its own namespace's quota (the API server refuses new
    pods there at admission); the 40 explanations walk the quota list once in all (main: 40 times)."""
    snap = _tenants(40)
    engine = Engine(snap)
    pending = [p for p in snap.pods if p.name == "wait-0"]
    assert len(pending) == 40 and not any(p.node_name for p in pending)
    snap.quotas.walks = 0
    for pod in pending:
        quota_notes = [n for n in explain_pod(engine, pod).notes if n.startswith("ResourceQuota ")]
        assert quota_notes == [
            f"ResourceQuota gpu in {pod.namespace}: requests.nvidia.com/gpu used 2 of 2: new pods asking for it "
            "are rejected at admission, not left Pending."
        ]
    assert snap.quotas.walks <= 1, snap.quotas.walks
