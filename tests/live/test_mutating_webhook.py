"""``kubegpu webhook``'s ``/mutate`` as a real process over HTTPS, fed the AdmissionReview v1 JSON
kube-apiserver sends to a mutating webhook; the returned JSON Patch is applied to the object here.

Pods on CREATE; workloads' templates and UPDATE are in ``test_webhook_templates.py``.
Pins: admission.k8s.io/v1 mutating answers (``response.uid`` = ``request.uid``, ``allowed: true``,
``patchType: JSONPatch``, ``patch`` = base64 of RFC 6902 operations, no patch when nothing changes);
kube-apiserver's ExtendedResourceToleration (per extended resource requested by containers or init
containers, sorted: ``{key: <resource>, operator: Exists, effect: NoSchedule}``, not added twice when a
toleration with the same key, operator, value and effect exists); the NVIDIA container toolkit's
``NVIDIA_VISIBLE_DEVICES=void`` (the runtime behaves as runc: no GPU, no driver capabilities).
The pods are what the API server hands a mutating webhook after its built-in admission: defaulted
``schedulerName: default-scheduler`` and DefaultTolerationSeconds' two NoExecute tolerations.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.admission.other_gpu_pods import kai_admitted, kai_doc_pod, volcano_vgpu_pod
from tests.live.apiserver import RunningApiServer, wait_until
from tests.live.conftest import Component, gpu_pod
from tests.live.webhook_calls import admission_review, apply_patch, post, wait_ready

DEFAULT_TOLERATIONS = [  # DefaultTolerationSeconds admission plugin
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
]
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
VOID = {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}


def mutate(port: int, cert: Path, review: dict[str, Any]) -> dict[str, Any]:
    return post(port, cert, review, "/mutate")


def mutated(port: int, cert: Path, pod: dict[str, Any], namespace: str = "ml") -> dict[str, Any]:
    """The pod as the API server stores it after applying the webhook's patch."""
    answer = mutate(port, cert, admission_review(pod, namespace=namespace, uid="m-1"))
    response = answer["response"]
    assert answer["kind"] == "AdmissionReview" and answer["apiVersion"] == "admission.k8s.io/v1"
    assert response["uid"] == "m-1" and response["allowed"] is True
    if "patch" not in response:
        assert "patchType" not in response
        return pod
    assert response["patchType"] == "JSONPatch"
    return apply_patch(pod, json.loads(base64.b64decode(response["patch"])))  # type: ignore[no-any-return]


def api_pod(name: str, gpus: int, namespace: str = "ml", **kw: Any) -> dict[str, Any]:
    pod = {"apiVersion": "v1", "kind": "Pod", **gpu_pod(name, gpus, namespace=namespace, **kw)}
    pod["spec"]["schedulerName"] = "default-scheduler"
    pod["spec"]["tolerations"] = copy.deepcopy(DEFAULT_TOLERATIONS)
    if not gpus:
        pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    return pod


def with_sidecar(pod: dict[str, Any]) -> dict[str, Any]:
    pod["spec"]["containers"].append({"name": "log-shipper", "image": "fluent/fluent-bit:3.1"})
    return pod


def test_a_gpu_pod_gets_the_gpu_toleration_and_its_sidecar_void(
    start_webhook: Callable[..., tuple[Component, int]], tls_pair: tuple[Path, Path]
) -> None:
    component, port = start_webhook()
    wait_ready(port, tls_pair[0], component)
    pod = with_sidecar(api_pod("trainer", 2))
    pod["spec"]["initContainers"] = [
        {"name": "fetch", "image": "busybox", "env": [{"name": "A", "value": "1"}]}
    ]
    out = mutated(port, tls_pair[0], pod)
    assert out["spec"]["tolerations"] == [*DEFAULT_TOLERATIONS, GPU_TOLERATION]
    assert (
        out["spec"]["containers"][0] == pod["spec"]["containers"][0]
    )  # the GPU container: the plugin sets it
    assert out["spec"]["containers"][1]["env"] == [VOID]
    assert out["spec"]["initContainers"][0]["env"] == [{"name": "A", "value": "1"}, VOID]
    assert out["spec"]["schedulerName"] == "default-scheduler"  # that mutation is off unless configured
    # applying the answer again changes nothing: the webhook is idempotent, as reinvocation requires
    assert mutated(port, tls_pair[0], out) == out


def test_toleration_matching_follows_extended_resource_toleration(
    start_webhook: Callable[..., tuple[Component, int]], tls_pair: tuple[Path, Path]
) -> None:
    component, port = start_webhook()
    wait_ready(port, tls_pair[0], component)
    # Equal/present does not match Exists: the Exists toleration is still added
    pod = api_pod("equal", 1)
    present = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    pod["spec"]["tolerations"].append(present)
    assert mutated(port, tls_pair[0], pod)["spec"]["tolerations"] == [
        *DEFAULT_TOLERATIONS,
        present,
        GPU_TOLERATION,
    ]
    # two MIG resources, no tolerations field at all: one per resource, sorted by name
    mig = api_pod("mig", 1)
    del mig["spec"]["tolerations"]
    mig["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/mig-3g.71gb": "1", "nvidia.com/mig-1g.18gb": "2"}
    }
    assert mutated(port, tls_pair[0], mig)["spec"]["tolerations"] == [
        {"key": "nvidia.com/mig-1g.18gb", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "nvidia.com/mig-3g.71gb", "operator": "Exists", "effect": "NoSchedule"},
    ]


def test_what_is_left_alone(
    start_webhook: Callable[..., tuple[Component, int]], tls_pair: tuple[Path, Path]
) -> None:
    component, port = start_webhook()
    wait_ready(port, tls_pair[0], component)
    cert = tls_pair[0]
    # a CPU pod in a namespace not known to be a GPU namespace: no patch at all
    answer = mutate(port, cert, admission_review(api_pod("web", 0), uid="u-cpu"))
    assert answer["response"] == {"uid": "u-cpu", "allowed": True}
    # a hand-set NVIDIA_VISIBLE_DEVICES is the validating rule's business, not overwritten
    pod = with_sidecar(api_pod("hand", 1))
    pod["spec"]["containers"][1]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"}]
    assert mutated(port, cert, pod)["spec"]["containers"][1] == pod["spec"]["containers"][1]
    # a DELETE, and an UPDATE of the status subresource (the kubelet's), are allowed unchanged: only the
    # pod itself is mutated (tests/live/test_webhook_templates.py has Pod UPDATE)
    status = admission_review(api_pod("upd", 1), operation="UPDATE", uid="u-upd")
    status["request"]["subResource"] = "status"
    status["request"]["oldObject"] = api_pod("upd", 1)
    for review in (admission_review(api_pod("gone", 1), operation="DELETE", uid="u-del"), status):
        assert set(mutate(port, cert, review)["response"]) == {"uid", "allowed"}


def test_each_mutation_can_be_switched_off(
    start_webhook: Callable[..., tuple[Component, int]], tls_pair: tuple[Path, Path]
) -> None:
    component, port = start_webhook("--no-mutate-gpu-toleration", "--no-mutate-visible-devices")
    wait_ready(port, tls_pair[0], component)
    answer = mutate(port, tls_pair[0], admission_review(with_sidecar(api_pod("trainer", 1)), uid="u-off"))
    assert answer["response"] == {"uid": "u-off", "allowed": True}


def test_namespace_labels_opt_in_to_kubegpu_and_out_of_everything(
    api: RunningApiServer,
    kubeconfig: Path,
    start_webhook: Callable[..., tuple[Component, int]],
    tls_pair: tuple[Path, Path],
) -> None:
    """With API access: ``kubegpu.io/scheduler=enabled`` sends GPU pods to the configured scheduler
    (a pod naming another scheduler keeps it); ``kubegpu.io/gpu-namespace=true`` gives CPU pods
    ``void``; ``kubegpu.io/admission=disabled`` opts out of every mutation."""
    labels = {"kubegpu.io/scheduler": "enabled", "kubegpu.io/gpu-namespace": "true"}
    api.emulator.create("namespaces", {"metadata": {"name": "teams", "labels": labels}})
    api.emulator.create("namespaces", {"metadata": {"name": "plain"}})
    sandbox = {"kubegpu.io/admission": "disabled", **labels}
    api.emulator.create("namespaces", {"metadata": {"name": "sandbox", "labels": sandbox}})
    component, port = start_webhook("--kubeconfig", str(kubeconfig), "--mutate-scheduler-name", "kubegpu")
    wait_ready(port, tls_pair[0], component)
    cert = tls_pair[0]

    def routed() -> bool:
        return bool(
            mutated(port, cert, api_pod("t", 1, "teams"), "teams")["spec"]["schedulerName"] == "kubegpu"
        )

    wait_until(routed, what="the teams namespace seen by the namespace informer")
    volcano = api_pod("v", 1, "teams")
    volcano["spec"]["schedulerName"] = "volcano"
    assert mutated(port, cert, volcano, "teams")["spec"]["schedulerName"] == "volcano"
    assert (
        mutated(port, cert, api_pod("p", 1, "plain"), "plain")["spec"]["schedulerName"] == "default-scheduler"
    )
    cpu = mutated(port, cert, api_pod("cpu", 0, "teams"), "teams")
    assert cpu["spec"]["containers"][0]["env"] == [VOID]
    assert (
        cpu["spec"]["tolerations"] == DEFAULT_TOLERATIONS
        and cpu["spec"]["schedulerName"] == "default-scheduler"
    )
    answer = mutate(
        port, cert, admission_review(with_sidecar(api_pod("s", 1, "sandbox")), "sandbox", uid="u-s")
    )
    assert answer["response"] == {"uid": "u-s", "allowed": True}
    # another scheduler's GPU container in a GPU namespace keeps its device list (KAI's share container as KAI's
    # webhook leaves it, a Volcano vGPU container: tests/admission/other_gpu_pods.py); their CPU sidecars get void
    kai = kai_admitted(kai_doc_pod("non-default"), "containers", 1)
    kai["metadata"]["namespace"] = "teams"
    out = mutated(port, cert, kai, "teams")["spec"]["containers"]
    assert [c.get("env") for c in out] == [[VOID], kai["spec"]["containers"][1]["env"], [VOID]]
    out = mutated(port, cert, volcano_vgpu_pod("teams"), "teams")["spec"]["containers"]
    assert [c.get("env") for c in out] == [None, [VOID]]
