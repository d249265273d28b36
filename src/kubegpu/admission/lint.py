"""GPU admission rules for Pods and pod templates: what ``kubegpu webhook`` denies and ``kubegpu lint`` reports.

One function, ``lint_object``, decides; the webhook (AdmissionReview over HTTPS) and the offline linter
(manifests on disk, exit code for CI) only differ in where objects and namespace labels come from.
Each rule names the field, says what goes wrong and how to fix it:

* GPU access (R6.1, R12; ``kubegpu.admission.gpu_access`` says which pods they apply to and who is exempt):
  ``privileged``, ``capabilities`` (SYS_ADMIN / ALL), ``host-dev`` (normalised hostPaths at, under or
  above GPU device nodes, the driver, CDI spec directories, the kubelet's device-plugin directory and
  runtime sockets, subPath included), ``host-namespaces``, ``device-list-mount``, ``cdi-annotation``,
  ``visible-devices`` (``NVIDIA_VISIBLE_DEVICES`` / ``NVIDIA_IMEX_CHANNELS`` by hand or through ``envFrom``,
  but for the ``configMapKeyRef`` KAI's webhook gives a share's container, ``gpu_access.kai_share``; warnings:
  ``envFrom`` with unknown keys on a GPU container, ``CUDA_VISIBLE_DEVICES`` without a GPU),
  ``image-visible-devices`` (a container that is not a GPU container, ``gpu_access.gpu_containers``, next to
  GPUs, or in a DaemonSet tolerating the GPU taint, that does not set ``NVIDIA_VISIBLE_DEVICES``: CUDA images set
  ``=all``), and
  ``allocation-annotation`` (only the scheduler records allocated devices); every container kind, init,
  regular and ephemeral;
* ``invalid-resources`` (R4.1): fractional or unequal GPU requests/limits (and any other resource error
  the API server's validation finds), with its own messages (``kubegpu.admission.validation``:
  ``Invalid value: "500m": must be an integer`` …);
* ``unknown-resource`` (R11.4): a GPU resource name no node offers (only when the nodes are known);
* ``pool-sharing-mode`` (R7.3): a pod that targets a pool (``accelerator.example.com/pool`` in its
  nodeSelector or a required ``In`` affinity term) asks for a GPU resource other nodes offer but that
  pool's do not — one sharing mode per pool (``nvidia.com/gpu.sharing-strategy`` is shown);
* ``toleration-without-gpu`` (R5.3, R17.4): tolerating the GPU taint without asking a GPU (``gpu_facts.asks_gpu``:
  a GPU resource, a KAI share annotation or Volcano vGPU resources; DaemonSets and kube-system excepted:
  ``model.gpu_toleration``, the rule ``diagnose`` reads too).
* ``dra-admin-access``: ``adminAccess`` in a ResourceClaim / ResourceClaimTemplate outside a namespace
  labelled for it (``kubegpu.admission.dra``); a container using a claim counts as requesting a GPU;
* ``dra-quota`` (warning, where the namespace's ResourceQuotas are known): a ResourceClaim / ResourceClaimTemplate
  whose device class no quota counts while the namespace bounds a GPU resource (``dra.quota_gaps``);
* ``invalid``: a field the rules read as an object that is not one (``kubegpu.admission.shape``).

A **GPU namespace** is one labelled ``kubegpu.io/gpu-namespace=true``; when namespace labels are
unknown, or the namespace is not labelled, a pod that itself asks a GPU (``gpu_facts.asks_gpu``, or a claim)
counts as being in one. A
namespace labelled ``kubegpu.io/admission=disabled`` opts out of every rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubegpu.admission.dra import (
    CLAIM_SPEC_PATHS,
    NamespaceQuotas,
    admin_access_violations,
    quota_gaps,
    references_claims,
)
from kubegpu.admission.gpu_access import (
    DANGEROUS_CAPABILITIES,
    IMEX_CHANNELS,
    NO_GPU_NVIDIA_VALUES,
    VISIBLE_DEVICES,
    Exemptions,
    Requester,
    capability_name,
    containers,
    control_path,
    exposes_gpus,
    gpu_containers,
    host_path_mounts,
    is_daemonset_pod,
    is_exempt,
    kai_set_up,
    kai_share,
    kai_visible_devices,
    steered_to_gpu_nodes,
    under_device_list,
)
from kubegpu.admission.shape import mapping, template_shape
from kubegpu.admission.validation import OUT_OF_RANGE, validate_pod_resources
from kubegpu.errors import InputError
from kubegpu.model.gpu_facts import DEFAULT_POOL_LABEL, asks_gpu, tolerates_gpu_taint
from kubegpu.model.gpu_toleration import tolerates_without_gpu
from kubegpu.model.names import ALLOCATION_ANNOTATION as ALLOCATION_ANNOTATION
from kubegpu.model.parse import parse_pod
from kubegpu.model.resources import is_gpu

OPT_OUT_LABEL = "kubegpu.io/admission"
OPT_OUT_VALUE = "disabled"
GPU_NAMESPACE_LABEL = "kubegpu.io/gpu-namespace"
HIDING_CUDA_VALUES = frozenset({"", "-1"})
HOST_DEV_WHY = (
    "mounting /dev or /dev/nvidia* (or /dev/char, /run/nvidia, or a directory above one) exposes GPUs the pod "
    "was not allocated. Fix: remove the volume; the device plugin injects the allocated devices."
)
CDI_ANNOTATION = (
    "cdi.k8s.io/"  # container-device-interface annotations: cdi.k8s.io/<name>, <vendor>.cdi.k8s.io/…
)
SHARING_LABEL = "nvidia.com/gpu.sharing-strategy"  # GFD: none / time-slicing / mps

# Where each workload kind keeps its pod template (the field path prefix of every violation).
TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "Deployment": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "PodTemplate": ("template",),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}


@dataclass(frozen=True, slots=True)
class Violation:
    rule: str
    field: str
    message: str  # what is wrong and the fix
    # a risk the rules cannot confirm from the object alone: the webhook answers it as an AdmissionReview
    # ``warnings`` entry and allows; ``kubegpu lint`` prints it and it does not change the exit status
    warning: bool = False

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


@dataclass(frozen=True)
class NodeFacts:
    """What the rules need of one node: its labels and the resource names in its capacity."""

    labels: Mapping[str, str]
    resources: frozenset[str]
    name: str = ""


@dataclass(frozen=True)
class LintContext:
    """What the rules may know beyond the object: namespace labels and nodes (None: unknown, and the
    ``unknown-resource`` and ``pool-sharing-mode`` rules are skipped)."""

    namespace_labels: Mapping[str, Mapping[str, str]] | None = None
    nodes: tuple[NodeFacts, ...] | None = None
    requester: Requester | None = None  # None offline: no exemption by origin can be verified
    exemptions: Exemptions = field(default_factory=Exemptions)
    scheduler_user: str = ""  # the one user that may set the allocation annotation
    # (namespace, ConfigMap|Secret, name) -> its keys, for envFrom; None: unknown (the webhook reads none)
    env_sources: Mapping[tuple[str, str, str], frozenset[str]] | None = None
    old_annotations: Mapping[str, str] | None = None  # an UPDATE's stored object's annotations
    # namespace -> what its ResourceQuotas bound (``dra.namespace_quotas``); None: unknown, ``dra-quota`` off
    quotas: Mapping[str, NamespaceQuotas] | None = None

    @property
    def gpu_nodes(self) -> frozenset[str] | None:
        if self.nodes is None:
            return None
        return frozenset(n.name for n in self.nodes if any(is_gpu(r) for r in n.resources))

    @property
    def offered_resources(self) -> frozenset[str] | None:
        return None if self.nodes is None else frozenset().union(*(n.resources for n in self.nodes))


def is_linted_kind(kind: str) -> bool:
    return kind == "Pod" or kind in TEMPLATE_PATHS


# a field that must be an object (or list) and is not: the API server's decoder refuses the object; lint
# exits 2 for it (unreadable input), as for a file it cannot parse
UNREADABLE_RULE = "invalid"
# the rules that report an object the API server itself would refuse (its validation, or unreadable fields)
INVALID_RULES = frozenset({"invalid-resources", UNREADABLE_RULE})


def allocation_violations(prefix: str, annotations: Mapping[str, Any], ctx: LintContext) -> list[Violation]:
    """The device-assignment annotation, set or changed by anyone but kubegpu's scheduler: on a Pod (CREATE,
    UPDATE) and on a Binding (``pods/binding``: the API server copies a Binding's annotations onto the pod,
    pkg/registry/core/pod/storage ``setPodNodeAndMetadata``)."""
    if ALLOCATION_ANNOTATION not in annotations or (
        ctx.requester is not None and ctx.requester.username == ctx.scheduler_user
    ):
        return []
    if (ctx.old_annotations or {}).get(ALLOCATION_ANNOTATION) == annotations[ALLOCATION_ANNOTATION]:
        return []  # unchanged by this update
    who = "a manifest" if ctx.requester is None else f"user {ctx.requester.username!r}"
    return [Violation(
        "allocation-annotation", f"{prefix}metadata.annotations[{ALLOCATION_ANNOTATION}]",
        f"{ALLOCATION_ANNOTATION} is set by {who}: only kubegpu's scheduler "
        f"({ctx.scheduler_user or 'its service account'}) records which devices a pod got, and the node "
        "agent hands those devices over. Fix: remove the annotation.",
    )]  # fmt: skip


def lint_object(obj: Mapping[str, Any], ctx: LintContext) -> list[Violation]:
    """The violations of one Pod or workload, and of a Binding the allocation annotation (other kinds have
    none)."""
    kind = str(obj.get("kind") or "")
    if kind == "Binding":
        meta = obj.get("metadata")
        annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
        return allocation_violations("", annotations if isinstance(annotations, Mapping) else {}, ctx)
    if kind not in CLAIM_SPEC_PATHS and not is_linted_kind(kind):
        return []
    # every rule below reads these as objects: a string or list there is reported, never read
    shape = template_shape(obj, TEMPLATE_PATHS.get(kind, ()))
    if shape:
        return [Violation(UNREADABLE_RULE, f, problem) for f, problem in shape]
    meta = mapping(obj.get("metadata"))
    namespace = str(meta.get("namespace") or "default")
    labels = mapping(mapping(ctx.namespace_labels).get(namespace))
    if labels.get(OPT_OUT_LABEL) == OPT_OUT_VALUE:
        return []
    if kind in CLAIM_SPEC_PATHS:
        gaps = quota_gaps(kind, obj, mapping(ctx.quotas).get(namespace))
        return [
            Violation("dra-admin-access", f, m) for f, m in admin_access_violations(kind, obj, labels)
        ] + [Violation("dra-quota", f, m, warning=True) for f, m in gaps]
    prefix = ""
    template: Mapping[str, Any] = obj
    for key in TEMPLATE_PATHS.get(kind, ()):
        template = mapping(template.get(key))
        prefix += f"{key}."
    spec: Mapping[str, Any] = mapping(template.get("spec"))
    pod_raw: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            **mapping(template.get("metadata")),
            # a validating webhook sees the generated name; a mutating one, or a manifest, may have only generateName
            "name": str(meta.get("name") or meta.get("generateName") or ""),
            "namespace": namespace,
        },
        "spec": spec,
    }
    # The API server's own resource validation, messages and all (it rejects these pods anyway; offline
    # lint catches them before they reach it, and a webhook behind a lenient API server still does).
    errors = validate_pod_resources(pod_raw)
    out = [Violation("invalid-resources", prefix + e.field, str(e)[len(e.field) + 2 :]) for e in errors]
    if any(e.detail == OUT_OF_RANGE for e in errors):
        return out  # parsing the pod would do exact arithmetic on a quantity too large to bound
    try:
        pod = parse_pod(pod_raw, validate_resources=not errors)  # errors: reported above, once
    except InputError as exc:
        return [*out, Violation("invalid", prefix + exc.field, exc.problem)]
    gpus = sorted(r for r, v in pod.requests.items() if v and is_gpu(r))
    # DRA: a container using a ResourceClaim gets its devices from the claim (kubegpu.admission.dra)
    claims = any(references_claims(c) for _, c in containers(spec, prefix))
    # the rule explain's finding and note read (gpu_facts.asks_gpu: a KAI share or a Volcano vGPU pod asks its GPU
    # without nvidia.com/gpu), with the claims read from the containers
    asks = asks_gpu(pod) or claims
    gpu_namespace = labels.get(GPU_NAMESPACE_LABEL) == "true" or asks
    daemonset_pod = is_daemonset_pod(kind, meta, ctx.requester)
    if is_exempt(kind, namespace, meta, spec, ctx.requester, ctx.exemptions):
        return out
    tolerates = tolerates_gpu_taint(pod)
    # a DaemonSet pod's matchFields name its node: where it lands is decided by its tolerations; and a
    # DaemonSet runs a pod on every node whose taints it tolerates, so tolerating the GPU taint steers it
    # to every GPU node
    daemonset = kind == "DaemonSet" or daemonset_pod
    steered = (
        gpu_namespace
        or steered_to_gpu_nodes(spec, ctx.gpu_nodes, match_fields=not daemonset_pod)
        or (daemonset and tolerates)
    )
    share = kai_share(pod)
    kai_pending = kind != "Pod" or ctx.requester is None
    scope = Scope(
        namespace, asks, gpu_namespace, steered, steered or tolerates,
        # a Pod the webhook sees has met KAI's webhook already; a template's pods and a manifest have not
        frozenset(f"{prefix}spec.{k}[{i}]" for k, i in gpu_containers(pod, kai_pending or kai_set_up(pod, spec))),
        None if share is None else (f"{prefix}spec.{share[0]}[{share[1]}]", share[2]),
    )  # fmt: skip
    out.extend(access_violations(prefix, template, spec, scope, ctx))
    offered_anywhere = ctx.offered_resources
    if ctx.nodes is not None and offered_anywhere is not None:
        out.extend(_pool_violations(prefix, spec, gpus, ctx.nodes, offered_anywhere))
    if offered_anywhere is not None:
        for path, c in containers(spec, prefix):
            resources = c.get("resources") or {}
            names = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
            for r in sorted(names):
                if r.startswith("nvidia.com/") and r not in offered_anywhere:
                    offered = ", ".join(sorted(x for x in offered_anywhere if is_gpu(x))) or "none"
                    out.append(Violation(
                        "unknown-resource", f"{path}.resources",
                        f"{r} is not offered by any node (GPU resources offered: {offered}); the name must match "
                        "Node status.capacity exactly or the pod stays Pending. Fix: use an offered name.",
                    ))  # fmt: skip
    # the rule explain's finding and note and plan's pitfall read; ``asks`` is what ``gpu_containers`` cuts down
    # to each container (with every share annotation kept: a KAI share the webhook has not set up is still an ask)
    if tolerates_without_gpu(tolerates=tolerates, given_gpu=asks, namespace=namespace, daemonset=daemonset):
        out.append(Violation(
            "toleration-without-gpu", f"{prefix}spec.tolerations",
            "tolerates the GPU taint but requests no GPU: a toleration only allows, it neither attracts nor allocates, "
            "and the pod takes GPU nodes' CPU and memory. Fix: request nvidia.com/gpu, or drop the toleration.",
        ))  # fmt: skip
    return out


def _pool_violations(
    prefix: str,
    spec: Mapping[str, Any],
    gpus: list[str],
    nodes: tuple[NodeFacts, ...],
    offered: frozenset[str],
) -> list[Violation]:
    """R7.3: a pool runs one GPU sharing mode, so a pod that targets a pool (``nodeSelector`` or a required
    ``In`` term on the pool label) must ask for a GPU resource that pool's nodes offer."""
    out = []
    for pool in sorted(_targeted_pools(spec)):
        members = [n for n in nodes if n.labels.get(DEFAULT_POOL_LABEL) == pool]
        if not members:
            continue
        in_pool = frozenset().union(*(n.resources for n in members))
        for r in gpus:
            if r in offered and r not in in_pool:  # offered nowhere is the unknown-resource rule's
                modes = sorted({n.labels.get(SHARING_LABEL, "unlabelled") for n in members})
                there = ", ".join(sorted(x for x in in_pool if is_gpu(x))) or "no GPU resource"
                out.append(Violation(
                    "pool-sharing-mode", f"{prefix}spec.nodeSelector",
                    f"{r} is not offered in pool {pool!r} (sharing strategy: {', '.join(modes)}; it offers {there}): "
                    "each pool runs one GPU sharing mode. Fix: request what the pool offers, or target a "
                    f"pool that offers {r}.",
                ))  # fmt: skip
    return out


def _targeted_pools(spec: Mapping[str, Any]) -> set[str]:
    selector = (spec.get("nodeSelector") or {}).get(DEFAULT_POOL_LABEL)
    if isinstance(selector, str):
        return {selector}
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    pools: set[str] = set()
    for term in required.get("nodeSelectorTerms") or []:
        for expr in term.get("matchExpressions") or []:
            if expr.get("key") == DEFAULT_POOL_LABEL and expr.get("operator") == "In":
                pools.update(str(v) for v in expr.get("values") or [])
    return pools


def _is_device_path(path: str) -> bool:
    normal = "/" + path.strip("/")
    return normal == "/dev" or normal.startswith("/dev/nvidia")


def namespace_labels(objects: list[tuple[str, Mapping[str, Any]]]) -> dict[str, Mapping[str, str]]:
    """Labels of the Namespace objects among ``objects``."""
    return {
        str(mapping(o.get("metadata")).get("name")): dict(mapping(mapping(o.get("metadata")).get("labels")))
        for _, o in objects
        if o.get("kind") == "Namespace"
    }


def node_facts(objects: list[tuple[str, Mapping[str, Any]]]) -> tuple[NodeFacts, ...] | None:
    """Labels and capacity names of the Node objects among ``objects`` (None when there are none)."""
    nodes = [o for _, o in objects if o.get("kind") == "Node"]
    if not nodes:
        return None
    return tuple(facts_of(n) for n in nodes)


def facts_of(node: Mapping[str, Any]) -> NodeFacts:
    meta = mapping(node.get("metadata"))
    return NodeFacts(
        labels=dict(mapping(meta.get("labels"))),
        resources=frozenset(mapping(mapping(node.get("status")).get("capacity"))),
        name=str(meta.get("name") or ""),
    )


@dataclass(frozen=True)
class Scope:
    """Where a pod can get at GPUs, which decides the rules that apply to it."""

    namespace: str
    asks: bool  # asks a GPU (gpu_facts.asks_gpu), or a container uses a ResourceClaim (DRA)
    gpu_namespace: bool  # asks a GPU or is in a namespace labelled a GPU namespace
    steered: bool  # that, or a nodeSelector / affinity / nodeName that picks GPU nodes
    gpu_bound: bool  # that, or it tolerates the GPU taint: it can run on GPU nodes
    # field paths of the GPU containers (gpu_access.gpu_containers)
    gpu_containers: frozenset[str] = frozenset()
    # (field path of KAI's share container, the ConfigMap its NVIDIA_VISIBLE_DEVICES is read from): gpu_access.kai_share
    kai_share: tuple[str, str] | None = None

    @property
    def where(self) -> str:
        if self.gpu_namespace:
            return f'GPU namespace "{self.namespace}"'
        return "a pod that can run on GPU nodes (it tolerates the GPU taint or is steered to GPU nodes)"


def access_violations(
    prefix: str, template: Mapping[str, Any], spec: Mapping[str, Any], scope: Scope, ctx: LintContext
) -> list[Violation]:
    """Every way the pod could reach a GPU the device plugin did not allocate (``gpu_access``)."""
    out: list[Violation] = []
    where = scope.where
    fix_gpu = "Fix: request nvidia.com/gpu in resources.limits and let the device plugin inject the devices."
    annotations = mapping(mapping(template.get("metadata")).get("annotations"))
    for key in sorted(k for k in annotations if CDI_ANNOTATION in str(k)):
        out.append(Violation(
            "cdi-annotation", f"{prefix}metadata.annotations[{key}]",
            f"CDI annotation {key}={annotations[key]!r} asks the runtime for devices directly, past the device "
            f"plugin's allocation. {fix_gpu}",
        ))  # fmt: skip
    out.extend(allocation_violations(prefix, annotations, ctx))
    if scope.gpu_bound:  # like privileged: wherever it can land on a GPU node, not only in GPU namespaces
        for flag in ("hostPID", "hostIPC"):
            if spec.get(flag) is True:
                out.append(Violation(
                    "host-namespaces", f"{prefix}spec.{flag}",
                    f"{flag} is not allowed in {where}: it shares the node's process or IPC namespace, and other "
                    "pods' GPU processes and CUDA IPC handles become reachable. Fix: drop it.",
                ))  # fmt: skip
    for path, c in containers(spec, prefix):
        out.extend(_container_violations(path, c, scope, ctx))
    if scope.gpu_bound:
        for field_, host in host_path_mounts(spec, prefix):
            if exposes_gpus(host):
                control = control_path(host)
                why = f"it is {control}. Fix: remove the volume." if control else HOST_DEV_WHY
                out.append(
                    Violation("host-dev", field_, f'hostPath "{host}" is not allowed in {where}: {why}')
                )
    return out


def _container_violations(path: str, c: Mapping[str, Any], scope: Scope, ctx: LintContext) -> list[Violation]:
    out: list[Violation] = []
    where = scope.where
    security = c.get("securityContext") or {}
    if scope.gpu_bound and security.get("privileged") is True:
        out.append(Violation(
            "privileged", f"{path}.securityContext.privileged",
            f"privileged containers are not allowed in {where}: they see every GPU on the node and bypass "
            "the device plugin's allocation. Fix: drop privileged and request nvidia.com/gpu in "
            "resources.limits.",
        ))  # fmt: skip
    added = (security.get("capabilities") or {}).get("add") or []
    bad = sorted({capability_name(cap) for cap in added} & DANGEROUS_CAPABILITIES)
    if scope.gpu_bound and bad:
        out.append(Violation(
            "capabilities", f"{path}.securityContext.capabilities.add",
            f"capability {', '.join(bad)} is not allowed in {where}: it lifts the device cgroup that keeps other "
            "GPUs out. Fix: drop it.",
        ))  # fmt: skip
    for j, mount in enumerate(c.get("volumeMounts") or []):
        if isinstance(mount, Mapping) and under_device_list(str(mount.get("mountPath") or "")):
            out.append(Violation(
                "device-list-mount", f"{path}.volumeMounts[{j}].mountPath",
                f"mountPath {mount.get('mountPath')!r} is where the NVIDIA runtime reads the device list of the "
                "volume-mounts strategy: a mount there picks GPUs past the device plugin. Fix: remove the mount.",
            ))  # fmt: skip
    env = [e for e in c.get("env") or [] if isinstance(e, Mapping)]
    explicit = {str(e.get("name")): e for e in env}
    for j, e in enumerate(env):
        name, value = e.get("name"), e.get("value")
        shown = f'"{value}"' if isinstance(value, str) else "a valueFrom reference"
        # KAI's webhook points its share container's at the ConfigMap its binder fills with the reserved GPU
        kai = (
            scope.kai_share is not None
            and scope.kai_share[0] == path
            and kai_visible_devices(e, scope.kai_share[1])
        )
        if name == VISIBLE_DEVICES and value not in NO_GPU_NVIDIA_VALUES and not kai:
            out.append(Violation(
                "visible-devices", f"{path}.env[{j}]",
                f"NVIDIA_VISIBLE_DEVICES is set by hand to {shown}: the device plugin sets it to the devices it "
                "allocated, and a manual value exposes other GPUs (NVIDIA device-plugin issues #87, #1605). "
                "Fix: remove it and request nvidia.com/gpu in resources.limits.",
            ))  # fmt: skip
        elif (
            name == IMEX_CHANNELS and value not in NO_GPU_NVIDIA_VALUES
        ):  # (VISIBLE_DEVICES: the branch above)
            out.append(Violation(
                "visible-devices", f"{path}.env[{j}]",
                f"{name} is set by hand to {shown}: the NVIDIA runtime hook injects the IMEX channels it names "
                "whatever was allocated (nvidia-container-toolkit getImexChannels); channels come from the "
                "allocation (the DRA driver's compute domains). Fix: remove it.",
            ))  # fmt: skip
        elif name == "CUDA_VISIBLE_DEVICES" and not scope.asks and value not in HIDING_CUDA_VALUES:
            # CUDA only narrows what the runtime exposed: on a pod without a GPU it selects nothing
            out.append(Violation(
                "visible-devices", f"{path}.env[{j}]",
                f"CUDA_VISIBLE_DEVICES is set to {shown} but the pod requests no GPU, so it gets none (CUDA only "
                "picks among the GPUs the runtime exposed). Fix: request nvidia.com/gpu in resources.limits and "
                "leave device selection to the device plugin.",
                warning=True,
            ))  # fmt: skip
    own_gpu = path in scope.gpu_containers or references_claims(c)
    if VISIBLE_DEVICES not in explicit:  # an explicit env entry takes precedence over envFrom
        out.extend(_env_from_violations(path, c, scope, ctx, own_gpu))
    if scope.steered and not own_gpu and VISIBLE_DEVICES not in explicit:
        out.append(Violation(
            "image-visible-devices", f"{path}.env",
            f"this container requests no GPU but runs in {where}, and CUDA images set NVIDIA_VISIBLE_DEVICES=all "
            "in their image env: the NVIDIA runtime would then expose every GPU of the node. Fix: set env "
            "NVIDIA_VISIBLE_DEVICES=void (kubectl debug --env NVIDIA_VISIBLE_DEVICES=void), request a GPU, or "
            "enable the chart's mutating webhook, which sets it.",
        ))  # fmt: skip
    return out


def _env_from_violations(
    path: str, c: Mapping[str, Any], scope: Scope, ctx: LintContext, own_gpu: bool
) -> list[Violation]:
    """``envFrom`` yields ``prefix + key`` for each key of a ConfigMap or Secret: NVIDIA_VISIBLE_DEVICES when
    the prefix is a prefix of it and the source has the rest as a key.

    The kubelet appends the container's env (envFrom, then env) after the device plugin's Allocate envs
    (GenerateRunContainerOptions), and the runtime keeps the last value: such a key overrides even a GPU
    container's allocation. So ``void`` is advised only to a container without a GPU (it would remove a GPU
    container's own devices), and for a GPU container whose source's keys are unknown, with no chosen
    prefix, the risk is a warning: most GPU jobs take their settings through envFrom."""
    out: list[Violation] = []
    namespace = scope.namespace
    for j, source in enumerate(c.get("envFrom") or []):
        if not isinstance(source, Mapping):
            continue
        prefix = str(source.get("prefix") or "")
        if not VISIBLE_DEVICES.startswith(prefix):
            continue
        key = VISIBLE_DEVICES[len(prefix) :]
        for kind, ref_key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            ref = source.get(ref_key)
            if not isinstance(ref, Mapping):
                continue
            name = str(ref.get("name") or "")
            keys = None if ctx.env_sources is None else ctx.env_sources.get((namespace, kind, name))
            if keys is not None and key not in keys:
                continue
            if keys is None and not prefix and not scope.gpu_bound:
                continue  # cannot reach a GPU node; only a chosen prefix is denied everywhere
            fix = (
                f"Fix: list the variables in env (valueFrom configMapKeyRef / secretKeyRef), or keep "
                f"NVIDIA_VISIBLE_DEVICES out of {kind} {name!r}; the device plugin sets it to this container's GPUs."
                if own_gpu
                else "Fix: list the variables in env (valueFrom configMapKeyRef / secretKeyRef), or set env "
                "NVIDIA_VISIBLE_DEVICES=void, which takes precedence."
            )
            known = (
                f"{kind} {name!r} has the key {key!r}"
                if keys is not None
                else (
                    f"the keys of {kind} {name!r} are not known here (the webhook reads no ConfigMaps or Secrets; kubegpu lint knows those among its files)"
                )
            )
            out.append(Violation(
                "visible-devices", f"{path}.envFrom[{j}]",
                f"envFrom with prefix {prefix!r} can set NVIDIA_VISIBLE_DEVICES: {known}. {fix}",
                warning=own_gpu and keys is None and not prefix,
            ))  # fmt: skip
    return out


def env_sources(objects: list[tuple[str, Mapping[str, Any]]]) -> dict[tuple[str, str, str], frozenset[str]]:
    """The keys of the ConfigMaps and Secrets among ``objects``, for ``envFrom`` (others stay unknown)."""
    out: dict[tuple[str, str, str], frozenset[str]] = {}
    for _, o in objects:
        kind = o.get("kind")
        if kind in ("ConfigMap", "Secret"):
            meta = mapping(o.get("metadata"))
            keys = {str(k) for part in ("data", "stringData", "binaryData") for k in mapping(o.get(part))}
            out[(str(meta.get("namespace") or "default"), str(kind), str(meta.get("name")))] = frozenset(keys)
    return out
