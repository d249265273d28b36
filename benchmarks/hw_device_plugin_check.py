"""Hardware check (not a CI test): kubegpu's device plugin on a real GPU node, end to end.

Reads the GPUs through the NVML backend, serves the device plugin on a unix socket, registers with a
stand-in kubelet Registration server (real gRPC on unix sockets: there is no kubelet on the lent
machine), then acts as kubelet: ListAndWatch, GetPreferredAllocation, Allocate for 1 GPU — and, for
time-slicing with 2 replicas, for 1 replica twice. For every Allocate it starts a CUDA process with the
visibility the response implies (``CUDA_VISIBLE_DEVICES`` set to the UUIDs the container would see; the
container runtime hook that reads ``NVIDIA_VISIBLE_DEVICES`` does the same outside this check) and
records what the process sees: device count, UUID, logical index 0 → host GPU. Prints one JSON document.

    python benchmarks/hw_device_plugin_check.py > result.json
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import sys
import tempfile
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

from kubegpu.devices import PluginConfig, allocate_response, parse_plugin_config
from kubegpu.node.discovery import NvmlBackend
from kubegpu.node.plugin import DevicePluginServer
from kubegpu.node.v1beta1 import api_pb2 as pb
from kubegpu.node.v1beta1 import api_pb2_grpc as pb_grpc

PROBE = (
    "import json, torch; n = torch.cuda.device_count(); "
    "print(json.dumps({'count': n, 'uuids': [str(torch.cuda.get_device_properties(i).uuid) for i in range(n)], "
    "'names': [torch.cuda.get_device_name(i) for i in range(n)]}))"
)


class Kubelet(pb_grpc.RegistrationServicer):  # type: ignore[misc]
    def __init__(self) -> None:
        self.requests: queue.Queue[pb.RegisterRequest] = queue.Queue()

    def Register(self, request: pb.RegisterRequest, context: grpc.ServicerContext) -> pb.Empty:
        self.requests.put(request)
        return pb.Empty()


def what_cuda_sees(uuids: list[str]) -> dict[str, Any]:
    env = {"CUDA_VISIBLE_DEVICES": ",".join(uuids), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    return json.loads(out.stdout) if out.returncode == 0 else {"error": out.stderr[-400:]}


def run(config: PluginConfig, label: str, socket_dir: Path, requests: list[int]) -> dict[str, Any]:
    inventory = NvmlBackend().inventory()
    kubelet = Kubelet()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_RegistrationServicer_to_server(kubelet, server)
    server.add_insecure_port(f"unix://{socket_dir / 'kubelet.sock'}")
    server.start()
    plugin = DevicePluginServer(inventory, config, socket_dir=socket_dir)
    plugin.start()
    plugin.register()
    registered = kubelet.requests.get(timeout=5)
    result: dict[str, Any] = {"config": label, "registered": {"resource": registered.resource_name,
                              "endpoint": registered.endpoint, "version": registered.version}}  # fmt: skip
    with grpc.insecure_channel(f"unix://{plugin.socket_path}") as channel:
        stub = pb_grpc.DevicePluginStub(channel)
        first = next(iter(stub.ListAndWatch(pb.Empty(), timeout=5)))
        ids = [d.ID for d in first.devices]
        result["list_and_watch"] = [{"id": d.ID, "health": d.health} for d in first.devices]
        taken: list[str] = []
        result["containers"] = []
        for size in requests:
            free = [i for i in ids if i not in taken]
            pref = stub.GetPreferredAllocation(pb.PreferredAllocationRequest(container_requests=[
                pb.ContainerPreferredAllocationRequest(available_deviceIDs=free, allocation_size=size)]), timeout=5)  # fmt: skip
            chosen = list(pref.container_responses[0].deviceIDs)
            taken += chosen
            alloc = stub.Allocate(
                pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=chosen)]),
                timeout=5,
            )
            envs = dict(alloc.container_responses[0].envs)
            view = allocate_response(plugin.state.plan, config, chosen)
            visible = [v.uuid for v in view.visible]
            result["containers"].append({"requested": size, "preferred": chosen, "envs": envs,
                                         "container_view": [{"cuda_index": v.cuda_index, "host_index": v.host_index,
                                                             "uuid": v.uuid} for v in view.visible],
                                         "cuda_sees": what_cuda_sees(visible)})  # fmt: skip
    plugin.stop()
    server.stop(grace=None).wait()
    return result


def main() -> None:
    socket_dir = Path(tempfile.mkdtemp(prefix="kgdp", dir="/tmp"))
    time_slicing = parse_plugin_config(
        "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n"
    )
    try:
        report = {
            "exclusive": run(PluginConfig(), "exclusive", socket_dir, [1]),
            "time_slicing_2": run(time_slicing, "timeSlicing replicas=2", socket_dir, [1, 1]),
        }
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
