"""LimitRange defaulting and the LimitRanger admission plugin on pods being created (``schedule --pods``).

Upstream: pkg/apis/core/v1/defaults.go v1.37.2 ``SetDefaults_LimitRangeItem`` (a Container item's missing
default limit is its max; a missing default request its default limit, else its min) and
plugin/pkg/admission/limitranger/admission.go v1.37.2 (``mergeContainerResources``, ``minConstraint``,
``maxConstraint``). Objects: the kubernetes.io task pages "Configure Default CPU Requests and Limits for a
Namespace" (cpu-defaults.yaml, default-cpu-demo) and "Configure Minimum and Maximum CPU Constraints for a
Namespace" (cpu-constraints.yaml, constraints-cpu-demo-2/-3/-4), and the LimitRange of
intel/intel-device-plugins-for-kubernetes#1408 with the refusal it quotes. Every expected value was also
observed on a real kube-apiserver 1.37.2 (tools/kube/controlplane.py; /work/qa/accounting record).
"""

from __future__ import annotations

from typing import Any

from kubegpu.admission.admit import admit_pods
from kubegpu.model.snapshot import build_snapshot


def _lr(ns: str, name: str, item: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": name, "namespace": ns},
            "spec": {"limits": [{**item, "type": "Container"}]}}  # fmt: skip


def _pod(ns: str, name: str, container: str, resources: dict[str, Any] | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": container, "image": "nginx"}
    if resources is not None:
        c["resources"] = resources
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [c]}}  # fmt: skip


DOCS_DEFAULTS = _lr(
    "default-cpu-example", "cpu-limit-range", {"default": {"cpu": 1}, "defaultRequest": {"cpu": 0.5}}
)
DOCS_CONSTRAINTS = _lr(
    "constraints-cpu-example", "cpu-min-max-demo-lr", {"max": {"cpu": "800m"}, "min": {"cpu": "200m"}}
)
INTEL = _lr("intel", "gpu-count-constraint", {"max": {"gpu.intel.com/i915": 1}})


def _admit(*pods: dict[str, Any]):  # type: ignore[no-untyped-def]
    snap = build_snapshot([("t", o) for o in (DOCS_DEFAULTS, DOCS_CONSTRAINTS, INTEL)])
    assert not snap.errors, snap.errors
    return admit_pods(snap, [("pods.yaml", p) for p in pods])


def test_default_request_is_used_beside_a_default_limit() -> None:
    """default-cpu-demo: "the Container's CPU request is set to the default: 500m … limit … 1" (kubegpu took
    the default limit for the request too: 1)."""
    [adm] = _admit(_pod("default-cpu-example", "default-cpu-demo", "default-cpu-demo-ctr"))
    assert adm.pod is not None
    assert adm.pod.requests == {"cpu": 500}
    assert adm.raw is not None
    assert adm.raw["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu request for container default-cpu-demo-ctr; "
        "cpu limit for container default-cpu-demo-ctr"
    )


def test_a_max_alone_is_also_the_default_limit_and_request() -> None:
    """constraints-cpu-demo-4 ("No CPU request or limit"): it gets limit and request 800m, the max."""
    [adm] = _admit(_pod("constraints-cpu-example", "constraints-cpu-demo-4", "constraints-cpu-demo-4-ctr"))
    assert adm.pod is not None and adm.pod.requests == {"cpu": 800}


def test_a_device_cap_gives_every_container_that_device() -> None:
    """#1408's LimitRange caps gpu.intel.com/i915 at 1: a pod naming no GPU is given limit and request 1
    (what the thread asked: "whether it allows pods that do not request a GPU" — it makes them request one)."""
    [adm] = _admit(_pod("intel", "no-gpu", "c"))
    assert adm.pod is not None and adm.pod.requests == {"gpu.intel.com/i915": 1000}


def test_above_the_max_is_forbidden_with_upstreams_message() -> None:
    """#1408: 'pods "intel-dgpu-clinfo-gphs2" is forbidden: maximum gpu.intel.com/i915 usage per Container is
    1, but limit is 3'."""
    [adm] = _admit(_pod("intel", "intel-dgpu-clinfo-gphs2", "c", {"limits": {"gpu.intel.com/i915": 3}}))
    assert adm.pod is None and not adm.invalid
    assert adm.message == (
        'pods "intel-dgpu-clinfo-gphs2" is forbidden: maximum gpu.intel.com/i915 usage per Container is 1, '
        "but limit is 3"
    )


def test_min_and_max_of_the_docs_example() -> None:
    below, above = _admit(
        _pod("constraints-cpu-example", "constraints-cpu-demo-3", "constraints-cpu-demo-3-ctr",
             {"limits": {"cpu": "800m"}, "requests": {"cpu": "100m"}}),
        _pod("constraints-cpu-example", "constraints-cpu-demo-2", "constraints-cpu-demo-2-ctr",
             {"limits": {"cpu": "1.5"}, "requests": {"cpu": "500m"}}),
    )  # fmt: skip
    assert below.message == (
        'pods "constraints-cpu-demo-3" is forbidden: minimum cpu usage per Container is 200m, but request is 100m'
    )
    assert above.message == (
        'pods "constraints-cpu-demo-2" is forbidden: maximum cpu usage per Container is 800m, but limit is 1500m'
    )


def test_a_default_limit_below_the_request_is_invalid() -> None:
    """LimitRanger's defaults run before validation (kubernetes/website#45630, the limit-range page's
    example-conflict-with-limitrange-cpu: request 700m, default limit 500m → invalid)."""
    lr = _lr("default", "cpu-resource-constraint",
             {"default": {"cpu": "500m"}, "defaultRequest": {"cpu": "500m"}, "max": {"cpu": "1"}, "min": {"cpu": "100m"}})  # fmt: skip
    snap = build_snapshot([("t", lr)])
    pod = _pod("default", "example-conflict-with-limitrange-cpu", "demo", {"requests": {"cpu": "700m"}})
    [adm] = admit_pods(snap, [("pods.yaml", pod)])
    assert adm.invalid
    assert adm.message == (
        'Pod "example-conflict-with-limitrange-cpu" is invalid: spec.containers[0].resources.requests: '
        'Invalid value: "700m": must be less than or equal to cpu limit of 500m'
    )


def test_a_memory_ratio_is_a_plain_number_not_rounded_to_whole_bytes() -> None:
    """plugin/pkg/admission/limitranger/admission.go ``limitRequestRatioConstraint``: the enforced ratio is
    ``enforced.MilliValue()`` (1.5 → 1500 whatever the resource) against limit/request × 1000, and the message
    prints ``enforced.String()`` ("1500m") and the observed ratio with %f. kubegpu read a memory ratio as a
    memory amount (1.5 rounded up to 2 bytes) and admitted 1900Mi/1Gi = 1.855; the cpu twin was refused."""
    lr = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "ratio", "namespace": "team-a"},
          "spec": {"limits": [{"type": "Container", "maxLimitRequestRatio": {"memory": "1.5", "cpu": "1.5"}}]}}  # fmt: skip
    snap = build_snapshot([("t", lr)])
    assert not snap.errors, snap.errors
    res = {"requests": {"memory": "1Gi", "cpu": "1"}, "limits": {"memory": "1900Mi", "cpu": "1"}}
    [adm] = admit_pods(snap, [("pods.yaml", _pod("team-a", "r1", "app", res))])
    assert adm.message == (
        'pods "r1" is forbidden: memory max limit to request ratio per Container is 1500m, '
        "but provided ratio is 1.855469"
    )
    ok = {"requests": {"memory": "1Gi", "cpu": "1"}, "limits": {"memory": "1536Mi", "cpu": "1"}}
    [fits] = admit_pods(snap, [("pods.yaml", _pod("team-a", "r2", "app", ok))])
    assert fits.pod is not None and not fits.message


def test_manifests_of_the_wrong_shape_are_one_error_line_not_a_traceback() -> None:
    """The API server fails to decode a manifest whose fields have the wrong type (a list for a map, null for
    a container) before any admission plugin runs; kubegpu's LimitRanger defaulting and RuntimeClass steps
    ran on the raw manifest first and raised TypeError/AttributeError (``schedule --pods``). Now each is one
    line naming the object, as the snapshot's parse reports it (the reproductions of the change's review)."""
    kata = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "kata"}, "handler": "kata",
            "overhead": {"podFixed": {"cpu": "250m"}}}  # fmt: skip
    nvidia = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"},
              "handler": "nvidia", "scheduling": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}}  # fmt: skip
    snap = build_snapshot([("t", o) for o in (DOCS_DEFAULTS, kata, nvidia)])
    assert not snap.errors, snap.errors
    bad = [
        {"containers": [{"name": "a", "image": "x", "resources": {"limits": [1]}}]},
        {"containers": [None]},
        {"containers": "abc"},
        {"runtimeClassName": "kata", "overhead": [1], "containers": [{"name": "a", "image": "x"}]},
        {"runtimeClassName": "nvidia", "nodeSelector": [1], "containers": [{"name": "a", "image": "x"}]},
    ]
    for i, spec in enumerate(bad):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"z{i}", "namespace": "default-cpu-example"},
               "spec": spec}  # fmt: skip
        [adm] = admit_pods(snap, [("pods.yaml", pod)])
        assert adm.invalid and adm.pod is None, (spec, adm.message)
        assert f"Pod default-cpu-example/z{i}" in adm.message and "\n" not in adm.message, adm.message
