"""ImageLocality: nodes that already hold the pod's images score higher (weight 1 in the default profile).

Mirrors kube-scheduler's ``plugins/imagelocality/image_locality.go`` and the cache's image states: each image
name a node lists in ``status.images`` counts with the size the first node listing it gave, scaled by the
share of nodes that have it (``scaledImageScore``: ``int64(size * numNodes / totalNodes)`` in float64).
Containers, init containers and image volumes each count one image; names without a tag get ``:latest``.
The sum is clamped to [23 MiB, 1000 MiB × images] and scaled to [0, 100] (``calculatePriority``). No
NormalizeScore. A cluster whose nodes list no images scores 0 everywhere, as upstream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from kubegpu.model.objects import Pod
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.framework import MAX_NODE_SCORE, CycleState, Handle, Rows, Scores
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.status import SKIP, SUCCESS, Status

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized(name: str) -> str:
    """``normalizedImageName``: add ``:latest`` when the last ``:`` is not after the last ``/``."""
    return name + ":latest" if name.rfind(":") <= name.rfind("/") else name


def image_states(cluster: ClusterState) -> dict[str, tuple[int, int]]:
    """image name → (size recorded first, number of nodes listing it)."""
    states: dict[str, tuple[int, int]] = {}
    for node in cluster.nodes:
        seen: set[str] = set()
        for image_names, size in node.images:
            for n in image_names:
                if n in seen:
                    continue
                seen.add(n)
                first, count = states.get(n, (size, 0))
                states[n] = (first, count + 1)
    return states


def pod_images(pod: Pod) -> tuple[list[str], int]:
    refs = [c.image for c in (*pod.init_containers, *pod.containers)]
    refs += [v.image for v in pod.volumes if v.kind == "image"]
    return [normalized(r) for r in refs], len(refs)


def priority(total: int, count: int) -> int:
    """``calculatePriority``."""
    max_threshold = MAX_CONTAINER_THRESHOLD * count
    total = min(max(total, MIN_THRESHOLD), max_threshold)
    return MAX_NODE_SCORE * (total - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


class ImageLocality:
    name: ClassVar[str] = names.IMAGE_LOCALITY

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._states: tuple[ClusterState, dict[str, tuple[int, int]]] | None = None

    def _image_states(self, cluster: ClusterState) -> dict[str, tuple[int, int]]:
        # nodes are fixed rows per cluster; the cluster itself is kept (an id may be reused once it is freed)
        if self._states is None or self._states[0] is not cluster:
            self._states = (cluster, image_states(cluster))
        return self._states[1]

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Status:
        return SUCCESS if self._image_states(cluster) else SKIP

    def score(self, state: CycleState, pod: Pod, node: NodeView) -> int:
        states = self._image_states(node.cluster)
        refs, count = pod_images(pod)
        if count == 0:
            return 0
        on_node = {n for image_names, _ in node.node.images for n in image_names}
        total = 0
        for ref in refs:
            if ref in on_node:
                size, num = states[ref]
                total += int(float(size) * (float(num) / float(len(node.cluster.nodes))))
        return priority(total, count)

    def score_batch(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Scores:
        return np.array([self.score(state, pod, cluster.view(int(i))) for i in rows], dtype=np.int64)
