"""The live scheduler and DRA: it does not allocate ResourceClaims, so it never places a claim pod (by CPU and
memory alone it would land where no device was allocated for it); it says so and leaves the pod.

kube-scheduler allocates a claim in PreBind (``status.allocation``, ``status.reservedFor``, the finalizer
``resource.kubernetes.io/delete-protection``; pkg/scheduler/framework/plugins/dynamicresources), which the
kubelet's DRA manager needs before it prepares the devices. kubegpu's live scheduler makes none of those
writes; the decision and its wording are in docs/live.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kubegpu.live.cache import DRA_NOT_ALLOCATED
from tests.live.apiserver import RunningApiServer, wait_until
from tests.live.conftest import Component, gpu_node, gpu_pod
from tests.live.observe import events_for, node_of, scheduled_condition


def test_a_claim_pod_is_left_unplaced_with_one_event_and_the_condition(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    api.emulator.create("nodes", gpu_node("gpu-1"))
    dra = gpu_pod("with-claim", 0)
    dra["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    dra["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]}
    api.emulator.create("pods", dra)
    api.emulator.create("pods", gpu_pod("plain", 1))
    scheduler = start_scheduler()

    wait_until(lambda: node_of(api, "plain"), what="the plain pod bound")  # scheduling goes on
    condition = wait_until(lambda: scheduled_condition(api, "with-claim"), what="the claim pod's condition")
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False", "Unschedulable", DRA_NOT_ALLOCATED,
    )  # fmt: skip
    [event] = wait_until(lambda: events_for(api, "with-claim"), what="the FailedScheduling event")
    assert (event["type"], event["reason"], event["note"]) == (
        "Warning",
        "FailedScheduling",
        DRA_NOT_ALLOCATED,
    )
    time.sleep(1.0)  # our own condition patch comes back through the watch: it must not say it again
    assert len(events_for(api, "with-claim")) == 1
    assert node_of(api, "with-claim") == ""  # it fits gpu-1 by CPU; it is still never bound
    assert "ml/with-claim: kubegpu's live scheduler does not allocate ResourceClaims" in scheduler.output()
    assert [k for k, _, _ in api.emulator.bindings] == ["ml/plain"]
