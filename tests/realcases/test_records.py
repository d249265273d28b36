"""The objects ``model.records`` reads, the observed-vs-predicted comparison and the exit-code rule, on
hand-written objects (expected values derived in the comments)."""

from __future__ import annotations

from typing import Any

from kubegpu.explain.engine import Engine
from kubegpu.explain.findings import Finding, exit_code
from kubegpu.explain.observed import SAME_ATTEMPT_S, seen
from kubegpu.explain.pending import explain_pod
from kubegpu.model.snapshot import build_snapshot
from kubegpu.testing.builders import make_node, make_pod


def test_a_broken_daemonset_is_one_error_naming_its_field_and_the_rest_loads() -> None:
    ds = {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "dp", "namespace": "kube-system"},
        "spec": {"template": {"spec": {"containers": [{"name": "c"}], "tolerations": [{"operator": "Maybe"}]}}},
    }  # fmt: skip
    snap = build_snapshot([("f.yaml", ds), ("f.yaml", make_node("n1").obj())])
    assert [e.one_line() for e in snap.errors] == [
        "f.yaml: DaemonSet kube-system/dp: spec.template.spec.tolerations[0].operator: "
        "unsupported value 'Maybe': must be Equal or Exists"
    ]
    assert [n.name for n in snap.nodes] == ["n1"]


def test_events_of_both_apis_are_read() -> None:
    core = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", "namespace": "a"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "a"}, "reason": "FailedScheduling",
            "message": "m1", "type": "Warning", "count": 4, "source": {"component": "default-scheduler"}}  # fmt: skip
    new = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e2", "namespace": "a"},
           "regarding": {"kind": "Pod", "name": "p", "namespace": "a"}, "reason": "FailedScheduling",
           "note": "m2", "type": "Warning", "reportingController": "volcano", "series": {"count": 2}}  # fmt: skip
    snap = build_snapshot([("e", core), ("e", new)])
    got = [(e.message, e.component, e.count) for e in snap.records.events_about("Pod", "a", "p")]
    assert got == [("m1", "default-scheduler", 4), ("m2", "volcano", 2)]
    # the lookup is indexed: an event read after a first lookup is found too, one of a namespace that is not
    # the object's is not, and an event whose involvedObject has no namespace (a cluster-scoped writer's) is
    later = {**core, "metadata": {"name": "e3", "namespace": "a"}, "message": "m3"}
    other_ns = {**core, "metadata": {"name": "e4", "namespace": "b"},
                "involvedObject": {"kind": "Pod", "name": "p", "namespace": "b"}, "message": "m4"}  # fmt: skip
    no_ns = {**core, "metadata": {"name": "e5", "namespace": "a"}, "involvedObject": {"kind": "Pod", "name": "p"},
             "message": "m5"}  # fmt: skip
    for i, raw in enumerate((later, other_ns, no_ns)):
        snap.records.add(raw, f"e{i}")
    got = [e.message for e in snap.records.events_about("Pod", "a", "p")]
    assert got == ["m1", "m2", "m3", "m5"]
    assert [e.message for e in snap.records.events_about("Pod", "b", "p")] == ["m4", "m5"]


def _with_event(pod: dict[str, Any], message: str) -> list[tuple[str, dict[str, Any]]]:
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "default"},
             "involvedObject": {"kind": "Pod", "name": pod["metadata"]["name"], "namespace": "default"},
             "reason": "FailedScheduling", "message": message, "type": "Warning",
             "source": {"component": "default-scheduler"}}  # fmt: skip
    return [("t", make_node("n1").capacity(cpu=4).obj()), ("t", pod), ("t", event)]


def test_observed_message_equal_to_the_prediction_agrees() -> None:
    # one 4-CPU node, a pod asking 8 CPUs: NodeResourcesFit's "Insufficient cpu" on the only node, and
    # preemption cannot help (no victims): the 1.37 message below, written out by hand
    message = (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 Preemption is not helpful for scheduling."
    )
    snap = build_snapshot(_with_event(make_pod("big").requests(cpu=8).obj(), message))
    snap.kube_version = "1.37"
    engine = Engine(snap)
    pod = snap.pod("default/big")
    assert pod is not None
    got = explain_pod(engine, pod)
    assert got.message == message
    assert got.observed is not None and got.observed["agrees"] is True and got.observed["likelyReasons"] == []


def test_exit_code_follows_the_worst_severity() -> None:
    def f(sev: str) -> Finding:
        return Finding(sev, "node", "t", [], "d", "")

    assert exit_code([]) == 0
    assert exit_code([f("info")]) == 0
    assert exit_code([f("info"), f("warning")]) == 1
    assert exit_code([f("warning"), f("critical")]) == 2


def _event(name: str, reason: str, component: str, message: str, at: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": reason,
            "message": message, "type": "Warning", "source": {"component": component}, "lastTimestamp": at}  # fmt: skip


def _seen(scheduler: str, *events: dict[str, Any]) -> tuple[str, str, str] | None:
    pod = make_pod("p").obj()
    pod["spec"]["schedulerName"] = scheduler
    snap = build_snapshot([("t", pod), *(("t", e) for e in events)])
    p = snap.pod("default/p")
    assert p is not None
    obs = seen(snap, p)
    return None if obs is None else (obs.reason, obs.reporter, obs.message)


FS = "0/1 nodes are available: preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."


def test_another_schedulers_own_reason_counts_for_its_pods_only() -> None:
    hami = _event(
        "h", "FilteringFailed", "hami-scheduler", "1 nodes CardInsufficientMemory(n1)", "2026-01-01T10:00:00Z"
    )
    kai = _event("k", "Unschedulable", "kai-scheduler", "Unable to schedule pod", "2026-01-01T10:00:00Z")
    assert _seen("hami-scheduler", hami) == (
        "FilteringFailed",
        "hami-scheduler",
        "1 nodes CardInsufficientMemory(n1)",
    )
    assert _seen("kai-scheduler", kai) == ("Unschedulable", "kai-scheduler", "Unable to schedule pod")
    # the same reasons on a pod of another scheduler, or written by another component, are not its verdict
    assert _seen("default-scheduler", hami, kai) is None
    assert _seen("kai-scheduler", {**kai, "source": {"component": "pod-grouper"}}) is None
    # HAMi's extender says "does not request any resource" and passes every node: no filter failure
    assert _seen("hami-scheduler", {**hami, "message": "does not request any resource"}) is None


def test_an_attempts_own_event_wins_over_its_failed_scheduling_but_not_over_a_later_one() -> None:
    own = _event("h", "FilteringFailed", "hami-scheduler", "no available node, all node scores do not meet",
                 "2026-01-01T10:00:00Z")  # fmt: skip
    # kube-scheduler's FailedScheduling of the same attempt, a second later: the extender's words are shown
    same = _event("f", "FailedScheduling", "hami-scheduler", FS, "2026-01-01T10:00:01Z")
    assert _seen("hami-scheduler", own, same) == ("FilteringFailed", "hami-scheduler", own["message"])
    # a FailedScheduling of a later attempt (more than SAME_ATTEMPT_S after): that one is the newest word
    assert SAME_ATTEMPT_S < 60
    later = {**same, "lastTimestamp": "2026-01-01T10:01:00Z"}
    assert _seen("hami-scheduler", own, later) == ("FailedScheduling", "hami-scheduler", FS)
    # no times (hand-written events): the scheduler's own word
    untimed = _seen("hami-scheduler", {**own, "lastTimestamp": ""}, {**same, "lastTimestamp": ""})
    assert untimed is not None and untimed[0] == "FilteringFailed"


# Shopify/krane#666: `kubectl get events.events.k8s.io -o json` of a FailedScheduling Event the scheduler wrote
# through core/v1 (as quoted there; ``type`` is Warning, as for every FailedScheduling)
KRANE_666 = {
    "action": "", "apiVersion": "events.k8s.io/v1beta1", "deprecatedCount": 25,
    "deprecatedFirstTimestamp": "2020-01-17T04:41:19Z", "deprecatedLastTimestamp": "2020-01-17T04:41:48Z",
    "deprecatedSource": {"component": "default-scheduler"}, "eventTime": None, "kind": "Event",
    "metadata": {"creationTimestamp": "2020-01-17T04:41:19Z", "name": "pvc.15ea92d8cdd043b9",
                 "namespace": "k8sdeploy-test-pvc-no-pv-cfe011ad17574fc0", "resourceVersion": "23534"},
    "note": "0/1 nodes are available: 1 node(s) didn't find available persistent volumes to bind.",
    "reason": "FailedScheduling", "type": "Warning",
    "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "pvc", "namespace": "k8sdeploy-test-pvc-no-pv-cfe011ad17574fc0"},
}  # fmt: skip


def test_an_event_read_through_events_k8s_io_keeps_its_count_source_and_time() -> None:
    """kubernetes pkg/apis/events/v1/conversion.go: core Count = DeprecatedCount, Source = DeprecatedSource,
    LastTimestamp = DeprecatedLastTimestamp."""
    snap = build_snapshot([("e.json", KRANE_666)])
    assert not snap.errors
    (event,) = snap.records.events_about("Pod", "k8sdeploy-test-pvc-no-pv-cfe011ad17574fc0", "pvc")
    assert (event.count, event.component, event.last_seen) == (
        25,
        "default-scheduler",
        "2020-01-17T04:41:48Z",
    )
