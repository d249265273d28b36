"""GPU pod mutations for ``kubegpu webhook``'s ``/mutate``: what a GPU platform sets so users need not.

Each mutation is an RFC 6902 JSON Patch on the pod spec of a Pod, or of a workload's pod template
(Deployment, ReplicaSet, StatefulSet, DaemonSet, ReplicationController, Job: ``spec.template``; CronJob:
``spec.jobTemplate.spec.template``), and each can be switched off (``MutationOptions``):

* ``gpu-toleration``: kube-apiserver's ExtendedResourceToleration admission plugin, for GPU resources: a
  pod whose containers or init containers request (or limit) a GPU resource gets, per resource name in
  sorted order, the toleration ``{key: <resource>, operator: Exists, effect: NoSchedule}`` unless one
  with the same key, operator, value and effect is there (upstream's ``MatchToleration``). GPU nodes
  tainted ``nvidia.com/gpu:NoSchedule`` then take GPU pods and repel the rest (R5.3), without every
  manifest carrying the toleration.
* ``scheduler-name``: GPU pods in namespaces labelled ``kubegpu.io/scheduler=enabled`` go to kubegpu's
  scheduler: ``spec.schedulerName`` is set when it is empty or ``default-scheduler`` (a pod that names
  another scheduler keeps it). Needs the namespace labels (the webhook's API access).
* ``visible-devices``: in a GPU namespace (labelled ``kubegpu.io/gpu-namespace=true``, or any namespace
  for a pod that asks a GPU, ``gpu_facts.asks_gpu``), every container that is not a GPU container
  (``gpu_access.gpu_containers``: its own GPU or Volcano vGPU resources, or a KAI share's container), uses no
  ResourceClaim and sets no ``NVIDIA_VISIBLE_DEVICES`` gets ``NVIDIA_VISIBLE_DEVICES=void``. CUDA images set
  ``=all`` in their ENV, and with the NVIDIA container runtime that exposes every GPU of the node to a container
  the device plugin gave none; ``void`` makes the runtime behave as runc (neither GPUs nor driver
  capabilities), unlike ``none`` (no GPU, driver libraries still mounted). A value set by hand is left
  to the validating rule ``visible-devices``.

What an operation may change (``mutable_parts``), so that no patch is one the API server then rejects:

* CREATE: everything.
* Pod UPDATE: tolerations only. ``ValidatePodUpdate`` forbids changing any pod spec field but
  ``spec.containers[*].image``, ``spec.initContainers[*].image``, ``spec.activeDeadlineSeconds``,
  ``spec.tolerations`` (only additions to existing tolerations) and ``spec.terminationGracePeriodSeconds``;
  env and ``schedulerName`` are immutable. Upstream's ExtendedResourceToleration runs on UPDATE as well.
* Deployment, ReplicaSet, StatefulSet, DaemonSet, ReplicationController, CronJob UPDATE: the template is
  mutable, and is mutated as on CREATE so a rollout keeps the mutations; but only when the update changes
  the template, so that merely installing the webhook never rolls a workload whose template is untouched
  (its pods are mutated when they are created anyway).
* Job UPDATE: ``spec.template`` is immutable (``field is immutable``), except that a Job that is suspended
  and has not started (``spec.suspend: true``, no ``status.startTime`` on the stored Job) may change its
  template's tolerations, nodeSelector, affinity, labels, annotations and schedulingGates: tolerations
  only then, nothing otherwise.

Never mutated: a workload another controller owns (a ``controller: true`` owner reference: a Deployment's
ReplicaSets, a CronJob's Jobs): the owner writes that template and compares it with its own, and a
Deployment whose ReplicaSet template differs from its own creates ReplicaSets without end (kubernetes
issue #57167, Gatekeeper issue #2963); its owner's template and its pods are mutated instead. An object
being deleted (``metadata.deletionTimestamp``) is left as it is. A namespace labelled
``kubegpu.io/admission=disabled`` gets no mutation, as it gets no validation. Every mutation is
idempotent: a second pass over its own output yields an empty patch (``reinvocationPolicy: IfNeeded``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubegpu.admission.dra import references_claims
from kubegpu.admission.gpu_access import VISIBLE_DEVICES, gpu_containers, kai_set_up
from kubegpu.admission.gpu_access import gpu_resources as _gpu_resources
from kubegpu.admission.lint import GPU_NAMESPACE_LABEL, OPT_OUT_LABEL, OPT_OUT_VALUE, TEMPLATE_PATHS
from kubegpu.admission.validation import OUT_OF_RANGE, validate_pod_resources
from kubegpu.errors import InputError
from kubegpu.model.gpu_facts import asks_gpu
from kubegpu.model.parse import parse_pod

SCHEDULER_LABEL = "kubegpu.io/scheduler"
SCHEDULER_LABEL_VALUE = "enabled"
DEFAULT_SCHEDULER = "default-scheduler"
VOID = "void"

# (API group, kind) of what /mutate patches; a PodTemplate object creates no pods, so it is left out.
MUTATED_KINDS = frozenset({
    ("", "Pod"), ("", "ReplicationController"), ("apps", "Deployment"), ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"), ("apps", "DaemonSet"), ("batch", "Job"), ("batch", "CronJob"),
})  # fmt: skip

Patch = list[dict[str, Any]]


@dataclass(frozen=True)
class MutationOptions:
    gpu_toleration: bool = True
    visible_devices: bool = True
    scheduler_name: str = ""  # empty: leave spec.schedulerName alone


@dataclass(frozen=True)
class Mutable:
    """Which parts of a pod spec one request may change without the API server rejecting it."""

    tolerations: bool = True
    env: bool = True
    scheduler_name: bool = True


EVERYTHING = Mutable()
TOLERATIONS_ONLY = Mutable(env=False, scheduler_name=False)


def _containers(spec: Mapping[str, Any], base: str) -> list[tuple[str, tuple[str, int], Mapping[str, Any]]]:
    return [
        (f"{base}/{key}/{i}", (key, i), c)
        for key in ("initContainers", "containers")
        for i, c in enumerate(spec.get(key) or [])
        if isinstance(c, Mapping)
    ]


def _gpu_asks(kind: str, meta: Any, spec: Mapping[str, Any]) -> tuple[bool, frozenset[tuple[str, int]]]:
    """Whether the pod (or template) ``meta`` and ``spec`` describe asks a GPU (``gpu_facts.asks_gpu``), and its GPU
    containers (``gpu_access.gpu_containers``); neither when it does not parse (the validating side reports why;
    a mutation never fails a request). A Pod's KAI share container is one only once KAI's webhook has set it up,
    and then it has its NVIDIA_VISIBLE_DEVICES: before, void is set, and KAI's webhook replaces it
    (common/env_vars.go AddEnvVarToContainer, since #335, KAI v0.7.10), or the pod is not KAI's and the image's
    =all would expose every GPU."""
    metadata = dict(meta) if isinstance(meta, Mapping) else {}
    # a pod being created may have only generateName; the name plays no part in the answer
    metadata["name"] = str(metadata.get("name") or metadata.get("generateName") or "pod")
    metadata["namespace"] = str(metadata.get("namespace") or "default")
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    errors = validate_pod_resources(raw)
    if any(e.detail == OUT_OF_RANGE for e in errors):
        return False, frozenset()  # as lint_object: no exact arithmetic on a quantity too large to bound
    try:
        pod = parse_pod(raw, validate_resources=not errors)
    except InputError:
        return False, frozenset()
    return asks_gpu(pod), gpu_containers(pod, kai=kind != "Pod" or kai_set_up(pod, spec))


def _append(patch: Patch, path: str, exists: bool, value: dict[str, Any]) -> None:
    """Append ``value`` to the list at ``path`` (JSON Patch ``-``), or create the list when absent."""
    if exists:
        patch.append({"op": "add", "path": f"{path}/-", "value": value})
    else:
        patch.append({"op": "add", "path": path, "value": [value]})


def _dig(obj: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    return obj


def _template_keys(kind: str) -> tuple[str, ...]:
    """Where the pod template of ``kind`` lives (empty for a Pod: the object is the pod)."""
    return () if kind == "Pod" else TEMPLATE_PATHS[kind]


def mutable_parts(
    kind: str, operation: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None
) -> Mutable | None:
    """What ``operation`` on ``obj`` (``old``: the stored object of an UPDATE) may change; None: nothing."""
    if operation == "CREATE":
        return EVERYTHING
    if operation != "UPDATE":
        return None
    if kind == "Pod":
        return TOLERATIONS_ONLY  # ValidatePodUpdate: only additions to tolerations among what we set
    old = old or {}
    if kind == "Job":
        suspended = _dig(old, ("spec", "suspend")) is True
        started = _dig(old, ("status", "startTime")) is not None
        return TOLERATIONS_ONLY if suspended and not started else None
    keys = _template_keys(kind)
    # an update that leaves the template alone is not a rollout, and must not become one
    return EVERYTHING if _dig(obj, keys) != _dig(old, keys) else None


def mutate_object(
    group_kind: tuple[str, str],
    operation: str,
    obj: Mapping[str, Any],
    old: Mapping[str, Any] | None,
    namespace_labels: Mapping[str, str] | None,
    options: MutationOptions,
) -> Patch:
    """The JSON Patch for one admission request on a Pod or workload (empty: leave it as it is)."""
    if group_kind not in MUTATED_KINDS:
        return []
    kind = group_kind[1]
    meta = obj.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return []
    if kind != "Pod" and any(
        isinstance(ref, Mapping) and ref.get("controller") is True
        for ref in meta.get("ownerReferences") or []
    ):
        return []
    allowed = mutable_parts(kind, operation, obj, old)
    if allowed is None:
        return []
    keys = _template_keys(kind)
    spec = _dig(obj, (*keys, "spec"))
    if not isinstance(spec, Mapping):
        return []
    base = "".join(f"/{k}" for k in (*keys, "spec"))
    asks, asking = _gpu_asks(kind, _dig(obj, (*keys, "metadata")), spec)
    return mutate_pod_spec(spec, base, namespace_labels, options, allowed, asking, asks)


def mutate_pod_spec(
    spec: Mapping[str, Any],
    base: str,
    namespace_labels: Mapping[str, str] | None,
    options: MutationOptions,
    allowed: Mutable = EVERYTHING,
    asking: frozenset[tuple[str, int]] = frozenset(),
    asks: bool = False,
) -> Patch:
    """The JSON Patch for the pod spec at JSON pointer ``base``; ``namespace_labels`` None when unknown;
    ``asking``: the GPU containers as (kind key, index), beyond those with a GPU resource of their own; ``asks``:
    the pod asks a GPU some way (``gpu_facts.asks_gpu``)."""
    labels = namespace_labels or {}
    if labels.get(OPT_OUT_LABEL) == OPT_OUT_VALUE:
        return []
    containers = _containers(spec, base)
    gpus = sorted(set().union(*(_gpu_resources(c) for _, _, c in containers)))
    asking = asking | {ref for _, ref, c in containers if _gpu_resources(c)}
    patch: Patch = []
    if options.gpu_toleration and allowed.tolerations and gpus:
        present = isinstance(spec.get("tolerations"), list)
        tolerations = [t for t in spec.get("tolerations") or [] if isinstance(t, Mapping)]
        for resource in gpus:
            if not any(
                (t.get("key", ""), t.get("operator", ""), t.get("value", ""), t.get("effect", ""))
                == (resource, "Exists", "", "NoSchedule")
                for t in tolerations
            ):
                _append(
                    patch,
                    f"{base}/tolerations",
                    present,
                    {"key": resource, "operator": "Exists", "effect": "NoSchedule"},
                )
                present = True
    if (
        options.scheduler_name
        and allowed.scheduler_name
        and gpus
        and labels.get(SCHEDULER_LABEL) == SCHEDULER_LABEL_VALUE
        and (spec.get("schedulerName") or DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER
    ):
        op = "replace" if "schedulerName" in spec else "add"
        patch.append({"op": op, "path": f"{base}/schedulerName", "value": options.scheduler_name})
    if (
        options.visible_devices
        and allowed.env
        and (asks or asking or labels.get(GPU_NAMESPACE_LABEL) == "true")
    ):
        for path, ref, c in containers:
            env = [e for e in c.get("env") or [] if isinstance(e, Mapping)]
            # void would hide a GPU container's devices: the device plugin's Allocate envs come first and the pod's
            # env last (kubelet GenerateRunContainerOptions), so void wins over Volcano's or HAMi's device list; and a
            # template's KAI share container is left as written (its pods are mutated when created). A DRA container
            # gets its devices from its claim.
            if ref in asking or references_claims(c) or any(e.get("name") == VISIBLE_DEVICES for e in env):
                continue
            _append(
                patch, f"{path}/env", isinstance(c.get("env"), list), {"name": VISIBLE_DEVICES, "value": VOID}
            )
    return patch
