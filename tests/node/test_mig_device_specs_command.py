"""``kubegpu node device-plugin`` on a recorded MIG node with ``passDeviceSpecs``, as a real process.

The reading carries the driver's ``/proc/driver/nvidia-caps/mig-minors`` lines (``mig_minors``), so the
plugin's Allocate answers, over its unix socket, with what NVIDIA's plugin passes for a MIG device: the
parent GPU's ``/dev/nvidia<minor>`` and the GPU- and compute-instance access nodes
``/dev/nvidia-caps/nvidia-cap<N>`` (k8s-device-plugin ``internal/rm/nvml_devices.go`` ``GetPaths``,
``internal/plugin/server.go`` ``apiDeviceSpecs``). A reading whose mig-minors lack a MIG device's
capability stops the command with the upstream error, not a traceback.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from tests.node.kubelet_registration import TIMEOUT, TestKubelet, start_device_plugin

from kubegpu.devices import load_reading
from kubegpu.devices.inventory import inventory_to_reading
from kubegpu.node.v1beta1 import api_pb2 as pb
from kubegpu.node.v1beta1 import api_pb2_grpc as pb_grpc

REPO = Path(__file__).parents[2]
H200 = REPO / ".." / "shared" / "fixtures" / "nodes" / "h200-1gpu" / "nvml.json"
# The real H200 reading with MIG turned on (made up here: two 3g.71gb devices, GI 1 and 2, CI 0) and the
# mig-minors lines for those instances, numbered as the driver numbers them (GI I of GPU 0: 3 + 9 * I).
MIG_MINORS = ["config 1", "monitor 2", "gpu0/gi1/access 12", "gpu0/gi1/ci0/access 13",
              "gpu0/gi2/access 21", "gpu0/gi2/ci0/access 22"]  # fmt: skip
CONFIG = "version: v1\nflags:\n  migStrategy: mixed\n  plugin:\n    passDeviceSpecs: true\n"


@pytest.fixture
def plugin_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="kgmig", dir="/tmp"))  # unix socket paths: at most 107 bytes
    yield path
    shutil.rmtree(path, ignore_errors=True)


def write_reading(directory: Path, mig_minors: list[str]) -> Path:
    reading = inventory_to_reading(load_reading(H200))
    (gpu,) = reading["devices"]  # type: ignore[misc]
    gpu["mig_mode"] = [1, 1]
    gpu["mig_devices"] = [
        {"index": i, "uuid": f"MIG-{i:08x}-0000-4000-8000-000000000000", "profile": "3g.71gb", "gi_id": i + 1,
         "ci_id": 0, "memory_total": 71 * 1024**3, "health": "Healthy"}
        for i in range(2)
    ]  # fmt: skip
    reading["mig_minors"] = mig_minors
    path = directory / "mig-node.json"
    path.write_text(json.dumps(reading))
    (directory / "config.yaml").write_text(CONFIG)
    return path


def test_allocate_of_a_mig_device_passes_its_caps_nodes(plugin_dir: Path) -> None:
    reading = write_reading(plugin_dir, MIG_MINORS)
    kubelet = TestKubelet(plugin_dir)
    kubelet.start()
    proc = start_device_plugin(
        plugin_dir, "--nvml-reading", str(reading), "--config", str(plugin_dir / "config.yaml")
    )
    try:
        reg = kubelet.requests.get(timeout=TIMEOUT)
        assert reg.resource_name == "nvidia.com/mig-3g.71gb"
        with grpc.insecure_channel(f"unix://{plugin_dir / reg.endpoint}") as channel:
            stub = pb_grpc.DevicePluginStub(channel)
            alloc = stub.Allocate(
                pb.AllocateRequest(
                    container_requests=[
                        pb.ContainerAllocateRequest(devices_ids=["MIG-00000001-0000-4000-8000-000000000000"])
                    ]
                ),
                timeout=TIMEOUT,
            )
        (container,) = alloc.container_responses
        control = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")
        expected = [p for p in control if Path(p).exists()]  # only where they exist on this host
        expected += ["/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap22"]
        assert [(d.container_path, d.host_path, d.permissions) for d in container.devices] == [
            (p, p, "rw") for p in expected
        ]
    finally:
        proc.kill()
        proc.wait()
        kubelet.stop()


def test_missing_capability_stops_the_command_with_one_line(plugin_dir: Path) -> None:
    reading = write_reading(plugin_dir, MIG_MINORS[:4])  # GI 2's lines missing
    proc = start_device_plugin(
        plugin_dir, "--nvml-reading", str(reading), "--config", str(plugin_dir / "config.yaml")
    )
    try:
        out, _ = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    assert proc.returncode == 1
    assert out == (
        "Error: error getting device paths of MIG device MIG-00000001-0000-4000-8000-000000000000: "
        "missing MIG GPU instance capability path: /proc/driver/nvidia/capabilities/gpu0/mig/gi2/access\n"
    )
