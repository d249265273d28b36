"""label / taint / cordon / drain plans against the upstream rules they model (QA findings, defects 1-6 and
10). Expected values come from the upstream sources each docstring names, not from kubegpu's output."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime
from typing import Any

import pytest

from kubegpu.errors import InputError
from kubegpu.model.objects import Taint
from kubegpu.model.snapshot import build_snapshot
from kubegpu.plan.node_ops import plan_drain, plan_label, plan_taint
from kubegpu.testing.builders import make_node, make_pod

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
POOL = "accelerator.example.com/pool"


def snap(*objs: dict[str, Any]) -> Any:
    s = build_snapshot([("t", o) for o in objs])
    assert not s.errors
    return s


def _lines(change: Any) -> list[str]:
    return [c for st in (*change.steps, *change.rollback) for c in st.commands]


def _pdb(name: str, allowed: int, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "default"},
            "spec": {**spec, "selector": {"matchLabels": {"app": name}}}, "status": {"disruptionsAllowed": allowed}}  # fmt: skip


def test_label_rollback_restores_each_nodes_own_old_value() -> None:
    """kubectl label (k8s.io/kubectl pkg/cmd/label/label.go): ``key=value`` needs --overwrite to replace a
    value, ``key-`` removes it. The nodes had different values (n1 a, n2 none): undoing is one valid command
    per node, n1 back to a, n2's key removed; every line is a whole shell command (no '#' in the middle)
    and each mutation comes after its --dry-run=server twin."""
    s = snap(make_node("n1").gpus(1).label(POOL, "a").obj(), make_node("n2").gpus(1).obj())
    change = plan_label(s, [s.node("n1"), s.node("n2")], POOL, "b", NOW)
    undo = change.rollback[0].commands
    assert set(undo) == {
        f"kubectl -n default label node n1 {POOL}=a --overwrite --dry-run=server",
        f"kubectl -n default label node n1 {POOL}=a --overwrite",
        f"kubectl -n default label node n2 {POOL}- --dry-run=server",
        f"kubectl -n default label node n2 {POOL}-",
    }
    for dry, real in zip(undo[::2], undo[1::2], strict=True):
        assert dry == f"{real} --dry-run=server"
    assert all("#" not in c and "<" not in c for c in _lines(change))


def test_label_removal_rollback_puts_each_value_back() -> None:
    """Removing a label the nodes carry with different values: the rollback re-sets each node's own value
    (kubectl label ``key=value --overwrite``), never another ``key-``."""
    s = snap(make_node("n1").gpus(1).label(POOL, "a").obj(), make_node("n2").gpus(1).label(POOL, "c").obj())
    change = plan_label(s, [s.node("n1"), s.node("n2")], POOL, None, NOW)
    real = [shlex.split(c) for c in change.rollback[0].commands if not c.endswith("--dry-run=server")]
    assert sorted(r[6] for r in real) == [f"{POOL}=a", f"{POOL}=c"]


def test_cordon_and_drain_rollback_leave_already_cordoned_nodes_cordoned() -> None:
    """kubectl uncordon sets spec.unschedulable=false whatever it was before (kubectl pkg/drain
    cordon.go CordonHelper.UpdateIfRequired): a node cordoned before the plan must not be uncordoned by
    its rollback."""
    s = snap(make_node("n1").gpus(1).cordon().obj(), make_node("n2").gpus(1).obj())
    for evict in (True, False):
        change = plan_drain(s, [s.node("n1"), s.node("n2")], NOW, evict=evict)
        undo = change.rollback[0].commands
        assert "kubectl -n default uncordon n2" in undo
        assert not any("uncordon n1" in c for c in undo)
        assert change.details["scope"]["cordoned_before"] == ["n1"]
        assert any("n1 was cordoned before this plan" in w for w in change.warnings)


def test_drain_refuses_a_node_with_a_bare_pod_and_evicts_nothing_there() -> None:
    """k8s.io/kubectl pkg/drain/filters.go unreplicatedFilter: a pod with no controller is a fatal error
    without --force; drain.go deleteOrEvictPodsSimple returns on GetPodsForDeletion's errors before evicting,
    so none of the node's pods is evicted (the node is cordoned first)."""
    s = snap(
        make_node("n1").gpus(2).obj(), make_node("n2").gpus(2).obj(),
        make_pod("bare").gpu(1).on("n1").obj(),
        make_pod("web").gpu(1).owner("ReplicaSet", "web-1").on("n1").obj(),
    )  # fmt: skip
    change = plan_drain(s, [s.node("n1")], NOW)
    assert change.details["scope"]["pods_evicted"] == []
    assert sorted(change.details["scope"]["pods_staying"]) == ["default/bare", "default/web"]
    assert change.details["effect"]["evicted"] == []
    assert any(
        "cannot delete Pods that declare no controller (use --force to override)" in w
        for w in change.warnings
    )


def test_drain_refuses_emptydir_without_delete_emptydir_data() -> None:
    """filters.go localStorageFilter: a pod with an emptyDir volume is refused unless
    --delete-emptydir-data ("cannot delete Pods with local storage (use --delete-emptydir-data to
    override)"); the runbook runs --delete-emptydir-data=false, so nothing on that node is evicted."""
    cache = make_pod("cache").gpu(1).owner("ReplicaSet", "cache-1").on("n1").obj()
    cache["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    s = snap(make_node("n1").gpus(2).obj(), make_node("n2").gpus(2).obj(), cache)
    change = plan_drain(s, [s.node("n1")], NOW)
    assert change.details["scope"]["pods_evicted"] == []
    assert any("cannot delete Pods with local storage (use --delete-emptydir-data to override)" in w
               for w in change.warnings)  # fmt: skip


def test_drain_evicts_only_what_each_pdb_allows() -> None:
    """The Eviction API (pkg/registry/core/pod/storage/eviction.go) admits an eviction while the PDB's
    status.disruptionsAllowed is above 0 and answers 429 otherwise: a PDB allowing 1 of 3 pods lets one go,
    and one with maxUnavailable 0 (disruptionsAllowed 0) lets none."""
    pods = [
        make_pod(f"inf-{i}").gpu(1).labels(app="inf").owner("ReplicaSet", "inf-1").on("n1").obj()
        for i in range(3)
    ]
    db = make_pod("db-0").gpu(1).labels(app="db").owner("StatefulSet", "db").on("n1").obj()
    s = snap(make_node("n1").gpus(4).obj(), make_node("n2").gpus(4).obj(), *pods, db,
             _pdb("inf", 1, minAvailable=2), _pdb("db", 0, maxUnavailable=0))  # fmt: skip
    change = plan_drain(s, [s.node("n1")], NOW)
    scope = change.details["scope"]
    assert len(scope["pods_evicted"]) == 1 and scope["pods_evicted"][0].startswith("default/inf-")
    assert sorted(scope["pods_staying"]) == ["default/db-0", *sorted(set(f"default/inf-{i}" for i in range(3))
                                                                 - set(scope["pods_evicted"]))]  # fmt: skip
    assert "expected: 1 pod(s) evicted here" in change.steps[2].note


def test_noexecute_taint_deletes_tolerating_pods_after_toleration_seconds_without_pdb() -> None:
    """pkg/controller/tainteviction/taint_eviction.go: pods that do not tolerate a NoExecute taint are
    deleted at once, pods that tolerate it with tolerationSeconds after getMinTolerationTime (the least);
    deletion is Pods().Delete, not the Eviction API, so a PDB does not hold any of them back."""
    tol = make_pod("tol").gpu(1).labels(app="inf").owner("ReplicaSet", "inf-1").on("n1").obj()
    tol["spec"]["tolerations"] = [
        {
            "key": "node.example.com/maint",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
        {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
    ]
    forever = make_pod("forever").gpu(1).owner("ReplicaSet", "f-1").on("n1").obj()
    forever["spec"]["tolerations"] = [
        {"key": "node.example.com/maint", "operator": "Exists", "effect": "NoExecute"}
    ]
    plain = make_pod("plain").gpu(1).labels(app="inf").owner("ReplicaSet", "inf-1").on("n1").obj()
    s = snap(make_node("n1").gpus(4).obj(), make_node("n2").gpus(4).obj(), tol, forever, plain,
             _pdb("inf", 0, minAvailable=2))  # fmt: skip
    change = plan_taint(s, [s.node("n1")], Taint("node.example.com/maint", "", "NoExecute"), False, NOW)
    assert sorted(e["pod"] for e in change.details["effect"]["evicted"]) == ["default/plain", "default/tol"]
    text = "\n".join(change.warnings)
    assert "default/tol after 60s" in text
    assert "Eviction API will refuse" not in text and "drain waits" not in text


def test_toleration_seconds_elsewhere_than_noexecute_is_refused_as_the_api_server_refuses_it() -> None:
    """pkg/apis/core/validation/validation.go ValidateTolerations: ``field.Invalid(idxPath.Child("effect"),
    ..., "effect must be 'NoExecute' when `tolerationSeconds` is set")``; such a pod never exists."""
    bad = make_pod("bad").gpu(1).obj()
    bad["spec"]["tolerations"] = [
        {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}
    ]
    s = build_snapshot([("pods.yaml", bad)])
    assert [str(e) for e in s.errors] == [
        'pods.yaml: Pod default/bad: spec.tolerations[0].effect: Invalid value: "NoSchedule": '
        "effect must be 'NoExecute' when `tolerationSeconds` is set"
    ]


@pytest.mark.parametrize("key", ["node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready",
                                 "karpenter.sh/disrupted", "node.cloudprovider.kubernetes.io/uninitialized",
                                 "ToBeDeletedByClusterAutoscaler"])  # fmt: skip
def test_controller_owned_taints_get_no_runbook(key: str) -> None:
    """Taints their owners manage: the node lifecycle controller (pkg/controller/nodelifecycle,
    TaintNodesByCondition), the cloud controller manager (uninitialized), Karpenter (karpenter.sh/disrupted)
    and Cluster Autoscaler (ToBeDeletedByClusterAutoscaler). A plan names the owner and prints no change."""
    s = snap(make_node("n1").gpus(1).obj())
    change = plan_taint(s, [s.node("n1")], Taint(key, "", "NoSchedule"), False, NOW)
    assert not any(c.startswith("kubectl") and " taint " in c for c in _lines(change))
    assert "reverts it" in change.warnings[0]


@pytest.mark.parametrize("key", ["nvidia.com/gfd.timestamp", "nvidia.com/mig-1g.10gb.count", "nvidia.com/vgpu.present",
                                 "node.kubernetes.io/windows-build", "kubelet.kubernetes.io/x", "nvidia.com/gpu.product",
                                 "topology.kubernetes.io/zone", "karpenter.sh/nodepool"])  # fmt: skip
def test_component_written_labels_get_no_runbook(key: str) -> None:
    """Labels GPU Feature Discovery writes (gfd.timestamp, mig-<profile>.count, vgpu.*, gpu.*), the
    kubelet's (node.kubernetes.io/windows-build, kubelet.kubernetes.io/*), the cloud provider's and
    Karpenter's: the writer puts its value back, so the plan prints no label command."""
    s = snap(make_node("n1").gpus(1).obj())
    change = plan_label(s, [s.node("n1")], key, "x", NOW)
    assert not any(" label node " in c for c in _lines(change))
    assert "writes its value back" in change.warnings[0]


@pytest.mark.parametrize(("key", "value"), [
    ("bad@key", "v"), ("a/b/c", "v"), ("/k", "v"), ("k" * 64, "v"), ("-k", "v"),
    ("k", "v" * 64), ("k", "-v"), ("k", "a b"), ("k\n", "v"), ("k", "v\n"), ("example.com\n/k", "v"),
])  # fmt: skip
def test_invalid_label_keys_and_values_are_refused(key: str, value: str) -> None:
    """k8s.io/apimachinery/pkg/util/validation: IsQualifiedName (name part at most 63 characters of
    [-A-Za-z0-9_.] starting and ending alphanumeric, one optional DNS-subdomain prefix) and IsValidLabelValue
    (empty or the same, at most 63), each regexp matched whole (Go's ``$`` is the end of the text: a final
    newline is refused). The API server refuses these; the plan refuses them first."""
    s = snap(make_node("n1").gpus(1).obj())
    with pytest.raises(InputError):
        plan_label(s, [s.node("n1")], key, value, NOW)


def test_valid_edge_label_values_are_accepted() -> None:
    """IsValidLabelValue accepts the empty value and 63 characters; IsQualifiedName a 63-character name part."""
    s = snap(make_node("n1").gpus(1).obj())
    plan_label(s, [s.node("n1")], "example.com/" + "k" * 63, "", NOW)
    plan_label(s, [s.node("n1")], "k", "v" * 63, NOW)


@pytest.mark.parametrize("ns", ["", "a b", "Default", "-x", "team-a\n"])
def test_bad_namespaces_are_refused(ns: str) -> None:
    """kubectl -n takes a namespace name: IsDNS1123Label (lowercase alphanumerics and '-', at most 63)."""
    s = snap(make_node("n1").gpus(1).obj())
    with pytest.raises(InputError):
        plan_drain(s, [s.node("n1")], NOW, ns=ns)
    with pytest.raises(InputError):
        plan_taint(s, [s.node("n1")], Taint("k", "bad value", "NoSchedule"), False, NOW)
