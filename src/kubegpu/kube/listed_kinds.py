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


LISTED_KINDS: tuple[ListedKind, ...] = (
    ListedKind("Namespace", "v1", "/api/v1/namespaces", "CoreV1Api", "list_namespace"),
    ListedKind("Node", "v1", "/api/v1/nodes", "CoreV1Api", "list_node"),
    ListedKind(
        "PriorityClass",
        "scheduling.k8s.io/v1",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        "SchedulingV1Api",
        "list_priority_class",
        optional=True,
        without_it="priorityClassName cannot be resolved; pods keep the spec.priority the API server stored",
    ),
    ListedKind("Pod", "v1", "/api/v1/pods", "CoreV1Api", "list_pod_for_all_namespaces"),
    ListedKind(
        "ResourceQuota", "v1", "/api/v1/resourcequotas", "CoreV1Api", "list_resource_quota_for_all_namespaces"
    ),
    ListedKind(
        "LimitRange",
        "v1",
        "/api/v1/limitranges",
        "CoreV1Api",
        "list_limit_range_for_all_namespaces",
        optional=True,
        without_it="LimitRange defaults and bounds are not applied",
    ),
    ListedKind(
        "RuntimeClass",
        "node.k8s.io/v1",
        "/apis/node.k8s.io/v1/runtimeclasses",
        "NodeV1Api",
        "list_runtime_class",
        optional=True,
        without_it="pods created with --pods get no RuntimeClass overhead or scheduling",
    ),
    ListedKind(
        "PodDisruptionBudget",
        "policy/v1",
        "/apis/policy/v1/poddisruptionbudgets",
        "PolicyV1Api",
        "list_pod_disruption_budget_for_all_namespaces",
        optional=True,
        without_it="preemption treats every victim as covered by no PodDisruptionBudget",
    ),
    # what the cluster shows about itself (model.records): the device plugin chain, FailedCreate, events
    ListedKind(
        "DaemonSet", "apps/v1", "/apis/apps/v1/daemonsets", "AppsV1Api", "list_daemon_set_for_all_namespaces",
        optional=True, without_it="the device plugin DaemonSets are unknown: a GPU node without GPUs is not traced to its plugin",
    ),
    ListedKind(
        "ReplicaSet", "apps/v1", "/apis/apps/v1/replicasets", "AppsV1Api", "list_replica_set_for_all_namespaces",
        optional=True, without_it="a ReplicaSet whose pods a quota rejects at creation is not reported",
    ),
    # PodTopologySpread's default constraints take their selector from these (model.default_spread)
    ListedKind(
        "StatefulSet", "apps/v1", "/apis/apps/v1/statefulsets", "AppsV1Api", "list_stateful_set_for_all_namespaces",
        optional=True, without_it="the default topology spread of StatefulSet pods is not computed",
    ),
    ListedKind(
        "ReplicationController", "v1", "/api/v1/replicationcontrollers", "CoreV1Api",
        "list_replication_controller_for_all_namespaces",
        optional=True, without_it="the default topology spread of ReplicationController pods is not computed",
    ),
    ListedKind(
        "Service", "v1", "/api/v1/services", "CoreV1Api", "list_service_for_all_namespaces",
        optional=True, without_it="the default topology spread (from the Services selecting a pod) is not computed",
    ),
    ListedKind(
        "Job", "batch/v1", "/apis/batch/v1/jobs", "BatchV1Api", "list_job_for_all_namespaces",
        optional=True, without_it="suspended (queued) Jobs and their FailedCreate are not reported",
    ),
    ListedKind(
        "Event", "v1", "/api/v1/events", "CoreV1Api", "list_event_for_all_namespaces",
        optional=True, without_it="the scheduler's own FailedScheduling messages and FailedCreate events are not compared",
    ),
    # the storage plugins' objects (model.volumes); without claims a pod's volumes are not checked (explain
    # says so), without the others the claims' PVs, classes or attach limits are missing
    ListedKind(
        "PersistentVolumeClaim", "v1", "/api/v1/persistentvolumeclaims", "CoreV1Api",
        "list_persistent_volume_claim_for_all_namespaces",
        optional=True, without_it="pods' volumes are checked without their claims (reported as not checked)",
    ),
    ListedKind(
        "PersistentVolume", "v1", "/api/v1/persistentvolumes", "CoreV1Api", "list_persistent_volume",
        optional=True, without_it="pods' volumes are checked without PersistentVolumes",
    ),
    ListedKind(
        "StorageClass", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1/storageclasses", "StorageV1Api",
        "list_storage_class", optional=True, without_it="pods' volumes are checked without StorageClasses",
    ),
    ListedKind(
        "CSINode", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1/csinodes", "StorageV1Api", "list_csi_node",
        optional=True, without_it="pods' volumes are checked without CSINode attach limits",
    ),
    ListedKind(
        "CSIDriver", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1/csidrivers", "StorageV1Api", "list_csi_driver",
        optional=True, without_it="volumes to provision are checked without the drivers' free storage",
    ),
    ListedKind(
        "CSIStorageCapacity", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1/csistoragecapacities", "StorageV1Api",
        "list_csi_storage_capacity_for_all_namespaces",
        optional=True, without_it="volumes to provision are checked without the drivers' free storage",
    ),
)  # fmt: skip


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
