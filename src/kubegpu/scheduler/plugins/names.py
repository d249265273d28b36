"""Plugin names, exactly as kube-scheduler spells them in profiles and messages."""

from typing import Final

NODE_UNSCHEDULABLE: Final = "NodeUnschedulable"
NODE_NAME: Final = "NodeName"
TAINT_TOLERATION: Final = "TaintToleration"
NODE_AFFINITY: Final = "NodeAffinity"
NODE_PORTS: Final = "NodePorts"
NODE_RESOURCES_FIT: Final = "NodeResourcesFit"
BALANCED_ALLOCATION: Final = "NodeResourcesBalancedAllocation"
DEFAULT_PREEMPTION: Final = "DefaultPreemption"
POD_TOPOLOGY_SPREAD: Final = "PodTopologySpread"
INTER_POD_AFFINITY: Final = "InterPodAffinity"
PRIORITY_SORT: Final = "PrioritySort"

# kubegpu's own plugins (not in kube-scheduler)
GPU_DEVICE_FIT: Final = "GpuDeviceFit"
CHECKPOINT_AWARE_PREEMPTION: Final = "CheckpointAwarePreemption"

# the storage plugins (their objects: ``Handle.volumes``) and ImageLocality
VOLUME_RESTRICTIONS: Final = "VolumeRestrictions"
NODE_VOLUME_LIMITS: Final = "NodeVolumeLimits"
VOLUME_BINDING: Final = "VolumeBinding"
VOLUME_ZONE: Final = "VolumeZone"
IMAGE_LOCALITY: Final = "ImageLocality"
