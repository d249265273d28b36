"""A pod kube-scheduler never tries because its ResourceClaims cannot be resolved: DynamicResources'
PreEnqueue (kubernetes pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go, ``PreEnqueue``:
``foreachPodResourceClaim`` failing returns UnschedulableAndUnresolvable) keeps it out of the active queue,
so no scheduling cycle runs and no FailedScheduling event is written until a claim event requeues it.

The usual cause is a claim generated from a ResourceClaimTemplate that kube-controller-manager's resource
claim controller has not created (pkg/controller/resourceclaim/controller.go records the Warning event
``FailedResourceClaimCreation``, "PodResourceClaim <name>: <error>", on the pod, e.g. when the template
does not exist), or a named claim that does not exist. Owns that wording. Imports model and scheduler only.
"""

from __future__ import annotations

from kubegpu.model.dra import DraObjects
from kubegpu.model.objects import Pod
from kubegpu.scheduler.plugins.dynamic_resources import DynamicResources, resolve_claims

CLAIM_CREATION_EVENT = "FailedResourceClaimCreation"  # the resource claim controller's event reason


def not_queued(plugins: list[object], pod: Pod, dra: DraObjects) -> str:
    """Why PreEnqueue keeps ``pod`` out of the queue ("" when it does not, or DynamicResources is not in
    ``plugins``, the profile's: DRA off for the minor)."""
    if not any(isinstance(p, DynamicResources) for p in plugins):
        return ""
    _, problem = resolve_claims(pod, dra)
    if not problem:
        return ""
    text = (
        f"kube-scheduler keeps the pod out of its scheduling queue (DynamicResources PreEnqueue: {problem}): "
        "no scheduling attempt and no FailedScheduling event until the claim exists."
    )
    return " ".join([text, *_why(pod, dra)])


def _why(pod: Pod, dra: DraObjects) -> list[str]:
    """What the claims the pod names lack, per claim entry."""
    pc = dra.pod_claims.get(pod.key)
    if pc is None:
        return []
    ns, out = pod.namespace, []
    for ref in pc.refs:
        if ref.template_name and ref.name not in pc.statuses:
            if f"{ns}/{ref.template_name}" not in dra.templates:
                out.append(
                    f"Claim {ref.name} is to come from ResourceClaimTemplate {ns}/{ref.template_name}, which is not "
                    "in the snapshot: kube-controller-manager cannot create the claim (the pod's "
                    f"{CLAIM_CREATION_EVENT} event says why). Fix spec.resourceClaims[].resourceClaimTemplateName "
                    "or create the template."
                )
            else:
                out.append(
                    f"Claim {ref.name}'s template {ns}/{ref.template_name} exists, but kube-controller-manager has "
                    f"not created the claim: check that it runs and the pod's {CLAIM_CREATION_EVENT} events."
                )
        elif ref.claim_name and f"{ns}/{ref.claim_name}" not in dra.claims:
            out.append(
                f"Claim {ref.name} names ResourceClaim {ns}/{ref.claim_name}, which does not exist: create it or fix "
                "spec.resourceClaims[].resourceClaimName."
            )
    return out
