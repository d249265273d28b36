"""Device plugin latency over a real unix socket: Allocate round trips and ListAndWatch after health changes.

Serves the generated DGX-1 reading (8 GPUs, NVLink) with ``DevicePluginServer`` and acts as kubelet over
one gRPC channel, as kubelet keeps one per plugin:

* Allocate for 1 and for 4 GPUs, and GetPreferredAllocation of 4 out of 8 (goal: Allocate p99 <= 2 ms);
* ListAndWatch: the time from a health change (an XID through ``HealthMonitor.on_event``, and the
  recovery after a quiet period through ``HealthMonitor.tick``) to the new device list arriving at the
  client (goal <= 100 ms).

    .venv/bin/python benchmarks/bench_device_plugin.py [--iterations 2000] [--health-changes 200]
"""

from __future__ import annotations

import argparse
import logging
import queue
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import grpc

from kubegpu.devices import HealthEvent, PluginConfig, load_reading
from kubegpu.node.health import HealthMonitor
from kubegpu.node.plugin import DevicePluginServer
from kubegpu.node.v1beta1 import api_pb2 as pb
from kubegpu.node.v1beta1 import api_pb2_grpc as pb_grpc

DGX1 = Path(__file__).parents[1] / "tests" / "fixtures" / "nodes" / "dgx1-8xv100.json"


def percentiles(samples_ms: list[float]) -> tuple[float, float, float]:
    """p50, p99 and max of ``samples_ms``."""
    cuts = statistics.quantiles(samples_ms, n=100, method="inclusive")
    return cuts[49], cuts[98], max(samples_ms)


def time_calls(call: Callable[[], object], iterations: int, warmup: int = 50) -> list[float]:
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(iterations):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--health-changes", type=int, default=200)
    args = parser.parse_args()
    # The plugin logs every health change at WARNING; hundreds of them would bury the table.
    logging.disable(logging.WARNING)

    inv = load_reading(DGX1)
    uuids = [g.uuid for g in inv.devices]
    socket_dir = Path(tempfile.mkdtemp(prefix="kgbench", dir="/tmp"))
    # poll_seconds only bounds how soon a stream notices a hung-up client; changes wake it at once.
    plugin = DevicePluginServer(inv, PluginConfig(), socket_dir=socket_dir, poll_seconds=1.0)
    plugin.start()
    channel = grpc.insecure_channel(f"unix://{plugin.socket_path}")
    stub = pb_grpc.DevicePluginStub(channel)
    rows: list[tuple[str, list[float]]] = []
    try:

        def allocate(n: int) -> Callable[[], object]:
            request = pb.AllocateRequest(
                container_requests=[pb.ContainerAllocateRequest(devices_ids=uuids[:n])]
            )
            return lambda: stub.Allocate(request, timeout=5)

        preferred = pb.PreferredAllocationRequest(
            container_requests=[
                pb.ContainerPreferredAllocationRequest(available_deviceIDs=uuids, allocation_size=4)
            ]
        )
        rows.append(("Allocate, 1 GPU", time_calls(allocate(1), args.iterations)))
        rows.append(("Allocate, 4 GPUs", time_calls(allocate(4), args.iterations)))
        rows.append(
            (
                "GetPreferredAllocation, 4 of 8",
                time_calls(lambda: stub.GetPreferredAllocation(preferred, timeout=5), args.iterations),
            )
        )
        rows.extend(list_and_watch_latency(plugin, stub, inv.devices[3].uuid, args.health_changes))
    finally:
        channel.close()
        plugin.stop()
        shutil.rmtree(socket_dir, ignore_errors=True)

    print(f"device plugin over a unix socket, DGX-1 reading (8 GPUs), {args.iterations} calls per RPC")
    print(f"{'what':<44} {'n':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for name, samples in rows:
        p50, p99, worst = percentiles(samples)
        print(f"{name:<44} {len(samples):>6} {p50:>8.3f} {p99:>8.3f} {worst:>8.3f}")


def list_and_watch_latency(
    plugin: DevicePluginServer, stub: pb_grpc.DevicePluginStub, uuid: str, changes: int
) -> list[tuple[str, list[float]]]:
    """Time from each health change to the new list at the client, for XID (Unhealthy) and recovery."""
    arrivals: queue.Queue[float] = queue.Queue()
    stream = stub.ListAndWatch(pb.Empty())

    def read() -> None:
        try:
            for _ in stream:
                arrivals.put(time.perf_counter())
        except grpc.RpcError:
            pass  # cancelled below

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    arrivals.get(timeout=5)  # the initial full list
    now = [0.0]
    monitor = HealthMonitor(
        load_reading(DGX1),
        plugin.report,
        plugin.recover,
        quiet_seconds=1.0,
        probe=lambda k: True,
        clock=lambda: now[0],
    )
    to_unhealthy, to_healthy = [], []
    for _ in range(changes):
        start = time.perf_counter()
        monitor.on_event(HealthEvent(uuid=uuid, xid=79))
        to_unhealthy.append((arrivals.get(timeout=5) - start) * 1000)
        now[0] += 1.0  # virtual time: the quiet period has passed
        start = time.perf_counter()
        assert monitor.tick()
        to_healthy.append((arrivals.get(timeout=5) - start) * 1000)
    stream.cancel()
    reader.join(5)
    return [
        ("ListAndWatch after XID 79 (-> Unhealthy)", to_unhealthy),
        ("ListAndWatch after recovery (-> Healthy)", to_healthy),
    ]


if __name__ == "__main__":
    main()
