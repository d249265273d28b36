"""Sums of amounts beyond int64 milli-units: a pod's containers, a node's requested, totals, scores, quota.

Upstream, kube-scheduler keeps every amount and sum in int64 and lets it wrap: ``Resource.Add`` takes
``MilliValue()`` / ``Value()`` of the pod's exact total and ``NodeInfo.update`` adds the pods' amounts
(pkg/scheduler/framework/types.go, k8s.io/kubernetes v1.37.2); ``fitsRequest`` then compares
``podRequest > Allocatable - Requested`` only for a positive request (plugins/noderesources/fit.go). Quota
admission instead adds and compares exact ``resource.Quantity`` values. The fixture is what a real
kube-apiserver + kube-scheduler 1.37.2 stored and decided (tools/kube/probe_quantity_sums.py:
realkube-sums-1.37.2.json, the objects as stored; realkube-sums-1.37.2.txt, its answers and verdicts).

kubegpu adds exactly and stores each total saturated at the column bound (``quantity.saturate``), never
wrapped: where the real scheduler does not wrap, its verdict is matched; where it does (two 8Ei pods on one
node sum to -2 bytes), kubegpu's verdict differs and a note says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "quantity"
SNAPSHOT = FIXTURES / "realkube-sums-1.37.2.json"


def _record() -> tuple[dict[str, tuple[str, str]], dict[str, tuple[int, str]]]:
    """kube-scheduler's verdict per pending pod (node, message) and the API server's answer per created pod."""
    verdicts: dict[str, tuple[str, str]] = {}
    created: dict[str, tuple[int, str]] = {}
    for line in (FIXTURES / "realkube-sums-1.37.2.txt").read_text().splitlines():
        if line.startswith("verdict "):
            m = re.match(r"verdict (\S+) (\S*) \[(.*)\]$", line)
            assert m is not None, line
            message = "" if m.group(3) == "None" else json.loads(m.group(3))
            verdicts[m.group(1)] = (m.group(2), message)
        elif line.startswith("create "):
            _, name, status, rest = line.split(" ", 3)
            created[name] = (int(status), rest.strip())
    return verdicts, created


VERDICTS, CREATED = _record()
# where the real scheduler's int64 sum wraps (two 8Ei pods on node wrap; a pod of two 8Ei containers) and it
# binds; kubegpu does not model the wrap
WRAPPED = {
    "after-wrap": "node wrap: requested memory",
    "two-8ei": "pod default/two-8ei: summed requests memory",
}
# cpu 9223372036854775807 allocatable: MilliValue() itself wraps to -1000 (the parse note says not modelled)
CPU_WRAPPED = {"on-cpumax"}


def _snapshot() -> Any:
    from kubegpu.sources import load_files

    return load_files(SNAPSHOT)


def _explain(snap: Any, name: str) -> Any:
    from kubegpu.explain.engine import Engine
    from kubegpu.explain.pending import explain_pod

    pods = {p.name: p for p in snap.pods}
    return explain_pod(Engine(snap), pods[name])


def test_the_record_holds_the_wraps_this_file_is_about() -> None:
    assert VERDICTS["after-wrap"][0] == "wrap"  # bound beside two 8Ei pods: the sum wrapped to -2 bytes
    assert VERDICTS["two-8ei"][0] == "free"  # the pod's own 16Ei total wrapped to -2 bytes
    assert VERDICTS["after-pair1e"][0] == ""  # two 1E pods: 2e18 bytes fit int64, no wrap, no room


@pytest.mark.parametrize("name", sorted(set(VERDICTS) - set(WRAPPED) - CPU_WRAPPED))
def test_where_upstream_does_not_wrap_the_verdict_is_the_real_schedulers(name: str) -> None:
    """after-pair1e (two 1E pods bound: kubegpu's int64 sum of the saturated amounts wrapped and bound the
    pod), after-one, on-mem8ei (two 4Ei pods on an 8Ei node), on-cpumaxm (cpu allocatable at MaxInt64 milli)."""
    snap = _snapshot()
    assert not snap.errors
    exp = _explain(snap, name)
    node, message = VERDICTS[name]
    assert (exp.node or "") == node
    assert exp.message == message


@pytest.mark.parametrize("name", sorted(WRAPPED))
def test_where_upstream_wraps_kubegpu_counts_the_bound_and_says_the_real_one_binds(name: str) -> None:
    snap = _snapshot()
    exp = _explain(snap, name)
    assert VERDICTS[name][0]  # the real scheduler bound it, through the wrap ...
    assert not exp.schedulable and "Insufficient memory" in exp.message  # ... kubegpu sees no room ...
    (note,) = [n for n in exp.notes if n.startswith(WRAPPED[name])]  # ... and says why they differ
    assert "beyond what kubegpu counts exactly" in note and "wraps" in note and "not modelled" in note


def test_cpu_allocatable_wrapped_by_milli_value_is_said_not_modelled() -> None:
    snap = _snapshot()
    assert VERDICTS["on-cpumax"][1].startswith("0/7 nodes are available: 1 Insufficient cpu")
    (note,) = [n for n in snap.notes if n.startswith("Node cpumax:")]
    assert "MilliValue() overflows int64" in note and "not modelled" in note


def test_a_node_total_beyond_the_column_is_kept_exactly_and_stored_saturated() -> None:
    """Node wrap holds big-a and big-b (8Ei each, stored as 9223372036854775807): the column holds the bound,
    never a wrapped negative amount, and taking the pods back (or rolling back) restores it exactly."""
    from kubegpu.model.quantity import bound
    from kubegpu.scheduler.cluster import ClusterState

    snap = _snapshot()
    cluster = ClusterState(snap.nodes, snap.pods)
    idx, col = cluster.index["wrap"], cluster.col["memory"]
    assert int(cluster.requested[idx, col]) == bound("memory")
    assert int(cluster.nonzero_memory[idx]) == bound("memory")
    assert int(cluster.free[idx, col]) == int(cluster.allocatable[idx, col]) - bound("memory")
    pods = {p.name: p for p in snap.pods}
    mark = cluster.mark()
    cluster.remove_pod(pods["big-a"])
    assert int(cluster.requested[idx, col]) == bound("memory")  # big-b alone is at the bound too
    cluster.remove_pod(pods["big-b"])
    assert int(cluster.requested[idx, col]) == 0 and int(cluster.nonzero_memory[idx]) == 0
    assert int(cluster.free[idx, col]) == int(cluster.allocatable[idx, col])
    assert not [key for key in cluster.beyond if key[1] == idx]  # (pair1e, mem8ei are still beyond)
    cluster.rollback(mark)
    assert int(cluster.requested[idx, col]) == bound("memory")
    assert cluster.beyond[("memory", idx)] == 2 * bound("memory")


def test_cluster_totals_are_exact_where_an_int64_sum_would_wrap() -> None:
    """The fixture's memory allocatable: node mem8ei's 8Ei (held at the bound) and six 256Gi nodes; their
    int64 sum wraps. The batch session's totals (the denominators of its DRF shares) are the exact sum."""
    from kubegpu.batch.session import BatchSession
    from kubegpu.explain.engine import Engine
    from kubegpu.model.quantity import bound

    snap = _snapshot()
    session = BatchSession(Engine(snap).scheduler, snap, {}, {}, {}, preempt=False)
    column = session.scheduler.cluster.allocatable[:, session.scheduler.cluster.col["memory"]]
    expected = bound("memory") + 6 * 256 * 2**30 * 1000
    assert sorted(column.tolist()) == sorted([bound("memory")] + [256 * 2**30 * 1000] * 6)
    with np.errstate(over="ignore"):
        assert int(column.sum()) != expected  # the wrap this guards against
    assert session.totals["memory"] == expected


def test_scores_on_a_node_at_the_cpu_bound_agree_with_the_scalar_reference() -> None:
    """leastRequestedScore / mostRequestedScore (noderesources, v1.37.2): ``(capacity - requested) * 100 /
    capacity``. Node cpumaxm's cpu allocatable is MaxInt64 milli-units (9223372036854775807m as stored):
    the batch scorer's int64 product wrapped; it must agree with the module's scalar transcription."""
    from kubegpu.scheduler.cluster import ClusterState
    from kubegpu.scheduler.resource_allocation import (
        least_allocated,
        least_allocated_one,
        most_allocated,
        most_allocated_one,
    )

    snap = _snapshot()
    cluster = ClusterState(snap.nodes, snap.pods)
    idx = cluster.index["cpumaxm"]
    alloc = [int(cluster.allocatable[idx, 0]), int(cluster.allocatable[idx, 1])]
    req = [1000, 256 * 2**30 * 1000 // 2]  # on-cpumaxm's 1 cpu, half the node's memory
    weights = np.array([1, 1], dtype=np.int64)
    a, r = np.array([alloc], dtype=np.int64), np.array([req], dtype=np.int64)
    assert int(least_allocated(r, a, weights)[0]) == least_allocated_one(req, alloc, [1, 1])
    assert int(most_allocated(r, a, weights)[0]) == most_allocated_one(req, alloc, [1, 1])


def test_a_pods_containers_sum_saturated_not_overflowing_the_column() -> None:
    """two-8ei: two containers of 9223372036854775807 bytes. Its request vector used to overflow numpy
    (OverflowError, a traceback); it is held at the bound."""
    from kubegpu.model.quantity import bound

    pods = {p.name: p for p in _snapshot().pods}
    assert pods["two-8ei"].requests["memory"] == bound("memory")


def _quota_pod(name: str) -> Any:
    """The probe's quota pods (tools/kube/probe_quantity_sums.py), as it created them."""
    from kubegpu.model.parse import parse_pod

    requests = {
        "q-2": {"memory": "1", "cpu": "1"},
        "q-3": {"memory": "0", "cpu": "9223372036854775807"},
        "q2-600m": {"cpu": "600m"},
        "q2-400m": {"cpu": "400m"},
    }[name]
    ns = "q2" if name.startswith("q2-") else "q"
    limits = {"limits": requests} if ns == "q2" else {}
    raw = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"containers": [{"name": "c0", "image": "x", "resources": {"requests": requests, **limits}}]},
    }
    return parse_pod(raw, "probe_quantity_sums.py")


@pytest.mark.parametrize("name", ["q-2", "q-3"])
def test_quota_with_huge_hard_limits_refuses_as_the_api_server_does(name: str) -> None:
    """Hard requests.memory 8Ei and requests.cpu 2^63-1 with q-1 (8Ei, 1 cpu) admitted: the API server's exact
    arithmetic refuses q-2 (1 byte more) and q-3 (2^63-1 cpu more). kubegpu's usage sums saturate at the bound
    and refuse both for the same resource; the amounts it prints are its saturated ones (said in the notes)."""
    from kubegpu.admission.quota import admit

    snap = _snapshot()
    decision = admit(_quota_pod(name), snap.quotas, snap.pods)
    status, message = CREATED[name]
    assert status == 403 and not decision.allowed
    real_resource = message.split("requested: ")[1].split("=")[0]
    assert decision.message.split("requested: ")[1].split("=")[0] == real_resource
    assert decision.message.split(", requested:")[0] == message.split(", requested:")[0]


def test_node_notes_name_only_what_the_pod_asks_for() -> None:
    """on-cpumaxm asks for cpu alone: the memory totals of nodes wrap, pair1e and mem8ei do not decide it."""
    snap = _snapshot()
    assert not [n for n in _explain(snap, "on-cpumaxm").notes if n.startswith("node ")]
    notes = [n for n in _explain(snap, "after-one").notes if n.startswith("node ")]
    assert [n.split(":")[0] for n in notes] == ["node wrap", "node pair1e", "node mem8ei"]
