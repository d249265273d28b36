"""ClusterSnapshot: every object kubegpu reasons about, as one immutable-by-convention value (R2, R11).

Built from ``(source, raw_dict)`` pairs by ``build_snapshot``, whichever source produced them (a
``kubectl get -o yaml`` dump, a manifest directory, the embedded demo, a live cluster). Objects that
cannot be parsed become ``InputError`` entries in ``errors`` and the rest still loads.

An object is read by its API group and kind together (``reads``), never by the kind alone: a KAI PodGroup
(scheduling.run.ai) is not the Volcano / coscheduling PodGroup the batch layer reads, a Volcano Job
(batch.volcano.sh) is no batch/v1 Job. Built-in kinds kubegpu does not read are counted in ``ignored``;
objects of any other group (CRDs of projects kubegpu does not model: KAI's SchedulingShard, Kueue's Topology,
Karpenter's NodeClaim, …) are accepted, counted in ``not_modelled`` and named once by the commands
(``not_modelled_note``); a kind its built-in group does not serve is an input error, as the API server
would refuse it. An object without an apiVersion is read by its kind alone.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from kubegpu.errors import InputError
from kubegpu.model import parse, parse_policy
from kubegpu.model.dra import KINDS as DRA_KINDS
from kubegpu.model.dra import DraObjects
from kubegpu.model.objects import (
    LimitRange,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    ResourceQuota,
    RuntimeClass,
)
from kubegpu.model.records import GROUPS as RECORD_GROUPS
from kubegpu.model.records import Records
from kubegpu.model.volumes import VolumeObjects

T = TypeVar("T")

CORE = ""  # the core API group (apiVersion ``v1``)
KUBEGPU_GROUP = "kubegpu.io"

# The API groups kube-apiserver serves itself, with the kinds each serves (those of 1.37, and of older releases
# a dump or an old manifest may still carry). A kind of these groups that kubegpu does not read plays no part
# in its diagnosis and is counted in ``ignored`` (a dump of `kubectl get all` carries many); a kind a group does
# not serve (``v1 Pdo``) would be refused by the API server, and is an input error here.
BUILTIN_KINDS: Mapping[str, frozenset[str]] = {
    CORE: frozenset({
        "Binding", "ComponentStatus", "ConfigMap", "Endpoints", "Event", "LimitRange", "Namespace", "Node",
        "PersistentVolume", "PersistentVolumeClaim", "Pod", "PodTemplate", "ReplicationController",
        "ResourceQuota", "Secret", "Service", "ServiceAccount",
    }),
    "apps": frozenset({"ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet"}),
    "batch": frozenset({"CronJob", "Job"}),
    "autoscaling": frozenset({"HorizontalPodAutoscaler", "Scale"}),
    "policy": frozenset({"Eviction", "PodDisruptionBudget", "PodSecurityPolicy"}),
    "scheduling.k8s.io": frozenset({"PriorityClass", "Workload", "PodGroup"}),
    "storage.k8s.io": frozenset({
        "CSIDriver", "CSINode", "CSIStorageCapacity", "StorageClass", "VolumeAttachment", "VolumeAttributesClass",
    }),
    "resource.k8s.io": frozenset({
        "DeviceClass", "DeviceTaintRule", "PodSchedulingContext", "ResourceClaim", "ResourceClaimTemplate",
        "ResourceSlice",
    }),
    "networking.k8s.io": frozenset({"IPAddress", "Ingress", "IngressClass", "NetworkPolicy", "ServiceCIDR"}),
    "discovery.k8s.io": frozenset({"EndpointSlice"}),
    "events.k8s.io": frozenset({"Event"}),
    "node.k8s.io": frozenset({"RuntimeClass"}),
    "coordination.k8s.io": frozenset({"Lease", "LeaseCandidate"}),
    "rbac.authorization.k8s.io": frozenset({"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}),
    "admissionregistration.k8s.io": frozenset({
        "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "MutatingWebhookConfiguration",
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration",
    }),
    "apiextensions.k8s.io": frozenset({"CustomResourceDefinition"}),
    "apiregistration.k8s.io": frozenset({"APIService"}),
    "certificates.k8s.io": frozenset({"CertificateSigningRequest", "ClusterTrustBundle", "PodCertificateRequest"}),
    "flowcontrol.apiserver.k8s.io": frozenset({"FlowSchema", "PriorityLevelConfiguration"}),
    "authentication.k8s.io": frozenset({"SelfSubjectReview", "TokenRequest", "TokenReview"}),
    "authorization.k8s.io": frozenset({
        "LocalSubjectAccessReview", "SelfSubjectAccessReview", "SelfSubjectRulesReview", "SubjectAccessReview",
    }),
    "internal.apiserver.k8s.io": frozenset({"StorageVersion"}),
    "storagemigration.k8s.io": frozenset({"StorageVersionMigration"}),
    # served until 1.16 (1.22 for Ingress); its DaemonSets, Deployments and ReplicaSets are read as apps' ones
    "extensions": frozenset({
        "DaemonSet", "Deployment", "Ingress", "NetworkPolicy", "PodSecurityPolicy", "ReplicaSet",
    }),
    # kubegpu's own CRDs (deploy/): a kind of this group kubegpu does not define is a mistake, not a CRD it skips
    KUBEGPU_GROUP: frozenset({"GpuQueue", "GpuCohort"}),
}  # fmt: skip

# Built-in kinds kubegpu does not read that decide scheduling where they are on: said, like another project's
# objects (``not_modelled``), rather than counted quietly. Kubernetes' own gang scheduling (1.35+, alpha).
NOT_MODELLED_BUILTIN = frozenset({("scheduling.k8s.io", "Workload"), ("scheduling.k8s.io", "PodGroup")})

# Objects the batch layer (queues, cohorts, pod groups) reads; kept raw here and parsed by kubegpu.batch.
# PodGroup is Volcano's and the scheduler-plugins coscheduling API's (``batch.objects``); KAI's PodGroup
# (scheduling.run.ai) has other semantics and Kubernetes' own (scheduling.k8s.io) another shape: neither is read.
BATCH_GROUPS: Mapping[str, frozenset[str]] = {
    "GpuQueue": frozenset({KUBEGPU_GROUP}),
    "GpuCohort": frozenset({KUBEGPU_GROUP}),
    "PodGroup": frozenset({"scheduling.volcano.sh", "scheduling.x-k8s.io"}),
}
BATCH_KINDS = frozenset(BATCH_GROUPS)

# kind → the groups it is read from, for the kinds parsed here and in the DRA and volume models
_CORE_GROUPS: Mapping[str, frozenset[str]] = {
    "Node": frozenset({CORE}),
    "Pod": frozenset({CORE}),
    "ResourceQuota": frozenset({CORE}),
    "LimitRange": frozenset({CORE}),
    "Namespace": frozenset({CORE}),
    "PriorityClass": frozenset({"scheduling.k8s.io"}),
    "RuntimeClass": frozenset({"node.k8s.io"}),
    "PodDisruptionBudget": frozenset({"policy"}),
    **{kind: frozenset({"resource.k8s.io"}) for kind in DRA_KINDS},
    **{kind: frozenset({CORE}) for kind in ("PersistentVolumeClaim", "PersistentVolume")},
    **{
        kind: frozenset({"storage.k8s.io"})
        for kind in ("StorageClass", "CSINode", "CSIDriver", "CSIStorageCapacity")
    },
}


def api_group(raw: Mapping[str, Any]) -> str | None:
    """The object's API group from its ``apiVersion`` (``""`` for ``v1``, ``apps`` for ``apps/v1``); None
    when it has none (a hand-written manifest: its kind alone decides, as the kinds kubegpu reads say)."""
    version = raw.get("apiVersion")
    if not isinstance(version, str) or not version:
        return None
    return version.split("/", 1)[0] if "/" in version else CORE


def reads(kind: str, group: str | None) -> bool:
    """Whether kubegpu reads objects of ``kind`` in ``group`` (None: no apiVersion, any group of the kind)."""
    groups = _CORE_GROUPS.get(kind) or BATCH_GROUPS.get(kind) or RECORD_GROUPS.get(kind)
    return groups is not None and (group is None or group in groups)


@dataclass
class ClusterSnapshot:
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    quotas: list[ResourceQuota] = field(default_factory=list)
    limit_ranges: list[LimitRange] = field(default_factory=list)
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    runtime_classes: dict[str, RuntimeClass] = field(default_factory=dict)  # (admission.runtime_class)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    # what the source could not give or skipped, one line each (a cluster-info dump's logs and gaps)
    notes: list[str] = field(default_factory=list)
    ignored: Counter[str] = field(default_factory=Counter)  # built-in kinds kubegpu does not read, by kind
    # (group, kind) → count: objects of other projects' APIs (CRDs) kubegpu does not model, said once
    # (``not_modelled_note``); in the order first met
    not_modelled: Counter[tuple[str, str]] = field(default_factory=Counter)
    description: str = ""
    raw_objects: list[Mapping[str, Any]] = field(default_factory=list)  # accepted objects, to write back
    batch_objects: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)  # raw BATCH_KINDS
    dra: DraObjects = field(default_factory=DraObjects)  # resource.k8s.io objects, pods' claims
    volumes: VolumeObjects = field(default_factory=VolumeObjects)  # PVCs, PVs, StorageClasses, CSI objects
    server_version: str = ""  # a live cluster's API server version (``--kube``)
    # the kube-scheduler release the core reproduces for this snapshot, and how it was chosen
    kube_version: str | None = None
    kube_version_from: str = ""
    # DaemonSets, controllers, Events and other schedulers' queue objects (``model.records``)
    records: Records = field(default_factory=Records)

    def not_modelled_note(self) -> str:
        """One line naming the objects accepted but not modelled (``""`` when there are none)."""
        if not self.not_modelled:
            return ""
        listed = ", ".join(f"{n} {kind} ({group})" for (group, kind), n in self.not_modelled.items())
        return f"not modelled: {listed}: they do not enter the diagnosis"

    def raw_object(self, kind: str, namespace: str, name: str) -> Mapping[str, Any]:
        """The namespaced object of ``kind`` as the snapshot stored it ({} when absent), matched on the
        namespace the model gave it (a manifest written without one is in the default namespace)."""
        for raw in self.raw_objects:
            meta = raw.get("metadata") or {}
            if raw.get("kind") == kind and meta.get("name") == name and parse.namespace_of(meta) == namespace:
                return raw
        return {}

    def api_versions(self) -> set[str]:
        """The ``apiVersion`` of every stored object: which group versions the API server served."""
        return {str(raw["apiVersion"]) for raw in self.raw_objects if raw.get("apiVersion")}

    def kubelet_versions(self) -> list[str]:
        """Every node's ``status.nodeInfo.kubeletVersion`` as stored (vendor suffixes included)."""
        out = []
        for raw in self.raw_objects:
            if raw.get("kind") == "Node":
                info = (raw.get("status") or {}).get("nodeInfo") or {}
                if isinstance(info, Mapping) and isinstance(info.get("kubeletVersion"), str):
                    out.append(info["kubeletVersion"])
        return out

    # name → first node / pod of that name: ``node`` and ``pod`` are asked once per node and reason on
    # thousands of nodes, so an index instead of a scan each; rebuilt when the list is replaced or resized
    _node_at: _Index[Node] | None = field(default=None, init=False, repr=False, compare=False)
    _pod_at: _Index[Pod] | None = field(default=None, init=False, repr=False, compare=False)
    # what a higher layer derives from the pods, the batch objects and the lists it names (``derived``), with
    # the lists it read
    _derived: dict[Any, tuple[tuple[_Lists[Any], ...], Any]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def derived(self, key: Any, make: Callable[[], T], *, over: tuple[list[Any], ...] = ()) -> T:
        """``make()``, kept on the snapshot under ``key`` while its pod and batch-object lists, and the lists
        ``over`` names (the nodes, the quotas, the records' events or queue objects it reads), are the ones it
        was made from (as ``node``'s and ``pod``'s indexes tell: the same lists, lengths and ends): a value a
        layer above builds from every object once, then reads per pod (the batch layer's workloads). The one
        place that tells a list has changed: a caller names the lists, it builds no key of ids and lengths."""
        lists: tuple[list[Any], ...] = (self.pods, self.batch_objects, *over)
        kept = self._derived.get(key)
        if kept is not None:
            read, value = kept
            if len(read) == len(lists) and all(r.indexes(x) for r, x in zip(read, lists, strict=True)):
                found: T = value
                return found
        made = make()
        self._derived[key] = (tuple(_Lists(x) for x in lists), made)
        return made

    def node(self, name: str) -> Node | None:
        if self._node_at is None or not self._node_at.indexes(self.nodes):
            self._node_at = _Index(self.nodes, [n.name for n in self.nodes])
        return self._node_at.at.get(name)

    def pod(self, key: str) -> Pod | None:
        if self._pod_at is None or not self._pod_at.indexes(self.pods):
            self._pod_at = _Index(self.pods, [p.key for p in self.pods])
        return self._pod_at.at.get(key)

    def pods_on(self, node_name: str) -> list[Pod]:
        return [p for p in self.pods if p.node_name == node_name and not p.is_terminal]

    def pending_pods(self, scheduler_name: str | None = None) -> list[Pod]:
        return [
            p
            for p in self.pods
            if not p.node_name
            and not p.is_terminal
            and not p.deletion_timestamp
            and (scheduler_name is None or p.scheduler_name == scheduler_name)
        ]


class _Lists(Generic[T]):
    """Says whether a list is still the one it was made for (same object, same length, same first and
    last element: the lists are built whole by ``build_snapshot`` or replaced whole, or grow)."""

    def __init__(self, items: list[T]) -> None:
        self.items, self.length = items, len(items)
        self.ends = (items[0], items[-1]) if items else None

    def indexes(self, items: list[T]) -> bool:
        if items is not self.items or len(items) != self.length:
            return False
        return self.ends is None or (items[0] is self.ends[0] and items[-1] is self.ends[1])


class _Index(_Lists[T]):
    """The first element of a list by name, for the list it was built from (``_Lists``)."""

    def __init__(self, items: list[T], names: list[str]) -> None:
        super().__init__(items)
        self.at: dict[str, T] = {}
        for name, item in zip(names, items, strict=True):
            self.at.setdefault(name, item)


def split_documents(doc: Any, source: str, *, yaml: bool = True) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """Flatten ``List`` kinds (``kubectl get … -o yaml``) and ``items`` into single objects. ``yaml``: the
    document came from YAML, where a List without its kind is one cut short (below); a JSON document that
    parsed is whole, so its items are all read (``jq '{items: .items}'`` writes no kind).

    The items of a typed list (``NodeList``, ``PodList``: the API server's list answer, as ``kubectl
    cluster-info dump`` prints it) carry no kind or apiVersion; as apimachinery's ``decodeToList``
    (pkg/apis/meta/v1/unstructured/helpers.go), an item with neither takes the list's apiVersion and the
    list's kind less its ``List`` suffix."""
    if doc is None:
        return
    if not isinstance(doc, Mapping):
        hint = (
            ": a bare array of objects (such as `jq .items` prints) is no Kubernetes document; keep the List "
            "kubectl wrote (`kubectl get … -o json`), or wrap the array as "
            '{"apiVersion": "v1", "kind": "List", "items": [...]}'
            if isinstance(doc, list) and doc and all(isinstance(x, Mapping) and "kind" in x for x in doc[:8])
            else ""
        )
        raise InputError(f"expected a Kubernetes object, got {type(doc).__name__}{hint}", source=source)
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise InputError("expected a list", source=source, obj=str(kind), field="items")
        item_kind, api_version = kind.removesuffix("List"), doc.get("apiVersion")
        for item in items:
            if (
                item_kind
                and isinstance(item, Mapping)
                and not item.get("kind")
                and not item.get("apiVersion")
            ):
                item = {"apiVersion": api_version, "kind": item_kind, **item}
            yield from split_documents(item, source, yaml=yaml)
        return
    items = doc.get("items")
    if not kind and isinstance(items, list) and items and not yaml:
        for item in items:
            yield from split_documents(item, source, yaml=False)
        return
    if not kind and isinstance(items, list) and items:
        # `kubectl get -o yaml|json` writes a List's keys sorted (apiVersion, items, kind, metadata): one that
        # has items but no kind is such a List cut short, and the text ends inside or right after its last item
        for item in items[:-1]:
            yield from split_documents(item, source)
        raise InputError(
            f"a List without its kind: the text ends inside its items (cut short?); the {len(items) - 1} "
            "item(s) before the last were read, the last one, where the text ends, was left out",
            source=source,
            obj=parse.describe(items[-1]) if isinstance(items[-1], Mapping) else "",
        )
    yield source, doc


_PARSERS = {
    "Node": parse.parse_node,
    "ResourceQuota": parse_policy.parse_resource_quota,
    "LimitRange": parse_policy.parse_limit_range,
    "PodDisruptionBudget": parse_policy.parse_pdb,
    "Namespace": parse_policy.parse_namespace,
    "RuntimeClass": parse_policy.parse_runtime_class,
}


def build_snapshot(
    objects: Iterable[tuple[str, Mapping[str, Any]]], description: str = ""
) -> ClusterSnapshot:
    """Parse every object; bad ones become errors, the rest load. Pods are parsed last so that
    ``priorityClassName`` resolves against the PriorityClasses of the same snapshot."""
    snap = ClusterSnapshot(description=description)
    # notes of what an object holds but kubegpu does not count as written (an amount beyond int64)
    with parse.collect_notes(snap.notes):
        raw_pods: list[tuple[str, Mapping[str, Any]]] = []
        for source, raw in objects:
            kind = raw.get("kind")
            if not isinstance(kind, str) or not kind:
                snap.errors.append(
                    InputError("object has no kind", source=source, obj=parse.describe(raw), field="kind")
                )
                continue
            group = api_group(raw)
            noted = len(snap.notes)
            try:
                if not reads(kind, group):
                    _not_read(snap, source, raw, kind, group)
                    continue
                if kind == "Pod":
                    raw_pods.append((source, raw))
                elif kind == "PriorityClass":
                    pc = parse_policy.parse_priority_class(raw, source)
                    snap.priority_classes[pc.name] = pc
                elif kind in _PARSERS:
                    _store(snap, _PARSERS[kind](raw, source))
                elif kind in BATCH_KINDS:
                    snap.batch_objects.append((source, raw))
                elif kind in DRA_KINDS:
                    snap.dra.add(raw, source)
                elif kind in RECORD_GROUPS:
                    snap.records.add(raw, source)
                else:  # the volume model's kinds: ``reads`` admits no other
                    snap.volumes.add(raw, source)
                if kind != "Pod":
                    snap.raw_objects.append(raw)
            except InputError as exc:
                del snap.notes[noted:]  # a refused object's notes go with it
                snap.errors.append(exc)
        for source, raw in raw_pods:
            noted = len(snap.notes)
            try:
                snap.pods.append(parse.parse_pod(raw, source, snap.priority_classes))
                snap.dra.add_pod(raw, source)
                snap.raw_objects.append(raw)
            except InputError as exc:
                del snap.notes[noted:]
                snap.errors.append(exc)
    _reject_duplicates(snap)
    snap.pdbs = [_with_disruptions_allowed(pdb, snap.pods) for pdb in snap.pdbs]
    return snap


_READ = (
    "kubegpu reads Node, Pod, ResourceQuota, LimitRange, PriorityClass, RuntimeClass, PodDisruptionBudget, Namespace, "
    "PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode, CSIDriver, CSIStorageCapacity, GpuQueue, "
    "GpuCohort, PodGroup, DaemonSet, ReplicaSet, ReplicationController, Job, Deployment, StatefulSet, Service, "
    "Event, Kueue's Workload/LocalQueue/ClusterQueue, Queue and their List forms"
)


def _not_read(
    snap: ClusterSnapshot, source: str, raw: Mapping[str, Any], kind: str, group: str | None
) -> None:
    """An object kubegpu does not read: a built-in kind is counted (``ignored``), another project's object
    (any group that is not Kubernetes' own) is accepted and named once (``not_modelled``); a kind its group
    does not serve, or an unknown kind without an apiVersion, raises ``InputError``."""
    if group is None:
        raise InputError(
            f"unknown kind {kind!r} ({_READ})", source=source, obj=parse.describe(raw), field="kind"
        )
    served = BUILTIN_KINDS.get(group)
    if served is None or (group, kind) in NOT_MODELLED_BUILTIN:
        snap.not_modelled[(group, kind)] += 1
    elif kind in served:
        snap.ignored[kind] += 1
    else:
        api = str(raw.get("apiVersion"))
        raise InputError(
            f"unknown kind {kind!r}: {api} serves no such kind, the API server would refuse it ({_READ})",
            source=source,
            obj=parse.describe(raw),
            field="kind",
        )


def _store(snap: ClusterSnapshot, obj: object) -> None:
    if isinstance(obj, Node):
        snap.nodes.append(obj)
    elif isinstance(obj, ResourceQuota):
        snap.quotas.append(obj)
    elif isinstance(obj, LimitRange):
        snap.limit_ranges.append(obj)
    elif isinstance(obj, PodDisruptionBudget):
        snap.pdbs.append(obj)
    elif isinstance(obj, Namespace):
        snap.namespaces.append(obj)
    elif isinstance(obj, RuntimeClass):
        snap.runtime_classes[obj.name] = obj


def _reject_duplicates(snap: ClusterSnapshot) -> None:
    """The same object twice (two dumps overlapping) keeps the first copy and reports the second."""
    seen_nodes: set[str] = set()
    nodes = []
    for n in snap.nodes:
        if n.name in seen_nodes:
            snap.errors.append(
                InputError("duplicate object; the first copy was kept", source=n.source, obj=f"Node {n.name}")
            )
            continue
        seen_nodes.add(n.name)
        nodes.append(n)
    snap.nodes = nodes
    seen_pods: set[str] = set()
    pods = []
    for p in snap.pods:
        if p.key in seen_pods:
            snap.errors.append(
                InputError("duplicate object; the first copy was kept", source=p.source, obj=f"Pod {p.key}")
            )
            continue
        seen_pods.add(p.key)
        pods.append(p)
    snap.pods = pods


def _with_disruptions_allowed(pdb: PodDisruptionBudget, pods: list[Pod]) -> PodDisruptionBudget:
    """Manifests carry no ``status.disruptionsAllowed``; derive it as the disruption controller would
    from the healthy (running, assigned) pods it selects, so preemption can respect the budget."""
    if pdb.disruptions_allowed is not None:
        return pdb
    selected = [p for p in pods if pdb.selects(p) and not p.is_terminal]
    healthy = sum(1 for p in selected if p.node_name and p.phase == "Running")
    expected = len(selected)

    def resolve(v: str | int) -> int:
        if isinstance(v, str) and v.endswith("%"):
            return math.ceil(expected * int(v[:-1]) / 100)
        return int(v)

    if pdb.min_available is not None:
        allowed = healthy - resolve(pdb.min_available)
    elif pdb.max_unavailable is not None:
        allowed = resolve(pdb.max_unavailable) - (expected - healthy)
    else:
        allowed = 0
    return replace(pdb, disruptions_allowed=max(allowed, 0))
