"""Parts of a Pod or Node parsed for ``model.parse``: a pod's volumes (the storage plugins and
VolumeRestrictions' disks), its containers' states (the device plugin chain: CrashLoopBackOff, restarts), the
requests of in-place resizes and pod-level ``spec.resources`` (the effective request), and a node's images
(ImageLocality), and the tolerations an admission plugin adds to a manifest. Imports only the model and the
parse context's protocol."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from kubegpu.model.names import TAINT_NOT_READY, TAINT_UNREACHABLE
from kubegpu.model.objects import (
    Container,
    ContainerState,
    PodVolume,
    Toleration,
    aggregate_container_requests,
)
from kubegpu.model.parse_pod_affinity import ParseContext, Raw
from kubegpu.model.quantity import CPU, format_milli
from kubegpu.model.resources import MEMORY, ResourceList, is_pod_level_resource, maximum

# kubelet's waiting reason for a container it restarts with back-off (kubecontainer.ErrCrashLoopBackOff)
CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"

# parse._requests_within_limits (ValidateResourceRequirements), passed in by the caller
WithinLimits = Callable[[Any, str, ResourceList, ResourceList], None]


def container_states(ctx: ParseContext, status: Raw) -> tuple[ContainerState, ...]:
    """``status.initContainerStatuses`` and ``status.containerStatuses``: readiness, restarts, and the
    waiting reason (CrashLoopBackOff …) with the last termination's reason when kubelet gives no message."""
    out = []
    for key, init in (("initContainerStatuses", True), ("containerStatuses", False)):
        for i, c in enumerate(ctx.seq(status.get(key), f"status.{key}")):
            c = ctx.mapping(c, f"status.{key}[{i}]")
            state = ctx.mapping(c.get("state"), f"status.{key}[{i}].state")
            waiting = ctx.mapping(state.get("waiting"), f"status.{key}[{i}].state.waiting")
            last = ctx.mapping(
                ctx.mapping(c.get("lastState"), f"status.{key}[{i}].lastState").get("terminated"),
                f"status.{key}[{i}].lastState.terminated",
            )
            message = str(waiting.get("message") or "")
            # kubelet's CrashLoopBackOff message is only its back-off ("back-off 5m0s restarting failed
            # container=<c> pod=<p>", pkg/kubelet/kuberuntime/kuberuntime_manager.go doBackOff): what failed is
            # in lastState.terminated, so that is what is kept for it
            if last and (not message or waiting.get("reason") == CRASH_LOOP_BACK_OFF):
                message = " ".join(
                    str(p)
                    for p in (last.get("reason"), f"exit code {last.get('exitCode')}", last.get("message"))
                    if p
                )
            restarts = c.get("restartCount", 0)
            out.append(
                ContainerState(
                    name=str(c.get("name", "")),
                    init=init,
                    ready=c.get("ready") is True,
                    restarts=restarts if isinstance(restarts, int) and not isinstance(restarts, bool) else 0,
                    waiting=str(waiting.get("reason") or ""),
                    message=message,
                    running=state.get("running") is not None,
                )
            )
    return tuple(out)


def resize_requests(
    ctx: ParseContext, status: Raw, containers: tuple[Container, ...], init: tuple[Container, ...], spec: Raw
) -> dict[str, ResourceList]:
    """In-place pod resize (KEP-1287, InPlacePodVerticalScaling: beta and on by default from 1.33): per
    container, the request the scheduler counts, where it differs from the spec's. component-helpers
    resource/helpers.go v1.33.13 ``determineContainerReqs`` (v1.35.4/v1.36.3 ``determineEffectiveRequests``):
    for an app container or a sidecar whose status has ``resources``, max(spec, ``resources.requests``
    (actuated), ``allocatedResources``); when the pod's ``PodResizePending`` condition says ``Infeasible``,
    the spec's (never granted) is left out. Plain init containers keep their spec. With the gate off
    (1.30-1.32 by default) the API server drops both status fields (pkg/api/pod/util.go
    dropDisabledPodStatusFields), so a snapshot of such a cluster carries none and nothing changes.
    Not modelled: 1.37 (helpers.go kubernetes-1.37.2 AggregateContainerRequests) takes the max of three
    pod sums (spec, actuated, allocated) rather than of each container's, and reads plain init containers'
    statuses too; that differs only when one container grows while another shrinks, or when a finished
    init container's reported resources differ from its spec (kubelet reports the spec for a container
    that is not running)."""
    by_name: dict[str, tuple[str, Raw]] = {}  # container name → (its status's field path, its status)
    for key in ("containerStatuses", "initContainerStatuses"):
        for i, c in enumerate(ctx.seq(status.get(key), f"status.{key}")):
            c = ctx.mapping(c, f"status.{key}[{i}]")
            if c.get("resources") is not None:  # upstream reads a status only when ``cs.Resources != nil``
                by_name.setdefault(str(c.get("name", "")), (f"status.{key}[{i}]", c))
    if not by_name:
        return {}
    infeasible = any(
        isinstance(cond, dict)
        and cond.get("type") == "PodResizePending"
        and cond.get("reason") == "Infeasible"
        for cond in ctx.seq(status.get("conditions"), "status.conditions")
    )
    written = _written_requests(spec)
    out: dict[str, ResourceList] = {}
    for c in (*containers, *(i for i in init if i.restart_policy == "Always")):
        if c.name not in by_name:
            continue
        where, cs = by_name[c.name]
        res = ctx.mapping(cs["resources"], f"{where}.resources")
        mine = written.get(c.name)
        # the status says what the spec says (every running pod, mostly): nothing to parse. Kubelet writes
        # only cpu, memory and ephemeral-storage there (kubelet_pods.go convertContainerStatusResources: "TODO:
        # Update this to include extended resources"), so a GPU pod's status is a subset of its spec, and
        # max(spec, an equal subset) is the spec
        same = (
            mine is not None
            and _subset(res.get("requests"), mine)
            and _subset(cs.get("allocatedResources"), mine)
        )
        if same and not infeasible:
            continue
        actuated = ctx.resources(res.get("requests"), f"{where}.resources.requests")
        allocated = ctx.resources(cs.get("allocatedResources"), f"{where}.allocatedResources")
        effective = maximum(actuated, allocated)
        if not infeasible:
            effective = maximum(c.requests, effective)
        if effective != c.requests:
            out[c.name] = effective
    return out


def _subset(status: Any, spec: Mapping[str, Any]) -> bool:
    """Whether every amount ``status`` names is written in ``spec`` the same (None: nothing named)."""
    if status is None:
        return True
    return isinstance(status, Mapping) and all(spec.get(k, _ABSENT) == v for k, v in status.items())


_ABSENT = object()


def _written_requests(spec: Raw) -> dict[str, Any]:
    """Per container name, its requests as written after ``SetDefaults_Pod`` (limits fill missing requests):
    what the kubelet reports back when no resize is pending."""
    out: dict[str, Any] = {}
    for key in ("containers", "initContainers"):
        items = spec.get(key)
        for c in items if isinstance(items, list) else ():
            res = c.get("resources") if isinstance(c, dict) else None
            if isinstance(res, dict):
                limits, requests = res.get("limits"), res.get("requests")
                if isinstance(limits, dict) and isinstance(requests, dict):
                    out[str(c.get("name", ""))] = {**limits, **requests}
                elif isinstance(requests, dict) or isinstance(limits, dict):
                    out[str(c.get("name", ""))] = requests if isinstance(requests, dict) else limits
    return out


def images(ctx: ParseContext, value: Any) -> tuple[tuple[tuple[str, ...], int], ...]:
    out = []
    for i, img in enumerate(ctx.seq(value, "status.images")):
        img = ctx.mapping(img, f"status.images[{i}]")
        names = tuple(str(n) for n in ctx.seq(img.get("names"), f"status.images[{i}].names"))
        out.append((names, ctx.integer(img.get("sizeBytes"), f"status.images[{i}].sizeBytes")))
    return tuple(out)


# The in-tree disks VolumeRestrictions compares (volume_restrictions.go ``isVolumeConflict``): field → id key
_DISKS = {"gcePersistentDisk": "pdName", "awsElasticBlockStore": "volumeID", "iscsi": "iqn", "rbd": "image"}


def volumes(ctx: ParseContext, value: Any, pod_name: str) -> tuple[PodVolume, ...]:
    out = []
    for i, v in enumerate(ctx.seq(value, "spec.volumes")):
        f = f"spec.volumes[{i}]"
        v = ctx.mapping(v, f)
        name = ctx.string(v.get("name"), f"{f}.name", required=True)
        kind = next((k for k in v if k != "name"), "emptyDir")  # the API server defaults an empty source
        src = ctx.mapping(v.get(kind), f"{f}.{kind}")
        claim, disk, image = "", None, ""
        if kind == "persistentVolumeClaim":
            claim = ctx.string(src.get("claimName"), f"{f}.persistentVolumeClaim.claimName", required=True)
        elif kind == "ephemeral":
            claim = f"{pod_name}-{name}"  # ephemeral.VolumeClaimName
        elif kind == "image":
            image = ctx.string(src.get("reference"), f"{f}.image.reference")
        elif kind in _DISKS:
            ident = ctx.string(src.get(_DISKS[kind]), f"{f}.{kind}.{_DISKS[kind]}")
            monitors: tuple[str, ...] = ()
            if kind == "rbd":  # defaults as the API server applies them (SetDefaults_RBDVolumeSource)
                ident = f"{ctx.string(src.get('pool'), f'{f}.rbd.pool') or 'rbd'}/{ident}"
                monitors = tuple(str(m) for m in ctx.seq(src.get("monitors"), f"{f}.rbd.monitors"))
            disk = (kind, ident, monitors, src.get("readOnly") is True)
        out.append(PodVolume(name, kind, claim, disk, image))
    return tuple(out)


POD_LEVEL_SUPPORTED = '"cpu", "hugepages-", "memory"'  # sets.List(SupportedPodLevelResources()), quoted


def pod_level_unsupported(name: str) -> str:
    """``validatePodResourceName`` (pkg/apis/core/validation, 1.32+): ``spec.resources`` takes cpu, memory
    and hugepages only; anything else, ``nvidia.com/gpu`` included, is ``field.NotSupported`` (values
    sorted as ``sets.List(SupportedPodLevelResources())`` lists them). "" when supported."""
    if is_pod_level_resource(name):
        return ""
    return f'Unsupported value: "{name}": supported values: {POD_LEVEL_SUPPORTED}'


def pod_level(ctx: ParseContext, spec: Raw) -> tuple[ResourceList, ResourceList]:
    """``spec.resources`` as written: (requests, limits), read once for the parts that use them."""
    res = ctx.mapping(spec.get("resources"), "spec.resources")
    return (
        ctx.resources(res.get("requests"), "spec.resources.requests"),
        ctx.resources(res.get("limits"), "spec.resources.limits"),
    )


def pod_level_requests(
    ctx: ParseContext,
    written: tuple[ResourceList, ResourceList],
    containers: tuple[Container, ...],
    init: tuple[Container, ...],
    within_limits: WithinLimits,
) -> ResourceList:
    """``spec.resources.requests`` after the API server's defaulting (``defaultPodRequests``,
    pkg/apis/core/v1/defaults.go v1.34.4; ``defaultPodLevelRequests``, pkg/api/pod/util.go v1.37.2, the
    same rule run at PrepareForCreate): only when pod-level limits are set, a missing cpu or memory request
    becomes the containers' aggregate request when containers request it, else (and for hugepages) the
    pod-level limit."""
    requests, limits = dict(written[0]), written[1]  # (``written`` (``pod_level``) stays as written)
    if ctx.validate:
        for kind, given in (("limits", limits), ("requests", requests)):
            for name in sorted(given):
                if problem := pod_level_unsupported(name):
                    raise ctx.fail(f"spec.resources.{kind}[{name}]", problem)
    if not (requests or limits):
        return requests
    aggregate = aggregate_container_requests(containers, init)
    if limits:
        for name, amount in aggregate.items():
            if name in (CPU, MEMORY) and name not in requests:  # supported and overcommittable
                requests[name] = amount
        for name, amount in limits.items():
            if is_pod_level_resource(name):
                requests.setdefault(name, amount)
    if ctx.validate:
        within_limits(ctx, "spec.resources", requests, limits)
        for name, amount in sorted(aggregate.items()):  # validatePodResourceConsistency
            if name in requests and amount > requests[name]:
                shown, total = format_milli(name, requests[name]), format_milli(name, amount)
                raise ctx.fail(
                    f"spec.resources.requests[{name}]",
                    f'Invalid value: "{shown}": must be greater than or equal to aggregate container '
                    f"requests of {total}",
                )
    return requests


# isSupportedQoSComputeResource (pkg/apis/core/v1/helper/qos/qos.go): the only resources QoS looks at
_QOS_RESOURCES = (CPU, MEMORY)


def best_effort(
    ctx: ParseContext,
    written: tuple[ResourceList, ResourceList],
    status: Raw,
    containers: tuple[Container, ...],
    init: tuple[Container, ...],
) -> bool:
    """Whether the pod's QoS class is BestEffort (``qos.GetPodQOS``, pkg/apis/core/v1/helper/qos/qos.go
    v1.37.2): ``status.qosClass`` when the API server set it, else computed: no positive cpu or memory
    request or limit, read from pod-level ``spec.resources`` alone when present (a stored pod carrying it
    was created with PodLevelResources on) when they name a pod-level resource, else from every container
    and init container. A pod asking
    only for ``nvidia.com/gpu`` is BestEffort: the quota scopes BestEffort/NotBestEffort read this."""
    given = ctx.string(status.get("qosClass"), "status.qosClass")
    if given:
        return given == "BestEffort"
    sets: list[ResourceList] = list(written)  # pod-level spec.resources as written (``pod_level``)
    # IsPodLevelResourcesSet (1.37's PodLevelResourcesFixKubeletQOSClass; 1.34-1.36 also read an empty
    # ``resources: {}`` as pod-level, BestEffort: not modelled)
    if not any(is_pod_level_resource(name) for amounts in sets for name in amounts):
        sets = [part for c in (*containers, *init) for part in (c.requests, c.limits)]
    return not any(amounts.get(name, 0) > 0 for amounts in sets for name in _QOS_RESOURCES)


def deletion_grace(ctx: ParseContext, meta: Raw) -> int | None:
    """``metadata.deletionGracePeriodSeconds``, which the API server sets with ``deletionTimestamp`` (None when
    absent): the pod quota evaluator stops charging a deleted pod once this many seconds have passed after
    ``deletionTimestamp`` (``QuotaV1Pod``, ``admission.quota.charged``)."""
    if meta.get("deletionGracePeriodSeconds") is None:
        return None
    return ctx.integer(meta.get("deletionGracePeriodSeconds"), "metadata.deletionGracePeriodSeconds")


def active_deadline(ctx: ParseContext, spec: Raw) -> int | None:
    """``spec.activeDeadlineSeconds``; validation refuses a value outside [1, 2**31 − 1] (``ValidatePodSpec``,
    pkg/apis/core/validation/validation.go v1.37.2, ``InclusiveRangeError(1, math.MaxInt32)``)."""
    if spec.get("activeDeadlineSeconds") is None:
        return None
    value = ctx.integer(spec.get("activeDeadlineSeconds"), "spec.activeDeadlineSeconds")
    if not 1 <= value <= 2**31 - 1:
        raise ctx.fail(
            "spec.activeDeadlineSeconds",
            f"Invalid value: {value}: must be between 1 and 2147483647, inclusive",
        )
    return value


# The DefaultTolerationSeconds admission plugin (on by default in kube-apiserver) adds these to a pod created
# without a toleration of each taint (plugin/pkg/admission/defaulttolerationseconds/admission.go, v1.30.14 to
# v1.37.2: key Exists, effect NoExecute, 300 s, the --default-*-toleration-seconds defaults)
DEFAULT_TOLERATION_SECONDS: Final = 300
NO_EXECUTE: Final = "NoExecute"


def default_tolerations(tolerations: list[Toleration], admitted: bool) -> list[Toleration]:
    """``tolerations`` as the DefaultTolerationSeconds plugin admits them: for a pod never admitted (a
    manifest: no ``metadata.uid``), a NoExecute toleration of ``node.kubernetes.io/not-ready`` and of
    ``node.kubernetes.io/unreachable`` (300 s) where none of its own tolerates that taint's NoExecute (a
    toleration matches on an empty or equal key and an empty or NoExecute effect, as the plugin tests it). A
    pod the API server returned is as admitted: one without them ran where the plugin is off."""
    if admitted:
        return tolerations
    out = list(tolerations)
    for key in (TAINT_NOT_READY, TAINT_UNREACHABLE):
        if not any(t.key in ("", key) and t.effect in ("", NO_EXECUTE) for t in tolerations):
            out.append(Toleration(key, "Exists", "", NO_EXECUTE, DEFAULT_TOLERATION_SECONDS))
    return out
