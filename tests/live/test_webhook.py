"""``kubegpu webhook`` as a real process over HTTPS, fed the AdmissionReview v1 JSON kube-apiserver sends.

Pins the admission.k8s.io/v1 contract: the answer is an ``AdmissionReview`` with ``response.uid`` equal
to ``request.uid``, ``allowed``, and for a denial ``status.code`` 403 with the message the API server
prints after ``admission webhook "…" denied the request:``. The TLS client verifies the webhook's
certificate against its CA, as the API server does with the configuration's ``caBundle``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.admission.other_gpu_pods import kai_admitted, kai_doc_pod
from tests.live.apiserver import RunningApiServer, wait_until
from tests.live.conftest import Component, gpu_node, gpu_pod
from tests.live.webhook_calls import admission_review, post, serve, wait_ready

PRIVILEGED_DENIAL = (
    'spec.containers[0].securityContext.privileged: privileged containers are not allowed in GPU namespace "ml": '
    "they see every GPU on the node and bypass the device plugin's allocation. Fix: drop privileged and "
    "request nvidia.com/gpu in resources.limits."
)


def privileged_gpu_pod(namespace: str = "ml") -> dict[str, Any]:
    pod = {"apiVersion": "v1", "kind": "Pod", **gpu_pod("bypass", 1, namespace=namespace)}
    pod["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    return pod


@pytest.fixture(scope="module")
def webhook_port(tls_pair: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """One webhook without API access for the module's stateless calls."""
    component, port = serve(tls_pair, tmp_path_factory.mktemp("webhook") / "webhook.log")
    yield port
    component.stop()


def test_denies_a_privileged_gpu_pod_with_the_admission_review_shape(
    webhook_port: int, tls_pair: tuple[Path, Path]
) -> None:
    answer = post(webhook_port, tls_pair[0], admission_review(privileged_gpu_pod()))
    assert answer == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "allowed": False,
            "status": {"code": 403, "reason": "Forbidden", "message": PRIVILEGED_DENIAL},
        },
    }


def test_allows_a_clean_gpu_pod_and_any_delete(webhook_port: int, tls_pair: tuple[Path, Path]) -> None:
    clean = {"apiVersion": "v1", "kind": "Pod", **gpu_pod("clean", 2)}
    assert post(webhook_port, tls_pair[0], admission_review(clean, uid="u-1")) == {
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": "u-1", "allowed": True},
    }  # fmt: skip
    answer = post(
        webhook_port, tls_pair[0], admission_review(privileged_gpu_pod(), operation="DELETE", uid="u-2")
    )
    assert answer["response"] == {"uid": "u-2", "allowed": True}


def test_workload_templates_are_checked_with_their_field_paths(
    webhook_port: int, tls_pair: tuple[Path, Path]
) -> None:
    """A Deployment's pod template: NVIDIA_VISIBLE_DEVICES=all (the device-plugin bypass) and a fractional
    GPU limit with the API server's own validation message."""
    template = gpu_pod("trainer", 1)
    container = template["spec"]["containers"][0]
    container["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    container["resources"] = {"limits": {"nvidia.com/gpu": "0.5"}}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "trainer", "namespace": "ml"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "trainer"}},
                 "template": {"metadata": {"labels": {"app": "trainer"}}, "spec": template["spec"]}},
    }  # fmt: skip
    answer = post(webhook_port, tls_pair[0], admission_review(deployment))
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["message"].split("; ") == [
        # validation: the limit is defaulted into the request, both are 0.5 → 500m, not an integer
        'spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer',
        'spec.template.spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "500m": must be an integer',
        'spec.template.spec.containers[0].env[0]: NVIDIA_VISIBLE_DEVICES is set by hand to "all": the device plugin '
        "sets it to the devices it allocated, and a manual value exposes other GPUs (NVIDIA device-plugin issues "
        "#87, #1605). Fix: remove it and request nvidia.com/gpu in resources.limits.",
    ]


def test_namespace_opt_out_and_offered_resources_come_from_the_cluster(
    api: RunningApiServer,
    kubeconfig: Path,
    start_webhook: Callable[..., tuple[Component, int]],
    tls_pair: tuple[Path, Path],
) -> None:
    """With API access the webhook watches Namespaces (``kubegpu.io/admission=disabled`` opts a namespace
    out) and Nodes (a GPU resource name no node offers is denied, R11.4)."""
    api.emulator.create(
        "namespaces", {"metadata": {"name": "sandbox", "labels": {"kubegpu.io/admission": "disabled"}}}
    )
    api.emulator.create("namespaces", {"metadata": {"name": "ml"}})
    api.emulator.create("nodes", gpu_node("gpu-1"))
    component, port = start_webhook("--kubeconfig", str(kubeconfig))
    wait_ready(port, tls_pair[0], component)

    def allowed_in_sandbox() -> bool:
        answer = post(port, tls_pair[0], admission_review(privileged_gpu_pod("sandbox"), namespace="sandbox"))
        return bool(answer["response"]["allowed"])

    wait_until(allowed_in_sandbox, what="the sandbox opt-out seen by the namespace informer")
    assert post(port, tls_pair[0], admission_review(privileged_gpu_pod()))["response"]["allowed"] is False
    shared = {"apiVersion": "v1", "kind": "Pod", **gpu_pod("shared", 1)}
    shared["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu.shared": "1"}}
    answer = post(port, tls_pair[0], admission_review(shared))
    assert answer["response"]["status"]["message"] == (
        "spec.containers[0].resources: nvidia.com/gpu.shared is not offered by any node (GPU resources offered: "
        "nvidia.com/gpu); the name must match Node status.capacity exactly or the pod stays Pending. "
        "Fix: use an offered name."
    )
    # a node that starts offering it (e.g. time-slicing with renameByDefault) lifts the denial
    node = gpu_node("gpu-2")
    node["status"]["capacity"]["nvidia.com/gpu.shared"] = "16"
    api.emulator.create("nodes", node)
    deadline = time.monotonic() + 20
    while post(port, tls_pair[0], admission_review(shared))["response"]["allowed"] is not True:
        assert time.monotonic() < deadline, "the node informer never saw gpu-2"
        time.sleep(0.05)


def test_a_kai_share_pod_after_kais_webhook_is_allowed_at_create(
    webhook_port: int, tls_pair: tuple[Path, Path]
) -> None:
    # KAI's mutating webhook (Pod CREATE) runs before kubegpu's validating one and sets the share container's
    # NVIDIA_VISIBLE_DEVICES from the ConfigMap its binder fills (tests/admission/other_gpu_pods.py cites the source)
    pod = kai_admitted(kai_doc_pod("fraction"))
    answer = post(webhook_port, tls_pair[0], admission_review(pod, namespace="team-a", uid="u-kai"))
    assert answer["response"] == {"uid": "u-kai", "allowed": True}
    # the same value on a pod without any GPU ask is still refused
    del pod["metadata"]["annotations"]["gpu-fraction"]
    answer = post(webhook_port, tls_pair[0], admission_review(pod, namespace="team-a", uid="u-esc"))
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["message"].startswith(
        "spec.containers[0].env[0]: NVIDIA_VISIBLE_DEVICES is set by hand to a valueFrom reference"
    )
