"""The FGD protocol (artifact's SortClusterPods + TunePodsByNodeTotalResource) and its metrics."""

from __future__ import annotations

import signal

import numpy as np
import pytest

from kubegpu.scheduler.gpu_ledger import GpuShareLedger
from kubegpu.sim.openb import TracePod, to_node
from kubegpu.sim.packing import PackingRun, curves, fgd_workload, run_packing
from tests.sim.builders import node, trace


def test_workload_is_name_sorted_then_shuffled_then_topped_up() -> None:
    """Trace total: 4 × (500 + 1000 + 0 + 2000 + 250) = 15,000 milli-GPU. With 12 GPUs at ratio 1.3
    the target is 15,600: copies are drawn until the next one's per-GPU milli would pass it."""
    pods = trace()
    a = fgd_workload(pods, 12_000, np.random.default_rng(1))
    b = fgd_workload(list(reversed(pods)), 12_000, np.random.default_rng(1))
    assert a == b  # input order does not matter: sorted by name first
    originals = [n for n, _ in a[:20]]
    assert sorted(originals) == [p.name for p in pods]
    assert originals != sorted(originals)  # shuffled
    extra = a[20:]
    assert all("-tuned-" in n for n, _ in extra)
    total = sum(p.total_gpu_milli for _, p in a)
    assert total <= 15_600
    assert total > 15_000 or not extra


def test_workload_is_trimmed_when_the_trace_exceeds_the_target() -> None:
    # capacity 10 GPUs → target 13,000 < 15,000: random pods are dropped until the total fits
    w = fgd_workload(trace(), 10_000, np.random.default_rng(0))
    assert sum(p.total_gpu_milli for _, p in w) <= 13_000


def test_same_seed_same_run_other_seed_other_run() -> None:
    nodes = [to_node(node(f"n{i}", 4, cpu=16_000)) for i in range(3)]
    one = run_packing(nodes, trace(), "FGD", 42)
    again = run_packing(nodes, trace(), "FGD", 42)
    other = run_packing(nodes, trace(), "FGD", 43)
    assert np.array_equal(one.allocated, again.allocated) and np.array_equal(one.frag, again.frag)
    assert not np.array_equal(one.arrived, other.arrived)


@pytest.mark.parametrize("policy", ["FGD", "BestFit", "Random"])
def test_fragment_readings_equal_the_ledgers_sum_over_every_node_after_every_pod(policy: str) -> None:
    """The run's reading after each pod (``cluster_frag``: the exact sum kept node by node, only changed
    nodes recomputed) must equal the ledger's reading of the whole cluster recomputed from every node
    right after that pod (every node's value recounted from its GPUs' free milli, summed and divided
    once), bit for bit, including after pods that fail
    (no change). Nodes of 1, 2 and 4 GPUs with little CPU, so the run fills them and some pods fail."""
    nodes = [to_node(node(f"n{i}", [1, 2, 4][i % 3], cpu=6_000)) for i in range(5)]
    taken: list[float] = []

    def observe(result: object, ledger: GpuShareLedger) -> None:
        rows = np.arange(len(ledger.cluster), dtype=np.intp)
        # recounted from every node's free milli per GPU and CPU left: no kept count or cached value
        every = ledger.combine(rows, ledger.cpu_left(rows), *ledger.counts_of(ledger.gpu_left[rows]))
        taken.append(ledger.milli_of(int(every.sum())))

    run = run_packing(nodes, trace(), policy, 7, observe=observe)
    assert run.failed, "the case must include failed pods"
    assert len(set(taken)) > 3, "the fragment amount must move during the run"
    assert run.frag.tolist() == taken


def test_curves_round_half_to_even_and_fall_back_to_neighbours() -> None:
    """Artifact's ``merge_alloc_discrete``: arrived % rounded (Python round), mean per integer point,
    else the mean over points within ±1. 1 GPU: arrived 250 → 25 %, 345 → 34 % (34.5 rounds to even),
    355 → 36 % (35.5 → 36); point 35 has no pod, so it averages 34 and 36."""
    run = PackingRun(
        trace="t", policy="p", seed=0, total_gpus=1,
        arrived=np.array([250, 345, 355]), allocated=np.array([250, 300, 300]),
        frag=np.array([0.0, 10.0, 20.0]),
    )  # fmt: skip
    c = curves(run)
    assert c.allocation[25] == 25.0
    assert c.allocation[34] == 30.0
    assert c.allocation[36] == 30.0
    assert c.frag_amount[35] == pytest.approx(1.5)  # mean of 1 % and 2 %
    assert np.isnan(c.allocation[60])


def test_a_trace_without_gpu_pods_is_not_topped_up_forever() -> None:
    """No row asks for a GPU (a cut of a cpu trace): copies add nothing towards the GPU target, so the
    workload is the trace itself, shuffled (before, the top-up drew copies until memory ran out)."""
    cpu_only = [TracePod(f"cpu-{i}", 1000, 1024, 0, 0) for i in range(5)]

    def stuck(signum: int, frame: object) -> None:
        raise TimeoutError("fgd_workload kept drawing copies")

    previous = signal.signal(signal.SIGALRM, stuck)  # (a return of the bug fails in 5 s, not out of memory)
    signal.alarm(5)
    try:
        w = fgd_workload(cpu_only, 12_000, np.random.default_rng(1))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert sorted(n for n, _ in w) == [p.name for p in cpu_only]
