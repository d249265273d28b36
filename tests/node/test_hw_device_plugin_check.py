"""What the device plugin did on real hardware (recorded: benchmarks/hw_device_plugin_check.py on the lent
H200, 2026-12-03, and on a lent H100 80GB HBM3, 2026-12-06; UUIDs replaced by the fixtures' stand-ins). CI has no GPU, so this pins the recorded
run against what kubelet's Device Plugin API and the NVIDIA plugin specify: registration as v1beta1
``nvidia.com/gpu`` on ``nvidia-gpu.sock``; time-slicing replicas ``<uuid>::<n>``; Allocate's
``NVIDIA_VISIBLE_DEVICES`` naming the physical GPU; and a CUDA process given that visibility seeing
exactly that one GPU as CUDA device 0 (R6.1, R6.2, R9.3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

NODES = Path(__file__).parents[1] / "fixtures" / "nodes"
# (recorded run, the GPU's stand-in UUID, the product name CUDA printed)
RUNS = {
    "h200": (
        NODES / "h200-1gpu-device-plugin-check.json",
        "GPU-5f3c0a7e-1d2b-4c8e-9a6f-0b1c2d3e4f50",
        "NVIDIA H200",
    ),
    "h100": (
        NODES / "h100-1gpu" / "device-plugin-check.json",
        "GPU-7a1e2b3c-4d5e-4f60-8a71-92b3c4d5e6f0",
        "NVIDIA H100 80GB HBM3",
    ),
}


@pytest.fixture(params=sorted(RUNS))
def recorded(request: pytest.FixtureRequest) -> tuple[dict[str, Any], str, str]:
    path, uuid, product = RUNS[request.param]
    return json.loads(path.read_text()), uuid, product


def test_exclusive_gpu_is_registered_allocated_and_seen_alone(
    recorded: tuple[dict[str, Any], str, str],
) -> None:
    runs, UUID, product = recorded
    run = runs["exclusive"]
    assert run["registered"] == {
        "resource": "nvidia.com/gpu",
        "endpoint": "nvidia-gpu.sock",
        "version": "v1beta1",
    }
    assert run["list_and_watch"] == [{"id": UUID, "health": "Healthy"}]
    (container,) = run["containers"]
    assert container["envs"] == {"NVIDIA_VISIBLE_DEVICES": UUID}
    assert container["cuda_sees"]["count"] == 1
    # torch prints the UUID without the "GPU-" prefix
    assert container["cuda_sees"]["uuids"] == [UUID.removeprefix("GPU-")]
    assert container["container_view"] == [{"cuda_index": 0, "host_index": 0, "uuid": UUID}]
    assert container["cuda_sees"]["names"] == [product]


def test_two_time_slicing_replicas_are_one_physical_gpu(recorded: tuple[dict[str, Any], str, str]) -> None:
    runs, UUID, product = recorded
    run = runs["time_slicing_2"]
    assert run["config"] == "timeSlicing replicas=2"
    assert [d["id"] for d in run["list_and_watch"]] == [f"{UUID}::0", f"{UUID}::1"]
    first, second = run["containers"]
    assert {first["preferred"][0], second["preferred"][0]} == {f"{UUID}::0", f"{UUID}::1"}
    # both containers are handed the same physical GPU: a replica is not a GPU (R6.2, R17.3)
    assert first["envs"] == second["envs"] == {"NVIDIA_VISIBLE_DEVICES": UUID}
    assert first["cuda_sees"] == second["cuda_sees"]
    assert first["cuda_sees"]["count"] == 1 and first["cuda_sees"]["names"] == [product]
