"""Well-known names, each defined once: extended-resource names, label keys, annotation keys and the
GPU taint key, as Kubernetes, NVIDIA's GPU Operator / GPU Feature Discovery (GFD) / device plugin and
kubegpu itself spell them.

Modules that use a name import it from here (some keep a short local alias); a new name that two
modules share goes here, not into either of them.

Upstream sources for the NVIDIA keys: NVIDIA/k8s-device-plugin (``nvidia.com/gpu``, the
``nvidia.com/gpu.*`` GFD labels, ``nvidia.com/device-plugin.config``, ``nvidia.com/gpu.replicas``,
``nvidia.com/gpu.sharing-strategy``), NVIDIA/mig-parted and the GPU Operator's MIG manager
(``nvidia.com/mig.config``, ``nvidia.com/mig.config.state``, ``nvidia.com/mig.strategy``).

Must not import: anything (plain strings at the bottom of the model layer).
"""

from __future__ import annotations

# -- extended resources ------------------------------------------------------------------------------
NVIDIA_PREFIX = "nvidia.com/"  # NVIDIA's domain: its resources, labels and annotations
NVIDIA_GPU = "nvidia.com/gpu"  # the device plugin's whole-GPU resource
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"  # mixed strategy: nvidia.com/mig-<profile>
# milli-GPUs of fractional GPU sharing (the openb / FGD model): the quantity is the milli-GPU count
GPU_MILLI = "kubegpu.io/gpu-milli"

# -- taints --------------------------------------------------------------------------------------------
# the GPU Operator's / cloud providers' GPU-node taint key (same string as the resource name)
GPU_TAINT_KEY = "nvidia.com/gpu"

# the taints Kubernetes itself puts on a node for its state (k8s.io/api/core/v1 well_known_taints.go): the
# node lifecycle controller for its conditions (TaintNodesByCondition) and cordon, the cloud controller
# manager, and an operator marking a node shut down non-gracefully (KEP-2268)
TAINT_NOT_READY = "node.kubernetes.io/not-ready"  # Ready is False
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"  # Ready is Unknown: the node stopped reporting
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"  # spec.unschedulable (cordon)
TAINT_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
TAINT_DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
TAINT_PID_PRESSURE = "node.kubernetes.io/pid-pressure"
TAINT_NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"
TAINT_OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
TAINT_CLOUD_UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized"
# a control-plane node's role labels (kubeadm: control-plane since 1.20, master before 1.24; the same keys as
# its NoSchedule taints, cmd/kubeadm/app/constants): workloads are kept off it on purpose
CONTROL_PLANE_LABELS = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master")
TAINT_CLOUD_SHUTDOWN = "node.cloudprovider.kubernetes.io/shutdown"
# the well-known node labels the kubelet and the cloud provider set (k8s.io/api core/v1
# well_known_labels.go: LabelHostname, LabelTopologyZone): the topology keys the scheduler's default
# spreading and the node tree read
HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"
# the annotation kubelet puts on the mirror pod it creates for a static pod (pkg/kubelet/types
# ConfigMirrorAnnotationKey; pkg/kubelet/pod/mirror_client.go CreateMirrorPod, which also makes the Node its
# controller owner: kind Node, MirrorPodNodeRestriction, KEP-1314)
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"

# -- node labels (GFD, GPU Operator, device plugin) ------------------------------------------------------
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"
GPU_REPLICAS_LABEL = "nvidia.com/gpu.replicas"
GPU_SHARING_LABEL = "nvidia.com/gpu.sharing-strategy"
MIG_STRATEGY_LABEL = "nvidia.com/mig.strategy"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_CONFIG_STATE_LABEL = "nvidia.com/mig.config.state"
MIG_CAPABLE_LABEL = "nvidia.com/mig.capable"  # GFD: "true" / "false", whether any GPU of the node has MIG
# GFD (k8s-device-plugin internal/lm machine-type.go, nvml.go newGPUModeLabeler): the sanitised DMI product
# name of the node, and "compute" / "graphics" / "unknown" from the GPUs' PCI class
GPU_MACHINE_LABEL = "nvidia.com/gpu.machine"
GPU_MODE_LABEL = "nvidia.com/gpu.mode"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
# the GPU Operator's per-node switch for its device-plugin DaemonSet (one of its nvidia.com/gpu.deploy.*
# labels; "false" keeps the plugin off the node, as NVIDIA's DRA driver docs want where the DRA driver runs)
DEVICE_PLUGIN_DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
# the value NVIDIA's MIG manager gives the nvidia.com/gpu.deploy.* labels it was "true" while it re-partitions
# (mig-parted pkg/mig/reconfigure/reconfigure.go maybeSetPaused; restored to "true" by setState/restart)
MIG_PAUSED_DEPLOY_VALUE = "paused-for-mig-change"
# the seed's example of a platform-maintained hardware-pool label
# DRA (k8s.io/api/resource/v1 types.go): the implicit extended resource of every DeviceClass
# (ResourceDeviceClassPrefix + class name) and the annotation marking the scheduler's special claim for
# extended resources served by DRA (ExtendedResourceClaimAnnotation), both KEP-5004
DRA_DEVICE_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"
DRA_EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
# DRA quota (k8s.io/api/core/v1 types.go ResourceClaimsPerClass; pkg/quota/v1/evaluator/core/resource_claims.go
# from 1.31, KEP-4381): ResourceQuota key ``<device-class>`` + this bounds the devices a namespace's
# ResourceClaims ask for of that class; the claims themselves count as the object count below
DRA_CLASS_QUOTA_SUFFIX = ".deviceclass.resource.k8s.io/devices"
DRA_CLAIM_COUNT = "count/resourceclaims.resource.k8s.io"
# DRAAdminAccess (k8s.io/api/resource/v1 types.go DRAAdminNamespaceLabelKey): adminAccess in a ResourceClaim
# or ResourceClaimTemplate is allowed only in a namespace carrying this label set to "true"
DRA_ADMIN_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"
NVIDIA_DRA_DRIVER = "gpu.nvidia.com"  # NVIDIA/k8s-dra-driver-gpu's driver name for GPUs and MIG devices
# the DeviceClasses NVIDIA's DRA driver chart makes for ComputeDomains (compute-domain-daemon.nvidia.com,
# compute-domain-default-channel.nvidia.com: kubectl get deviceclasses in dra-driver-nvidia-gpu#438)
COMPUTE_DOMAIN_CLASS_PREFIX = "compute-domain-"
# DRA drivers whose devices are GPUs, for "is this a GPU pod": NVIDIA's, AMD's (ROCm/k8s-gpu-dra-driver,
# its DeviceClass gpu.amd.com), Intel's (intel/intel-resource-drivers-for-kubernetes, gpu.intel.com) and
# kubernetes-sigs/dra-example-driver's (gpu.example.com, the reference demo of GPUs)
GPU_DRA_DRIVERS = (NVIDIA_DRA_DRIVER, "gpu.amd.com", "gpu.intel.com", "gpu.example.com")
# Other vendors' device plugins' GPU resources, which kubegpu does not model (it models NVIDIA's): a name, or a
# domain ending in "/" for every resource of it, → whose plugin registers it. AMD: amd.com/gpu
# (ROCm/k8s-device-plugin README, "Exposes AMD GPUs as amd.com/gpu"); Intel: gpu.intel.com/i915, /xe and
# their *_monitoring resources (intel/intel-device-plugins-for-kubernetes cmd/gpu_plugin/README.md), and the
# millicores / memory.max / tiles its NFD hook labels and NFD turns into resources (cmd/gpu_nfdhook README).
OTHER_GPU_RESOURCES = {
    "amd.com/gpu": "AMD's GPU device plugin (ROCm/k8s-device-plugin)",
    "gpu.intel.com/": "Intel's GPU device plugin (intel/intel-device-plugins-for-kubernetes)",
}

DEFAULT_POOL_LABEL = "accelerator.example.com/pool"

# -- kubegpu's own annotations ------------------------------------------------------------------------
INVENTORY_ANNOTATION = "kubegpu.io/device-inventory"  # node: the agent's device inventory (JSON)
# node: kubelet's --topology-manager-policy, which the API does not expose; operators (or kubegpu's node
# agent) record it here so placement can honour it
TOPOLOGY_POLICY_ANNOTATION = "kubegpu.io/topology-manager-policy"
DEVICE_PLUGIN_CONFIG_ANNOTATION = "kubegpu.io/device-plugin-config"  # node: the plugin config it runs
ALLOCATION_ANNOTATION = "kubegpu.io/allocated-devices"  # pod: device IDs the scheduler chose
GPU_COUNT_ANNOTATION = "kubegpu.io/gpu-count"  # pod (openb / FGD): GPUs of a fractional request

# The six pitfalls of GPU operations (the seed's list) as users see them named in findings and plans; the
# internal requirement codes they are filed under never reach user output.
PITFALL_NAMES = {
    "R17.1": "labels-without-gpus",
    "R17.2": "utilisation-as-capacity",
    "R17.3": "replicas-share-one-gpu",
    "R17.4": "toleration-without-gpu-request",
    "R17.5": "gpus-scattered-over-nodes",
    "R17.6": "recreated-not-fixed",
}


def pitfall_name(code: str) -> str:
    """The user-facing name of a pitfall filed under ``code`` ("" stays "")."""
    return PITFALL_NAMES.get(code, code)


# -- GPU nodes as cloud providers and autoscalers mark them (no device plugin needed to set these) ------
# AKS GPU node pools: label accelerator=nvidia and, by convention, taint sku=gpu:NoSchedule (AKS docs, "Use
# GPUs on AKS"); GKE: cloud.google.com/gke-accelerator=<type> and the nvidia.com/gpu=present:NoSchedule taint
# GKE adds itself; Karpenter (AWS provider) well-known labels karpenter.k8s.aws/instance-gpu-count/-name/
# -manufacturer; EKS GPU AMIs in older node groups: k8s.amazonaws.com/accelerator; Node Feature Discovery:
# feature.node.kubernetes.io/pci-10de.present (PCI vendor 10de is NVIDIA), the label the device plugin's Helm
# chart selects nodes by.
CLOUD_GPU_LABELS = (
    "cloud.google.com/gke-accelerator",
    "karpenter.k8s.aws/instance-gpu-count",
    "karpenter.k8s.aws/instance-gpu-name",
    "k8s.amazonaws.com/accelerator",
    "feature.node.kubernetes.io/pci-10de.present",
    "nvidia.com/gpu.deploy.device-plugin",
)
AKS_ACCELERATOR_LABEL = "accelerator"  # AKS: accelerator=nvidia on GPU node pools
# The NFD labels by which the GPU Operator knows a GPU node: it labels such nodes and creates its operand
# DaemonSets for them only (gpu-operator controllers/state_manager.go gpuNodeLabels, each "true").
NFD_NVIDIA_PCI_LABELS = (
    "feature.node.kubernetes.io/pci-10de.present",
    "feature.node.kubernetes.io/pci-0302_10de.present",
    "feature.node.kubernetes.io/pci-0300_10de.present",
)

# -- node labels a component derives from what the node is, and keeps writing ----------------------------
# Relabelling a node does not change what it is, and the writer puts its value back. GPU Feature Discovery
# (k8s-device-plugin docs/gpu-feature-discovery/README.md, "Generated Labels": nvidia.com/cuda.*,
# nvidia.com/gpu.* such as product, memory, count, family, replicas, nvidia.com/mig.capable, mig.strategy,
# nvidia.com/mps.capable), except the GPU Operator's per-node switches nvidia.com/gpu.deploy.* that its users
# set; NVIDIA's MIG manager (nvidia.com/mig.config.state; nvidia.com/mig.config is the user's request); Node
# Feature Discovery; the kubelet (kubernetes.io/hostname, os, arch: the well-known labels); the cloud
# provider (topology.kubernetes.io/*, node.kubernetes.io/instance-type and their deprecated beta names); the
# pool labels of Karpenter, GKE, EKS and AKS. Also GFD's nvidia.com/gfd.timestamp (its writer loop stamps it),
# its per-profile MIG labels nvidia.com/mig-<profile>.count/.memory/... and its vGPU labels nvidia.com/vgpu.*;
# the kubelet's node.kubernetes.io/windows-build and its own kubelet.kubernetes.io/* (the NodeRestriction
# admission plugin's kubelet-managed prefix). (prefix, writer): the first prefix a key starts with decides;
# "" = not managed.
LABEL_WRITERS = (
    ("nvidia.com/gpu.deploy.", ""),
    ("nvidia.com/gfd.", "GPU Feature Discovery"),
    ("nvidia.com/mig-", "GPU Feature Discovery"),
    ("nvidia.com/vgpu.", "GPU Feature Discovery"),
    ("node.kubernetes.io/windows-build", "the kubelet"),
    ("kubelet.kubernetes.io/", "the kubelet"),
    ("nvidia.com/gpu.", "GPU Feature Discovery"),
    ("nvidia.com/cuda.", "GPU Feature Discovery"),
    ("nvidia.com/mig.capable", "GPU Feature Discovery"),
    ("nvidia.com/mig.strategy", "GPU Feature Discovery"),
    ("nvidia.com/mps.capable", "GPU Feature Discovery"),
    ("nvidia.com/mig.config.state", "NVIDIA's MIG manager"),
    ("feature.node.kubernetes.io/", "Node Feature Discovery"),
    (HOSTNAME_LABEL, "the kubelet"),
    ("kubernetes.io/os", "the kubelet"),
    ("kubernetes.io/arch", "the kubelet"),
    ("topology.kubernetes.io/", "the cloud provider"),
    ("failure-domain.beta.kubernetes.io/", "the cloud provider"),  # (the deprecated zone/region labels)
    ("node.kubernetes.io/instance-type", "the cloud provider"),
    ("beta.kubernetes.io/instance-type", "the cloud provider"),
    ("karpenter.sh/", "Karpenter"),
    ("karpenter.k8s.aws/", "Karpenter"),
    ("cloud.google.com/", "GKE"),
    ("eks.amazonaws.com/", "EKS"),
    ("kubernetes.azure.com/", "AKS"),
)
# -- node taints a controller or the cloud provider puts on and takes off ---------------------------------
# Adding or removing one by hand lasts until the owner's next pass, and does not change what it reports.
# The node lifecycle controller (pkg/controller/nodelifecycle, TaintNodesByCondition: not-ready,
# unreachable, unschedulable from spec.unschedulable, the pressure conditions, network-unavailable); the
# cloud controller manager (node.cloudprovider.kubernetes.io/uninitialized until it initialises the node,
# .../shutdown); Karpenter (karpenter.sh/disrupted, karpenter.sh/unregistered; karpenter.sh/disruption
# before v1); Cluster Autoscaler (ToBeDeletedByClusterAutoscaler, DeletionCandidateOfClusterAutoscaler).
# node.kubernetes.io/out-of-service is not here: an administrator sets it (non-graceful node shutdown).
# (key or prefix ending in "/", writer): the first match decides.
TAINT_WRITERS = (
    ("node.kubernetes.io/not-ready", "the node lifecycle controller"),
    ("node.kubernetes.io/unreachable", "the node lifecycle controller"),
    ("node.kubernetes.io/unschedulable", "the node lifecycle controller"),
    ("node.kubernetes.io/memory-pressure", "the node lifecycle controller"),
    ("node.kubernetes.io/disk-pressure", "the node lifecycle controller"),
    ("node.kubernetes.io/pid-pressure", "the node lifecycle controller"),
    ("node.kubernetes.io/network-unavailable", "the node lifecycle controller"),
    ("node.cloudprovider.kubernetes.io/", "the cloud controller manager"),
    ("karpenter.sh/", "Karpenter"),
    ("ToBeDeletedByClusterAutoscaler", "Cluster Autoscaler"),
    ("DeletionCandidateOfClusterAutoscaler", "Cluster Autoscaler"),
)
AKS_GPU_TAINT_KEY = "sku"  # AKS docs: --node-taints sku=gpu:NoSchedule

# -- other GPU schedulers' resources, annotations and labels ---------------------------------------------
# HAMi (Project-HAMi/HAMi docs/config.md): per-container GPU memory (MiB), memory percentage and SM share,
# resolved by hami-scheduler's extender; the nodes advertise none of them.
HAMI_SCHEDULER = "hami-scheduler"
HAMI_RESOURCES = (
    "nvidia.com/gpumem",
    "nvidia.com/gpumem-percentage",
    "nvidia.com/gpucores",
    "nvidia.com/priority",
)
HAMI_NODE_LABEL = "gpu"  # the HAMi device plugin DaemonSet's nodeSelector gpu=on (HAMi README)
HAMI_NODE_LABEL_VALUE = "on"
# Volcano's vGPU (volcano-vgpu-device-plugin, scheduler plugin deviceshare): vgpu-number is advertised by
# the plugin; memory and cores are resolved by the Volcano scheduler only.
VOLCANO_SCHEDULER = "volcano"
VOLCANO_VGPU_NUMBER = "volcano.sh/vgpu-number"
VOLCANO_VGPU_PREFIX = "volcano.sh/vgpu"  # every vGPU resource: vgpu-number, vgpu-memory, vgpu-cores …
VOLCANO_RESOURCES = ("volcano.sh/vgpu-memory", "volcano.sh/vgpu-memory-percentage", "volcano.sh/vgpu-cores")
VOLCANO_QUEUE_LABEL = "volcano.sh/queue-name"
# the physical GPUs volcano-vgpu-device-plugin registered on a node (volcano pkg/scheduler/api/devices/nvidia/
# vgpu: decoded by NewGPUDevices; "id,count,devmem,type,health[,mode]:" entries, never JSON)
VOLCANO_NODE_REGISTER_ANNOTATION = "volcano.sh/node-vgpu-register"
# KAI scheduler (kai-scheduler/KAI-Scheduler docs/gpu-sharing): fractions are pod annotations, not resources.
KAI_SCHEDULER = "kai-scheduler"
KAI_FRACTION = "gpu-fraction"  # a share as a fraction of one GPU
KAI_MEMORY = "gpu-memory"  # a share as MiB of one GPU's memory
KAI_ANNOTATIONS = (KAI_FRACTION, KAI_MEMORY, "gpu-fraction-num-devices")
# KAI gives a share's GPU to one container (kai-scheduler/KAI-Scheduler d5bc503, pkg/binder/common/gpu_access.go
# GetFractionContainerRef): the one this annotation names, init containers searched first, else the first
# regular container.
KAI_SHARE_CONTAINER_ANNOTATION = "gpu-fraction-container-name"
# KAI's admission webhook (pkg/admission/webhook/v1alpha2/gpusharing Mutate, on Pod CREATE) writes this annotation
# (gpusharingconfigmap/config_map.go SetGpuCapabilitiesConfigMapName) and sets that container's
# NVIDIA_VISIBLE_DEVICES from key NVIDIA_VISIBLE_DEVICES of ConfigMap "<annotation>-<index>" ("-i<index>" for an
# init container; common/gpu_access.go AddGPUSharingEnvVars), which its binder fills with the reserved GPU before
# binding (plugins/gpusharing PreBind -> SetNvidiaVisibleDevices).
KAI_CONFIGMAP_ANNOTATION = "runai/shared-gpu-configmap"
KAI_QUEUE_LABELS = ("kai.scheduler/queue", "runai/queue")
# the pod's PodGroup (scheduling.run.ai), set by KAI's pod-grouper (pkg/common/constants PodGroupAnnotationForPod)
KAI_POD_GROUP_ANNOTATION = "pod-group-name"
# where KAI's binder creates the reservation pod holding a whole GPU for shares (pkg/common/constants
# DefaultResourceReservationName; runai-reservation before KAI v0.6.0)
KAI_RESERVATION_NAMESPACE = "kai-resource-reservation"
# KAI's per-node MIG switch (pkg/common/constants DefaultMIGWorkerNodeLabelKey; node_info.go IsMIGEnabled reads it
# first with strconv.ParseBool, else infers MIG from the node's nvidia.com/mig-* resources)
KAI_MIG_ENABLED_LABEL = "node-role.kubernetes.io/mig-enabled"
# Kueue (kubernetes-sigs/kueue): the queue label on Jobs and pods, and the gate its pod webhook adds.
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_ADMISSION_GATE = "kueue.x-k8s.io/admission"
# A plain-pod group's Workload is named after this label (pkg/controller/jobs/pod/constants GroupNameLabel,
# pod_controller.go workloadName); a prebuilt Workload is named by the other (pkg/controller/constants).
KUEUE_POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
KUEUE_PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
DEFAULT_SCHEDULER = "default-scheduler"
# the Warning event reason kube-scheduler writes for a pod it cannot place
FAILED_SCHEDULING = "FailedScheduling"
# The Warning event reason another scheduler writes on a pod it could not place, besides (or instead of)
# FailedScheduling; the event's source.component is the scheduler's name. HAMi: its extender's filter
# (pkg/scheduler/event.go EventReasonFilteringFailed, recorded with EventSource{Component: --scheduler-name});
# KAI: its status updater (pkg/scheduler/cache/status_updater markTaskUnschedulable: v1.PodReasonUnschedulable,
# EventSource{Component: schedulerName}, the same message in the PodScheduled condition).
SCHEDULER_FAILURE_REASONS = {HAMI_SCHEDULER: "FilteringFailed", KAI_SCHEDULER: "Unschedulable"}
# Gang schedulers that write their refusal on the pod's PodGroup too (or only there): the reason on the
# PodGroup, by scheduler. KAI: status_updater markPodGroupUnschedulable (v2alpha2 PodGroupReasonUnschedulable);
# Volcano: cache RecordJobStatusEvent and the enqueue plugins' RecordPodGroupEvent (PodGroupUnschedulableType).
PODGROUP_FAILURE_REASONS = {KAI_SCHEDULER: "Unschedulable", VOLCANO_SCHEDULER: "Unschedulable"}
# Node autoscalers' events on a Pending pod, by the event's source.component: their reasons. They are not the
# pod's scheduler and never place it; they say whether a node will be added for it. Cluster Autoscaler:
# processors/status/eventing_scale_up_processor.go (NotTriggerScaleUp "pod didn't trigger scale-up: <n> <reason>,
# …", per node group; TriggeredScaleUp "pod triggered scale-up: [...]"). Karpenter: pkg/controllers/provisioning/
# scheduling/events.go, recorder "karpenter" (FailedScheduling "Failed to schedule pod, <error>", Nominated).
NODE_AUTOSCALER_EVENTS = {
    "cluster-autoscaler": ("Cluster Autoscaler", ("NotTriggerScaleUp", "TriggeredScaleUp")),
    "karpenter": ("Karpenter", ("FailedScheduling", "Nominated")),
}
# node annotation HAMi's device plugin writes with the node's GPUs; hami-scheduler reads only this, and a
# node without it is "unregistered" in hami-scheduler's FailedScheduling messages
HAMI_NODE_REGISTER_ANNOTATION = "hami.io/node-nvidia-register"

# -- namespaces ----------------------------------------------------------------------------------------
# "the namespace for objects created by the Kubernetes system" (kubernetes.io docs, Concepts > Namespaces,
# Initial namespaces)
SYSTEM_NAMESPACE = "kube-system"

# -- container states ----------------------------------------------------------------------------------
# the waiting reasons kubelet gives a container whose image it cannot pull: ErrImagePull, then
# ImagePullBackOff while it backs off before the next try (kubernetes.io docs, Concepts > Containers > Images,
# "ImagePullBackOff")
IMAGE_PULL_WAITS = frozenset({"ErrImagePull", "ImagePullBackOff"})
