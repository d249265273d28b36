"""The QA tenant attack round (``/work/qa/tenants``, INDEX.txt): each technique that crashed kubegpu, was
allowed wrongly or denied wrongly, as an AdmissionReview the API server would send (and, for the crash,
as a ``kubegpu lint`` file). Each test names the upstream source of the behaviour it asserts and the
technique's public source; the QA case ids (``crash01``, ``ds01``…) name the attempt.

The cluster is the bypass battery's (``tests/admission/test_bypass_battery.py``): ``gpu-node-1`` offers
``nvidia.com/gpu``, ``cpu-node-1`` none; ``team-a`` is an unlabelled tenant namespace, ``ml`` hosts GPU
pods; ``dra-admin`` is labelled ``resource.kubernetes.io/admin-access=true``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubegpu.admission.gpu_access import Exemptions
from kubegpu.admission.quota import not_enforced, pod_usage
from kubegpu.cli.live_cmd import lint as lint_command
from kubegpu.live import webhook
from kubegpu.live.webhook import Policy, review
from kubegpu.model.parse import parse_pod
from tests.admission.battery import (
    CUDA,
    GPU_TOLERATION,
    SCHEDULER_USER,
    VOID,
    cpu_pod,
    deployment,
    ds_object,
    pod,
    with_container,
    with_volume,
)
from tests.admission.upstream import DAEMONSET_CONTROLLER, GPU_NODE, daemonset_pod
from tests.admission.upstream import review as admission_review
from tests.admission.webhook_server import cluster, post, server  # noqa: F401  (the fixture)
from tests.live.conftest import tls_pair  # noqa: F401  (the fixture)

C0 = "spec.containers[0]"


def judge(obj: dict[str, Any], user: str = "alice") -> dict[str, Any]:
    """The /validate response for a CREATE of ``obj`` by ``user``, in the battery's cluster."""
    facts = cluster()
    facts.on_event("Namespace", "ADDED", [
        {"metadata": {"name": "dra-admin", "labels": {"resource.kubernetes.io/admin-access": "true"}}}
    ])  # fmt: skip
    answer = review(admission_review(obj, user), facts.context(), Policy(Exemptions(), SCHEDULER_USER))
    response: dict[str, Any] = answer["response"]
    return response


def denied(obj: dict[str, Any], field: str, phrase: str, user: str = "alice") -> None:
    response = judge(obj, user)
    assert response["allowed"] is False, obj
    message = response["status"]["message"]
    assert f"{field}: " in message and phrase in message, message


def allowed(obj: dict[str, Any], user: str = "alice") -> dict[str, Any]:
    response = judge(obj, user)
    assert response["allowed"] is True, response.get("status")
    return response


# -- 1. crash01 / proto02: an unreadable pod template -----------------------------------------------------


def test_crash01_template_metadata_string_is_one_unreadable_line_exit_2(tmp_path: Path) -> None:
    """QA crash01/proto02 (lintfuzz-template-metadata-null, -metadata-string): a template ``metadata`` that
    is not an object made ``kubegpu lint`` exit 1 with a traceback. The API server's decoder refuses such an
    object (ObjectMeta is a struct: ``cannot unmarshal string``); ``null`` decodes as the empty object."""
    bad = deployment("web", {"containers": [{"name": "web", "image": "nginx"}]})
    bad["spec"]["template"]["metadata"] = "oops"
    null = copy.deepcopy(bad)
    null["spec"]["template"]["metadata"] = None
    top = {"apiVersion": "v1", "kind": "Pod", "metadata": "x", "spec": {"containers": [{"name": "a"}]}}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump_all([bad, null, top]))

    result = CliRunner().invoke(lint_command, [str(path)])

    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.stdout.splitlines() == [
        f"{path}: Deployment team-a/web: spec.template.metadata: expected an object, got str [invalid]",
        f"{path}: Pod <no name>: metadata: expected an object, got str [invalid]",
    ]


def test_crash01_webhook_answers_a_deny_and_keeps_the_connection(
    server: tuple[int, Path],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """QA crash01/proto02: the webhook closed the connection without a response (RemoteDisconnected), which
    the API server turns into its failurePolicy. An unreadable field is a deny naming it; and any failure of
    the rules is a deny with a message, never a dropped connection (admission.k8s.io/v1 AdmissionResponse)."""
    bad = deployment("web", {"containers": [{"name": "web", "image": "nginx"}]})
    bad["spec"]["template"]["metadata"] = ["not", "an", "object"]
    response = post(server, admission_review(bad, "alice"))
    assert response["allowed"] is False
    assert response["status"]["message"] == "spec.template.metadata: expected an object, got list"

    def broken(obj: object, ctx: object) -> list[object]:
        raise AttributeError("'NoneType' object has no attribute 'get'")

    monkeypatch.setattr(webhook, "lint_object", broken)
    response = post(server, admission_review(pod("train"), "alice"))
    assert response["allowed"] is False
    assert response["status"]["message"] == "kubegpu could not check this object (AttributeError): denied"


# -- 2. DRA ---------------------------------------------------------------------------------------------------


def dra_pod(name: str = "dra", namespace: str = "team-a") -> dict[str, Any]:
    out = pod(
        name, namespace, gpus=0, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}]
    )
    out["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    return out


def test_dra01_lg03_a_pod_whose_container_uses_a_claim_is_a_gpu_pod() -> None:
    """QA dra01, dra04, lg03: every pod with spec.resourceClaims was denied. DRA pods get their GPUs through
    ResourceClaims (resource.k8s.io/v1; NVIDIA/k8s-dra-driver-gpu's gpu.nvidia.com claim templates): the
    container's ``resources.claims`` is its GPU request, so a CUDA image there is no image-env leak, and a
    claim pod tolerating the GPU taint is no toleration-without-gpu."""
    allowed(dra_pod())
    allowed(dra_pod("dra-gpu", "ml"))
    by_name = dra_pod("dra-x")
    by_name["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "team-b-claim"}]
    allowed(by_name)
    allowed(deployment("dra", dra_pod()["spec"]))
    # a sidecar without the claim is still a container without a GPU in a GPU pod
    sidecar = with_container(dra_pod(), "initContainers", image=CUDA, restartPolicy="Always")
    denied(sidecar, "spec.initContainers[0].env", "CUDA images set NVIDIA_VISIBLE_DEVICES=all")


def claim(kind: str, namespace: str, v1beta1: bool = False) -> dict[str, Any]:
    request: dict[str, Any] = {"name": "gpu"}
    device = {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All", "adminAccess": True}
    if v1beta1:
        request.update(device)
    else:
        request["exactly"] = device
    spec = {"devices": {"requests": [request]}}
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": {"name": "all-gpus", "namespace": namespace},
        "spec": spec if kind == "ResourceClaim" else {"spec": spec},
    }  # fmt: skip


def test_dra02_dra03_admin_access_outside_a_labelled_namespace_is_refused_with_upstreams_message() -> None:
    """QA dra02, dra03: adminAccess on a claim grants access to devices other pods use. Upstream
    (kubernetes pkg/registry/resource/utils.go AuthorizedForAdmin, DRAAdminAccess, KEP-5018) forbids it
    unless the namespace is labelled ``resource.kubernetes.io/admin-access: "true"``."""
    message = (
        "Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label"
    )
    denied(claim("ResourceClaim", "team-a"), "spec.devices.requests[0].exactly.adminAccess", message)
    denied(
        claim("ResourceClaimTemplate", "team-a"), "spec.spec.devices.requests[0].exactly.adminAccess", message
    )
    denied(claim("ResourceClaim", "team-a", v1beta1=True), "spec.devices.requests[0].adminAccess", message)
    allowed(claim("ResourceClaim", "dra-admin"))
    allowed(claim("ResourceClaimTemplate", "dra-admin"))


# -- 3. tenant DaemonSets ---------------------------------------------------------------------------------------


def tenant_ds(**spec: Any) -> dict[str, Any]:
    return ds_object("gpu-leech", "team-a", {
        "tolerations": [GPU_TOLERATION], "containers": [{"name": "agent", "image": CUDA}], **spec,
    })  # fmt: skip


def test_ds01_ds02_ds04_a_tenant_daemonset_tolerating_the_gpu_taint_must_say_void() -> None:
    """QA ds01, ds01b, ds02, ds02b, ds04: a DaemonSet that tolerates the GPU taint (or every taint) runs on
    every GPU node; with a CUDA image (NVIDIA_VISIBLE_DEVICES=all in its env) or a legacy image
    (CUDA_VERSION without NVIDIA_REQUIRE_CUDA: nvidia-container-toolkit internal/config/image/cuda_image.go
    DevicesFromEnvvars returns "all") and no GPU request it gets every GPU (NVIDIA/k8s-device-plugin#87,
    #195). The DaemonSet exception is for toleration-without-gpu only (docs/live.md)."""
    field = "spec.template.spec.containers[0].env"
    denied(tenant_ds(), field, "CUDA images set NVIDIA_VISIBLE_DEVICES=all")
    denied(tenant_ds(tolerations=[{"operator": "Exists"}]), field, "NVIDIA_VISIBLE_DEVICES")
    legacy = tenant_ds(
        containers=[{"name": "a", "image": "busybox", "env": [{"name": "CUDA_VERSION", "value": "12.8"}]}]
    )
    denied(legacy, field, "NVIDIA_VISIBLE_DEVICES")
    denied(
        daemonset_pod(tenant_ds()), "spec.containers[0].env", "NVIDIA_VISIBLE_DEVICES", DAEMONSET_CONTROLLER
    )
    allowed(tenant_ds(containers=[{"name": "agent", "image": CUDA, "env": VOID}]))
    allowed(
        daemonset_pod(tenant_ds(containers=[{"name": "agent", "image": CUDA, "env": VOID}])),
        DAEMONSET_CONTROLLER,
    )
    # still no toleration-without-gpu for DaemonSets, and one without the toleration stays off GPU nodes
    allowed(ds_object("web", "team-a", {"containers": [{"name": "a", "image": CUDA}]}))


# -- 4. nvidia.com/gpu: 0 -------------------------------------------------------------------------------------------


def test_env14_env15_a_zero_gpu_limit_is_no_gpu_request() -> None:
    """QA env14, env15: ``nvidia.com/gpu: "0"`` counted as the container's own GPU, so its CUDA image's
    NVIDIA_VISIBLE_DEVICES=all stood. The device plugin is never asked for zero devices
    (NVIDIA/k8s-device-plugin#61 "Requesting zero GPUs allocates all GPUs")."""
    zero = pod("zero", "team-a", gpus=0, nodeName=GPU_NODE)
    zero["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "0"}}
    denied(zero, f"{C0}.env", "CUDA images set NVIDIA_VISIBLE_DEVICES=all")
    side = pod("zero-side")
    side["spec"]["containers"].append(
        {"name": "tools", "image": CUDA, "resources": {"limits": {"nvidia.com/gpu": "0"}}}
    )
    denied(side, "spec.containers[1].env", "CUDA images set NVIDIA_VISIBLE_DEVICES=all")


# -- 5. hostPaths that hand out devices --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "phrase"),
    [
        ("/var/run/cdi", "CDI spec directory"),
        ("/run/cdi", "CDI spec directory"),
        ("/etc/cdi", "CDI spec directory"),
        ("/etc/cdi/nvidia.yaml", "CDI spec directory"),
        ("/var/lib/kubelet/device-plugins", "device-plugin directory"),
        ("/var/lib/kubelet/device-plugins/kubelet.sock", "device-plugin directory"),
        ("/run/containerd/containerd.sock", "container runtime socket"),
        ("/var/run/crio/crio.sock", "container runtime socket"),
        ("/var/run/docker.sock", "container runtime socket"),
        ("/etc", "exposes GPUs"),  # above /etc/cdi
    ],
)
def test_hp_cdi_device_plugin_and_runtime_socket_host_paths_are_denied(path: str, phrase: str) -> None:
    """QA hp-etc-cdi, hp-run-cdi, hp-var-run-cdi, hp-kubelet-device-plugins, hp-containerd-sock: CDI spec
    directories (cncf-tags/container-device-interface: /etc/cdi, /var/run/cdi), the kubelet's
    device-plugin socket directory (a registered fake plugin hands out devices) and runtime sockets
    (containerd, CRI-O, Docker) give a pod any device; the host-dev rule's one path list has them."""
    denied(with_volume(pod("hp"), path), "spec.volumes[0].hostPath.path", phrase)


# -- 6. NVIDIA_IMEX_CHANNELS -----------------------------------------------------------------------------------


def test_env11_imex_channels_by_hand_is_denied_like_visible_devices() -> None:
    """QA env11: NVIDIA_IMEX_CHANNELS=all. nvidia-container-toolkit cmd/nvidia-container-runtime-hook
    container_config.go getImexChannels passes any value on as the channels to inject."""
    imex = with_container(pod("imex"), env=[{"name": "NVIDIA_IMEX_CHANNELS", "value": "all"}])
    denied(imex, f"{C0}.env[0]", "NVIDIA_IMEX_CHANNELS is set by hand")


# -- 7. hostPID / hostIPC wherever a pod can reach GPU nodes --------------------------------------------------------


@pytest.mark.parametrize("flag", ["hostPID", "hostIPC"])
def test_hns02_hns03_ds03_host_namespaces_on_pods_that_can_reach_gpu_nodes(flag: str) -> None:
    """QA hns02, hns03, ds03: hostPID/hostIPC were checked only in GPU namespaces; like privileged (R6.1)
    they apply wherever the pod can land on a GPU node: nodeName of a GPU node, the GPU taint toleration,
    a GPU node selector. A CPU pod elsewhere keeps them."""
    on_node = cpu_pod("h", nodeName=GPU_NODE, **{flag: True})
    denied(with_container(on_node, env=VOID), f"spec.{flag}", "it shares the node's process or IPC namespace")
    selector = cpu_pod("h", nodeSelector={"nvidia.com/gpu.present": "true"}, **{flag: True})
    denied(selector, f"spec.{flag}", "shares the node's")
    denied(tenant_ds(**{flag: True}), f"spec.template.spec.{flag}", "shares the node's")
    allowed(cpu_pod("h", nodeName="cpu-node-1", **{flag: True}))


# -- 8. quota keys the API server does not enforce ----------------------------------------------------------------------


def test_quota01_quota02_limits_and_bare_extended_keys_are_not_enforced() -> None:
    """QA quota01, quota02: kubegpu predicted "exceeded quota" for ``limits.nvidia.com/gpu: 0``. kubernetes
    pkg/quota/v1/evaluator/core/pods.go: ``isExtendedResourceNameForQuota`` ("only quota objects in format of
    requests.resourceName is allowed") and ``podComputeUsageHelper`` count an extended resource only as
    ``requests.<name>``; ValidateResourceQuotaResourceName accepts any name with a ``/``."""
    gpu = parse_pod(pod("train"))
    usage = pod_usage(gpu)
    assert usage["requests.nvidia.com/gpu"] == 1000
    assert "limits.nvidia.com/gpu" not in usage and "nvidia.com/gpu" not in usage
    assert not_enforced("requests.nvidia.com/gpu") == "" and not_enforced("limits.cpu") == ""
    assert "not enforced" in not_enforced("limits.nvidia.com/gpu")
    assert "Fix: use requests.nvidia.com/gpu" in not_enforced("nvidia.com/gpu")


# -- 9. envFrom on a GPU container --------------------------------------------------------------------------------------


def test_lg01_envfrom_on_a_gpu_container_is_a_warning_never_advising_void() -> None:
    """QA lg01/lg01b: a GPU Job with envFrom of its app ConfigMap was denied, and the advice
    NVIDIA_VISIBLE_DEVICES=void would remove the container's own GPU. The kubelet appends the container's
    env after the device plugin's Allocate envs (kubelet GenerateRunContainerOptions), so a key could
    override the allocation: with keys unknown to the webhook, that is a warning, not a deny."""
    job = with_container(pod("train"), envFrom=[{"configMapRef": {"name": "app-config"}}])
    response = allowed(job)
    (warning,) = response["warnings"]
    assert warning.startswith(f"{C0}.envFrom[0]: envFrom with prefix '' can set NVIDIA_VISIBLE_DEVICES")
    assert "void" not in warning
    # a container without a GPU that can reach GPU nodes keeps the deny, and the void advice
    denied(
        with_container(cpu_pod("e", tolerations=[GPU_TOLERATION]), envFrom=[{"configMapRef": {"name": "x"}}]),
        f"{C0}.envFrom[0]",
        "NVIDIA_VISIBLE_DEVICES=void",
    )


# -- 10. values that select no device -------------------------------------------------------------------------------------


def test_env08_env07_empty_visible_devices_and_cuda_visible_devices_on_a_cpu_pod_expose_nothing() -> None:
    """QA env08: NVIDIA_VISIBLE_DEVICES="" — nvidia-container-toolkit internal/config/image/cuda_image.go
    DevicesFromEnvvars: set but empty is "void", even in a legacy image. QA env07: CUDA_VISIBLE_DEVICES only
    narrows the GPUs the runtime exposed; on a pod without a GPU it exposes none (a warning)."""
    empty = with_container(pod("side"), "initContainers", image=CUDA, restartPolicy="Always",
                           env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": ""}])  # fmt: skip
    allowed(empty)
    cuda = with_container(cpu_pod("c"), env=[{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}])
    (warning,) = allowed(cuda)["warnings"]
    assert warning.startswith(f'{C0}.env[0]: CUDA_VISIBLE_DEVICES is set to "0" but the pod requests no GPU')
