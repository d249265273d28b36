"""The device plugin over real gRPC: a fake kubelet Registration server and the plugin, each on a unix socket.

Pins kubelet Device Plugin API v1beta1 behaviour (Register, then GetDevicePluginOptions, ListAndWatch,
GetPreferredAllocation, Allocate, PreStartContainer) and the NVIDIA device plugin's answers: env
NVIDIA_VISIBLE_DEVICES with UUIDs, CDI names nvidia.com/gpu=<uuid>, replica ids <uuid>::<n>, renamed
nvidia.com/gpu.shared, and its failRequestsGreaterThanOne / unknown-device error texts.
"""

from __future__ import annotations

import dataclasses
import queue
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from kubegpu.devices import (
    HealthEvent,
    MigDevice,
    MigStrategy,
    NodeInventory,
    PluginConfig,
    load_reading,
    parse_plugin_config,
)
from kubegpu.node.plugin import (
    DevicePluginServer,
    PluginState,
    container_response,
    preferred_for,
    serve_until,
)
from kubegpu.node.v1beta1 import api_pb2 as pb
from kubegpu.node.v1beta1 import api_pb2_grpc as pb_grpc

REPO = Path(__file__).parents[2]
DGX1 = REPO / "tests" / "fixtures" / "nodes" / "dgx1-8xv100.json"
H200 = REPO / ".." / "shared" / "fixtures" / "nodes" / "h200-1gpu" / "nvml.json"
TIMEOUT = 5.0


class FakeKubelet(pb_grpc.RegistrationServicer):  # type: ignore[misc]
    """kubelet's Registration service: records every RegisterRequest it gets."""

    def __init__(self) -> None:
        self.requests: queue.Queue[pb.RegisterRequest] = queue.Queue()

    def Register(self, request: pb.RegisterRequest, context: grpc.ServicerContext) -> pb.Empty:
        self.requests.put(request)
        return pb.Empty()


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    # Unix socket paths are limited to 107 bytes; pytest's tmp_path can be longer than that.
    path = Path(tempfile.mkdtemp(prefix="kgdp", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def kubelet(socket_dir: Path) -> Iterator[FakeKubelet]:
    fake = FakeKubelet()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_RegistrationServicer_to_server(fake, server)
    server.add_insecure_port(f"unix://{socket_dir / 'kubelet.sock'}")
    server.start()
    yield fake
    server.stop(grace=None).wait()


@pytest.fixture
def dgx1() -> NodeInventory:
    return load_reading(DGX1)


def _serve(inv: NodeInventory, socket_dir: Path, config_text: str = "") -> DevicePluginServer:
    plugin = DevicePluginServer(
        inv, parse_plugin_config(config_text), socket_dir=socket_dir, poll_seconds=0.05
    )
    plugin.start()
    plugin.register(timeout=TIMEOUT)
    return plugin


@pytest.fixture
def stub_for() -> Iterator[object]:
    channels: list[grpc.Channel] = []

    def make(plugin: DevicePluginServer) -> pb_grpc.DevicePluginStub:
        channel = grpc.insecure_channel(f"unix://{plugin.socket_path}")
        channels.append(channel)
        return pb_grpc.DevicePluginStub(channel)

    yield make
    for c in channels:
        c.close()


def test_register_then_list_then_allocate_whole_gpus(
    dgx1: NodeInventory, socket_dir: Path, kubelet: FakeKubelet, stub_for: object
) -> None:
    plugin = _serve(dgx1, socket_dir)
    try:
        reg = kubelet.requests.get(timeout=TIMEOUT)
        assert (reg.version, reg.endpoint, reg.resource_name) == (
            "v1beta1",
            "nvidia-gpu.sock",
            "nvidia.com/gpu",
        )
        assert reg.options.get_preferred_allocation_available and not reg.options.pre_start_required
        assert (socket_dir / "nvidia-gpu.sock").is_socket()

        stub = stub_for(plugin)  # type: ignore[operator]
        options = stub.GetDevicePluginOptions(pb.Empty(), timeout=TIMEOUT)
        assert options.get_preferred_allocation_available

        stream = stub.ListAndWatch(pb.Empty(), timeout=TIMEOUT)
        first = next(stream)
        uuids = [g.uuid for g in dgx1.devices]
        assert [d.ID for d in first.devices] == uuids
        assert {d.health for d in first.devices} == {"Healthy"}
        assert [[n.ID for n in d.topology.nodes] for d in first.devices] == [[0]] * 4 + [[1]] * 4
        stream.cancel()

        # DGX-1, 4 of 8 free GPUs wanted: socket 0's quad scores 1080 by hand (see tests/devices).
        pref = stub.GetPreferredAllocation(
            pb.PreferredAllocationRequest(
                container_requests=[
                    pb.ContainerPreferredAllocationRequest(available_deviceIDs=uuids, allocation_size=4)
                ]
            ),
            timeout=TIMEOUT,
        )
        assert list(pref.container_responses[0].deviceIDs) == uuids[:4]

        alloc = stub.Allocate(
            pb.AllocateRequest(
                container_requests=[pb.ContainerAllocateRequest(devices_ids=[uuids[2], uuids[3]])]
            ),
            timeout=TIMEOUT,
        )
        (container,) = alloc.container_responses
        assert dict(container.envs) == {"NVIDIA_VISIBLE_DEVICES": f"{uuids[2]},{uuids[3]}"}
        assert list(container.cdi_devices) == []

        assert stub.PreStartContainer(
            pb.PreStartContainerRequest(devices_ids=[uuids[0]]), timeout=TIMEOUT
        ) == (pb.PreStartContainerResponse())
    finally:
        plugin.stop()
    assert not (socket_dir / "nvidia-gpu.sock").exists()


def test_list_and_watch_sends_a_new_list_on_every_health_change_only(
    dgx1: NodeInventory, socket_dir: Path, kubelet: FakeKubelet, stub_for: object
) -> None:
    plugin = _serve(dgx1, socket_dir)
    try:
        stub = stub_for(plugin)  # type: ignore[operator]
        stream = stub.ListAndWatch(pb.Empty(), timeout=TIMEOUT)
        received: queue.Queue[pb.ListAndWatchResponse] = queue.Queue()

        def read() -> None:
            try:
                for response in stream:
                    received.put(response)
            except grpc.RpcError:
                pass  # cancelled at the end of the test

        reader = threading.Thread(target=read)
        reader.start()
        unhealthy = lambda r: [i for i, d in enumerate(r.devices) if d.health == "Unhealthy"]  # noqa: E731
        assert unhealthy(received.get(timeout=TIMEOUT)) == []

        assert plugin.report(HealthEvent(uuid=dgx1.devices[3].uuid, xid=79))  # fallen off the bus
        assert unhealthy(received.get(timeout=TIMEOUT)) == [3]

        # XID 13 is an application error: upstream keeps the GPU healthy and sends nothing.
        assert not plugin.report(HealthEvent(uuid=dgx1.devices[5].uuid, xid=13))
        assert plugin.report(HealthEvent(uuid=dgx1.devices[5].uuid, xid=48))
        assert unhealthy(received.get(timeout=TIMEOUT)) == [3, 5]
        assert received.empty()
        stream.cancel()
        reader.join(TIMEOUT)
    finally:
        plugin.stop()


def test_unknown_device_is_refused_with_the_nvidia_plugin_text(
    dgx1: NodeInventory, socket_dir: Path, kubelet: FakeKubelet, stub_for: object
) -> None:
    plugin = _serve(dgx1, socket_dir)
    try:
        stub = stub_for(plugin)  # type: ignore[operator]
        with pytest.raises(grpc.RpcError) as err:
            stub.Allocate(
                pb.AllocateRequest(
                    container_requests=[pb.ContainerAllocateRequest(devices_ids=["GPU-nope"])]
                ),
                timeout=TIMEOUT,
            )
        assert err.value.code() == grpc.StatusCode.UNKNOWN
        # NVIDIA k8s-device-plugin v0.20.0 internal/plugin/server.go Allocate wraps
        # internal/rm/rm.go ValidateRequest's error (QA ran it: out/upstream_go_results.txt)
        assert err.value.details() == (
            'invalid allocation request for "nvidia.com/gpu": invalid request: unknown device: GPU-nope'
        )
    finally:
        plugin.stop()


TIME_SLICED = """
version: v1
flags:
  plugin:
    deviceListStrategy: [envvar, cdi-cri]
sharing:
  timeSlicing:
    renameByDefault: true
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
"""


def test_time_sliced_h200_registers_gpu_shared_and_refuses_two_replicas(
    socket_dir: Path, kubelet: FakeKubelet, stub_for: object
) -> None:
    h200 = load_reading(H200)
    uuid = h200.devices[0].uuid
    plugin = _serve(h200, socket_dir, TIME_SLICED)
    try:
        reg = kubelet.requests.get(timeout=TIMEOUT)
        assert (reg.resource_name, reg.endpoint) == ("nvidia.com/gpu.shared", "nvidia-gpu.shared.sock")
        stub = stub_for(plugin)  # type: ignore[operator]
        stream = stub.ListAndWatch(pb.Empty(), timeout=TIMEOUT)
        assert [d.ID for d in next(stream).devices] == [f"{uuid}::{n}" for n in range(4)]
        stream.cancel()

        alloc = stub.Allocate(
            pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=[f"{uuid}::2"])]),
            timeout=TIMEOUT,
        )
        (container,) = alloc.container_responses
        assert dict(container.envs) == {"NVIDIA_VISIBLE_DEVICES": uuid}
        assert [c.name for c in container.cdi_devices] == [f"nvidia.com/gpu={uuid}"]

        with pytest.raises(grpc.RpcError) as err:
            stub.Allocate(
                pb.AllocateRequest(
                    container_requests=[pb.ContainerAllocateRequest(devices_ids=[f"{uuid}::0", f"{uuid}::1"])]
                ),
                timeout=TIMEOUT,
            )
        # The text kubelet puts into the pod's UnexpectedAdmissionError event: the v0.20.0 plugin's
        # (internal/plugin/server.go Allocate around internal/rm/rm.go ValidateRequest).
        assert err.value.details() == (
            'invalid allocation request for "nvidia.com/gpu.shared": invalid request: maximum request size for '
            "shared resources is 1; found 2"
        )
    finally:
        plugin.stop()


def test_preferred_allocation_of_replicas_spreads_over_gpus(
    dgx1: NodeInventory, socket_dir: Path, kubelet: FakeKubelet, stub_for: object
) -> None:
    config = "sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2}]}}"
    plugin = _serve(dgx1, socket_dir, config)
    try:
        stub = stub_for(plugin)  # type: ignore[operator]
        u = [g.uuid for g in dgx1.devices]
        # GPU0 has one replica in use (u0::0 missing); GPU1 has both free: the first pick goes to GPU1.
        available = [f"{u[0]}::1", f"{u[1]}::0", f"{u[1]}::1"]
        pref = stub.GetPreferredAllocation(
            pb.PreferredAllocationRequest(
                container_requests=[
                    pb.ContainerPreferredAllocationRequest(available_deviceIDs=available, allocation_size=1)
                ]
            ),
            timeout=TIMEOUT,
        )
        assert list(pref.container_responses[0].deviceIDs) == [f"{u[1]}::0"]
    finally:
        plugin.stop()


def test_registration_refused_by_kubelet_is_an_rpc_error(dgx1: NodeInventory, socket_dir: Path) -> None:
    class Refusing(pb_grpc.RegistrationServicer):  # type: ignore[misc]
        def Register(self, request: pb.RegisterRequest, context: grpc.ServicerContext) -> pb.Empty:
            context.abort(grpc.StatusCode.UNKNOWN, "resource name nvidia.com/gpu is already registered")

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    pb_grpc.add_RegistrationServicer_to_server(Refusing(), server)
    server.add_insecure_port(f"unix://{socket_dir / 'kubelet.sock'}")
    server.start()
    plugin = DevicePluginServer(dgx1, parse_plugin_config(""), socket_dir=socket_dir)
    plugin.start()
    try:
        with pytest.raises(grpc.RpcError) as err:
            plugin.register(timeout=TIMEOUT)
        assert "already registered" in (err.value.details() or "")
    finally:
        plugin.stop()
        server.stop(grace=None).wait()


def test_unknown_device_in_a_preference_request_is_an_error_not_a_guess(
    dgx1: NodeInventory, socket_dir: Path, kubelet: FakeKubelet, stub_for: object
) -> None:
    plugin = _serve(dgx1, socket_dir)
    try:
        stub = stub_for(plugin)  # type: ignore[operator]
        with pytest.raises(grpc.RpcError) as err:
            stub.GetPreferredAllocation(
                pb.PreferredAllocationRequest(
                    container_requests=[
                        pb.ContainerPreferredAllocationRequest(
                            available_deviceIDs=["GPU-nope"], allocation_size=1
                        )
                    ]
                ),
                timeout=TIMEOUT,
            )
        assert err.value.code() == grpc.StatusCode.UNKNOWN
        assert "GPU-nope" in (err.value.details() or "")
    finally:
        plugin.stop()


def test_index_id_strategy_injects_indexes_and_mig_devices_keep_kubelets_must_include() -> None:
    inv = load_reading(DGX1)
    state = PluginState(
        inv, parse_plugin_config("flags: {plugin: {deviceIDStrategy: index}}"), "nvidia.com/gpu"
    )
    response = container_response(state, [inv.devices[6].uuid, inv.devices[1].uuid])
    assert dict(response.envs) == {"NVIDIA_VISIBLE_DEVICES": "6,1"}

    # The H200 with MIG enabled and three 1g.18gb devices: interchangeable, so must-include first, then order.
    h200 = load_reading(H200)
    migs = tuple(
        MigDevice(index=i, uuid=f"MIG-{i}", profile="1g.18gb", gi_id=i + 1, ci_id=0, memory_total=1)
        for i in range(3)
    )
    gpu = dataclasses.replace(h200.devices[0], mig_enabled=True, mig_devices=migs)
    state = PluginState(
        dataclasses.replace(h200, devices=(gpu,)),
        PluginConfig(mig_strategy=MigStrategy.MIXED),
        "nvidia.com/mig-1g.18gb",
    )
    assert preferred_for(state, ["MIG-0", "MIG-1", "MIG-2"], ["MIG-2"], 2) == ["MIG-2", "MIG-0"]
    assert dict(container_response(state, ["MIG-1"]).envs) == {"NVIDIA_VISIBLE_DEVICES": "MIG-1"}


def test_plugin_registers_again_when_kubelet_restarts(dgx1: NodeInventory, socket_dir: Path) -> None:
    # kubelet recreates kubelet.sock on restart and forgets plugins; the NVIDIA plugin then re-registers.
    def start_kubelet() -> tuple[grpc.Server, FakeKubelet]:
        fake = FakeKubelet()
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        pb_grpc.add_RegistrationServicer_to_server(fake, server)
        server.add_insecure_port(f"unix://{socket_dir / 'kubelet.sock'}")
        server.start()
        return server, fake

    first, first_kubelet = start_kubelet()
    plugin = _serve(dgx1, socket_dir)
    done = threading.Event()
    loop = threading.Thread(target=serve_until, args=([plugin], socket_dir, done, 0.02))
    loop.start()
    second = None
    try:
        assert first_kubelet.requests.get(timeout=TIMEOUT).resource_name == "nvidia.com/gpu"
        first.stop(grace=None).wait()
        (socket_dir / "kubelet.sock").unlink(missing_ok=True)
        second, second_kubelet = start_kubelet()
        again = second_kubelet.requests.get(timeout=TIMEOUT)
        assert (again.resource_name, again.endpoint) == ("nvidia.com/gpu", "nvidia-gpu.sock")
        assert (socket_dir / "nvidia-gpu.sock").is_socket()
    finally:
        done.set()
        loop.join(TIMEOUT)
        plugin.stop()
        if second is not None:
            second.stop(grace=None).wait()


def test_allocate_passes_device_specs_when_configured(
    dgx1: NodeInventory, socket_dir: Path, kubelet: FakeKubelet, stub_for: object
) -> None:
    # NVIDIA plugin apiDeviceSpecs: the control nodes only where they exist on the plugin's host (this
    # machine has no NVIDIA driver, so none or some of them), then the GPU nodes, all "rw".
    plugin = _serve(dgx1, socket_dir, "flags: {plugin: {passDeviceSpecs: true}}")
    try:
        stub = stub_for(plugin)  # type: ignore[operator]
        uuids = [g.uuid for g in dgx1.devices]
        alloc = stub.Allocate(
            pb.AllocateRequest(
                container_requests=[pb.ContainerAllocateRequest(devices_ids=[uuids[6], uuids[1]])]
            ),
            timeout=TIMEOUT,
        )
        (container,) = alloc.container_responses
        control = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")
        expected = [p for p in control if Path(p).exists()] + ["/dev/nvidia6", "/dev/nvidia1"]
        assert [(d.container_path, d.host_path, d.permissions) for d in container.devices] == [
            (p, p, "rw") for p in expected
        ]
        assert dict(container.envs) == {"NVIDIA_VISIBLE_DEVICES": f"{uuids[6]},{uuids[1]}"}
    finally:
        plugin.stop()


def test_each_container_response_gets_a_cdi_annotation_key_of_its_own(
    dgx1: NodeInventory, socket_dir: Path, kubelet: FakeKubelet, stub_for: object
) -> None:
    """NVIDIA k8s-device-plugin v0.20.0 internal/plugin/server.go ``getAllocateResponse``: ``responseID :=
    uuid.New().String()`` per container response. kubelet (pkg/kubelet/cm/devicemanager/pod_devices.go
    ``deviceRunContainerOptions``) skips an annotation key a container already has, so two responses with
    one key (a container with two resources) lost the second's devices (QA t8). Compared by structure."""
    plugin = _serve(dgx1, socket_dir, "flags: {plugin: {deviceListStrategy: cdi-annotations}}")
    a, b = dgx1.devices[0].uuid, dgx1.devices[1].uuid
    try:
        stub = stub_for(plugin)  # type: ignore[operator]
        responses = [
            stub.Allocate(
                pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=[i])]),
                timeout=TIMEOUT,
            ).container_responses[0]
            for i in (a, b)
        ]
        keys = [k for r in responses for k in r.annotations]
        assert len(keys) == 2 and keys[0] != keys[1]
        for key in keys:
            assert re.fullmatch(
                r"cdi\.k8s\.io/nvidia-device-plugin_[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", key
            )
        merged: dict[str, str] = {}
        for r in responses:  # kubelet's merge for one container: the first value of a key wins
            for k, v in r.annotations.items():
                merged.setdefault(k, v)
        assert sorted(merged.values()) == sorted(f"nvidia.com/gpu={i}" for i in (a, b))
    finally:
        plugin.stop()
