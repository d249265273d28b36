"""The explainer's evidence for InterPodAffinity and PodTopologySpread reasons (``explain.causes.pod_affinity``),
and that what does not depend on the node is worked out once per pod, not once per node.

Every expected line is counted by hand from the objects built in each test. The reasons are kube-scheduler's
(``interpodaffinity/filtering.go``: ErrReasonAffinityRulesNotMatch, ErrReasonAntiAffinityRulesNotMatch,
ErrReasonExistingAntiAffinityRulesNotMatch; ``podtopologyspread/filtering.go``: ErrReasonConstraintsNotMatch).
"""

from __future__ import annotations

from typing import Any

import pytest

from kubegpu.explain.causes import dra as dra_cause
from kubegpu.explain.causes import pod_affinity as cause
from kubegpu.explain.engine import Engine
from kubegpu.explain.explanation import Explanation
from kubegpu.explain.pending import explain_pod
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.dra_allocator import SliceIndex, slice_index
from kubegpu.testing.builders import PodBuilder, make_node, make_pod
from tests.dra import objects as o

Z = "topology.kubernetes.io/zone"
WEB = {"app": "web"}


def zoned(*spec: tuple[str, str]) -> list[dict[str, Any]]:
    return [make_node(n).label(Z, z).obj() for n, z in spec]


def explain(pod: PodBuilder, *objs: dict[str, Any]) -> Explanation:
    snap = build_snapshot([("t", x) for x in (*objs, pod.obj())])
    assert not snap.errors
    found = snap.pod(f"default/{pod.obj()['metadata']['name']}")
    assert found is not None
    return explain_pod(Engine(snap), found)


def evidence(exp: Explanation) -> dict[str, list[str]]:
    return {n.name: n.evidence for n in exp.nodes}


def test_anti_affinity_names_the_pods_in_each_domain() -> None:
    """web-0 runs in z1 (node a), web-1 in z2 (node c): the pod's anti-affinity to app=web by zone rejects
    a and b (z1, 1 pod: web-0) and c (z2, 1 pod: web-1); both zones taken, so the advice says so."""
    exp = explain(make_pod("p").labels(app="web").pod_affinity(Z, WEB, anti=True),
                  *zoned(("a", "z1"), ("b", "z1"), ("c", "z2")),
                  make_pod("web-0").labels(app="web").on("a").obj(),
                  make_pod("web-1").labels(app="web").on("c").obj())  # fmt: skip
    head = f"required podAntiAffinity {{app=web}} by {Z}: {Z}="
    assert evidence(exp) == {
        "a": [head + "z1 already runs 1: web-0"],
        "b": [head + "z1 already runs 1: web-0"],
        "c": [head + "z2 already runs 1: web-1"],
    }
    (group,) = exp.groups
    assert group.fix.startswith(f"{Z} z1, z2 already run(s) a pod the required podAntiAffinity excludes "
                                "(2 domain(s) exist, all taken)")  # fmt: skip


def test_affinity_counts_matching_pods_per_domain() -> None:
    """One app=web pod runs, on a (z1); the pod wants app=web by zone. a is rejected by db's anti-affinity
    (db on a selects app=api), c (z2) and d (z3) hold 0 of the 1 matching pod."""
    exp = explain(make_pod("q").labels(app="api").pod_affinity(Z, WEB),
                  *zoned(("a", "z1"), ("c", "z2"), ("d", "z3")),
                  make_pod("web-0").labels(app="web").on("a").obj(),
                  make_pod("db").labels(app="db").on("a").pod_affinity(Z, {"app": "api"}, anti=True).obj())  # fmt: skip
    assert evidence(exp) == {
        "a": [f"pod default/db has required podAntiAffinity {{app=api}} by {Z}, which selects this pod"],
        "c": [
            f"required podAffinity {{app=web}} by {Z}: node's {Z}=z2 holds 0; matching pods per domain: z1: 1"
        ],
        "d": [
            f"required podAffinity {{app=web}} by {Z}: node's {Z}=z3 holds 0; matching pods per domain: z1: 1"
        ],
    }


def test_existing_anti_affinity_blames_the_pod_in_the_nodes_domain() -> None:
    """db-0 (node b, z1) and db-1 (node c, z2) keep app=api out of their zones: a and b are blamed on db-0,
    c on db-1."""
    exp = explain(make_pod("r").labels(app="api"), *zoned(("a", "z1"), ("b", "z1"), ("c", "z2")),
                  make_pod("db-0").labels(app="db").on("b").pod_affinity(Z, {"app": "api"}, anti=True).obj(),
                  make_pod("db-1").labels(app="db").on("c").pod_affinity(Z, {"app": "api"}, anti=True).obj())  # fmt: skip
    line = "pod default/{} has required podAntiAffinity {{app=api}} by " + Z + ", which selects this pod"
    assert evidence(exp) == {
        "a": [line.format("db-0")],
        "b": [line.format("db-0")],
        "c": [line.format("db-1")],
    }


def test_spread_skew_is_worked_out_from_the_domain_counts() -> None:
    """z1 (a, b) runs 2 app=web pods, z2 (c) none but c has 2 CPUs for a 3-CPU pod. On a or b the pod makes
    z1 hold 2 + 1 = 3 against z2's 0: skew 3 > maxSkew 1."""
    nodes = [make_node(n).label(Z, z).capacity(cpu=c).obj() for n, z, c in (("a", "z1", "4"), ("b", "z1", "4"),
                                                                            ("c", "z2", "2"))]  # fmt: skip
    exp = explain(make_pod("s").labels(app="web").spread(Z, 1, WEB).requests(cpu="3"), *nodes,
                  make_pod("web-0").labels(app="web").on("a").obj(),
                  make_pod("web-1").labels(app="web").on("b").obj())  # fmt: skip
    line = f"spread {{app=web}} by {Z} (maxSkew 1): z1=2, z2=0; here {Z}=z1: 2 + 1 - 0 = skew 3 > 1"
    ev = evidence(exp)
    assert ev["a"] == [line] and ev["b"] == [line]


def test_cluster_wide_scans_run_once_per_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    """Twelve nodes in two zones all reject the pod (each zone runs an app=web pod); the pods a term selects,
    and the running pods whose anti-affinity selects the pod do not depend on the node, so each
    scan of the placed pods runs once for the pod, not once per node (Context.once)."""
    calls: list[str] = []

    def counted(name: str) -> Any:
        real = getattr(cause, name)

        def call(*args: Any) -> Any:
            calls.append(name)
            return real(*args)

        return call

    for name in ("_select", "_anti_holders"):
        monkeypatch.setattr(cause, name, counted(name))
    nodes = zoned(*((f"n{i}", f"z{i % 2}") for i in range(12)))
    web = [make_pod(f"web-{i}").labels(app="web").on(f"n{i}").obj() for i in range(2)]
    exp = explain(make_pod("p").labels(app="web").pod_affinity(Z, WEB, anti=True), *nodes, *web)
    assert len(exp.nodes) == 12 and all(n.evidence for n in exp.nodes)
    assert calls.count("_select") == 1  # the pod's one anti-affinity term, evidence and advice together
    calls.clear()
    exp = explain(make_pod("r").labels(app="api"), *nodes,
                  *(make_pod(f"db-{i}").labels(app="db").on(f"n{i}").pod_affinity(Z, {"app": "api"}, anti=True).obj()
                    for i in range(2)))  # fmt: skip
    assert len(exp.nodes) == 12 and calls.count("_anti_holders") == 1


def test_dra_slice_index_is_built_once_per_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three DRA nodes of 1 GPU each and a claim for 2: every node is short. The slice index (every slice of
    the cluster) is the same for each node: built once for the pod, not per node and again per advice."""
    built: list[int] = []

    real = slice_index

    def index(dra: Any, features: Any) -> SliceIndex:
        built.append(1)
        return real(dra, features)

    monkeypatch.setattr(dra_cause, "slice_index", index)
    objs = [*o.gpu_classes(), *(x for n in ("n1", "n2", "n3") for x in o.gpu_node(n, 1)),
            o.claim("train", o.request("gpu", count=2)), o.pod("p", ("gpu", "train", ""))]  # fmt: skip
    snap = build_snapshot([("t", x) for x in objs])
    assert not snap.errors
    snap.kube_version = "1.34"
    pod = snap.pod("default/p")
    assert pod is not None
    exp = explain_pod(Engine(snap), pod)
    assert sorted(n.name for n in exp.nodes) == ["n1", "n2", "n3"]
    assert all("wants 2: 1 device(s) in reach" in n.evidence[0] for n in exp.nodes)
    assert len(built) == 1
