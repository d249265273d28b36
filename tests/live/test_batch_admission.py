"""Queue and gang admission in the live scheduler (issues 6 and 9): ``kubegpu scheduler`` as a real process
against the emulated API server, with the batch CRDs served (or not) by it.

Pins: a gang is bound all-or-nothing (coscheduling's and Volcano's contract: no member is bound until
``minMember`` of them have a place in one cycle); a queue's quota (GpuQueue ``nominalQuota``, kubegpu's
own API) keeps a pod pending with the shortfall in the upstream ``FailedScheduling`` /
``PodScheduled=False`` ``Unschedulable`` shapes, and a quota changed through the API is honoured from
the watch; a gang member whose binding fails stops the gang's remaining bindings, and members already
bound count toward ``minMember`` when the rest is retried (coscheduling counts assigned pods at Permit);
without the CRDs (404) the scheduler warns once and carries on. Expected messages are worked out by
hand from ``batch.quota`` / ``batch.gang``'s documented wording and the upstream FitError format.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from kubegpu.kube.informer import BACKOFF_MAX_S, UNAVAILABLE_MAX_S, backoff_s
from tests.live.apiserver import Fault, RunningApiServer, patch_over_http, wait_until
from tests.live.conftest import Component, gpu_node, gpu_pod
from tests.live.observe import (
    COSCHEDULING,
    QUEUES,
    events_for,
    message_of,
    metric,
    metrics_of,
    node_of,
    scheduled_condition,
)


def gang(api: RunningApiServer, name: str, members: int, min_member: int, gpus: int) -> list[str]:
    """A coscheduling PodGroup and its member pods (label ``scheduling.x-k8s.io/pod-group``)."""
    api.emulator.create(
        COSCHEDULING, {"metadata": {"name": name, "namespace": "ml"}, "spec": {"minMember": min_member}}
    )
    names = [f"{name}-{i}" for i in range(members)]
    for pod in names:
        api.emulator.create("pods", gpu_pod(pod, gpus, labels={"scheduling.x-k8s.io/pod-group": name}))
    return names


def event_of(api: RunningApiServer, name: str, reason: str) -> dict[str, Any]:
    """The first Event of ``reason`` about pod ``name``, waited for: the scheduler's recorder writes Events
    from a worker thread after it patches the status they go with (``live.events``), so a test that saw the
    status may not see the Event yet."""
    found: dict[str, Any] = wait_until(
        lambda: next((e for e in events_for(api, name) if e["reason"] == reason), None),
        what=f"a {reason} event about {name}",
    )
    return found


def test_a_gang_that_only_partly_fits_is_never_partly_bound_and_binds_whole_when_room_appears(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """4 members × 4 GPUs against 8 + 4 free GPUs: three fit, so none is bound; a third node makes room
    for all four, and they are bound together."""
    api.emulator.install_crd(COSCHEDULING)
    api.emulator.create("nodes", gpu_node("gpu-1", 8))
    api.emulator.create("nodes", gpu_node("gpu-2", 4))
    members = gang(api, "train", 4, 4, 4)
    scheduler = start_scheduler("replica-a")

    wait_until(lambda: all(message_of(api, m) for m in members), what="every member explained")
    message = message_of(api, "train-3")
    # queue "default" (no queue label, coscheduling has no spec.queue); train-0..2 fit (3 × 4 of 12 GPUs),
    # train-3, the first by name that does not, gets the core's FitError over both nodes.
    assert message.startswith(
        "queue default, position 1 of 1: gang ml/train needs 4 of 4 pods (4×nvidia.com/gpu) placed together; "
        "only 3 fit now ("
    ), message
    assert ", so none is placed. train-3: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu." in message
    assert {message_of(api, m) for m in members} == {message}  # the gang is explained as one
    assert api.emulator.bindings == []
    failed = event_of(api, "train-0", "FailedScheduling")
    assert failed["type"] == "Warning" and failed["action"] == "Scheduling"
    assert scheduled_condition(api, "train-0")["reason"] == "Unschedulable"  # type: ignore[index]

    api.emulator.create("nodes", gpu_node("gpu-3", 8))
    wait_until(lambda: all(node_of(api, m) for m in members), what="the whole gang bound")
    per_node = Counter(node_of(api, m) for m in members)
    capacity = {"gpu-1": 8, "gpu-2": 4, "gpu-3": 8}
    assert all(4 * n <= capacity[node] for node, n in per_node.items()), per_node  # never over a node's GPUs
    assert Counter(key for key, _, _ in api.emulator.bindings) == {f"ml/{m}": 1 for m in members}
    assert "admitted ml/train: " in scheduler.output()


def test_a_queue_over_its_quota_keeps_its_pod_pending_until_the_quota_is_raised_through_the_api(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    api.emulator.install_crd(QUEUES)
    api.emulator.create(
        QUEUES, {"metadata": {"name": "team-a"}, "spec": {"nominalQuota": {"nvidia.com/gpu": "4"}}}
    )
    api.emulator.create("nodes", gpu_node("gpu-1", 8))
    api.emulator.create("pods", gpu_pod("first", 4, labels={"kubegpu.io/queue": "team-a"}, node="gpu-1"))
    api.emulator.create("pods", gpu_pod("second", 4, labels={"kubegpu.io/queue": "team-a"}))
    start_scheduler("replica-a")

    # the node has 4 GPUs free, the queue none: pool = its own nominal 4, its draw 4 + 4 = 8 → 0 to lend
    expected = (
        "queue team-a, position 1 of 1: quota of queue team-a: nvidia.com/gpu: needs 4, "
        "the queue uses 4 of nominal 4 and its cohort has 0 left to lend"
    )
    wait_until(lambda: message_of(api, "second") == expected, what="the quota shortfall")
    assert node_of(api, "second") == ""
    assert event_of(api, "second", "FailedScheduling")["note"] == expected

    patch_over_http(
        api, "/apis/kubegpu.io/v1alpha1/gpuqueues/team-a", {"spec": {"nominalQuota": {"nvidia.com/gpu": "8"}}}
    )
    wait_until(lambda: node_of(api, "second") == "gpu-1", what="bound after the quota was raised")


def test_a_failed_member_binding_stops_the_gang_and_the_rest_is_retried_counting_the_bound_member(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Bindings go one member after another (by name): train-0 is bound, train-1's binding fails (500
    without Retry-After, so the client does not retry it), train-2 and train-3 are never posted in that
    round; the retry places train-1..3 with minMember 4 - 1 bound = 3 and binds them."""
    api.emulator.install_crd(COSCHEDULING)
    api.emulator.create("nodes", gpu_node("gpu-1", 8))
    api.emulator.create("nodes", gpu_node("gpu-2", 8))
    api.emulator.faults.append(
        Fault("POST", r".*/pods/train-1/binding", 500, "InternalError", "etcdserver: leader changed")
    )
    members = gang(api, "train", 4, 4, 4)
    scheduler = start_scheduler("replica-a")

    wait_until(lambda: all(node_of(api, m) for m in members), what="the whole gang bound")
    assert next(key for key, _, _ in api.emulator.bindings) == "ml/train-0"
    assert [s.status for s in api.emulator.requests_to("POST", r".*/pods/train-1/binding")] == [500, 201]
    for later in ("train-2", "train-3"):  # not posted after train-1 failed, posted once on the retry
        assert [s.status for s in api.emulator.requests_to("POST", rf".*/pods/{later}/binding")] == [201]
    assert Counter(key for key, _, _ in api.emulator.bindings) == {f"ml/{m}": 1 for m in members}
    assert (
        "failed: POST /api/v1/namespaces/ml/pods/train-1/binding: HTTP 500 InternalError: etcdserver: leader changed"
        in scheduler.output()
    )
    skipped = wait_until(
        lambda: next((e for e in events_for(api, "train-2") if e["reason"] == "FailedScheduling"), None),
        what="train-2's FailedScheduling event",
    )
    assert skipped["note"] == (
        "not bound: gang member ml/train-1's binding failed (etcdserver: leader changed); the gang is retried"
    )


def test_without_the_batch_crds_the_scheduler_warns_once_and_queue_pods_go_without_quota(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """The CRDs are not installed: kube-apiserver answers 404 for their paths. A pod naming a queue is
    then admitted with no quota (no GpuQueue defines it), and plain pods are unaffected."""
    api.emulator.create("nodes", gpu_node("gpu-1", 8))
    api.emulator.create("pods", gpu_pod("queued", 2, labels={"kubegpu.io/queue": "team-a"}))
    api.emulator.create("pods", gpu_pod("plain", 2))
    scheduler = start_scheduler("replica-a")
    wait_until(lambda: node_of(api, "queued") and node_of(api, "plain"), what="both bound")
    # listed again with backoff (0.1 s, then 0.2 s, jittered down to half): three lists, one warning
    wait_until(
        lambda: len(api.emulator.requests_to("GET", r"/apis/kubegpu.io/v1alpha1/gpuqueues")) >= 3,
        what="GpuQueues listed three times",
    )
    out = scheduler.output()
    warning = (
        "cannot list GpuQueue objects (HTTP 404 Not Found: the API is not served: the server could not find "
        "the requested resource); pods naming a queue are admitted without queue quota"
    )
    assert out.count(warning) == 1, out


def test_a_gang_short_of_members_names_the_resource_quota_that_refuses_them_and_follows_its_changes(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """minMember 4 with 3 members created: the ResourceQuota of the namespace (``requests.nvidia.com/gpu``
    used 12 of hard 12, as the quota controller reports it) refuses the fourth at creation (R8.1), so
    the explanation says so; raising the quota's hard limit (seen through the watch) drops that part."""
    api.emulator.install_crd(COSCHEDULING)
    api.emulator.create("nodes", gpu_node("gpu-1", 16))
    api.emulator.create(
        "resourcequotas",
        {
            "metadata": {"name": "gpu-quota", "namespace": "ml"},
            "spec": {"hard": {"requests.nvidia.com/gpu": "12"}},
            "status": {"hard": {"requests.nvidia.com/gpu": "12"}, "used": {"requests.nvidia.com/gpu": "12"}},
        },
    )
    api.emulator.create(
        COSCHEDULING, {"metadata": {"name": "train", "namespace": "ml"}, "spec": {"minMember": 4}}
    )
    for i in range(3):
        api.emulator.create(
            "pods", gpu_pod(f"train-{i}", 4, labels={"scheduling.x-k8s.io/pod-group": "train"})
        )
    start_scheduler("replica-a")

    gang_part = (
        "queue default, position 1 of 1: gang ml/train needs 4 of 3 pods (4×nvidia.com/gpu) placed together; "
        "only 3 fit now (train-0→gpu-1, train-1→gpu-1, train-2→gpu-1), so none is placed; "
        "only 3 member pods exist yet (minMember 4)"
    )
    quota_part = (
        "; ResourceQuota ml/gpu-quota has requests.nvidia.com/gpu used 12 of hard 12, so a missing member "
        "asking for 4 is refused at creation (exceeded quota)"
    )
    wait_until(lambda: message_of(api, "train-0") == gang_part + quota_part, what="the quota named")
    patch_over_http(
        api,
        "/api/v1/namespaces/ml/resourcequotas/gpu-quota",
        {"spec": {"hard": {"requests.nvidia.com/gpu": "16"}}},
    )
    wait_until(lambda: message_of(api, "train-0") == gang_part, what="the quota no longer named")
    assert api.emulator.bindings == []


def test_a_gang_preempts_the_cheapest_lower_priority_pods_whole_then_binds_into_their_room(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """batch/gang_preemption.py's worked example, live: three full 4-GPU nodes whose pods would lose
    2400, 1200 and 240 GPU-seconds (4 GPUs × 600, 300, 60 s since their last checkpoints); a gang of two
    4-GPU pods of higher priority evicts the 240 and the 1200 ones through the Eviction API and leaves
    the 2400 one running, then binds into their nodes."""
    api.emulator.install_crd(COSCHEDULING)
    now = dt.datetime.now(dt.UTC)
    for i, age in enumerate((600, 300, 60), start=1):
        api.emulator.create("nodes", gpu_node(f"gpu-{i}", 4))
        low = gpu_pod(f"low-{age}", 4, node=f"gpu-{i}")
        checkpoint = (now - dt.timedelta(seconds=age)).strftime("%Y-%m-%dT%H:%M:%SZ")
        low["metadata"]["annotations"] = {"kubegpu.io/last-checkpoint-time": checkpoint}
        low["status"]["startTime"] = (now - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        api.emulator.create("pods", low)
    api.emulator.create(
        COSCHEDULING, {"metadata": {"name": "train", "namespace": "ml"}, "spec": {"minMember": 2}}
    )
    for name in ("train-0", "train-1"):
        labels = {"scheduling.x-k8s.io/pod-group": "train"}
        api.emulator.create("pods", gpu_pod(name, 4, priority=1000, labels=labels))
    scheduler = start_scheduler("replica-a")

    wait_until(lambda: node_of(api, "train-0") and node_of(api, "train-1"), what="the gang bound")
    assert {node_of(api, "train-0"), node_of(api, "train-1")} == {"gpu-2", "gpu-3"}
    evicted = {s.path.split("/")[-2] for s in api.emulator.requests_to("POST", r".*/eviction")}
    assert evicted == {"low-60", "low-300"}
    assert node_of(api, "low-600") == "gpu-1"
    assert re.search(r"preemption for ml/train evicted 2 of 2 pods, \d+ GPU-seconds lost", scheduler.output())
    lost = metric(metrics_of(scheduler), "kubegpu_preemption_lost_gpu_seconds_total")
    assert 1440 <= lost <= 1440 + 8 * 30  # plus 8 GPUs × the seconds the test took to get there
    event_of(api, "low-60", "Preempted")  # (written after the eviction)
    notes = {e["note"] for e in events_for(api, "low-60") if e["reason"] == "Preempted"}
    assert len(notes) == 1 and re.fullmatch(r"Preempted by pod \S+ on node gpu-3", notes.pop())


def test_a_crd_installed_after_the_start_is_picked_up_without_a_restart(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """client-go's reflector keeps listing a kind that is not served (backoff capped at 30 s); so does
    kubegpu's: a GpuQueue CRD installed while the scheduler runs brings its quota into force."""
    api.emulator.create("nodes", gpu_node("gpu-1", 8))
    scheduler = start_scheduler("replica-a")
    wait_until(lambda: "cannot list GpuQueue objects" in scheduler.output(), what="the 404 warning")
    api.emulator.install_crd(QUEUES)
    api.emulator.create(
        QUEUES, {"metadata": {"name": "team-a"}, "spec": {"nominalQuota": {"nvidia.com/gpu": "2"}}}
    )
    served = "GpuQueue: /apis/kubegpu.io/v1alpha1/gpuqueues is served now"
    # without the CRD a queue-labelled pod goes without quota: create it once the queue is listed
    wait_until(lambda: served in scheduler.output(), timeout=40, what="the GpuQueue list")
    api.emulator.create("pods", gpu_pod("big", 4, labels={"kubegpu.io/queue": "team-a"}))
    expected = (
        "queue team-a, position 1 of 1: quota of queue team-a: nvidia.com/gpu: needs 4, "
        "the queue uses 0 of nominal 2 and its cohort has 2 left to lend"
    )
    wait_until(lambda: message_of(api, "big") == expected, what="the new queue's quota applied")
    assert node_of(api, "big") == ""


def test_a_gang_nominated_where_its_victims_are_still_terminating_waits_for_them_without_preempting_again(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """What a restarted scheduler finds after its predecessor preempted: the victim terminating
    (``deletionTimestamp`` set, still on its node) and the gang's member nominated there. As
    kube-scheduler's ``PodEligibleToPreemptOthers``, it waits for the victim instead of preempting anew
    (the other node's lower-priority pod is not touched), and binds once the victim is gone."""
    api.emulator.install_crd(COSCHEDULING)
    api.emulator.create("nodes", gpu_node("gpu-1", 4))
    api.emulator.create("nodes", gpu_node("gpu-2", 4))
    leaving = gpu_pod("leaving", 4, node="gpu-1")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    api.emulator.create("pods", leaving)
    api.emulator.create("pods", gpu_pod("other", 4, node="gpu-2"))
    api.emulator.create(
        COSCHEDULING, {"metadata": {"name": "train", "namespace": "ml"}, "spec": {"minMember": 1}}
    )
    member = gpu_pod("train-0", 4, priority=1000, labels={"scheduling.x-k8s.io/pod-group": "train"})
    member["status"]["nominatedNodeName"] = "gpu-1"
    api.emulator.create("pods", member)
    start_scheduler("replica-a")

    expected = "queue default: waiting for 1 preempted pods to leave: ml/leaving"
    wait_until(lambda: message_of(api, "train-0") == expected, what="waiting for the victim")
    assert api.emulator.requests_to("POST", r".*/eviction") == []
    api.emulator.delete("pods", "ml", "leaving")
    wait_until(lambda: node_of(api, "train-0") == "gpu-1", what="bound into the victim's room")
    assert node_of(api, "other") == "gpu-2" and api.emulator.requests_to("POST", r".*/eviction") == []


def test_a_partly_bound_gang_found_at_start_places_the_rest_whole_counting_its_bound_members(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """What a scheduler restarted in the middle of a gang's bindings finds: two of four members bound. The
    other two are the rest of the gang (minMember 4 - 2 bound = 2): with room for one, neither is bound;
    with room for both, both are."""
    api.emulator.install_crd(COSCHEDULING)
    api.emulator.create("nodes", gpu_node("gpu-1", 8))
    api.emulator.create("nodes", gpu_node("gpu-2", 4))
    api.emulator.create(
        COSCHEDULING, {"metadata": {"name": "train", "namespace": "ml"}, "spec": {"minMember": 4}}
    )
    labels = {"scheduling.x-k8s.io/pod-group": "train"}
    for i in range(4):
        api.emulator.create("pods", gpu_pod(f"train-{i}", 4, labels=labels, node="gpu-1" if i < 2 else ""))
    start_scheduler("replica-a")

    expected = (
        "queue default, position 1 of 1: gang ml/train needs 2 of 2 pods (4×nvidia.com/gpu) placed together; "
        "only 1 fit now (train-2→gpu-2), so none is placed. train-3: 0/2 nodes are available: "
        "2 Insufficient nvidia.com/gpu. 2 of its members are bound already and count toward minMember."
    )
    wait_until(lambda: message_of(api, "train-3") == expected, what="the rest explained")
    assert api.emulator.bindings == []
    api.emulator.create("nodes", gpu_node("gpu-3", 4))
    wait_until(lambda: node_of(api, "train-2") and node_of(api, "train-3"), what="the rest bound")
    assert {node_of(api, "train-2"), node_of(api, "train-3")} == {"gpu-2", "gpu-3"}


def test_the_relist_backoff_doubles_to_its_cap_and_stays_there_however_long_the_failures_last() -> None:
    """client-go's reflector backoff as the informer models it: 0.1 s doubling per failure in a row up to
    the cap (30 s for a kind not served, 5 s for other failures), jittered to [½, 1) of it. Worked by
    hand: failure 1 → [0.05, 0.1); failure 9 → 0.1 · 2^8 = 25.6 → [12.8, 25.6); from failure 10 on
    (51.2 > 30) → [15, 30) — still after 2,000 failures, a CRD missing for about half a day, where
    0.1 · 2^1999 does not fit a float."""
    for _ in range(50):  # the jitter is random: its range, many draws
        assert 0.05 <= backoff_s(1, UNAVAILABLE_MAX_S) < 0.1
        assert 12.8 <= backoff_s(9, UNAVAILABLE_MAX_S) < 25.6
        assert 15.0 <= backoff_s(10, UNAVAILABLE_MAX_S) < 30.0
        assert 15.0 <= backoff_s(2000, UNAVAILABLE_MAX_S) < 30.0
        assert 2.5 <= backoff_s(2000, BACKOFF_MAX_S) < 5.0
