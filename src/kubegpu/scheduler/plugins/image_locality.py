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
import numpy.typing as npt

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
    for names_on_node in _names_per_node(cluster):
        for n, size in names_on_node.items():
            first, count = states.get(n, (size, 0))
            states[n] = (first, count + 1)
    return states


def _names_per_node(cluster: ClusterState) -> list[dict[str, int]]:
    """Per node row, each image name it lists (once) → the size it gives for it."""
    out = []
    for node in cluster.nodes:
        names_on_node: dict[str, int] = {}
        for image_names, size in node.images:
            for n in image_names:
                names_on_node.setdefault(n, size)
        out.append(names_on_node)
    return out


class ImageTable:
    """One cluster's image states as ``scaledImageScore`` reads them, worked out once per cluster state:
    per image name, its score (``int64(size * (numNodes / totalNodes))`` in float64, as upstream) and the node
    rows listing it, so a pod's sum over nodes is one scatter-add per image it uses."""

    def __init__(self, cluster: ClusterState) -> None:
        per_node = _names_per_node(cluster)
        rows: dict[str, list[int]] = {}
        for row, names_on_node in enumerate(per_node):
            for n in names_on_node:
                rows.setdefault(n, []).append(row)
        states = image_states(cluster)
        total = float(len(cluster.nodes))
        self.n_nodes = len(cluster.nodes)
        self.scaled = {n: int(float(size) * (float(num) / total)) for n, (size, num) in states.items()}
        self.rows = {n: np.array(r, dtype=np.intp) for n, r in rows.items()}

    def sums(self, refs: list[str]) -> npt.NDArray[np.int64]:
        """``sumImageScores`` for every node row: each ref (containers, init containers, image volumes,
        repeats included) adds its image's score on the nodes listing it."""
        out = np.zeros(self.n_nodes, dtype=np.int64)
        for ref in refs:
            rows = self.rows.get(ref)
            if rows is not None:
                out[rows] += self.scaled[ref]
        return out


def pod_images(pod: Pod) -> tuple[list[str], int]:
    refs = [c.image for c in (*pod.init_containers, *pod.containers)]
    refs += [v.image for v in pod.volumes if v.kind == "image"]
    return [normalized(r) for r in refs], len(refs)


def priority(total: int, count: int) -> int:
    """``calculatePriority`` for one node (the scalar reference ``priorities`` is held equal to)."""
    max_threshold = MAX_CONTAINER_THRESHOLD * count
    total = min(max(total, MIN_THRESHOLD), max_threshold)
    return MAX_NODE_SCORE * (total - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


def priorities(totals: npt.NDArray[np.int64], count: int) -> Scores:
    """``calculatePriority`` over many sums: clamped to [23 MiB, 1000 MiB × count], scaled to [0, 100]."""
    max_threshold = MAX_CONTAINER_THRESHOLD * count
    clamped = np.clip(totals, MIN_THRESHOLD, max_threshold)
    return (MAX_NODE_SCORE * (clamped - MIN_THRESHOLD)) // (max_threshold - MIN_THRESHOLD)


class ImageLocality:
    name: ClassVar[str] = names.IMAGE_LOCALITY

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._table: tuple[ClusterState, ImageTable] | None = None

    def _image_table(self, cluster: ClusterState) -> ImageTable:
        # nodes are fixed rows per cluster; the cluster itself is kept (an id may be reused once it is freed)
        if self._table is None or self._table[0] is not cluster:
            self._table = (cluster, ImageTable(cluster))
        return self._table[1]

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Status:
        return SUCCESS if self._image_table(cluster).scaled else SKIP

    def score(self, state: CycleState, pod: Pod, node: NodeView) -> int:
        """One node, as upstream walks it (the reference ``score_batch`` is held equal to)."""
        scaled = self._image_table(node.cluster).scaled
        refs, count = pod_images(pod)
        if count == 0:
            return 0
        on_node = {n for image_names, _ in node.node.images for n in image_names}
        return priority(sum(scaled[ref] for ref in refs if ref in on_node), count)

    def score_batch(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Scores:
        refs, count = pod_images(pod)
        if count == 0:
            return np.zeros(len(rows), dtype=np.int64)
        return priorities(self._image_table(cluster).sums(refs)[rows], count)
