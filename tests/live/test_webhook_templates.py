"""``kubegpu webhook`` on workloads' pod templates and on UPDATE, as a real process over HTTPS fed the
AdmissionReview v1 JSON kube-apiserver sends (``oldObject`` on UPDATE, ``subResource`` for subresources).

Pins, besides the admission.k8s.io/v1 shapes of ``test_webhook.py`` / ``test_mutating_webhook.py``:

* where each workload keeps its pod template (``spec.template``; CronJob ``spec.jobTemplate.spec.template``),
  so the JSON Patch paths are ``/spec/template/spec/…`` and ``/spec/jobTemplate/spec/template/spec/…``;
* kube-apiserver's ``ValidatePodUpdate``: a pod update may change no spec field but
  ``spec.containers[*].image``, ``spec.initContainers[*].image``, ``spec.activeDeadlineSeconds``,
  ``spec.tolerations`` (only additions) and ``spec.terminationGracePeriodSeconds``
  (``pod_update_error`` below models it); ExtendedResourceToleration handles UPDATE as well as CREATE;
* the Job strategy: ``spec.template`` is immutable unless the stored Job is suspended and has no
  ``status.startTime``, and then only its tolerations, nodeSelector, affinity, labels, annotations and
  schedulingGates may change (``job_update_error``);
* the Deployment controller's ReplicaSet template comparison (kubernetes issue #57167): a ReplicaSet
  a Deployment controls is never mutated;
* reinvocation (``reinvocationPolicy: IfNeeded``): a second call on the webhook's own output yields no
  patch; a container another webhook added meanwhile gets only its own mutation.

The objects are shaped as the API server stores them, with the defaults it applies before admission
(``SetDefaults_PodSpec``: restartPolicy, terminationGracePeriodSeconds 30, dnsPolicy ClusterFirst,
securityContext {}, schedulerName default-scheduler; per container terminationMessagePath/Policy and
imagePullPolicy IfNotPresent for a tagged image; the workloads' own defaults). Expected patches are
written out by hand.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.live.apiserver import RunningApiServer, wait_until
from tests.live.conftest import Component
from tests.live.webhook_calls import admission_review, apply_patch, post, serve, wait_ready

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
VOID = {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}
CONTAINER_DEFAULTS = {
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "imagePullPolicy": "IfNotPresent",
}
LABELS = {"app": "trainer"}
# kube-apiserver's message (v1.27+) when a pod update changes another field
POD_UPDATE_FORBIDDEN = (
    "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
    "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)
TOLERATION_CHANGED = (
    "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"
)
JOB_TEMPLATE_IMMUTABLE = "spec.template: Invalid value: …: field is immutable"


@pytest.fixture(scope="module")
def port(tls_pair: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    component, bound = serve(tls_pair, tmp_path_factory.mktemp("webhook") / "webhook.log")
    yield bound
    component.stop()


@pytest.fixture(scope="module")
def cert(tls_pair: tuple[Path, Path]) -> Path:
    return tls_pair[0]


def pod_spec(restart: str = "Always") -> dict[str, Any]:
    """A GPU trainer and a CPU log shipper, defaulted; no tolerations (DefaultTolerationSeconds is Pod
    admission, not template defaulting)."""
    return {
        "containers": [
            {"name": "main", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
             "resources": {"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "2"}},
             **CONTAINER_DEFAULTS},
            {"name": "log-shipper", "image": "fluent/fluent-bit:3.1", "resources": {}, **CONTAINER_DEFAULTS},
        ],
        "restartPolicy": restart, "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "securityContext": {}, "schedulerName": "default-scheduler",
    }  # fmt: skip


def template(restart: str = "Always") -> dict[str, Any]:
    return {"metadata": {"labels": dict(LABELS)}, "spec": pod_spec(restart)}


def workload(kind: str, name: str = "trainer") -> dict[str, Any]:
    """``kind`` as the API server stores it after its defaulting."""
    meta = {"name": name, "namespace": "ml", "uid": f"{kind.lower()}-uid", "generation": 1}
    selector = {"matchLabels": dict(LABELS)}
    rolling = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    specs: dict[str, tuple[str, dict[str, Any]]] = {
        "Deployment": ("apps/v1", {
            "replicas": 1, "selector": selector, "template": template(), "strategy": rolling,
            "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}),
        "StatefulSet": ("apps/v1", {
            "replicas": 1, "selector": selector, "template": template(), "serviceName": name,
            "podManagementPolicy": "OrderedReady", "revisionHistoryLimit": 10,
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}}),
        "DaemonSet": ("apps/v1", {
            "selector": selector, "template": template(), "revisionHistoryLimit": 10,
            "updateStrategy": {"type": "RollingUpdate",
                               "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}}),
        "ReplicaSet": ("apps/v1", {"replicas": 1, "selector": selector, "template": template()}),
        "ReplicationController": ("v1", {"replicas": 1, "selector": dict(LABELS), "template": template()}),
        "Job": ("batch/v1", {
            "parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
            "suspend": False, "podReplacementPolicy": "TerminatingOrFailed",
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "job-uid"}},
            "template": {"metadata": {"labels": {"batch.kubernetes.io/controller-uid": "job-uid",
                                                 "batch.kubernetes.io/job-name": name, **LABELS}},
                         "spec": pod_spec("Never")}}),
        "CronJob": ("batch/v1", {
            "schedule": "0 * * * *", "concurrencyPolicy": "Allow", "suspend": False,
            "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
            "jobTemplate": {"metadata": {}, "spec": {"backoffLimit": 6, "template": template("Never")}}}),
        "PodTemplate": ("v1", {}),
    }  # fmt: skip
    api_version, spec = specs[kind]
    if kind == "PodTemplate":
        return {"apiVersion": api_version, "kind": kind, "metadata": meta, "template": template()}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec}


def gpu_pod(name: str = "trainer-0") -> dict[str, Any]:
    """A bound GPU pod as stored: DefaultTolerationSeconds' two tolerations, no GPU toleration (admitted
    while the mutating webhook was down with failurePolicy Ignore, or before it was installed)."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "uid": "pod-uid", "labels": dict(LABELS)},
        "spec": {**pod_spec(), "nodeName": "gpu-1", "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300}]},
        "status": {"phase": "Running"},
    }  # fmt: skip


def update_review(new: dict[str, Any], old: dict[str, Any], uid: str = "u-update") -> dict[str, Any]:
    review = admission_review(new, operation="UPDATE", uid=uid)
    review["request"]["oldObject"] = old
    review["request"]["options"] = {"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"}
    return review


def patch_of(port: int, cert: Path, review: dict[str, Any]) -> list[dict[str, Any]]:
    """The RFC 6902 operations of a /mutate answer (``[]`` when it carries none, as then it must)."""
    answer = post(port, cert, review, "/mutate")
    response = answer["response"]
    assert (answer["apiVersion"], answer["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    assert response["uid"] == review["request"]["uid"] and response["allowed"] is True
    if "patch" not in response:
        assert set(response) == {"uid", "allowed"}
        return []
    assert response["patchType"] == "JSONPatch"
    operations: list[dict[str, Any]] = json.loads(base64.b64decode(response["patch"]))
    assert operations, "an empty patch must be left out"
    return operations


def pod_update_error(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """kube-apiserver's ``ValidatePodUpdate`` for the spec: old tolerations kept (tolerationSeconds
    aside), then the spec with the fields an update may change put back must equal the old one."""
    old_spec, new_spec = old["spec"], copy.deepcopy(new["spec"])
    secondless = [
        {k: v for k, v in t.items() if k != "tolerationSeconds"} for t in new_spec.get("tolerations", [])
    ]
    for t in old_spec.get("tolerations", []):
        if {k: v for k, v in t.items() if k != "tolerationSeconds"} not in secondless:
            return TOLERATION_CHANGED
    for key in ("containers", "initContainers"):
        for mine, theirs in zip(new_spec.get(key, []), old_spec.get(key, []), strict=False):
            mine["image"] = theirs["image"]
    for key in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"):
        new_spec.pop(key, None)
        if key in old_spec:
            new_spec[key] = old_spec[key]
    return None if new_spec == old_spec else POD_UPDATE_FORBIDDEN


def job_update_error(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """The Job strategy's template immutability, with the scheduling directives a suspended, never
    started Job may change (``AllowMutableSchedulingDirectives``)."""
    old_template, new_template = old["spec"]["template"], copy.deepcopy(new["spec"]["template"])
    if old["spec"].get("suspend") is True and "startTime" not in old.get("status", {}):
        for key in ("labels", "annotations"):
            new_template["metadata"].pop(key, None)
            if key in old_template["metadata"]:
                new_template["metadata"][key] = old_template["metadata"][key]
        for key in ("nodeSelector", "affinity", "tolerations", "schedulingGates"):
            new_template["spec"].pop(key, None)
            if key in old_template["spec"]:
                new_template["spec"][key] = old_template["spec"][key]
    return None if new_template == old_template else JOB_TEMPLATE_IMMUTABLE


TEMPLATE_SPEC = {  # where each kind's pod spec is, worked out from the API reference
    "Deployment": "/spec/template/spec",
    "StatefulSet": "/spec/template/spec",
    "DaemonSet": "/spec/template/spec",
    "ReplicaSet": "/spec/template/spec",
    "ReplicationController": "/spec/template/spec",
    "Job": "/spec/template/spec",
    "CronJob": "/spec/jobTemplate/spec/template/spec",
}


# -- CREATE ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(TEMPLATE_SPEC))
def test_each_workload_template_is_mutated_at_its_path_and_a_second_pass_is_empty(
    kind: str, port: int, cert: Path
) -> None:
    obj = workload(kind)
    at = TEMPLATE_SPEC[kind]
    operations = patch_of(port, cert, admission_review(obj, uid=f"c-{kind}"))
    assert operations == [
        # no tolerations in the template yet: the list is created
        {"op": "add", "path": f"{at}/tolerations", "value": [GPU_TOLERATION]},
        # the CPU sidecar has no env: the list is created
        {"op": "add", "path": f"{at}/containers/1/env", "value": [VOID]},
    ]
    out = apply_patch(obj, operations)
    # reinvocation (IfNeeded): the webhook's own output needs nothing more
    assert patch_of(port, cert, admission_review(out, uid=f"r-{kind}")) == []
    # a later webhook injected a sidecar: on reinvocation only that container is mutated
    spec = out
    for key in at.split("/")[1:]:
        spec = spec[key]
    spec["containers"].append({"name": "proxy", "image": "envoyproxy/envoy:v1.31", **CONTAINER_DEFAULTS})
    assert patch_of(port, cert, admission_review(out, uid=f"s-{kind}")) == [
        {"op": "add", "path": f"{at}/containers/2/env", "value": [VOID]},
    ]


def test_template_with_tolerations_and_env_gets_appends(port: int, cert: Path) -> None:
    """Existing lists are appended to (``/-``), not replaced: a CronJob whose template tolerates a
    dedicated-pool taint and whose sidecar has env."""
    cron = workload("CronJob")
    spec = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    spec["tolerations"] = [{"key": "pool", "operator": "Equal", "value": "train", "effect": "NoSchedule"}]
    spec["containers"][1]["env"] = [{"name": "LOG_LEVEL", "value": "info"}]
    at = "/spec/jobTemplate/spec/template/spec"
    assert patch_of(port, cert, admission_review(cron)) == [
        {"op": "add", "path": f"{at}/tolerations/-", "value": GPU_TOLERATION},
        {"op": "add", "path": f"{at}/containers/1/env/-", "value": VOID},
    ]


def controlled(obj: dict[str, Any], owner: str, api_version: str) -> dict[str, Any]:
    """``obj`` with the controller reference its owning controller sets."""
    obj["metadata"]["ownerReferences"] = [{
        "apiVersion": api_version, "kind": owner, "name": "trainer", "uid": f"{owner.lower()}-uid",
        "controller": True, "blockOwnerDeletion": True,
    }]  # fmt: skip
    return obj


def test_what_creates_no_pods_or_belongs_to_a_controller_is_left_alone(port: int, cert: Path) -> None:
    # a PodTemplate object creates no pods
    assert patch_of(port, cert, admission_review(workload("PodTemplate"))) == []
    # a Deployment's ReplicaSet: the Deployment controller compares the ReplicaSet's template with its
    # own and would create ReplicaSets without end if it differed (kubernetes issue #57167)
    owned = controlled(workload("ReplicaSet", "trainer-5d4f8b7c9"), "Deployment", "apps/v1")
    assert patch_of(port, cert, admission_review(owned)) == []
    # a CronJob's Job: its template is the CronJob's jobTemplate, mutated there
    job = controlled(workload("Job", "trainer-29012345"), "CronJob", "batch/v1")
    assert patch_of(port, cert, admission_review(job)) == []
    # an owner reference that is not the controller does not count
    job["metadata"]["ownerReferences"][0]["controller"] = False
    assert patch_of(port, cert, admission_review(job)) != []


# -- UPDATE ---------------------------------------------------------------------------------------------


def test_pod_update_only_adds_the_gpu_toleration_which_the_api_server_accepts(port: int, cert: Path) -> None:
    old = gpu_pod()
    new = copy.deepcopy(old)
    new["metadata"]["labels"]["audited"] = "true"
    operations = patch_of(port, cert, update_review(new, old))
    # no NVIDIA_VISIBLE_DEVICES for the sidecar: env is immutable on a pod
    assert operations == [{"op": "add", "path": "/spec/tolerations/-", "value": GPU_TOLERATION}]
    patched = apply_patch(new, operations)
    assert pod_update_error(old, patched) is None
    # what a CREATE would also have done, the env, the API server would reject
    with_env = apply_patch(patched, [{"op": "add", "path": "/spec/containers/1/env", "value": [VOID]}])
    assert pod_update_error(old, with_env) == POD_UPDATE_FORBIDDEN
    # and the model rejects what upstream rejects: an existing toleration changed
    changed = copy.deepcopy(patched)
    changed["spec"]["tolerations"][0]["effect"] = "NoSchedule"
    assert pod_update_error(old, changed) == TOLERATION_CHANGED
    # the patched pod needs nothing more
    assert patch_of(port, cert, update_review(patched, old, uid="u-again")) == []


def test_pod_update_while_deleting_or_of_a_subresource_is_left_alone(port: int, cert: Path) -> None:
    # the garbage collector removing a finalizer from a pod being deleted
    old = gpu_pod()
    old["metadata"]["deletionTimestamp"] = "2026-12-03T10:00:00Z"
    old["metadata"]["finalizers"] = ["foregroundDeletion"]
    new = copy.deepcopy(old)
    del new["metadata"]["finalizers"]
    assert patch_of(port, cert, update_review(new, old)) == []
    # the kubelet's status update (pods/status)
    status = update_review(gpu_pod(), gpu_pod())
    status["request"]["subResource"] = "status"
    assert patch_of(port, cert, status) == []


def test_workload_update_that_changes_the_template_is_mutated_like_a_create(port: int, cert: Path) -> None:
    """``kubectl apply`` of the user's manifest, which never carries the webhook's additions, with a
    new image: the rollout keeps the toleration and ``void``."""
    old = workload("Deployment")
    old["spec"]["template"] = apply_patch(old, [
        {"op": "add", "path": "/spec/template/spec/tolerations", "value": [GPU_TOLERATION]},
        {"op": "add", "path": "/spec/template/spec/containers/1/env", "value": [VOID]},
    ])["spec"]["template"]  # fmt: skip
    new = workload("Deployment")
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/pytorch:25.02-py3"
    operations = patch_of(port, cert, update_review(new, old))
    assert operations == [
        {"op": "add", "path": "/spec/template/spec/tolerations", "value": [GPU_TOLERATION]},
        {"op": "add", "path": "/spec/template/spec/containers/1/env", "value": [VOID]},
    ]
    rolled = apply_patch(new, operations)
    # only the image differs from the old template: the mutations survived the rollout
    rolled["spec"]["template"]["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/pytorch:25.01-py3"
    assert rolled == old


def test_workload_update_that_leaves_the_template_alone_triggers_no_rollout(port: int, cert: Path) -> None:
    """A Deployment created before the webhook, scaled by ``kubectl edit``: patching its template would
    roll every pod; its new pods are mutated when created anyway."""
    old = workload("StatefulSet")
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 3
    assert patch_of(port, cert, update_review(new, old)) == []


def test_job_update_follows_the_job_template_immutability(port: int, cert: Path) -> None:
    # a running Job: spec.template is immutable, so no patch at all
    old = workload("Job")
    old["status"] = {"startTime": "2026-12-03T09:00:00Z", "active": 1}
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"team": "vision"}
    assert patch_of(port, cert, update_review(new, old)) == []
    assert job_update_error(old, apply_patch(new, [
        {"op": "add", "path": "/spec/template/spec/tolerations", "value": [GPU_TOLERATION]},
    ])) == JOB_TEMPLATE_IMMUTABLE  # fmt: skip
    # suspended and never started (e.g. queued by Kueue, which unsuspends it): tolerations only
    old = workload("Job")
    old["spec"]["suspend"] = True
    new = copy.deepcopy(old)
    new["spec"]["suspend"] = False
    new["spec"]["template"]["spec"]["nodeSelector"] = {"accelerator.example.com/pool": "training"}
    operations = patch_of(port, cert, update_review(new, old, uid="u-kueue"))
    assert operations == [{"op": "add", "path": "/spec/template/spec/tolerations", "value": [GPU_TOLERATION]}]
    assert job_update_error(old, apply_patch(new, operations)) is None
    with_env = apply_patch(new, [*operations, {"op": "add", "path": "/spec/template/spec/containers/1/env",
                                               "value": [VOID]}])  # fmt: skip
    assert job_update_error(old, with_env) == JOB_TEMPLATE_IMMUTABLE


# -- /validate on UPDATE --------------------------------------------------------------------------------

PRIVILEGED = (
    "spec.template.spec.containers[0].securityContext.privileged: privileged containers are not allowed in GPU "
    'namespace "ml": they see every GPU on the node and bypass the device plugin\'s allocation. Fix: drop '
    "privileged and request nvidia.com/gpu in resources.limits."
)
IMAGE_ENV = (
    'spec.template.spec.containers[1].env: this container requests no GPU but runs in GPU namespace "ml", and '
    "CUDA images set NVIDIA_VISIBLE_DEVICES=all in their image env: the NVIDIA runtime would then expose every GPU "
    "of the node. Fix: set env NVIDIA_VISIBLE_DEVICES=void (kubectl debug --env NVIDIA_VISIBLE_DEVICES=void), "
    "request a GPU, or enable the chart's mutating webhook, which sets it."
)
HOST_DEV = (
    'spec.template.spec.volumes[0].hostPath.path: hostPath "/dev" is not allowed in GPU namespace "ml": mounting '
    "/dev or /dev/nvidia* (or /dev/char, /run/nvidia, or a directory above one) exposes GPUs the pod was not "
    "allocated. Fix: remove the volume; the device plugin injects the allocated devices."
)


def denial(port: int, cert: Path, review: dict[str, Any]) -> str | None:
    response = post(port, cert, review)["response"]
    assert response["uid"] == review["request"]["uid"]
    if response["allowed"]:
        assert set(response) == {"uid", "allowed"}
        return None
    assert (response["status"]["code"], response["status"]["reason"]) == (403, "Forbidden")
    return str(response["status"]["message"])


def test_validate_update_denies_what_the_update_adds_only(port: int, cert: Path) -> None:
    clean = workload("Deployment")
    privileged = copy.deepcopy(clean)
    privileged["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    # an update that makes a clean template privileged is denied, at the template's field path
    assert denial(port, cert, update_review(privileged, clean)) == PRIVILEGED
    # a Deployment admitted privileged before the rule: scaling it is allowed...
    scaled = copy.deepcopy(privileged)
    scaled["spec"]["replicas"] = 2
    assert denial(port, cert, update_review(scaled, privileged)) is None
    # ...adding a /dev hostPath is denied for that alone
    hostdev = copy.deepcopy(privileged)
    hostdev["spec"]["template"]["spec"]["volumes"] = [
        {"name": "dev", "hostPath": {"path": "/dev", "type": ""}}
    ]
    assert denial(port, cert, update_review(hostdev, privileged)) == HOST_DEV
    # and the same object on CREATE is denied for both, and for the log shipper that sets no
    # NVIDIA_VISIBLE_DEVICES next to a GPU container (the UPDATEs above already had that one)
    assert denial(port, cert, admission_review(hostdev)) == f"{PRIVILEGED}; {IMAGE_ENV}; {HOST_DEV}"


def test_validate_lets_a_finalizer_go_from_a_pod_admitted_before_the_rule(port: int, cert: Path) -> None:
    """Denying this UPDATE would leave the pod stuck in Terminating: the garbage collector's finalizer
    removal is an UPDATE of the pod."""
    old = gpu_pod()
    old["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    old["metadata"]["deletionTimestamp"] = "2026-12-03T10:00:00Z"
    old["metadata"]["finalizers"] = ["foregroundDeletion"]
    new = copy.deepcopy(old)
    del new["metadata"]["finalizers"]
    assert denial(port, cert, update_review(new, old)) is None
    # without an oldObject to compare with, every violation counts
    assert denial(port, cert, admission_review(new, operation="UPDATE")) is not None


def test_scheduler_name_goes_into_templates_but_never_into_a_pod_update(
    api: RunningApiServer,
    kubeconfig: Path,
    start_webhook: Callable[..., tuple[Component, int]],
    tls_pair: tuple[Path, Path],
) -> None:
    """With API access and ``--mutate-scheduler-name``: in a namespace labelled
    ``kubegpu.io/scheduler=enabled`` a CronJob's template gets ``schedulerName`` replaced (the API server
    defaulted it to ``default-scheduler``), while a Pod UPDATE never touches it (immutable on a pod)."""
    api.emulator.create(
        "namespaces", {"metadata": {"name": "ml", "labels": {"kubegpu.io/scheduler": "enabled"}}}
    )
    component, port = start_webhook("--kubeconfig", str(kubeconfig), "--mutate-scheduler-name", "kubegpu")
    cert = tls_pair[0]
    wait_ready(port, cert, component)
    at = "/spec/jobTemplate/spec/template/spec"

    def routed() -> bool:
        ops = patch_of(port, cert, admission_review(workload("CronJob")))
        return {"op": "replace", "path": f"{at}/schedulerName", "value": "kubegpu"} in ops

    wait_until(routed, what="the ml namespace's labels seen by the namespace informer")
    assert patch_of(port, cert, admission_review(workload("CronJob"))) == [
        {"op": "add", "path": f"{at}/tolerations", "value": [GPU_TOLERATION]},
        {"op": "replace", "path": f"{at}/schedulerName", "value": "kubegpu"},
        {"op": "add", "path": f"{at}/containers/1/env", "value": [VOID]},
    ]
    old = gpu_pod()
    new = copy.deepcopy(old)
    new["metadata"]["labels"]["audited"] = "true"
    assert patch_of(port, cert, update_review(new, old)) == [
        {"op": "add", "path": "/spec/tolerations/-", "value": GPU_TOLERATION}
    ]
