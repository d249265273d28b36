"""InterPodAffinity and PodTopologySpread: hand-derived verdicts and scores, per-version behaviour, input
errors. Sources: kubernetes ``pkg/scheduler/framework/plugins/interpodaffinity/{filtering,scoring}.go`` and
``podtopologyspread/{common,filtering,scoring}.go`` (v1.32.13–v1.37.2 read from the Go module cache);
feature gates from ``pkg/features/kube_features.go`` of each release.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubegpu.errors import InputError
from kubegpu.model import parse
from kubegpu.scheduler.framework import CycleState
from kubegpu.scheduler.plugins import names
from kubegpu.testing.builders import make_node, make_pod
from tests.conftest import scheduler_for

ZONE = "topology.kubernetes.io/zone"
WEB = {"app": "web"}


def zoned(*spec: tuple[str, str], **labels: str) -> list[dict[str, Any]]:
    out = []
    for n, z in spec:
        b = make_node(n).label(ZONE, z)
        for k, v in labels.items():
            b.label(k, v)
        out.append(b.obj())
    return out


def test_first_pod_of_a_group_may_start_it() -> None:
    """filtering.go satisfiesSelfAffinityCheck: no pod matches the term anywhere and the pod matches its
    own term, so every node carrying the key passes (upstream test "pod matches its own Label in
    PodAffinity and that matches the existing pod Labels")."""
    s = scheduler_for(*zoned(("a", "z1"), ("b", "z2")))
    r = s.schedule_one(make_pod("p").labels(app="web").pod_affinity(ZONE, WEB).parsed())
    assert r.scheduled


def test_affinity_needs_the_topology_label() -> None:
    """A node without the term's topologyKey fails even when the pod could start the group."""
    nodes = [make_node("a").obj(), *zoned(("b", "z1"))]
    s = scheduler_for(*nodes)
    r = s.schedule_one(make_pod("p").labels(app="web").pod_affinity(ZONE, WEB).parsed())
    assert r.node == "b"


def test_namespace_selector_reaches_other_namespaces() -> None:
    """A term's namespaceSelector selects pods in namespaces whose labels match it; without namespaces or
    namespaceSelector the term covers the pod's own namespace only (newAffinityTerm)."""
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other", "labels": {"team": "x"}}}
    objs = [ns, *zoned(("a", "z1"), ("b", "z2")), make_pod("w").ns("other").labels(app="web").on("a").obj()]
    plain = make_pod("p").labels(app="api").pod_affinity(ZONE, WEB, anti=True)
    s = scheduler_for(*objs)
    s.cluster.namespace_labels = {"other": {"team": "x"}}
    own_only = s.framework.filter_plugins
    state = CycleState()
    pod = plain.parsed()
    ipa = next(p for p in own_only if p.name == names.INTER_POD_AFFINITY)
    ipa.pre_filter(state, pod, s.cluster)  # type: ignore[attr-defined]
    codes, _ = ipa.filter_batch(state, pod, s.cluster, np.arange(2, dtype=np.intp))  # type: ignore[attr-defined]
    assert codes.tolist() == [0, 0]  # the term covers default only: w (in other) is not selected
    pod = make_pod("p").labels(app="api").pod_affinity(ZONE, WEB, anti=True,
                                                        namespaceSelector={"matchLabels": {"team": "x"}}).parsed()  # fmt: skip
    codes, _ = ipa.filter_batch(state, pod, s.cluster, np.arange(2, dtype=np.intp))  # type: ignore[attr-defined]
    a = s.cluster.index["a"]
    assert codes[a] != 0 and codes[1 - a] == 0


def test_mismatch_label_keys_apply_from_1_31() -> None:
    """MatchLabelKeysInPodAffinity: beta and on by default in 1.31 (kube_features.go); 1.30's API server
    drops the fields, so there web-0 (ver=1) is selected and blocks its zone."""
    objs = [*zoned(("a", "z1")), make_pod("web-0").labels(app="web", ver="1").on("a").obj()]
    pod = (
        make_pod("p").labels(app="web", ver="1").pod_affinity(ZONE, WEB, anti=True, mismatchLabelKeys=["ver"])
    )
    assert scheduler_for(*objs, kube_version="1.31").schedule_one(pod.parsed()).node == "a"
    r = scheduler_for(*objs, kube_version="1.30").schedule_one(pod.parsed())
    assert not r.scheduled and "didn't match pod anti-affinity rules" in r.message


def test_preferred_affinity_scores_min_max() -> None:
    """scoring.go: +weight per matching pod in the node's domain, then int64(100 * (s - min) / (max - min)).
    db-0 on a (z1): a and b (z1) score 10, c (z2) 0 → 100, 100, 0; weight 2 in the profile → 200, 200, 0."""
    objs = [*zoned(("a", "z1"), ("b", "z1"), ("c", "z2")), make_pod("db-0").labels(app="db").on("a").obj()]
    s = scheduler_for(*objs)
    pod = make_pod("p").labels(app="web").pod_affinity(ZONE, {"app": "db"}, weight=10).parsed()
    rows = np.arange(3, dtype=np.intp)
    state = CycleState()
    _, parts = s.framework.run_scores(state, pod, s.cluster, rows)
    by_node = dict(
        zip((s.cluster.nodes[i].name for i in rows), parts[names.INTER_POD_AFFINITY].tolist(), strict=True)
    )
    assert by_node == {"a": 200, "b": 200, "c": 0}


def test_existing_pods_required_affinity_attracts_with_hard_weight() -> None:
    """processExistingPod: a running pod whose required affinity selects the incoming pod adds
    hardPodAffinityWeight (1) to its domain: a (z1) 1, b (z2) 0 → normalized 100, 0."""
    objs = [*zoned(("a", "z1"), ("b", "z2")),
            make_pod("fan").labels(app="fan").pod_affinity(ZONE, WEB).on("a").obj()]  # fmt: skip
    s = scheduler_for(*objs)
    pod = make_pod("p").labels(app="web").parsed()
    _, parts = s.framework.run_scores(CycleState(), pod, s.cluster, np.arange(2, dtype=np.intp))
    a = s.cluster.index["a"]
    assert (
        parts[names.INTER_POD_AFFINITY].tolist()[a] == 200
        and parts[names.INTER_POD_AFFINITY].tolist()[1 - a] == 0
    )


def test_spread_score_by_hand() -> None:
    """scoring.go: zones z1 (a, 2 matching pods) and z2 (b, c: none) → 2 domains, weight ln(2 + 2);
    a: 2·1.386 + (1 − 1) = 2.77 → 3, b and c 0; NormalizeScore 100·(max + min − s)/max with max 3,
    min 0: a 0, b and c 100; weight 2 → 0, 200, 200."""
    objs = [*zoned(("a", "z1"), ("b", "z2"), ("c", "z2")),
            *(make_pod(f"w{i}").labels(app="web").on("a").obj() for i in range(2))]  # fmt: skip
    s = scheduler_for(*objs)
    pod = make_pod("p").labels(app="web").spread(ZONE, 1, WEB, when="ScheduleAnyway").parsed()
    rows = np.arange(3, dtype=np.intp)
    _, parts = s.framework.run_scores(CycleState(), pod, s.cluster, rows)
    got = {
        s.cluster.nodes[i].name: v
        for i, v in zip(rows, parts[names.POD_TOPOLOGY_SPREAD].tolist(), strict=True)
    }
    assert got == {"a": 0, "b": 200, "c": 200}


@pytest.mark.parametrize(("policy", "fits"), [("Honor", True), ("Ignore", False)])
def test_node_affinity_policy_decides_the_domains(policy: str, fits: bool) -> None:
    """nodeAffinityPolicy Honor (the default) leaves out nodes the pod's nodeSelector excludes: b (z2, pool
    y) is no domain, the minimum is z1's 1 and a's skew is 1 + 1 − 1 = 1 ≤ 1. Ignore counts z2 (0):
    skew 2 > 1 (and b fails NodeAffinity)."""
    objs = [make_node("a").label(ZONE, "z1").label("pool", "x").obj(),
            make_node("b").label(ZONE, "z2").label("pool", "y").obj(),
            make_pod("w").labels(app="web").on("a").obj()]  # fmt: skip
    pod = (
        make_pod("p")
        .labels(app="web")
        .node_selector(pool="x")
        .spread(ZONE, 1, WEB, nodeAffinityPolicy=policy)
    )
    assert scheduler_for(*objs).schedule_one(pod.parsed()).scheduled is fits


def test_node_taints_policy_honor_drops_tainted_domains() -> None:
    """nodeTaintsPolicy Honor leaves out b (tainted, not tolerated): only z1 (1 pod) is a domain, skew on a
    is 1 + 1 − 1 = 1 ≤ 1; with the default Ignore, z2 (0) makes it 2 > 1."""
    objs = [make_node("a").label(ZONE, "z1").obj(), make_node("b").label(ZONE, "z2").taint("d", "x").obj(),
            make_pod("w").labels(app="web").on("a").obj()]  # fmt: skip
    honor = make_pod("p").labels(app="web").spread(ZONE, 1, WEB, nodeTaintsPolicy="Honor").parsed()
    ignore = make_pod("q").labels(app="web").spread(ZONE, 1, WEB).parsed()
    assert scheduler_for(*objs).schedule_one(honor).node == "a"
    assert not scheduler_for(*objs).schedule_one(ignore).scheduled


def test_terminating_and_foreign_pods_do_not_count_for_spread() -> None:
    """countPodsMatchSelector skips pods with a deletionTimestamp and pods of other namespaces: a's two
    pods do not count, so z1 and z2 both hold 0 and a's skew is 0 + 1 − 0 = 1."""
    dying = make_pod("w0").labels(app="web").on("a").obj()
    dying["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    objs = [
        *zoned(("a", "z1"), ("b", "z2")),
        dying,
        make_pod("w1").ns("other").labels(app="web").on("a").obj(),
    ]
    s = scheduler_for(*objs)
    pod = make_pod("p").labels(app="web").spread(ZONE, 1, WEB).parsed()
    plugin = next(p for p in s.framework.filter_plugins if p.name == names.POD_TOPOLOGY_SPREAD)
    codes, _ = plugin.filter_batch(CycleState(), pod, s.cluster, np.arange(2, dtype=np.intp))  # type: ignore[attr-defined]
    assert codes.tolist() == [0, 0]


def test_plain_pods_are_no_longer_flagged_unmodelled() -> None:
    pod = make_pod("p").labels(app="web").pod_affinity(ZONE, WEB).spread(ZONE, 1, WEB).parsed()
    assert pod.unmodelled_constraints == ()
    assert pod.pod_affinity.required and pod.spread_constraints


def test_two_constraints_on_one_key_and_action_are_refused() -> None:
    """The API server refuses them (validation.go ValidateSpreadConstraintNotRepeat; kube-apiserver 1.32.13
    answered ``spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value:
    "{topology.kubernetes.io/zone, DoNotSchedule}"``), so kubegpu does too, with the same field and value."""
    raw = make_pod("p").spread(ZONE, 1, WEB).spread(ZONE, 1, {"app": "db"}).obj()
    with pytest.raises(InputError) as err:
        parse.parse_pod(raw, "t.yaml")
    assert err.value.field == "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}"
    assert 'Duplicate value: "{topology.kubernetes.io/zone, DoNotSchedule}"' in str(err.value)


@pytest.mark.parametrize(
    ("field", "mutate"),
    [
        ("spec.topologySpreadConstraints[0].maxSkew", lambda r: r["spec"]["topologySpreadConstraints"][0].update(maxSkew=0)),
        ("spec.topologySpreadConstraints[0].whenUnsatisfiable",
         lambda r: r["spec"]["topologySpreadConstraints"][0].update(whenUnsatisfiable="Sometimes")),
        ("spec.topologySpreadConstraints[0].minDomains",
         lambda r: r["spec"]["topologySpreadConstraints"][0].update(minDomains=0)),
        ("spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
         lambda r: r["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0].pop("topologyKey")),
    ],
)  # fmt: skip
def test_invalid_terms_are_one_input_error(field: str, mutate: Any) -> None:
    """What the API server's validation refuses is an InputError naming the field, not a guess."""
    raw = make_pod("p").pod_affinity(ZONE, WEB).spread(ZONE, 1, WEB).obj()
    mutate(raw)
    with pytest.raises(InputError) as err:
        parse.parse_pod(raw, "t.yaml")
    assert err.value.field == field


def test_equivalence_cache_changes_no_decision_with_affinity() -> None:
    """Pods whose verdict depends on topology domains are evaluated fresh (their ``sign`` is None, and so is
    a plain pod's while a running pod's anti-affinity selects it): with the cache on, every placement and
    message equals the uncached run's. The queue mixes plain pods, zone anti-affinity, zone spread, and a
    guard whose anti-affinity later repels plain app=web pods from its zone."""
    from kubegpu.model.snapshot import build_snapshot
    from kubegpu.scheduler.cluster import ClusterState
    from kubegpu.scheduler.framework import Framework
    from kubegpu.scheduler.registry import default_profile, in_tree_registry
    from kubegpu.scheduler.schedule_one import Scheduler

    nodes = [make_node(f"n{i}").gpus(2).label(ZONE, f"z{i % 3}").obj() for i in range(9)]
    queue = []
    for j in range(40):
        b = make_pod(f"p{j}").gpu(1).labels(app="web" if j % 2 else "api")
        if j % 5 == 1:
            b.pod_affinity(ZONE, WEB, anti=True)
        elif j % 5 == 2:
            b.spread(ZONE, 1, WEB)
        elif j == 3:
            b.labels(app="guard").pod_affinity(ZONE, WEB, anti=True)
        queue.append(b.obj())
    results = []
    for cache in (True, False):
        snap = build_snapshot([("t", o) for o in [*nodes, *queue]])
        s = Scheduler(
            Framework(default_profile(), in_tree_registry()), ClusterState(snap.nodes), use_cache=cache
        )
        results.append([(r.node, r.message) for r in (s.schedule_one(p) for p in snap.pending_pods())])
    assert results[0] == results[1]
    assert any(n is None for n, _ in results[0]) and any(n for n, _ in results[0])
