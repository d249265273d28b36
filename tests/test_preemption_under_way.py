"""A pod whose preemption already happened: nominated to a node where the lower-priority pod it evicted is still
terminating. The cluster's message is the preempting attempt's; kube-scheduler's next attempt does not preempt
again (pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go ``PodEligibleToPreemptOthers`` at
v1.33.13 and v1.37.2: "not eligible due to a terminating pod on the nominated node."). diagnose must say the
preemption is under way (wait for the victim), not advise preempting. Snapshots from the real control plane
(``tests/fixtures/kube_gpu_snapshots/README.md``; case ``tests/fixtures/kube_gpu/preemption-pdb-victims.yaml``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubegpu import sources
from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.explain.summary import PREEMPTING, PREEMPTS
from tests.summaries import summary_of

SNAPSHOTS = Path(__file__).resolve().parent / "fixtures" / "kube_gpu_snapshots"
POD = "case-4/train-0"


def _snapshot(minor: str, tmp_path: Path, *, victim_terminating: bool = True):  # type: ignore[no-untyped-def]
    path = SNAPSHOTS / f"preemption-pdb-victims.{minor}.json"
    if not victim_terminating:
        data = json.loads(path.read_text())
        for item in data["items"]:
            item["metadata"].pop("deletionTimestamp", None)
        path = tmp_path / path.name
        path.write_text(json.dumps(data))
    snap = sources.load_files(path)
    snap.kube_version = minor
    return snap


@pytest.mark.parametrize("minor", ["1.33", "1.37"])
def test_a_preemption_under_way_is_said_and_waiting_is_the_first_step(minor: str, tmp_path: Path) -> None:
    snap = _snapshot(minor, tmp_path)
    pod = snap.pod(POD)
    assert pod is not None
    exp = explain_pod(Engine(snap), pod)
    assert exp.message.endswith("preemption: not eligible due to a terminating pod on the nominated node.")
    assert (exp.preempting, exp.nominated_node, exp.victims) == (True, "c4-gpu-b", ["case-4/batch-0"])
    assert exp.observed is not None and exp.observed["agrees"] is False
    assert any(
        "already preempted" in why and "case-4/batch-0" in why for why in exp.observed["likelyReasons"]
    )
    assert not any("cluster changed" in why for why in exp.observed["likelyReasons"])
    # `--pod` shows the shortage panel's generic fix ("let the pod preempt lower-priority ones"): a note says
    # the preemption is done and waiting is all (QA round 17)
    assert any(n.startswith("preemption under way:") and "case-4/batch-0" in n for n in exp.notes), exp.notes
    summary = summary_of(snap)
    assert summary.causes == [(PREEMPTING, 1)]
    assert summary.first_step.startswith(
        "Preemption under way: kube-scheduler evicted 1 lower-priority pod(s)"
    )


def test_the_next_attempts_message_is_the_real_one(tmp_path: Path) -> None:
    """1.30.14's scheduler retried before the snapshot: its message is kubegpu's prediction, byte for byte."""
    snap = _snapshot("1.30", tmp_path)
    pod = snap.pod(POD)
    assert pod is not None
    exp = explain_pod(Engine(snap), pod)
    assert exp.observed is not None and exp.observed["agrees"] is True
    assert exp.preempting and summary_of(snap).causes == [(PREEMPTING, 1)]


def test_without_a_terminating_victim_it_is_a_preemption_to_come(tmp_path: Path) -> None:
    snap = _snapshot("1.37", tmp_path, victim_terminating=False)
    pod = snap.pod(POD)
    assert pod is not None
    exp = explain_pod(Engine(snap), pod)
    assert not exp.preempting
    assert summary_of(snap).causes == [(PREEMPTS, 1)]
