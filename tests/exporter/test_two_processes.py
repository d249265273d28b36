"""Per-container GPU memory on a time-sliced GPU, replayed from a real timeline (R13.4, R17.3).

The shared fixture ``h200-1gpu/two-processes`` is NVML read every 0.5 s while two PyTorch processes
(pid 425 and 451) shared one H200. Here each process runs in its own pod (the cgroup layouts kubelet's
systemd and cgroupfs drivers write), kubelet's Pod Resources API gives each pod one time-slicing replica
of the GPU, and kubelet's ``/pods`` names the pod UIDs. At every timeline point the exporter must give
each pod exactly the memory NVML listed for its process, and the device series NVML's device readings.
dcgm-exporter copies the device's framebuffer to both pods, except with ``--kubernetes-virtual-gpus``
(4.5.3-4.8.2 ``transformation/kubernetes.go`` ``createPerProcessMetrics``), where it adds per-pod
``DCGM_FI_DEV_FB_USED``/``GPU_UTIL`` series with ``pod_uid``; kubegpu gives these in every mode as
``kubegpu_pod_*``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from exporter_helpers import (
    H200_UUID,
    PodListServer,
    ReadingBackend,
    Scraper,
    fake_kubelet,
    timeline,
    timeline_reading,
    write_proc,
)
from tests.clock import ManualClock

from kubegpu.devices.inventory import MIB
from kubegpu.exporter.collector import GpuCollector, PodSources
from kubegpu.exporter.kubelet_pods import KubeletPods

UID_A = "1f0d6c2a-8b3e-4e47-9a51-2c7d0e5b9a01"
UID_B = "7c2e9b14-3d5a-4f60-8e21-9b4c6a7d3e02"
CID_A = "a" * 63 + "1"
CID_B = "b" * 63 + "2"
CGROUPS = {
    # systemd cgroup driver, containerd, Burstable pod (pod UID dashes become underscores in the slice name)
    425: f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_A.replace('-', '_')}.slice/cri-containerd-{CID_A}.scope\n",
    # cgroupfs driver, Guaranteed pod (no QoS level in the path)
    451: f"0::/kubepods/pod{UID_B}/{CID_B}\n",
}


@pytest.fixture
def replay(tmp_path: Path) -> Iterator[tuple[Scraper, ReadingBackend, ManualClock, PodListServer]]:
    points = timeline()
    backend = ReadingBackend(timeline_reading(points[0]))
    clock = ManualClock()
    pods = PodListServer()
    pods.add_pod("team-a", "trainer-a", UID_A, {"torch": CID_A})
    pods.add_pod("team-b", "trainer-b", UID_B, {"torch": CID_B})
    with fake_kubelet() as (kubelet, socket):
        kubelet.pods = [
            ("team-a", "trainer-a", {"torch": [("nvidia.com/gpu", [f"{H200_UUID}::0"])]}),
            ("team-b", "trainer-b", {"torch": [("nvidia.com/gpu", [f"{H200_UUID}::1"])]}),
        ]
        sources = PodSources(socket, KubeletPods(pods.url), write_proc(tmp_path / "proc", CGROUPS))
        scraper = Scraper(GpuCollector(backend, pods=sources, ttl_s=0.25, clock=clock))
        try:
            yield scraper, backend, clock, pods
        finally:
            scraper.close()
            pods.close()


def test_each_pod_gets_its_own_processes_memory_at_every_timeline_point(
    replay: tuple[Scraper, ReadingBackend, ManualClock, PodListServer],
) -> None:
    scraper, backend, clock, pods = replay
    points = timeline()
    seen_both = 0
    for point in points:
        backend.reading, clock.now = timeline_reading(point), point["t"]
        got = scraper.scrape()
        procs = {p["pid"]: p["used_mib"] * MIB for p in point["procs"]}
        per_pod = {
            dict(k)["pod"]: v for k, v in got.series.get("kubegpu_pod_gpu_memory_used_bytes", {}).items()
        }
        expected = {
            name: procs[pid] for pid, name in ((425, "trainer-a"), (451, "trainer-b")) if pid in procs
        }
        assert per_pod == expected, point["t"]
        # The device series are NVML's device readings at that point.
        assert got.one("DCGM_FI_DEV_FB_USED", pod="trainer-a") == point["fb_used_mib"]
        assert got.one("DCGM_FI_DEV_GPU_UTIL", pod="trainer-b") == point["util_gpu"]
        assert got.one("DCGM_FI_DEV_POWER_USAGE", pod="trainer-a") == point["power_w"]
        assert got.one("kubegpu_gpu_unattributed_memory_used_bytes") == 0
        seen_both += len(expected) == 2
    assert seen_both > 0 and backend.reads == len(points)
    # kubelet's /pods was read once, when pid 425 first appeared; that answer already named pod B's UID.
    assert len(pods.auth) == 1


def test_the_oom_moment_b_holds_most_of_the_card_and_a_keeps_its_21482_mib(
    replay: tuple[Scraper, ReadingBackend, ManualClock, PodListServer],
) -> None:
    # t = 35.13 s (README): B grew until CUDA OOM; A, which never grew, then failed to allocate 8 GiB more.
    scraper, backend, clock, _ = replay
    point = next(p for p in timeline() if p["t"] == 35.13)
    backend.reading, clock.now = timeline_reading(point), point["t"]
    got = scraper.scrape()
    assert got.one("kubegpu_pod_gpu_memory_used_bytes", pod="trainer-a", container="torch") == 21482 * MIB
    assert got.one("kubegpu_pod_gpu_memory_used_bytes", pod="trainer-b", namespace="team-b") == 119786 * MIB
    # Time-sliced memory pressure: both processes' memory against the card's 150754820096 bytes.
    assert got.one("kubegpu_gpu_memory_pressure_ratio") == pytest.approx(
        (21482 + 119786) * MIB / 150754820096
    )
    assert got.one("DCGM_FI_DEV_FB_FREE", pod="trainer-b") == 1873


def test_fb_used_and_gpu_util_are_device_copies_not_4_5_3s_per_process_series(
    replay: tuple[Scraper, ReadingBackend, ManualClock, PodListServer],
) -> None:
    """What is not modelled, pinned. dcgm-exporter 4.5.3-4.8.2 with ``--kubernetes-virtual-gpus``
    (PR #594; transformation/kubernetes.go ``createPerProcessMetrics``, process_metrics.go
    ``getValueForMetric``) keeps the device's ``DCGM_FI_DEV_FB_USED`` without pod labels and gives each pod
    on it a series with ``pod_uid`` valued at its processes' memory, each floored to MiB. kubegpu copies the
    device's value per holder, as 4.5.2-4.8.1's kubernetes.go did for every field (without that release's
    ``pod_uid``), and gives the per-process number as ``kubegpu_pod_gpu_memory_used_bytes``: at t = 35.13 s
    the timeline's pids 425 and 451 hold 21 482 and 119 786 MiB, the numbers 4.5.3 would put in each pod's
    FB_USED."""
    scraper, backend, clock, _ = replay
    point = next(p for p in timeline() if p["t"] == 35.13)
    backend.reading, clock.now = timeline_reading(point), point["t"]
    got = scraper.scrape()
    for family, device_value in (
        ("DCGM_FI_DEV_FB_USED", point["fb_used_mib"]),
        ("DCGM_FI_DEV_GPU_UTIL", point["util_gpu"]),
    ):
        series = got.series[family]
        assert {dict(k)["pod"] for k in series} == {"trainer-a", "trainer-b"}, family  # no pod-less series
        assert set(series.values()) == {device_value}, family
        assert all("pod_uid" not in dict(k) for k in series), family
    per_pod = {dict(k)["pod"]: v / MIB for k, v in got.series["kubegpu_pod_gpu_memory_used_bytes"].items()}
    used = {p["pid"]: p["used_mib"] for p in point["procs"]}
    assert (
        per_pod
        == {"trainer-a": used[425], "trainer-b": used[451]}
        == {"trainer-a": 21482, "trainer-b": 119786}
    )


def test_seconds_since_a_process_counts_on_the_collectors_clock(
    replay: tuple[Scraper, ReadingBackend, ManualClock, PodListServer],
) -> None:
    scraper, backend, clock, _ = replay
    points = timeline()
    first_busy = next(p for p in points if p["procs"])
    idle_before = [p for p in points if p["t"] < first_busy["t"]][-1]
    # Counted from the collector's start (its clock read 0.0 when it was built), not from the first scrape.
    for point, expected in ((idle_before, idle_before["t"]), (first_busy, 0.0)):
        backend.reading, clock.now = timeline_reading(point), point["t"]
        assert scraper.scrape().one("kubegpu_gpu_seconds_since_process") == pytest.approx(expected)
    last = points[-1]
    backend.reading, clock.now = timeline_reading({**last, "procs": []}), last["t"] + 600
    assert scraper.scrape().one("kubegpu_gpu_seconds_since_process") == pytest.approx(
        600 + last["t"] - first_busy["t"]
    )


def test_processes_outside_any_known_pod_are_unattributed(tmp_path: Path) -> None:
    # Pod Resources still assigns the GPU, but kubelet's /pods no longer lists pod B (it is terminating).
    point = next(p for p in timeline() if p["t"] == 35.13)
    pods = PodListServer()
    pods.add_pod("team-a", "trainer-a", UID_A, {"torch": CID_A})
    with fake_kubelet() as (kubelet, socket):
        kubelet.pods = [("team-a", "trainer-a", {"torch": [("nvidia.com/gpu", [H200_UUID])]})]
        sources = PodSources(socket, KubeletPods(pods.url), write_proc(tmp_path / "proc", CGROUPS))
        scraper = Scraper(GpuCollector(ReadingBackend(timeline_reading(point)), pods=sources))
        try:
            got = scraper.scrape()
        finally:
            scraper.close()
            pods.close()
    assert got.one("kubegpu_pod_gpu_memory_used_bytes", pod="trainer-a") == 21482 * MIB
    assert got.one("kubegpu_gpu_unattributed_memory_used_bytes") == 119786 * MIB
