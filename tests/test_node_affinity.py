"""NodeAffinity and nodeSelector, pinned to kube-scheduler 1.34 plugins/nodeaffinity and component-helpers
nodeaffinity (terms ORed, expressions ANDed, empty term matches nothing, Gt/Lt integer compare)."""

from __future__ import annotations

import pytest

from kubegpu.model import affinity
from kubegpu.model.objects import NodeSelectorTerm, Requirement
from kubegpu.testing.builders import make_node, make_pod
from tests.conftest import scheduler_for

LABELS = {"pool": "train", "gpus": "8", "zone": "a"}


@pytest.mark.parametrize(
    ("req", "matches"),
    [
        (Requirement("pool", "In", ("train", "infer")), True),
        (Requirement("pool", "In", ("infer",)), False),
        (Requirement("pool", "NotIn", ("infer",)), True),
        (Requirement("missing", "NotIn", ("x",)), True),
        (Requirement("pool", "Exists"), True),
        (Requirement("missing", "Exists"), False),
        (Requirement("missing", "DoesNotExist"), True),
        (Requirement("pool", "DoesNotExist"), False),
        (Requirement("gpus", "Gt", ("4",)), True),
        (Requirement("gpus", "Gt", ("8",)), False),
        (Requirement("gpus", "Lt", ("16",)), True),
        (Requirement("pool", "Gt", ("1",)), False),
        (Requirement("missing", "Lt", ("1",)), False),
    ],
    ids=lambda v: str(v) if isinstance(v, bool) else f"{v.key} {v.operator} {list(v.values)}",
)
def test_operators(req: Requirement, matches: bool) -> None:
    assert affinity.term_matches(NodeSelectorTerm((req,)), LABELS, "n1") is matches


def test_expressions_in_a_term_are_anded_and_terms_are_ored() -> None:
    both = NodeSelectorTerm((Requirement("pool", "In", ("train",)), Requirement("zone", "In", ("b",))))
    assert not affinity.term_matches(both, LABELS, "n1")
    pod = make_pod("p").require([("pool", "In", ["x"])], [("zone", "In", ["a"])]).parsed()
    assert affinity.required_matches(pod, LABELS, "n1")


def test_empty_term_and_invalid_requirements_match_nothing() -> None:
    assert not affinity.term_matches(NodeSelectorTerm(), LABELS, "n1")
    assert not affinity.term_matches(NodeSelectorTerm((Requirement("gpus", "Gt", ("x",)),)), LABELS, "n1")
    assert not affinity.term_matches(NodeSelectorTerm((Requirement("pool", "In", ()),)), LABELS, "n1")


def test_match_fields_metadata_name() -> None:
    term = NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", ("n1",)),))
    assert affinity.term_matches(term, {}, "n1")
    assert not affinity.term_matches(term, {}, "n2")


def test_node_selector_and_affinity_must_both_match() -> None:
    pod = make_pod("p").selector("zone", "b").require([("pool", "In", ["train"])]).parsed()
    assert not affinity.required_matches(pod, LABELS, "n1")


def test_filter_message_and_unresolvable_code() -> None:
    s = scheduler_for(
        make_node("a").label("pool", "infer").obj(), make_node("b").label("pool", "train").obj()
    )
    result = s.schedule_one(make_pod("p").selector("pool", "gpu").parsed())
    assert result.message == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_name_field_prefilter_narrows_nodes_and_reports_the_rest_as_not_satisfying_the_plugin() -> None:
    """PreFilter returns PreFilterResult{NodeNames}; absent nodes get `node(s) didn't satisfy plugin(s) [NodeAffinity]`."""
    s = scheduler_for(make_node("a").obj(), make_node("b").obj(), make_node("c").gpus(1).obj())
    pod = make_pod("p").gpu(2).require([], fields=[("metadata.name", "In", ["c"])]).parsed()
    result = s.schedule_one(pod, preempt=False)
    assert result.message == (
        "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )


def test_conflicting_name_terms_fail_in_prefilter() -> None:
    s = scheduler_for(make_node("a").obj(), make_node("b").obj())
    raw = make_pod("p").obj()
    raw["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["a"]},
                            {"key": "metadata.name", "operator": "In", "values": ["b"]},
                        ]
                    }
                ]
            }
        }
    }
    from kubegpu.model.parse import parse_pod

    result = s.schedule_one(parse_pod(raw), preempt=False)
    assert result.message == "0/2 nodes are available: pod affinity terms conflict."


def test_preferred_terms_score_by_weight() -> None:
    s = scheduler_for(
        make_node("h100").gpus(8).label("gen", "hopper").obj(),
        make_node("a100").gpus(8).label("gen", "ampere").obj(),
    )
    pod = (
        make_pod("p")
        .gpu(1)
        .prefer(50, [("gen", "In", ["hopper"])])
        .prefer(10, [("gen", "In", ["ampere"])])
        .parsed()
    )
    result = s.schedule_one(pod)
    assert result.node == "h100"
    # NodeAffinity scores [50, 10] normalise to [100, 20], times weight 2
    assert result.scores["NodeAffinity"] == 200


@pytest.mark.parametrize(
    ("version", "histogram"),
    [
        ("1.30", " 1 Insufficient nvidia.com/gpu."),
        ("1.31", " 1 Insufficient nvidia.com/gpu."),
        ("1.32", " 1 Insufficient nvidia.com/gpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]."),
    ],
)
def test_nodes_left_out_by_the_prefilter_result_are_counted_from_1_32_only(
    version: str, histogram: str
) -> None:
    """kubernetes PR #126022 (1.32) gave the FitError an absent-nodes status, so the nodes NodeAffinity's
    PreFilter left out are counted; 1.30 and 1.31's ``FitError.Error()`` ranges over ``NodeToStatusMap``, which
    holds only the nodes Filter ran on (framework/types.go, v1.30.14 and v1.31.13). Expected by hand: c alone
    is evaluated and lacks 2 GPUs; a and b are the 2 left out. The real 1.30.14 and 1.32.13 print these
    (tests/realkube/golden, case pinned-node-full)."""
    s = scheduler_for(
        make_node("a").obj(), make_node("b").obj(), make_node("c").gpus(1).obj(), kube_version=version
    )
    pod = make_pod("p").gpu(2).require([], fields=[("metadata.name", "In", ["c"])]).parsed()
    assert s.schedule_one(pod, preempt=False).message == "0/3 nodes are available:" + histogram


def test_a_pin_to_a_missing_node_on_1_30_prints_no_histogram_at_all() -> None:
    """1.30: no node is evaluated and none is counted, so ``FitError.Error()`` is ``0/N nodes are available:``
    followed directly by the PostFilter text; preemption takes the absent nodes as unresolvable (PR #125197,
    cherry-picked to 1.30 by #125306). The real 1.30.14 prints this (golden case pinned-node-gone)."""
    s = scheduler_for(make_node("a").gpus(8).obj(), make_node("b").gpus(8).obj(), kube_version="1.30")
    pod = make_pod("p").gpu(1).require([], fields=[("metadata.name", "In", ["gone"])]).parsed()
    assert s.schedule_one(pod).message == (
        "0/2 nodes are available: preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
