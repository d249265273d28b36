"""The kinds ``kube.live.read_cluster`` lists, with where each lives and what the read loses without it.

``LISTED_KINDS`` are the core scheduling inputs and what the cluster shows about itself; ``BATCH_LISTED_KINDS``
the batch layer's custom resources; ``DRA_LISTED_KINDS`` and ``KUEUE_LISTED_KINDS`` one entry per served
version, newest first: ``read_cluster`` reads each kind at the first version the cluster serves.

Must not import: anything above ``kubegpu.model``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubegpu.model.records import KUEUE_GROUP


@dataclass(frozen=True)
class ListedKind:
    """One kind ``read_cluster`` lists: where it lives and whether the read can go on without it."""

    kind: str
    api_version: str
    path: str  # the collection URL, cluster-wide (all namespaces)
    api_class: str  # kubernetes.client API class
    method: str  # its list method for ``path``
    optional: bool = False  # 403/404 -> warning + skip instead of an error
    without_it: str = ""  # what a skipped optional kind costs, for the warning
    args: tuple[
        str, ...
    ] = ()  # positional arguments of ``method`` (a custom resource's group, version, plural)


def _builtin(
    kind: str, api_version: str, plural: str, api_class: str, method: str, without_it: str = ""
) -> ListedKind:
    """A built-in kind, listed cluster-wide at ``/api/v1/<plural>`` (the core group) or
    ``/apis/<group>/<version>/<plural>``; optional (403/404: a warning) when ``without_it`` says what is lost."""
    prefix = "/api" if api_version == "v1" else "/apis"
    return ListedKind(kind, api_version, f"{prefix}/{api_version}/{plural}", api_class, method,
                      optional=bool(without_it), without_it=without_it)  # fmt: skip


# kind, apiVersion, plural, client API class, its list method, and (optional kinds) what is lost without it
LISTED_KINDS: tuple[ListedKind, ...] = tuple(_builtin(*row) for row in (
    ("Namespace", "v1", "namespaces", "CoreV1Api", "list_namespace"),
    ("Node", "v1", "nodes", "CoreV1Api", "list_node"),
    ("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", "SchedulingV1Api", "list_priority_class", "priorityClassName cannot be resolved; pods keep the spec.priority the API server stored"),
    ("Pod", "v1", "pods", "CoreV1Api", "list_pod_for_all_namespaces"),
    ("ResourceQuota", "v1", "resourcequotas", "CoreV1Api", "list_resource_quota_for_all_namespaces"),
    ("LimitRange", "v1", "limitranges", "CoreV1Api", "list_limit_range_for_all_namespaces", "LimitRange defaults and bounds are not applied"),
    ("RuntimeClass", "node.k8s.io/v1", "runtimeclasses", "NodeV1Api", "list_runtime_class", "pods created with --pods get no RuntimeClass overhead or scheduling"),
    ("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", "PolicyV1Api", "list_pod_disruption_budget_for_all_namespaces", "preemption treats every victim as covered by no PodDisruptionBudget"),
    # what the cluster shows about itself (model.records): the device plugin chain, FailedCreate, events
    ("DaemonSet", "apps/v1", "daemonsets", "AppsV1Api", "list_daemon_set_for_all_namespaces", "the device plugin DaemonSets are unknown: a GPU node without GPUs is not traced to its plugin"),
    ("ReplicaSet", "apps/v1", "replicasets", "AppsV1Api", "list_replica_set_for_all_namespaces", "a ReplicaSet whose pods a quota rejects at creation is not reported"),
    # PodTopologySpread's default constraints take their selector from these (model.default_spread)
    ("StatefulSet", "apps/v1", "statefulsets", "AppsV1Api", "list_stateful_set_for_all_namespaces", "the default topology spread of StatefulSet pods is not computed"),
    ("ReplicationController", "v1", "replicationcontrollers", "CoreV1Api", "list_replication_controller_for_all_namespaces", "the default topology spread of ReplicationController pods is not computed"),
    ("Service", "v1", "services", "CoreV1Api", "list_service_for_all_namespaces", "the default topology spread (from the Services selecting a pod) is not computed"),
    ("Job", "batch/v1", "jobs", "BatchV1Api", "list_job_for_all_namespaces", "suspended (queued) Jobs and their FailedCreate are not reported"),
    ("Event", "v1", "events", "CoreV1Api", "list_event_for_all_namespaces", "the scheduler's own FailedScheduling messages and FailedCreate events are not compared"),
    # the storage plugins' objects (model.volumes); without claims a pod's volumes are not checked (explain
    # says so), without the others the claims' PVs, classes or attach limits are missing
    ("PersistentVolumeClaim", "v1", "persistentvolumeclaims", "CoreV1Api", "list_persistent_volume_claim_for_all_namespaces", "pods' volumes are checked without their claims (reported as not checked)"),
    ("PersistentVolume", "v1", "persistentvolumes", "CoreV1Api", "list_persistent_volume", "pods' volumes are checked without PersistentVolumes"),
    ("StorageClass", "storage.k8s.io/v1", "storageclasses", "StorageV1Api", "list_storage_class", "pods' volumes are checked without StorageClasses"),
    ("CSINode", "storage.k8s.io/v1", "csinodes", "StorageV1Api", "list_csi_node", "pods' volumes are checked without CSINode attach limits"),
    ("CSIDriver", "storage.k8s.io/v1", "csidrivers", "StorageV1Api", "list_csi_driver", "volumes to provision are checked without the drivers' free storage"),
    ("CSIStorageCapacity", "storage.k8s.io/v1", "csistoragecapacities", "StorageV1Api", "list_csi_storage_capacity_for_all_namespaces", "volumes to provision are checked without the drivers' free storage"),
))  # fmt: skip


def _custom(kind: str, group: str, version: str, plural: str, without_it: str) -> ListedKind:
    """A custom resource (or an API group the client has no typed API for), listed cluster-wide through
    ``CustomObjectsApi``; optional: a CRD that is not installed answers 404."""
    return ListedKind(
        kind,
        f"{group}/{version}",
        f"/apis/{group}/{version}/{plural}",
        "CustomObjectsApi",
        "list_cluster_custom_object",
        optional=True,
        without_it=without_it,
        args=(group, version, plural),
    )


# The batch layer's custom resources (issue 6; ``batch.objects``), served only where their CRDs are
# installed (404 otherwise). The live scheduler watches them; ``read_cluster`` lists them too.
BATCH_LISTED_KINDS: tuple[ListedKind, ...] = tuple(
    _custom(kind, group, version, plural, without_it)
    for kind, group, version, plural, without_it in (
        ("GpuQueue", "kubegpu.io", "v1alpha1", "gpuqueues", "pods naming a queue are admitted without queue quota"),
        ("GpuCohort", "kubegpu.io", "v1alpha1", "gpucohorts", "cohorts have no parents: queues pool quota only with queues naming the same cohort"),
        ("PodGroup", "scheduling.volcano.sh", "v1beta1", "podgroups", "Volcano gangs count as minMember 1 and their spec.queue is not read"),
        ("PodGroup", "scheduling.x-k8s.io", "v1alpha1", "podgroups", "coscheduling gangs count as minMember 1"),
    )
)  # fmt: skip


# resource.k8s.io (DRA): v1 since 1.34, v1beta2 on 1.33, v1beta1 on 1.32; each kind is read at the
# first version the cluster serves (404: not served at that version) and parsed by model.dra.
_CLAIMS_LOST = "pods with resourceClaims are explained without their claims"
DRA_LISTED_KINDS: tuple[ListedKind, ...] = tuple(
    _custom(kind, "resource.k8s.io", version, plural, without_it)
    for kind, plural, versions, without_it in (
        ("DeviceClass", "deviceclasses", ("v1", "v1beta2", "v1beta1"), _CLAIMS_LOST),
        ("ResourceSlice", "resourceslices", ("v1", "v1beta2", "v1beta1"), _CLAIMS_LOST),
        ("ResourceClaim", "resourceclaims", ("v1", "v1beta2", "v1beta1"), _CLAIMS_LOST),
        ("ResourceClaimTemplate", "resourceclaimtemplates", ("v1", "v1beta2", "v1beta1"), _CLAIMS_LOST),
        # device taints applied by rules (v1 in 1.37, where the scheduler applies them; v1beta2 in 1.36)
        ("DeviceTaintRule", "devicetaintrules", ("v1", "v1beta2"),
         "devices are taken without the taints DeviceTaintRules add"),
    )
    for version in versions
)  # fmt: skip


# Kueue (kueue.x-k8s.io, ``KUEUE_GROUP``): v1beta2 since 0.15 (the storage version; v1beta1 deprecated), v1beta1 before;
# the objects ``explain.kueue`` reads why a gated pod or a suspended job is not admitted from.
_KUEUE_LOST = "why Kueue has not admitted a gated pod or a suspended job is not known"
KUEUE_LISTED_KINDS: tuple[ListedKind, ...] = tuple(
    _custom(kind, KUEUE_GROUP, version, plural, _KUEUE_LOST)
    for kind, plural in (
        ("Workload", "workloads"),
        ("LocalQueue", "localqueues"),
        ("ClusterQueue", "clusterqueues"),
        ("ResourceFlavor", "resourceflavors"),
    )
    for version in ("v1beta2", "v1beta1")
)  # fmt: skip
