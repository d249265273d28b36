"""InterPodAffinity and PodTopologySpread filters against a line-by-line transcription of upstream's loops.

The reference below walks every placed pod and every node exactly as kube-scheduler's PreFilter/Filter do
(``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go`` and ``podtopologyspread/filtering.go``,
``common.go`` of v1.37.2, the same rules as 1.32.13–1.36.3 in the module cache): no groups, no columns,
no bincounts. On random clusters the plugins' columnar answers (code and reason, per node) must equal it.

The reference matches selectors itself, never through kubegpu's ``term_selector`` / ``spread_selector`` /
``LabelSelector.matches``, so a fault there fails this test: ``metav1.LabelSelectorAsSelector``
(apimachinery ``pkg/apis/meta/v1/helpers.go``: a nil selector matches nothing, ``{}`` everything, each
``matchLabels`` entry is ``key = value``) with ``labels.Requirement.Matches`` (``pkg/labels/selector.go``:
In needs the key with a listed value, NotIn passes an absent key, Exists / DoesNotExist); a pod-affinity
term's ``matchLabelKeys`` / ``mismatchLabelKeys`` added as ``key In (owner's value)`` / ``key NotIn (owner's
value)`` for the keys the owner has, when its selector is not nil (kube-apiserver, ``pkg/registry/core/pod/
strategy.go`` ``applyMatchLabelKeysAndMismatchLabelKeys``); a spread constraint's ``matchLabelKeys`` ANDed
as ``key = value`` of the incoming pod (``podtopologyspread/common.go`` ``mergeLabelSetWithSelector``), and
an empty selector counting no pod (``countPodsMatchSelector``: ``selector.Empty()`` → 0).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubegpu.model import parse
from kubegpu.model.objects import LabelSelector, Pod, PodAffinityTerm, SpreadConstraint
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import CycleState, Framework
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.registry import default_profile, in_tree_registry
from kubegpu.scheduler.status import Code
from kubegpu.testing.builders import make_node, make_pod

ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
APPS = ["web", "db", "cache"]


# (key, operator, values): one ``labels.Requirement``; None: a nil selector (``labels.Nothing()``)
Requirement = tuple[str, str, tuple[str, ...]]
Selector = list[Requirement] | None


def as_selector(sel: LabelSelector | None, extra: Selector = None) -> Selector:
    """``LabelSelectorAsSelector`` of the selector as written, plus ``extra`` requirements (ANDed)."""
    if sel is None:
        return None
    reqs: list[Requirement] = [(k, "In", (v,)) for k, v in sel.match_labels]
    reqs += [(r.key, r.operator, tuple(r.values)) for r in sel.match_expressions]
    return reqs + (extra or [])


def selects(selector: Selector, labels: dict[str, str]) -> bool:
    """``labels.Selector.Matches``: every requirement holds (Nothing matches no pod)."""
    if selector is None:
        return False
    for key, op, values in selector:
        if op == "In":
            ok = key in labels and labels[key] in values
        elif op == "NotIn":
            ok = key not in labels or labels[key] not in values
        elif op == "Exists":
            ok = key in labels
        elif op == "DoesNotExist":
            ok = key not in labels
        else:
            raise AssertionError(f"operator {op} not generated")
        if not ok:
            return False
    return True


def term_reqs(term: PodAffinityTerm, owner: Pod) -> Selector:
    """The term's selector after kube-apiserver merged ``matchLabelKeys`` / ``mismatchLabelKeys`` (1.31+)."""
    extra: list[Requirement] = [
        (k, "In", (owner.labels[k],)) for k in term.match_label_keys if k in owner.labels
    ]
    extra += [(k, "NotIn", (owner.labels[k],)) for k in term.mismatch_label_keys if k in owner.labels]
    return as_selector(term.selector, extra)


def spread_reqs(c: SpreadConstraint, pod: Pod) -> Selector:
    return as_selector(
        c.selector, [(k, "In", (pod.labels[k],)) for k in c.match_label_keys if k in pod.labels]
    )


def matches(term: PodAffinityTerm, owner: Pod, pod: Pod) -> bool:
    """``AffinityTerm.Matches`` (namespaces default to the owner's; no namespaceSelector here)."""
    ns = set(term.namespaces) or {owner.namespace}
    return pod.namespace in ns and selects(term_reqs(term, owner), dict(pod.labels))


def reference_ipa(cluster: ClusterState, pod: Pod) -> list[tuple[int, str]]:
    placed = [(p, cluster.nodes[i]) for i in range(len(cluster)) for p in cluster.pods_on[i].values()]
    existing: dict[tuple[str, str], int] = {}
    for p, node in placed:
        for t in p.pod_affinity.anti_required:
            if matches(t, p, pod) and t.topology_key in node.labels:
                pair = (t.topology_key, node.labels[t.topology_key])
                existing[pair] = existing.get(pair, 0) + 1
    aff: dict[tuple[str, str], int] = {}
    anti: dict[tuple[str, str], int] = {}
    req, anti_req = pod.pod_affinity.required, pod.pod_affinity.anti_required
    for p, node in placed:
        if req and all(matches(t, pod, p) for t in req):
            for t in req:
                if t.topology_key in node.labels:
                    aff[(t.topology_key, node.labels[t.topology_key])] = (
                        aff.get((t.topology_key, node.labels[t.topology_key]), 0) + 1
                    )
        for t in anti_req:
            if matches(t, pod, p) and t.topology_key in node.labels:
                anti[(t.topology_key, node.labels[t.topology_key])] = (
                    anti.get((t.topology_key, node.labels[t.topology_key]), 0) + 1
                )
    if not existing and not req and not anti_req:
        return [(0, "")] * len(cluster)
    out: list[tuple[int, str]] = []
    for node in cluster.nodes:
        ok, pods_exist = True, True
        for t in req:
            if t.topology_key not in node.labels:
                ok = False
                break
            if aff.get((t.topology_key, node.labels[t.topology_key]), 0) <= 0:
                pods_exist = False
        if ok and req and not pods_exist:
            ok = not aff and all(matches(t, pod, pod) for t in req)
        if not ok:
            out.append((Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "PodAffinityUnmet"))
        elif any(
            t.topology_key in node.labels and anti.get((t.topology_key, node.labels[t.topology_key]), 0) > 0
            for t in anti_req
        ):
            out.append((Code.UNSCHEDULABLE, "PodAntiAffinityHit"))
        elif any(existing.get((k, v), 0) > 0 for k, v in node.labels.items()):
            out.append((Code.UNSCHEDULABLE, "ExistingAntiAffinityHit"))
        else:
            out.append((0, ""))
    return out


def reference_pts(cluster: ClusterState, pod: Pod) -> list[tuple[int, str]]:
    cons = [c for c in pod.spread_constraints if c.when_unsatisfiable == "DoNotSchedule"]
    if not cons:
        return [(0, "")] * len(cluster)
    from kubegpu.model import affinity

    counts: list[dict[str, int]] = [{} for _ in cons]
    for i, node in enumerate(cluster.nodes):
        if not all(c.topology_key in node.labels for c in cons):
            continue
        for k, c in enumerate(cons):
            if c.node_affinity_policy != "Ignore" and not affinity.required_matches(
                pod, node.labels, node.name
            ):
                continue
            sel = spread_reqs(c, pod)
            n = 0
            if sel:  # countPodsMatchSelector: an empty selector counts nothing, a nil one matches nothing
                n = sum(1 for p in cluster.pods_on[i].values()
                        if not p.deletion_timestamp and p.namespace == pod.namespace and selects(sel, dict(p.labels)))  # fmt: skip
            v = node.labels[c.topology_key]
            counts[k][v] = counts[k].get(v, 0) + n
    out = []
    for node in cluster.nodes:
        verdict: tuple[int, str] = (0, "")
        for k, c in enumerate(cons):
            if c.topology_key not in node.labels:
                verdict = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "SpreadLabelMissing")
                break
            low = min(counts[k].values()) if counts[k] else 2**31 - 1
            if len(counts[k]) < (c.min_domains or 1):
                low = 0
            own = 1 if selects(spread_reqs(c, pod), dict(pod.labels)) else 0
            if counts[k].get(node.labels[c.topology_key], 0) + own - low > c.max_skew:
                verdict = (Code.UNSCHEDULABLE, "SpreadSkew")
                break
        out.append(verdict)
    return out


@st.composite
def label_selector(draw: st.DrawFn) -> dict[str, Any]:
    """matchLabels on app (or none: ``{}`` selects every pod), and up to two expressions of any operator."""
    out: dict[str, Any] = {}
    if draw(st.integers(0, 5)):
        out["matchLabels"] = {"app": draw(st.sampled_from(APPS))}
    exprs = []
    for _ in range(draw(st.integers(0, 2))):
        op = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]))
        e: dict[str, Any] = {"key": draw(st.sampled_from(["ver", "tier"])), "operator": op}
        if op in ("In", "NotIn"):
            e["values"] = draw(
                st.lists(st.sampled_from(["1", "2", "gpu"]), min_size=1, max_size=2, unique=True)
            )
        exprs.append(e)
    if exprs:
        out["matchExpressions"] = exprs
    return out


@st.composite
def term_args(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "topology_key": draw(st.sampled_from([ZONE, HOST, "rack"])),
        "labelSelector": draw(label_selector()),
    }


@st.composite
def world(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    objs: list[dict[str, Any]] = []
    n = draw(st.integers(1, 7))
    for i in range(n):
        b = make_node(f"n{i}").label("pool", draw(st.sampled_from(["x", "y"])))
        if draw(st.booleans()):
            b.label(ZONE, f"z{draw(st.integers(0, 2))}")
        if draw(st.booleans()):
            b.label("rack", f"r{draw(st.integers(0, 1))}")
        objs.append(b.obj())

    def pod(name: str, placed: bool) -> dict[str, Any]:
        b = make_pod(name).labels(app=draw(st.sampled_from(APPS)), ver=draw(st.sampled_from(["1", "2"])))
        if draw(st.booleans()):
            b.labels(tier=draw(st.sampled_from(["gpu", "cpu"])))
        if draw(st.integers(0, 3)) == 0:
            b.ns("other")
        for _ in range(draw(st.integers(0, 2))):
            t = draw(term_args())
            extra: dict[str, Any] = {"labelSelector": t["labelSelector"]}
            for field in ("matchLabelKeys", "mismatchLabelKeys"):
                if draw(st.booleans()):
                    extra[field] = [draw(st.sampled_from(["ver", "tier"]))]
            if "matchLabelKeys" in extra and extra["matchLabelKeys"] == extra.get("mismatchLabelKeys"):
                del extra["mismatchLabelKeys"]  # one key in both lists is refused by the API server
            b.pod_affinity(t["topology_key"], {}, anti=draw(st.booleans()), **extra)
        if not placed:
            if draw(st.booleans()):
                b.node_selector(pool=draw(st.sampled_from(["x", "y"])))
            # distinct keys: two constraints on one (topologyKey, whenUnsatisfiable) are refused by the API server
            for key in draw(st.lists(st.sampled_from([ZONE, HOST, "rack"]), max_size=2, unique=True)):
                extra = {"minDomains": draw(st.integers(1, 4))} if draw(st.booleans()) else {}
                if draw(st.booleans()):
                    extra["nodeAffinityPolicy"] = "Ignore"
                if draw(st.booleans()):
                    extra["matchLabelKeys"] = [draw(st.sampled_from(["ver", "tier"]))]
                extra["labelSelector"] = draw(label_selector())
                b.spread(key, draw(st.integers(1, 2)), {}, **extra)
        if placed:
            b.on(f"n{draw(st.integers(0, n - 1))}")
        return b.obj()

    objs += [pod(f"r{j}", True) for j in range(draw(st.integers(0, 8)))]
    return objs, pod("p", False)


def verdicts(fw: Framework, name: str, cluster: ClusterState, pod: Pod) -> list[tuple[int, str]]:
    plugin = next(p for p in fw.filter_plugins if p.name == name)
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, cluster)  # type: ignore[attr-defined]
    if status.code == Code.SKIP:
        return [(0, "")] * len(cluster)
    import numpy as np

    codes, rids = plugin.filter_batch(state, pod, cluster, np.arange(len(cluster), dtype=np.intp))  # type: ignore[attr-defined]
    return [
        (int(c), fw.reasons.reasons(int(r))[0].kind if c else "") for c, r in zip(codes, rids, strict=True)
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world())
def test_filters_equal_upstreams_loops(w: tuple[list[dict[str, Any]], dict[str, Any]]) -> None:
    objs, raw = w
    nodes = [parse.parse_node(o, "t") for o in objs if o["kind"] == "Node"]
    placed = [parse.parse_pod(o, "t") for o in objs if o["kind"] == "Pod"]
    cluster = ClusterState(nodes, placed)
    pod = parse.parse_pod(raw, "t")
    fw = Framework(default_profile(kube_version="1.37"), in_tree_registry())
    assert verdicts(fw, names.INTER_POD_AFFINITY, cluster, pod) == reference_ipa(cluster, pod)
    assert verdicts(fw, names.POD_TOPOLOGY_SPREAD, cluster, pod) == reference_pts(cluster, pod)


def test_match_label_keys_narrow_the_selector_by_hand() -> None:
    """Cases the random worlds reach rarely, counted by hand. n0 (z0) runs web-0 and web-1 (app=web, ver=1);
    n1 (z1) runs nothing. The pending pod is app=web, ver=2.

    - spread by zone, maxSkew 1, selector app=web, matchLabelKeys [ver]: the selector becomes app=web, ver=2,
      which no placed pod has: z0 = z1 = 0, skew 0 + 1 - 0 = 1 on either node; both pass. (Without the
      merge z0 = 2 and n0 would fail with skew 3.)
    - podAntiAffinity by zone, selector app=web, matchLabelKeys [ver]: selects app=web, ver=2: nobody, both
      pass; with mismatchLabelKeys [ver] instead it selects ver != 2: web-0 and web-1 block z0 (n0 fails
      with PodAntiAffinityHit), n1 passes."""
    objs = [make_node("n0").label(ZONE, "z0").obj(), make_node("n1").label(ZONE, "z1").obj(),
            *(make_pod(f"web-{i}").labels(app="web", ver="1").on("n0").obj() for i in range(2))]  # fmt: skip
    nodes = [parse.parse_node(o, "t") for o in objs if o["kind"] == "Node"]
    cluster = ClusterState(nodes, [parse.parse_pod(o, "t") for o in objs if o["kind"] == "Pod"])
    fw = Framework(default_profile(kube_version="1.37"), in_tree_registry())
    row0 = cluster.index["n0"]
    cases = [
        (names.POD_TOPOLOGY_SPREAD, reference_pts, make_pod("p").labels(app="web", ver="2")
         .spread(ZONE, 1, {"app": "web"}, matchLabelKeys=["ver"]), None),
        (names.INTER_POD_AFFINITY, reference_ipa, make_pod("p").labels(app="web", ver="2")
         .pod_affinity(ZONE, {"app": "web"}, anti=True, matchLabelKeys=["ver"]), None),
        (names.INTER_POD_AFFINITY, reference_ipa, make_pod("p").labels(app="web", ver="2")
         .pod_affinity(ZONE, {"app": "web"}, anti=True, mismatchLabelKeys=["ver"]), "PodAntiAffinityHit"),
    ]  # fmt: skip
    for plugin, reference, builder, blocked in cases:
        pod = parse.parse_pod(builder.obj(), "t")
        want = [(0, "")] * 2
        if blocked:
            want[row0] = (Code.UNSCHEDULABLE, blocked)
        assert reference(cluster, pod) == want
        assert verdicts(fw, plugin, cluster, pod) == want
