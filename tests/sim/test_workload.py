"""Simulator workloads from YAML: the SimWorkload object (counts, Fixed / Uniform / Poisson arrivals,
durations, patience, node events) and Kubernetes manifests expanded as their controllers would
(Deployment ``replicas``; Job ``parallelism`` / ``completions``), with errors naming file, object and
field; and ``kubegpu simulate`` on the demo cluster with a workload and a change."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from kubegpu.cli.sim_cmd import simulate
from kubegpu.errors import InputError
from kubegpu.sim.whatif import added_nodes, time_sliced
from kubegpu.sim.workload import load_workload
from kubegpu.testing.builders import make_node

POD_SPEC = {
    # in limits: the API server refuses an extended-resource request without an equal limit
    "containers": [{"name": "main", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]
}


def sim_workload(*templates: dict[str, Any], events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"templates": list(templates)}
    if events is not None:
        spec["nodeEvents"] = events
    return {
        "apiVersion": "kubegpu.io/v1alpha1",
        "kind": "SimWorkload",
        "metadata": {"name": "w"},
        "spec": spec,
    }


def template(name: str, count: int, arrival: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": name, "count": count, "arrival": arrival, "pod": {"spec": POD_SPEC}, **extra}


def test_fixed_arrivals_durations_and_patience() -> None:
    doc = sim_workload(
        template("t", 3, {"type": "Fixed", "times": [0, 30, 60]}, durationSeconds=600, patienceSeconds=120)
    )
    out = load_workload([("w.yaml", doc)])
    assert [(p.pod.name, p.arrival, p.duration, p.deadline) for p in out.pods] == [
        ("w-t-0", 0, 600, 120),
        ("w-t-1", 30, 600, 150),
        ("w-t-2", 60, 600, 180),
    ]
    assert out.pods[0].pod.requests["nvidia.com/gpu"] == 1000


def test_poisson_arrivals_are_exponential_gaps_from_a_seeded_generator() -> None:
    """Rate 3600/h = mean gap 1 s; the times are the cumulative sums of NumPy's exponential draws with
    the documented seed (seed, workload name bytes, 0, template index), starting at 100."""
    doc = sim_workload(template("t", 4, {"type": "Poisson", "start": 100, "ratePerHour": 3600}))
    out = load_workload([("w.yaml", doc)], seed=5)
    gaps = np.random.default_rng([5, *b"w", 0, 0]).exponential(1.0, size=4)
    assert [p.arrival for p in out.pods] == pytest.approx(list(100 + np.cumsum(gaps)))
    again = load_workload([("w.yaml", doc)], seed=5)
    assert [p.arrival for p in again.pods] == [p.arrival for p in out.pods]
    other = load_workload([("w.yaml", doc)], seed=6)
    assert [p.arrival for p in other.pods] != [p.arrival for p in out.pods]


def test_uniform_arrivals_fall_in_the_window_and_are_sorted() -> None:
    doc = sim_workload(template("t", 50, {"type": "Uniform", "start": 10, "end": 20}))
    times = [p.arrival for p in load_workload([("w.yaml", doc)]).pods]
    assert times == sorted(times) and all(10 <= t < 20 for t in times)
    assert all(math.isinf(p.duration) for p in load_workload([("w.yaml", doc)]).pods)


def test_node_events_parse_with_the_added_node() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "extra"},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "4"}}}  # fmt: skip
    doc = sim_workload(
        template("t", 1, {"type": "Fixed", "times": [0]}),
        events=[{"at": 60, "action": "cordon", "node": "gpu-1"}, {"at": 90, "action": "add", "node": node}],
    )
    events = load_workload([("w.yaml", doc)]).node_events
    assert [(e.time, e.action, e.node) for e in events] == [(60, "cordon", "gpu-1"), (90, "add", "extra")]
    assert events[1].spec is not None and events[1].spec.allocatable["nvidia.com/gpu"] == 4000


def deployment(replicas: Any = 3) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "serve",
                         "annotations": {"kubegpu.io/sim-arrival-seconds": "5"}},
            "spec": {"replicas": replicas, "template": {"metadata": {"labels": {"app": "web"}}, "spec": POD_SPEC}}}  # fmt: skip


def job(parallelism: int, completions: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"parallelism": parallelism, "template": {"spec": POD_SPEC}}
    if completions is not None:
        spec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "train", "annotations": {"kubegpu.io/sim-duration-seconds": "300"}}, "spec": spec}  # fmt: skip


def test_deployment_expands_to_replicas_pods_that_run_to_the_end() -> None:
    out = load_workload([("d.yaml", deployment())])
    assert [(p.pod.key, p.arrival, p.pod.labels) for p in out.pods] == [
        (f"serve/web-{i}", 5.0, {"app": "web"}) for i in range(3)
    ]
    assert all(math.isinf(p.duration) for p in out.pods)


def test_job_keeps_parallelism_running_until_completions() -> None:
    """parallelism 2, completions 5: pods 0 and 1 start together; pod i (i ≥ 2) is created when pod
    i − 2 completes (the Job controller replacing a finished pod)."""
    out = load_workload([("j.yaml", job(2, 5))])
    assert [(p.pod.name, p.after) for p in out.pods] == [
        ("train-0", None), ("train-1", None),
        ("train-2", "default/train-0"), ("train-3", "default/train-1"), ("train-4", "default/train-2"),
    ]  # fmt: skip
    assert {p.duration for p in out.pods} == {300.0}
    # without completions: parallelism pods, no replacements
    assert [p.pod.name for p in load_workload([("j.yaml", job(3, None))]).pods] == [
        "train-0",
        "train-1",
        "train-2",
    ]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            deployment("three"),
            "d.yaml: Deployment serve/web: spec.replicas: must be an integer ≥ 0, got 'three'",
        ),
        (
            sim_workload(template("t", 2, {"type": "Fixed", "times": [0]})),
            "d.yaml: SimWorkload w: spec.templates[0].arrival.times: must list exactly count (2) times",
        ),
        (
            sim_workload(template("t", 1, {"type": "Gamma"})),
            "d.yaml: SimWorkload w: spec.templates[0].arrival.type: must be one of Fixed, Uniform, Poisson, got 'Gamma'",
        ),
        (
            sim_workload(template("t", 1, {"type": "Uniform", "start": 5, "end": 5})),
            "d.yaml: SimWorkload w: spec.templates[0].arrival.end: must be after start (5), got 5",
        ),
        (
            sim_workload(
                {
                    "name": "t",
                    "count": 1,
                    "arrival": {"type": "Fixed", "times": [0]},
                    "pod": {"spec": {"containers": []}},
                }
            ),
            "d.yaml: SimWorkload w: spec.templates[0].pod.spec.containers: Required value",
        ),
        (
            {"apiVersion": "v1", "kind": "ConfigMapList"},
            "d.yaml: ConfigMapList <no name>: kind: the simulator runs SimWorkload, Pod, Deployment, StatefulSet and Job "
            "(with ResourceClaim and ResourceClaimTemplate), not 'ConfigMapList'",
        ),
    ],
)
def test_bad_input_names_file_object_and_field(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as exc:
        load_workload([("d.yaml", doc)])
    assert str(exc.value) == message


def test_simulate_on_the_demo_with_a_workload_and_added_nodes(tmp_path: Path) -> None:
    """The demo cluster plus a Job of 8-GPU pods that cannot all fit at once; adding two 8-GPU nodes
    must not leave more pods pending than before, and the table has both columns."""
    big = {"containers": [{"name": "main", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}
    doc = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "wide", "annotations": {"kubegpu.io/sim-duration-seconds": "600"}},
           "spec": {"parallelism": 6, "completions": 6, "template": {"spec": big}}}  # fmt: skip
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(doc))
    series = tmp_path / "series.csv"
    args = ["--demo", "--workload", str(path), "--add-nodes", "2", "--series", str(series)]
    result = CliRunner().invoke(simulate, args)
    assert result.exit_code == 0, result.output
    assert "before: default" in result.output and "after: +2 node(s)" in result.output
    assert "pending time p95 (s)" in result.output
    rows = list(csv.DictReader(series.open()))
    assert {r["run"] for r in rows} == {"before: default", "after: +2 node(s)"}
    assert all(
        int(r["pending"]) == int(r["active"]) + int(r["backoff"]) + int(r["unschedulable"]) for r in rows
    )


def test_simulate_reports_bad_workload_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(deployment("three")))
    result = CliRunner().invoke(simulate, ["--demo", "--workload", str(path)])
    assert result.exit_code == 2  # bad input: exit 2, as on every command
    assert f"{path}: Deployment serve/web: spec.replicas: must be an integer" in result.output
    assert "Traceback" not in result.output


def test_time_slicing_and_added_nodes_changes() -> None:
    """Time-slicing ×4 (the device plugin's sharing.timeSlicing replicas, renameByDefault false): an
    8-GPU node advertises 32 nvidia.com/gpu and GFD's nvidia.com/gpu.replicas=4; a CPU node is left
    alone. --add-nodes 2 copies the node with the most GPUs."""
    gpu, cpu = make_node("g").gpus(8).parsed(), make_node("c").parsed()
    sliced = {n.name: n for n in time_sliced([gpu, cpu], 4)}
    assert sliced["g"].allocatable["nvidia.com/gpu"] == 32_000
    assert sliced["g"].labels["nvidia.com/gpu.replicas"] == "4"
    assert sliced["c"] == cpu
    assert [n.name for n in added_nodes([cpu, gpu], 2, None)] == ["c", "g", "g-sim-0", "g-sim-1"]


def test_another_projects_kind_of_a_name_the_simulator_reads_is_refused_by_its_group() -> None:
    """A Volcano Job (batch.volcano.sh/v1alpha1, volcano-sh/volcano#2814) and a KAI PodGroup
    (scheduling.run.ai/v2alpha2) share a kind name with what the simulator reads (batch/v1 Job, Volcano's
    and coscheduling's PodGroup): one line naming the apiVersion, not a silent misreading (the snapshot
    loader routes by group too: model.snapshot.reads)."""
    vcjob = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "job-a"},
             "spec": {"minAvailable": 1, "tasks": []}}  # fmt: skip
    kai = {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "metadata": {"name": "pg", "namespace": "d"},
           "spec": {"minMember": 1, "queue": "q"}}  # fmt: skip
    for obj in (vcjob, kai):
        with pytest.raises(InputError) as err:
            load_workload([("w.yaml", obj)])
        line = err.value.one_line()
        assert (
            "apiVersion" in line and f"{obj['kind']} of {obj['apiVersion']} is not the {obj['kind']}" in line
        ), line
