"""The queue benchmark's inputs: the documented team split, gang formation from the trace, queue
quotas; and the GpuShare ledger following the cluster journal (what lets preemption dry runs on the
packing profile see the GPUs a victim would free)."""

from __future__ import annotations

import numpy as np

from kubegpu.batch.objects import QUEUE_LABEL
from kubegpu.model.podgroup import CHECKPOINT_INTERVAL_ANNOTATION, KUBEGPU_GROUP_LABEL
from kubegpu.model.resources import GPU_MILLI
from kubegpu.sim.openb import TracePod, to_node
from kubegpu.sim.queue_bench import team_of, team_pods, team_queues
from tests.sim.builders import Bench, node, pod


def tp(name: str, gpus: int, milli: int, qos: str, created: int, cpu: int = 4000) -> TracePod:
    return TracePod(name, cpu, 1024, gpus, milli, None, qos, "Running", created, created + 100, created)


def test_team_split_by_shape_and_qos() -> None:
    assert team_of(tp("s", 1, 500, "BE", 0)) == "inference"  # GPU sharing
    assert team_of(tp("c", 0, 0, "LS", 0)) == "inference"  # CPU only
    assert team_of(tp("t", 2, 1000, "LS", 0)) == "training"
    assert team_of(tp("g", 1, 1000, "Guaranteed", 0)) == "training"
    assert team_of(tp("r", 1, 1000, "BE", 0)) == "research"


def test_identical_gpu_pods_created_in_the_same_second_form_a_gang() -> None:
    """a and b: same shape, same team, same second → one gang of 2. c: same shape one second later,
    d: same second but another shape, e: CPU-only twins (no GPU) → all single."""
    trace = [
        tp("a", 1, 1000, "LS", 10), tp("b", 1, 1000, "LS", 10), tp("c", 1, 1000, "LS", 11),
        tp("d", 1, 1000, "LS", 10, cpu=8000), tp("e", 0, 0, "LS", 10), tp("f", 0, 0, "LS", 10),
    ]  # fmt: skip
    pods, groups = team_pods(trace, time_scale=1.0)
    gangs = {p.pod.name: p.pod.labels.get(KUBEGPU_GROUP_LABEL) for p in pods}
    assert gangs["a"] is not None and gangs["a"] == gangs["b"]
    assert [gangs[n] for n in "cdef"] == [None] * 4
    assert {k: g.min_member for k, g in groups.items()} == {f"openb/{gangs['a']}": 2}
    by_name = {p.pod.name: p.pod for p in pods}
    assert by_name["a"].labels[QUEUE_LABEL] == "training" and by_name["a"].priority == 500
    assert by_name["a"].annotations[CHECKPOINT_INTERVAL_ANNOTATION] == "1800"
    assert by_name["e"].priority == 1000 and CHECKPOINT_INTERVAL_ANNOTATION not in by_name["e"].annotations


def test_queue_nominal_quota_is_the_documented_share_of_the_cluster() -> None:
    """Two nodes of 8 and 2 GPUs = 10,000 milli-GPU: 30 / 40 / 30 %."""
    queues = team_queues([to_node(node("a", 8)), to_node(node("b", 2))])
    assert {q: queues[q].nominal[GPU_MILLI] // 1000 for q in queues} == {
        "inference": 3000, "training": 4000, "research": 3000,
    }  # fmt: skip


def test_gpu_share_ledger_follows_removal_and_rollback() -> None:
    """A 500-milli pod on a 2-GPU node: removing it from the cluster frees its GPU in the ledger; rolling
    the journal back gives it the same GPU again."""
    b = Bench([node("n", 2)], "BestFit")
    p = pod("p", 1, 500)
    assert b.scheduler.schedule_one(p).scheduled
    held = b.ledger.held[p.key]
    left = b.ledger.gpu_left.copy()
    mark = b.cluster.mark()
    b.cluster.remove_pod(p)
    assert p.key not in b.ledger.held and int(b.ledger.gpu_left.sum()) == 2000
    b.cluster.rollback(mark)
    assert b.ledger.held[p.key] == held
    assert np.array_equal(b.ledger.gpu_left, left)
