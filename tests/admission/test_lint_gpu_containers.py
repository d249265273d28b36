"""The GPU-access rules on other schedulers' GPU pods: a container given a GPU by KAI's share, a Volcano vGPU or
HAMi resource is a GPU container (``gpu_access.gpu_containers``: ``gpu_facts.asks_gpu`` of the pod cut down to that
container), and KAI's share container may carry the ``NVIDIA_VISIBLE_DEVICES`` KAI's own webhook writes; a pod
with no GPU ask that sets ``NVIDIA_VISIBLE_DEVICES`` is still refused. Objects and their upstream sources:
``tests/admission/other_gpu_pods.py``.

Before this rule, kubegpu's validating webhook refused every KAI share pod at CREATE (it sees the pod after KAI's
mutating webhook: ``NVIDIA_VISIBLE_DEVICES`` "set by hand to a valueFrom reference"), and in a GPU namespace told
KAI's share container and a Volcano vGPU container to set ``NVIDIA_VISIBLE_DEVICES=void``, which its mutating
webhook then set: the kubelet puts the pod's env after the device plugin's Allocate envs
(``GenerateRunContainerOptions``), so ``void`` hides a Volcano container's vGPUs, and KAI before
kai-scheduler/KAI-Scheduler#335 (daf2d15c) emptied that entry instead of replacing it.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubegpu.admission.gpu_access import Requester
from kubegpu.admission.lint import LintContext, Violation, lint_object
from kubegpu.admission.mutate import MutationOptions, mutate_object
from tests.admission.other_gpu_pods import (
    hami_pod,
    kai_admitted,
    kai_configmap,
    kai_doc_pod,
    volcano_vgpu_pod,
)

GPU_NAMESPACE = {"team-a": {"kubegpu.io/gpu-namespace": "true"}}
VOID = {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}
SHARES = [("fraction", "containers", 0), ("memory", "containers", 0), ("non-default", "containers", 1),
          ("init", "initContainers", 0)]  # fmt: skip


def lint(
    pod: dict[str, Any], labels: dict[str, dict[str, str]] | None = None, offline: bool = False
) -> list[Violation]:
    """The webhook's answer (a requester: the pod has met every mutating webhook), or ``kubegpu lint``'s."""
    requester = None if offline else Requester("alice")
    return lint_object(pod, LintContext(namespace_labels=labels, requester=requester))


def denials(
    pod: dict[str, Any], labels: dict[str, dict[str, str]] | None = None, offline: bool = False
) -> list[tuple[str, str]]:
    return [(v.rule, v.field) for v in lint(pod, labels, offline) if not v.warning]


def void_paths(obj: dict[str, Any], labels: dict[str, str] | None) -> list[str]:
    group = obj["apiVersion"].rpartition("/")[0]
    patch = mutate_object((group, obj["kind"]), "CREATE", obj, None, labels, MutationOptions())
    return [
        op["path"]
        for op in patch
        if VOID in (op["value"] if isinstance(op["value"], list) else [op["value"]])
    ]


def deployment(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    template = {
        "metadata": {"labels": meta["labels"], "annotations": meta["annotations"]},
        "spec": pod["spec"],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        "spec": {"selector": {"matchLabels": meta["labels"]}, "template": template},
    }


@pytest.mark.parametrize(("example", "key", "index"), SHARES)
def test_a_kai_share_pod_as_kais_webhook_leaves_it_is_admitted(example: str, key: str, index: int) -> None:
    pod = kai_admitted(kai_doc_pod(example), key, index)
    share = f"spec.{key}[{index}]"
    for labels in (None, GPU_NAMESPACE):
        flagged = {(rule, field) for rule, field in denials(pod, labels) if field.startswith(share)}
        assert flagged == set(), (example, labels)


def test_kai_share_container_is_not_voided_and_its_sidecars_are() -> None:
    # KAI's own deviceaccess plugin does the same: void on every container but the share container
    # (pkg/admission/webhook/v1alpha2/deviceaccess/device_access.go blockGPUAccessIfNotRequested)
    sidecars = ["/spec/containers/0/env", "/spec/containers/2/env"]
    admitted = kai_admitted(kai_doc_pod("non-default"), "containers", 1)
    assert void_paths(admitted, GPU_NAMESPACE["team-a"]) == sidecars
    assert void_paths(admitted, None) == sidecars
    assert void_paths(kai_admitted(kai_doc_pod("init"), "initContainers", 0), None) == [
        "/spec/containers/0/env"
    ]
    # a template is left as written for the share container: its pods are mutated when created
    template = deployment(kai_doc_pod("non-default"))
    assert void_paths(template, None) == [f"/spec/template{p}" for p in sidecars]
    assert void_paths(deployment(kai_doc_pod("fraction")), GPU_NAMESPACE["team-a"]) == []
    # kubegpu lint of KAI's own manifests: the share container is not told to set void; the sidecars are
    for obj, prefix in ((kai_doc_pod("non-default"), ""), (template, "spec.template.")):
        assert denials(obj, offline=True) == [
            ("image-visible-devices", f"{prefix}spec.containers[0].env"),
            ("image-visible-devices", f"{prefix}spec.containers[2].env"),
        ]


def test_a_share_annotation_kai_has_not_set_up_opens_no_gpu() -> None:
    # A Pod that reaches the webhooks with a share annotation but without KAI's entry was not set up by KAI (its
    # webhook runs on every KAI pod's CREATE): its first container would take the CUDA image's =all on a GPU node
    pod = kai_doc_pod("fraction")
    pod["spec"]["schedulerName"] = "default-scheduler"
    assert denials(pod, GPU_NAMESPACE) == [("image-visible-devices", "spec.containers[0].env")]
    assert void_paths(pod, GPU_NAMESPACE["team-a"]) == ["/spec/containers/0/env"]
    # on a KAI pod that void is harmless: KAI's webhook replaces an entry of the same name with its own
    # (common/env_vars.go AddEnvVarToContainer since #335, v0.7.10), and the answer is then the admitted one
    assert void_paths(kai_doc_pod("fraction"), None) == ["/spec/containers/0/env"]


def test_a_kai_share_pod_is_a_gpu_pod_for_the_access_rules() -> None:
    # KAI places it on a GPU node whatever its tolerations: privileged there sees every GPU
    pod = kai_admitted(kai_doc_pod("fraction"))
    pod["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    assert ("privileged", "spec.containers[0].securityContext.privileged") in denials(pod)
    # and CUDA_VISIBLE_DEVICES there narrows the shared GPU: no "requests no GPU" warning
    pod = kai_admitted(kai_doc_pod("fraction"))
    pod["spec"]["containers"][0]["env"].append({"name": "CUDA_VISIBLE_DEVICES", "value": "0"})
    assert [v.rule for v in lint(pod)] == []


def escapes() -> list[tuple[str, dict[str, Any], str]]:
    """(what, pod, the field refused) of pods that set NVIDIA_VISIBLE_DEVICES past any allocation."""
    out = []
    cpu = kai_doc_pod("fraction")
    cpu["metadata"]["annotations"] = {}
    cpu["spec"]["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    out.append(("no GPU ask, =all", cpu, "spec.containers[0].env[0]"))
    no_share = kai_admitted(kai_doc_pod("fraction"))
    del no_share["metadata"]["annotations"]["gpu-fraction"]
    out.append(("KAI's env without a share annotation", no_share, "spec.containers[0].env[0]"))
    literal = kai_admitted(kai_doc_pod("fraction"))
    literal["spec"]["containers"][0]["env"][0] = {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}
    out.append(("a share container's literal =all", literal, "spec.containers[0].env[0]"))
    other = kai_admitted(kai_doc_pod("fraction"))
    other["spec"]["containers"][0]["env"][0]["valueFrom"]["configMapKeyRef"]["name"] = "my-gpus"
    out.append(("a ConfigMap KAI does not write", other, "spec.containers[0].env[0]"))
    optional = kai_admitted(kai_doc_pod("fraction"))
    optional["spec"]["containers"][0]["env"][0]["valueFrom"]["configMapKeyRef"]["optional"] = True
    out.append(
        ("optional: the image's =all stands while it is missing", optional, "spec.containers[0].env[0]")
    )
    sidecar = kai_admitted(kai_doc_pod("non-default"), "containers", 1)
    sidecar["spec"]["containers"][0]["env"] = copy.deepcopy(sidecar["spec"]["containers"][1]["env"][:1])
    out.append(("KAI's env on a container the share is not for", sidecar, "spec.containers[0].env[0]"))
    assert kai_configmap("containers", 1) in str(sidecar["spec"]["containers"][0]["env"])
    return out


@pytest.mark.parametrize(("what", "pod", "field"), escapes(), ids=lambda x: x if isinstance(x, str) else "")
def test_visible_devices_past_any_allocation_is_still_refused(
    what: str, pod: dict[str, Any], field: str
) -> None:
    assert ("visible-devices", field) in denials(pod), what


def test_a_volcano_vgpu_container_is_not_voided_and_its_sidecar_is() -> None:
    pod = volcano_vgpu_pod()
    assert void_paths(pod, GPU_NAMESPACE["team-a"]) == ["/spec/containers/1/env"]
    assert denials(pod, GPU_NAMESPACE) == [("image-visible-devices", "spec.containers[1].env")]


@pytest.mark.parametrize("overwrite_env", [False, True])
def test_hami_pods_as_its_webhook_leaves_them(overwrite_env: bool) -> None:
    # already right before this rule (its GPU container asks nvidia.com/gpu, its device list comes from the
    # device plugin's Allocate answer, and "none" is a no-GPU value): pinned
    pod = hami_pod(overwrite_env)
    assert void_paths(pod, GPU_NAMESPACE["team-a"]) == ([] if overwrite_env else ["/spec/containers/1/env"])
    assert denials(pod, GPU_NAMESPACE) == (
        [] if overwrite_env else [("image-visible-devices", "spec.containers[1].env")]
    )
