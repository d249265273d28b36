"""Ways a pod can reach GPUs the device plugin did not give it, and who is exempt (``kubegpu.admission.lint``).

Pure functions over one pod spec (and, for the exemptions, who asked: the AdmissionReview's ``userInfo``);
no I/O, no Kubernetes client. May import ``kubegpu.model`` only.

**GPU-bound pod**: one that can run on a GPU node or with GPUs: it requests a GPU, is in a namespace
labelled ``kubegpu.io/gpu-namespace=true``, tolerates the GPU taint, or is steered to GPU nodes (a
``nodeSelector`` or required node-affinity term on an ``nvidia.com/`` label, or ``nodeName`` of a node that
offers a GPU resource, or any ``nodeName`` while the nodes are unknown). GPU nodes are assumed tainted
``nvidia.com/gpu:NoSchedule`` (as the GPU Operator and the chart's docs set them up); on untainted GPU
nodes the toleration test is moot and only the other signs count.

**Exemptions** (configurable; chart ``webhook.exemptions``): the GPU Operator's operands and the
device plugin must be privileged, mount ``/``, ``/dev/char``, ``/run/nvidia/driver`` and set
``NVIDIA_VISIBLE_DEVICES=all``: that is their job. A pod is exempt from the GPU-access rules only when
the API server vouches for its origin, never on what the pod says about itself (a tenant can write any
``ownerReferences`` and any name):

* a **DaemonSet pod**: the request's ``userInfo.username`` is the DaemonSet controller
  (``system:serviceaccount:kube-system:daemon-set-controller``, or ``system:kube-controller-manager`` when
  the controller manager runs without ``--use-service-account-credentials``), the pod has a ``controller: true``
  ``apps/v1`` ``DaemonSet`` owner reference, its namespace is an exempt one, and its service account is
  one that namespace allows (an empty list: any);
* an **operand's own pod** (the operator validator's ``nvidia-cuda-validator`` pods): the requester is
  ``system:serviceaccount:<ns>:<sa>`` with ``<ns>`` exempt and ``<sa>`` allowed there, the pod runs as
  that same service account and has a ``controller: true`` owner reference (the ClusterPolicy the
  validator copies from its DaemonSet);
* a **DaemonSet object** in an exempt namespace whose template's service account is allowed there
  (writing into that namespace is what RBAC guards; its pods are checked again when created).

Any DaemonSet pod (first condition without the namespace), and any pod in kube-system, is exempt from
``toleration-without-gpu`` only (``model.gpu_toleration`` says why); they keep every other rule.

**GPU container** (``gpu_containers``): one that is given a GPU by an ask of its own, ``gpu_facts.asks_gpu``
read on the pod cut down to that container: its NVIDIA GPU or Volcano vGPU resources, or, for KAI's share
container alone, the pod's share annotations. Other schedulers' GPUs reach the container without a pod-spec
``NVIDIA_VISIBLE_DEVICES`` of kubegpu's device plugin: HAMi's and Volcano's device plugins answer Allocate with
it, and KAI's admission webhook points the share container's at a ConfigMap its binder fills (``kai_share``).
A share annotation is only a request, which KAI's webhook turns into that entry when the pod is created: a Pod
the webhooks see without it was not set up by KAI, and its share container, which the image's
``NVIDIA_VISIBLE_DEVICES=all`` would give every GPU, is no GPU container (``kai_set_up``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubegpu.model.gpu_facts import kai_annotations, requests_ask_gpu
from kubegpu.model.names import KAI_CONFIGMAP_ANNOTATION, KAI_SHARE_CONTAINER_ANNOTATION
from kubegpu.model.objects import Pod
from kubegpu.model.quantity import QuantityError, parse_quantity
from kubegpu.model.resources import is_gpu

# The DaemonSet controller as kube-controller-manager authenticates it: its own service account with
# --use-service-account-credentials (kubeadm, most distributions), else the manager's identity.
DAEMONSET_CONTROLLERS = frozenset(
    {"system:serviceaccount:kube-system:daemon-set-controller", "system:kube-controller-manager"}
)
VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
# nvidia-container-runtime-hook container_config.go getImexChannels: any value set is passed on as the IMEX
# channels to inject, whatever the device plugin allocated (IMEX channels are DRA-driver / compute-domain
# business), so it is a device selector set by hand like NVIDIA_VISIBLE_DEVICES.
IMEX_CHANNELS = "NVIDIA_IMEX_CHANNELS"
# internal/config/image/cuda_image.go DevicesFromEnvvars: "void", and a value that is set but empty (no
# device after splitting on ","), expose no GPU even in a legacy CUDA image; "none" is the documented
# "no GPU, driver only" value.
NO_GPU_NVIDIA_VALUES = frozenset({"", "none", "void"})
CONTAINER_KINDS = ("initContainers", "containers", "ephemeralContainers")
# Capabilities that lift the device cgroup or everything else (capabilities(7)): with CAP_SYS_ADMIN a
# container can remount cgroupfs and allow /dev/nvidia*; ALL includes it.
DANGEROUS_CAPABILITIES = frozenset({"SYS_ADMIN", "ALL"})
# The volume-mounts device-list strategy: the runtime reads the GPU list from mounts under here
# (k8s-device-plugin ``deviceListStrategy: volume-mounts``; nvidia-container-toolkit
# ``accept-nvidia-visible-devices-as-volume-mounts``); a host /dev/null mounted at .../all is every GPU.
DEVICE_LIST_DIRS = ("/var/run/nvidia-container-devices", "/run/nvidia-container-devices")
# Host paths that hold GPU device nodes or the driver; a hostPath at, under or above one exposes them.
DEVICE_DIRS = ("/dev/char", "/dev/dri", "/run/nvidia", "/var/run/nvidia", "/proc/driver/nvidia")
# Host paths through which a pod obtains devices past the device plugin, with what each one gives:
# CDI spec directories (cncf-tags/container-device-interface: /etc/cdi, /var/run/cdi; /run/cdi is the
# same directory where /var/run links to /run), the kubelet's device-plugin directory (its kubelet.sock
# registers a device plugin: a pod could advertise and hand out GPUs of its own), and the container runtime
# sockets (containerd, CRI-O, Docker, cri-dockerd: a client starts containers with any device and mount).
_CDI = "a CDI spec directory: a spec written there injects any device node into any container that names it"
_PLUGINS = (
    "the kubelet's device-plugin directory: its kubelet.sock registers a device plugin of the pod's own"
)
_RUNTIME = "a container runtime socket: a client of it starts containers with any device and any mount"
CONTROL_PATHS: Mapping[str, str] = {
    "/etc/cdi": _CDI, "/var/run/cdi": _CDI, "/run/cdi": _CDI,
    "/var/lib/kubelet/device-plugins": _PLUGINS,
    "/run/containerd": _RUNTIME, "/var/run/containerd": _RUNTIME, "/run/crio": _RUNTIME,
    "/var/run/crio": _RUNTIME, "/run/docker.sock": _RUNTIME, "/var/run/docker.sock": _RUNTIME,
    "/run/cri-dockerd.sock": _RUNTIME, "/var/run/cri-dockerd.sock": _RUNTIME,
}  # fmt: skip
# the one list the host-dev rule reads: a hostPath at, under or above any of these is denied
PROTECTED_DIRS = DEVICE_DIRS + tuple(CONTROL_PATHS)
GPU_LABEL_PREFIXES = ("nvidia.com/", "feature.node.kubernetes.io/pci-10de")

# The GPU Operator's operand service accounts (NVIDIA/gpu-operator assets/*/…daemonset.yaml, a22dbf6).
OPERATOR_SERVICE_ACCOUNTS = (
    "nvidia-driver", "nvidia-container-toolkit", "nvidia-device-plugin", "nvidia-dcgm-exporter",
    "nvidia-gpu-feature-discovery", "nvidia-mig-manager", "nvidia-operator-validator",
    "nvidia-node-status-exporter", "nvidia-mps-control-daemon", "nvidia-cc-manager", "nvidia-vfio-manager",
    "nvidia-vgpu-manager", "nvidia-vgpu-device-manager", "nvidia-sandbox-validator",
    "nvidia-sandbox-device-plugin", "nvidia-kata-manager", "nvidia-kata-sandbox-device-plugin",
)  # fmt: skip
DEFAULT_EXEMPT: Mapping[str, frozenset[str]] = {
    "gpu-operator": frozenset(OPERATOR_SERVICE_ACCOUNTS),
    "nvidia-device-plugin": frozenset(),  # the chart's service account name depends on the release
}


@dataclass(frozen=True)
class Requester:
    """Who sent the object, as the API server authenticated it (``request.userInfo.username``)."""

    username: str


@dataclass(frozen=True)
class Exemptions:
    """namespace -> service accounts whose DaemonSet pods skip the GPU-access rules (empty: any)."""

    namespaces: Mapping[str, frozenset[str]] = field(default_factory=lambda: dict(DEFAULT_EXEMPT))

    def allows(self, namespace: str, service_account: str) -> bool:
        if namespace not in self.namespaces:
            return False
        allowed = self.namespaces[namespace]
        return not allowed or service_account in allowed

    @staticmethod
    def parse(items: list[str]) -> Exemptions:
        """``NAMESPACE`` or ``NAMESPACE:SA,SA`` per item (the webhook's ``--exempt-daemonsets``)."""
        out: dict[str, frozenset[str]] = {}
        for item in items:
            ns, _, accounts = item.partition(":")
            out[ns.strip()] = frozenset(a.strip() for a in accounts.split(",") if a.strip())
        return Exemptions(out)


def _controller(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def service_account(spec: Mapping[str, Any]) -> str:
    return str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")


def is_daemonset_pod(kind: str, meta: Mapping[str, Any], requester: Requester | None) -> bool:
    """Created by the DaemonSet controller (the API server says so) for a DaemonSet it controls."""
    ref = _controller(meta)
    return (
        kind == "Pod"
        and requester is not None
        and requester.username in DAEMONSET_CONTROLLERS
        and ref is not None
        and ref.get("kind") == "DaemonSet"
        and ref.get("apiVersion") == "apps/v1"
    )


def is_exempt(
    kind: str,
    namespace: str,
    meta: Mapping[str, Any],
    spec: Mapping[str, Any],
    requester: Requester | None,
    exemptions: Exemptions,
) -> bool:
    """Skip the GPU-access rules for this object (the module docstring says when, and why it holds)."""
    sa = service_account(spec)
    if not exemptions.allows(namespace, sa):
        return False
    if kind == "DaemonSet":
        return True
    if kind != "Pod" or requester is None:
        return False
    if is_daemonset_pod(kind, meta, requester):
        return True
    return requester.username == f"system:serviceaccount:{namespace}:{sa}" and _controller(meta) is not None


def containers(spec: Mapping[str, Any], prefix: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every container kind with its field path: init, regular and ephemeral (``kubectl debug``)."""
    for key in CONTAINER_KINDS:
        items = spec.get(key)
        for i, c in enumerate(items if isinstance(items, list) else []):
            if isinstance(c, Mapping):
                yield f"{prefix}spec.{key}[{i}]", c


def kai_share_container(pod: Pod) -> tuple[str, int] | None:
    """(kind key, index) of the container a KAI share gives its GPU to; None without a share annotation, or
    when the annotation names no container (KAI's webhook refuses such a pod)."""
    if not kai_annotations(pod):
        return None
    name = pod.annotations.get(KAI_SHARE_CONTAINER_ANNOTATION)
    if name is None:
        return ("containers", 0) if pod.containers else None
    for key, items in (("initContainers", pod.init_containers), ("containers", pod.containers)):
        index = next((i for i, c in enumerate(items) if c.name == name), None)
        if index is not None:
            return key, index
    return None


def gpu_containers(pod: Pod, kai: bool) -> frozenset[tuple[str, int]]:
    """(kind key, index) of every GPU container (module docstring): ``gpu_facts.asks_gpu`` of the pod cut down
    to that one container, the share annotations kept for KAI's share container only, and only when ``kai``:
    KAI's webhook has set the share up (``kai_set_up``) or is still to see the pods (a workload's template, a
    manifest linted offline). Ephemeral containers ask no resources."""
    # a pod of that one container requests what the container does (objects._pod_requests), and the share
    # container is found only where the pod has share annotations (kai_share_container)
    share = kai_share_container(pod) if kai else None
    return frozenset(
        (key, i)
        for key, items in (("initContainers", pod.init_containers), ("containers", pod.containers))
        for i, c in enumerate(items)
        if share == (key, i) or requests_ask_gpu(c.requests)
    )


def kai_share(pod: Pod) -> tuple[str, int, str] | None:
    """(kind key, index, ConfigMap) of KAI's share: its container and the ConfigMap KAI's webhook points that
    container's NVIDIA_VISIBLE_DEVICES at (``KAI_CONFIGMAP_ANNOTATION``); None without a share or that annotation.
    Whether the entry is there is ``kai_set_up``'s question."""
    share = kai_share_container(pod)
    prefix = pod.annotations.get(KAI_CONFIGMAP_ANNOTATION)
    if share is None or not prefix:
        return None
    key, index = share
    return key, index, f"{prefix}-{'i' if key == 'initContainers' else ''}{index}"


def kai_set_up(pod: Pod, spec: Mapping[str, Any]) -> bool:
    """KAI's webhook has set up the pod's share: its share container in ``spec`` carries the entry it writes."""
    share = kai_share(pod)
    if share is None:
        return False
    key, index, configmap = share
    items = spec.get(key)
    container = items[index] if isinstance(items, list) and index < len(items) else None
    env = container.get("env") if isinstance(container, Mapping) else None
    return any(
        isinstance(e, Mapping) and e.get("name") == VISIBLE_DEVICES and kai_visible_devices(e, configmap)
        for e in (env if isinstance(env, list) else [])
    )


def kai_visible_devices(env: Mapping[str, Any], configmap: str) -> bool:
    """``env`` is the NVIDIA_VISIBLE_DEVICES entry KAI's webhook writes: no value, only a ``configMapKeyRef`` to
    key NVIDIA_VISIBLE_DEVICES of ``configmap``, not optional (a missing optional ConfigMap leaves the variable
    unset, and a CUDA image's ``=all`` would stand)."""
    source = env.get("valueFrom")
    ref = source.get("configMapKeyRef") if isinstance(source, Mapping) else None
    return (
        not env.get("value")
        and isinstance(source, Mapping)
        and list(source) == ["configMapKeyRef"]
        and isinstance(ref, Mapping)
        and ref.get("key") == VISIBLE_DEVICES
        and ref.get("name") == configmap
        and ref.get("optional") is not True
    )


def gpu_resources(container: Mapping[str, Any]) -> set[str]:
    """The GPU resources the container asks a non-zero amount of (limits or requests). ``nvidia.com/gpu: 0``
    is no request: the device plugin is never called for it, so the image's NVIDIA_VISIBLE_DEVICES stands
    (NVIDIA/k8s-device-plugin#61 "Requesting zero GPUs allocates all GPUs"). A quantity that does not parse
    is not a request here (the invalid-resources rule reports it)."""
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        return set()
    out = set()
    for key in ("limits", "requests"):
        listed = resources.get(key)
        for name, q in listed.items() if isinstance(listed, Mapping) else ():
            if not is_gpu(str(name)):
                continue
            try:
                if parse_quantity(q) > 0:
                    out.add(str(name))
            except QuantityError:
                continue
    return out


def normal_path(path: str) -> str:
    """The path the kubelet mounts: ``/dev/./nvidia0``, ``/dev//nvidia0``, ``/./dev`` and ``/dev/`` all
    name ``/dev`` or ``/dev/nvidia0`` (``..`` is resolved lexically; the kubelet rejects it anyway)."""
    normal = posixpath.normpath("/" + path.strip())
    return "/" + normal.lstrip("/")


def _at_under_or_above(p: str, d: str) -> bool:
    return p == d or p.startswith(d + "/") or d.startswith(p.rstrip("/") + "/")


def exposes_gpus(path: str) -> bool:
    """A host path at, under or above a GPU device node, the driver, or a ``CONTROL_PATHS`` entry (``/`` is
    above everything)."""
    p = normal_path(path)
    if p.startswith("/dev/nvidia") or p.startswith("/var/run/nvidia") or p.startswith("/run/nvidia"):
        return True
    return any(_at_under_or_above(p, d) for d in PROTECTED_DIRS) or (p in ("/", "/dev"))


def control_path(path: str) -> str:
    """What a host path at or under a ``CONTROL_PATHS`` entry gives a pod ("" for any other path: a device
    or driver path, or a directory above one, which the device-node message covers)."""
    p = normal_path(path)
    return next((why for d, why in CONTROL_PATHS.items() if p == d or p.startswith(d + "/")), "")


def under_device_list(mount_path: str) -> bool:
    p = normal_path(mount_path)
    return any(p == d or p.startswith(d + "/") for d in DEVICE_LIST_DIRS)


def capability_name(cap: object) -> str:
    """``sys_admin``, ``CAP_SYS_ADMIN`` and ``SYS_ADMIN`` are one capability to the runtime."""
    name = str(cap).strip().upper()
    return name[4:] if name.startswith("CAP_") else name


def steered_to_gpu_nodes(
    spec: Mapping[str, Any], gpu_nodes: frozenset[str] | None, match_fields: bool = True
) -> bool:
    """A nodeSelector / required affinity on a GPU label, or a nodeName that is (or may be) a GPU node."""
    node_name = spec.get("nodeName")
    if isinstance(node_name, str) and node_name and (gpu_nodes is None or node_name in gpu_nodes):
        return True
    selector = spec.get("nodeSelector")
    if isinstance(selector, Mapping) and any(str(k).startswith(GPU_LABEL_PREFIXES) for k in selector):
        return True
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for expr in (term or {}).get("matchExpressions") or []:
            if (
                str((expr or {}).get("key", "")).startswith(GPU_LABEL_PREFIXES)
                and expr.get("operator") != "NotIn"
            ):
                return True
        for expr in (term or {}).get("matchFields") or [] if match_fields else []:
            if (expr or {}).get("key") == "metadata.name" and expr.get("operator") == "In":
                names = {str(v) for v in expr.get("values") or []}
                if gpu_nodes is None or names & gpu_nodes:
                    return True
    return False


def host_path_mounts(spec: Mapping[str, Any], prefix: str) -> Iterator[tuple[str, str]]:
    """(field, effective host path) of every hostPath volume, and of every subPath mount into one."""
    volumes = spec.get("volumes")
    hosts: dict[str, str] = {}
    for i, volume in enumerate(volumes if isinstance(volumes, list) else []):
        source = volume.get("hostPath") if isinstance(volume, Mapping) else None
        host = source.get("path") if isinstance(source, Mapping) else None
        if isinstance(host, str):
            hosts[str(volume.get("name"))] = host
            yield f"{prefix}spec.volumes[{i}].hostPath.path", host
    for path, c in containers(spec, prefix):
        for j, mount in enumerate(c.get("volumeMounts") or []):
            if isinstance(mount, Mapping) and str(mount.get("name")) in hosts and mount.get("subPath"):
                joined = hosts[str(mount.get("name"))].rstrip("/") + "/" + str(mount.get("subPath"))
                yield f"{path}.volumeMounts[{j}].subPath", joined
