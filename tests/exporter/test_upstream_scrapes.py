"""MIG series checked against dcgm-exporter's own ``/metrics`` output pasted in its issues (R13.2).

Each test builds the node an issue shows (a reading, NVML's per-MIG-device memory, kubelet's Pod Resources)
and compares kubegpu's scrape with the issue's lines, label for label and value for value. Labels a pasted
scrape lacks for its version or configuration are dropped before comparing, and named: ``pci_bus_id``
(#317's release predates it; 4.5.3-4.8.2 internal/pkg/rendermetrics/render_metrics.go writes it after
``UUID``) and ``DCGM_FI_DRIVER_VERSION`` (a label field of the counters file 4.5.3-4.8.2 ships, absent from
both scrapes' configuration).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from exporter_helpers import H200, Labels, ReadingBackend, fake_kubelet, labels, scrape_once

from kubegpu.devices.inventory import MIB
from kubegpu.exporter.collector import GpuCollector, PodSources

NOT_IN_THOSE_SCRAPES = ("pci_bus_id", "DCGM_FI_DRIVER_VERSION")


def _a30(index: int, uuid: str, bus: str, gis: list[int]) -> dict[str, Any]:
    """One A30 with MIG on and a 1g.6gb MIG device per GPU-instance id, in the node agent's reading format
    (the recorded H200's reading, with the issue's identity, temperature and clocks)."""
    reading = json.loads((H200 / "nvml.json").read_text(encoding="utf-8"))
    dev = copy.deepcopy(reading["devices"][0])
    dev |= {"index": index, "uuid": uuid, "name": "NVIDIA A30", "pci_bus_id": bus, "mig_mode": [1, 1]}
    dev |= {"temp": 35, "clocks": {"sm": 1440, "mem": 1215}}
    # The H200 reading's utilisation stays (numbers): the instances must carry none even where NVML gave one.
    dev["mig_devices"] = [
        # MIG UUIDs are stand-ins: no dcgm-exporter label carries them. memory_total is in no series here.
        {
            "index": i,
            "uuid": _mig_uuid(uuid, gi),
            "profile": "1g.6gb",
            "gi_id": gi,
            "ci_id": 0,
            "memory_total": 6016 * MIB,
        }
        for i, gi in enumerate(gis)
    ]
    reading["devices"] = [dev]
    return reading


def _mig_uuid(parent: str, gi: int) -> str:
    return f"MIG-{parent[4:-2]}{gi:02d}"


def _without_version_labels(series: dict[Labels, float]) -> dict[Labels, float]:
    return {
        frozenset((k, v) for k, v in ls if k not in NOT_IN_THOSE_SCRAPES): value
        for ls, value in series.items()
    }


def test_an_a30_in_mig_mode_is_exported_per_gpu_instance_as_issue_317_shows() -> None:
    """https://github.com/NVIDIA/dcgm-exporter/issues/317 (a CodeBrek comment): an A30 with four 1g.6gb
    instances (GPU_I_ID 3-6), each with its own ``DCGM_FI_DEV_FB_FREE`` 6012 and the card's
    ``DCGM_FI_DEV_GPU_TEMP`` 35 and ``DCGM_FI_DEV_SM_CLOCK`` 1440, and no series for the GPU itself: the
    default ``-d f`` monitors the GPU instances of a GPU that has some (4.5.3-4.8.2
    internal/pkg/devicemonitoring/device_monitoring.go monitorAllGPUInstances; issue #561, closed as
    answered: a MIG GPU's own temperature, power and energy are not exposed apart from its instances).
    Clocks are the card's on every instance (issue #50, nikkon-dev: "all MIG instances on a physical GPU will
    have the same SM and MEM clocks"); utilisation is not reported for MIG (issue #430, glowkey)."""
    parent = "GPU-265c9814-6156-355b-e589-ff2064894f16"
    gis = [3, 4, 5, 6]
    counters = {_mig_uuid(parent, gi): {"DCGM_FI_DEV_FB_FREE": 6012.0} for gi in gis}
    host = "yg-data-k8s-gpu-a30-node-test-test0003.mt"
    collector = GpuCollector(
        ReadingBackend(_a30(0, parent, "00000000:3B:00.0", gis)), counters=lambda: counters, hostname=host
    )
    got = scrape_once(collector)
    issue = {"gpu": "0", "UUID": parent, "device": "nvidia0", "modelName": "NVIDIA A30"}
    for family, value in (
        ("DCGM_FI_DEV_FB_FREE", 6012),
        ("DCGM_FI_DEV_GPU_TEMP", 35),
        ("DCGM_FI_DEV_SM_CLOCK", 1440),
    ):
        want = {labels(**issue, GPU_I_PROFILE="1g.6gb", GPU_I_ID=str(gi), Hostname=host): value for gi in gis}
        assert _without_version_labels(got.series[family]) == want, family
    # The memory clock too is the card's, on each instance (issue #50); the reading's 1215 MHz.
    assert set(got.series["DCGM_FI_DEV_MEM_CLOCK"].values()) == {1215}
    assert len(got.series["DCGM_FI_DEV_MEM_CLOCK"]) == 4
    dcgm = [ls for name, s in got.series.items() if name.startswith("DCGM_") for ls in s]
    assert dcgm and all("GPU_I_ID" in dict(ls) for ls in dcgm)  # nothing for the GPU itself
    assert "DCGM_FI_DEV_GPU_UTIL" not in got.series and "DCGM_FI_DEV_MEM_COPY_UTIL" not in got.series
    # kubegpu's own series of the GPU stay on it
    assert got.one("kubegpu_gpu_processes", UUID=parent) == 0


def test_a_pod_holding_a_mig_device_labels_that_instances_framebuffer_as_pr_736_shows() -> None:
    """https://github.com/NVIDIA/dcgm-exporter/pull/736 (gfrankliu's comment of 2026-09-15, a build after
    4.6.0-4.8.3): on an A30 (gpu 2) a pod holding the 1g.6gb instance GPU_I_ID 3 labels that instance's
    ``DCGM_FI_DEV_FB_FREE`` 2207 with ``container``/``namespace``/``pod``, beside the parent's gpu, UUID,
    pci_bus_id, device and modelName. That build writes the host label as ``hostname``: PR #655 renamed it,
    first released in 4.6.0-4.8.3; kubegpu writes 4.5.3-4.8.2's ``Hostname``
    (kubegpu.devices.dcgm_fields.LABEL_HOSTNAME), so the comparison renames it."""
    parent = "GPU-63bc0b91-2265-1b94-831c-15c41fe92675"
    mig = _mig_uuid(parent, 3)
    counters = {mig: {"DCGM_FI_DEV_FB_FREE": 2207.0}}
    with fake_kubelet() as (kubelet, socket):
        kubelet.pods = [
            ("default", "triton-server-f7cb5d77-95xcf", {"triton-server": [("nvidia.com/mig-1g.6gb", [mig])]})
        ]
        collector = GpuCollector(
            ReadingBackend(_a30(2, parent, "00000000:CA:00.0", [3])),
            counters=lambda: counters,
            pods=PodSources(socket),
            hostname="dcgm-exporter-wwwjh",
        )
        got = scrape_once(collector)
    line = {
        "gpu": "2",
        "UUID": parent,
        "pci_bus_id": "00000000:CA:00.0",
        "device": "nvidia2",
        "modelName": "NVIDIA A30",
        "GPU_I_PROFILE": "1g.6gb",
        "GPU_I_ID": "3",
        "hostname": "dcgm-exporter-wwwjh",
        "container": "triton-server",
        "namespace": "default",
        "pod": "triton-server-f7cb5d77-95xcf",
    }
    line["Hostname"] = line.pop("hostname")
    fb_free = {
        frozenset((k, v) for k, v in ls if k != "DCGM_FI_DRIVER_VERSION"): value
        for ls, value in got.series["DCGM_FI_DEV_FB_FREE"].items()
    }
    assert fb_free == {labels(**line): 2207}
