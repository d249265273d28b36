"""Placed pods grouped by what inter-pod affinity and topology spread read, with per-node counts.

Upstream's PreFilter state for InterPodAffinity and PodTopologySpread is a count per topology domain of
the pods a term or constraint selects, built from every node's pods and updated incrementally
(``AddPod``/``RemovePod``). kubegpu keeps the columnar equivalent in the cluster state: pods that look
the same to every selector (same namespace, labels and terminating flag) form one *label group* with a
count per node, and pods carrying pod (anti-)affinity form one *affinity group* per distinct (namespace,
labels, terms). ``ClusterState.add_pod``/``remove_pod`` keep both current (dry runs and their rollbacks
included), so a selector is evaluated once per group, not once per pod, and a domain count is one
``bincount`` over a node label column.

May import ``kubegpu.model`` only.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubegpu.model.objects import Pod, PodAffinity

Counts = npt.NDArray[np.int64]
LabelKey = tuple[str, tuple[tuple[str, str], ...], bool]  # namespace, sorted labels, terminating


@dataclass(frozen=True, slots=True)
class LabelGroup:
    namespace: str
    labels: dict[str, str]
    terminating: bool


@dataclass(frozen=True, slots=True)
class AffinityGroup:
    namespace: str
    labels: dict[str, str]
    affinity: PodAffinity


class PodGroups:
    """Placed pods by label group and by affinity group, each with its pods' count per node (sparse:
    most groups sit on few nodes). Which groups a selector accepts is cached per caller-given key and
    extended as groups appear, so a selector is evaluated once per group over the whole run."""

    def __init__(self, n_nodes: int) -> None:
        self.n = n_nodes
        self._label_ids: dict[LabelKey, int] = {}
        self.label_groups: list[LabelGroup] = []
        self.label_members: list[dict[int, int]] = []  # per label group: node → pods
        self._affinity_ids: dict[tuple[str, tuple[tuple[str, str], ...], PodAffinity], int] = {}
        self.affinity_groups: list[AffinityGroup] = []
        self.affinity_members: list[dict[int, int]] = []
        self._label_cache: dict[Hashable, list[int]] = {}
        self._label_index: dict[tuple[str, str], list[int]] = {}  # (key, value) → label groups carrying it
        # affinity groups by one (key, value) every pod their terms select must carry (a term's first
        # matchLabels pair); groups with a term lacking matchLabels are candidates for every pod
        self._affinity_index: dict[tuple[str, str], list[int]] = {}
        self._affinity_any: list[int] = []
        self._label_seen: dict[Hashable, int] = {}

    def add(self, pod: Pod, idx: int, delta: int) -> None:
        labels = pod.sorted_labels
        key = (pod.namespace, labels, bool(pod.deletion_timestamp))
        gid = self._label_ids.get(key)
        if gid is None:
            gid = self._label_ids[key] = len(self.label_groups)
            self.label_groups.append(LabelGroup(pod.namespace, dict(pod.labels), key[2]))
            self.label_members.append({})
            for pair in labels:
                self._label_index.setdefault(pair, []).append(gid)
        _bump(self.label_members[gid], idx, delta)
        if pod.pod_affinity:
            akey = (pod.namespace, labels, pod.pod_affinity)
            aid = self._affinity_ids.get(akey)
            if aid is None:
                aid = self._affinity_ids[akey] = len(self.affinity_groups)
                self.affinity_groups.append(AffinityGroup(pod.namespace, dict(pod.labels), pod.pod_affinity))
                self.affinity_members.append({})
                self._index_affinity(aid, pod.pod_affinity)
            _bump(self.affinity_members[aid], idx, delta)

    def label_groups_where(
        self, key: Hashable, selects: Callable[[LabelGroup], bool], hint: tuple[str, str] | None = None
    ) -> list[int]:
        """The label groups ``selects`` accepts; ``key`` names the predicate (same key, same answer) and
        ``hint``, when given, is a label every accepted group carries (only those groups are asked)."""
        found = self._label_cache.setdefault(key, [])
        seen = self._label_seen.get(key, 0)
        pool = self._label_index.get(hint, []) if hint is not None else None
        end = len(pool) if pool is not None else len(self.label_groups)
        for i in range(seen, end):
            gid = pool[i] if pool is not None else i
            if selects(self.label_groups[gid]):
                found.append(gid)
        self._label_seen[key] = end
        return found

    def count_where(
        self, key: Hashable, selects: Callable[[LabelGroup], bool], hint: tuple[str, str] | None = None
    ) -> Counts:
        """Per node, the placed pods of the label groups ``selects`` accepts (``hint``: as above)."""
        out = np.zeros(self.n, dtype=np.int64)
        for gid in self.label_groups_where(key, selects, hint):
            for idx, c in self.label_members[gid].items():
                out[idx] += c
        return out

    def _index_affinity(self, aid: int, a: PodAffinity) -> None:
        firsts = set()
        for t in (*a.required, *a.preferred, *a.anti_required, *a.anti_preferred):
            if t.selector is None:
                continue  # selects nothing
            if not t.selector.match_labels:
                self._affinity_any.append(aid)
                return
            firsts.add(t.selector.match_labels[0])
        for pair in firsts:
            self._affinity_index.setdefault(pair, []).append(aid)

    def affinity_groups_where(
        self, labels: dict[str, str], selects: Callable[[AffinityGroup], bool]
    ) -> list[int]:
        """The affinity groups with pods placed that ``selects`` accepts, asked only of groups one of whose
        terms could select a pod with ``labels``."""
        candidates = set(self._affinity_any)
        for pair in labels.items():
            candidates.update(self._affinity_index.get(pair, ()))
        return [
            a for a in sorted(candidates) if self.affinity_members[a] and selects(self.affinity_groups[a])
        ]

    def affinity_counts(self, aid: int) -> Counts:
        out = np.zeros(self.n, dtype=np.int64)
        for idx, c in self.affinity_members[aid].items():
            out[idx] += c
        return out


def _bump(members: dict[int, int], idx: int, delta: int) -> None:
    c = members.get(idx, 0) + delta
    if c:
        members[idx] = c
    else:
        members.pop(idx, None)


def domain_counts(counts: Counts, ids: npt.NDArray[np.int32], n_values: int) -> Counts:
    """Per value of a node label column (``ClusterState.label_column``), the sum of ``counts`` over the
    nodes carrying that value; nodes without the label count nowhere."""
    has = ids >= 0
    return np.bincount(ids[has], weights=counts[has], minlength=n_values).astype(np.int64)
