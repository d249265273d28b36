"""Pods bound to a node whose DRA claims kubelet cannot prepare: the scheduler did its part (claims allocated,
pod bound), but kubelet's DRA manager must call the driver's kubelet plugin on that node (NodePrepareResources)
before it creates the containers. Until that succeeds the pod stays ``Pending`` in ``ContainerCreating`` and
kubelet records the event ``FailedPrepareDynamicResources`` ("Failed to prepare dynamic resources: …",
kubernetes pkg/kubelet/events/event.go), retrying. Nothing is Pending for a scheduler to explain.

The commonest message, ``DRA driver <name> is not registered`` (kubernetes pkg/kubelet/cm/dra/plugin
DRAPluginManager.GetPlugin), means no kubelet plugin of that driver has registered with this kubelet: the
driver's kubelet-plugin pod is not running on the node or has not registered its socket under
/var/lib/kubelet/plugins_registry (kubernetes-sigs/dra-driver-nvidia-gpu#814, compute-domain.nvidia.com).
Other messages (the plugin's own NodePrepareResources error) are quoted as kubelet wrote them.
"""

from __future__ import annotations

import re

from kubegpu.explain.findings_base import Finding
from kubegpu.model.snapshot import ClusterSnapshot

PREPARE_FAILED = "FailedPrepareDynamicResources"  # kubelet pkg/kubelet/events/event.go
_UNREGISTERED = re.compile(r"DRA driver (\S+) is not registered")


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
        if m is None:
            title = f"kubelet on {node} cannot prepare the DRA claims of {key}: the pod does not start"
            detail = (
                f'kubelet wrote "{e.message}" ({PREPARE_FAILED}, {e.count}x): the driver\'s kubelet plugin failed '
                "NodePrepareResources; its log on that node says why. kubelet retries; the pod stays in "
                "ContainerCreating until it succeeds"
            )
        else:
            driver = m.group(1)
            title = f"DRA driver {driver} is not registered with kubelet on {node}: {key} cannot start"
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
        out.append(
            Finding(
                "warning",
                "driver/device-plugin",
                title,
                [f"pod/{key}", f"node/{node}"],
                detail + ".",
                "R16",
                commands,
            )
        )
    return out
