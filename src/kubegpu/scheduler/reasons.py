"""Structured reasons: a plugin's verdict is a value (a kind plus its data), rendered to text in one place.

A Filter/PreFilter/PostFilter plugin returns ``Status(code, reasons)`` whose reasons are the values
below, never strings. ``render(reason, version)`` is THE place that turns one into the text
kube-scheduler prints (the histogram in ``FailedScheduling``, the extender's per-node message);
``explain`` reads the data directly (the taint, the resource, the request) and never parses text.

Which data a reason carries: what the message needs plus what is the same for every node the pod is
checked against (the pod's request, its ``spec.nodeName``). Per-node numbers (free, allocatable) stay in
the cluster state: reasons are interned per distinct tuple on the hot path (``ReasonTable``), and a
per-node number would make every node's reason distinct. ``explain`` reads them from the node view.

Versions: ``render`` looks the reason's kind up in ``VARIANTS[version]`` first, then in the base text
(``_BASE``, 1.30–1.33's and 1.34.0's); ``VARIANTS`` is derived from ``scheduler.versions``, the one table of
what each supported minor (1.30–1.37) prints differently.

May import ``kubegpu.model`` only (it sits under the plugins, the framework and ``explain``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from kubegpu.devices.sharing import SharingStrategy
from kubegpu.model.objects import Taint
from kubegpu.scheduler.versions import BEHAVIOURS, NEWEST, SUPPORTED_RANGE

DEFAULT_VERSION: Final = BEHAVIOURS[NEWEST].name


@dataclass(frozen=True, slots=True)
class Reason:
    """Base of every reason kind; ``kind`` names it (stable, used as a key by ``explain`` and JSON)."""

    kind: ClassVar[str] = ""


# --- NodeResourcesFit ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TooManyPods(Reason):
    """The node is at ``status.allocatable.pods``."""

    kind: ClassVar[str] = "TooManyPods"


@dataclass(frozen=True, slots=True)
class Insufficient(Reason):
    """The node's free allocatable ``resource`` is below the pod's effective request (milli-units)."""

    kind: ClassVar[str] = "Insufficient"
    resource: str
    requested: int


# --- TaintToleration, NodeUnschedulable, NodeAffinity, NodeName, NodePorts ----------------------


@dataclass(frozen=True, slots=True)
class UntoleratedTaint(Reason):
    """The first NoSchedule/NoExecute taint of the node the pod does not tolerate."""

    kind: ClassVar[str] = "UntoleratedTaint"
    taint: Taint


@dataclass(frozen=True, slots=True)
class Cordoned(Reason):
    kind: ClassVar[str] = "Cordoned"


@dataclass(frozen=True, slots=True)
class AffinityMismatch(Reason):
    """nodeSelector / required node affinity excludes the node (which term failed: see ``explain``)."""

    kind: ClassVar[str] = "AffinityMismatch"


@dataclass(frozen=True, slots=True)
class AffinityTermsConflict(Reason):
    """The required terms' ``metadata.name`` fields admit no node at all (NodeAffinity PreFilter)."""

    kind: ClassVar[str] = "AffinityTermsConflict"


@dataclass(frozen=True, slots=True)
class NodeNameMismatch(Reason):
    kind: ClassVar[str] = "NodeNameMismatch"
    node_name: str


@dataclass(frozen=True, slots=True)
class HostPortConflict(Reason):
    kind: ClassVar[str] = "HostPortConflict"


@dataclass(frozen=True, slots=True)
class PreFilterExcluded(Reason):
    """PreFilter plugins narrowed the node set to nothing (``RunPreFilterPlugins``); in their order."""

    kind: ClassVar[str] = "PreFilterExcluded"
    plugins: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OutsidePreFilterResult(Reason):
    """The node is not in the PreFilter plugins' node set (``SetAbsentNodesStatus``); plugins sorted."""

    kind: ClassVar[str] = "OutsidePreFilterResult"
    plugins: tuple[str, ...]


# --- InterPodAffinity, PodTopologySpread (texts identical in 1.30–1.37: interpodaffinity/filtering.go,
# podtopologyspread/plugin.go ErrReason* constants of every release built) ---------------------------


@dataclass(frozen=True, slots=True)
class PodAffinityUnmet(Reason):
    """A required pod affinity term has no matching pod in the node's domain (UnschedulableAndUnresolvable)."""

    kind: ClassVar[str] = "PodAffinityUnmet"


@dataclass(frozen=True, slots=True)
class PodAntiAffinityHit(Reason):
    """A pod the incoming pod's required anti-affinity selects runs in the node's domain (Unschedulable)."""

    kind: ClassVar[str] = "PodAntiAffinityHit"


@dataclass(frozen=True, slots=True)
class ExistingAntiAffinityHit(Reason):
    """A pod in the node's domain has required anti-affinity that selects the incoming pod (Unschedulable)."""

    kind: ClassVar[str] = "ExistingAntiAffinityHit"


@dataclass(frozen=True, slots=True)
class SpreadSkew(Reason):
    """Placing the pod on the node would exceed a DoNotSchedule constraint's maxSkew (Unschedulable)."""

    kind: ClassVar[str] = "SpreadSkew"


@dataclass(frozen=True, slots=True)
class SpreadLabelMissing(Reason):
    """The node lacks a DoNotSchedule constraint's topologyKey label (UnschedulableAndUnresolvable)."""

    kind: ClassVar[str] = "SpreadLabelMissing"


# --- VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits ----------------------------
# PreFilter problems of a pod's claims (upstream's error texts, kept as data: which claim, which volume)
CLAIM_NOT_FOUND: Final = "claim-not-found"
EPHEMERAL_NOT_CREATED: Final = "ephemeral-not-created"
CLAIM_LOST: Final = "claim-lost"
CLAIM_DELETING: Final = "claim-deleting"
CLAIM_NOT_OWNED: Final = "claim-not-owned"
UNBOUND_IMMEDIATE: Final = "unbound-immediate"
PV_NOT_FOUND: Final = "pv-not-found"
CLASS_NOT_FOUND: Final = "class-not-found"
NO_PV_NO_CLASS: Final = "no-pv-no-class"
NO_PV_NAME: Final = "no-pv-name"


@dataclass(frozen=True, slots=True)
class ClaimProblem(Reason):
    """A PreFilter rejection over the pod's PersistentVolumeClaims (VolumeRestrictions, VolumeBinding,
    VolumeZone): ``problem`` one of the constants above; ``namespace``/``claim``/``pod`` name the objects,
    ``other`` the PV or StorageClass concerned."""

    kind: ClassVar[str] = "ClaimProblem"
    problem: str
    claim: str = ""
    other: str = ""
    namespace: str = ""
    pod: str = ""


@dataclass(frozen=True, slots=True)
class VolumeNodeConflict(Reason):
    """A bound claim's PersistentVolume has required node affinity the node does not match."""

    kind: ClassVar[str] = "VolumeNodeConflict"


@dataclass(frozen=True, slots=True)
class VolumeBindConflict(Reason):
    """A WaitForFirstConsumer claim can be neither bound to an available PV nor provisioned on the node."""

    kind: ClassVar[str] = "VolumeBindConflict"


@dataclass(frozen=True, slots=True)
class VolumeNoSpace(Reason):
    """A WaitForFirstConsumer claim to provision: no CSIStorageCapacity reachable from the node holds it
    (binder.go ``hasEnoughCapacity``, ``ErrReasonNotEnoughSpace``)."""

    kind: ClassVar[str] = "VolumeNoSpace"


@dataclass(frozen=True, slots=True)
class VolumeMissing(Reason):
    """A bound claim's PersistentVolume does not exist."""

    kind: ClassVar[str] = "VolumeMissing"


@dataclass(frozen=True, slots=True)
class DiskConflict(Reason):
    kind: ClassVar[str] = "DiskConflict"


@dataclass(frozen=True, slots=True)
class ReadWriteOncePodInUse(Reason):
    kind: ClassVar[str] = "ReadWriteOncePodInUse"


@dataclass(frozen=True, slots=True)
class VolumeZoneConflict(Reason):
    kind: ClassVar[str] = "VolumeZoneConflict"


@dataclass(frozen=True, slots=True)
class MaxVolumeCount(Reason):
    kind: ClassVar[str] = "MaxVolumeCount"


# --- kubegpu's device plugins ------------------------------------------------------------------

NO_DEVICES: Final = "no-devices"
SHARED_MORE_THAN_ONE: Final = "shared-more-than-one"
TOO_FEW_DEVICES: Final = "too-few-devices"
NUMA_UNALIGNED: Final = "numa-unaligned"
REPLICAS_ON_FEWER_GPUS: Final = "replicas-on-fewer-gpus"


@dataclass(frozen=True, slots=True)
class DeviceRefused(Reason):
    """GpuDeviceFit: the device choice kubelet would make fails; ``problem`` is one of the constants
    above, ``resources`` the resources concerned, ``policy`` the Topology Manager policy (NUMA only),
    ``sharing`` how the replicas are shared (``devices.sharing.SharingStrategy``; shared-more-than-one only:
    time-slicing and MPS refuse for different settings)."""

    kind: ClassVar[str] = "DeviceRefused"
    problem: str
    resources: tuple[str, ...]
    policy: str = ""
    sharing: str = ""


@dataclass(frozen=True, slots=True)
class GpuShareNoFit(Reason):
    kind: ClassVar[str] = "GpuShareNoFit"


@dataclass(frozen=True, slots=True)
class GpuRequestInvalid(Reason):
    """GpuShare's PreFilter (UnschedulableAndUnresolvable): the pod's ``kubegpu.io/gpu-milli`` request with
    its ``kubegpu.io/gpu-count`` annotation is no GPU shape; ``problem`` says which values and why
    (``gpu_shapes.gpu_request_problem``, the one rule), never the pod's name (the outcome is kept per spec)."""

    kind: ClassVar[str] = "GpuRequestInvalid"
    problem: str


# --- DefaultPreemption -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NoPreemptionVictims(Reason):
    kind: ClassVar[str] = "NoPreemptionVictims"


@dataclass(frozen=True, slots=True)
class PreemptionNotHelpful(Reason):
    kind: ClassVar[str] = "PreemptionNotHelpful"


@dataclass(frozen=True, slots=True)
class NotEligible(Reason):
    """The pod may not preempt: ``preemptionPolicy: Never`` (``never``) or a lower-priority pod already
    terminating on its nominated node (``terminating``)."""

    kind: ClassVar[str] = "NotEligible"
    cause: str


@dataclass(frozen=True, slots=True)
class DeviceClassMissing(Reason):
    """DynamicResources' PreFilter: a claim's request names a DeviceClass that does not exist
    (pkg/scheduler/framework/plugins/dynamicresources, "request %s: device class %s does not exist")."""

    kind: ClassVar[str] = "DeviceClassMissing"
    request: str
    device_class: str


@dataclass(frozen=True, slots=True)
class Message(Reason):
    """A reason known only by its text: a message the formatter itself composed from reasons
    (PostFilter's ``preemption: 0/N nodes …``, nested whole as kube-scheduler does) or the text of a
    plugin kubegpu does not model (a test's or an out-of-tree plugin). Printed as is, never parsed."""

    kind: ClassVar[str] = "Message"
    text: str


def _device_text(r: DeviceRefused) -> str:
    res = ", ".join(r.resources)
    return {
        NO_DEVICES: f"node(s) had no {res} devices",
        SHARED_MORE_THAN_ONE: f"node(s) share {res} with MPS, 1 replica per container"
        if r.sharing == SharingStrategy.MPS
        else f"node(s) time-slice {res} with failRequestsGreaterThanOne",
        TOO_FEW_DEVICES: f"node(s) had too few free {res} devices",
        NUMA_UNALIGNED: f"node(s) could not align {res} on one NUMA node (topology manager {r.policy})",
        REPLICAS_ON_FEWER_GPUS: f"node(s) had {res} replicas on fewer physical GPUs than requested",
    }[r.problem]


_NOT_ELIGIBLE = {
    "never": "not eligible due to preemptionPolicy=Never.",
    "terminating": "not eligible due to a terminating pod on the nominated node.",
}


def _excluded_text(r: PreFilterExcluded) -> str:
    if len(r.plugins) == 1:
        return f"node(s) didn't satisfy plugin {r.plugins[0]}"
    return f"node(s) didn't satisfy plugin(s) [{' '.join(r.plugins)}] simultaneously"


def _claim_text(r: ClaimProblem) -> str:
    return {
        CLAIM_NOT_FOUND: f'persistentvolumeclaim "{r.claim}" not found',
        EPHEMERAL_NOT_CREATED: f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{r.claim}"',
        CLAIM_LOST: f'persistentvolumeclaim "{r.claim}" bound to non-existent persistentvolume "{r.other}"',
        CLAIM_DELETING: f'persistentvolumeclaim "{r.claim}" is being deleted',
        CLAIM_NOT_OWNED: f"PVC {r.namespace}/{r.claim} was not created for pod {r.namespace}/{r.pod} (pod is not owner)",
        UNBOUND_IMMEDIATE: "pod has unbound immediate PersistentVolumeClaims",
        PV_NOT_FOUND: f'persistentvolume "{r.other}" not found',
        CLASS_NOT_FOUND: f'storageclass.storage.k8s.io "{r.other}" not found',
        NO_PV_NO_CLASS: "PersistentVolumeClaim had no pv name and storageClass name",
        NO_PV_NAME: "PersistentVolume had no name",
    }[r.problem]


Renderer = Callable[[Any], str]

# kube-scheduler 1.34's text per kind (the sources are cited in each plugin's module docstring).
_BASE: Mapping[type[Reason], Renderer] = {
    TooManyPods: lambda r: "Too many pods",
    Insufficient: lambda r: f"Insufficient {r.resource}",
    UntoleratedTaint: lambda r: f"node(s) had untolerated taint {{{r.taint.key}: {r.taint.value}}}",
    Cordoned: lambda r: "node(s) were unschedulable",
    AffinityMismatch: lambda r: "node(s) didn't match Pod's node affinity/selector",
    AffinityTermsConflict: lambda r: "pod affinity terms conflict",
    NodeNameMismatch: lambda r: "node(s) didn't match the requested node name",
    HostPortConflict: lambda r: "node(s) didn't have free ports for the requested pod ports",
    PreFilterExcluded: _excluded_text,
    OutsidePreFilterResult: lambda r: f"node(s) didn't satisfy plugin(s) [{' '.join(r.plugins)}]",
    PodAffinityUnmet: lambda r: "node(s) didn't match pod affinity rules",
    PodAntiAffinityHit: lambda r: "node(s) didn't match pod anti-affinity rules",
    ExistingAntiAffinityHit: lambda r: "node(s) didn't satisfy existing pods anti-affinity rules",
    SpreadSkew: lambda r: "node(s) didn't match pod topology spread constraints",
    SpreadLabelMissing: lambda r: (
        "node(s) didn't match pod topology spread constraints (missing required label)"
    ),
    DeviceRefused: _device_text,
    GpuShareNoFit: lambda r: "node(s) had no GPU with enough free milli-GPU",
    GpuRequestInvalid: lambda r: f"pod's GPU request is invalid: {r.problem}",
    NoPreemptionVictims: lambda r: "No preemption victims found for incoming pod",
    PreemptionNotHelpful: lambda r: "Preemption is not helpful for scheduling",
    NotEligible: lambda r: _NOT_ELIGIBLE[r.cause],
    Message: lambda r: r.text,
    DeviceClassMissing: lambda r: f"request {r.request}: device class {r.device_class} does not exist",
    # volume plugins (pkg/scheduler/framework/plugins/volume*/, nodevolumelimits/csi.go)
    ClaimProblem: _claim_text,
    VolumeNodeConflict: lambda r: "node(s) had volume node affinity conflict",
    VolumeBindConflict: lambda r: "node(s) didn't find available persistent volumes to bind",
    VolumeNoSpace: lambda r: "node(s) did not have enough free storage",
    VolumeMissing: lambda r: "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)",
    DiskConflict: lambda r: "node(s) had no available disk",
    ReadWriteOncePodInUse: lambda r: (
        "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
    ),
    VolumeZoneConflict: lambda r: "node(s) had no available volume zone",
    MaxVolumeCount: lambda r: "node(s) exceed max volume count",
}

# kubernetes PR #134740 (1.35; cherry-picked to 1.34 by #135023): one text for every untolerated taint
_TAINTS_MERGED: Mapping[type[Reason], Renderer] = {
    UntoleratedTaint: lambda r: "node(s) had untolerated taint(s)"
}
# PR #129887 (1.33) and PR #129145 (1.34): the volume texts that changed
_PV_AFFINITY: Mapping[type[Reason], Renderer] = {
    VolumeNodeConflict: lambda r: "node(s) didn't match PersistentVolume's node affinity"
}
_RWOP_IN_USE: Mapping[type[Reason], Renderer] = {
    ReadWriteOncePodInUse: lambda r: (
        "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use "
        "by another pod"
    )
}
# Per Kubernetes minor, the kinds whose text differs from the base text.
VARIANTS: Mapping[str, Mapping[type[Reason], Renderer]] = {
    b.name: {
        **(_TAINTS_MERGED if b.taints_merged else {}),
        **(_PV_AFFINITY if b.pv_affinity_text else {}),
        **(_RWOP_IN_USE if b.rwop_in_use_text else {}),
    }
    for b in BEHAVIOURS.values()
}


def render(reason: Reason, version: str = DEFAULT_VERSION) -> str:
    """The text kube-scheduler ``version`` prints for ``reason``."""
    table = VARIANTS.get(version)
    if table is None:
        raise ValueError(f"Kubernetes {version}: reason texts are modelled for {SUPPORTED_RANGE} only")
    fn = table.get(type(reason)) or _BASE[type(reason)]
    return fn(reason)


def render_all(reasons: tuple[Reason, ...], version: str = DEFAULT_VERSION) -> tuple[str, ...]:
    return tuple(render(r, version) for r in reasons)
