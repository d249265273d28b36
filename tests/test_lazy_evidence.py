"""A Pending pod's per-node evidence is built when read (issue 25: the table view of ``diagnose`` reads a
few nodes' evidence per group, the nearest misses; building every node's for every pod cost most of a
5,000-node diagnosis where the evidence reads the pod, a hostname pin say).

The oracle is the evidence built in full: a part built alone, and the nearest misses chosen from the
nodes' names and kinds, must be what reading every node gives."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kubegpu.explain import causes
from kubegpu.explain.diagnose import diagnose
from kubegpu.explain.engine import Engine
from kubegpu.explain.explanation import NodeList
from kubegpu.explain.pending import explain_pod
from kubegpu.explain.summary import gpu_free_by_node, nearest_misses, pod_ask
from kubegpu.model.snapshot import build_snapshot
from kubegpu.testing.builders import make_node, make_pod
from tests.scale_fleet import BENCH, script


def _fleet(kind: str, nodes: int, pending: int, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The benchmark's fleets (``benchmarks/bench_scale.py``): plain, hostname-pinned, mixed causes."""
    if kind == "mixed":
        monkeypatch.syspath_prepend(str(BENCH.parent))  # (mixed_fleet imports its sibling, as a script)
        data = script(BENCH.parent / "mixed_fleet.py").generate_mixed(nodes, pending, 0)
    else:
        bench = script(BENCH)
        data = bench.generate_pinned(nodes, pending) if kind == "pinned" else bench.generate(nodes, pending)
    return build_snapshot([("gen.json", o) for o in data["items"]])


@pytest.mark.parametrize("kind", ["plain", "pinned", "mixed"])
def test_nearest_misses_read_off_names_and_kinds_are_those_of_the_full_evidence(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per Pending pod of the benchmark's fleets (plain, hostname-pinned, mixed causes): the nearest misses
    the lazy list gives (names and kinds, then the few nodes' evidence) equal those chosen from every
    node's evidence as a plain list."""
    snap = _fleet(kind, 60, 40, monkeypatch)
    report = diagnose(Engine(snap), pool_label="cloud.google.com/gke-nodepool")
    gpus = gpu_free_by_node(report)
    checked = 0
    for exp in report.pending:
        if not isinstance(exp.nodes, NodeList):
            continue
        pod = snap.pod(exp.pod)
        assert pod is not None
        ask = pod_ask(pod)
        lazy = nearest_misses(exp, ask, gpus)
        full = nearest_misses(dataclasses.replace(exp, nodes=list(exp.nodes)), ask, gpus)
        assert [n.to_dict() for n in lazy] == [n.to_dict() for n in full]
        checked += bool(full)
    assert checked  # some pod had nearest misses to compare


def _pinned_cluster() -> Any:
    nodes = [make_node(f"n{i}").gpus(1).obj() for i in range(6)]
    busy = [make_pod(f"busy-{i}").gpu(1).on(f"n{i}").obj() for i in range(3)]
    pending = make_pod("p").ns("team-a").gpu(1).selector("kubernetes.io/hostname", "n1").obj()
    return build_snapshot([("t.yaml", o) for o in [*nodes, *busy, pending]])


def test_a_part_is_built_alone_and_reads_as_the_same_nodes_in_full(monkeypatch: pytest.MonkeyPatch) -> None:
    snap = _pinned_cluster()
    pod = snap.pod("team-a/p")
    assert pod is not None
    built: list[int] = []
    real = causes.evidence_many

    def counting(ctx: Any, reason: Any, rows: list[int]) -> Any:
        built.extend(rows)
        return real(ctx, reason, rows)

    monkeypatch.setattr(causes, "evidence_many", counting)
    engine = Engine(snap)
    rows = {n.name: i for i, n in enumerate(engine.cluster.nodes)}
    exp = explain_pod(engine, pod)
    assert isinstance(exp.nodes, NodeList) and not built  # nothing read yet, nothing built
    part = exp.nodes.pick([rows["n4"], rows["n1"]])
    assert sorted(built) == sorted([rows["n4"], rows["n1"]])  # only the two asked for
    every = {n.name: n for n in explain_pod(Engine(snap), pod).nodes}  # another engine: built in full
    assert [n.to_dict() for n in part] == [every["n4"].to_dict(), every["n1"].to_dict()]
    # n1 is the pinned node, refused for its taken GPU; n4 by the pin (upstream NodeAffinity)
    assert part[1].reasons == ["Insufficient nvidia.com/gpu"]
    assert part[0].plugin == "NodeAffinity"
    assert len(exp.nodes) == 6 == len(list(exp.nodes))


def test_evidence_read_after_the_cluster_changed_is_refused() -> None:
    """The verdicts are of the state the pod was explained against; its evidence, built later against
    another state, would contradict them: reading it then is an error, not a silent mix."""
    snap = _pinned_cluster()
    pod, other = snap.pod("team-a/p"), make_pod("q").gpu(1).obj()
    assert pod is not None
    engine = Engine(snap)
    exp = explain_pod(engine, pod)
    engine.scheduler.schedule_one(build_snapshot([("q.yaml", other)]).pods[0], assume=True)
    with pytest.raises(RuntimeError, match="changed"):
        list(exp.nodes)
    # read before the change, it stays readable after it
    engine2 = Engine(snap)
    kept = explain_pod(engine2, pod)
    names = [n.name for n in kept.nodes]
    engine2.scheduler.schedule_one(build_snapshot([("q.yaml", other)]).pods[0], assume=True)
    assert [n.name for n in kept.nodes] == names
