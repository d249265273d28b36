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
kubelet reads each claim from the API server before it calls any plugin (``failed to fetch ResourceClaim <claim>
referenced by pod <pod>: <err>``, pkg/kubelet/cm/dra/manager.go). The API server's "the server could not find the
requested resource" names no object: it does not serve the resource.k8s.io version that kubelet asks for. A kubelet
older than its control plane (the version skew policy allows 3 minors) reads claims through the version of its own
release, v1beta1 in 1.32-1.33 (``ResourceV1beta1().ResourceClaims``), and a 1.34+ API server serves
resource.k8s.io/v1 and not v1beta1 unless its --runtime-config enables it
(kubernetes-sigs/dra-driver-nvidia-gpu#766: kubelet 1.33.1 under a 1.34.1 control plane; intel/intel-resource-drivers-for-kubernetes#47: the same answer for a
1.34 cluster, fixed by enabling resource.k8s.io/v1beta1 in kube-apiserver).
Other messages (the plugin's own NodePrepareResources error) are quoted as kubelet wrote them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kubegpu.explain.findings_base import POD_MARK, Finding, naming_pod
from kubegpu.model.objects import Pod
from kubegpu.model.snapshot import ClusterSnapshot

PREPARE_FAILED = "FailedPrepareDynamicResources"  # kubelet pkg/kubelet/events/event.go
UNPREPARED = "dra-unprepared"  # ``Finding.check`` of the findings below (a pod each)
_UNREGISTERED = re.compile(r"DRA driver (\S+) is not registered")
_NOT_RESERVED = re.compile(r"is not allowed to use (?:ResourceClaim|resource claim) (\S+?) ?\(")
_FETCH_FAILED = re.compile(r"failed to fetch ResourceClaim (\S+) referenced by pod \S+: (.*)")
# apimachinery's NotFound without a name (StatusReasonNotFound for the request's path): the group version is not
# served
_NOT_SERVED = "the server could not find the requested resource"


@dataclass
class Prepared:
    """Why kubelet cannot prepare a bound pod's DRA claims: ``title`` a template naming the pod at ``POD_MARK``."""

    node: str
    title: str
    detail: str
    message: str  # kubelet's event, as it wrote it
    commands: list[str]
    layer: str = "driver/device-plugin"


def prepare_reading(snapshot: ClusterSnapshot, pod: Pod) -> Prepared | None:
    """THE reading of a bound, not started pod's last FailedPrepareDynamicResources event (None without one):
    ``prepare_findings`` reports it for diagnose, ``findings_bound.why_not_running`` for explain."""
    if not pod.node_name or pod.phase not in ("Pending", ""):
        return None
    events = [
        e for e in snapshot.records.events_about("Pod", pod.namespace, pod.name) if e.reason == PREPARE_FAILED
    ]
    if not events:
        return None
    e, node = events[-1], pod.node_name
    layer = "driver/device-plugin"
    commands = [f"kubectl -n {pod.namespace} describe pod {pod.name}"]
    m = _UNREGISTERED.search(e.message)
    refused = _NOT_RESERVED.search(e.message)
    fetch = _FETCH_FAILED.search(e.message)
    if refused is not None:
        title, detail, more = _not_reserved(snapshot, pod, refused.group(1), e.message, e.count)
        commands += more
    elif fetch is not None and _NOT_SERVED in fetch.group(2):
        title, detail, more = _api_not_served(snapshot, pod, fetch.group(1), e.message, e.count)
        commands += more
        layer = "node"  # the kubelet's release against its control plane's, not the driver
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
    return Prepared(node, title, detail + ".", e.message, commands, layer)


def prepare_findings(snapshot: ClusterSnapshot) -> list[Finding]:
    """A finding per bound, not started pod with kubelet's FailedPrepareDynamicResources event."""
    out = []
    for pod in snapshot.pods:
        got = prepare_reading(snapshot, pod)
        if got is None:
            continue
        key = f"{pod.namespace}/{pod.name}"
        # its title a template: the pod's name at POD_MARK
        title, subject, many = naming_pod(got.title, key)
        out.append(
            Finding(
                "warning",
                got.layer,
                title,
                [f"pod/{key}", f"node/{got.node}"],
                got.detail,
                "R16",
                got.commands,
                check=UNPREPARED,
                subject=subject,
                many=many,
            )
        )
    return out


def _api_not_served(
    snapshot: ClusterSnapshot, pod: Pod, claim_name: str, message: str, count: int
) -> tuple[str, str, list[str]]:
    """kubelet could not read the claim: the API server does not serve the resource.k8s.io version kubelet asks
    for. (Its title a template that names the pod at ``POD_MARK``.)"""
    kubelet = next(
        (
            str(((raw.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion") or "")
            for raw in snapshot.raw_objects
            if raw.get("kind") == "Node" and (raw.get("metadata") or {}).get("name") == pod.node_name
        ),
        "",
    )
    title = (
        f"kubelet on {pod.node_name} cannot read {POD_MARK}'s ResourceClaim: the API server does not serve the DRA "
        "API version it asks for"
    )
    exists = (
        f"ResourceClaim {pod.namespace}/{claim_name} is in the snapshot, so it exists: "
        if f"{pod.namespace}/{claim_name}" in snapshot.dra.claims
        else ""
    )
    detail = (
        f'kubelet wrote "{message}" ({PREPARE_FAILED}, {count}x): kubelet itself failed to read the claim, before '
        f"calling any DRA driver, and the driver is not at fault. {exists}the API server's answer names no object, "
        "it does not serve the resource.k8s.io version that kubelet asks for. "
        + (f"This kubelet is {kubelet}; " if kubelet else "")
        + "a kubelet older than its control plane reads claims through its own release's version (v1beta1 in "
        "1.32-1.33), and a 1.34+ API server serves resource.k8s.io/v1 and not v1beta1 unless its --runtime-config "
        "enables it. Upgrade the node's kubelet to the control plane's minor, or add "
        "resource.k8s.io/v1beta1=true to kube-apiserver's --runtime-config; kubelet retries and the pod stays in "
        "ContainerCreating until then"
    )
    return title, detail, ["kubectl api-versions | grep resource.k8s.io", "kubectl get nodes -o wide"]


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
