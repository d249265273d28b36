"""Kueue's objects (kueue.x-k8s.io) as the snapshot keeps them (raw dicts, any API version), and the quota
shortfalls a Workload's ``QuotaReserved`` message names, read for their numbers.

Kueue formats the shortfalls with fixed words (kubernetes-sigs/kueue pkg/scheduler/flavorassigner/
flavorassigner.go ``Assignment.Message`` and ``fitsResourceQuota``): ``couldn't assign flavors to pod set
<ps>: <reasons>``, pod sets joined by ``; ``, reasons by ``, ``; ``insufficient unused quota for <res> in
flavor <f>, <n> more needed``; ``insufficient quota for <res> in flavor <f>, request > maximum capacity
(<a> > <b>)`` (Kueue ≤ 0.14) or ``…, previously considered podsets requests (<p>) + current podset request
(<c>) > maximum capacity (<b>)`` (0.15+, kueue#7232). A message kubegpu cannot read this way is quoted whole.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubegpu.model.objects import Node
from kubegpu.model.parse import namespace_of
from kubegpu.model.records import KUEUE_GROUP
from kubegpu.model.snapshot import ClusterSnapshot

_POD_SET = re.compile(
    r"couldn't assign flavors to pod set (\S+?): (.*?)(?=; couldn't assign flavors to pod set |$)"
)
_UNUSED = re.compile(r"insufficient unused quota for (\S+) in flavor (\S+?), (\S+) more needed")
_MAX_OLD = re.compile(
    r"insufficient quota for (\S+) in flavor (\S+?), request > maximum capacity \((\S+) > ([^)\s]+)\)"
)
_MAX_NEW = re.compile(
    r"insufficient quota for (\S+) in flavor (\S+?), previously considered podsets requests \((\S+)\) \+ "
    r"current podset request \((\S+)\) > maximum capacity \(([^)\s]+)\)"
)


@dataclass(frozen=True)
class Shortfall:
    """One resource of one pod set that did not fit one flavor, as Kueue's message says."""

    pod_set: str
    resource: str
    flavor: str
    more_needed: str = ""  # "insufficient unused quota": how much more must be unused
    request: str = ""  # "> maximum capacity": the request Kueue compared (with earlier pod sets on ≤ 0.14)
    previous: str = ""  # 0.15+: what the pod sets before it already take from the flavor
    maximum: str = ""  # the most the ClusterQueue can get in the flavor, borrowing included

    @property
    def never_fits(self) -> bool:
        return bool(self.maximum)

    def to_dict(self) -> dict[str, Any]:
        out = {"podSet": self.pod_set, "resource": self.resource, "flavor": self.flavor}
        for key, value in (("moreNeeded", self.more_needed), ("request", self.request),
                           ("previouslyConsidered", self.previous), ("maximumCapacity", self.maximum)):  # fmt: skip
            if value:
                out[key] = value
        return out


def parse_shortfalls(message: str) -> list[Shortfall]:
    """The quota shortfalls Kueue's ``QuotaReserved`` message names, per pod set, in its order."""
    out: list[Shortfall] = []
    for pod_set, reasons in _POD_SET.findall(" ".join(message.split())):
        for m in _MAX_NEW.finditer(reasons):
            res, flavor, previous, current, maximum = m.groups()
            out.append(Shortfall(pod_set, res, flavor, request=current, previous=previous, maximum=maximum))
        for m in _MAX_OLD.finditer(reasons):
            res, flavor, request, maximum = m.groups()
            out.append(Shortfall(pod_set, res, flavor, request=request, maximum=maximum))
        for m in _UNUSED.finditer(reasons):
            res, flavor, needed = m.groups()
            out.append(Shortfall(pod_set, res, flavor, more_needed=needed))
    return out


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """A raw object's ``metadata`` (empty when absent or not a mapping)."""
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def spec_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """A raw object's ``spec`` (empty when absent)."""
    s = obj.get("spec")
    return s if isinstance(s, Mapping) else {}


def status_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """A raw object's ``status`` (empty when absent)."""
    s = obj.get("status")
    return s if isinstance(s, Mapping) else {}


def as_list(value: Any) -> list[Mapping[str, Any]]:
    """The mappings of a raw list field (empty when it is not a list)."""
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def conditions(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """``status.conditions`` by type."""
    return {str(c.get("type")): c for c in as_list(status_of(obj).get("conditions"))}


def name_of(obj: Mapping[str, Any]) -> str:
    """A raw object's name."""
    return str(meta(obj).get("name", ""))


def ns_of(obj: Mapping[str, Any]) -> str:
    """A namespaced raw object's namespace (the default one when unset, as the model reads every object)."""
    return namespace_of(meta(obj))


@dataclass
class KueueIndex:
    """The snapshot's Kueue objects by kind, and its Workloads by (namespace, name) and by (namespace, owner
    kind, owner name), each key at its first Workload in snapshot order with that Workload's position; its
    LocalQueues by (namespace, name) and the names of each namespace's, its ClusterQueues and ResourceFlavors
    by name (each name at its first object, as a scan finds it): read per Pending pod and per held Workload,
    so a fleet of thousands of Workloads and gated pods is not scanned once per pod."""

    by_kind: dict[str, list[Mapping[str, Any]]]
    by_name: dict[tuple[str, str], tuple[int, Mapping[str, Any]]]
    by_owner: dict[tuple[str, str, str], tuple[int, Mapping[str, Any]]]
    local_queue: dict[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    local_queue_names: dict[str, list[str]] = field(default_factory=dict)  # namespace → names, snapshot order
    cluster_queue: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    flavor: dict[str, Mapping[str, Any]] = field(default_factory=dict)


def _index(queues: list[Mapping[str, Any]]) -> KueueIndex:
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    for q in queues:
        if str(q.get("apiVersion", "")).startswith(KUEUE_GROUP + "/"):
            by_kind.setdefault(str(q.get("kind")), []).append(q)
    by_name: dict[tuple[str, str], tuple[int, Mapping[str, Any]]] = {}
    by_owner: dict[tuple[str, str, str], tuple[int, Mapping[str, Any]]] = {}
    for i, w in enumerate(by_kind.get("Workload", [])):
        ns = ns_of(w)
        by_name.setdefault((ns, name_of(w)), (i, w))
        for r in meta(w).get("ownerReferences") or ():
            if isinstance(r, Mapping):
                by_owner.setdefault((ns, str(r.get("kind")), str(r.get("name"))), (i, w))
    index = KueueIndex(by_kind, by_name, by_owner)
    for q in by_kind.get("LocalQueue", []):
        ns, name = ns_of(q), name_of(q)
        index.local_queue.setdefault((ns, name), q)
        index.local_queue_names.setdefault(ns, []).append(name)
    for kind, at in (("ClusterQueue", index.cluster_queue), ("ResourceFlavor", index.flavor)):
        for q in by_kind.get(kind, []):
            at.setdefault(name_of(q), q)
    return index


def kueue_index(snapshot: ClusterSnapshot) -> KueueIndex:
    """``KueueIndex`` of the snapshot, built once while its queue objects stay the same list and length."""
    queues = snapshot.records.queues
    return snapshot.derived("kueue-index", lambda: _index(queues), over=(queues,))


def has_kueue_objects(snapshot: ClusterSnapshot) -> bool:
    return bool(kueue_index(snapshot).by_kind)


def kueue_objects(snapshot: ClusterSnapshot, kind: str) -> list[Mapping[str, Any]]:
    """The snapshot's objects of a Kueue kind (kueue.x-k8s.io, any version), in snapshot order."""
    return kueue_index(snapshot).by_kind.get(kind, [])


def _by_label(nodes: list[Node]) -> dict[tuple[str, str], list[int]]:
    """The snapshot's nodes (their positions) by label (key, value), to find the nodes a ResourceFlavor's
    nodeLabels select without reading every node's labels for every flavor and Workload."""
    at: dict[tuple[str, str], list[int]] = {}
    for i, n in enumerate(nodes):
        for k, v in n.labels.items():
            at.setdefault((k, v), []).append(i)
    return at


def flavor_nodes(snapshot: ClusterSnapshot, flavor: str, resource: str) -> tuple[int, int] | None:
    """(nodes, allocatable milli of ``resource``) of the nodes the ResourceFlavor's nodeLabels select; None
    without the flavor, or when none of them advertises the resource (served through DRA, or a Kueue
    resource transformation's output: not comparable). Read once per flavor and resource per snapshot."""
    rf = kueue_index(snapshot).flavor.get(flavor)
    if rf is None:
        return None
    nodes = snapshot.nodes
    at = snapshot.derived("kueue-node-labels", lambda: _by_label(nodes), over=(nodes,))
    # the answers per flavor's nodeLabels: made again when the queue objects change too (the labels are not)
    rooms: dict[tuple[str, str], tuple[int, int] | None] = snapshot.derived(
        "kueue-flavor-rooms", dict, over=(nodes, snapshot.records.queues)
    )
    if (flavor, resource) not in rooms:
        labels = spec_of(rf).get("nodeLabels")
        labels = labels if isinstance(labels, Mapping) else {}
        having = [at.get((str(k), str(v)), []) for k, v in labels.items()]
        chosen = set(having[0]).intersection(*having[1:]) if having else range(len(nodes))
        total = sum(nodes[i].allocatable.get(resource, 0) for i in chosen)
        rooms[flavor, resource] = (len(chosen), total) if total else None
    return rooms[flavor, resource]
