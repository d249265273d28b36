"""What the cluster shows about itself beyond nodes and pods: DaemonSets, controllers, Events, and the
queueing objects of other schedulers, as typed values and their parsers.

These decide no scheduling, but they hold the real cause of most "no GPU" cases people report: the device
plugin's DaemonSet that never runs on a GPU node (its nodeSelector, affinity or tolerations against the
node's labels and taints), its pod crash-looping, the ``FailedCreate`` event of a ReplicaSet whose pods a
quota rejects at creation, the ``FailedScheduling`` event the scheduler wrote for a pod, and Kueue's
Workload saying why a gated pod is not admitted.

A DaemonSet's pod template is parsed by the Pod parser (``parse.parse_pod``), so its tolerations,
nodeSelector and node affinity are the same values the scheduling core reads. Queueing objects of other
schedulers (Kueue Workload / LocalQueue / ClusterQueue, KAI and Volcano Queue) are kept as raw dicts with
the few fields read here; kubegpu does not reproduce those schedulers. Each kind is read from its own API
groups only (``GROUPS``; ``model.snapshot`` routes by group and kind).

Must not import: anything above ``kubegpu.model``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubegpu.model.objects import LabelSelector, OwnerRef, Pod
from kubegpu.model.parse import _Ctx, _meta, parse_label_selector, parse_owner, parse_pod

DAEMONSET = "DaemonSet"
EVENT = "Event"
SERVICE = (
    "Service"  # read for its selector: PodTopologySpread's default constraints (``model.default_spread``)
)
CONTROLLER_KINDS = frozenset({"ReplicaSet", "Job", "Deployment", "StatefulSet", "ReplicationController"})
# Kueue (kueue.x-k8s.io), KAI (scheduling.run.ai) and Volcano (scheduling.volcano.sh) queueing objects.
# ``Queue`` exists in both KAI and Volcano; the apiVersion tells them apart.
QUEUE_KINDS = frozenset({"Workload", "LocalQueue", "ClusterQueue", "ResourceFlavor", "Queue"})
KUEUE_GROUP = "kueue.x-k8s.io"
KAI_GROUP = "scheduling.run.ai"
VOLCANO_GROUP = "scheduling.volcano.sh"
# kind → the API groups it is read from ("" is the core group, apiVersion v1). The same kind name in another
# group is another object, not read here: a Volcano ``batch.volcano.sh`` Job is no batch/v1 Job, Kubernetes'
# own ``scheduling.k8s.io`` Workload (1.35+) no Kueue Workload. ``extensions`` is where DaemonSets,
# Deployments and ReplicaSets lived before 1.16: old manifests still name it.
GROUPS: dict[str, frozenset[str]] = {
    DAEMONSET: frozenset({"apps", "extensions"}),
    EVENT: frozenset({"", "events.k8s.io"}),
    SERVICE: frozenset({""}),
    "ReplicationController": frozenset({""}),
    "ReplicaSet": frozenset({"apps", "extensions"}),
    "Deployment": frozenset({"apps", "extensions"}),
    "StatefulSet": frozenset({"apps"}),
    "Job": frozenset({"batch"}),
    **{
        kind: frozenset({KUEUE_GROUP})
        for kind in ("Workload", "LocalQueue", "ClusterQueue", "ResourceFlavor")
    },
    "Queue": frozenset({KAI_GROUP, VOLCANO_GROUP}),
}
KINDS = frozenset(GROUPS)


@dataclass(frozen=True)
class DaemonSet:
    namespace: str
    name: str
    labels: dict[str, str]
    template: Pod  # the pod template as a Pod named after the DaemonSet (node selection, tolerations)
    images: tuple[str, ...]
    desired: int | None  # status.desiredNumberScheduled; None when the manifest has no status
    current: int | None
    ready: int | None
    source: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Event:
    namespace: str
    name: str
    kind: str  # involvedObject.kind (regarding.kind for events.k8s.io/v1)
    object_name: str
    object_namespace: str
    reason: str
    message: str
    type: str  # Normal | Warning
    count: int
    component: str  # source.component / reportingController: who wrote it ("default-scheduler", …)
    last_seen: str  # lastTimestamp / eventTime / series.lastObservedTime, as stored

    def about(self, kind: str, namespace: str, name: str) -> bool:
        return self.kind == kind and self.object_name == name and self.object_namespace in ("", namespace)


@dataclass(frozen=True)
class Controller:
    """A ReplicaSet, Job, Deployment, StatefulSet or ReplicationController: only what explains it."""

    kind: str
    namespace: str
    name: str
    labels: dict[str, str]
    owner: OwnerRef | None
    conditions: tuple[tuple[str, str, str, str], ...]  # (type, status, reason, message)
    suspended: bool = False  # Job spec.suspend (Kueue suspends the Jobs it has not admitted)
    source: str = ""
    # spec.selector (a ReplicationController's map as matchLabels); None when absent
    selector: LabelSelector | None = None


@dataclass(frozen=True)
class Service:
    """A Service: only its ``spec.selector`` (None when absent: it selects no pod)."""

    namespace: str
    name: str
    selector: dict[str, str] | None
    source: str = ""


@dataclass
class Records:
    daemonsets: list[DaemonSet] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    controllers: list[Controller] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    queues: list[Mapping[str, Any]] = field(default_factory=list)  # raw QUEUE_KINDS objects
    seen: set[str] = field(default_factory=set)  # kinds present in the snapshot (even if zero parsed)
    # ``events_about`` and ``controller`` per object, made on first use and again when the lists have grown:
    # ``diagnose`` asks for each Pending pod's events, and a scan of every event per pod was most of its time
    # at 5,000 nodes with 16k events
    _events_by: dict[tuple[str, str], list[Event]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _controllers_by: dict[tuple[str, str, str], Controller] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _indexed: tuple[int, int] = field(default=(-1, -1), init=False, repr=False, compare=False)

    def add(self, raw: Mapping[str, Any], source: str) -> None:
        """Parse one object of ``KINDS`` (raises ``InputError`` naming file, object and field)."""
        kind = str(raw.get("kind"))
        self.seen.add(kind)
        if kind == DAEMONSET:
            self.daemonsets.append(parse_daemonset(raw, source))
        elif kind == EVENT:
            self.events.append(parse_event(raw, source))
        elif kind in CONTROLLER_KINDS:
            self.controllers.append(parse_controller(raw, source))
        elif kind == SERVICE:
            self.services.append(parse_service(raw, source))
        else:
            self.queues.append(raw)

    def events_about(self, kind: str, namespace: str, name: str) -> list[Event]:
        """The events about that object (``Event.about``), in the snapshot's order."""
        self._index()
        return [e for e in self._events_by.get((kind, name), ()) if e.about(kind, namespace, name)]

    def controller(self, kind: str, namespace: str, name: str) -> Controller | None:
        """The first controller of that kind, namespace and name."""
        self._index()
        return self._controllers_by.get((kind, namespace, name))

    def _index(self) -> None:
        if self._indexed == (len(self.events), len(self.controllers)):
            return
        events: dict[tuple[str, str], list[Event]] = {}
        for e in self.events:
            events.setdefault((e.kind, e.object_name), []).append(e)
        controllers: dict[tuple[str, str, str], Controller] = {}
        for c in self.controllers:
            controllers.setdefault((c.kind, c.namespace, c.name), c)
        self._events_by, self._controllers_by = events, controllers
        self._indexed = (len(self.events), len(self.controllers))

    def queue_objects(self, kind: str) -> list[Mapping[str, Any]]:
        return [q for q in self.queues if q.get("kind") == kind]


def _optional_int(ctx: _Ctx, value: Any, field: str) -> int | None:
    return None if value is None else ctx.integer(value, field)


def parse_daemonset(raw: Mapping[str, Any], source: str = "") -> DaemonSet:
    ctx = _Ctx(source, raw)
    meta, ns, name = _meta(ctx, raw, namespaced=True)
    spec = ctx.mapping(raw.get("spec"), "spec")
    status = ctx.mapping(raw.get("status"), "status")
    template = ctx.mapping(spec.get("template"), "spec.template")
    tmeta = ctx.mapping(template.get("metadata"), "spec.template.metadata")
    tspec = ctx.mapping(template.get("spec"), "spec.template.spec")
    as_pod = {
        "kind": "Pod",
        "metadata": {**tmeta, "name": name, "namespace": ns},
        "spec": tspec,
    }
    try:
        pod = parse_pod(as_pod, source)
    except Exception as exc:  # an InputError about the template: re-located onto the DaemonSet's field
        problem = getattr(exc, "problem", str(exc))
        where = getattr(exc, "field", "")
        raise ctx.fail(f"spec.template.{where}" if where else "spec.template", problem) from None
    images = tuple(c.image for c in (*pod.init_containers, *pod.containers))
    return DaemonSet(
        namespace=ns,
        name=name,
        labels=ctx.str_map(meta.get("labels"), "metadata.labels"),
        template=pod,
        images=images,
        desired=_optional_int(ctx, status.get("desiredNumberScheduled"), "status.desiredNumberScheduled"),
        current=_optional_int(ctx, status.get("currentNumberScheduled"), "status.currentNumberScheduled"),
        ready=_optional_int(ctx, status.get("numberReady"), "status.numberReady"),
        source=source,
    )


def parse_event(raw: Mapping[str, Any], source: str = "") -> Event:
    """core/v1 Event (``involvedObject``, ``source.component``) or events.k8s.io/v1 (``regarding``,
    ``note``, ``reportingController``). An Event written through core/v1 (kubelet, most controllers) and read
    as events.k8s.io keeps its count, source and last time in ``deprecatedCount``, ``deprecatedSource`` and
    ``deprecatedLastTimestamp``, as kubernetes pkg/apis/events/v1/conversion.go maps them (Count =
    DeprecatedCount, Source = DeprecatedSource, LastTimestamp = DeprecatedLastTimestamp)."""
    ctx = _Ctx(source, raw)
    _, ns, name = _meta(ctx, raw, namespaced=True)
    obj = ctx.mapping(raw.get("involvedObject") or raw.get("regarding"), "involvedObject")
    src = ctx.mapping(raw.get("source") or raw.get("deprecatedSource"), "source")
    series = ctx.mapping(raw.get("series"), "series")
    count = next(
        (c for c in (raw.get("count"), series.get("count"), raw.get("deprecatedCount")) if c is not None), 1
    )
    return Event(
        namespace=ns,
        name=name,
        kind=ctx.string(obj.get("kind"), "involvedObject.kind"),
        object_name=ctx.string(obj.get("name"), "involvedObject.name"),
        object_namespace=ctx.string(obj.get("namespace"), "involvedObject.namespace"),
        reason=ctx.string(raw.get("reason"), "reason"),
        message=ctx.string(
            raw.get("message") if raw.get("message") is not None else raw.get("note"), "message"
        ),
        type=ctx.string(raw.get("type"), "type"),
        count=count if isinstance(count, int) and not isinstance(count, bool) else 1,
        component=ctx.string(src.get("component"), "source.component")
        or ctx.string(raw.get("reportingController") or raw.get("reportingComponent"), "reportingController"),
        last_seen=str(
            raw.get("lastTimestamp")
            or series.get("lastObservedTime")
            or raw.get("deprecatedLastTimestamp")
            or raw.get("eventTime")
            or ""
        ),
    )


def parse_controller(raw: Mapping[str, Any], source: str = "") -> Controller:
    ctx = _Ctx(source, raw)
    meta, ns, name = _meta(ctx, raw, namespaced=True)
    spec = ctx.mapping(raw.get("spec"), "spec")
    status = ctx.mapping(raw.get("status"), "status")
    conditions = []
    for i, c in enumerate(ctx.seq(status.get("conditions"), "status.conditions")):
        c = ctx.mapping(c, f"status.conditions[{i}]")
        conditions.append(
            (
                str(c.get("type", "")),
                str(c.get("status", "")),
                str(c.get("reason", "")),
                str(c.get("message", "")),
            )
        )
    return Controller(
        kind=str(raw.get("kind")),
        namespace=ns,
        name=name,
        labels=ctx.str_map(meta.get("labels"), "metadata.labels"),
        owner=parse_owner(ctx, meta),
        conditions=tuple(conditions),
        suspended=spec.get("suspend") is True,
        source=source,
        selector=_controller_selector(ctx, raw.get("kind"), spec.get("selector")),
    )


def _controller_selector(ctx: _Ctx, kind: Any, value: Any) -> LabelSelector | None:
    if value is None:
        return None
    if kind == "ReplicationController":  # a plain map (core/v1 ReplicationControllerSpec.Selector)
        return LabelSelector(tuple(sorted(ctx.str_map(value, "spec.selector").items())))
    return parse_label_selector(ctx, value, "spec.selector")


def parse_service(raw: Mapping[str, Any], source: str = "") -> Service:
    ctx = _Ctx(source, raw)
    _, ns, name = _meta(ctx, raw, namespaced=True)
    spec = ctx.mapping(raw.get("spec"), "spec")
    selector = spec.get("selector")
    return Service(
        namespace=ns,
        name=name,
        selector=None if selector is None else ctx.str_map(selector, "spec.selector"),
        source=source,
    )
