"""DefaultPreemption's shortcuts against the dry run they replace, on generated clusters.

Upstream (kubernetes/kubernetes v1.34.4 ``pkg/scheduler/framework/preemption/preemption.go``
``DryRunPreemption`` and ``plugins/defaultpreemption/default_preemption.go`` ``SelectVictimsOnNode``) removes
every lower-priority pod from a copy of each candidate node (``NodeInfo.Snapshot``; the plugins' PreFilter
state follows through ``RemovePod``), runs the filters, and answers with the first failing status, which the
PostFilter part of FailedScheduling counts. kubegpu answers some nodes without the dry run: NodeResourcesFit
still short (read off the columns), and filters after it whose answer the removal cannot change
(``removal_stable``: InterPodAffinity's unmet required affinity where no pod on the node matches its terms,
and its passing nodes for a pod with no required affinity, PodTopologySpread's passing and missing-label
nodes); where every filter after NodeResourcesFit passes that way, the victims are chosen by
NodeResourcesFit alone on the columns (``_victims_by_fit``), kept per priority and request for the node. The clusters mix priorities, zones, required pod
affinity (to pods of lower and of higher priority, and to none: the first pod of a group may start it),
anti-affinity, DoNotSchedule spread and PDBs; every Pending pod's message, nomination and victims must be
the same with the shortcuts as with a dry run on every node.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from kubegpu.scheduler.plugins.default_preemption import DefaultPreemption
from kubegpu.testing.builders import make_node, make_pod
from tests.conftest import scheduler_for

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
APPS = ("web", "db", "cache", "batch")


def cluster(seed: int) -> tuple[list[dict[str, Any]], list[Any]]:
    rng = random.Random(seed)
    objs: list[dict[str, Any]] = []
    for i in range(rng.randint(6, 24)):
        node = f"n{i}"
        objs.append(make_node(node).gpus(4).label(ZONE, f"z{i % 3}").obj())
        free = 4
        for j in range(rng.randint(0, 3)):
            gpus = rng.randint(1, min(2, free)) if free else 0
            if not gpus:
                break
            free -= gpus
            app = rng.choice(APPS[:3]) if rng.random() < 0.8 else rng.choice(APPS)
            pod = make_pod(f"r{i}-{j}").labels(app=app).gpu(gpus).priority(rng.choice((0, 0, 100, 1000)))
            day = rng.choice(("01", "02"))  # equal start times too: the order among equals is kept
            objs.append(pod.on(node, started=f"2026-01-{day}T00:00:00Z").obj())
    if rng.random() < 0.5:
        objs.append({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "pdb", "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": rng.choice(APPS)}}},
            "status": {"disruptionsAllowed": rng.randint(0, 1)},
        })  # fmt: skip
    pending = []
    for k in range(8):
        own = rng.choice(APPS)
        b = make_pod(f"p{k}").labels(app=own).gpu(rng.randint(2, 4)).priority(rng.choice((50, 500, 5000)))
        if rng.random() < 0.7:  # required affinity: a lower-priority app, a higher one, or itself only
            b.pod_affinity(rng.choice((ZONE, HOST)), {"app": rng.choice(APPS)})
        if rng.random() < 0.3:
            b.pod_affinity(rng.choice((ZONE, HOST)), {"app": rng.choice(APPS)}, anti=True)
        if rng.random() < 0.4:
            b.spread(ZONE, 1, {"app": rng.choice((own, *APPS))})
        pending.append(b.parsed())
    return objs, pending


def outcomes(objs: list[dict[str, Any]], pending: list[Any]) -> list[tuple[Any, ...]]:
    """Each pending pod asked alone, then all in turn as a scheduler commits them (a pod placed and a
    nomination recorded change what the next one reads)."""
    out = []
    for assume in (False, True):
        s = scheduler_for(*objs, kube_version="1.33")
        for pod in pending:
            r = s.schedule_one(pod, assume=assume)
            out.append((pod.name, r.message, r.node, r.nominated_node, [v.key for v in r.victims]))
    return out


@pytest.mark.parametrize("seeds", [range(k, k + 50) for k in range(0, 200, 50)])
def test_answers_without_a_dry_run_are_the_dry_runs_answers(monkeypatch: Any, seeds: range) -> None:
    dry_runs = {"ref": 0, "new": 0}
    real = DefaultPreemption.select_victims_on_node
    mode = "new"

    def counted(self: DefaultPreemption, state: Any, pod: Any, idx: int) -> Any:
        dry_runs[mode] += 1
        return real(self, state, pod, idx)

    monkeypatch.setattr(DefaultPreemption, "select_victims_on_node", counted)
    by_fit = 0  # reprieves NodeResourcesFit alone decided (every later filter passing whatever is removed)
    real_by_fit = DefaultPreemption._victims_by_fit

    def counted_by_fit(self: DefaultPreemption, state: Any, pod: Any, idx: int, reading: Any) -> Any:
        nonlocal by_fit
        by_fit += 1
        return real_by_fit(self, state, pod, idx, reading)

    monkeypatch.setattr(DefaultPreemption, "_victims_by_fit", counted_by_fit)
    affinity_decided = 0
    for seed in seeds:
        objs, pending = cluster(seed)
        mode = "new"
        new = outcomes(objs, pending)
        with monkeypatch.context() as m:  # every node with a lower-priority pod gets its dry run
            m.setattr(DefaultPreemption, "_fit_without_lower", lambda self, state, pod, idx, reading: None)
            m.setattr(DefaultPreemption, "_decided_after_fit", lambda self, state, pod, rows: ({}, set()))
            mode = "ref"
            ref = outcomes(objs, pending)
        assert new == ref, f"seed {seed}"
        affinity_decided += sum("preemption:" in o[1] and "pod affinity rules" in o[1].split("preemption:")[1]
                                for o in new)  # fmt: skip
    # the shortcuts were taken, and preemption messages name the affinity the removal did not meet
    assert dry_runs["new"] < dry_runs["ref"]
    assert affinity_decided
    assert by_fit  # victims chosen off the columns, as the dry run chose them


def test_victims_kept_for_a_node_are_read_again_once_it_changes() -> None:
    """One node of 4 GPUs held by two priority-0 pods of 2 GPUs; a Pending 4-GPU pod of priority 100 with
    only anti-affinity (to an app nowhere): every filter after NodeResourcesFit passes whatever is removed,
    so the victims come off the columns, both pods. Once one of them is gone from the node, the same pod
    (same priority and request: the kept answer's key) must name only the other, as a dry run would
    (``SelectVictimsOnNode`` on the node as it is now)."""
    objs = [make_node("n0").gpus(4).obj()]
    objs += [make_pod(f"low-{i}").labels(app="web").gpu(2).priority(0).on("n0").obj() for i in range(2)]
    pod = make_pod("big").labels(app="db").gpu(4).priority(100)
    pod.pod_affinity(HOST, {"app": "cache"}, anti=True)
    big = pod.parsed()
    s = scheduler_for(*objs, kube_version="1.33")
    first = s.schedule_one(big, assume=False)
    assert (first.nominated_node, sorted(v.name for v in first.victims)) == ("n0", ["low-0", "low-1"])
    gone = s.cluster.pods_on[s.cluster.index["n0"]]
    s.cluster.remove_pod(next(p for p in gone.values() if p.name == "low-0"))
    again = s.schedule_one(big, assume=False)
    assert (again.nominated_node, [v.name for v in again.victims]) == ("n0", ["low-1"])
