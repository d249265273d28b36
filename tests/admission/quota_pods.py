"""Pods and a GPU ResourceQuota as upstream's TestPodEvaluatorUsage cases build them (team-a, a fixed clock,
grace 30 s): for the terminating-pod quota tests and the multi-tenant walks built from them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubegpu.model.podgroup import rfc3339

NOW = datetime(2026, 12, 1, 10, 0, 0, tzinfo=UTC)
GRACE = 30  # terminationGracePeriodSeconds of the upstream cases
GPU = {"limits": {"nvidia.com/gpu": "1"}}


def quota_pod(name: str, resources: dict[str, Any], *, ns: str = "team-a", deleted: datetime | None = None,
              grace: int | None = GRACE, phase: str = "Running", created: datetime | None = None,
              reason: str = "") -> dict[str, Any]:  # fmt: skip
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if created is not None:
        meta["creationTimestamp"] = rfc3339(created)
    if deleted is not None:
        meta["deletionTimestamp"] = rfc3339(deleted)
        if grace is not None:
            meta["deletionGracePeriodSeconds"] = grace
    status: dict[str, Any] = {"phase": phase}
    if reason:
        status["reason"] = reason
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": "gpu-node-1", "terminationGracePeriodSeconds": GRACE,
                     "containers": [{"name": "c", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                                     "resources": resources}]},
            "status": status}  # fmt: skip


def gpu_quota(hard: str, used: str | None = None) -> dict[str, Any]:
    """ResourceQuota team-a/gpu on requests.nvidia.com/gpu; ``used``: the status the API server reported."""
    quota: dict[str, Any] = {"apiVersion": "v1", "kind": "ResourceQuota",
                             "metadata": {"name": "gpu", "namespace": "team-a"},
                             "spec": {"hard": {"requests.nvidia.com/gpu": hard}}}  # fmt: skip
    if used is not None:
        quota["status"] = {
            "hard": {"requests.nvidia.com/gpu": hard},
            "used": {"requests.nvidia.com/gpu": used},
        }
    return quota
