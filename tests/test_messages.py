"""FailedScheduling text, byte for byte as kube-scheduler 1.34's FitError.Error() builds it."""

from __future__ import annotations

from kubegpu.scheduler.messages import fit_error_message, truncate_event_message
from kubegpu.testing.builders import make_node, make_pod
from tests.conftest import scheduler_for


def test_reasons_are_sorted_as_plain_strings_not_by_count() -> None:
    """sort.Strings on "<count> <reason>": "10 …" < "2 …", and "I" (0x49) < "n" (0x6e)."""
    msg = fit_error_message(
        12,
        [("node(s) had untolerated taint {a: b}", 2), ("Insufficient nvidia.com/gpu", 10)],
    )
    assert (
        msg
        == "0/12 nodes are available: 10 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint {a: b}."
    )


def test_a_node_with_two_reasons_counts_in_both() -> None:
    s = scheduler_for(make_node("n").capacity(cpu="1", memory="1Gi").obj())
    result = s.schedule_one(make_pod("p").requests(cpu="2", memory="2Gi").parsed(), preempt=False)
    assert result.message == "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."


def test_prefilter_message_replaces_the_histogram() -> None:
    assert fit_error_message(3, [("ignored", 3)], pre_filter_msg="pod affinity terms conflict") == (
        "0/3 nodes are available: pod affinity terms conflict."
    )


def test_post_filter_message_follows_without_an_extra_period() -> None:
    """Since 1.30 the preemption text is appended with " %v" (it ends in its own period)."""
    msg = fit_error_message(1, [("Insufficient cpu", 1)], post_filter_msg="preemption: x.")
    assert msg == "0/1 nodes are available: 1 Insufficient cpu. preemption: x."


def test_the_seed_example_in_the_order_a_real_cluster_prints_it() -> None:
    """The seed writes `2 Insufficient …, 2 node(s) had untolerated taint, 2 node(s) didn't match …`;
    upstream sorts the strings, so affinity ("didn't") comes before taint ("had")."""
    objs = [make_node(f"full-{i}").gpus(8).label("pool", "train").obj() for i in range(2)]
    objs += [
        make_node(f"tainted-{i}").gpus(8).label("pool", "train").taint("nvidia.com/gpu", "present").obj()
        for i in range(2)
    ]
    objs += [make_node(f"other-{i}").gpus(8).label("pool", "infer").obj() for i in range(2)]
    objs += [make_pod(f"hog-{i}").gpu(8).on(f"full-{i}").obj() for i in range(2)]
    s = scheduler_for(*objs, kube_version="1.33")  # the seed's per-taint text; 1.34+ print "taint(s)"
    result = s.schedule_one(make_pod("p").gpu(1).require([("pool", "In", ["train"])]).parsed())
    assert result.message == (
        "0/6 nodes are available: 2 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector, "
        "2 node(s) had untolerated taint {nvidia.com/gpu: present}. preemption: 0/6 nodes are available: "
        "2 No preemption victims found for incoming pod, 4 Preemption is not helpful for scheduling."
    )


def test_no_nodes_at_all() -> None:
    s = scheduler_for()
    assert s.schedule_one(make_pod("p").parsed()).message == "no nodes available to schedule pods"


def test_event_note_is_truncated_to_1024_bytes_with_a_marker() -> None:
    long = "x" * 2000
    note = truncate_event_message(long)
    assert len(note.encode()) == 1024 and note.endswith(" ...")
    assert truncate_event_message("short") == "short"
