"""Health recovery wired to the plugin: ListAndWatch streams Unhealthy on an XID and Healthy after recovery.

``HealthMonitor`` runs ``devices.health.Recovery`` on an injected clock and probe; the plugin serves over
real gRPC on a unix socket. Pins: kubelet gets a new full device list (v1beta1 ListAndWatch) on both
changes; a failed probe or an XID while probing keeps the device Unhealthy; application XIDs change
nothing. ``nvml_probe`` is pinned against a fake NVML that answers as a GPU lost from the bus does.
"""

from __future__ import annotations

import queue
import shutil
import tempfile
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from tests.clock import ManualClock

from kubegpu.devices import HealthEvent, NodeInventory, PluginConfig, load_reading
from kubegpu.devices.health import DeviceKey
from kubegpu.node import health as node_health
from kubegpu.node.health import HealthMonitor, nvml_probe
from kubegpu.node.plugin import DevicePluginServer
from kubegpu.node.v1beta1 import api_pb2 as pb
from kubegpu.node.v1beta1 import api_pb2_grpc as pb_grpc

DGX1 = Path(__file__).parents[2] / "tests" / "fixtures" / "nodes" / "dgx1-8xv100.json"
TIMEOUT = 5.0


@pytest.fixture
def plugin() -> Iterator[DevicePluginServer]:
    socket_dir = Path(tempfile.mkdtemp(prefix="kghr", dir="/tmp"))
    server = DevicePluginServer(load_reading(DGX1), PluginConfig(), socket_dir=socket_dir, poll_seconds=0.05)
    server.start()  # no Register: this test plays the kubelet side of ListAndWatch only
    yield server
    server.stop()
    shutil.rmtree(socket_dir, ignore_errors=True)


def _watch(plugin: DevicePluginServer) -> tuple[queue.Queue[list[str]], grpc.Channel]:
    channel = grpc.insecure_channel(f"unix://{plugin.socket_path}")
    stream = pb_grpc.DevicePluginStub(channel).ListAndWatch(pb.Empty(), timeout=3 * TIMEOUT)
    lists: queue.Queue[list[str]] = queue.Queue()

    def read() -> None:
        try:
            for response in stream:
                lists.put([d.health for d in response.devices])
        except grpc.RpcError:
            pass  # channel closed at the end of the test

    threading.Thread(target=read, daemon=True).start()
    return lists, channel


def test_list_and_watch_streams_unhealthy_then_healthy_after_quiet_period_and_probe(
    plugin: DevicePluginServer,
) -> None:
    inv: NodeInventory = load_reading(DGX1)
    clock, probes = ManualClock(), []
    answers = iter([False, True])

    def probe(key: DeviceKey) -> bool:
        probes.append(key)
        return next(answers)

    monitor = HealthMonitor(inv, plugin.report, plugin.recover, quiet_seconds=60, probe=probe, clock=clock)
    lists, channel = _watch(plugin)
    try:
        assert lists.get(timeout=TIMEOUT) == ["Healthy"] * 8
        monitor.on_event(HealthEvent(uuid=inv.devices[4].uuid, xid=79))
        assert lists.get(timeout=TIMEOUT)[4] == "Unhealthy"
        monitor.on_event(HealthEvent(uuid=inv.devices[4].uuid, xid=13))  # application XID: nothing

        clock.now = 59.0
        assert monitor.tick() == [] and probes == []
        clock.now = 60.0
        assert monitor.tick() == []  # the probe fails: still Unhealthy, next try a period later
        clock.now = 119.0
        assert monitor.tick() == []
        clock.now = 120.0
        assert monitor.tick() == [(inv.devices[4].uuid, None)]
        assert lists.get(timeout=TIMEOUT) == ["Healthy"] * 8
        assert probes == [(inv.devices[4].uuid, None)] * 2
        assert lists.empty()
    finally:
        channel.close()


def test_an_xid_while_probing_keeps_the_device_unhealthy(plugin: DevicePluginServer) -> None:
    inv = load_reading(DGX1)
    clock = ManualClock()
    key = (inv.devices[0].uuid, None)
    monitor: HealthMonitor

    def probe(k: DeviceKey) -> bool:
        clock.now += 1
        monitor.on_event(HealthEvent(uuid=k[0], xid=48))  # the GPU faults again while being probed
        return True

    monitor = HealthMonitor(inv, plugin.report, plugin.recover, quiet_seconds=10, probe=probe, clock=clock)
    monitor.on_event(HealthEvent(uuid=key[0], xid=79))
    clock.now = 10.0
    assert monitor.tick() == []
    assert plugin.state.plan.devices[0].health == "Unhealthy"


class _FakeNvml(types.SimpleNamespace):
    class NVMLError(Exception):
        pass

    def __init__(self, lost: bool) -> None:
        super().__init__()
        self.lost = lost
        self.shutdowns = 0

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> str:
        if self.lost:
            raise self.NVMLError("GPU is lost")  # NVML_ERROR_GPU_IS_LOST after XID 79
        return uuid

    def nvmlDeviceGetPciInfo(self, h: str) -> object:
        return object()

    def nvmlDeviceGetMemoryInfo(self, h: str) -> object:
        return object()


@pytest.mark.parametrize("lost", [False, True])
def test_nvml_probe_fails_for_a_lost_gpu_and_always_shuts_nvml_down(
    monkeypatch: pytest.MonkeyPatch, lost: bool
) -> None:
    fake = _FakeNvml(lost)
    monkeypatch.setattr(node_health, "load_pynvml", lambda: fake)
    assert nvml_probe(("GPU-x", None)) is not lost
    assert fake.shutdowns == 1
