"""Per-node evidence shared between Pending pods explained against one engine (``explain.shared_evidence``).

The rule under test: a pod explained after others against the same engine gets exactly the explanation it
gets alone (a fresh engine), whatever the pods explained before it asked for; nodes whose state changed in
between are described as they are now. Expected values are each pod's explanation on a fresh engine of
the same objects (the reference path builds every line for that pod alone), plus hand-derived numbers.
"""

from __future__ import annotations

from typing import Any

from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.model.objects import Pod
from kubegpu.model.snapshot import ClusterSnapshot, build_snapshot
from kubegpu.testing.builders import make_node, make_pod

POOL = "cloud.google.com/gke-nodepool"


def _objects() -> list[Any]:
    """Two tainted batch nodes, two train nodes with 4 GPUs (running 3 and 2 GPUs), one serve node."""
    objs = [
        make_node(f"batch-{i}").gpus(4).label(POOL, "batch").taint("dedicated", "batch").obj()
        for i in range(2)
    ]
    objs += [make_node(f"train-{i}").gpus(4).label(POOL, "train").obj() for i in range(2)]
    objs.append(make_node("serve-0").gpus(4).label(POOL, "serve").obj())
    objs.append(make_pod("running-0").ns("ops").gpu(3).on("train-0").obj())
    objs.append(make_pod("running-1").ns("ops").gpu(2).on("train-1").obj())
    # Pending: 4-GPU train pods with different CPU and memory, 4-GPU pods with other selectors
    objs.append(make_pod("a").gpu(4).requests(cpu="4", memory="16Gi").node_selector(**{POOL: "train"}).obj())
    objs.append(make_pod("b").gpu(4).requests(cpu="32", memory="64Gi").node_selector(**{POOL: "train"}).obj())
    objs.append(make_pod("c").gpu(4).requests(cpu="8").node_selector(**{POOL: "serve"}).obj())
    objs.append(make_pod("d").gpu(2).requests(cpu="8").node_selector(**{POOL: "train"}).obj())
    # a pool no node is in: the selector refuses serve-0 as it does for a, with other lines
    objs.append(make_pod("e").gpu(4).requests(cpu="4", memory="16Gi").node_selector(**{POOL: "dev"}).obj())
    # required terms instead of a selector: the same request, terms naming different pools
    objs.append(make_pod("f").gpu(4).require([(POOL, "In", ["train"])]).obj())
    objs.append(make_pod("g").gpu(4).require([(POOL, "In", ["dev", "eval"])]).obj())
    return objs


def _snap(objs: list[Any]) -> ClusterSnapshot:
    snap = build_snapshot([("hand-built.yaml", o) for o in objs])
    assert not snap.errors
    return snap


def _alone(objs: list[Any], key: str) -> dict[str, Any]:
    snap = _snap(objs)
    pod = snap.pod(key)
    assert pod is not None
    return explain_pod(Engine(snap), pod).to_dict()


def _after_a(objs: list[Any]) -> tuple[Engine, Pod]:
    """An engine of ``objs`` that has explained pod a (its store filled), and pod b."""
    snap = _snap(objs)
    engine = Engine(snap)
    a, b = snap.pod("default/a"), snap.pod("default/b")
    assert a is not None and b is not None
    explain_pod(engine, a)
    return engine, b


def test_each_pod_explained_after_others_reads_as_alone() -> None:
    objs = _objects()
    snap = _snap(objs)
    engine = Engine(snap)
    keys = [
        "default/a",
        "default/b",
        "default/c",
        "default/d",
        "default/e",
        "default/f",
        "default/g",
        "default/a",
    ]
    together = {}
    for key in keys:
        pod = snap.pod(key)
        assert pod is not None
        together[key] = explain_pod(engine, pod)
    for key, exp in together.items():
        assert exp.to_dict() == _alone(objs, key), key
    a, b = together["default/a"], together["default/b"]
    # hand-derived, in node order: the taint refuses batch-0/1 (TaintToleration runs before NodeAffinity in
    # the default profile), train-0 and train-1 lack GPUs (4 asked, 1 and 2 free), serve-0 is outside the
    # selector; d (2 GPUs) fits train-1
    assert [(n.name, n.plugin) for n in a.nodes] == [
        ("batch-0", "TaintToleration"),
        ("batch-1", "TaintToleration"),
        ("train-0", "NodeResourcesFit"),
        ("train-1", "NodeResourcesFit"),
        ("serve-0", "NodeAffinity"),
    ]
    assert together["default/d"].schedulable and not together["default/d"].nodes
    by_name = {n.name: n for n in a.nodes}
    assert by_name["train-0"].evidence == [
        "nvidia.com/gpu: pod requests 4, node has 1 free (allocatable 4, already requested 3)"
    ]
    # the same request and selector: b's evidence is a's, the same objects (built once); every node's
    # verdict the same, so the same list, and each group's node names the same list too
    assert all(x is y for x, y in zip(a.nodes, b.nodes, strict=True))
    assert b.nodes is a.nodes
    assert [g.reason for g in a.groups] == [g.reason for g in b.groups]
    assert all(x.nodes is y.nodes for x, y in zip(a.groups, b.groups, strict=True))


def test_a_node_that_changed_is_described_as_it_is_now() -> None:
    """Explain a, then place a 1-GPU pod on train-1 in the engine's cluster, then explain b: train-1's
    line must read 1 free (4 − 2 − 1), as a fresh engine of the objects plus that pod says."""
    objs = _objects()
    engine, b = _after_a(objs)
    extra = make_pod("late").ns("ops").gpu(1).on("train-1")
    late = _snap([*objs, extra.obj()]).pod("ops/late")
    assert late is not None
    engine.cluster.add_pod(late, engine.cluster.index["train-1"])
    exp = explain_pod(engine, b)
    line = next(n for n in exp.nodes if n.name == "train-1").evidence
    assert line == ["nvidia.com/gpu: pod requests 4, node has 1 free (allocatable 4, already requested 3)"]
    assert exp.to_dict() == _alone([*objs, extra.obj()], "default/b")


def test_a_node_cordoned_in_between_is_refused_as_cordoned() -> None:
    """Explain a, cordon train-1 in the engine's cluster, explain b: train-1 is now refused by
    NodeUnschedulable (it runs first: pkg/scheduler/apis/config/v1/default_plugins.go), as on a fresh engine of the objects with train-1 cordoned."""
    objs = _objects()
    engine, b = _after_a(objs)
    engine.cluster.set_unschedulable(engine.cluster.index["train-1"], True)
    exp = explain_pod(engine, b)
    assert next(n for n in exp.nodes if n.name == "train-1").plugin == "NodeUnschedulable"
    cordoned = [
        make_node("train-1").gpus(4).label(POOL, "train").cordon().obj() if o["metadata"]["name"] == "train-1"
        else o
        for o in objs
    ]  # fmt: skip
    assert exp.to_dict() == _alone(cordoned, "default/b")
