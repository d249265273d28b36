"""Loading snapshots as the API server returns them, and bad input reported as one line per problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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


_READS = (
    "kubegpu reads Node, Pod, ResourceQuota, LimitRange, PriorityClass, RuntimeClass, PodDisruptionBudget, Namespace, "
    "PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode, CSIDriver, CSIStorageCapacity, GpuQueue, "
    "GpuCohort, PodGroup, DaemonSet, ReplicaSet, ReplicationController, Job, Deployment, StatefulSet, Service, "
    "Event, Kueue's Workload/LocalQueue/ClusterQueue, Queue and their List forms"
)


def _obj(api: str | None, kind: str, name: str = "o", **rest: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": kind, "metadata": {"name": name, "namespace": "x"}, **rest}
    if api is not None:
        out["apiVersion"] = api
    return out


def test_a_kind_its_builtin_group_does_not_serve_is_an_error_and_built_in_kinds_are_ignored_quietly() -> None:
    snap = build_snapshot(
        [
            ("f.yaml", _obj("v1", "Pdo", "p")),  # the API server refuses it: no such kind in the core group
            ("f.yaml", _obj("apps/v1", "Pod", "q")),  # a kind of another group
            ("f.yaml", _obj(None, "Widget", "w")),  # no apiVersion: its kind alone decides
            ("f.yaml", _obj("v1", "Endpoints", "d")),
            ("f.yaml", _obj("v1", "PodTemplate", "t")),
            ("f.yaml", make_node("n1").obj()),
        ]
    )
    assert [e.one_line() for e in snap.errors] == [
        f"f.yaml: Pdo x/p: kind: unknown kind 'Pdo': v1 serves no such kind, the API server would refuse it ({_READS})",
        f"f.yaml: Pod x/q: kind: unknown kind 'Pod': apps/v1 serves no such kind, the API server would refuse it ({_READS})",
        f"f.yaml: Widget x/w: kind: unknown kind 'Widget' ({_READS})",
    ]
    assert snap.ignored == {"Endpoints": 1, "PodTemplate": 1}
    assert not snap.not_modelled and snap.not_modelled_note() == ""
    assert [n.name for n in snap.nodes] == ["n1"]


def test_other_projects_objects_are_accepted_counted_and_named_once() -> None:
    snap = build_snapshot(
        [
            ("f.yaml", _obj("example.com/v1", "Widget", "w1")),
            ("f.yaml", _obj("kai.scheduler/v1", "SchedulingShard", "s")),
            ("f.yaml", _obj("example.com/v1", "Widget", "w2")),
            # a kind kubegpu reads, but of another group: another project's object of the same name
            ("f.yaml", _obj("batch.volcano.sh/v1alpha1", "Job", "vj")),
            (
                "f.yaml",
                _obj("kueue.x-k8s.io/v1beta1", "AdmissionCheck", "ac"),
            ),  # Kueue: only its queues are read
            # Kubernetes' own gang scheduling objects (1.35+): built in, but bear on scheduling, so said
            ("f.yaml", _obj("scheduling.k8s.io/v1alpha2", "PodGroup", "pg", spec={"schedulingPolicy": {}})),
            ("f.yaml", _obj("scheduling.k8s.io/v1alpha1", "Workload", "wl")),
        ]
    )
    assert snap.errors == []
    assert list(snap.not_modelled.items()) == [
        (("example.com", "Widget"), 2),
        (("kai.scheduler", "SchedulingShard"), 1),
        (("batch.volcano.sh", "Job"), 1),
        (("kueue.x-k8s.io", "AdmissionCheck"), 1),
        (("scheduling.k8s.io", "PodGroup"), 1),
        (("scheduling.k8s.io", "Workload"), 1),
    ]
    assert snap.not_modelled_note() == (
        "not modelled: 2 Widget (example.com), 1 SchedulingShard (kai.scheduler), 1 Job (batch.volcano.sh), "
        "1 AdmissionCheck (kueue.x-k8s.io), 1 PodGroup (scheduling.k8s.io), 1 Workload (scheduling.k8s.io): "
        "they do not enter the diagnosis"
    )
    assert snap.records.controllers == [] and snap.batch_objects == [] and snap.records.queues == []
    assert snap.raw_objects == []  # nothing of them is written back


def test_each_kind_is_read_from_its_own_groups() -> None:
    snap = build_snapshot(
        [
            ("f.yaml", _obj("batch/v1", "Job", "j")),
            ("f.yaml", _obj("extensions/v1beta1", "Deployment", "d")),  # before 1.16: apps' Deployment
            ("f.yaml", _obj("scheduling.volcano.sh/v1beta1", "PodGroup", "vg", spec={"minMember": 2})),
            ("f.yaml", _obj("scheduling.x-k8s.io/v1alpha1", "PodGroup", "cg", spec={"minMember": 3})),
            ("f.yaml", _obj("scheduling.run.ai/v2alpha2", "PodGroup", "kg", spec={"minMember": 0})),
            ("f.yaml", _obj(None, "PodGroup", "ng")),  # hand-written without an apiVersion: read as before
            ("f.yaml", _obj("scheduling.run.ai/v2", "Queue", "kq")),
            ("f.yaml", _obj("scheduling.volcano.sh/v1beta1", "Queue", "vq")),
            ("f.yaml", _obj("kueue.x-k8s.io/v1beta1", "Workload", "kw")),
        ]
    )
    assert snap.errors == []
    assert [(c.kind, c.name) for c in snap.records.controllers] == [("Job", "j"), ("Deployment", "d")]
    assert [raw["metadata"]["name"] for _, raw in snap.batch_objects] == ["vg", "cg", "ng"]
    assert [q["metadata"]["name"] for q in snap.records.queues] == ["kq", "vq", "kw"]
    assert snap.not_modelled == {("scheduling.run.ai", "PodGroup"): 1}


def test_every_kind_read_is_served_by_the_built_in_groups_it_is_read_from() -> None:
    """The routing tables agree: a kind read from a built-in group is one that group serves (else the
    object would be both read and refused), and every DRA and volume kind has its group."""
    from kubegpu.model import snapshot as s
    from kubegpu.model.dra import KINDS as DRA_KINDS
    from kubegpu.model.volumes import KINDS as VOLUME_KINDS

    tables = {**s._CORE_GROUPS, **s.BATCH_GROUPS, **s.RECORD_GROUPS}
    assert set(DRA_KINDS) | set(VOLUME_KINDS) <= set(tables)
    for kind, groups in tables.items():
        for group in groups:
            assert group not in s.BUILTIN_KINDS or kind in s.BUILTIN_KINDS[group], (kind, group)
            assert s.reads(kind, group) and (group, kind) not in s.NOT_MODELLED_BUILTIN


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


def test_a_name_ending_in_a_newline_is_refused_as_go_refuses_it() -> None:
    """k8s.io/apimachinery pkg/util/validation IsDNS1123Subdomain / IsDNS1123Label match the whole name
    (Go's ``$`` is the end of the text); a trailing newline is not a valid name character, so the API server
    refuses "gpu-node\\n" and "team-a\\n" (Python's ``$`` alone would let them through)."""
    node, pod = make_node("gpu-node\n").obj(), make_pod("p").ns("team-a\n").obj()
    snap = build_snapshot([("s", node), ("s", pod), ("s", make_node("ok").obj())])
    assert [e.field for e in snap.errors] == ["metadata.name", "metadata.namespace"]
    assert "RFC 1123 subdomain" in snap.errors[0].problem and "RFC 1123 label" in snap.errors[1].problem
    assert [n.name for n in snap.nodes] == ["ok"]


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
