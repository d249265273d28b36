"""Per-container SM utilisation on a shared GPU, from NVML's per-process samples (R13.4, beyond dcgm-exporter).

The recorded fixture ``tests/fixtures/nodes/h200-proc-util`` holds 8 readings of one H200 shared by three
processes (``heavy``, ``light``, ``idle``), each with the ``nvmlDeviceGetProcessUtilization`` samples
NVML returned. Replayed with each process in its own pod (as on the lent machine), the exporter must give
each pod the ``sm`` of its process's newest sample, exactly, and nothing for the process NVML sampled
nothing for: NVML lists only processes with non-zero utilisation in the period, so absent is the
truthful answer, not 0.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pynvml
import pytest
from click.testing import CliRunner
from exporter_helpers import (
    H200_UUID,
    REPO,
    PodListServer,
    ReadingBackend,
    Scraper,
    fake_kubelet,
    timeline,
    timeline_reading,
    write_proc,
)

from kubegpu.cli.exporter_cmd import exporter
from kubegpu.exporter.collector import GpuCollector, PodSources
from kubegpu.exporter.kubelet_pods import KubeletPods
from kubegpu.node.discovery import process_utilization

FIXTURE = REPO / "tests" / "fixtures" / "nodes" / "h200-proc-util" / "rounds.json"
SM = "kubegpu_pod_gpu_sm_utilization_percent"


def recorded() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


@pytest.fixture
def h200_pods(tmp_path: Path) -> Iterator[tuple[Scraper, ReadingBackend]]:
    """The lent machine's emulated pods around a backend the test feeds recorded readings to."""
    data = recorded()
    meta = data["meta"]
    pods = PodListServer()
    cgroups = {}
    for name, pod in meta["pods"].items():
        pods.add_pod("gpu-share", name, pod["uid"], {"cuda": pod["container_id"]})
        cgroups[meta["pids"][name]] = f"0::/kubepods/pod{pod['uid']}/{pod['container_id']}\n"
    backend = ReadingBackend(data["rounds"][0]["reading"])
    with fake_kubelet() as (kubelet, socket):
        kubelet.pods = [
            ("gpu-share", name, {"cuda": [("nvidia.com/gpu", [f"{H200_UUID}::{i}"])]})
            for i, name in enumerate(meta["pods"])
        ]
        sources = PodSources(socket, KubeletPods(pods.url), write_proc(tmp_path / "proc", cgroups))
        scraper = Scraper(GpuCollector(backend, pods=sources, ttl_s=0))
        try:
            yield scraper, backend
        finally:
            scraper.close()
            pods.close()


def test_each_pod_gets_its_process_sm_sample_in_every_recorded_h200_round(
    h200_pods: tuple[Scraper, ReadingBackend],
) -> None:
    scraper, backend = h200_pods
    data = recorded()
    pod_of_pid = {pid: name for name, pid in data["meta"]["pids"].items()}
    for i, rnd in enumerate(data["rounds"]):
        backend.reading = rnd["reading"]
        got = scraper.scrape()
        per_pod = {dict(k)["pod"]: v for k, v in got.series.get(SM, {}).items()}
        util = rnd["reading"]["devices"][0]["proc_util"]
        # NVML returned one sample per busy process here, so each pod's value is that sample's sm.
        expected = {pod_of_pid[s["pid"]]: float(s["sm"]) for s in util["samples"]}
        assert per_pod == expected, i
        # ... which is what the exporter scraped live on the H200 from the same reading.
        assert per_pod == rnd["pod_sm"], i
        assert "idle" not in per_pod  # NVML sampled nothing for it: absent, not 0
        assert got.one("kubegpu_pod_gpu_memory_used_bytes", pod="idle") == 1616904192
        assert got.types[SM] == "gauge"


def test_first_recorded_round_worked_by_hand(h200_pods: tuple[Scraper, ReadingBackend]) -> None:
    # rounds[0].reading.devices[0].proc_util: pid 686 (light) sm 17, pid 685 (heavy) sm 76; pmon printed
    # 81 and 16 over its own 1 s interval.
    scraper, backend = h200_pods
    backend.reading = recorded()["rounds"][0]["reading"]
    got = scraper.scrape()
    assert got.one(SM, pod="heavy", namespace="gpu-share", container="cuda") == 76
    assert got.one(SM, pod="light", UUID=H200_UUID) == 17
    assert "newest nvmlDeviceGetProcessUtilization sample of the last 5 s" in got.helps[SM]


def with_proc_util(proc_util: object, procs: list[dict[str, int]]) -> dict[str, Any]:
    point = next(p for p in timeline() if p["t"] == 35.13)
    reading = timeline_reading(point)
    reading["devices"][0]["procs"] = procs
    reading["devices"][0]["proc_util"] = proc_util
    return reading


CGROUP_A = "0::/kubepods/pod1f0d6c2a-8b3e-4e47-9a51-2c7d0e5b9a01/" + "a" * 64 + "\n"


@pytest.fixture
def one_pod(tmp_path: Path) -> Iterator[tuple[Scraper, ReadingBackend]]:
    """Pod team-a/trainer owns pids 10 and 11 (two processes of one container); pid 12 is a host process."""
    pods = PodListServer()
    pods.add_pod("team-a", "trainer", "1f0d6c2a-8b3e-4e47-9a51-2c7d0e5b9a01", {"torch": "a" * 64})
    backend = ReadingBackend(with_proc_util(None, []))
    with fake_kubelet() as (kubelet, socket):
        kubelet.pods = [("team-a", "trainer", {"torch": [("nvidia.com/gpu", [H200_UUID])]})]
        proc = write_proc(tmp_path / "proc", {10: CGROUP_A, 11: CGROUP_A, 12: "0::/user.slice\n"})
        scraper = Scraper(
            GpuCollector(backend, pods=PodSources(socket, KubeletPods(pods.url), proc), ttl_s=0)
        )
        try:
            yield scraper, backend
        finally:
            scraper.close()
            pods.close()


PROCS = [
    {"pid": 10, "used_memory": 2**30},
    {"pid": 11, "used_memory": 2**30},
    {"pid": 12, "used_memory": 2**30},
]


def sample(pid: int, ts: int, sm: int) -> dict[str, int]:
    return {"pid": pid, "ts": ts, "sm": sm, "mem": 0, "enc": 0, "dec": 0}


def test_a_containers_processes_add_up_and_each_takes_its_newest_sample(
    one_pod: tuple[Scraper, ReadingBackend],
) -> None:
    scraper, backend = one_pod
    samples = [
        sample(10, 1_000_300, 40),
        sample(10, 1_000_900, 30),  # newer sample of pid 10: 30 replaces 40
        sample(11, 1_000_500, 25),
        sample(
            11, 1_000_000, 99
        ),  # not newer than since_us: NVML's contract is "newer than lastSeenTimeStamp"
        sample(12, 1_000_700, 45),  # the host process: no pod owns it
    ]
    backend.reading = with_proc_util({"since_us": 1_000_000, "samples": samples}, PROCS)
    got = scraper.scrape()
    assert got.series[SM] == {frozenset(got_labels(got, SM).items()): 30 + 25}
    assert got.one("kubegpu_pod_gpu_memory_used_bytes", pod="trainer") == 2 * 2**30


def got_labels(got: Any, family: str) -> dict[str, str]:
    (labels,) = got.series[family]
    return dict(labels)


@pytest.mark.parametrize(
    "proc_util",
    [
        "ERR:NVMLError_NotFound:Not Found",  # no process had a sample since since_us
        "ERR:NVMLError_NotSupported:Not Supported",  # the card or driver has no per-process utilisation
        None,  # a reading recorded before proc_util existed
        {"since_us": 5, "samples": [sample(12, 9, 70)]},  # only the host process was sampled
    ],
)
def test_no_sample_for_the_pods_processes_means_no_series(
    one_pod: tuple[Scraper, ReadingBackend], proc_util: object
) -> None:
    scraper, backend = one_pod
    reading = with_proc_util(proc_util, PROCS)
    if proc_util is None:
        del reading["devices"][0]["proc_util"]
    backend.reading = reading
    got = scraper.scrape()
    assert SM not in got.series
    assert got.one("kubegpu_pod_gpu_memory_used_bytes", pod="trainer") == 2 * 2**30  # the rest still works


def test_a_malformed_sample_fails_the_reading_naming_file_device_and_field(tmp_path: Path) -> None:
    reading = copy.deepcopy(
        with_proc_util({"since_us": 5, "samples": [{"pid": 10, "ts": 9, "sm": "high"}]}, PROCS)
    )
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(reading), encoding="utf-8")
    result = CliRunner().invoke(exporter, ["--reading", str(path), "--once"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        f"Error: device reading failed: {path}: device 0: proc_util.samples[0].sm: "
        "expected a non-negative integer, got 'high'"
    )


class _FakeNvml:
    """pynvml's own error classes and constants around a stand-in for one NVML call (no driver here)."""

    NVMLError = pynvml.NVMLError
    NVML_SUCCESS = pynvml.NVML_SUCCESS

    def __init__(self, answer: object) -> None:
        self.answer = answer
        self.asked: list[int] = []

    def nvmlDeviceGetProcessUtilization(self, handle: object, since_us: int) -> object:
        self.asked.append(since_us)
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


def test_the_reading_stores_nvmls_samples_and_refusals_as_pynvml_gives_them() -> None:
    s = pynvml.c_nvmlProcessUtilizationSample_t()
    s.pid, s.timeStamp, s.smUtil, s.memUtil, s.encUtil, s.decUtil = 685, 1796284032448312, 76, 16, 0, 0
    nvml = _FakeNvml([s])
    assert process_utilization(nvml, object(), 1796284027659982) == {
        "since_us": 1796284027659982,
        "samples": [{"pid": 685, "ts": 1796284032448312, "sm": 76, "mem": 16, "enc": 0, "dec": 0}],
    }
    assert nvml.asked == [1796284027659982]
    # pynvml maps NVML_ERROR_NOT_FOUND / NOT_SUPPORTED to these classes and texts, as readings store them.
    not_found = process_utilization(_FakeNvml(pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)), object(), 1)
    assert not_found == "ERR:NVMLError_NotFound:Not Found"
    unsupported = process_utilization(
        _FakeNvml(pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)), object(), 1
    )
    assert unsupported == "ERR:NVMLError_NotSupported:Not Supported"
    # pynvml raises its base class with NVML_SUCCESS when NVML's sizing call found nothing: no samples.
    assert process_utilization(_FakeNvml(pynvml.NVMLError(pynvml.NVML_SUCCESS)), object(), 1) == {
        "since_us": 1,
        "samples": [],
    }


def test_the_recorded_pmon_rows_behind_the_docs_comparison() -> None:
    # docs/exporter.md compares the exporter with `nvidia-smi pmon -c 1 -s um` round by round; these are
    # the fixture's pmon rows (gpu, pid, type, sm, ...), "-" where pmon had no sample in its interval.
    data = recorded()
    pids = data["meta"]["pids"]
    pmon_sm: dict[str, list[str]] = {name: [] for name in pids}
    for rnd in data["rounds"]:
        rows = [line.split() for line in rnd["pmon"].splitlines() if not line.startswith("#")]
        sm_of = {int(r[1]): r[3] for r in rows}
        for name, pid in pids.items():
            pmon_sm[name].append(sm_of[pid])
    assert pmon_sm == {
        "heavy": ["81", "76", "84", "78", "98", "88", "85", "98"],
        "light": ["16", "22", "14", "19", "-", "9", "12", "-"],
        "idle": ["-"] * 8,
    }
    exporter = {name: [rnd["pod_sm"].get(name) for rnd in data["rounds"]] for name in pids}
    assert exporter == {
        "heavy": [76, 87, 83, 83, 87, 91, 92, 91],
        "light": [17, 12, 16, 16, 12, 8, 8, 8],
        "idle": [None] * 8,
    }
