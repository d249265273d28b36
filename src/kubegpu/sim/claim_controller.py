"""The resourceclaim controller's part a replay needs: claims released when their pods are done (R9).

In a cluster, kube-scheduler allocates a pod's ResourceClaims and reserves them for it
(``status.reservedFor``); it never frees them. The resourceclaim controller does
(pkg/controller/resourceclaim/controller.go ``syncClaim``, the same in 1.30-1.37): it drops a pod from
``reservedFor`` once the pod is deleted, replaced by another with the same name, or done
(``isPodDone``: phase Succeeded/Failed, or deleted while unscheduled); when the last consumer is dropped
it clears ``status.allocation`` (a claim the scheduler allocated carries the controller's finalizer), so
the devices are free for other claims; and it deletes an unreserved claim that was generated from a
template for a pod (controlling ownerReference ``v1/Pod``) once that pod is done (the garbage collector
would delete it with the pod anyway). A claim shared by several pods stays allocated while one of them
still runs.

``ClaimController`` applies that to the replay's DynamicResources plugin when a pod completes or is
deleted (after its grace period, or with its node): the pod's UID leaves every claim's consumers, a claim
left without consumers is deallocated, and a claim generated for the pod is deleted. The replay keeps a
finished or evicted pod's spec and recreates it with the same UID and claim statuses, so "deleted" is
modelled as the claim its replacement would get from the same template: the same name, unallocated and
unreserved. The special claims the scheduler creates for DRA-served extended resources are owned by the
pod too, and go the same way. The controller works as soon as the pod is done; the seconds an API server
and controller take are not modelled.

Each replay works on its own copy of the snapshot's claims (``simulate`` replays the same snapshot before
and after a change), carried over when the replay rebuilds its scheduler for a node added or removed.

Must not: allocate (the plugin does), or touch claims of pods that are still running.
"""

from __future__ import annotations

from dataclasses import replace

from kubegpu.model.dra import ResourceClaim
from kubegpu.model.objects import Pod
from kubegpu.scheduler.plugins.dynamic_resources import DynamicResources, resolve_claims
from kubegpu.scheduler.schedule_one import Scheduler


class ClaimController:
    """Releases the DRA claims of pods that are done, on the scheduler the replay currently runs."""

    def __init__(self) -> None:
        self._plugin: DynamicResources | None = None

    def attach(self, scheduler: Scheduler) -> None:
        """Use ``scheduler``'s DynamicResources; a rebuilt scheduler takes over the claims as they are now."""
        plugin = next((p for p in scheduler.framework.plugins if isinstance(p, DynamicResources)), None)
        if plugin is None or not plugin.dra:
            self._plugin = None
            return
        if self._plugin is None:
            plugin.dra = replace(plugin.dra, claims=dict(plugin.dra.claims))  # this replay's own copy
        else:
            plugin.dra, plugin.assumed = self._plugin.dra, self._plugin.assumed
        self._plugin = plugin

    def pod_bound(self, pod: Pod) -> None:
        """``pod`` starts on its node: it is a consumer of each of its claims, as kube-scheduler's PreBind
        records it in ``reservedFor`` (the plugin records only the pod that allocated a claim)."""
        plugin = self._plugin
        if plugin is None or pod.key not in plugin.dra.pod_claims:
            return
        uid = pod.uid  # as the plugin reserves a claim it allocates (its pod_added)
        for c in resolve_claims(pod, plugin.dra)[0]:
            if uid not in plugin.claim_view(c).reserved_for:
                plugin.dra.claims[c.key] = replace(c, reserved_for=(*c.reserved_for, uid))

    def pod_done(self, pod: Pod) -> None:
        """``pod`` completed or was deleted: release its claims as the resourceclaim controller does."""
        plugin = self._plugin
        if plugin is None:
            return
        uid = pod.uid
        claims = plugin.dra.claims
        # the claims the scheduler reserved for it: its own, and special claims it made for the pod
        own = [c.key for c in resolve_claims(pod, plugin.dra)[0]]
        special = [k for k, (_, _, u) in plugin.assumed.items() if k not in claims and u == uid]
        for key in [*own, *special]:
            stored = claims.get(key)
            view = plugin.claim_view(stored) if stored is not None else _assumed_only(plugin, key)
            if uid not in view.reserved_for:
                continue
            consumers = list(view.reserved_for)
            consumers.remove(uid)  # one entry: pods without a UID all reserve as ""
            plugin.assumed.pop(key, None)  # the claim's state is written back below
            if stored is None:
                continue  # a special claim for extended resources: deleted with its pod
            if consumers:  # still in use (a shared claim, or a generated one another pod named)
                claims[key] = replace(view, reserved_for=tuple(consumers))
            else:  # deallocated; a claim generated for the pod: deleted, i.e. its replacement's fresh one
                claims[key] = replace(view, allocated=None, allocation_node_selector=None, reserved_for=())


def _assumed_only(plugin: DynamicResources, key: str) -> ResourceClaim:
    result, _, uid = plugin.assumed[key]
    return replace(result.claim, reserved_for=(uid,))
