"""What a pod's DRA verdict rests on when its objects use a field whose feature gate is off by default in
the minor reproduced (``scheduler.versions.DRA_GATES``): one ``unverified`` line per field and object.

A gate off by default means the API server of that minor drops the field on create (resourceslice and
resourceclaim strategy ``dropDisabledFields``; ``distinctAttribute`` leaves a constraint that validation then
refuses: "matchAttribute: Required value"), so such objects come from another minor or a cluster with the
gate turned on. kubegpu decides as the default scheduler would (it ignores the field) and says so here:
the verdict differs if the cluster runs with the gate on. Imports model and scheduler only.
"""

from __future__ import annotations

from kubegpu.explain.wording import some_of
from kubegpu.model.dra import DraObjects, ResourceClaim
from kubegpu.scheduler.versions import dra_gate

_DROPPED = "is off by default in 1.{minor}, where the API server drops {what} on create; kubegpu ignores {it}"


def _off(minor: int, gate: str, what: str, it: str = "them") -> str:
    return f"{gate} " + _DROPPED.format(minor=minor, what=what, it=it)


def claim_lines(claims: list[ResourceClaim], minor: int) -> list[str]:
    out = []
    for c in claims:
        subs = [s for r in c.requests for s in r.alternatives]
        if not dra_gate(minor, "DRADeviceTaints") and any(s.tolerations for s in subs):
            out.append(f"claim {c.key} sets device tolerations: " + _off(minor, "DRADeviceTaints", "them"))
        if not dra_gate(minor, "DRAConsumableCapacity"):
            if any(s.capacity for s in subs):
                out.append(
                    f"claim {c.key} sets capacity requests: " + _off(minor, "DRAConsumableCapacity", "them")
                )
            if any(m.distinct_attribute for m in c.constraints):
                out.append(
                    f"claim {c.key} has a distinctAttribute constraint: DRAConsumableCapacity is off by default "
                    f"in 1.{minor}, where the API server refuses such a claim (the field is dropped, then "
                    "matchAttribute is required); kubegpu ignores the constraint"
                )
    return out


def slice_lines(dra: DraObjects, minor: int) -> list[str]:
    """The gated fields the snapshot's slices (and DeviceTaintRules) use, one line per field."""
    uses: dict[str, list[str]] = {"taints": [], "counters": [], "per_device": [], "shared": [], "binding": []}
    for s in dra.slices:
        if any(d.taints for d in s.devices):
            uses["taints"].append(s.name)
        if s.shared_counters or any(d.consumes_counters for d in s.devices):
            uses["counters"].append(s.name)
        if s.per_device_node_selection:
            uses["per_device"].append(s.name)
        if any(d.binding for d in s.devices):
            uses["binding"].append(s.name)
        if any(d.allow_multiple or d.request_policy for d in s.devices):
            uses["shared"].append(s.name)
    out = []
    gated = (
        ("taints", "DRADeviceTaints", "device taints", "devices' taints"),
        (
            "counters",
            "DRAPartitionableDevices",
            "sharedCounters/consumesCounters",
            "them (a counter slice is skipped)",
        ),
        (
            "per_device",
            "DRAPartitionableDevices",
            "perDeviceNodeSelection and the devices' nodeName/nodeSelector/allNodes",
            "the slice (the scheduler skips a slice that sets perDeviceNodeSelection)",
        ),
        ("shared", "DRAConsumableCapacity", "allowMultipleAllocations/requestPolicy", "them"),
        (
            "binding",
            "DRADeviceBindingConditions",
            "bindingConditions/bindingFailureConditions/bindsToNode",
            "them (nothing waits in PreBind)",
        ),
    )
    for key, gate, what, it in gated:
        if uses[key] and not dra_gate(minor, gate):
            names = some_of(uses[key])
            out.append(f"ResourceSlices {names} use {what}: " + _off(minor, gate, what, it))
    if dra.taint_rules and not dra_gate(minor, "DRADeviceTaintRules"):
        out.append(
            f"{len(dra.taint_rules)} DeviceTaintRule(s): DRADeviceTaintRules is off by default in 1.{minor} "
            "(on from 1.37), so the scheduler does not apply them; kubegpu does not either"
        )
    return out
