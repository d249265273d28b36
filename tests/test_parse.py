"""Loading snapshots as the API server returns them, and bad input reported as one line per problem."""

from __future__ import annotations

import json
from pathlib import Path

from kubegpu import sources
from kubegpu.model.snapshot import build_snapshot
from kubegpu.testing.builders import make_node, make_pod


def test_list_kind_dump_loads_every_item(tmp_path: Path) -> None:
    """`kubectl get nodes,pods -A -o json` prints one v1 List holding every object."""
    doc = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [make_node("n1").gpus(8).obj(), make_pod("p").gpu(1).obj()],
    }
    (tmp_path / "dump.json").write_text(json.dumps(doc))
    snap = sources.load_files(tmp_path / "dump.json")
    assert [n.name for n in snap.nodes] == ["n1"]
    assert [p.key for p in snap.pods] == ["default/p"]
    assert snap.errors == []


def test_multi_document_yaml_and_directories(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "nodes.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: '4', nvidia.com/gpu: '2'}}\n"
        "---\napiVersion: v1\nkind: Node\nmetadata: {name: n2}\n"
    )
    (tmp_path / "b.yml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n")
    (tmp_path / "notes.txt").write_text("not a manifest")
    snap = sources.load_files(tmp_path)
    assert [n.name for n in snap.nodes] == ["n1", "n2"]
    assert [ns.name for ns in snap.namespaces] == ["team-a"]
    # SetDefaults_NodeStatus: a missing allocatable defaults to capacity
    assert snap.nodes[0].allocatable == {"cpu": 4000, "nvidia.com/gpu": 2000}


def test_invalid_yaml_names_file_line_and_column_and_keeps_other_files(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: ok}\n")
    (tmp_path / "bad.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: [broken\n")
    snap = sources.load_files(tmp_path)
    assert [n.name for n in snap.nodes] == ["ok"]
    assert len(snap.errors) == 1
    line = snap.errors[0].one_line()
    assert line.startswith(f"{tmp_path / 'bad.yaml'}: invalid YAML at line ")
    assert "\n" not in line


def test_unknown_kind_is_an_error_but_ordinary_kinds_are_ignored_quietly() -> None:
    snap = build_snapshot(
        [
            ("f.yaml", {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
            (
                "f.yaml",
                {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "d", "namespace": "x"}},
            ),
            ("f.yaml", make_node("n1").obj()),
        ]
    )
    assert [e.one_line() for e in snap.errors] == [
        "f.yaml: Widget w: kind: unknown kind 'Widget' (kubegpu reads Node, Pod, ResourceQuota, LimitRange, "
        "PriorityClass, PodDisruptionBudget, Namespace, PersistentVolumeClaim, PersistentVolume, StorageClass, "
        "CSINode, CSIDriver, CSIStorageCapacity, GpuQueue, GpuCohort, PodGroup, DaemonSet, ReplicaSet, ReplicationController, Job, Deployment, "
        "StatefulSet, Service, Event, Kueue's Workload/LocalQueue/ClusterQueue, Queue and their List forms)"
    ]
    assert snap.ignored == {"Endpoints": 1}
    assert [n.name for n in snap.nodes] == ["n1"]


def test_broken_quantity_names_object_and_field_and_the_rest_loads() -> None:
    bad = make_pod("p").ns("team-a").gpu(1).obj()
    bad["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "one"
    snap = build_snapshot([("pods.yaml", bad), ("pods.yaml", make_pod("q").obj())])
    assert len(snap.errors) == 1
    err = snap.errors[0]
    assert (err.source, err.obj, err.field) == (
        "pods.yaml",
        "Pod team-a/p",
        "spec.containers[0].resources.limits[nvidia.com/gpu]",
    )
    assert "'one'" in err.problem
    assert [p.key for p in snap.pods] == ["default/q"]


def test_missing_required_fields_are_reported() -> None:
    no_name = {"apiVersion": "v1", "kind": "Node", "metadata": {}}
    no_containers = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
    bad_taint = make_node("n").obj()
    bad_taint["spec"]["taints"] = [{"key": "k", "effect": "Sometimes"}]
    snap = build_snapshot([("s", no_name), ("s", no_containers), ("s", bad_taint)])
    assert [(e.obj, e.field) for e in snap.errors] == [
        ("Node <no name>", "metadata.name"),
        ("Node n", "spec.taints[0].effect"),
        ("Pod p", "spec.containers"),
    ]


def test_duplicate_objects_keep_the_first_copy() -> None:
    snap = build_snapshot([("a", make_node("n").gpus(8).obj()), ("b", make_node("n").gpus(4).obj())])
    assert len(snap.nodes) == 1 and snap.nodes[0].allocatable["nvidia.com/gpu"] == 8000
    assert snap.errors[0].one_line() == "b: Node n: duplicate object; the first copy was kept"


def test_limit_alone_implies_request_as_set_defaults_pod_does() -> None:
    pod = make_pod("p").gpu(2).parsed()
    assert pod.containers[0].requests == {"nvidia.com/gpu": 2000}


def test_priority_class_name_resolves_when_spec_priority_is_unset() -> None:
    """The Priority admission plugin fills spec.priority from the class (and the global default)."""
    pc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
    }
    default = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "low"},
        "value": 5,
        "globalDefault": True,
    }
    named = make_pod("a").obj()
    named["spec"]["priorityClassName"] = "high"
    snap = build_snapshot([("s", named), ("s", pc), ("s", default), ("s", make_pod("b").obj())])
    assert {p.name: p.priority for p in snap.pods} == {"a": 1000, "b": 5}


def test_demo_cluster_loads_cleanly() -> None:
    snap = sources.load_demo()
    assert snap.errors == []
    assert len(snap.nodes) == 9  # the seed's six plus an NVLink, a time-sliced and a MIG node
