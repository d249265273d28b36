"""Typed, immutable views of the Kubernetes objects kubegpu reads (R2.1, R4, R5, R8, R11).

Each class is built once from the raw dict the API server returns (``kubectl get -o yaml``) by
``kubegpu.model.parse``; nothing here does I/O. Resource amounts are integer milli-units
(``kubegpu.model.quantity``). Field names follow the Kubernetes API so that evidence printed to a
person can point at the exact field (``spec.containers[0].resources.limits[nvidia.com/gpu]``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, NewType, Protocol, TypeVar, overload

from kubegpu.model.resources import CPU as CPU_NAME
from kubegpu.model.resources import MEMORY as MEMORY_NAME
from kubegpu.model.resources import ResourceList, add, is_pod_level_resource, maximum

PodKey = NewType("PodKey", str)  # "namespace/name"
# the taint effects that keep pods off a node (v1helper.DoNotScheduleTaintsFilterFunc) and, on a device,
# keep the structured allocator from it (allocator_incubating.go taintPreventsAllocation)
FILTER_EFFECTS = ("NoSchedule", "NoExecute")
T = TypeVar("T")


class memo(Generic[T]):
    """``functools.cached_property`` without its lock (Python 3.11 takes an RLock on every first read;
    3.12 dropped it): a scheduling cycle reads several of a new pod's derived fields once each. Two
    threads reading first may both compute; the value is a function of the frozen object, so equal."""

    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, objtype: type | None = None) -> memo[T]: ...
    @overload
    def __get__(self, obj: object, objtype: type | None = None) -> T: ...
    def __get__(self, obj: object | None, objtype: type | None = None) -> T | memo[T]:
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.func(obj)  # the instance's dict answers later reads
        return value


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str  # NoSchedule | PreferNoSchedule | NoExecute

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal | Exists ("" is defaulted to Equal by the API server)
    value: str = ""
    effect: str = ""  # "" matches every effect
    # how long a NoExecute taint is tolerated (None: forever); only the taint eviction controller reads it
    seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        """Upstream ``Toleration.ToleratesTaint`` (k8s.io/api/core/v1/toleration.go)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


class Tolerates(Protocol):
    """A toleration as the taint checks read it: a Pod's ``Toleration`` or a DRA request's."""

    def tolerates(self, taint: Taint) -> bool: ...


def first_untolerated(taints: tuple[Taint, ...], tolerations: Sequence[Tolerates]) -> Taint | None:
    """``v1helper.FindMatchingUntoleratedTaint`` with the DoNotSchedule filter: the first NoSchedule /
    NoExecute taint no toleration tolerates (a node's for TaintToleration, a DRA device's for the
    allocator)."""
    for taint in taints:
        if taint.effect in FILTER_EFFECTS and not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``NodeSelectorRequirement`` or ``LabelSelectorRequirement``."""

    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist | Gt | Lt
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.match_expressions and not self.match_fields


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    weight: int
    preference: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class LabelSelector:
    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``metav1.LabelSelectorAsSelector``: an empty selector matches everything."""
        if any(labels.get(k) != v for k, v in self.match_labels):
            return False
        for req in self.match_expressions:
            present = req.key in labels
            if req.operator == "In" and not (present and labels[req.key] in req.values):
                return False
            if req.operator == "NotIn" and present and labels[req.key] in req.values:
                return False
            if req.operator == "Exists" and not present:
                return False
            if req.operator == "DoesNotExist" and present:
                return False
        return True


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """One ``PodAffinityTerm`` (required or, with ``weight``, preferred) of pod (anti-)affinity.

    ``namespaces`` as written; ``namespace_selector`` None when absent. ``match_label_keys`` /
    ``mismatch_label_keys`` are merged into the selector with the owning pod's label values
    (``model.pod_affinity.selector_of``) where the release has them.
    """

    topology_key: str
    selector: LabelSelector | None
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()
    weight: int = 0  # preferred terms only


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """One ``topologySpreadConstraints`` entry; policies as written ("" when absent)."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule | ScheduleAnyway
    selector: LabelSelector | None
    min_domains: int | None = None
    node_affinity_policy: str = ""  # Honor (default) | Ignore
    node_taints_policy: str = ""  # Ignore (default) | Honor
    match_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PodAffinity:
    """``spec.affinity.podAffinity`` and ``podAntiAffinity``: required and preferred terms of each."""

    required: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[PodAffinityTerm, ...] = ()
    anti_required: tuple[PodAffinityTerm, ...] = ()
    anti_preferred: tuple[PodAffinityTerm, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.required or self.preferred or self.anti_required or self.anti_preferred)


NO_POD_AFFINITY = PodAffinity()


@dataclass(frozen=True, slots=True)
class HostPort:
    port: int
    protocol: str = "TCP"
    ip: str = ""  # "" and "0.0.0.0" both mean every address

    def conflicts(self, other: HostPort) -> bool:
        """Upstream ``HostPortInfo.CheckConflict``: same port and protocol, and overlapping address."""
        if self.port != other.port or self.protocol != other.protocol:
            return False
        wildcard = ("", "0.0.0.0")
        return self.ip in wildcard or other.ip in wildcard or self.ip == other.ip


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    requests: ResourceList
    limits: ResourceList
    host_ports: tuple[HostPort, ...] = ()
    restart_policy: str = ""  # "Always" marks a restartable init container (a sidecar)
    privileged: bool = False
    image: str = ""


def image_repo_tag(image: str) -> tuple[str, str]:
    """The last path part of a container image reference and its tag: ``nvcr.io/nvidia/k8s-device-plugin:
    v0.17.0`` → (``k8s-device-plugin``, ``v0.17.0``); a digest reference or no tag gives (name, "") — a
    digest names no release (a ``:`` before the last ``/`` is a registry port, not a tag)."""
    name = image.rsplit("/", 1)[-1]
    if "@" in name or ":" not in name:
        return name.split("@", 1)[0], ""
    repo, tag = name.rsplit(":", 1)
    return repo, tag


@dataclass(frozen=True, slots=True)
class ContainerState:
    """One entry of ``status.containerStatuses`` / ``initContainerStatuses``: what kubelet reports."""

    name: str
    init: bool
    ready: bool
    restarts: int
    waiting: str = ""  # state.waiting.reason: CrashLoopBackOff, ImagePullBackOff, CreateContainerError, …
    message: str = ""  # state.waiting.message, else lastState.terminated's reason/message
    running: bool = False


@dataclass(frozen=True, slots=True)
class OwnerRef:
    kind: str
    name: str
    api_version: str = ""
    controller: bool = False  # ``controller: true`` (``metav1.GetControllerOf`` reads only that one)
    uid: str = ""


DEFAULT_MILLI_CPU_REQUEST = 100  # schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest, bytes


@dataclass(frozen=True, slots=True)
class PodVolume:
    """One ``spec.volumes[]`` entry, as far as the volume plugins read it. ``kind`` is the volume source's
    field name (``persistentVolumeClaim``, ``ephemeral``, ``configMap``, …); ``claim`` the PVC it uses (for
    ``ephemeral``: ``<pod>-<volume>``, upstream ``ephemeral.VolumeClaimName``); ``disk`` the identity
    VolumeRestrictions compares for the four in-tree disk kinds: (kind, id, ceph monitors, readOnly);
    ``image`` an image volume's reference (ImageLocality counts it)."""

    name: str
    kind: str
    claim: str = ""
    disk: tuple[str, str, tuple[str, ...], bool] | None = None
    image: str = ""


_DERIVED_OWNERS = 8  # values a pod keeps at once (``Pod.derived``)
_NOT_KEPT = object()


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    uid: str = ""
    creation_timestamp: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    owner: OwnerRef | None = None
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    overhead: ResourceList = field(default_factory=dict)
    pod_level_requests: ResourceList = field(
        default_factory=dict
    )  # spec.resources.requests as the API server defaults them (PodLevelResources, beta in 1.34)
    pod_level_limits: ResourceList = field(default_factory=dict)  # spec.resources.limits (quota, LimitRanger)
    # In-place resize (KEP-1287): per container name, the request the scheduler counts while a resize is
    # pending or under way, where it differs from the spec's (``parse_parts.resize_requests``)
    status_requests: dict[str, ResourceList] = field(default_factory=dict)
    node_name: str = ""
    scheduler_name: str = "default-scheduler"
    priority: int = 0
    priority_class_name: str = ""
    preemption_policy: str = "PreemptLowerPriority"
    node_selector: dict[str, str] = field(default_factory=dict)
    required_affinity: tuple[NodeSelectorTerm, ...] | None = None
    preferred_affinity: tuple[PreferredTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    scheduling_gates: tuple[str, ...] = ()
    host_network: bool = False  # spec.hostNetwork: each containerPort is a hostPort too (parse defaults them)
    unmodelled_constraints: tuple[str, ...] = ()  # constraints kubegpu does not apply: named in the output
    pod_affinity: PodAffinity = NO_POD_AFFINITY
    spread_constraints: tuple[SpreadConstraint, ...] = ()
    volumes: tuple[PodVolume, ...] = ()  # spec.volumes (kubegpu.model.volumes has the objects they use)
    phase: str = "Pending"
    deletion_timestamp: str = ""
    # spec.terminationGracePeriodSeconds: a deleted pod keeps its node's resources this long (API default 30)
    termination_grace_period_seconds: int = 30
    deletion_grace_period_seconds: int | None = None  # metadata.deletionGracePeriodSeconds, set with deletion
    start_time: str = ""
    nominated_node_name: str = ""
    scheduled_condition: tuple[str, str, str] | None = None  # (status, reason, message) of PodScheduled
    ready: bool = False  # the Ready condition is True
    source: str = ""
    container_states: tuple[ContainerState, ...] = ()  # status.(init)containerStatuses, as kubelet reported
    # status.reason / status.message: kubelet's verdict on a pod it rejected (UnexpectedAdmissionError, OutOf<res>)
    status_reason: str = ""
    status_message: str = ""
    active_deadline_seconds: int | None = None  # spec.activeDeadlineSeconds (quota's Terminating scope)
    best_effort: bool = (
        False  # QoS class BestEffort (status.qosClass, else computed: ``parse_parts.best_effort``)
    )

    def derived(self, owner: object, compute: Callable[[Pod], T]) -> T:
        """``compute(self)`` for ``owner``, kept on the pod: for values that depend on the pod's spec alone
        (never its name) and on the owner's settings, such as a scheduler profile's filter signs. An owner
        is a bare ``object()`` its user holds (it equals itself only, so no later owner matches; a pickled
        pod leaves them behind). A few values are kept, in one
        dict that ``sim.openb.renamed`` copies share (equal specs: one computation serves them all), so
        the values must not be changed by their readers."""
        kept: dict[object, Any] | None = self.__dict__.get("_derived")
        if kept is None:
            kept = self.__dict__["_derived"] = {}
        value = kept.get(owner, _NOT_KEPT)
        if value is _NOT_KEPT:
            if len(kept) >= _DERIVED_OWNERS:  # bounded: frameworks come and go in a long-lived process
                kept.clear()
            value = kept[owner] = compute(self)
        return value  # type: ignore[no-any-return]

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without what it keeps for owners (``derived``): those are this process's caches."""
        return {k: v for k, v in self.__dict__.items() if k != "_derived"}

    @memo
    def key(self) -> PodKey:
        # cached: a scheduling cycle asks for it a dozen times (caches, ledgers, the journal)
        return PodKey(f"{self.namespace}/{self.name}")

    @property
    def is_terminal(self) -> bool:
        """Succeeded/Failed pods hold nothing: the scheduler's informer filters them out."""
        return self.phase in ("Succeeded", "Failed")

    @property
    def is_assigned(self) -> bool:
        return bool(self.node_name)

    @memo
    def sorted_labels(self) -> tuple[tuple[str, str], ...]:
        """``labels`` as sorted pairs: a hashable key (the scheduler files placed pods by it)."""
        return tuple(sorted(self.labels.items()))

    @memo
    def requests(self) -> ResourceList:
        """The pod's effective request as the scheduler counts it (``resourcehelper.PodRequests``).

        Worked example: containers {cpu 1} + {cpu 1}, a sidecar init container {cpu 500m} declared first,
        then a plain init container {cpu 3}: sum = 2 + 0.5 = 2.5; while the plain init container runs,
        the sidecar already runs, so it needs 3 + 0.5 = 3.5; effective cpu = max(2.5, 3.5) = 3.5, plus
        ``spec.overhead``. Pod-level ``spec.resources.requests`` (cpu, memory, hugepages), when set,
        replace the container aggregate for those resources. A container being resized in place counts
        the larger of its spec and what its status says runs or is allocated (``status_requests``).
        """
        return _pod_requests(self, non_missing_defaults=False)

    @memo
    def non_zero_requests(self) -> ResourceList:
        """Requests with upstream's scoring defaults (100m CPU, 200Mi memory) for containers missing them."""
        if all(
            CPU_NAME in c.requests and MEMORY_NAME in c.requests
            for c in (*self.containers, *self.init_containers)
        ):
            return dict(self.requests)  # no container misses either: the defaults change nothing
        return _pod_requests(self, non_missing_defaults=True)

    @memo
    def non_zero_before_1_32(self) -> tuple[int, int]:
        """(cpu, memory) as 1.30-1.31's ``calculateResource`` counts a placed pod for scoring
        (pkg/scheduler/framework/types.go v1.30.14, v1.31.13): each app container's request with the
        default for a missing cpu or memory, summed; each init container's (a sidecar's: the sidecars so
        far; a plain one's: it plus the sidecars before it) likewise defaulted, the largest; the larger of
        the two, plus ``spec.overhead``. Sidecars are not in the sum, unlike 1.32+ (``non_zero_requests``)."""

        def non_zero(r: ResourceList) -> tuple[int, int]:  # schedutil.GetNonzeroRequests
            return r.get(CPU_NAME, DEFAULT_MILLI_CPU_REQUEST), r.get(
                MEMORY_NAME, DEFAULT_MEMORY_REQUEST * 1000
            )

        cpu = mem = init_cpu = init_mem = 0
        for c in self.containers:
            c_cpu, c_mem = non_zero(c.requests)
            cpu, mem = cpu + c_cpu, mem + c_mem
        sidecars: ResourceList = {}
        for c in self.init_containers:
            if c.restart_policy == "Always":
                sidecars = add(sidecars, c.requests)
                running = sidecars
            else:
                running = add(c.requests, sidecars)
            i_cpu, i_mem = non_zero(running)
            init_cpu, init_mem = max(init_cpu, i_cpu), max(init_mem, i_mem)
        return (
            max(cpu, init_cpu) + self.overhead.get(CPU_NAME, 0),
            max(mem, init_mem) + self.overhead.get(MEMORY_NAME, 0),
        )

    @memo
    def host_ports(self) -> tuple[HostPort, ...]:
        if not self.init_containers and len(self.containers) == 1:
            return self.containers[0].host_ports  # the common pod, without building a generator
        return tuple(p for c in (*self.init_containers, *self.containers) for p in c.host_ports)

    def tolerates(self, taint: Taint) -> bool:
        return bool(self.tolerations) and any(t.tolerates(taint) for t in self.tolerations)


def _with_defaults(requests: ResourceList) -> ResourceList:
    filled = dict(requests)
    filled.setdefault(CPU_NAME, DEFAULT_MILLI_CPU_REQUEST)
    filled.setdefault(MEMORY_NAME, DEFAULT_MEMORY_REQUEST * 1000)
    return filled


def _pod_requests(pod: Pod, *, non_missing_defaults: bool) -> ResourceList:
    if len(pod.containers) == 1 and not (
        pod.init_containers or pod.pod_level_requests or pod.overhead or pod.status_requests
    ):
        only = pod.containers[0].requests  # one container and nothing else: its requests (a copy)
        return _with_defaults(only) if non_missing_defaults else dict(only)

    resized = pod.status_requests

    def reqs(c: Container) -> ResourceList:
        r = resized.get(c.name, c.requests) if resized else c.requests
        return _with_defaults(r) if non_missing_defaults else r

    total = aggregate_container_requests(pod.containers, pod.init_containers, reqs)
    for r, v in pod.pod_level_requests.items():  # pod-level cpu/memory/hugepages replace the aggregate
        if is_pod_level_resource(r):
            total[r] = v
    return add(total, pod.overhead) if pod.overhead else total


def aggregate_container_requests(
    containers: Sequence[Container],
    init_containers: Sequence[Container],
    reqs: Callable[[Container], ResourceList] = lambda c: c.requests,
) -> ResourceList:
    """component-helpers ``resource.AggregateContainerRequests`` (KEP-753): the sum of the app containers
    and the sidecars (init containers with ``restartPolicy: Always``), or, when larger, what runs while
    one init container runs (it, plus the sidecars declared before it). ``reqs`` gives one container's
    request (its spec's; with in-place resize, the larger of spec and status). No overhead, no pod level."""
    total: ResourceList = {}
    for c in containers:
        total = add(total, reqs(c))
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for c in init_containers:
        if c.restart_policy == "Always":
            total = add(total, reqs(c))
            sidecars = add(sidecars, reqs(c))
            running = sidecars
        else:
            running = add(reqs(c), sidecars)
        init_peak = maximum(init_peak, running)
    return maximum(total, init_peak)


def aggregate_container_limits(pod: Pod) -> ResourceList:
    """component-helpers ``AggregateContainerLimits``: ``aggregate_container_requests``' rule on limits."""
    return aggregate_container_requests(pod.containers, pod.init_containers, _limits_of)


def _limits_of(c: Container) -> ResourceList:
    return c.limits


@dataclass(frozen=True)
class Node:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    capacity: ResourceList = field(default_factory=dict)
    allocatable: ResourceList = field(default_factory=dict)
    ready: bool = True
    conditions: tuple[tuple[str, str, str], ...] = ()  # (type, status, message)
    source: str = ""
    images: tuple[
        tuple[tuple[str, ...], int], ...
    ] = ()  # status.images: (names, sizeBytes) for ImageLocality


@dataclass(frozen=True, slots=True)
class ScopeRequirement:
    """One ``spec.scopeSelector.matchExpressions[]`` entry of a ResourceQuota (a ``spec.scopes`` entry is
    one with operator ``Exists``, as upstream's ``GetScopeSelectorsFromQuota`` reads it)."""

    scope: str  # Terminating | NotTerminating | BestEffort | NotBestEffort | PriorityClass | CrossNamespacePodAffinity
    operator: str = "Exists"  # In | NotIn | Exists | DoesNotExist
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    namespace: str
    name: str
    hard: ResourceList
    used: ResourceList  # status.used as the API server reported it (may be absent in manifests)
    scopes: tuple[str, ...] = ()
    source: str = ""
    scope_selector: tuple[ScopeRequirement, ...] = ()  # spec.scopeSelector.matchExpressions

    @property
    def scoped(self) -> tuple[ScopeRequirement, ...]:
        """Every scope the quota selects by: ``spec.scopes`` (as ``Exists``), then the selector's."""
        return (*(ScopeRequirement(s) for s in self.scopes), *self.scope_selector)


@dataclass(frozen=True, slots=True)
class LimitRangeItem:
    type: str  # Container | Pod | PersistentVolumeClaim
    default: ResourceList
    default_request: ResourceList
    max: ResourceList
    min: ResourceList
    max_limit_request_ratio: ResourceList = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LimitRange:
    namespace: str
    name: str
    limits: tuple[LimitRangeItem, ...]
    source: str = ""


@dataclass(frozen=True, slots=True)
class RuntimeClass:
    """A ``node.k8s.io/v1`` RuntimeClass, as far as the RuntimeClass admission plugin reads it: the pod
    overhead it sets (``overhead.podFixed``, as written) and the scheduling it merges into the pod."""

    name: str
    overhead: Mapping[str, Any] | None  # overhead.podFixed as written (None: no overhead)
    node_selector: dict[str, str]  # scheduling.nodeSelector
    tolerations: tuple[Mapping[str, Any], ...]  # scheduling.tolerations as written


@dataclass(frozen=True, slots=True)
class PriorityClass:
    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    namespace: str
    name: str
    selector: LabelSelector | None
    min_available: str | int | None
    max_unavailable: str | int | None
    disruptions_allowed: int | None  # status.disruptionsAllowed; None when the manifest has no status

    def selects(self, pod: Pod) -> bool:
        """A PDB with a nil selector selects nothing; an empty one selects every pod of its namespace."""
        return (
            pod.namespace == self.namespace
            and self.selector is not None
            and self.selector.matches(pod.labels)
        )


@dataclass(frozen=True, slots=True)
class Namespace:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
