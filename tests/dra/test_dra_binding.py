"""Device binding conditions (KEP-5007): DRADeviceBindingConditions (alpha 1.34, beta on by default 1.36;
pkg/features/kube_features.go v1.36.3, v1.37.2) with DRAResourceClaimDeviceStatus (beta on 1.33, GA 1.37).

Upstream: k8s.io/dynamic-resource-allocation v0.36.3 structured/internal/incubating pools_incubating.go
``GatherPools`` puts pools holding a device with binding conditions after the others; allocator_incubating.go
copies ``bindingConditions`` / ``bindingFailureConditions`` into the result; kube-scheduler v1.36.3
dynamicresources.go ``PreBind`` emits ``BindingConditionsPending`` "waiting for binding conditions for device
on node %s" and waits until ``isClaimReadyForBinding`` (every binding condition True in
``status.devices[].conditions``; a True failure condition is "device binding failed: claim=%s, reason=%s,
message=%q"); bindingTimeout 600s (types_pluginargs.go DynamicResourcesBindingTimeoutDefault).
Every expected value is derived by hand from those rules in the comment beside it.
"""

from __future__ import annotations

from typing import Any

from kubegpu.explain.dra_binding import binding_wait
from kubegpu.explain.dra_gates import slice_lines
from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.model.snapshot import ClusterSnapshot, build_snapshot
from kubegpu.scheduler.dra_allocator import Allocator, SliceIndex
from kubegpu.scheduler.dra_capacity import Features
from tests.dra import objects as o
from tests.dra.schedulers import outcome

ATTACH = {
    "bindingConditions": ["Attached"],
    "bindingFailureConditions": ["AttachFailed"],
    "bindsToNode": True,
}


def attachable(pool: str) -> dict[str, Any]:
    """A slice of pool ``pool`` on n1 whose one GPU must be attached (a fabric-attached GPU, KEP-5007)."""
    d = o.gpu_device(7, "n1")
    d["name"] = "fabric-gpu"
    d.update(ATTACH)
    s = o.node_slice("n1", [d], name=f"{pool}-slice")
    s["spec"]["pool"]["name"] = pool
    return s


def snap(*extra: dict[str, Any], version: str = "1.36") -> ClusterSnapshot:
    s = build_snapshot([("t", x) for x in (*o.gpu_classes(), *extra)])
    assert not s.errors, [e.one_line() for e in s.errors]
    s.kube_version = version
    return s


def chosen(s: ClusterSnapshot, minor: int) -> list[tuple[str, str, object]]:
    alloc = Allocator([s.dra.claims["default/c"]], s.dra.classes, SliceIndex(s.dra.slices), set(),
                      Features.for_minor(minor))  # fmt: skip
    got = alloc.allocate("n1", {})
    assert got is not None
    return [(d.pool, d.device, d.binding.conditions if d.binding else None) for r in got for d in r.devices]


def test_pools_with_binding_conditions_are_tried_last_from_1_36() -> None:
    # pool "a-fabric" sorts before pool "n1"; n1 publishes gpu-0 without conditions
    s = snap(*o.gpu_node("n1", 1), attachable("a-fabric"), o.claim("c", o.request("g")))
    assert chosen(s, 36) == [("n1", "gpu-0", None)]  # the attachable pool comes last
    assert chosen(s, 35) == [("a-fabric", "fabric-gpu", None)]  # gate off: name order, fields dropped
    # only the attachable device left: the result carries its conditions
    s = snap(*o.gpu_node("n1", 0), attachable("a-fabric"), o.claim("c", o.request("g")))
    assert chosen(s, 37) == [("a-fabric", "fabric-gpu", ("Attached",))]


def waiting_claim(conditions: list[dict[str, Any]] | None) -> dict[str, Any]:
    status = o.allocated("n1", ("g", "fabric-gpu"), reserved=("uid-p",))
    status["allocation"]["devices"]["results"][0].update(ATTACH, pool="a-fabric")
    status["allocation"]["allocationTimestamp"] = "2026-12-04T10:00:00Z"
    if conditions is not None:
        status["devices"] = [
            {"driver": o.DRIVER, "pool": "a-fabric", "device": "fabric-gpu", "conditions": conditions}
        ]
    return o.claim("c", o.request("g"), status=status)


def cond(t: str, status: str, reason: str = "R", message: str = "") -> dict[str, Any]:
    return {"type": t, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2026-12-04T10:00:01Z"}  # fmt: skip


def wait_text(conditions: list[dict[str, Any]] | None, minor: int = 36) -> str:
    s = snap(
        *o.gpu_node("n1", 0),
        attachable("a-fabric"),
        waiting_claim(conditions),
        o.pod("p", ("g", "c", ""), uid="uid-p"),
    )
    pod = s.pod("default/p")
    assert pod is not None
    return binding_wait(pod, s.dra, minor)


def test_the_pod_waits_for_conditions_not_yet_true() -> None:
    head = ('allocated, waiting in PreBind for device binding conditions (event BindingConditionsPending: '
            '"waiting for binding conditions for device on node n1"), not a Filter failure; not yet True: ')  # fmt: skip
    tail = (". kube-scheduler checks every 5s and gives up 600s (bindingTimeout) after the "
            "allocation at 2026-12-04T10:00:00Z, then deallocates the claim and tries other devices")  # fmt: skip
    dev = "claim default/c device gpu.nvidia.com/a-fabric/fabric-gpu"
    assert wait_text(None) == f"{head}{dev}: Attached (not set){tail}"  # no status.devices entry yet
    assert wait_text([cond("Attached", "False")]) == f"{head}{dev}: Attached (False){tail}"
    assert wait_text([cond("Attached", "True")]) == ""  # ready: PreBind lets it bind
    assert wait_text(None, minor=35) == ""  # gate off: nothing waits


def test_a_true_failure_condition_fails_prebind_with_upstreams_text() -> None:
    got = wait_text([cond("Attached", "False"), cond("AttachFailed", "True", "FabricError", "no free port")])
    assert got.startswith(
        'device binding failed: claim=c, reason=FabricError, message="no free port" '
        "(binding failure condition AttachFailed of device gpu.nvidia.com/a-fabric/fabric-gpu is True)"
    )


def test_explain_says_what_the_pod_waits_for_and_1_35_flags_the_fields() -> None:
    s = snap(*o.gpu_node("n1", 0), attachable("a-fabric"), waiting_claim([cond("Attached", "False")]),
             o.pod("p", ("g", "c", ""), uid="uid-p"))  # fmt: skip
    pod = s.pod("default/p")
    assert pod is not None
    exp = explain_pod(Engine(s), pod)
    assert exp.binding.endswith("then deallocates the claim and tries other devices")
    assert exp.to_dict()["bindingWait"] == exp.binding
    (line,) = slice_lines(s.dra, 35)
    assert line.startswith(
        "ResourceSlices a-fabric-slice use bindingConditions/bindingFailureConditions/bindsToNode"
    )


def test_a_failed_binding_makes_the_claim_unavailable_on_every_node_from_1_36() -> None:
    # dynamicresources.go Filter: an allocated claim whose isClaimReadyForBinding errs (AttachFailed True) is
    # unavailable ("resourceclaim not available on the node") and PostFilter deallocates it; 1.35 drops the
    # fields, so the allocated claim simply binds to its node n1
    objs = [*o.gpu_classes(), *o.gpu_node("n1", 0), attachable("a-fabric"),
            waiting_claim([cond("AttachFailed", "True", "FabricError", "no free port")]),
            o.pod("p", ("g", "c", ""), uid="uid-p")]  # fmt: skip
    got = outcome("1.36", *objs)
    # Filter's text, then PostFilter's (the claim is reserved only for this pod: it is deallocated)
    assert got == (
        "0/1 nodes are available: 1 resourceclaim not available on the node. deallocation of ResourceClaim "
        "completed, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    assert outcome("1.35", *objs) == "n1"
    # conditions merely not met: Filter passes (PreBind waits), the node is n1
    objs[-2] = waiting_claim([cond("Attached", "False")])
    assert outcome("1.36", *objs) == "n1"


def test_binding_failure_reads_results_as_is_claim_ready_for_binding() -> None:
    """``isClaimReadyForBinding`` (kubernetes v1.37.2, pkg/scheduler/framework/plugins/dynamicresources/
    dynamicresources.go): a result without bindingConditions is skipped even if a failure condition of it
    is True; the first device not ready yet (a binding condition not True) ends the walk without an error,
    so a True failure condition of a later device is not reached; a True failure condition of a device
    before that is the error."""
    from kubegpu.model.dra import AllocatedDevice
    from kubegpu.model.dra_binding import Binding, DeviceCondition, binding_failure

    gate = Binding(conditions=("Attached",), failure_conditions=("AttachFailed",))
    plain = AllocatedDevice("gpu", "drv", "p", "d0", binding=Binding(failure_conditions=("AttachFailed",)))
    waiting = AllocatedDevice("gpu", "drv", "p", "d1", binding=gate)
    broken = AllocatedDevice("gpu", "drv", "p", "d2", binding=gate)
    fail = DeviceCondition("AttachFailed", "True", "NoPath", "no fabric path")
    statuses = (
        (("drv", "p", "d0"), (fail,)),
        (("drv", "p", "d1"), (DeviceCondition("Attached", "False"),)),
        (("drv", "p", "d2"), (fail,)),
    )
    assert binding_failure([plain], statuses) is None  # no binding conditions: skipped
    assert binding_failure([waiting, broken], statuses) is None  # d1 not ready: the walk ends there
    assert binding_failure([plain, broken, waiting], statuses) == (broken, fail)
