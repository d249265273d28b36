"""Assumed pods: a chosen pod is accounted on its node until the watch shows it bound (upstream's
``Cache.AssumePod`` / ``ForgetPod``), with the device IDs its Binding carries.

Owns: ``LiveScheduler.assumed`` and the Binding object. May not import the binder, preemption, cache or
admission parts, nor another face.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

from kubegpu.live.state import (
    SchedulerState,
)
from kubegpu.model.objects import Pod
from kubegpu.scheduler.device_ledger import ALLOCATION_ANNOTATION, Assignment

log = logging.getLogger(__name__)


class AssumedPods(SchedulerState):
    def _assume_binding(self, pod: Pod, node: str, allocation: Assignment | None) -> dict[str, Any]:
        """Record ``pod`` as assumed on ``node`` until the watch shows it bound; its Binding object."""
        metadata: dict[str, Any] = {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid}
        assumed = pod
        if allocation:
            # The API server copies a Binding's annotations onto the pod in the same write that sets
            # nodeName, so the device choice and the node land together (or not at all).
            annotation = json.dumps(allocation, sort_keys=True, separators=(",", ":"))
            metadata["annotations"] = {ALLOCATION_ANNOTATION: annotation}
            assumed = dataclasses.replace(
                pod, annotations={**pod.annotations, ALLOCATION_ANNOTATION: annotation}
            )
        self.assumed[pod.key] = (assumed, node)
        return {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"kind": "Node", "name": node},
        }

    def _forget(self, pod: Pod) -> None:
        """Undo the core's assume (upstream ``Cache.ForgetPod``)."""
        self.assumed.pop(pod.key, None)
        self._release(pod.key, move=False)
