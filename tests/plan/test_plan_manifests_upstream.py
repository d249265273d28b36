"""quota / time-slicing / upgrade plans against the API server's rules (QA findings, defects 7-9): what
``kubectl apply`` keeps or drops, what ResourceQuota validation refuses, and rollbacks that run as printed.
Expected values come from the upstream sources each docstring names, not from kubegpu's output."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from kubegpu.errors import InputError
from kubegpu.model.snapshot import build_snapshot
from kubegpu.plan.quota_change import plan_quota
from kubegpu.plan.time_slicing import plan_time_slicing
from kubegpu.plan.upgrade import plan_upgrade
from kubegpu.testing.builders import make_node, make_pod

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
SELECTOR = {"matchExpressions": [{"operator": "In", "scopeName": "PriorityClass", "values": ["high"]}]}


def _snap(*objs: dict[str, Any]) -> Any:
    s = build_snapshot([("t", o) for o in objs])
    assert not s.errors, s.errors
    return s


def _quota(**spec: Any) -> Any:
    q = {"apiVersion": "v1", "kind": "ResourceQuota",
         "metadata": {"name": "gpu", "namespace": "team-a", "resourceVersion": "42", "uid": "u-1"},
         "spec": {"hard": {"requests.nvidia.com/gpu": "8", "requests.cpu": "4"}, **spec}}  # fmt: skip
    return _snap(make_node("n1").gpus(8).obj(), q)


def _manifests(change: Any) -> list[dict[str, Any]]:
    return [yaml.safe_load(t) for n, t in change.details["manifests"].items() if "probe" not in n]


def test_quota_manifests_keep_the_scope_selector() -> None:
    """kubectl apply sends the whole object (k8s.io/kubectl pkg/cmd/apply): a spec.scopeSelector left out of
    the manifest is removed from the quota (its last-applied configuration had it), which makes a
    PriorityClass-scoped quota count every pod. Both the new and the rollback manifest keep it."""
    change = plan_quota(_quota(scopeSelector=SELECTOR), "team-a", "gpu", {"requests.nvidia.com/gpu": 4000})
    for m in _manifests(change):
        assert m["spec"]["scopeSelector"] == SELECTOR
        assert "resourceVersion" not in m["metadata"] and "uid" not in m["metadata"]


def test_a_quota_written_without_a_namespace_keeps_its_scope_selector_too() -> None:
    """A manifest without metadata.namespace is created in the default namespace (kubectl apply uses the
    context's namespace, "default" unless set: k8s.io/cli-runtime pkg/resource builder DefaultNamespace);
    the plan finds its stored spec there, so the scopeSelector and the user's exact texts stay."""
    q = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpu"},
         "spec": {"hard": {"requests.nvidia.com/gpu": "8", "requests.memory": "1.5"}, "scopeSelector": SELECTOR}}  # fmt: skip
    change = plan_quota(
        _snap(make_node("n1").gpus(8).obj(), q), "default", "gpu", {"requests.nvidia.com/gpu": 4000}
    )
    for m in _manifests(change):
        assert m["metadata"]["namespace"] == "default"
        assert m["spec"]["scopeSelector"] == SELECTOR
        assert m["spec"]["hard"]["requests.memory"] == "1.5"


def test_quota_keeps_fractional_quantities_exactly() -> None:
    """resource.Quantity keeps 1.5 exactly (k8s.io/apimachinery pkg/api/resource); requests.<extended> and
    memory are not integer resources (pkg/apis/core/helper IsIntegerResourceName: requests.-prefixed names
    are not extended resource names), so the API server stores 1.5 as given. The new manifest keeps the
    user's 1.5 and the rollback keeps the quota's own 1.5, neither rounded to 2."""
    s = _snap(make_node("n1").gpus(8).obj(), {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpu", "namespace": "team-a"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "8", "requests.memory": "1.5"}}})  # fmt: skip
    change = plan_quota(
        s, "team-a", "gpu", {"requests.nvidia.com/gpu": 2000}, texts={"requests.nvidia.com/gpu": "1.5"}
    )
    new = yaml.safe_load(change.details["manifests"]["gpu-new.yaml"])["spec"]["hard"]
    old = yaml.safe_load(change.details["manifests"]["gpu-rollback.yaml"])["spec"]["hard"]
    assert new == {"requests.nvidia.com/gpu": "1.5", "requests.memory": "1.5"}
    assert old == {"requests.nvidia.com/gpu": "8", "requests.memory": "1.5"}


@pytest.mark.parametrize(("key", "milli", "message"), [
    ("requests.nvidia.com/gpu", -1000, "must be greater than or equal to 0"),
    ("gpu", 4000, "must be a standard resource for quota"),
    ("pods", 1500, "must be an integer"),
    ("nvidia.com/gpu", 1500, "must be an integer"),
])  # fmt: skip
def test_quota_refuses_what_the_api_server_refuses(key: str, milli: int, message: str) -> None:
    """pkg/apis/core/validation/validation.go ValidateResourceQuotaSpec: ValidateResourceQuotaResourceName
    (a name without "/" must be a standard quota resource: isInvalidQuotaResource) and
    ValidateResourceQuantityValue (ValidateNonnegativeQuantity; integer resources and extended resource
    names must be whole: isNotIntegerErrorMsg)."""
    with pytest.raises(InputError, match=message):
        plan_quota(_quota(), "team-a", "gpu", {key: milli})


@pytest.mark.parametrize("key", ["limits.nvidia.com/gpu", "nvidia.com/gpu"])
def test_quota_says_not_enforced_where_the_api_server_accepts_but_ignores(key: str) -> None:
    """validation.go accepts any qualified name with a "/", but the pod evaluator counts extended resources
    only as requests.<name> (pkg/quota/v1/evaluator/core/pods.go isExtendedResourceNameForQuota): the plan
    goes ahead and says the entry is not enforced."""
    change = plan_quota(_quota(), "team-a", "gpu", {key: 4000})
    assert any(w.startswith(f"{key}: not enforced") for w in change.warnings)


def test_time_slicing_rollback_applies_a_manifest_without_server_set_fields() -> None:
    """The API server refuses an update whose metadata.resourceVersion is stale (409 Conflict,
    optimistic concurrency, staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go): the
    ConfigMap patched by the runbook has a new resourceVersion, so the rollback manifest must carry none
    (nor uid, creationTimestamp, managedFields), and must not be the `get -o yaml` backup."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "device-plugin-config", "namespace": "gpu-operator", "resourceVersion": "7",
                       "uid": "u", "creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": [{}]},
          "data": {"any": "version: v1\n"}}  # fmt: skip
    node = make_node("n1").gpus(2).parsed()
    change = plan_time_slicing(node, [], 2, configmap_object=cm)
    restore = next(st for st in change.rollback if "ConfigMap" in st.title)
    assert not any("-before.yaml" in c for c in restore.commands)
    manifest = yaml.safe_load(restore.note)
    assert manifest["data"] == cm["data"]
    assert not {"resourceVersion", "uid", "creationTimestamp", "managedFields"} & set(manifest["metadata"])
    bare = plan_time_slicing(node, [], 2)  # no ConfigMap in the snapshot: said, no command
    assert not any(
        "apply -f device-plugin-config-before.yaml" in c for st in bare.rollback for c in st.commands
    )


def test_driver_rollback_never_patches_a_placeholder() -> None:
    """A JSON patch replaces /spec/driver/version with exactly the value given (RFC 6902 "replace"): with
    the running version unknown (no tagged driver image), a placeholder would become the ClusterPolicy's
    version. The rollback prints no patch then; with the version known it patches that version back."""
    untagged = make_pod("drv").ns("gpu-operator").owner("DaemonSet", "nvidia-driver-daemonset").on("n1").obj()
    untagged["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/driver@sha256:" + "0" * 64
    s = _snap(make_node("n1").gpus(2).label("pool", "a").obj(), untagged)
    change = plan_upgrade(s, [s.node("n1")], "driver", "570.0", NOW)
    lines = [c for st in change.rollback for c in st.commands]
    assert not any("<" in c and ">" in c.split("<", 1)[1] for c in lines)
    assert not any("/spec/driver/version" in c for c in lines)


def test_plan_quota_admits_new_pods_with_the_releases_pod_level_resources() -> None:
    """PodLevelResources is alpha and off in 1.32-1.33 (the API server drops spec.resources), beta and on from
    1.34 (pkg/features/kube_features.go v1.34.4); quota then charges the pod-level cpu request (KEP-2837:
    pod-level requests are the pod's requests). plan quota's new pods were admitted as on 1.34 whatever the
    release; now as `schedule --pods` admits them: 3 cpu against a limit of 2 is refused on 1.34 only."""
    q = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpu", "namespace": "team-a"},
         "spec": {"hard": {"requests.cpu": "4", "requests.nvidia.com/gpu": "8"}}}  # fmt: skip
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"},
           "spec": {"resources": {"requests": {"cpu": "3"}, "limits": {"cpu": "3"}},
                    "containers": [{"name": "a", "image": "x",
                                    "resources": {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]}}  # fmt: skip
    rejected = {}
    for version in ("1.33", "1.34"):
        s = _snap(make_node("n1").gpus(8).obj(), q)
        s.kube_version = version
        change = plan_quota(s, "team-a", "gpu", {"requests.cpu": 2000}, new_pods=[("p.yaml", pod)])
        rejected[version] = [r["message"] for r in change.details["effect"]["quota_rejections"]]
    assert rejected["1.33"] == []
    assert rejected["1.34"] == [
        'pods "p" is forbidden: exceeded quota: gpu, requested: requests.cpu=3, used: requests.cpu=0, '
        "limited: requests.cpu=2"
    ]
