"""A workload's DRA claims joined to the snapshot's, as the resourceclaim controller would create them (R9).

A simulator workload (``sim.workload``) may carry ResourceClaims (shared by name) and
ResourceClaimTemplates, and its pods may name either in ``spec.resourceClaims``. For each template
entry the resourceclaim controller creates one claim per pod when the pod is created
(pkg/controller/resourceclaim/controller.go ``handleClaim``): the template's ``spec``, a controlling
ownerReference to the pod (``v1``/``Pod``, its name and UID), and the pod's
``status.resourceClaimStatuses`` naming it. Upstream names it ``<pod>-<entry>-<5 random characters>``
(``generateName``); here it is ``<pod>-<entry>``, which is unique too and keeps a seed's run
reproducible. The claims exist from the start of the replay, unallocated, and only their pod can use
them (DynamicResources checks the owner), so creating them at load instead of at each pod's arrival
changes nothing that is scheduled. ``sim.claim_controller`` deletes (regenerates) them when their pod is
done.

Must not: change the snapshot's objects (the result is a new ``DraObjects``); guess a template that is
not there (a pod naming a template that neither the snapshot nor the workload has is an ``InputError``
naming file, pod and field).
"""

from __future__ import annotations

from dataclasses import replace

from kubegpu.errors import InputError
from kubegpu.model.dra import DraObjects, PodClaims, ResourceClaim, parse_pod_claims
from kubegpu.model.objects import OwnerRef
from kubegpu.sim.workload import SimInput


def with_workload_claims(base: DraObjects, extra: SimInput) -> DraObjects:
    """``base`` plus the workload's claims, templates, pods' claim references and generated claims."""
    if not extra.dra_objects and not extra.claim_pods:
        return base
    out = replace(
        base,
        classes=dict(base.classes),
        slices=list(base.slices),
        claims=dict(base.claims),
        templates=dict(base.templates),
        pod_claims=dict(base.pod_claims),
    )
    for source, raw in extra.dra_objects:
        out.add(raw, source)
    for source, raw in extra.claim_pods:
        parsed = parse_pod_claims(raw, source)
        if parsed is None:
            continue
        key, pc = parsed
        namespace, _, name = key.partition("/")
        statuses = dict(pc.statuses)
        for i, ref in enumerate(pc.refs):
            if not ref.template_name or ref.name in statuses:
                continue  # a claim by name, or one the pod's status already names
            template = out.templates.get(f"{namespace}/{ref.template_name}")
            if template is None:
                raise InputError(
                    f"ResourceClaimTemplate {namespace}/{ref.template_name} is not in the snapshot or the workload",
                    source=source,
                    obj=f"Pod {key}",
                    field=f"spec.resourceClaims[{i}].resourceClaimTemplateName",
                )
            generated = ResourceClaim(
                namespace,
                f"{name}-{ref.name}",
                uid=f"{pc.uid}-{ref.name}",
                owners=(OwnerRef("Pod", name, uid=pc.uid, controller=True),),
                requests=template.requests,
                constraints=template.constraints,
                source=source,
            )
            out.claims[generated.key] = generated
            statuses[ref.name] = generated.name
        out.pod_claims[key] = PodClaims(pc.uid, pc.refs, statuses)
    return out
