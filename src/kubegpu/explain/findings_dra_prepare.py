"""Pods bound to a node whose DRA claims kubelet cannot prepare: the scheduler did its part (claims allocated,
pod bound), but kubelet's DRA manager must call the driver's kubelet plugin on that node (NodePrepareResources)
before it creates the containers. Until that succeeds the pod stays ``Pending`` in ``ContainerCreating`` and
kubelet records the event ``FailedPrepareDynamicResources`` ("Failed to prepare dynamic resources: …",
kubernetes pkg/kubelet/events/event.go), retrying. Nothing is Pending for a scheduler to explain.

The commonest message, ``DRA driver <name> is not registered`` (kubernetes pkg/kubelet/cm/dra/plugin
DRAPluginManager.GetPlugin), means no kubelet plugin of that driver has registered with this kubelet: the
driver's kubelet-plugin pod is not running on the node or has not registered its socket under
/var/lib/kubelet/plugins_registry (kubernetes-sigs/dra-driver-nvidia-gpu#814, compute-domain.nvidia.com).
kubelet's own check before it calls any plugin, ``pod <name> (<uid>) is not allowed to use ResourceClaim <claim>
(<uid>)`` (1.34+; 1.32-1.33 "pod <name>(<uid>) is not allowed to use resource claim <claim>(<uid>)",
pkg/kubelet/cm/dra/manager.go ``IsReservedForPod``), means the claim's status.reservedFor does not list the
pod: no scheduler allocated and reserved the claim for it (kube-scheduler running without DRA, google/dranet#30),
or the claim is still reserved for a pod that is gone, which kube-controller-manager's resource claim
controller would have removed (Project-HAMi/HAMi-DRA#21: webhook-made claims without ownerReferences).
Other messages (the plugin's own NodePrepareResources error) are quoted as kubelet wrote them.
"""

from __future__ import annotations

import re

from kubegpu.explain.findings_base import POD_MARK, Finding, naming_pod
from kubegpu.model.objects import Pod
from kubegpu.model.snapshot import ClusterSnapshot

PREPARE_FAILED = "FailedPrepareDynamicResources"  # kubelet pkg/kubelet/events/event.go
UNPREPARED = "dra-unprepared"  # ``Finding.check`` of the findings below (a pod each)
_UNREGISTERED = re.compile(r"DRA driver (\S+) is not registered")
_NOT_RESERVED = re.compile(r"is not allowed to use (?:ResourceClaim|resource claim) (\S+?) ?\(")


def prepare_findings(snapshot: ClusterSnapshot) -> list[Finding]:
    """A finding per bound, not started pod with kubelet's FailedPrepareDynamicResources event."""
    out = []
    for pod in snapshot.pods:
        if not pod.node_name or pod.phase not in ("Pending", ""):
            continue
        events = [
            e
            for e in snapshot.records.events_about("Pod", pod.namespace, pod.name)
            if e.reason == PREPARE_FAILED
        ]
        if not events:
            continue
        e, node, key = events[-1], pod.node_name, f"{pod.namespace}/{pod.name}"
        commands = [f"kubectl -n {pod.namespace} describe pod {pod.name}"]
        m = _UNREGISTERED.search(e.message)
        refused = _NOT_RESERVED.search(e.message)
        if refused is not None:
            title, detail, more = _not_reserved(snapshot, pod, refused.group(1), e.message, e.count)
            commands += more
        elif m is None:
            title = f"kubelet on {node} cannot prepare the DRA claims of {POD_MARK}: the pod does not start"
            detail = (
                f'kubelet wrote "{e.message}" ({PREPARE_FAILED}, {e.count}x): the driver\'s kubelet plugin failed '
                "NodePrepareResources; its log on that node says why. kubelet retries; the pod stays in "
                "ContainerCreating until it succeeds"
            )
        else:
            driver = m.group(1)
            title = f"DRA driver {driver} is not registered with kubelet on {node}: {POD_MARK} cannot start"
            published = [s.name for s in snapshot.dra.slices if s.driver == driver and s.node_name == node]
            slices = (
                f"ResourceSlice(s) of {driver} for {node} in the snapshot: {', '.join(published)} (published "
                "earlier, or by a plugin that has since stopped)"
                if published
                else f"the snapshot holds no ResourceSlice of {driver} for {node}"
            )
            detail = (
                f'kubelet wrote "{e.message}" ({PREPARE_FAILED}, {e.count}x): no kubelet plugin of {driver} has '
                f"registered with this kubelet, so it cannot prepare the pod's claims. The driver's kubelet-plugin "
                f"pod is not running on {node}, or has not registered its socket under "
                "/var/lib/kubelet/plugins_registry (look at that pod and its log; a kubelet restart re-registers "
                f"running plugins). kubelet retries; the pod stays in ContainerCreating until then. {slices}"
            )
            commands += [
                f"kubectl get pods -A -o wide --field-selector spec.nodeName={node}",
                f"kubectl get resourceslices --field-selector spec.nodeName={node}",
            ]
        title, subject, many = naming_pod(title, key)  # (its title a template: the pod's name at POD_MARK)
        out.append(
            Finding(
                "warning",
                "driver/device-plugin",
                title,
                [f"pod/{key}", f"node/{node}"],
                detail + ".",
                "R16",
                commands,
                check=UNPREPARED,
                subject=subject,
                many=many,
            )
        )
    return out


def _not_reserved(
    snapshot: ClusterSnapshot, pod: Pod, claim_name: str, message: str, count: int
) -> tuple[str, str, list[str]]:
    """kubelet refused the pod before any plugin: the claim's reservedFor does not list it. (Its title a template
    that names the pod at ``POD_MARK``.)"""
    ns = pod.namespace
    title = (
        f"kubelet on {pod.node_name} refuses {POD_MARK}: ResourceClaim {claim_name} is not reserved for it"
    )
    said = (
        f'kubelet wrote "{message}" ({PREPARE_FAILED}, {count}x): before calling any DRA driver it checks that '
        "the claim's status.reservedFor lists the pod, and it does not. "
    )
    claim = snapshot.dra.claims.get(f"{ns}/{claim_name}")
    if claim is None:
        why = f"The snapshot holds no ResourceClaim {ns}/{claim_name}, so kubegpu cannot say more"
    elif claim.allocated is None:
        why = (
            "The claim is not allocated, yet the pod is bound: no scheduler ran DynamicResources for it. Either "
            "kube-scheduler runs without the DynamicResourceAllocation feature gate (beta and off by default in "
            "1.32-1.33: it must be on in kube-apiserver, kube-scheduler, kube-controller-manager and kubelet; "
            "google/dranet#30) or the pod was created with spec.nodeName, which skips the scheduler. Fix that, then "
            "recreate the pod so that kube-scheduler allocates and reserves the claim"
        )
    else:
        uids = {p.uid: p for p in snapshot.pods if p.uid}
        gone = [u for u in claim.reserved_for if u not in uids]
        holders = [uids[u].key for u in claim.reserved_for if u in uids]
        if gone:
            why = (
                f"The claim is allocated and reserved for {len(gone)} pod UID(s) no pod in the snapshot has "
                f"({', '.join(gone)}): a pod that is gone. kube-controller-manager's resource claim controller "
                "removes such reservations; it has not, so check that it runs with DRA enabled. A claim made "
                "outside a ResourceClaimTemplate (a webhook, a user) has no ownerReferences and outlives its pod "
                "(Project-HAMi/HAMi-DRA#21): the claim is still in use by no one"
            )
        else:
            why = (
                f"The claim is allocated and reserved for {', '.join(holders) or 'no pod'}, not for this pod: the "
                "pod was bound without kube-scheduler adding it (spec.nodeName set, or another scheduler)"
            )
    return (
        title,
        said + why,
        [
            f"kubectl -n {ns} get resourceclaim {claim_name} -o yaml",
            f"kubectl -n {ns} get pods -o custom-columns=NAME:.metadata.name,UID:.metadata.uid,NODE:.spec.nodeName",
        ],
    )
