"""The checkpoint handshake for queue and gang preemption (``--checkpoint-deadline`` with ``live.batch``):
``kubegpu scheduler`` as a real process against the emulated API server.

kubegpu's own protocol (no upstream counterpart; the per-pod form is pinned in
``test_checkpoint_handshake.py``), applied to a workload the batch session admits only by preempting:
every victim gets ``kubegpu.io/checkpoint-requested``, the preempting gang's members are nominated to
their nodes and wait; a victim gang is evicted whole — when every one of its members reported
``kubegpu.io/last-checkpoint-time`` at or after the request, or at the deadline — never one member
without the other (coscheduling's and Volcano's all-or-nothing contract seen from the victim's side);
the evictions go through the Eviction API. A restarted scheduler resumes the wait from the annotations
and the members' ``status.nominatedNodeName``.

Cluster (built by hand): two 4-GPU nodes, each full with one member of a running 2-pod gang ``old``
(priority 0); a 1-pod gang ``train`` of priority 1000 asks for 4 GPUs. ``batch.gang_preemption`` takes a
victim gang as one unit, so both ``old`` members are its victims although ``train`` needs one node.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable

from tests.live.apiserver import RunningApiServer, patch_over_http, wait_until
from tests.live.conftest import Component, gpu_node, gpu_pod
from tests.live.observe import COSCHEDULING, events_for, message_of, metric, metrics_of, node_of

REQUESTED = "kubegpu.io/checkpoint-requested"


def victim_gang_and_preemptor(api: RunningApiServer) -> None:
    api.emulator.install_crd(COSCHEDULING)
    started = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for i in (0, 1):
        api.emulator.create("nodes", gpu_node(f"gpu-{i}", 4))
        member = gpu_pod(f"old-{i}", 4, node=f"gpu-{i}", labels={"scheduling.x-k8s.io/pod-group": "old"})
        member["status"]["startTime"] = started
        api.emulator.create("pods", member)
    api.emulator.create(
        COSCHEDULING, {"metadata": {"name": "old", "namespace": "ml"}, "spec": {"minMember": 2}}
    )
    api.emulator.create(
        COSCHEDULING, {"metadata": {"name": "train", "namespace": "ml"}, "spec": {"minMember": 1}}
    )
    labels = {"scheduling.x-k8s.io/pod-group": "train"}
    api.emulator.create("pods", gpu_pod("train-0", 4, priority=1000, labels=labels))


def requested(api: RunningApiServer, name: str) -> str:
    pod = api.emulator.get("pods", "ml", name) or {}
    return str((pod.get("metadata", {}).get("annotations") or {}).get(REQUESTED) or "")


def nominated(api: RunningApiServer, name: str) -> str:
    pod = api.emulator.get("pods", "ml", name) or {}
    return str(pod.get("status", {}).get("nominatedNodeName") or "")


def checkpoint(api: RunningApiServer, name: str) -> None:
    """What a workload does on the request: save its state and report the time (``kubectl annotate``)."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = {"metadata": {"annotations": {"kubegpu.io/last-checkpoint-time": now}}}
    patch_over_http(api, f"/api/v1/namespaces/ml/pods/{name}", body)


def evictions(api: RunningApiServer) -> list[tuple[str, int]]:
    return sorted((s.path.split("/")[-2], s.status) for s in api.emulator.requests_to("POST", r".*/eviction"))


def asked_both(api: RunningApiServer) -> str:
    wait_until(lambda: requested(api, "old-0") and requested(api, "old-1"), what="checkpoints requested")
    asked = requested(api, "old-0")
    assert requested(api, "old-1") == asked  # one request time for the whole preemption
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", asked)
    # the time it was asked, in UTC (RFC 3339 whole seconds, so at most the current second)
    at = dt.datetime.fromisoformat(asked.replace("Z", "+00:00"))
    now = dt.datetime.now(dt.UTC)
    assert now - dt.timedelta(seconds=15) <= at <= now, (asked, now)
    return asked


def test_a_victim_gang_is_evicted_whole_once_every_member_checkpointed(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    victim_gang_and_preemptor(api)
    scheduler = start_scheduler("replica-a", "--checkpoint-deadline", "60")
    asked_both(api)
    node = wait_until(lambda: nominated(api, "train-0"), what="the gang's member nominated")
    assert node in ("gpu-0", "gpu-1")
    assert evictions(api) == [] and node_of(api, "train-0") == ""
    checkpoint(api, "old-0")
    time.sleep(1.5)  # many loop iterations: half a gang checkpointed evicts nobody
    assert evictions(api) == [] and node_of(api, "old-0") == "gpu-0"
    checkpoint(api, "old-1")
    wait_until(
        lambda: node_of(api, "train-0") == node, timeout=20, what="train bound into its nominated node"
    )
    assert evictions(api) == [("old-0", 201), ("old-1", 201)]
    text = metrics_of(scheduler)
    assert metric(text, 'kubegpu_preemption_victims_total{checkpointed="true"}') == 2.0
    assert metric(text, 'kubegpu_preemption_victims_total{checkpointed="false"}') == 0.0
    # both saved their hour just before: 2 × 4 GPUs × the few seconds since the checkpoints
    assert metric(text, "kubegpu_preemption_lost_gpu_seconds_total") <= 8 * 10
    assert re.search(
        r"preemption for ml/train evicted 2 of 2 pods, \d+ GPU-seconds lost since their last checkpoints: "
        r"ml/old-0 \d+ GPU-s \(checkpointed\), ml/old-1 \d+ GPU-s \(checkpointed\)",
        scheduler.output(),
    )


def test_a_victim_gang_half_checkpointed_is_evicted_whole_at_the_deadline(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    victim_gang_and_preemptor(api)
    scheduler = start_scheduler("replica-a", "--checkpoint-deadline", "3")
    asked_both(api)
    checkpoint(api, "old-1")
    wait_until(lambda: node_of(api, "train-0") != "", timeout=20, what="train bound after the deadline")
    assert evictions(api) == [("old-0", 201), ("old-1", 201)]
    text = metrics_of(scheduler)
    assert metric(text, 'kubegpu_preemption_victims_total{checkpointed="true"}') == 1.0
    assert metric(text, 'kubegpu_preemption_victims_total{checkpointed="false"}') == 1.0
    # old-0 never checkpointed: its 4 GPUs × the hour since its start are lost (plus the test's seconds)
    assert 4 * 3600 <= metric(text, "kubegpu_preemption_lost_gpu_seconds_total") <= 4 * 3600 + 8 * 30


def test_a_restarted_scheduler_resumes_the_workloads_wait_without_preempting_again(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Killed mid-wait (SIGKILL), the next leader finds the requests and the member's nomination: the
    same wait goes on (no second request, the gang waits), and the victims go on their checkpoints."""
    victim_gang_and_preemptor(api)
    first = start_scheduler("replica-a", "--checkpoint-deadline", "120")
    asked = asked_both(api)
    node = wait_until(lambda: nominated(api, "train-0"), what="nominated")
    first.kill()

    second = start_scheduler("replica-b", "--checkpoint-deadline", "120")
    resumed = (
        f"resumed checkpoint handshake for ml/train on {node}: requested {asked} from ml/old-0, ml/old-1"
    )
    wait_until(lambda: resumed in second.output(), what="the wait resumed")
    expected = "queue default: waiting for 2 preempted pods to leave: ml/old-0, ml/old-1"
    wait_until(lambda: message_of(api, "train-0") == expected, what="the gang waiting for its victims")
    assert requested(api, "old-0") == asked and evictions(api) == []
    checkpoint(api, "old-0")
    checkpoint(api, "old-1")
    wait_until(lambda: node_of(api, "train-0") == node, timeout=20, what="train bound")  # far before 120 s
    assert evictions(api) == [("old-0", 201), ("old-1", 201)]
    assert metric(metrics_of(second), 'kubegpu_preemption_victims_total{checkpointed="true"}') == 2.0


def test_evictions_refused_by_a_pdb_at_the_deadline_leave_the_victims_running_and_say_so(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """A PodDisruptionBudget allowing no disruption of ``old`` (the API server answers each eviction 429,
    policy/v1's ``Cannot evict pod as it would violate the pod's disruption budget.``): at the deadline
    both evictions are refused, the victims keep running and the member says the preemption was
    refused (the same words as an immediate preemption's)."""
    victim_gang_and_preemptor(api)
    api.emulator.create(
        "poddisruptionbudgets",
        {
            "metadata": {"name": "old-pdb", "namespace": "ml"},
            "spec": {
                "minAvailable": 2,
                "selector": {"matchLabels": {"scheduling.x-k8s.io/pod-group": "old"}},
            },
            "status": {"disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2, "expectedPods": 2},
        },
    )
    scheduler = start_scheduler("replica-a", "--checkpoint-deadline", "2")
    asked_both(api)
    lost_nothing = r"preemption for ml/train evicted 0 of 2 pods, 0 GPU-seconds lost"
    wait_until(lambda: re.search(lost_nothing, scheduler.output()), timeout=20, what="the refusal reported")
    refused = "queue default: preempting for ml/train was refused: ml/old-0, ml/old-1"
    # the status message is short-lived (the gang is tried again at once); the event stays
    wait_until(
        lambda: (
            refused in {e["note"] for e in events_for(api, "train-0") if e["reason"] == "FailedScheduling"}
        ),
        what="the refusal recorded on the member",
    )
    assert ("old-0", 429) in evictions(api) and ("old-1", 429) in evictions(api)
    assert all(status == 429 for _, status in evictions(api))
    assert (
        node_of(api, "old-0") == "gpu-0"
        and node_of(api, "old-1") == "gpu-1"
        and node_of(api, "train-0") == ""
    )
