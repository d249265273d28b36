"""Storage objects the volume plugins read: PersistentVolumeClaims, PersistentVolumes, StorageClasses,
CSINodes, CSIDrivers and CSIStorageCapacities (storage.k8s.io/v1, GA in 1.24), and the rules upstream shares between the scheduler and the PV controller
(``k8s.io/component-helpers/storage/volume``: ``GetPersistentVolumeClaimClass``, ``IsDelayBindingMode``,
``FindMatchingVolume``, ``CheckNodeAffinity``).

``VolumeObjects`` holds a snapshot's storage objects; ``seen`` records which of the kinds the snapshot
carried at all, so a snapshot taken without them says "not checked" instead of "claim not found".
Pure model: imports ``kubegpu.model`` only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubegpu.model import affinity
from kubegpu.model.objects import LabelSelector, NodeSelectorTerm
from kubegpu.model.parse import _Ctx, _meta, _term, parse_label_selector, parse_owner
from kubegpu.model.quantity import QuantityError, to_milli_text

# kind → (the resource name `kubectl get` takes, the ``VolumeObjects`` field holding them, namespaced:
# keyed "ns/name", else the name); the parsers are bound below (``_PARSERS``), where they are defined
_KINDS: Final[dict[str, tuple[str, str, bool]]] = {
    "PersistentVolumeClaim": ("persistentvolumeclaims", "claims", True),
    "PersistentVolume": ("persistentvolumes", "volumes", False),
    "StorageClass": ("storageclasses", "classes", False),
    "CSINode": ("csinodes", "csinodes", False),
    "CSIDriver": ("csidrivers", "drivers", False),
    "CSIStorageCapacity": ("csistoragecapacities", "capacities", True),
}
KINDS: Final = tuple(_KINDS)
# the resource names for them (the README's snapshot command, `--kube`'s lists)
RESOURCES: Final = ",".join(resource for resource, _, _ in _KINDS.values())

BETA_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"  # v1.BetaStorageClassAnnotation
BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"  # volume.AnnBindCompleted
SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"  # volume.AnnSelectedNode
NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"  # volume.NotSupportedProvisioner
WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"
RWOP: Final = "ReadWriteOncePod"


@dataclass(frozen=True)
class Claim:
    namespace: str
    name: str
    uid: str = ""
    storage_class: str = ""  # GetPersistentVolumeClaimClass: beta annotation, else spec ("" when neither)
    volume_name: str = ""
    access_modes: tuple[str, ...] = ()
    request: int = 0  # spec.resources.requests.storage, milli-units
    request_set: bool = False  # requests.storage given at all (hasEnoughCapacity: none = nothing to check)
    volume_mode: str = "Filesystem"
    selector: LabelSelector | None = None
    phase: str = "Pending"
    deleting: bool = False
    annotations: dict[str, str] = field(default_factory=dict)
    controller_uid: str = ""  # the controlling ownerReference's uid (generic ephemeral volumes)
    attributes_class: str = ""
    source: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def fully_bound(self) -> bool:
        """``isPVCFullyBound``: a volume name AND the bind-completed annotation (the PV controller's mark)."""
        return bool(self.volume_name) and BIND_COMPLETED in self.annotations


@dataclass(frozen=True)
class Volume:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    storage_class: str = ""  # GetPersistentVolumeClass
    capacity: int = 0
    access_modes: tuple[str, ...] = ()
    volume_mode: str = "Filesystem"
    claim_ref: tuple[str, str, str] | None = None  # (namespace, name, uid)
    phase: str = "Pending"
    node_affinity: tuple[NodeSelectorTerm, ...] | None = None  # spec.nodeAffinity.required
    csi: tuple[str, str] | None = None  # (driver, volumeHandle)
    deleting: bool = False
    attributes_class: str = ""
    source: str = ""


@dataclass(frozen=True)
class StorageClass:
    name: str
    provisioner: str = ""
    binding_mode: str = "Immediate"  # volumeBindingMode, defaulted as the API server does
    # allowedTopologies: per term, (key, values) expressions
    allowed_topologies: tuple[tuple[tuple[str, tuple[str, ...]], ...], ...] = ()
    source: str = ""


@dataclass(frozen=True)
class CsiNode:
    name: str
    limits: dict[str, int] = field(default_factory=dict)  # driver → spec.drivers[].allocatable.count
    drivers: tuple[str, ...] = ()
    source: str = ""


@dataclass(frozen=True)
class CsiDriver:
    name: str
    storage_capacity: bool = False  # spec.storageCapacity: the driver publishes CSIStorageCapacity objects
    source: str = ""


@dataclass(frozen=True)
class CsiStorageCapacity:
    """A CSI driver's free space for one class in one topology segment (``storagev1.CSIStorageCapacity``)."""

    namespace: str
    name: str
    storage_class: str  # storageClassName (top level)
    node_topology: LabelSelector | None = None  # None: the segment is reachable from no node
    capacity: int | None = None  # milli-units; None when absent
    maximum_volume_size: int | None = None

    @property
    def limit(self) -> int | None:
        """``volumeLimit``: maximumVolumeSize when set (more precise), else capacity."""
        return self.maximum_volume_size if self.maximum_volume_size is not None else self.capacity


@dataclass
class VolumeObjects:
    claims: dict[str, Claim] = field(default_factory=dict)  # "ns/name"
    volumes: dict[str, Volume] = field(default_factory=dict)
    classes: dict[str, StorageClass] = field(default_factory=dict)
    csinodes: dict[str, CsiNode] = field(default_factory=dict)
    drivers: dict[str, CsiDriver] = field(default_factory=dict)
    capacities: dict[str, CsiStorageCapacity] = field(default_factory=dict)  # "ns/name"
    seen: set[str] = field(default_factory=set)  # which of KINDS the snapshot carried

    def add(self, raw: Mapping[str, Any], source: str) -> None:
        """Parse one storage object (raises ``InputError`` naming file, object and field)."""
        kind = str(raw.get("kind"))
        self.seen.add(kind)
        parse = _PARSERS.get(kind)
        if parse is not None:
            obj = parse(raw, source)
            key = f"{obj.namespace}/{obj.name}" if _KINDS[kind][2] else obj.name
            self._store(kind)[key] = obj

    def clear(self, kind: str) -> None:
        """Forget every object of ``kind`` (an informer's relist replaces them all)."""
        self.seen.add(kind)
        self._store(kind).clear()

    def remove(self, kind: str, key: str) -> None:
        """Forget one object (``ns/name`` for a claim or capacity, the name otherwise): a watch's DELETED event."""
        self._store(kind).pop(key, None)

    def _store(self, kind: str) -> dict[str, Any]:
        store: dict[str, Any] = getattr(self, _KINDS[kind][1])
        return store

    def volumes_of_class(self, name: str) -> list[Volume]:
        """``pvCache.ListPVs(class)``: the PVs whose class is ``name``."""
        return [v for v in self.volumes.values() if v.storage_class == name]


def _storage(ctx: _Ctx, value: Any, field: str) -> int:
    return ctx.resources(ctx.mapping(value, field), field).get("storage", 0)


def _modes(ctx: _Ctx, value: Any, field: str) -> tuple[str, ...]:
    return tuple(ctx.string(m, f"{field}[{i}]") for i, m in enumerate(ctx.seq(value, field)))


def parse_claim(raw: Mapping[str, Any], source: str = "") -> Claim:
    ctx = _Ctx(source, raw)
    meta, ns, name = _meta(ctx, raw, namespaced=True)
    spec = ctx.mapping(raw.get("spec"), "spec")
    status = ctx.mapping(raw.get("status"), "status")
    annotations = ctx.str_map(meta.get("annotations"), "metadata.annotations")
    cls = annotations.get(BETA_CLASS_ANNOTATION)
    if cls is None:
        cls = ctx.string(spec.get("storageClassName"), "spec.storageClassName")
    owner = parse_owner(ctx, meta)
    controller = owner.uid if owner is not None and owner.controller else ""
    resources = ctx.mapping(spec.get("resources"), "spec.resources")
    return Claim(
        namespace=ns,
        name=name,
        uid=ctx.string(meta.get("uid"), "metadata.uid"),
        storage_class=cls,
        volume_name=ctx.string(spec.get("volumeName"), "spec.volumeName"),
        access_modes=_modes(ctx, spec.get("accessModes"), "spec.accessModes"),
        request=_storage(ctx, resources.get("requests"), "spec.resources.requests"),
        request_set="storage" in ctx.mapping(resources.get("requests"), "spec.resources.requests"),
        volume_mode=ctx.string(spec.get("volumeMode"), "spec.volumeMode") or "Filesystem",
        selector=parse_label_selector(ctx, spec.get("selector"), "spec.selector"),
        phase=ctx.string(status.get("phase"), "status.phase") or "Pending",
        deleting=bool(meta.get("deletionTimestamp")),
        annotations=annotations,
        controller_uid=controller,
        attributes_class=ctx.string(spec.get("volumeAttributesClassName"), "spec.volumeAttributesClassName"),
        source=source,
    )


def parse_volume(raw: Mapping[str, Any], source: str = "") -> Volume:
    ctx = _Ctx(source, raw)
    meta, _, name = _meta(ctx, raw, namespaced=False)
    spec = ctx.mapping(raw.get("spec"), "spec")
    annotations = ctx.str_map(meta.get("annotations"), "metadata.annotations")
    cls = annotations.get(BETA_CLASS_ANNOTATION)
    if cls is None:
        cls = ctx.string(spec.get("storageClassName"), "spec.storageClassName")
    ref = None
    if spec.get("claimRef") is not None:
        r = ctx.mapping(spec.get("claimRef"), "spec.claimRef")
        ref = (
            ctx.string(r.get("namespace"), "spec.claimRef.namespace"),
            ctx.string(r.get("name"), "spec.claimRef.name"),
            ctx.string(r.get("uid"), "spec.claimRef.uid"),
        )
    terms = None
    required = ctx.mapping(spec.get("nodeAffinity"), "spec.nodeAffinity").get("required")
    if required is not None:
        f = "spec.nodeAffinity.required.nodeSelectorTerms"
        req = ctx.mapping(required, "spec.nodeAffinity.required")
        terms = tuple(
            _term(ctx, t, f"{f}[{i}]") for i, t in enumerate(ctx.seq(req.get("nodeSelectorTerms"), f))
        )
    csi = None
    if spec.get("csi") is not None:
        c = ctx.mapping(spec.get("csi"), "spec.csi")
        csi = (
            ctx.string(c.get("driver"), "spec.csi.driver", required=True),
            ctx.string(c.get("volumeHandle"), "spec.csi.volumeHandle", required=True),
        )
    return Volume(
        name=name,
        labels=ctx.str_map(meta.get("labels"), "metadata.labels"),
        storage_class=cls,
        capacity=_storage(ctx, spec.get("capacity"), "spec.capacity"),
        access_modes=_modes(ctx, spec.get("accessModes"), "spec.accessModes"),
        volume_mode=ctx.string(spec.get("volumeMode"), "spec.volumeMode") or "Filesystem",
        claim_ref=ref,
        phase=ctx.string(ctx.mapping(raw.get("status"), "status").get("phase"), "status.phase") or "Pending",
        node_affinity=terms,
        csi=csi,
        deleting=bool(meta.get("deletionTimestamp")),
        attributes_class=ctx.string(spec.get("volumeAttributesClassName"), "spec.volumeAttributesClassName"),
        source=source,
    )


def parse_storage_class(raw: Mapping[str, Any], source: str = "") -> StorageClass:
    ctx = _Ctx(source, raw)
    _, _, name = _meta(ctx, raw, namespaced=False)
    terms = []
    for i, t in enumerate(ctx.seq(raw.get("allowedTopologies"), "allowedTopologies")):
        f = f"allowedTopologies[{i}].matchLabelExpressions"
        exprs = []
        for j, e in enumerate(
            ctx.seq(ctx.mapping(t, f"allowedTopologies[{i}]").get("matchLabelExpressions"), f)
        ):
            e = ctx.mapping(e, f"{f}[{j}]")
            values = tuple(str(v) for v in ctx.seq(e.get("values"), f"{f}[{j}].values"))
            exprs.append((ctx.string(e.get("key"), f"{f}[{j}].key", required=True), values))
        terms.append(tuple(exprs))
    return StorageClass(
        name=name,
        provisioner=ctx.string(raw.get("provisioner"), "provisioner"),
        binding_mode=ctx.string(raw.get("volumeBindingMode"), "volumeBindingMode") or "Immediate",
        allowed_topologies=tuple(terms),
        source=source,
    )


def parse_csinode(raw: Mapping[str, Any], source: str = "") -> CsiNode:
    ctx = _Ctx(source, raw)
    _, _, name = _meta(ctx, raw, namespaced=False)
    limits: dict[str, int] = {}
    drivers = []
    spec = ctx.mapping(raw.get("spec"), "spec")
    for i, d in enumerate(ctx.seq(spec.get("drivers"), "spec.drivers")):
        d = ctx.mapping(d, f"spec.drivers[{i}]")
        driver = ctx.string(d.get("name"), f"spec.drivers[{i}].name", required=True)
        drivers.append(driver)
        alloc = ctx.mapping(d.get("allocatable"), f"spec.drivers[{i}].allocatable")
        if alloc.get("count") is not None:
            limits[driver] = ctx.integer(alloc.get("count"), f"spec.drivers[{i}].allocatable.count")
    return CsiNode(name=name, limits=limits, drivers=tuple(drivers), source=source)


def parse_csidriver(raw: Mapping[str, Any], source: str = "") -> CsiDriver:
    ctx = _Ctx(source, raw)
    _, _, name = _meta(ctx, raw, namespaced=False)
    spec = ctx.mapping(raw.get("spec"), "spec")
    flag = spec.get("storageCapacity")
    if flag is not None and not isinstance(flag, bool):
        raise ctx.fail("spec.storageCapacity", f"expected true or false, got {flag!r}")
    return CsiDriver(name=name, storage_capacity=flag is True, source=source)


def parse_capacity(raw: Mapping[str, Any], source: str = "") -> CsiStorageCapacity:
    ctx = _Ctx(source, raw)
    _, ns, name = _meta(ctx, raw, namespaced=True)
    sizes: dict[str, int] = {}
    for key in ("capacity", "maximumVolumeSize"):
        if raw.get(key) is not None:
            try:
                sizes[key] = to_milli_text("storage", raw[key])
            except QuantityError as exc:
                raise ctx.fail(key, str(exc)) from None
    return CsiStorageCapacity(
        namespace=ns,
        name=name,
        storage_class=ctx.string(raw.get("storageClassName"), "storageClassName", required=True),
        node_topology=parse_label_selector(ctx, raw.get("nodeTopology"), "nodeTopology"),
        capacity=sizes.get("capacity"),
        maximum_volume_size=sizes.get("maximumVolumeSize"),
    )


def bytes_of(milli: int) -> int:
    """``Quantity.Value()``: whole units, rounded up."""
    return -(-milli // 1000)


def capacity_for(
    objects: VolumeObjects, cls: StorageClass, claim: Claim, labels: Mapping[str, str]
) -> tuple[bool, CsiStorageCapacity | None]:
    """``hasEnoughCapacity``: (enough, the capacity object chosen). Checked only for a claim requesting
    storage whose class's provisioner is a CSIDriver with ``storageCapacity: true``; then the first
    CSIStorageCapacity of the claim's class whose limit (maximumVolumeSize, else capacity) holds the request and
    whose nodeTopology selects the node. "First" upstream is the informer's list order (a map: unordered), so
    which pool's capacity the 1.37 score reads is not fixed when several qualify; kubegpu takes the
    snapshot's order (the filter's verdict does not depend on it)."""
    driver = objects.drivers.get(cls.provisioner)
    if not claim.request_set or driver is None or not driver.storage_capacity:
        return True, None
    size = bytes_of(claim.request)
    for cap in objects.capacities.values():
        limit = cap.limit
        if cap.storage_class != cls.name or limit is None or bytes_of(limit) < size:
            continue
        if cap.node_topology is not None and cap.node_topology.matches(labels):
            return True, cap
    return False, None


# --- shared rules (component-helpers/storage/volume) -------------------------------------------


def node_affinity_matches(volume: Volume, labels: Mapping[str, str]) -> bool:
    """``CheckNodeAffinity``: the PV's required terms against the node's labels (no field values: upstream
    builds a node from the labels alone)."""
    if volume.node_affinity is None:
        return True
    return any(affinity.term_matches(t, labels, "") for t in volume.node_affinity)


def topology_allows(cls: StorageClass, labels: Mapping[str, str]) -> bool:
    """``v1helper.MatchTopologySelectorTerms``: no terms admit every node; else any term whose every
    expression has the node's label value among its values."""
    if not cls.allowed_topologies:
        return True
    return any(all(labels.get(k) in vs for k, vs in term) for term in cls.allowed_topologies)


def bound_to(volume: Volume, claim: Claim) -> bool:
    """``IsVolumeBoundToClaim``."""
    if volume.claim_ref is None:
        return False
    ns, name, uid = volume.claim_ref
    return ns == claim.namespace and name == claim.name and (not uid or uid == claim.uid)


def find_matching_volume(
    claim: Claim, volumes: list[Volume], labels: Mapping[str, str], excluded: set[str]
) -> Volume | None:
    """``FindMatchingVolume`` on the scheduler path (a node given, delayed binding, VolumeAttributesClass
    on): the volume pre-bound to the claim if it suits the node, else the smallest available match."""
    best: Volume | None = None
    for v in volumes:
        if v.name in excluded or (v.claim_ref is not None and not bound_to(v, claim)):
            continue
        if v.capacity < claim.request or v.volume_mode != claim.volume_mode:
            continue
        if v.attributes_class != claim.attributes_class or v.deleting:
            continue
        fits_node = node_affinity_matches(v, labels)
        if bound_to(v, claim):
            return v if fits_node else None
        if v.phase != "Available" or (claim.selector is not None and not claim.selector.matches(v.labels)):
            continue
        if v.storage_class != claim.storage_class or not fits_node:
            continue
        if not set(claim.access_modes) <= set(v.access_modes):
            continue
        if best is None or best.capacity > v.capacity:
            best = v
    return best


# kind → its parser (every kind of ``_KINDS``)
_PARSERS: dict[str, Callable[[Mapping[str, Any], str], Any]] = {
    "PersistentVolumeClaim": parse_claim, "PersistentVolume": parse_volume, "StorageClass": parse_storage_class,
    "CSINode": parse_csinode, "CSIDriver": parse_csidriver, "CSIStorageCapacity": parse_capacity,
}  # fmt: skip
