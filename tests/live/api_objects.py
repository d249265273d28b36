"""What the live tests' API server (``apiserver.py``) serves and records: the resource table (built-in kinds
and the custom resources served once installed), the injected fault, the held request, the served-request
record, and the ``kind: Status`` body (split from apiserver.py to keep it under 600 lines)."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]

# plural -> (group, version, kind, namespaced)
RESOURCES: dict[str, tuple[str, str, str, bool]] = {
    "namespaces": ("", "v1", "Namespace", False),
    "nodes": ("", "v1", "Node", False),
    "pods": ("", "v1", "Pod", True),
    "resourcequotas": ("", "v1", "ResourceQuota", True),
    "limitranges": ("", "v1", "LimitRange", True),
    "priorityclasses": ("scheduling.k8s.io", "v1", "PriorityClass", False),
    "poddisruptionbudgets": ("policy", "v1", "PodDisruptionBudget", True),
    "leases": ("coordination.k8s.io", "v1", "Lease", True),
    "events": ("events.k8s.io", "v1", "Event", True),
    # the storage plugins' objects (the live scheduler watches them)
    "persistentvolumeclaims": ("", "v1", "PersistentVolumeClaim", True),
    "persistentvolumes": ("", "v1", "PersistentVolume", False),
    "storageclasses": ("storage.k8s.io", "v1", "StorageClass", False),
    "csinodes": ("storage.k8s.io", "v1", "CSINode", False),
    "csidrivers": ("storage.k8s.io", "v1", "CSIDriver", False),
    "csistoragecapacities": ("storage.k8s.io", "v1", "CSIStorageCapacity", True),
    # PodTopologySpread's default selector reads these (the live scheduler watches them)
    "services": ("", "v1", "Service", True),
    "replicationcontrollers": ("", "v1", "ReplicationController", True),
    "replicasets": ("apps", "v1", "ReplicaSet", True),
    "statefulsets": ("apps", "v1", "StatefulSet", True),
}
# Custom resources, keyed "<plural>.<group>" (the CRD's metadata.name): two APIs share "podgroups".
CRDS: dict[str, tuple[str, str, str, bool]] = {
    "gpuqueues.kubegpu.io": ("kubegpu.io", "v1alpha1", "GpuQueue", False),
    "gpucohorts.kubegpu.io": ("kubegpu.io", "v1alpha1", "GpuCohort", False),
    "podgroups.scheduling.volcano.sh": ("scheduling.volcano.sh", "v1beta1", "PodGroup", True),
    "podgroups.scheduling.x-k8s.io": ("scheduling.x-k8s.io", "v1alpha1", "PodGroup", True),
}
RESOURCES.update(CRDS)
NOT_SERVED = "the server could not find the requested resource"


def resource_key(group: str, plural: str) -> str:
    """The ``RESOURCES`` key of a request's resource: the plural for built-in kinds, else plural.group."""
    builtin = RESOURCES.get(plural)
    return plural if builtin is not None and builtin[0] == group else f"{plural}.{group}"


@dataclass
class Fault:
    """Answer the next ``times`` requests matching ``method`` and ``path`` (a regex) with ``status``."""

    method: str
    path: str
    status: int
    reason: str = "InternalError"
    message: str = "injected fault"
    headers: dict[str, str] = field(default_factory=dict)
    times: int = 1
    watch: bool | None = None  # only watch requests (True), only non-watch ones (False), or both
    # True: the request is carried out first and only its answer is replaced (a lost response: the write
    # happened, the client never hears so); status 0 closes the connection instead of answering
    after: bool = False
    # run (under the emulator's lock) before answering: another writer's change racing the request
    race: Callable[[], None] | None = None


@dataclass
class Hold:
    """Requests matching ``method`` and ``path`` (a regex; not watches) wait until ``release`` is set;
    ``reached`` is set when the first one arrives."""

    method: str
    path: str
    release: threading.Event = field(default_factory=threading.Event)
    reached: threading.Event = field(default_factory=threading.Event)


@dataclass
class Served:
    method: str
    path: str
    query: dict[str, str]
    user_agent: str
    status: int


def status_body(code: int, reason: str, message: str, details: JSON | None = None) -> JSON:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "details": details or {}, "code": code}  # fmt: skip


def now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def matches_labels(selector: JSON | None, labels: dict[str, str]) -> bool:
    if selector is None:
        return False
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())
