"""The scheduler's device choice, read back on the node so kubelet allocates what kubegpu placed (R3.2, R9.3).

kubegpu's live scheduler (``--profile kubegpu``) records the device IDs it chose on the pod, in the same
write that binds it: annotation ``kubegpu.io/allocated-devices`` = ``{container: {resource: [ids]}}``.
kubelet then admits the pod and, per container and resource, asks the device plugin
``GetPreferredAllocation(available, mustInclude, size)`` — without saying which pod it admits. This
module finds the container being admitted from the API server: the pods bound to this node
(``fieldSelector=spec.nodeName=<node>``, as kubelet lists its own pods) that carry the annotation, are
not running yet (phase Pending) nor being deleted, and have a container whose recorded IDs for the
resource are all available, exactly ``size`` of them, and include every must-include ID. Several
matches go oldest binding first (the ``PodScheduled=True`` transition the API server stamps at binding,
then creation time, then namespace/name: deterministic). No match, or no API answer, leaves the choice
to the plugin's topology-aware rule.

``Allocate`` carries no pod either; ``allocation_mismatch`` compares the IDs kubelet allocates with the
records of the same size and says when none of them agrees, so a disagreement is logged, not silent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kubegpu.scheduler.device_ledger import ALLOCATION_ANNOTATION

log = logging.getLogger(__name__)

PAGE_SIZE = 500


class JsonGetter(Protocol):
    """What this module needs of ``kubegpu.kube.client.KubeApi`` (kept abstract: the agent imports the
    kubernetes client only when it is given API access)."""

    def get(self, path: str, query: Mapping[str, str] | None = None) -> Any: ...


@dataclass(frozen=True)
class Recorded:
    """One container's recorded device IDs for one resource, on a pod waiting for admission."""

    pod: str  # namespace/name
    container: str
    ids: tuple[str, ...]
    bound_at: str
    created_at: str


def pending_records(pods: Sequence[Mapping[str, Any]], node: str, resource: str) -> list[Recorded]:
    """Recorded IDs for ``resource`` on pods bound to ``node`` and not running yet, oldest binding first."""
    out: list[Recorded] = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        raw = (meta.get("annotations") or {}).get(ALLOCATION_ANNOTATION)
        if not raw or spec.get("nodeName") != node or meta.get("deletionTimestamp"):
            continue
        if status.get("phase", "Pending") != "Pending":
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            log.warning(
                "pod %s/%s: %s is not JSON", meta.get("namespace"), meta.get("name"), ALLOCATION_ANNOTATION
            )
            continue
        if not isinstance(record, dict):
            continue
        bound_at = next(
            (
                str(c.get("lastTransitionTime") or "")
                for c in status.get("conditions") or []
                if c.get("type") == "PodScheduled" and c.get("status") == "True"
            ),
            "",
        )
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        for container, resources in record.items():
            ids = resources.get(resource) if isinstance(resources, dict) else None
            if isinstance(ids, list) and ids:
                created = str(meta.get("creationTimestamp") or "")
                out.append(Recorded(key, str(container), tuple(str(i) for i in ids), bound_at, created))
    # an unknown binding time sorts last among equals ("~" after digits)
    out.sort(key=lambda r: (r.bound_at or "~", r.created_at or "~", r.pod, r.container))
    return out


def match(
    records: Sequence[Recorded], available: Sequence[str], must: Sequence[str], size: int
) -> Recorded | None:
    """The first record kubelet's request can be: all IDs available, ``size`` of them, must-include ones in."""
    free = set(available)
    for r in records:
        if len(r.ids) == size and set(r.ids) <= free and set(must) <= set(r.ids):
            return r
    return None


def allocation_mismatch(records: Sequence[Recorded], resource: str, ids: Sequence[str]) -> str:
    """A warning when kubelet allocates ``ids`` while pods waiting on this node recorded other IDs of the
    same count for ``resource``; empty when a record agrees or none could be meant."""
    same_size = [r for r in records if len(r.ids) == len(ids)]
    if not same_size or any(set(r.ids) == set(ids) for r in same_size):
        return ""
    recorded = "; ".join(f"{r.pod} container {r.container}: {','.join(r.ids)}" for r in same_size)
    return (
        f"kubelet allocated {resource} {','.join(ids)}, which no pending pod's {ALLOCATION_ANNOTATION} "
        f"records ({recorded}): the container gets other devices than the scheduler placed"
    )


class SchedulerChoice:
    """Reads the pods bound to one node from the API server for the device plugin's two RPCs."""

    def __init__(self, api: JsonGetter, node_name: str) -> None:
        self.api = api
        self.node_name = node_name

    def records(self, resource: str) -> list[Recorded]:
        """The node's waiting records for ``resource``; empty (and a warning) when the API cannot answer."""
        pods: list[Mapping[str, Any]] = []
        query = {"fieldSelector": f"spec.nodeName={self.node_name}", "limit": str(PAGE_SIZE)}
        try:
            while True:
                page = self.api.get("/api/v1/pods", query)
                pods.extend(page.get("items") or [])
                token = (page.get("metadata") or {}).get("continue")
                if not token:
                    break
                query = {**query, "continue": str(token)}
        except Exception as exc:  # any API failure: fall back to the plugin's own choice, never fail kubelet
            log.warning("listing pods on %s failed, using the topology-aware choice: %s", self.node_name, exc)
            return []
        return pending_records(pods, self.node_name, resource)

    def preferred(
        self, resource: str, available: Sequence[str], must: Sequence[str], size: int
    ) -> list[str] | None:
        found = match(self.records(resource), available, must, size)
        if found is None:
            return None
        log.info(
            "preferring %s for %s container %s, as the scheduler recorded",
            ",".join(found.ids),
            found.pod,
            found.container,
        )
        return list(found.ids)

    def check_allocation(self, resource: str, ids: Sequence[str]) -> str:
        warning = allocation_mismatch(self.records(resource), resource, ids)
        if warning:
            log.warning("%s", warning)
        return warning
