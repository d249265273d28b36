"""The checkpoint handshake of preemption (issue 6 item 5): ``kubegpu scheduler --checkpoint-deadline``
as a real process against the emulated API server.

Pins kubegpu's own protocol (no upstream counterpart): the chosen victims get
``kubegpu.io/checkpoint-requested: <RFC 3339>``; the preemptor is nominated to the node meanwhile; a
victim that reports ``kubegpu.io/last-checkpoint-time`` at or after the request is evicted at once,
one that does not is evicted when the deadline passes; both through the Eviction API. The cost is
GPUs x seconds since the last checkpoint (``model.podgroup``: worked example there), counted in
``kubegpu_preemption_lost_gpu_seconds_total``. The workload's report is a merge patch over HTTP, as
``kubectl annotate`` sends it.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable
from typing import Any

from tests.live.apiserver import RunningApiServer, patch_over_http, wait_until
from tests.live.conftest import Component, gpu_node, gpu_pod
from tests.live.observe import metric, metrics_of, node_of


def victim_and_preemptor(api: RunningApiServer) -> dt.datetime:
    """An 8-GPU trainer that started an hour ago (whole seconds, as the API server writes times), and a
    higher-priority 4-GPU pod that needs its node. Returns the trainer's start time."""
    started = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(hours=1)
    api.emulator.create("nodes", gpu_node("gpu-1"))
    victim = gpu_pod("trainer", 8, node="gpu-1")
    victim["status"]["startTime"] = started.strftime("%Y-%m-%dT%H:%M:%SZ")
    api.emulator.create("pods", victim)
    api.emulator.create("pods", gpu_pod("urgent", 4, priority=1000))
    return started


def requested(api: RunningApiServer) -> str:
    pod = api.emulator.get("pods", "ml", "trainer") or {}
    return str(
        (pod.get("metadata", {}).get("annotations") or {}).get("kubegpu.io/checkpoint-requested") or ""
    )


def annotate(api: RunningApiServer, name: str, annotations: dict[str, Any]) -> None:
    patch_over_http(api, f"/api/v1/namespaces/ml/pods/{name}", {"metadata": {"annotations": annotations}})


def test_a_victim_that_checkpoints_is_evicted_at_once_and_costs_little(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    victim_and_preemptor(api)
    scheduler = start_scheduler("replica-a", "--checkpoint-deadline", "60")
    asked = wait_until(lambda: requested(api), what="checkpoint requested")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", asked)
    urgent = wait_until(
        lambda: (api.emulator.get("pods", "ml", "urgent") or {}).get("status", {}).get("nominatedNodeName"),
        what="nominated",
    )
    assert urgent == "gpu-1"
    assert node_of(api, "trainer") == "gpu-1" and node_of(api, "urgent") == ""  # waiting, not evicted
    assert api.emulator.requests_to("POST", r".*/pods/trainer/eviction") == []

    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # the workload saved its state
    annotate(api, "trainer", {"kubegpu.io/last-checkpoint-time": now})
    wait_until(lambda: node_of(api, "urgent") == "gpu-1", timeout=20, what="urgent bound")  # far before 60 s
    assert [s.status for s in api.emulator.requests_to("POST", r".*/pods/trainer/eviction")] == [201]
    text = metrics_of(scheduler)
    assert metric(text, 'kubegpu_preemption_victims_total{checkpointed="true"}') == 1.0
    assert metric(text, 'kubegpu_preemption_victims_total{checkpointed="false"}') == 0.0
    # 8 GPUs x the few seconds between the checkpoint and the eviction (an hour's work saved)
    assert 0 <= metric(text, "kubegpu_preemption_lost_gpu_seconds_total") <= 8 * 10
    assert re.search(
        r"preemption for ml/urgent on gpu-1 cost \d+ GPU-seconds .*ml/trainer \d+ GPU-s \(checkpointed\)",
        scheduler.output(),
    )


def test_a_victim_that_stays_silent_is_evicted_at_the_deadline_with_its_hour_lost(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    started = victim_and_preemptor(api)
    scheduler = start_scheduler("replica-a", "--checkpoint-deadline", "2")
    wait_until(lambda: requested(api), what="checkpoint requested")
    assert node_of(api, "trainer") == "gpu-1"  # the deadline has not passed yet
    assert_evicted_without_checkpoint(api, scheduler, started)


def assert_evicted_without_checkpoint(
    api: RunningApiServer, scheduler: Component, started: dt.datetime
) -> None:
    """The trainer evicted once (through the Eviction API) for ``urgent``, which is then bound to gpu-1,
    with its whole run lost."""
    wait_until(lambda: node_of(api, "urgent") == "gpu-1", timeout=20, what="urgent bound after the deadline")
    assert [s.status for s in api.emulator.requests_to("POST", r".*/pods/trainer/eviction")] == [201]
    text = metrics_of(scheduler)
    assert metric(text, 'kubegpu_preemption_victims_total{checkpointed="false"}') == 1.0
    lost = metric(text, "kubegpu_preemption_lost_gpu_seconds_total")
    # never checkpointed: 8 GPUs x everything since the start, an hour plus the test's own run time so far
    assert 8 * 3600 <= lost <= 8 * (dt.datetime.now(dt.UTC) - started).total_seconds()


def test_a_preemptor_that_fits_elsewhere_meanwhile_evicts_nobody(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Capacity appearing during the wait (a new node) binds the preemptor there; the wait is cancelled
    and the victim keeps running past the deadline."""
    victim_and_preemptor(api)
    scheduler = start_scheduler("replica-a", "--checkpoint-deadline", "2")
    wait_until(lambda: requested(api), what="checkpoint requested")
    api.emulator.create("nodes", gpu_node("gpu-2"))
    wait_until(lambda: node_of(api, "urgent") == "gpu-2", timeout=20, what="urgent bound to the new node")
    wait_until(
        lambda: "checkpoint handshake for ml/urgent ended (bound)" in scheduler.output(), what="cancelled"
    )
    time.sleep(2.5)  # past the deadline
    assert api.emulator.requests_to("POST", r".*/pods/trainer/eviction") == []
    assert node_of(api, "trainer") == "gpu-1"


# -- restarts: the waits are rebuilt from the API (live/checkpoint.py ``Handshakes.resume``) ------------


def test_a_restarted_scheduler_resumes_the_wait_and_evicts_after_the_fresh_checkpoint(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Killed mid-wait (SIGKILL: nothing is cleaned up), the next leader finds the request annotation and
    the nomination, resumes the same wait (no second request) and evicts on the victim's checkpoint."""
    victim_and_preemptor(api)
    first = start_scheduler("replica-a", "--checkpoint-deadline", "120")
    asked = wait_until(lambda: requested(api), what="checkpoint requested")
    wait_until(
        lambda: (api.emulator.get("pods", "ml", "urgent") or {}).get("status", {}).get("nominatedNodeName"),
        what="nominated",
    )
    first.kill()

    second = start_scheduler("replica-b", "--checkpoint-deadline", "120")
    wait_until(
        lambda: (
            f"resumed checkpoint handshake for ml/urgent on gpu-1: requested {asked} from ml/trainer"
            in second.output()
        ),
        what="the wait resumed",
    )
    assert requested(api) == asked  # the same request, not a new one
    assert api.emulator.requests_to("POST", r".*/pods/trainer/eviction") == []
    annotate(
        api,
        "trainer",
        {"kubegpu.io/last-checkpoint-time": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")},
    )
    wait_until(lambda: node_of(api, "urgent") == "gpu-1", timeout=20, what="urgent bound")  # far before 120 s
    assert [s.status for s in api.emulator.requests_to("POST", r".*/pods/trainer/eviction")] == [201]
    assert metric(metrics_of(second), 'kubegpu_preemption_victims_total{checkpointed="true"}') == 1.0


def waiting_since(api: RunningApiServer, seconds: int, *, nominated: bool) -> dt.datetime:
    """The API's record of a handshake a scheduler started ``seconds`` ago and did not finish: the trainer
    annotated with the request time, the preemptor (``urgent``) nominated to gpu-1 (or not)."""
    started = victim_and_preemptor(api)
    asked = (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    annotate(api, "trainer", {"kubegpu.io/checkpoint-requested": asked})
    if nominated:  # as the scheduler writes it: a strategic merge patch of pods/status
        body = {"status": {"nominatedNodeName": "gpu-1"}}
        patch_over_http(
            api, "/api/v1/namespaces/ml/pods/urgent/status", body, "application/strategic-merge-patch+json"
        )
    return started


def test_the_deadline_counts_from_the_original_request_not_from_the_restart(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Requested 120 s ago with a 60 s deadline: the deadline passed while no scheduler ran, so the new
    leader evicts at once (counting from its own start it would wait 60 s, past this test's 20 s)."""
    started = waiting_since(api, 120, nominated=True)
    scheduler = start_scheduler("replica-b", "--checkpoint-deadline", "60")
    assert_evicted_without_checkpoint(api, scheduler, started)


def test_an_annotated_victim_with_no_nominated_preemptor_is_not_evicted(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """A request is resumed only with its preemptor still pending and nominated to the node: here the
    preemptor was deleted while no scheduler ran, so the overdue request alone evicts nothing."""
    waiting_since(api, 120, nominated=False)
    api.emulator.delete("pods", "ml", "urgent")
    scheduler = start_scheduler("replica-b", "--checkpoint-deadline", "60")
    wait_until(lambda: "acquired lease" in scheduler.output(), what="leader")
    time.sleep(2)  # several loop iterations as leader; a resumed, overdue wait would evict at once
    assert api.emulator.requests_to("POST", r".*/pods/trainer/eviction") == []
    assert "resumed checkpoint handshake" not in scheduler.output()
    assert node_of(api, "trainer") == "gpu-1"
