"""Pod labels from kubelet's Pod Resources API v1, over real gRPC on a unix socket (R13.4).

Pins kubelet's published ``k8s.io/kubelet/pkg/apis/podresources/v1/api.proto`` (names and numbers below
are read off it) and dcgm-exporter's PodMapper matching (transformation/kubernetes.go): resources
``nvidia.com/gpu`` and ``nvidia.com/mig-*`` (plus configured names), device IDs as GPU UUIDs, MIG UUIDs
and ``<uuid>::<n>`` replicas, labels ``pod``/``namespace``/``container`` and ``vgpu`` for a replica, and
one series per container sharing a device (its ``--kubernetes-virtual-gpus`` mode).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from exporter_helpers import (
    DGX1,
    H200,
    H200_UUID,
    ReadingBackend,
    Scraper,
    fake_kubelet,
    labels,
)
from exporter_helpers import dgx_labels as dgx
from exporter_helpers import h200_labels as _h200

from kubegpu.devices.inventory import MIB
from kubegpu.exporter.collector import GpuCollector, PodSources
from kubegpu.exporter.podresources import PodResourcesError, list_allocatable, list_assignments, regenerate
from kubegpu.exporter.podresources.v1 import api_pb2 as pb
from kubegpu.node.discovery import RecordedBackend

UPSTREAM_FIELDS = {
    "AllocatableResourcesRequest": {},
    "AllocatableResourcesResponse": {"devices": 1, "cpu_ids": 2, "memory": 3},
    "ListPodResourcesRequest": {},
    "ListPodResourcesResponse": {"pod_resources": 1},
    "PodResources": {"name": 1, "namespace": 2, "containers": 3},
    "ContainerResources": {"name": 1, "devices": 2, "cpu_ids": 3, "memory": 4, "dynamic_resources": 5},
    "ContainerMemory": {"memory_type": 1, "size": 2, "topology": 3},
    "ContainerDevices": {"resource_name": 1, "device_ids": 2, "topology": 3},
    "TopologyInfo": {"nodes": 1},
    "NUMANode": {"ID": 1},
    "DynamicResource": {"claim_name": 2, "claim_namespace": 3, "claim_resources": 4},
    "ClaimResource": {"cdi_devices": 1, "driver_name": 2, "pool_name": 3, "device_name": 4},
    "CDIDevice": {"name": 1},
    "GetPodResourcesRequest": {"pod_name": 1, "pod_namespace": 2},
    "GetPodResourcesResponse": {"pod_resources": 1},
}
UPSTREAM_RPCS = {
    "List": ("ListPodResourcesRequest", "ListPodResourcesResponse"),
    "GetAllocatableResources": ("AllocatableResourcesRequest", "AllocatableResourcesResponse"),
    "Get": ("GetPodResourcesRequest", "GetPodResourcesResponse"),
}

GPU0_DGX = "GPU-0000d6e1-0000-4000-8000-000000000000"
GPU1_DGX = "GPU-0000d6e1-0000-4000-8000-000000000001"


def test_package_messages_and_field_numbers_are_kubelets() -> None:
    assert pb.DESCRIPTOR.package == "v1"
    got = {n: {f.name: f.number for f in m.fields} for n, m in pb.DESCRIPTOR.message_types_by_name.items()}
    assert got == UPSTREAM_FIELDS


def test_service_and_rpcs_are_kubelets() -> None:
    service = pb.DESCRIPTOR.services_by_name["PodResourcesLister"]
    assert list(pb.DESCRIPTOR.services_by_name) == ["PodResourcesLister"]
    assert {m.name: (m.input_type.name, m.output_type.name) for m in service.methods} == UPSTREAM_RPCS


def test_committed_stubs_equal_freshly_generated_ones(tmp_path: Path) -> None:
    regenerate.generate(tmp_path)
    for name in regenerate.STUBS:
        committed = (regenerate.HERE / "v1" / name).read_text(encoding="utf-8")
        assert (tmp_path / name).read_text(encoding="utf-8") == committed, (
            f"{name} is stale: run python -m kubegpu.exporter.podresources.regenerate"
        )


def test_list_and_allocatable_over_a_unix_socket() -> None:
    with fake_kubelet() as (kubelet, socket):
        kubelet.pods = [("ml", "train-0", {"main": [("nvidia.com/gpu", [GPU0_DGX, GPU1_DGX])], "side": []})]
        kubelet.allocatable = [("nvidia.com/gpu", [GPU0_DGX]), ("nvidia.com/gpu", [GPU1_DGX])]
        got = list_assignments(socket)
        allocatable = list_allocatable(socket)
    assert [(a.namespace, a.pod, a.container, a.resource, a.device_ids) for a in got] == [
        ("ml", "train-0", "main", "nvidia.com/gpu", (GPU0_DGX, GPU1_DGX))
    ]
    assert allocatable == {"nvidia.com/gpu": (GPU0_DGX, GPU1_DGX)}


def test_an_absent_kubelet_is_a_pod_resources_error_naming_the_socket(tmp_path: Path) -> None:
    with pytest.raises(PodResourcesError, match=r"kubelet.sock: List: UNAVAILABLE"):
        list_assignments(tmp_path / "kubelet.sock", deadline_s=1.0)


def _scrape(backend: object, socket: Path, extra: tuple[str, ...] = ()) -> dict:
    scraper = Scraper(GpuCollector(backend, pods=PodSources(socket, extra_resources=extra)))  # type: ignore[arg-type]
    try:
        return scraper.scrape()
    finally:
        scraper.close()


def test_whole_gpus_get_the_pod_labels_of_the_container_holding_them() -> None:
    with fake_kubelet() as (kubelet, socket):
        kubelet.pods = [
            ("ml", "train-0", {"main": [("nvidia.com/gpu", [GPU0_DGX, GPU1_DGX])]}),
            # Another vendor's resource naming the same string is not an NVIDIA device (PodMapper's filter).
            ("web", "fpga-0", {"main": [("example.com/fpga", ["2"])]}),
        ]
        got = _scrape(RecordedBackend(DGX1), socket)
    util = got.series["DCGM_FI_DEV_FB_USED"]  # the generated DGX-1 reading has memory, no utilisation
    pod = {"pod": "train-0", "namespace": "ml", "container": "main"}
    assert labels(**dgx(0), **pod) in util and labels(**dgx(1), **pod) in util
    assert labels(**dgx(2)) in util  # unassigned: no pod labels, but still exported
    assert len(util) == 8
    assert got.one("kubegpu_gpu_allocated_containers", gpu="0") == 1
    assert got.one("kubegpu_gpu_allocated_containers", gpu="2") == 0
    assert got.one("kubegpu_exporter_source_up", source="pod-resources") == 1


def test_index_device_ids_match_gpus_as_under_device_id_strategy_index() -> None:
    with fake_kubelet() as (kubelet, socket):
        kubelet.pods = [("ml", "idx", {"c": [("nvidia.com/gpu", ["3"])]})]
        got = _scrape(RecordedBackend(DGX1), socket)
    assert got.one("DCGM_FI_DEV_FB_USED", gpu="3", pod="idx") is not None


def test_time_slicing_replicas_give_one_series_per_container_with_vgpu() -> None:
    reading = json.loads((H200 / "nvml.json").read_text())
    with fake_kubelet() as (kubelet, socket):
        kubelet.pods = [
            ("team-a", "infer-a", {"srv": [("nvidia.com/gpu.shared", [f"{H200_UUID}::0"])]}),
            ("team-b", "infer-b", {"srv": [("nvidia.com/gpu.shared", [f"{H200_UUID}::3"])]}),
        ]
        got = _scrape(ReadingBackend(reading), socket, extra=("nvidia.com/gpu.shared",))
    temps = got.series["DCGM_FI_DEV_GPU_TEMP"]
    assert {(dict(k)["pod"], dict(k)["vgpu"]) for k in temps} == {("infer-a", "0"), ("infer-b", "3")}
    assert set(temps.values()) == {37}  # the same device value, copied per pod (not to be summed)
    assert got.one("kubegpu_gpu_allocated_containers", gpu="0") == 2


def test_allocated_containers_counts_a_container_with_two_replicas_once() -> None:
    """A time-slicing request for 2 replicas gives one container the IDs ``<uuid>::0`` and ``<uuid>::3``
    (NVIDIA/k8s-device-plugin AnnotatedID ``<id>::<n>``; dcgm-exporter 4.5.3-4.8.2
    internal/pkg/transformation/kubernetes.go strips the ``::<n>`` suffix): one container holds the GPU,
    so the count is 1 (the HELP says containers) and there is no shared-GPU pressure series."""
    reading = json.loads((H200 / "nvml.json").read_text())
    ids = [f"{H200_UUID}::0", f"{H200_UUID}::3"]
    with fake_kubelet() as (kubelet, socket):
        kubelet.pods = [("team-a", "infer-a", {"srv": [("nvidia.com/gpu.shared", ids)]})]
        got = _scrape(ReadingBackend(reading), socket, extra=("nvidia.com/gpu.shared",))
    assert got.one("kubegpu_gpu_allocated_containers", gpu="0") == 1
    assert "kubegpu_gpu_memory_pressure_ratio" not in got.series


def test_a_renamed_shared_resource_is_ignored_unless_configured_as_upstream_does() -> None:
    reading = json.loads((H200 / "nvml.json").read_text())
    with fake_kubelet() as (kubelet, socket):
        kubelet.pods = [("team-a", "infer-a", {"srv": [("nvidia.com/gpu.shared", [f"{H200_UUID}::0"])]})]
        got = _scrape(ReadingBackend(reading), socket)
    assert all("pod" not in dict(k) for k in got.series["DCGM_FI_DEV_GPU_TEMP"])


def test_mig_device_ids_label_the_mig_series_not_the_parent() -> None:
    reading = json.loads((H200 / "nvml.json").read_text())
    mig = "MIG-11111111-2222-3333-4444-555555555555"
    reading["devices"][0]["mig_mode"] = [1, 1]
    reading["devices"][0]["mig_devices"] = [
        {"index": 0, "uuid": mig, "profile": "1g.18gb", "gi_id": 9, "ci_id": 0, "memory_total": 16384 * MIB}
    ]
    counters = {mig: {"DCGM_FI_DEV_FB_USED": 512.0}}
    with fake_kubelet() as (kubelet, socket):
        kubelet.pods = [("ml", "tiny", {"c": [("nvidia.com/mig-1g.18gb", [mig])]})]
        scraper = Scraper(
            GpuCollector(ReadingBackend(reading), counters=lambda: counters, pods=PodSources(socket))
        )
        try:
            got = scraper.scrape()
        finally:
            scraper.close()
    fb = got.series["DCGM_FI_DEV_FB_USED"]
    assert (
        fb[
            labels(
                **_h200(), GPU_I_PROFILE="1g.18gb", GPU_I_ID="9", pod="tiny", namespace="ml", container="c"
            )
        ]
        == 512
    )
    assert len(fb) == 1  # the MIG-enabled parent has none (dcgm-exporter's default -d f)


def test_device_series_survive_a_kubelet_that_does_not_answer(tmp_path: Path) -> None:
    got = _scrape(RecordedBackend(H200 / "nvml.json"), tmp_path / "absent.sock")
    assert got.one("kubegpu_exporter_source_up", source="pod-resources") == 0
    assert got.series["DCGM_FI_DEV_GPU_TEMP"] == {labels(**_h200()): 37}
    assert "kubegpu_gpu_allocated_containers" not in got.series  # unknown, not "0 containers"
