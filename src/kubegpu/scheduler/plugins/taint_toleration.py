"""TaintToleration: NoSchedule/NoExecute taints repel pods that do not tolerate them; PreferNoSchedule
taints lower a node's score (R5.3, R17.4: a toleration only allows, it neither attracts nor allocates).

Mirrors kube-scheduler 1.34 ``plugins/tainttoleration``: Filter reports the *first* untolerated
NoSchedule/NoExecute taint in the node's order as ``node(s) had untolerated taint {key: value}``
(UnschedulableAndUnresolvable). Score counts untolerated PreferNoSchedule taints, considering only
tolerations whose effect is PreferNoSchedule or empty, and NormalizeScore reverses it (fewer is better).
Worked example: taints [a=1:PreferNoSchedule, b=2:PreferNoSchedule] with no tolerations scores 2; over
nodes scoring [2, 1, 0] the normalized scores are [0, 50, 100].
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, ClassVar

import numpy as np

from kubegpu.model.objects import Pod, Taint, Toleration, first_untolerated
from kubegpu.scheduler.cluster import ClusterState, NodeView
from kubegpu.scheduler.framework import Codes, CycleState, Handle, ReasonIds, Rows, Scores, default_normalize
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.reasons import UntoleratedTaint
from kubegpu.scheduler.status import SUCCESS, Code, Status, unresolvable


def count_intolerable_prefer_no_schedule(
    taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]
) -> int:
    prefer = tuple(t for t in tolerations if t.effect in ("", "PreferNoSchedule"))
    return sum(
        1
        for taint in taints
        if taint.effect == "PreferNoSchedule" and not any(t.tolerates(taint) for t in prefer)
    )


class TaintToleration:
    name: ClassVar[str] = names.TAINT_TOLERATION
    sign_from_spec: ClassVar[bool] = True  # ``sign`` reads the pod's spec only (Framework.signed_prefix)
    # its Filter reads the node object alone, never the pods on it (upstream registers only Node events)
    filter_reads_pods: ClassVar[bool] = False
    filter_errors: ClassVar[bool] = False

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._reasons = handle.reasons

    def filter(self, state: CycleState, pod: Pod, node: NodeView) -> Status:
        taint = first_untolerated(node.node.taints, pod.tolerations)
        return SUCCESS if taint is None else unresolvable(UntoleratedTaint(taint))

    def sign(self, pod: Pod) -> Hashable:
        return pod.tolerations

    def filter_batch(
        self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows
    ) -> tuple[Codes, ReasonIds]:
        # Decide once per distinct taint set, then gather per node.
        per_set = np.zeros(len(cluster.taint_sets), dtype=np.int32)
        for sid, taints in enumerate(cluster.taint_sets):
            taint = first_untolerated(taints, pod.tolerations)
            if taint is not None:
                per_set[sid] = self._reasons.intern((UntoleratedTaint(taint),))
        reason_ids = per_set[cluster.taint_set_id[rows]]
        codes = np.where(reason_ids > 0, np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), np.int8(0)).astype(
            np.int8
        )
        return codes, reason_ids

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Status:
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeView) -> int:
        return count_intolerable_prefer_no_schedule(node.node.taints, pod.tolerations)

    def score_batch(self, state: CycleState, pod: Pod, cluster: ClusterState, rows: Rows) -> Scores:
        per_set = np.array(
            [count_intolerable_prefer_no_schedule(t, pod.tolerations) for t in cluster.taint_sets],
            dtype=np.int64,
        )
        return per_set[cluster.taint_set_id[rows]]

    def normalize(self, state: CycleState, pod: Pod, scores: Scores) -> Scores:
        return default_normalize(scores, reverse=True)
