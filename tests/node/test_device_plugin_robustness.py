"""The device plugin under the conditions a real node produces, over real gRPC on unix sockets.

* Many ListAndWatch streams: gRPC's synchronous server holds one pool thread per open stream; with 16
  threads and 16 streams every Allocate used to fail with DEADLINE_EXCEEDED (pod admission stops). Now
  at most ``MAX_STREAMS`` streams are open (a new one ends the oldest, as kubelet's newest stream is the
  live one), so Allocate always has a thread and every new stream gets its device list at once.
* kubelet restart deletes every socket in the device plugin directory (kubelet's device manager removes
  the files it finds there when it starts: pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go,
  ``cleanupPluginDirectory``) and recreates kubelet.sock: the plugin serves on a new socket and registers
  again, as the NVIDIA plugin does on the fsnotify Create of kubelet.sock (cmd/nvidia-device-plugin/main.go).
* Registration that fails (kubelet not up yet, or refusing) is retried with a doubling delay, as the
  NVIDIA plugin retries a failed start ("Failed to start one or more plugins. Retrying in 30s...").
"""

from __future__ import annotations

import contextlib
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from kubegpu.devices import NodeInventory, load_reading, parse_plugin_config
from kubegpu.node.plugin import (
    MAX_STREAMS,
    RETRY_MAX_S,
    WORKERS,
    DevicePluginServer,
    register_with_retry,
    serve_until,
)
from kubegpu.node.v1beta1 import api_pb2 as pb
from kubegpu.node.v1beta1 import api_pb2_grpc as pb_grpc

REPO = Path(__file__).parents[2]
DGX1 = REPO / "tests" / "fixtures" / "nodes" / "dgx1-8xv100.json"
TIMEOUT = 5.0


class Kubelet(pb_grpc.RegistrationServicer):  # type: ignore[misc]
    """kubelet's Registration service; refuses the first ``refuse`` calls with UNAVAILABLE, records times."""

    def __init__(self, socket_dir: Path, refuse: int = 0) -> None:
        self.socket_dir = socket_dir
        self.refuse = refuse
        self.calls: list[float] = []
        self.requests: queue.Queue[pb.RegisterRequest] = queue.Queue()
        self.server: grpc.Server | None = None

    def Register(self, request: pb.RegisterRequest, context: grpc.ServicerContext) -> pb.Empty:
        self.calls.append(time.monotonic())
        if len(self.calls) <= self.refuse:
            context.abort(grpc.StatusCode.UNAVAILABLE, "kubelet is starting")
        self.requests.put(request)
        return pb.Empty()

    def start(self) -> Kubelet:
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        pb_grpc.add_RegistrationServicer_to_server(self, self.server)
        self.server.add_insecure_port(f"unix://{self.socket_dir / 'kubelet.sock'}")
        self.server.start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop(grace=None).wait()
        (self.socket_dir / "kubelet.sock").unlink(missing_ok=True)


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="kgdr", dir="/tmp"))  # unix socket paths: at most 107 bytes
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def dgx1() -> NodeInventory:
    return load_reading(DGX1)


def _plugin(inv: NodeInventory, socket_dir: Path) -> DevicePluginServer:
    plugin = DevicePluginServer(inv, parse_plugin_config(""), socket_dir=socket_dir, poll_seconds=0.05)
    plugin.start()
    return plugin


def test_open_streams_never_starve_allocate(dgx1: NodeInventory, socket_dir: Path) -> None:
    """WORKERS + 4 streams opened and kept (more than the pool has threads): the stream count stays at
    MAX_STREAMS, the newest stream gets its 8 devices at once, and Allocate answers within its deadline."""
    plugin = _plugin(dgx1, socket_dir)
    channel = grpc.insecure_channel(f"unix://{plugin.socket_path}")
    streams = []
    try:
        stub = pb_grpc.DevicePluginStub(channel)
        for _ in range(WORKERS + 4):
            stream = stub.ListAndWatch(pb.Empty(), timeout=30)
            streams.append(stream)
            assert len(next(stream).devices) == 8  # every new stream is answered, the last one too
        assert plugin.servicer is not None
        deadline = time.monotonic() + TIMEOUT
        while plugin.servicer.open_streams > MAX_STREAMS and time.monotonic() < deadline:
            time.sleep(0.02)
        assert plugin.servicer.open_streams <= MAX_STREAMS
        uuids = [g.uuid for g in dgx1.devices]
        alloc = stub.Allocate(
            pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=uuids[:1])]),
            timeout=2.0,
        )
        assert dict(alloc.container_responses[0].envs) == {"NVIDIA_VISIBLE_DEVICES": uuids[0]}
        # the oldest streams were ended by the server (status OK), not left hanging
        with pytest.raises(StopIteration):
            next(streams[0])
    finally:
        for s in streams:
            s.cancel()
        channel.close()
        plugin.stop()


def test_a_deleted_plugin_socket_is_recreated_and_registered_again(
    dgx1: NodeInventory, socket_dir: Path
) -> None:
    kubelet = Kubelet(socket_dir).start()
    plugin = _plugin(dgx1, socket_dir)
    done = threading.Event()
    loop = threading.Thread(target=serve_until, args=([plugin], socket_dir, done, 0.05))
    try:
        plugin.register(timeout=TIMEOUT)
        assert kubelet.requests.get(timeout=TIMEOUT).endpoint == "nvidia-gpu.sock"
        loop.start()
        plugin.socket_path.unlink()  # what kubelet's start-up cleanup does to every plugin socket
        again = kubelet.requests.get(timeout=TIMEOUT)
        assert (again.endpoint, again.resource_name) == ("nvidia-gpu.sock", "nvidia.com/gpu")
        assert plugin.socket_path.is_socket()
        with grpc.insecure_channel(f"unix://{plugin.socket_path}") as channel:
            stream = pb_grpc.DevicePluginStub(channel).ListAndWatch(pb.Empty(), timeout=TIMEOUT)
            assert len(next(stream).devices) == 8  # the new socket serves
            stream.cancel()
    finally:
        done.set()
        if loop.is_alive():
            loop.join(TIMEOUT)
        plugin.stop()
        kubelet.stop()


def test_registration_is_retried_with_a_doubling_delay_until_kubelet_accepts(
    dgx1: NodeInventory, socket_dir: Path
) -> None:
    """kubelet refuses twice: three calls, the gaps about 0.2 s then 0.4 s (first delay 0.2, doubled)."""
    kubelet = Kubelet(socket_dir, refuse=2).start()
    plugin = _plugin(dgx1, socket_dir)
    try:
        assert register_with_retry([plugin], threading.Event(), first_s=0.2, max_s=5.0)
        assert kubelet.requests.get(timeout=TIMEOUT).resource_name == "nvidia.com/gpu"
        gaps = [b - a for a, b in zip(kubelet.calls, kubelet.calls[1:], strict=False)]
        assert len(kubelet.calls) == 3
        assert 0.15 < gaps[0] < 0.4 and 0.35 < gaps[1] < 0.8, gaps
    finally:
        plugin.stop()
        kubelet.stop()


def test_a_plugin_started_before_kubelet_registers_once_kubelet_is_up(
    dgx1: NodeInventory, socket_dir: Path
) -> None:
    with _retrying(_plugin(dgx1, socket_dir), first_s=0.05) as (result, retry, kubelets):
        time.sleep(0.3)  # a few refused attempts: no kubelet.sock yet
        assert retry.is_alive()
        kubelet = Kubelet(socket_dir).start()
        kubelets.append(kubelet)
        assert kubelet.requests.get(timeout=TIMEOUT).resource_name == "nvidia.com/gpu"
        retry.join(TIMEOUT)
        assert result == [True]


def test_retrying_stops_when_the_agent_is_told_to_stop(dgx1: NodeInventory, socket_dir: Path) -> None:
    plugin = _plugin(dgx1, socket_dir)
    done = threading.Event()
    try:
        threading.Timer(0.2, done.set).start()
        start = time.monotonic()
        assert register_with_retry([plugin], done, first_s=0.05, max_s=0.1) is False
        assert time.monotonic() - start < 3.0
    finally:
        plugin.stop()


class DialingKubelet(Kubelet):
    """kubelet's device manager on the two points a first registration depends on
    (kubernetes pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go and client.go): ``start`` deletes
    every socket in the plugin directory before serving kubelet.sock (``Start`` →
    ``CleanupPluginDirectory``), and ``Register`` dials ``<dir>/<endpoint>`` and calls
    GetDevicePluginOptions, answering the dial's failure as the Register error (``connectClient``)."""

    def Register(self, request: pb.RegisterRequest, context: grpc.ServicerContext) -> pb.Empty:
        self.calls.append(time.monotonic())
        try:
            with grpc.insecure_channel(f"unix://{self.socket_dir / request.endpoint}") as channel:
                grpc.channel_ready_future(channel).result(timeout=0.5)
                pb_grpc.DevicePluginStub(channel).GetDevicePluginOptions(pb.Empty(), timeout=1.0)
        except (grpc.FutureTimeoutError, grpc.RpcError):
            context.abort(grpc.StatusCode.UNKNOWN, "failed to dial device plugin")
        self.requests.put(request)
        return pb.Empty()

    def start(self) -> Kubelet:
        for path in self.socket_dir.iterdir():
            if path.is_socket():
                path.unlink()
        return super().start()


@contextlib.contextmanager
def _retrying(
    plugin: DevicePluginServer, first_s: float, max_s: float = RETRY_MAX_S
) -> Iterator[tuple[list[bool], threading.Thread, list[Kubelet]]]:
    """``register_with_retry`` of ``plugin`` (backing off from ``first_s`` to ``max_s``) in a thread; yields its
    result, the thread and a list of the kubelets the test starts; stops the retry, the plugin and them."""
    done = threading.Event()
    result: list[bool] = []
    kubelets: list[Kubelet] = []
    retry = threading.Thread(
        target=lambda: result.append(register_with_retry([plugin], done, first_s=first_s, max_s=max_s))
    )
    retry.start()
    try:
        yield result, retry, kubelets
    finally:
        done.set()
        retry.join(TIMEOUT)
        plugin.stop()
        for kubelet in kubelets:
            kubelet.stop()


def test_kubelet_starting_during_the_first_registration_gets_the_plugin_registered(
    dgx1: NodeInventory, socket_dir: Path
) -> None:
    """kubelet absent when the agent starts, then it starts (deleting the plugin's socket) and dials the
    endpoint on Register: a retry must serve a fresh socket, or every later Register fails to dial
    (QA t10b case A: the agent retried forever on a deleted socket). NVIDIA k8s-device-plugin v0.20.0
    cmd/nvidia-device-plugin/main.go restarts its plugin servers after a failed start."""
    plugin = _plugin(dgx1, socket_dir)
    with _retrying(plugin, first_s=0.05, max_s=0.2) as (result, retry, kubelets):
        time.sleep(0.3)
        kubelet = DialingKubelet(socket_dir).start()
        kubelets.append(kubelet)
        assert not plugin.socket_path.exists() or retry.is_alive()
        assert kubelet.requests.get(timeout=TIMEOUT).endpoint == "nvidia-gpu.sock"
        retry.join(TIMEOUT)
        assert result == [True]
        assert plugin.socket_path.is_socket()


def test_kubelet_restarting_after_a_refused_first_registration_gets_the_plugin_registered(
    dgx1: NodeInventory, socket_dir: Path
) -> None:
    """kubelet refuses the first Register, then restarts (deleting every socket) while the agent waits to
    retry (QA t10b case B'): the retry serves a fresh socket, which the new kubelet dials."""
    first = Kubelet(socket_dir, refuse=1_000).start()
    with _retrying(_plugin(dgx1, socket_dir), first_s=0.3, max_s=0.3) as (result, retry, kubelets):
        time.sleep(0.1)
        assert first.calls  # refused once
        first.stop()
        kubelet = DialingKubelet(socket_dir).start()
        kubelets.append(kubelet)
        assert kubelet.requests.get(timeout=TIMEOUT).endpoint == "nvidia-gpu.sock"
        retry.join(TIMEOUT)
        assert result == [True]
