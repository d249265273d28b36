"""What an unbound pod whose claims are allocated waits for in kube-scheduler's PreBind: device binding
conditions (KEP-5007; DRADeviceBindingConditions with DRAResourceClaimDeviceStatus, on by default from 1.36).

Upstream (pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go, v1.36.3): the allocator
copies a device's ``bindingConditions`` / ``bindingFailureConditions`` into the claim's allocation result;
PreBind then records the event ``BindingConditionsPending`` ("waiting for binding conditions for device on
node N") and polls every 5s, up to ``bindingTimeout`` (600s by default), until every binding condition of
every result is True in the claim's ``status.devices[].conditions`` (``isClaimReadyForBinding``). A binding
failure condition that is True fails PreBind with "device binding failed: claim=C, reason=R, message=M";
running out of time with "device binding timeout: claim=C". On its next attempt Filter finds the claim
unavailable ("resourceclaim not available on the node", ``plugins.dynamic_resources``) and PostFilter
deallocates it, so other devices are tried. None of this is a Filter failure:
the pod is Pending while a driver or controller prepares the device (attaches it to the node). With the
gates off the API server drops the fields (resourceslice strategy ``dropDisabledFields``) and nothing
waits. Imports model and scheduler only.
"""

from __future__ import annotations

import json

from kubegpu.model.dra import DraObjects, ResourceClaim
from kubegpu.model.dra_binding import binding_failure, conditions_of, unmet
from kubegpu.model.objects import Pod
from kubegpu.scheduler.dra_capacity import Features
from kubegpu.scheduler.plugins.dynamic_resources import resolve_claims

POLL_SECONDS = 5  # wait.PollUntilContextTimeout(ctx, 5*time.Second, ...)
BINDING_TIMEOUT_SECONDS = 600  # config.DynamicResourcesBindingTimeoutDefault
PENDING_EVENT = "waiting for binding conditions for device on node {node}"  # reason BindingConditionsPending
FAILED = "device binding failed: claim={claim}, reason={reason}, message={message}"  # ErrDeviceBindingFailed


def _node(claim: ResourceClaim) -> str:
    """The node of the allocation's selector (``metadata.name In [node]``, as the allocator writes it)."""
    for term in claim.allocation_node_selector or ():
        for r in term.match_fields:
            if r.key == "metadata.name" and len(r.values) == 1:
                return r.values[0]
    return ""


def _failure_line(claim: ResourceClaim) -> str:
    """``isClaimReadyForBinding``'s error for one claim (``binding_failure``) as PreBind reports it, or ""."""
    got = binding_failure(claim.allocated or (), claim.device_conditions)
    if got is None:
        return ""
    r, bad = got
    text = FAILED.format(claim=claim.name, reason=bad.reason, message=json.dumps(bad.message))  # Go's %q
    return f"{text} (binding failure condition {bad.type} of device {'/'.join(r.device_id)} is True)"


def _claim_lines(claim: ResourceClaim) -> list[str]:
    """The binding conditions of one claim's devices not yet True."""
    waits = []
    for r in claim.allocated or ():
        if r.binding is None or not r.binding.conditions:
            continue
        missing = unmet(r.binding, conditions_of(claim.device_conditions, r.device_id))
        if missing:
            waits.append(f"claim {claim.key} device {'/'.join(r.device_id)}: {', '.join(missing)}")
    return waits


def binding_wait(pod: Pod, dra: DraObjects, minor: int) -> str:
    """Why ``pod`` (not bound) waits in PreBind for its claims' device binding conditions, or "" when it
    does not: no allocated claim of it has a device with binding conditions that are not all True."""
    if pod.node_name or not Features.for_minor(minor).binding:
        return ""
    claims, _ = resolve_claims(pod, dra)
    lines, since, node = [], "", ""
    for c in claims:
        failure = _failure_line(c)
        if failure:
            return (
                f"{failure}: kube-scheduler's PreBind fails; its next attempt finds the claim unavailable on "
                "every node and deallocates it (PostFilter) so that other devices are tried"
            )
        got = _claim_lines(c)
        if got:
            lines += got
            since = since or c.allocated_at
            node = node or _node(c)
    if not lines:
        return ""
    deadline = (
        f"{BINDING_TIMEOUT_SECONDS}s (bindingTimeout) after the allocation at {since}"
        if since
        else f"{BINDING_TIMEOUT_SECONDS}s (bindingTimeout) after the allocation"
    )
    return (
        f"allocated, waiting in PreBind for device binding conditions (event BindingConditionsPending: "
        f'"{PENDING_EVENT.format(node=node or "?")}"), not a Filter failure; not yet True: {"; ".join(lines)}. '
        f"kube-scheduler checks every {POLL_SECONDS}s and gives up {deadline}, then "
        "deallocates the claim and tries other devices"
    )
