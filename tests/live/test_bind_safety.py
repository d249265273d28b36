"""Bind exactly once, and one active replica (issue 22): ``kubegpu scheduler`` as a real process against the
emulated API server.

* A lost answer: kube-apiserver's request finisher (``k8s.io/apiserver/pkg/endpoints/handlers/finisher``)
  answers ``504 Timeout: request did not complete within requested timeout - context deadline exceeded``
  (``apierrors.NewTimeoutError``) while the storage write it started may still land; a dropped connection
  hides a write the same way. The scheduler reads the pod back before any retry: bound to its node is
  success (one ``Scheduled`` event, no second POST), bound elsewhere is never retried.
* ``--no-leader-elect`` beside a live holder of the Lease (client-go's record: ``holderIdentity``,
  ``renewTime``, ``leaseDurationSeconds``) is refused with one line and exit status 1; an expired Lease
  does not block a start.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable

from tests.live.apiserver import Fault, RunningApiServer, wait_until
from tests.live.conftest import Component, gpu_node, gpu_pod
from tests.live.observe import binding_count, events_for, node_of, settled_events

TIMEOUT_MESSAGE = "Timeout: request did not complete within requested timeout - context deadline exceeded"
# longer than the tests' --pod-max-backoff (0.4 s): a retry, had one been queued, would have been sent
SETTLE_S = 1.5


def _lost_answer_is_bound_once(
    api: RunningApiServer, start_scheduler: Callable[..., Component], fault: Fault
) -> None:
    api.emulator.create("nodes", gpu_node("gpu-1"))
    api.emulator.faults.append(fault)
    api.emulator.create("pods", gpu_pod("lost", 2))
    scheduler = start_scheduler()

    events = settled_events(api, "lost", 1)
    time.sleep(SETTLE_S)
    assert node_of(api, "lost") == "gpu-1"
    assert len(api.emulator.requests_to("POST", r".*/pods/lost/binding")) == 1  # never re-posted
    assert binding_count(api) == {"ml/lost": 1}
    # the read-back: a GET of the pod itself after the failed POST
    assert api.emulator.requests_to("GET", r"/api/v1/namespaces/ml/pods/lost")
    assert [(e["type"], e["reason"], e["note"]) for e in events_for(api, "lost")] == [
        ("Normal", "Scheduled", "Successfully assigned ml/lost to gpu-1")
    ]
    assert events == events_for(api, "lost")
    assert "counted as bound" in scheduler.output()


def test_a_binding_whose_504_answer_hid_the_write_is_read_back_and_not_retried(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """The write lands, the answer is the finisher's 504 Timeout: one POST, one Scheduled event."""
    fault = Fault("POST", r".*/pods/lost/binding", 504, "Timeout", TIMEOUT_MESSAGE, after=True)
    _lost_answer_is_bound_once(api, start_scheduler, fault)


def test_a_binding_whose_connection_dropped_after_the_write_is_read_back_and_not_retried(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """The write lands, the connection closes with no answer (a transport error, status 0)."""
    _lost_answer_is_bound_once(api, start_scheduler, Fault("POST", r".*/pods/lost/binding", 0, after=True))


def test_a_pod_bound_elsewhere_while_our_binding_failed_is_forgotten_and_never_retried(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Another writer binds the pod to gpu-2 just before our POST, which the API server refuses with
    ``pod contested is already assigned to node "gpu-2"`` (409, pod registry ``setPodHostAndAnnotations``).
    The read-back sees gpu-2: our placement is forgotten (gpu-1 keeps its 8 GPUs for the next pod) and
    nothing is retried or recorded as a failure."""
    api.emulator.create("nodes", gpu_node("gpu-1"))
    api.emulator.create("nodes", gpu_node("gpu-2", taint=True))  # only the rival may use it
    conflict = 'Operation cannot be fulfilled on pods/binding "contested": pod contested is already assigned to node "gpu-2"'
    rival = Fault(
        "POST", r".*/pods/contested/binding", 409, "Conflict", conflict,
        race=lambda: api.emulator.bind("ml", "contested", "gpu-2", "rival"),
    )  # fmt: skip
    api.emulator.faults.append(rival)
    api.emulator.create("pods", gpu_pod("contested", 8))
    scheduler = start_scheduler()
    wait_until(lambda: "already assigned" in scheduler.output(), what="the failed binding logged")
    api.emulator.create("pods", gpu_pod("next", 8))  # fits gpu-1 only if contested was forgotten there

    wait_until(lambda: node_of(api, "next"), what="next bound")
    time.sleep(SETTLE_S)
    assert node_of(api, "contested") == "gpu-2" and node_of(api, "next") == "gpu-1"
    assert len(api.emulator.requests_to("POST", r".*/pods/contested/binding")) == 1
    assert [b[:2] for b in api.emulator.bindings] == [("ml/contested", "gpu-2"), ("ml/next", "gpu-1")]
    assert [e["reason"] for e in events_for(api, "contested")] == []


def _lease(holder: str, renewed: dt.datetime) -> dict[str, object]:
    stamp = renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {
        "metadata": {"name": "kubegpu-scheduler", "namespace": "kube-system"},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": 15,
            "acquireTime": stamp,
            "renewTime": stamp,
        },
    }


def test_without_leader_election_a_replica_refuses_to_start_beside_a_live_lease_holder(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """A Lease renewed 1 s ago with a 15 s duration is held: the second replica prints one line naming the
    Lease and its holder and exits 1, having bound nothing."""
    api.emulator.create("nodes", gpu_node("gpu-1"))
    api.emulator.create("pods", gpu_pod("waiting", 1))
    now = dt.datetime.now(dt.UTC)
    api.emulator.create("leases", _lease("replica-a", now - dt.timedelta(seconds=1)))
    second = start_scheduler("replica-b", leader_elect=False)

    assert second.proc.wait(30) == 1
    lines = [line for line in second.output().splitlines() if line.startswith("Error:")]
    assert len(lines) == 1
    assert lines[0].startswith("Error: lease kube-system/kubegpu-scheduler is held by replica-a (renewed ")
    assert "refusing to start a second one without leader election" in lines[0]
    assert "Traceback" not in second.output()
    assert binding_count(api) == {}


def test_without_leader_election_an_expired_lease_does_not_block_the_start(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """Renewed 60 s ago with a 15 s duration: expired (60 > 15), so the replica starts and binds."""
    api.emulator.create("nodes", gpu_node("gpu-1"))
    api.emulator.create("pods", gpu_pod("waiting", 1))
    api.emulator.create("leases", _lease("replica-a", dt.datetime.now(dt.UTC) - dt.timedelta(seconds=60)))
    start_scheduler("replica-b", leader_elect=False)

    wait_until(lambda: node_of(api, "waiting"), what="waiting bound")
    assert binding_count(api) == {"ml/waiting": 1}
