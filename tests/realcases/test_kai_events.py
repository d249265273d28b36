"""Which events are kai-scheduler's word about a pod: one rule (``explain.kai_events``) for the MaxNodeResources
miscount note, the non-preemptible quota cause and "the cluster said". kai-scheduler writes its refusal on the
pod and on the pod's PodGroup (KAI pkg/scheduler/cache/status_updater/default_status_updater.go
markPodGroupUnschedulable; EventSource{Component: schedulerName}); the pod's PodGroup is the one its
pod-group-name annotation names (KAI pkg/common/constants/constants.go PodGroupAnnotationForPod), else a
PodGroup event naming the pod as "pod <ns>/<name>" (kai-scheduler/KAI-Scheduler#1876 posted the PodGroup
event, "… Resources were not found for pod dynamo/qwen3-embedding-0-vllmdecodeworker-4p8dk due to: …"). Before,
the miscount note matched any PodGroup event whose message merely contained "<ns>/<name>", and ignored the
pod-group-name annotation the quota cause read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubegpu.explain import kai_events
from kubegpu.model.snapshot import build_snapshot
from tests.realcases.cases import HERE, diagnosed
from tests.walks import CountedList

FIXTURE = HERE / "kai-mig-mixed-max-node.yaml"
POD = "name: qwen3-embedding-0-vllmdecodeworker-4p8dk\n  namespace: dynamo"
MISCOUNT = "kai-scheduler's MaxNodeResources miscount: the nodes advertise what it says no node has"


def _variant(tmp_path: Path, old: str, new: str) -> dict[str, Any]:
    text = FIXTURE.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "variant.yaml"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return diagnosed(path)


def test_a_podgroup_event_naming_a_longer_pod_name_is_not_this_pods_kai_1876(tmp_path: Path) -> None:
    # pod ...-4p8d: the PodGroup event names dynamo/...-4p8dk, another pod; the miscount is not this pod's
    out = _variant(tmp_path, POD, POD.replace("-4p8dk", "-4p8d"))
    assert out["summary"]["causes"] == [{"cause": "handled by kai-scheduler", "pods": 1}]
    pending = out["pending"][0]
    assert pending["observed"] is None
    assert not any("No node in the default node-pool" in n for n in pending["notes"])


def test_the_podgroup_named_by_the_pod_group_name_annotation_is_read_kai_1876(tmp_path: Path) -> None:
    # a second pod of the same PodGroup (the event names its sibling ...-4p8dk): KAI refused the gang, and its
    # pod-group-name annotation says whose PodGroup it is, so the miscount is its cause too
    sibling = (
        POD.replace("-4p8dk", "-7xq2m")
        + "\n  annotations: {pod-group-name: qwen3-embedding-0-vllmdecodeworker}"
    )
    out = _variant(tmp_path, POD, sibling)
    assert out["summary"]["causes"] == [{"cause": MISCOUNT, "pods": 1}]
    observed = out["pending"][0]["observed"]
    assert observed["about"] == "PodGroup dynamo/qwen3-embedding-0-vllmdecodeworker"


def _event(i: int, kind: str, name: str, message: str, component: str = "kai-scheduler") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"e{i}", "namespace": "ml"},
        "involvedObject": {"kind": kind, "name": name, "namespace": "ml"},
        "reason": "Unschedulable",
        "type": "Normal",
        "source": {"component": component},
        "message": message,
    }


def test_each_pods_kai_events_are_a_lookup_not_a_scan_of_every_event() -> None:
    """diagnose reads the KAI events of each of up to 1,000 Pending pods: the events are walked to build the
    indexes once, never once per pod."""
    pods = 200
    objs: list[dict[str, Any]] = []
    for i in range(pods):
        objs.append(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"w-{i}", "namespace": "ml"},
             "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "c", "image": "x"}]}}
        )  # fmt: skip
        objs.append(_event(2 * i, "Pod", f"w-{i}", "own"))
        objs.append(
            _event(2 * i + 1, "PodGroup", f"pg-{i}", f"Unable to schedule podgroup: for pod ml/w-{i} due to")
        )
    objs.append(_event(-1, "PodGroup", "pg-x", "for pod ml/w-1 due to", component="volcano"))  # not KAI's
    snap = build_snapshot([("t.yaml", o) for o in objs])
    assert not snap.errors
    snap.records.events = walked = CountedList(snap.records.events)
    for pod in snap.pods:
        said = kai_events.events(snap, pod)
        n = int(pod.name.split("-")[1])
        assert [e.name for e in said] == [f"e{2 * n}", f"e{2 * n + 1}"]  # its own, then its PodGroup's
    assert walked.walks <= 3, walked.walks
    # "ml/w-1" is named whole: the events naming ml/w-10 … ml/w-199 are not w-1's
    w1 = snap.pod("ml/w-1")
    assert w1 is not None and [e.name for e in kai_events.group_events(snap, w1)] == ["e3"]
