"""Which kube-scheduler release the core reproduces: the supported minors and, per minor, every difference
in decisions or messages that kubegpu models, each with its upstream source.

One table (``BEHAVIOURS``), read by the one formatter (``scheduler.messages``) and by the plugins' shared
rules through ``Handle.behaviour``: no plugin tests a version number itself. Each minor is modelled as one
patch (``Behaviour.release``: the newest the Go module proxy serves, so 1.31.13 for 1.31), the release the
real-control-plane tests build and whose messages are recorded in ``tests/realkube/golden/<release>.json``.

Version strings are read as people and clusters write them: ``1.35``, ``v1.35.4``, ``v1.34.3-eks-113cf36``,
``v1.35.1+k3s1``, ``v1.33.5-gke.1200000``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from kubegpu.errors import ConfigError


@dataclass(frozen=True)
class Behaviour:
    """What one minor does differently. Field docs name the upstream change."""

    minor: int
    release: str  # the patch release modelled (and built by the real-control-plane tests)
    # TaintToleration's Filter reason: "node(s) had untolerated taint(s)" for every taint (kubernetes PR
    # #134740, in 1.35; cherry-picked to 1.34 by #135023) instead of "node(s) had untolerated taint {k: v}"
    taints_merged: bool
    # NodeResourcesFit: a request above the node's allocatable is UnschedulableAndUnresolvable, so
    # preemption says "Preemption is not helpful" instead of trying the node (PR #131345, 1.34)
    above_allocatable_unresolvable: bool
    # DynamicResources is in the default profile: DRA GA and on by default from 1.34 (KEP-4381); 1.32–1.33
    # serve it as beta, off by default
    dynamic_resources: bool
    # DynamicResources' PostFilter adds "no new claims to deallocate" for a pod without claims, before the
    # preemption text, and "still not schedulable" for a pod whose claims it cannot help (DRA on by default
    # since 1.34; PR #140222 drops both texts in 1.37: its PostFilter returns a bare Unschedulable)
    dra_no_claims_text: bool
    # DefaultPreemption's success says "found a potential placement for pod on node N, preempting K
    # victims" (PR #140180, 1.37); before, a successful preemption added no text
    preemption_success_text: bool
    # KEP-5004 extended resources served by DRA: a DeviceClass's extendedResourceName (and the implicit
    # deviceclass.resource.kubernetes.io/<class>) serves a plain extended-resource request on nodes whose
    # allocatable lacks it, through a special claim; NodeResourcesFit leaves such a resource to
    # DynamicResources there. Feature gate DRAExtendedResource (pkg/features/kube_features.go): alpha, off
    # in 1.34-1.35; beta, on in 1.36; GA, locked on in 1.37
    dra_extended_resource: bool
    # A pod affinity term's matchLabelKeys/mismatchLabelKeys apply (MatchLabelKeysInPodAffinity: alpha 1.29,
    # beta and on by default 1.31, GA 1.33, pkg/features/kube_features.go); 1.30's API server drops them
    pod_affinity_label_keys: bool = True
    # VolumeBinding's bound-PV node affinity reason says "node(s) didn't match PersistentVolume's node
    # affinity" instead of "node(s) had volume node affinity conflict" (kubernetes PR #129887, 1.33)
    pv_affinity_text: bool = True
    # VolumeRestrictions' ReadWriteOncePod reason says "node(s) unavailable due to PersistentVolumeClaim with
    # ReadWriteOncePod access mode already in-use by another pod" (PR #129145, issue #129143; 1.34)
    rwop_in_use_text: bool = True
    # DynamicResources scores nodes (the sum of 8 − i over firstAvailable subrequests allocated as the i-th
    # alternative, dynamicresources.go computeScore) with weight 2 in the default profile from 1.35
    # (apis/config/v1/default_plugins.go applyDynamicResources: Weight ptr.To[int32](2); 1.34 has no Score)
    dra_score_weight: int = 0
    # VolumeBinding scores nodes by the utilization of the PVs it would bind (KEP-4049 StorageCapacityScoring,
    # pkg/features/kube_features.go: alpha, off in 1.33-1.36; beta, on by default in 1.37; 1.32 has only the
    # older VolumeCapacityPriority, alpha and off), default shape utilization 0 -> 10, 100 -> 0
    # (apis/config/v1/defaults.go SetDefaults_VolumeBindingArgs), weight 1 (default_plugins.go, no weight)
    storage_capacity_scoring: bool = False
    # FitError's histogram counts the nodes a PreFilter result left out (NodeAffinity's required
    # matchFields metadata.name) as "N node(s) didn't satisfy plugin(s) [NodeAffinity]": the NodeToStatus
    # absent-nodes status of kubernetes PR #126022, 1.32. 1.30 and 1.31 count only the nodes Filter ran on
    # (FitError.Error() ranges over NodeToStatusMap, framework/types.go v1.30.14, v1.31.13); their
    # preemption already took absent nodes as unresolvable (PR #125197, cherry-pick #125306 to 1.30)
    absent_nodes_counted: bool = True
    # EBSLimits, GCEPDLimits and AzureDiskLimits (attach limits for in-tree EBS, GCE PD and Azure Disk volumes,
    # 39/16/16 by default, counted on nodes whose CSINode does not list the plugin as migrated) are in the
    # default profile up to 1.30; PR #124500 dropped them from it in 1.31 (apis/config/v1/default_plugins.go).
    # Not modelled: explain names them for a pod with such volumes
    non_csi_volume_limits: bool = False
    # Pod-level spec.resources count (KEP-2837): PodLevelResources is beta and on by default from 1.34
    # (pkg/features/kube_features.go v1.34.4); alpha and off in 1.32-1.33, where the API server drops the
    # field on create (pkg/api/pod/util.go v1.33.13 dropDisabledPodLevelResources) and the scheduler skips
    # it (SkipPodLevelResources); 1.30-1.31 have no such field. Read by admission (pods being created:
    # `schedule --pods`, plan quota) and by ``Scheduler.schedule_one``, which leaves the field out of a manifest's
    # pod (never admitted: no uid) where it is off; a stored pod that carries the field was created with the
    # gate on, so its pod-level requests count whatever the release
    pod_level_resources: bool = True
    # A placed pod's non-zero cpu/memory (the scoring plugins' node side) by 1.30-1.31's calculateResource
    # (pkg/scheduler/framework/types.go v1.30.14, v1.31.13): sidecars only in the init-container max, not in
    # the sum; 1.32 switched to PodRequests with NonMissingContainerRequests (types.go v1.32.13)
    non_zero_before_1_32: bool = False
    # NodeResourcesBalancedAllocation scores the change in the node's balance, MaxNodeScore/2 + (MaxNodeScore/2
    # + balance with the pod - balance without it)/2 (75: no change), where 1.30-1.35 score the balance with
    # the pod alone (kubernetes PR #135573, 1.36: noderesources/balanced_allocation.go balancedResourceScorer
    # of v1.36.5 and v1.37.2; v1.35.8's takes only the requests with the pod)
    balance_change: bool = False
    # The host is popped off a max-heap of (TotalScore, Randomizer) (KEP-5598 opportunistic batching, kubernetes
    # PR #135231, 1.35: schedule_one.go prioritizeNodes of v1.35.8; framework/sorted_nodes.go of v1.37.2 and
    # v1.38.0-beta.0), where 1.30-1.34's selectHost sampled equal totals at random (schedule_one.go of
    # v1.34.5). Randomizer is set only for nodes an extender scored, so without extenders equal totals go to
    # whichever heap.Init puts on top of the feasible nodes in the order found (schedule_one.heap_top); PR
    # #141024 (open) would set it for every node. Used by ``Scheduler(tie_break="release")``.
    heap_tie_break: bool = False

    @property
    def name(self) -> str:
        return f"1.{self.minor}"


def _b(minor: int, patch: int, *, merged: bool, unresolvable: bool, dra: bool, success: bool) -> Behaviour:
    return Behaviour(
        minor,
        f"1.{minor}.{patch}",
        merged,
        unresolvable,
        minor >= 34,
        dra,
        success,
        minor >= 36,
        minor >= 31,
        minor >= 33,
        minor >= 34,
        2 if minor >= 35 else 0,
        storage_capacity_scoring=minor >= 37,
        absent_nodes_counted=minor >= 32,
        non_csi_volume_limits=minor <= 30,
        pod_level_resources=minor >= 34,
        non_zero_before_1_32=minor <= 31,
        balance_change=minor >= 36,
        heap_tie_break=minor >= 35,
    )


# Checked against the real kube-scheduler of each release whose tests/realkube/golden/<release>.json exists
# (recorded by tests/realkube/record_goldens.py from binaries tools/kube/build.py builds off the module proxy;
# kubegpu must equal every one on every case). Every supported minor has one, base and storage (1.30.14,
# 1.31.13, ..., 1.37.2); re-record one with `python -m tests.realkube.record_goldens [--volumes] 1.3x`.
BEHAVIOURS: dict[int, Behaviour] = {
    30: _b(30, 14, merged=False, unresolvable=False, dra=False, success=False),
    31: _b(31, 13, merged=False, unresolvable=False, dra=False, success=False),
    32: _b(32, 13, merged=False, unresolvable=False, dra=False, success=False),
    33: _b(33, 13, merged=False, unresolvable=False, dra=False, success=False),
    34: _b(34, 5, merged=True, unresolvable=True, dra=True, success=False),
    35: _b(35, 8, merged=True, unresolvable=True, dra=True, success=False),
    36: _b(36, 5, merged=True, unresolvable=True, dra=True, success=False),
    37: _b(37, 2, merged=True, unresolvable=True, dra=False, success=True),
}
NEWEST = max(BEHAVIOURS)
SUPPORTED_RANGE = f"1.{min(BEHAVIOURS)} to 1.{NEWEST}"


@dataclass(frozen=True)
class AheadCheck:
    """A pre-release of a minor above ``NEWEST``, checked before that minor is supported: its real
    kube-apiserver and kube-scheduler (tools/kube/build.py) ran every recorded case (tests/realkube
    ``record_goldens --out``, and ``--ahead`` for the cases written for its source changes; goldens in
    tests/realkube/golden_prerelease/) and were compared with what kubegpu renders for ``NEWEST``, the release
    it reproduces for such a cluster. A pre-release never makes its minor supported: the final may change."""

    release: str
    cases: int  # cases recorded: base, storage and ahead
    differed: tuple[tuple[str, str], ...] = ()  # (case, what changed) where text or verdict differed


# v1.38.0-beta.0 (the module proxy's newest 1.38 on 2026-12-05): the 50 base and 11 storage cases gave
# 1.37.2's texts and verdicts; the one case written for a 1.38 source change did not (docs/realkube.md)
CHECKED_AHEAD: dict[int, AheadCheck] = {
    38: AheadCheck("1.38.0-beta.0", 63, (
        ("spread-empty-selector", "a topology spread constraint's labelSelector {} counts every pod of the "
         "namespace where 1.30-1.37 count none (kubernetes/kubernetes#141340)"),
    )),
}  # fmt: skip


def ahead_note(minor: int | None) -> str:
    """What is known of a minor above ``NEWEST`` (``CHECKED_AHEAD``), or "" when nothing is."""
    check = CHECKED_AHEAD.get(minor) if minor is not None else None
    if check is None:
        return ""
    said = f"{check.release} was checked against the 1.{NEWEST} rules on {check.cases} recorded cases and "
    if not check.differed:
        return said + "matched on every one (the final release is not checked)"
    what = "; ".join(f"{case}, {change}" for case, change in check.differed)
    return said + f"differed on {len(check.differed)}: {what}; see docs/realkube.md"


# DRA feature gates' defaults per minor, as kube-scheduler and the API server of that release ship them
# (kubernetes pkg/features/kube_features.go of v1.34.4, v1.35.4, v1.36.3, v1.37.2; read from each tag's
# versioned spec, the last entry at or below the minor). Off before 1.34 for every gate here (DRA itself is
# off by default in 1.32–1.33). A gate off means the API server drops the field on create (pkg/registry/
# resource/resourceslice/strategy.go dropDisabledFields, pkg/api/resourceclaimspec/util.go
# DropDisabledFields) and the allocator leaves it out (structured.Features, dynamicresources.go
# AllocatorFeatures); a constraint left with neither matchAttribute nor distinctAttribute is refused
# (validation.go validateDeviceConstraint: "matchAttribute: Required value").
DRA_GATES: dict[str, dict[int, bool]] = {
    # KEP-5055 device taints (ResourceSlice devices[].taints, requests' tolerations): alpha 1.33-1.35,
    # beta on 1.36, GA 1.37
    "DRADeviceTaints": {34: False, 35: False, 36: True, 37: True},
    # DeviceTaintRule objects (resource.k8s.io): alpha 1.35, beta but off 1.36 (its API is off by default),
    # GA 1.37
    "DRADeviceTaintRules": {34: False, 35: False, 36: False, 37: True},
    # KEP-5075 consumable capacity (allowMultipleAllocations, requestPolicy, requests' capacity,
    # distinctAttribute, shareID): alpha 1.34-1.35, beta on 1.36-1.37
    "DRAConsumableCapacity": {34: False, 35: False, 36: True, 37: True},
    # KEP-4815 partitionable devices (sharedCounters / consumesCounters): alpha 1.33-1.35, beta on 1.36-1.37
    "DRAPartitionableDevices": {34: False, 35: False, 36: True, 37: True},
    # KEP-5007 device binding conditions (devices' bindingConditions, PreBind waits): alpha 1.34-1.35, beta on
    # 1.36-1.37; it needs DRAResourceClaimDeviceStatus (claims' status.devices): beta on 1.33, GA 1.37
    "DRADeviceBindingConditions": {34: False, 35: False, 36: True, 37: True},
    "DRAResourceClaimDeviceStatus": {34: True, 35: True, 36: True, 37: True},
    # KEP-4816 firstAvailable: beta on 1.34-1.35, GA 1.36, locked on 1.37
    "DRAPrioritizedList": {34: True, 35: True, 36: True, 37: True},
    # KEP-5018 adminAccess: beta on 1.34-1.35, GA and locked on 1.36-1.37
    "DRAAdminAccess": {34: True, 35: True, 36: True, 37: True},
}


def dra_gate(minor: int, gate: str) -> bool:
    """Whether DRA feature gate ``gate`` is on by default in ``minor`` (``DRA_GATES``; off before 1.34)."""
    return DRA_GATES[gate].get(minor, False) if minor <= NEWEST else DRA_GATES[gate][NEWEST]


# "v1.34.3-eks-113cf36", "1.35", "v1.35.1+k3s1": major.minor, optional patch, optional vendor suffix
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+][0-9A-Za-z.+-]*)?$")


def parse_minor(text: str) -> int | None:
    """The minor of a Kubernetes version string, or None when it is not one (any major other than 1)."""
    m = _VERSION.match(text.strip())
    if m is None or m.group(1) != "1":
        return None
    return int(m.group(2))


def behaviour(version: str | int | None = None) -> Behaviour:
    """The behaviour of ``version`` (``"1.35"``, ``"v1.34.3-eks-…"``, a minor number); None: the newest.

    Raises ``ConfigError`` naming the value and the supported range when it is malformed or unsupported.
    """
    if version is None:
        return BEHAVIOURS[NEWEST]
    minor = version if isinstance(version, int) else parse_minor(version)
    if minor is None:
        raise ConfigError(f"not a Kubernetes version: {version!r} (supported: {SUPPORTED_RANGE})")
    if minor not in BEHAVIOURS:
        raise ConfigError(f"Kubernetes {version} is not supported (supported: {SUPPORTED_RANGE})")
    return BEHAVIOURS[minor]


def newest_of(versions: list[str]) -> Behaviour | None:
    """The behaviour for a cluster whose kubelets report ``versions``: the newest supported minor among
    them (kubelets are never newer than their control plane, so the newest kubelet is the closest lower
    bound); None when none parses. Minors above the newest supported are taken as the newest."""
    minors = [m for m in (parse_minor(v) for v in versions) if m is not None]
    if not minors:
        return None
    return BEHAVIOURS[min(max(minors), NEWEST)] if max(minors) >= min(BEHAVIOURS) else None


# group versions an API server serves by default from a minor on: a snapshot holding objects of one was read from an
# API server at least that new, whatever its kubelets report (the version skew policy lets them be 3 minors older).
# resource.k8s.io/v1: DRA GA in 1.34 (KEP-4381); the NVIDIA DRA driver's chart installs v1 DeviceClasses on 1.34+
# and v1beta1/v1beta2 on 1.32-1.33 (kubernetes-sigs/dra-driver-nvidia-gpu#534); kubernetes-sigs/dra-driver-nvidia-gpu
# #766: v1 objects in a 1.34.1 cluster whose node runs kubelet 1.33.1.
SERVED_FROM = {"resource.k8s.io/v1": 34}


def served_floor(api_versions: Iterable[str]) -> tuple[int, str] | None:
    """The lowest minor that serves every group version in ``api_versions`` by default, with the group version
    that sets it; None when none of them says."""
    known = [(SERVED_FROM[a], a) for a in set(api_versions) if a in SERVED_FROM]
    return max(known) if known else None


def choose(
    given: str | None, server_version: str, kubelet_versions: list[str], api_versions: Iterable[str] = ()
) -> tuple[Behaviour, str, str]:
    """THE rule for which release a command reproduces: ``given`` (``--kube-version``), else the API server's
    version, else the newest kubelet's raised to what the objects' group versions show the API server serves
    (``served_floor``), else the newest supported. Returns (behaviour, where it came from, a warning or "").
    ``given`` must be valid (``ConfigError`` otherwise); an unsupported server version is warned about and
    skipped."""
    if given is not None:
        return behaviour(given), "--kube-version", ""
    chosen, source, warning = _from_cluster(server_version, kubelet_versions)
    floor = served_floor(api_versions)
    if source.startswith("the API server") or floor is None or chosen.minor >= floor[0]:
        return chosen, source, warning
    # the kubelets' release is not what runs the control plane: a warning about it (older or newer than the
    # supported range) does not hold; one about an unsupported server version does
    return (
        BEHAVIOURS[floor[0]],
        f"{floor[1]} objects, served from 1.{floor[0]} on; the kubelets are older",
        warning if server_version else "",
    )


def _from_cluster(server_version: str, kubelet_versions: list[str]) -> tuple[Behaviour, str, str]:
    """``choose`` without ``--kube-version`` and the objects' group versions."""
    warning = ""
    if server_version:
        try:
            return behaviour(server_version), f"the API server ({server_version})", ""
        except ConfigError as err:
            note = ahead_note(parse_minor(server_version))
            warning = f"{err}; using the newest supported release" + (f"; {note}" if note else "")
    found = newest_of(kubelet_versions)
    newest = max(kubelet_versions, key=lambda v: parse_minor(v) or -1, default="")
    if found is not None:
        top = parse_minor(newest)
        if not warning and top is not None and top > NEWEST:  # a kubelet is never newer than its API server
            note = ahead_note(top)
            warning = (
                f"the newest kubelet ({newest}) is newer than the supported range ({SUPPORTED_RANGE}); "
                f"reproducing 1.{NEWEST}, the newest: messages and defaults of the cluster's own release may differ"
                + (f"; {note}" if note else "")
            )
        return found, f"the newest kubelet ({newest})", warning
    if parse_minor(newest) is not None:  # every kubelet older than the oldest supported minor
        # the version skew policy lets a kubelet be up to 3 minors older than its API server: the cluster
        # runs an older release than 1.OLDEST, or at most 3 minors newer than its kubelets; the oldest
        # supported is the closest kubegpu can reproduce (the newest would bring rules no such cluster has)
        oldest = min(BEHAVIOURS)
        said = (
            f"the newest kubelet ({newest}) is older than the supported range ({SUPPORTED_RANGE}); reproducing "
            f"1.{oldest}, the closest (a kubelet is at most 3 minors older than its API server): messages and "
            "defaults of the cluster's own release may differ"
        )
        return (
            BEHAVIOURS[oldest],
            f"the oldest supported release (kubelets {newest})",
            (f"{warning}; {said}" if warning else said),
        )
    return BEHAVIOURS[NEWEST], "the newest supported release", warning
