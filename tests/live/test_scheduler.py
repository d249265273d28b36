"""``kubegpu scheduler`` as a real process against the emulated API server over HTTP (issue 9, R11.1).

Each test states the kube-scheduler 1.34 / client-go behaviour it pins. Expected messages are derived by
hand from upstream's formatting rules (``FitError.Error()``: ``0/N nodes are available:``, the
``"<count> <reason>"`` histogram sorted as text, then the preemption part), not computed by kubegpu.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable

from tests.live.apiserver import Fault, RunningApiServer, wait_until
from tests.live.conftest import Component, gpu_node, gpu_pod
from tests.live.observe import binding_count, events_for, node_of, scheduled_condition, settled_events

# Affinity sorts before taint: "1 node(s) d…" < "1 node(s) h…" as plain text.
BLOCKED_MESSAGE = (
    "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
    "1 node(s) had untolerated taint(s). "
    "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
)


def logged_statuses(api: RunningApiServer, method: str, pattern: str, count: int) -> list[int]:
    """The statuses of the first ``count`` logged requests. The test apiserver logs a request after it has
    dispatched it (``_reply``), so a pod can show as bound an instant before its binding is in the log."""
    wait_until(
        lambda: len(api.emulator.requests_to(method, pattern)) >= count, what=f"{count} {pattern} logged"
    )
    return [s.status for s in api.emulator.requests_to(method, pattern)]


def two_node_cluster(api: RunningApiServer) -> None:
    api.emulator.create("nodes", gpu_node("gpu-1"))
    api.emulator.create("nodes", gpu_node("gpu-2", taint=True))


def test_binds_its_pods_and_reports_failures_like_kube_scheduler(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Pins: schedulerName selects the scheduler; DefaultBinder POSTs pods/binding; success records the
    Normal ``Scheduled`` event ``Successfully assigned ml/fits to gpu-1`` (action Binding); failure the
    Warning ``FailedScheduling`` event (action Scheduling) and ``PodScheduled=False``/``Unschedulable``
    with the full FitError message; events come from ``reportingController: kubegpu`` (events.k8s.io/v1)."""
    two_node_cluster(api)
    api.emulator.create("pods", gpu_pod("fits", 4))
    api.emulator.create("pods", gpu_pod("not-ours", 1, scheduler="default-scheduler"))
    blocked = gpu_pod("blocked", 1)
    blocked["spec"]["nodeSelector"] = {"pool": "inference"}
    api.emulator.create("pods", blocked)
    scheduler = start_scheduler()

    wait_until(lambda: node_of(api, "fits"), what="fits bound")
    assert node_of(api, "fits") == "gpu-1"  # gpu-2's taint is not tolerated
    condition = wait_until(lambda: scheduled_condition(api, "blocked"), what="blocked's condition")
    assert {k: condition[k] for k in ("status", "reason", "message")} == {
        "status": "False",
        "reason": "Unschedulable",
        "message": BLOCKED_MESSAGE,
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", condition["lastTransitionTime"])

    [scheduled] = wait_until(lambda: events_for(api, "fits"), what="Scheduled event")
    assert {k: scheduled[k] for k in ("type", "reason", "action", "note", "reportingController")} == {
        "type": "Normal",
        "reason": "Scheduled",
        "action": "Binding",
        "note": "Successfully assigned ml/fits to gpu-1",
        "reportingController": "kubegpu",
    }
    assert scheduled["regarding"]["kind"] == "Pod" and scheduled["regarding"]["namespace"] == "ml"
    failed = wait_until(lambda: events_for(api, "blocked"), what="FailedScheduling event")[0]
    assert {k: failed[k] for k in ("type", "reason", "action", "note")} == {
        "type": "Warning",
        "reason": "FailedScheduling",
        "action": "Scheduling",
        "note": BLOCKED_MESSAGE,
    }
    # the API server set PodScheduled=True on binding; the scheduler never touches other schedulers' pods
    assert scheduled_condition(api, "fits")["status"] == "True"  # type: ignore[index]
    assert node_of(api, "not-ours") == "" and events_for(api, "not-ours") == []
    assert binding_count(api) == {"ml/fits": 1}
    assert scheduler.proc.poll() is None, scheduler.output()


def test_event_note_is_truncated_at_1024_bytes_but_the_condition_keeps_the_full_message(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Pins upstream ``truncateMessage``: an event note over 1024 bytes is cut to 1020 bytes + ``" ..."``
    (events.k8s.io validation's NoteLengthLimit), while the PodScheduled condition carries all of it."""
    # Since 1.34 every untolerated taint is one text, so a long message needs many distinct reasons: the pod
    # asks for 40 extended resources no node offers (each node reports all 40, Insufficient <name>).
    for i in range(40):
        api.emulator.create("nodes", gpu_node(f"gpu-{i:02d}"))
    pod = gpu_pod("wide", 1)
    extra = {f"example.com/accelerator-{i:02d}": "1" for i in range(40)}
    pod["spec"]["containers"][0]["resources"]["requests"].update(extra)
    pod["spec"]["containers"][0]["resources"].setdefault("limits", {}).update(extra)
    api.emulator.create("pods", pod)
    start_scheduler()

    reasons = sorted(f"40 Insufficient example.com/accelerator-{i:02d}" for i in range(40))
    full = (
        f"0/40 nodes are available: {', '.join(reasons)}. "
        "preemption: 0/40 nodes are available: 40 Preemption is not helpful for scheduling."
    )
    assert len(full.encode()) > 1024
    condition = wait_until(lambda: scheduled_condition(api, "wide"), what="condition")
    assert condition["message"] == full
    [event] = wait_until(lambda: events_for(api, "wide"), what="event")
    assert event["note"] == full.encode()[:1020].decode() + " ..."
    assert len(event["note"].encode()) == 1024


def test_watch_resumes_from_its_resource_version_after_a_dropped_connection(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Pins client-go's Reflector: a watch that ends without 410 is re-opened from the last seen
    resourceVersion — the objects created while it was down arrive as events, with no new LIST."""
    two_node_cluster(api)
    api.emulator.create("pods", gpu_pod("before", 1))
    start_scheduler()
    wait_until(lambda: node_of(api, "before"), what="first pod bound")
    pod_lists = len(api.emulator.requests_to("GET", "/api/v1/pods"))
    watches_before = [s for s in api.emulator.requests_to("GET", "/api/v1/pods") if s.query.get("watch")]

    api.emulator.drop_watches()
    api.emulator.create("pods", gpu_pod("after", 1))

    wait_until(lambda: node_of(api, "after"), what="pod created during the outage bound")
    pod_requests = api.emulator.requests_to("GET", "/api/v1/pods")
    assert len([s for s in pod_requests if not s.query.get("watch")]) == pod_lists - len(watches_before)
    rewatch = [s for s in pod_requests if s.query.get("watch")][len(watches_before)]
    # resumed from a resourceVersion it had seen (not "" / "0", which would replay everything)
    assert int(rewatch.query["resourceVersion"]) > 0
    assert rewatch.query["allowWatchBookmarks"] == "true"
    assert binding_count(api) == {"ml/before": 1, "ml/after": 1}


def test_relists_after_410_gone_and_misses_nothing(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Pins the Reflector's 410 handling: while the pod watch is down (503s, retried with backoff) a pod is
    created and the server compacts its history past the watcher's resourceVersion; the re-watch gets an
    ERROR event with a 410 ``Expired`` Status (``too old resource version``), so the reflector LISTs
    again and watches from the new list's resourceVersion — and the pod is scheduled."""
    two_node_cluster(api)
    start_scheduler()
    # the pod watch itself open (the scheduler watches more kinds than pods; their order is not fixed)
    wait_until(
        lambda: [s for s in api.emulator.requests_to("GET", "/api/v1/pods") if s.query.get("watch")],
        what="the pod watch open",
    )
    lists_before = [s for s in api.emulator.requests_to("GET", "/api/v1/pods") if not s.query.get("watch")]
    outage = Fault(
        "GET",
        "/api/v1/pods",
        503,
        "ServiceUnavailable",
        "apiserver is shutting down",
        times=10**6,
        watch=True,
    )
    api.emulator.faults.append(outage)
    api.emulator.drop_watches()
    wait_until(
        lambda: [s for s in api.emulator.requests_to("GET", "/api/v1/pods") if s.status == 503],
        what="a failed re-watch",
    )
    api.emulator.create("pods", gpu_pod("during-gap", 2))
    api.emulator.compact()
    outage.times = 0

    wait_until(lambda: node_of(api, "during-gap"), what="pod from the compacted gap bound")
    pod_requests = api.emulator.requests_to("GET", "/api/v1/pods")
    lists_after = [s for s in pod_requests if not s.query.get("watch")]
    assert len(lists_after) == len(lists_before) + 1
    assert binding_count(api) == {"ml/during-gap": 1}


def test_bind_conflict_forgets_the_assumed_pod_records_the_error_and_retries_after_backoff(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Pins ``handleBindingCycleError``: a failed bind un-assumes the pod, records FailedScheduling with
    ``running Bind plugin "DefaultBinder": <API error>`` and PodScheduled=False/``SchedulerError``, and
    the pod is retried after its backoff; the retry binds it, once."""
    two_node_cluster(api)
    conflict = 'Operation cannot be fulfilled on pods/binding "racy": the object has been modified'
    api.emulator.faults.append(Fault("POST", r".*/pods/racy/binding", 409, "Conflict", conflict))
    api.emulator.create("pods", gpu_pod("racy", 8))
    start_scheduler()

    wait_until(lambda: node_of(api, "racy"), what="racy bound on retry")
    assert node_of(api, "racy") == "gpu-1"  # the 8-GPU node was released when the pod was forgotten
    attempts = api.emulator.requests_to("POST", r".*/pods/racy/binding")
    assert [s.status for s in attempts] == [409, 201]
    notes = [(e["type"], e["reason"], e["note"]) for e in settled_events(api, "racy", 2)]
    assert notes == [
        ("Warning", "FailedScheduling", f'running Bind plugin "DefaultBinder": {conflict}'),
        ("Normal", "Scheduled", "Successfully assigned ml/racy to gpu-1"),
    ]
    assert binding_count(api) == {"ml/racy": 1}


def test_throttling_is_retried_by_the_client_and_an_outage_by_the_scheduling_queue(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Pins client-go's REST retry — a 429 carrying ``Retry-After`` is retried inside the request — and
    kube-scheduler's handling of any other bind error: a 500 without ``Retry-After`` fails the binding
    cycle (FailedScheduling, ``running Bind plugin "DefaultBinder": …``) and the pod is retried after
    its backoff. It is bound once."""
    two_node_cluster(api)
    api.emulator.faults += [
        Fault("POST", r".*/pods/busy/binding", 429, "TooManyRequests", "Too many requests, please try again later.",
              headers={"Retry-After": "1"}),
        Fault("POST", r".*/pods/busy/binding", 500, "InternalError", "etcdserver: leader changed"),
    ]  # fmt: skip
    api.emulator.create("pods", gpu_pod("busy", 1))
    start_scheduler()

    wait_until(lambda: node_of(api, "busy"), what="busy bound")
    assert logged_statuses(api, "POST", r".*/pods/busy/binding", 3) == [429, 500, 201]
    assert [(e["reason"], e["note"]) for e in settled_events(api, "busy", 2)] == [
        ("FailedScheduling", 'running Bind plugin "DefaultBinder": etcdserver: leader changed'),
        ("Scheduled", "Successfully assigned ml/busy to gpu-1"),
    ]
    assert binding_count(api) == {"ml/busy": 1}


def test_two_replicas_with_one_lease_never_both_bind_and_the_standby_takes_over(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Pins client-go leader election on a coordination.k8s.io/v1 Lease: only the holder schedules; the
    standby takes over once the holder stops renewing for leaseDurationSeconds; no pod is bound twice."""
    two_node_cluster(api)
    first = start_scheduler("replica-a")
    wait_until(lambda: api.emulator.get("leases", "kube-system", "kubegpu-scheduler"), what="lease created")
    second = start_scheduler("replica-b")
    for i in range(4):
        api.emulator.create("pods", gpu_pod(f"wave1-{i}", 1))
    wait_until(lambda: all(node_of(api, f"wave1-{i}") for i in range(4)), what="wave 1 bound")
    lease = api.emulator.get("leases", "kube-system", "kubegpu-scheduler")
    assert lease is not None and lease["spec"]["holderIdentity"] == "replica-a"
    assert {agent for _, _, agent in api.emulator.bindings} == {"kubegpu-scheduler/replica-a"}

    first.kill()  # no clean release: the standby must wait out the lease
    for i in range(3):  # 4 + 3 GPUs: all fit on gpu-1's 8 (gpu-2 is tainted)
        api.emulator.create("pods", gpu_pod(f"wave2-{i}", 1))
    wait_until(lambda: all(node_of(api, f"wave2-{i}") for i in range(3)), timeout=30, what="wave 2 bound")
    lease = api.emulator.get("leases", "kube-system", "kubegpu-scheduler")
    assert lease is not None and lease["spec"]["holderIdentity"] == "replica-b"
    assert lease["spec"]["leaseTransitions"] == 1
    agents = {key: agent.rsplit("/", 1)[1] for key, _, agent in api.emulator.bindings}
    assert {k for k, a in agents.items() if a == "replica-b"} == {f"ml/wave2-{i}" for i in range(3)}
    assert set(binding_count(api).values()) == {1}
    assert second.proc.poll() is None, second.output()


def test_healthz_and_metrics(api: RunningApiServer, start_scheduler: Callable[..., Component]) -> None:
    """Pins kube-scheduler's metric names: scheduler_schedule_attempts_total{result,profile},
    scheduler_scheduling_attempt_duration_seconds, scheduler_pending_pods{queue}, and /healthz ``ok``."""
    two_node_cluster(api)
    api.emulator.create("pods", gpu_pod("fits", 1))
    blocked = gpu_pod("blocked", 1)
    blocked["spec"]["nodeSelector"] = {"pool": "inference"}
    api.emulator.create("pods", blocked)
    scheduler = start_scheduler()
    port = int(scheduler.proc.args[scheduler.proc.args.index("--metrics-port") + 1])  # type: ignore[union-attr]
    wait_until(lambda: node_of(api, "fits") and scheduled_condition(api, "blocked"), what="both attempted")

    def get(path: str) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return str(response.read().decode())

    assert wait_until(lambda: get("/healthz"), what="healthz") == "ok"
    metrics = wait_until(
        lambda: (m := get("/metrics")) and 'scheduler_pending_pods{queue="unschedulable"} 1.0' in m and m,
        what="metrics",
    )
    assert 'scheduler_schedule_attempts_total{profile="kubegpu",result="scheduled"} 1.0' in metrics
    assert re.search(
        r'scheduler_schedule_attempts_total\{profile="kubegpu",result="unschedulable"\} [1-9]', metrics
    )
    assert (
        'scheduler_scheduling_attempt_duration_seconds_count{profile="kubegpu",result="scheduled"} 1.0'
        in metrics
    )
    assert 'scheduler_pending_pods{queue="active"} 0.0' in metrics
    assert 'leader_election_master_status{name="kubegpu"} 1.0' in metrics


def test_preemption_evicts_the_victim_nominates_the_node_then_binds(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Pins DefaultPreemption's outcome on a cluster: the FitError message without a preemption part
    (PostFilter succeeded), ``status.nominatedNodeName`` on the preemptor, the victim's Normal
    ``Preempted`` event (``Preempted by pod <uid> on node <node>``, action Preempting); the victim leaves
    through the Eviction API, and the preemptor is bound once the capacity is free. kubegpu's cost report:
    the victim never started (no startTime), so it loses 0 GPU-seconds."""
    api.emulator.create("nodes", gpu_node("gpu-1"))
    api.emulator.create("pods", gpu_pod("low", 8, node="gpu-1"))
    high = api.emulator.create("pods", gpu_pod("high", 4, priority=1000))
    scheduler = start_scheduler()

    wait_until(lambda: node_of(api, "high"), what="high bound")
    assert api.emulator.get("pods", "ml", "low") is None
    assert [s.status for s in api.emulator.requests_to("POST", r".*/pods/low/eviction")] == [201]
    [preempted] = settled_events(api, "low", 1)
    assert (preempted["type"], preempted["reason"], preempted["action"], preempted["note"]) == (
        "Normal", "Preempted", "Preempting", f"Preempted by pod {high['metadata']['uid']} on node gpu-1",
    )  # fmt: skip
    assert [(e["reason"], e["note"]) for e in settled_events(api, "high", 2)] == [
        # 1.37 (the default release): the successful preemption says where (kubernetes PR #140180)
        (
            "FailedScheduling",
            "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: found a potential "
            "placement for pod on node gpu-1, preempting 1 victims",
        ),
        ("Scheduled", "Successfully assigned ml/high to gpu-1"),
    ]
    pod = api.emulator.get("pods", "ml", "high")
    assert pod is not None and pod["status"]["nominatedNodeName"] == "gpu-1"
    assert (
        "preemption for ml/high on gpu-1 cost 0 GPU-seconds since the victims' last checkpoints: ml/low 0 GPU-s"
        in scheduler.output()
    )


def test_an_eviction_refused_by_a_pdb_leaves_the_victim_running_and_nominates_nothing(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Pins the Eviction API's PDB check (429 ``Cannot evict pod as it would violate the pod's disruption
    budget.``): the victim stays, the preemptor stays Pending with the FitError, no nominatedNodeName."""
    api.emulator.create("nodes", gpu_node("gpu-1"))
    api.emulator.create("pods", gpu_pod("low", 8, node="gpu-1", labels={"app": "trainer"}))
    api.emulator.create("poddisruptionbudgets", {
        "metadata": {"name": "trainer", "namespace": "ml"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "trainer"}}},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1},
    })  # fmt: skip
    api.emulator.create("pods", gpu_pod("high", 4, priority=1000))
    start_scheduler()

    condition = wait_until(lambda: scheduled_condition(api, "high"), what="high's condition")
    # 1.37 (the default release) words the preemption it attempted (kubernetes PR #140180)
    assert condition["message"] == (
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. "
        "preemption: found a potential placement for pod on node gpu-1, preempting 1 victims"
    )
    assert [s.status for s in api.emulator.requests_to("POST", r".*/pods/low/eviction")][:1] == [429]
    assert node_of(api, "low") == "gpu-1" and node_of(api, "high") == ""
    assert "nominatedNodeName" not in (api.emulator.get("pods", "ml", "high") or {})["status"]
    assert events_for(api, "low") == []


def test_kubegpu_profile_records_the_chosen_devices_on_the_pod_through_the_binding(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Pins the apiserver's binding (``setPodHostAndAnnotations``: the Binding's annotations land on the pod
    with nodeName) and kubegpu's device record ``kubegpu.io/allocated-devices`` =
    ``{container: {resource: [device IDs]}}``: two pods on one node get disjoint devices."""
    api.emulator.create("nodes", gpu_node("gpu-1"))
    api.emulator.create("pods", gpu_pod("a", 2))
    api.emulator.create("pods", gpu_pod("b", 4))
    start_scheduler("devices", "--profile", "kubegpu")

    wait_until(lambda: node_of(api, "a") and node_of(api, "b"), what="both bound")
    held = {}
    for name, count in (("a", 2), ("b", 4)):
        pod = api.emulator.get("pods", "ml", name) or {}
        record = json.loads(pod["metadata"]["annotations"]["kubegpu.io/allocated-devices"])
        assert list(record) == ["main"] and list(record["main"]) == ["nvidia.com/gpu"]
        held[name] = set(record["main"]["nvidia.com/gpu"])
        assert len(held[name]) == count
    assert not held["a"] & held["b"]
    assert logged_statuses(api, "POST", r".*/binding", 2) == [201, 201]


def test_a_leader_that_cannot_renew_stops_binding_and_exits(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Pins client-go's renew deadline: when the holder's Lease updates fail for ``renewDeadline`` it
    stops leading (kube-scheduler then exits with status 1) — it binds nothing more, and the standby
    takes over once the Lease can be written again."""
    two_node_cluster(api)
    first = start_scheduler("replica-a")
    wait_until(
        lambda: (api.emulator.get("leases", "kube-system", "kubegpu-scheduler") or {}).get("spec"),
        what="lease",
    )
    outage = Fault("PUT", r"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubegpu-scheduler", 503,
                   "ServiceUnavailable", "etcd cluster is unavailable", times=10**6)  # fmt: skip
    api.emulator.faults.append(outage)
    assert wait_until(lambda: first.proc.poll() is not None, timeout=10, what="replica-a exits") is True
    assert first.proc.returncode == 1 and "leader election lost" in first.output()

    second = start_scheduler("replica-b")
    api.emulator.create("pods", gpu_pod("after-outage", 1))
    outage.times = 0
    wait_until(lambda: node_of(api, "after-outage"), timeout=20, what="bound by the new leader")
    assert [agent for key, _, agent in api.emulator.bindings] == ["kubegpu-scheduler/replica-b"]
    assert second.proc.poll() is None
