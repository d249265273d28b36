"""PodTopologySpread's default constraints: the selector deduced from Services and controllers, System and List
defaulting, and how system-defaulted scoring treats nodes without a zone label. Hand-derived from kubernetes
``pkg/scheduler/framework/plugins/helper/spread.go`` (DefaultSelector, GetPodServices) and
``podtopologyspread/{plugin,common,scoring,filtering}.go`` (systemDefaultConstraints, buildDefaultConstraints,
``requireAllTopologies``), read from the Go module cache for v1.32.13–v1.37.2 (the same behaviour in each),
and ``pkg/scheduler/apis/config/validation/validation_pluginargs.go`` ValidatePodTopologySpreadArgs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubegpu.errors import ConfigError
from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.model.default_spread import SpreadOwners
from kubegpu.model.objects import LabelSelector, Requirement
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.assembly import SchedulerSpec
from kubegpu.scheduler.framework import CycleState
from kubegpu.scheduler.kube_config import parse_scheduler_config
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.testing.builders import make_node, make_pod
from tests.conftest import scheduler_for, snapshot_of

ZONE = "topology.kubernetes.io/zone"
Raw = dict[str, Any]


def service(name: str, selector: dict[str, str] | None, namespace: str = "default") -> Raw:
    spec: Raw = {"ports": [{"port": 80}]}
    if selector is not None:
        spec["selector"] = selector
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def controller(kind: str, name: str, selector: Any) -> Raw:
    api = "v1" if kind == "ReplicationController" else "apps/v1"
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": selector}}  # fmt: skip


def owners(*objects: Raw) -> SpreadOwners:
    return SpreadOwners.of(build_snapshot([("t.yaml", o) for o in objects]).records)


def spread_scores(s: Scheduler, pod_raw: Raw) -> dict[str, int]:
    pod = make_pod_parsed(pod_raw)
    rows = np.arange(len(s.cluster), dtype=np.intp)
    _, parts = s.framework.run_scores(CycleState(), pod, s.cluster, rows)
    got = parts.get(names.POD_TOPOLOGY_SPREAD)
    if got is None:
        return {}
    return {s.cluster.nodes[i].name: v for i, v in zip(rows, got.tolist(), strict=True)}


def make_pod_parsed(raw: Raw) -> Any:
    return build_snapshot([("t.yaml", raw)]).pods[0]


def list_profile(*constraints: Raw) -> Any:
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"pluginConfig": [{"name": "PodTopologySpread", "args": {
               "defaultingType": "List", "defaultConstraints": list(constraints)}}]}]}  # fmt: skip
    return parse_scheduler_config(doc, "cfg.yaml").profiles[0]


# --- DefaultSelector ------------------------------------------------------------------------------------


def test_services_selecting_the_pod_are_merged_others_ignored() -> None:
    """GetPodServices: same namespace, selector matching the pod's labels; a Service without a selector
    selects nothing; the matching selectors merge into one set (spread.go)."""
    o = owners(service("web", {"app": "x"}), service("tier", {"tier": "fe"}), service("other", {"app": "y"}),
               service("headless", None), service("elsewhere", {"app": "x", "zz": "1"}, "prod"))  # fmt: skip
    pod = make_pod("p").labels(app="x", tier="fe", extra="1").parsed()
    assert o.default_selector(pod) == LabelSelector((("app", "x"), ("tier", "fe")))


def test_no_service_and_no_controller_gives_no_selector() -> None:
    o = owners(service("other", {"app": "y"}))
    assert o.default_selector(make_pod("p").labels(app="x").parsed()) is None


def test_replicaset_requirements_are_added_by_its_controller_reference() -> None:
    """rsKind (apps/v1 ReplicaSet, the controller reference): selector.Add(its requirements); matchLabels
    become key=value (In one value), matchExpressions are kept."""
    rs = controller("ReplicaSet", "rs1", {"matchLabels": {"app": "x"},
                                          "matchExpressions": [{"key": "v", "operator": "Exists"}]})  # fmt: skip
    o = owners(rs, service("web", {"svc": "s"}))
    pod = make_pod("p").labels(app="x", v="1", svc="s").owner("ReplicaSet", "rs1").parsed()
    assert o.default_selector(pod) == LabelSelector(
        (("svc", "s"),), (Requirement("app", "In", ("x",)), Requirement("v", "Exists"))
    )


def test_replication_controller_map_is_merged() -> None:
    rc = controller("ReplicationController", "rc1", {"app": "x"})
    o = owners(rc)
    raw = make_pod("p").labels(app="x").obj()
    raw["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ReplicationController", "name": "rc1", "uid": "u", "controller": True}
    ]
    assert o.default_selector(make_pod_parsed(raw)) == LabelSelector((("app", "x"),))


@pytest.mark.parametrize(
    ("api_version", "controller_flag"),
    [("extensions/v1beta1", True), ("apps/v1", False)],
)
def test_only_an_exact_apps_v1_controller_reference_is_read(api_version: str, controller_flag: bool) -> None:
    """DefaultSelector switches on the exact GroupVersionKind of GetControllerOfNoCopy (controller: true)."""
    o = owners(controller("ReplicaSet", "rs1", {"matchLabels": {"app": "x"}}))
    raw = make_pod("p").labels(app="x").obj()
    raw["metadata"]["ownerReferences"] = [
        {
            "apiVersion": api_version,
            "kind": "ReplicaSet",
            "name": "rs1",
            "uid": "u",
            "controller": controller_flag,
        }
    ]
    assert o.default_selector(make_pod_parsed(raw)) is None


def test_missing_kinds_are_named() -> None:
    pod = make_pod("p").labels(app="x").owner("StatefulSet", "db").parsed()
    assert owners().missing(pod) == ["Service", "StatefulSet"]
    assert owners(service("kubernetes", {})).missing(pod) == ["StatefulSet"]
    assert owners(service("kubernetes", {})).missing(make_pod("q").parsed()) == []


# --- System defaulting: scores ---------------------------------------------------------------------------


def test_system_default_spreads_by_hostname() -> None:
    """Nodes a, b without zone labels; Service app=x; two app=x pods on a. System defaults: hostname maxSkew 3,
    zone maxSkew 5. requireAllTopologies is false, so no node is ignored. hostname: size 2 → ln 4 = 1.386;
    a: 2·1.386 + (3 − 1) = 4.77 → 5, b: 0 + 2 = 2. zone: neither node has the label → no term.
    NormalizeScore (max 5, min 2): a 100·(7 − 5)/5 = 40, b 100·(7 − 2)/5 = 100; weight 2 → 80, 200."""
    s = scheduler_for(make_node("a").obj(), make_node("b").obj(), service("web", {"app": "x"}),
                      *(make_pod(f"w{i}").labels(app="x").on("a").obj() for i in range(2)))  # fmt: skip
    assert spread_scores(s, make_pod("p").labels(app="x").obj()) == {"a": 80, "b": 200}


def test_without_a_selecting_object_there_is_no_default_spread() -> None:
    """DefaultSelector empty → buildDefaultConstraints returns none → PreScore Skip (no score at all)."""
    s = scheduler_for(make_node("a").obj(), make_node("b").obj(), service("web", {"app": "y"}),
                      *(make_pod(f"w{i}").labels(app="x").on("a").obj() for i in range(2)))  # fmt: skip
    assert spread_scores(s, make_pod("p").labels(app="x").obj()) == {}


def test_own_constraints_replace_the_defaults() -> None:
    """getConstraints/initPreScoreState: a pod with any constraint of its own never gets defaults (here a
    DoNotSchedule one on a key no node has: nothing to score, and the defaults are not used either)."""
    s = scheduler_for(make_node("a").obj(), make_node("b").obj(), service("web", {"app": "x"}),
                      make_pod("w").labels(app="x").on("a").obj())  # fmt: skip
    pod = make_pod("p").labels(app="x").spread("rack", 1, {"app": "x"}).obj()
    assert spread_scores(s, pod) == {}


def zone_cluster(profile: Any = None) -> Scheduler:
    return scheduler_for(make_node("a").label(ZONE, "z1").obj(), make_node("b").label(ZONE, "z1").obj(),
                         make_node("c").obj(), service("web", {"app": "x"}),
                         make_pod("w").labels(app="x").on("a").obj(), profile=profile)  # fmt: skip


def test_system_default_scores_a_node_without_zone_label() -> None:
    """a, b in z1, c without a zone label; one app=x pod on a. hostname: size 3 → ln 5 = 1.609; a 1.609 + 2 =
    3.609, b 2, c 2. zone: values of the filtered nodes z1 and "" (c: node.Labels[key] is "") → size 2, ln 4 =
    1.386; z1 counts 1: a and b 1.386 + 4 = 5.386; c lacks the label → no zone term. Totals a 8.995 → 9,
    b 7.386 → 7, c 2. NormalizeScore (max 9, min 2): a 100·2/9 = 22, b 100·4/9 = 44, c 100; ×2 → 44, 88, 200."""
    assert spread_scores(zone_cluster(), make_pod("p").labels(app="x").obj()) == {"a": 44, "b": 88, "c": 200}


def test_list_defaults_ignore_nodes_without_every_key() -> None:
    """The same two constraints given as List: requireAllTopologies → c ignored (0). hostname size 3 − 1 = 2 →
    ln 4: a 1.386 + 2 = 3.386, b 2; zone: z1 only → ln 3 = 1.099: a, b 1.099 + 4 = 5.099. Totals a 8.485 → 8,
    b 7.099 → 7. NormalizeScore over a, b (max 8, min 7): a 100·7/8 = 87, b 100; ×2 → 174, 200; c 0."""
    profile = list_profile(
        {"maxSkew": 3, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"},
        {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"},
    )
    got = spread_scores(zone_cluster(profile), make_pod("p").labels(app="x").obj())
    assert got == {"a": 174, "b": 200, "c": 0}


def test_list_do_not_schedule_default_filters() -> None:
    """List default hostname maxSkew 1 DoNotSchedule: a has 2 matching pods, b 0 (min 0); the pod matches the
    deduced selector: a 2 + 1 − 0 = 3 > 1 rejected, b 1 fits → the pod binds to b."""
    profile = list_profile(
        {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}
    )
    s = scheduler_for(make_node("a").obj(), make_node("b").obj(), service("web", {"app": "x"}),
                      *(make_pod(f"w{i}").labels(app="x").on("a").obj() for i in range(2)), profile=profile)  # fmt: skip
    result = s.schedule_one(make_pod("p").labels(app="x").parsed())
    assert result.node == "b"
    assert s.framework.signature(make_pod("q").labels(app="x").parsed()) is None  # its verdicts read pods


# --- configuration ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"defaultConstraints": [{"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule"}]},
         'args.defaultingType: Invalid value: "System": when .defaultConstraints are not empty'),
        ({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "k",
          "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}]},
         "args.defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector"),
        ({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 0, "topologyKey": "k",
          "whenUnsatisfiable": "DoNotSchedule"}]},
         "args.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)"),
        ({"defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule"},
            {"maxSkew": 2, "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule"}]},
         "args.defaultConstraints[1]: Duplicate value: {k, DoNotSchedule}"),
        ({"defaultingType": "Other"}, "args.defaultingType: Unsupported value: 'Other'"),
    ],
)  # fmt: skip
def test_invalid_spread_args_name_file_and_field(args: Raw, message: str) -> None:
    """validation_pluginargs.go ValidatePodTopologySpreadArgs (the same in 1.32–1.37)."""
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"pluginConfig": [{"name": "PodTopologySpread", "args": args}]}]}  # fmt: skip
    with pytest.raises(ConfigError) as err:
        parse_scheduler_config(doc, "cfg.yaml")
    assert str(err.value).startswith("cfg.yaml: KubeSchedulerConfiguration: profiles[0].pluginConfig[0].")
    assert message in str(err.value)


def test_spread_args_are_modelled_not_noted() -> None:
    profile = list_profile({"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"})
    assert profile.unmodelled == ()


# --- explain ------------------------------------------------------------------------------------------------


def explained(*objects: Raw, pod: Raw, profile: Any = None) -> Any:
    snap = snapshot_of(*objects, pod)
    engine = Engine(snap, SchedulerSpec(profile or "default"))
    return explain_pod(engine, snap.pod("default/p"))


def test_explain_says_the_default_spread_could_not_be_computed_without_services() -> None:
    """A snapshot with no Service: the pod fits, so the default spread would rank the nodes; it cannot be
    computed, and the verdict is marked unverified (never assumed to have no selector)."""
    exp = explained(make_node("a").obj(), make_node("b").obj(), pod=make_pod("p").labels(app="x").obj())
    assert exp.schedulable
    assert any("the snapshot holds no Service objects: the default spread could not be computed" in line
               for line in exp.unverified)  # fmt: skip


def test_explain_is_silent_when_the_kinds_are_there_or_ranking_does_not_matter() -> None:
    """With a Service in the snapshot (selecting the pod or not) the default spread was computed; a pod that
    fits nowhere is not ranked (System defaults are ScheduleAnyway); a pod with its own constraints has no
    defaults."""
    nodes = [make_node("a").obj(), make_node("b").obj()]
    with_service = explained(*nodes, service("kubernetes", None), pod=make_pod("p").labels(app="x").obj())
    no_fit = explained(*nodes, pod=make_pod("p").labels(app="x").requests(cpu="64").obj())
    own = explained(
        *nodes, pod=make_pod("p").labels(app="x").spread(ZONE, 1, {"app": "x"}, when="ScheduleAnyway").obj()
    )
    assert [e.unverified for e in (with_service, no_fit, own)] == [[], [], []]
    owned = explained(*nodes, service("kubernetes", None),
                      pod=make_pod("p").labels(app="x").owner("StatefulSet", "db").obj())  # fmt: skip
    assert any("no StatefulSet objects" in line for line in owned.unverified)


def test_explain_shows_a_list_default_constraint_as_the_evidence() -> None:
    """List default hostname maxSkew 1 DoNotSchedule, Service app=x; two app=x pods on a, b cordoned (still a
    domain with 0): on a 2 + 1 − 0 = 3 > 1 (filtering.go), the evidence names the deduced selector."""
    profile = list_profile(
        {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}
    )
    exp = explained(make_node("a").obj(), make_node("b").cordon().obj(), service("web", {"app": "x"}),
                    *(make_pod(f"w{i}").labels(app="x").on("a").obj() for i in range(2)),
                    pod=make_pod("p").labels(app="x").obj(), profile=profile)  # fmt: skip
    assert not exp.schedulable
    (a,) = [n for n in exp.nodes if n.name == "a"]
    assert a.evidence == [
        "spread {app=x} (a default constraint of the scheduler configuration) by kubernetes.io/hostname "
        "(maxSkew 1): a=2, b=0; here kubernetes.io/hostname=a: 2 + 1 - 0 = skew 3 > 1"
    ]


def test_disabling_spread_at_some_points_is_said_not_dropped() -> None:
    """kube_config: PodTopologySpread disabled at filter and preFilter only (kube-scheduler would still score
    with it) cannot be reproduced by a plugin that runs at every point it has: said, not silently ignored;
    disabled at all four points it is removed."""

    def profile(points: list[str]) -> Any:
        plugins = {p: {"disabled": [{"name": "PodTopologySpread"}]} for p in points}
        doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
               "profiles": [{"plugins": plugins}]}  # fmt: skip
        return parse_scheduler_config(doc, "cfg.yaml").profiles[0]

    partial = profile(["filter", "preFilter"])
    assert any("plugin PodTopologySpread disabled at filter, preFilter only" in n for n in partial.unmodelled)
    gone = profile(["filter", "preFilter", "preScore", "score"])
    assert names.POD_TOPOLOGY_SPREAD not in [p.name for p in gone.plugins] and gone.unmodelled == ()
