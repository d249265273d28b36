"""A Pending pod whose ResourceClaims cannot be resolved is never tried: DynamicResources' PreEnqueue
(kubernetes pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go ``PreEnqueue``:
``foreachPodResourceClaim`` failing is UnschedulableAndUnresolvable) keeps it out of the active queue, so
kube-scheduler writes no FailedScheduling event for it; kube-controller-manager's resource claim controller
(pkg/controller/resourceclaim/controller.go) records ``FailedResourceClaimCreation`` on the pod instead.
QA case: NVIDIA/k8s-dra-driver-gpu's gpu-simple-mig demo pod with a misspelt template name.
"""

from __future__ import annotations

from typing import Any

from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.explain.summary import NOT_QUEUED, _cause
from kubegpu.model.snapshot import build_snapshot
from tests.dra import objects as o


def _explain(*objs: dict[str, Any], minor: str = "1.36") -> Any:
    snap = build_snapshot([("t.yaml", x) for x in (*o.gpu_classes(), *o.gpu_node("n1", 1), *objs)])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    snap.kube_version = minor
    engine = Engine(snap)
    return explain_pod(engine, next(p for p in snap.pods if p.name == "p"))


def test_a_missing_template_is_named_and_no_failed_scheduling_message_is_claimed() -> None:
    exp = _explain(o.pod("p", ("gpu", "", "rct-single-gpu")))
    assert exp.not_queued.startswith(
        'kube-scheduler keeps the pod out of its scheduling queue (DynamicResources PreEnqueue: pod "default/p": '
        "ResourceClaim not created yet): no scheduling attempt and no FailedScheduling event"
    )
    assert "ResourceClaimTemplate default/rct-single-gpu, which is not in the snapshot" in exp.not_queued
    assert "FailedResourceClaimCreation" in exp.not_queued
    assert _cause(exp, None) == (NOT_QUEUED, exp.not_queued)
    assert exp.to_dict()["notQueued"] == exp.not_queued


def test_a_named_claim_that_does_not_exist() -> None:
    exp = _explain(o.pod("p", ("gpu", "missing", "")))
    assert 'could not find ResourceClaim "default/missing"' in exp.not_queued
    assert "names ResourceClaim default/missing, which does not exist" in exp.not_queued


def test_resolved_claims_and_dra_off_are_queued() -> None:
    """A claim that exists is queued as usual; in 1.33 DRA is off by default (no DynamicResources in the
    profile: kube-scheduler ignores the claims), so PreEnqueue does not run either."""
    ok = _explain(o.claim("c", o.request("gpu", count=1)), o.pod("p", ("gpu", "c", "")))
    assert ok.not_queued == "" and ok.schedulable
    assert _explain(o.pod("p", ("gpu", "", "rct-single-gpu")), minor="1.33").not_queued == ""
