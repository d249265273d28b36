"""``kubegpu node device-plugin --plugin-dir DIR --nvml-reading FILE``, the issue's contract, as a real process.

A test kubelet (kubelet's v1beta1 ``Registration`` service on ``DIR/kubelet.sock``) drives the command
the way kubelet does: it receives the ``RegisterRequest`` (version v1beta1, endpoint ``nvidia-gpu.sock``,
resource ``nvidia.com/gpu``), opens ListAndWatch and Allocates over the plugin's unix socket, restarts
(kubelet.sock removed and recreated, which makes the NVIDIA plugin register again), and finally sends
SIGTERM, after which the plugin must remove its socket and exit 0 (kubelet treats a vanished socket as
the plugin gone). Every wait is bounded.
"""

from __future__ import annotations

import queue
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from tests.node.kubelet_registration import TIMEOUT, TestKubelet, start_device_plugin

from kubegpu.node.v1beta1 import api_pb2 as pb
from kubegpu.node.v1beta1 import api_pb2_grpc as pb_grpc

REPO = Path(__file__).parents[2]
DGX1 = REPO / "tests" / "fixtures" / "nodes" / "dgx1-8xv100.json"


@pytest.fixture
def plugin_dir() -> Iterator[Path]:
    # Unix socket paths are limited to 107 bytes; pytest's tmp_path can be longer than that.
    path = Path(tempfile.mkdtemp(prefix="kgdpc", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_contract_command_registers_allocates_reregisters_and_exits_cleanly(plugin_dir: Path) -> None:
    kubelet = TestKubelet(plugin_dir)
    kubelet.start()
    proc = start_device_plugin(plugin_dir, "--nvml-reading", str(DGX1))
    try:
        reg = kubelet.requests.get(timeout=TIMEOUT)
        assert (reg.version, reg.endpoint, reg.resource_name) == (
            "v1beta1",
            "nvidia-gpu.sock",
            "nvidia.com/gpu",
        )
        assert reg.options.get_preferred_allocation_available
        with grpc.insecure_channel(f"unix://{plugin_dir / reg.endpoint}") as channel:
            stub = pb_grpc.DevicePluginStub(channel)
            stream = stub.ListAndWatch(pb.Empty(), timeout=TIMEOUT)
            ids = [d.ID for d in next(stream).devices]
            stream.cancel()
            assert len(ids) == 8
            alloc = stub.Allocate(
                pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=ids[:2])]),
                timeout=TIMEOUT,
            )
            assert dict(alloc.container_responses[0].envs) == {"NVIDIA_VISIBLE_DEVICES": ",".join(ids[:2])}

        # kubelet restarts: its socket disappears and comes back as a new file; the plugin registers again.
        kubelet.stop()
        kubelet.start()
        again = kubelet.requests.get(timeout=TIMEOUT)
        assert (again.endpoint, again.resource_name) == ("nvidia-gpu.sock", "nvidia.com/gpu")
        assert (plugin_dir / "nvidia-gpu.sock").is_socket()

        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 0, out
        assert f"serving nvidia.com/gpu on {plugin_dir}/nvidia-gpu.sock" in out
        assert not (plugin_dir / "nvidia-gpu.sock").exists()
    except queue.Empty:
        # a registration that never came: show what the plugin process said before stopping it
        proc.kill()
        raise AssertionError(
            f"no registration within {TIMEOUT} s; plugin output:\n{proc.communicate()[0]}"
        ) from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kubelet.stop()


def test_renamed_time_sliced_resource_is_served_and_registered_on_its_own_socket(plugin_dir: Path) -> None:
    # NVIDIA plugin: renameByDefault time-slicing advertises nvidia.com/gpu.shared on its own socket.
    config = plugin_dir / "config.yaml"
    config.write_text(
        "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n"
        "    resources: [{name: nvidia.com/gpu, replicas: 2}]\n"
    )
    kubelet = TestKubelet(plugin_dir)
    kubelet.start()
    proc = start_device_plugin(plugin_dir, "--nvml-reading", str(DGX1), "--config", str(config))
    try:
        reg = kubelet.requests.get(timeout=TIMEOUT)
        assert (reg.endpoint, reg.resource_name) == ("nvidia-gpu.shared.sock", "nvidia.com/gpu.shared")
        with grpc.insecure_channel(f"unix://{plugin_dir / reg.endpoint}") as channel:
            stream = pb_grpc.DevicePluginStub(channel).ListAndWatch(pb.Empty(), timeout=TIMEOUT)
            assert len(next(stream).devices) == 16
            stream.cancel()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=TIMEOUT) == 0
        assert not (plugin_dir / "nvidia-gpu.shared.sock").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kubelet.stop()


def test_started_before_kubelet_it_waits_registers_when_kubelet_comes_up_and_stops_on_sigterm(
    plugin_dir: Path,
) -> None:
    """The NVIDIA plugin retries a failed start instead of exiting ("Retrying in 30s..."): no kubelet.sock
    for a while, then kubelet starts and gets the registration; SIGTERM then exits 0 and removes the socket."""
    proc = start_device_plugin(plugin_dir, "--nvml-reading", str(DGX1))
    kubelet = TestKubelet(plugin_dir)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (plugin_dir / "nvidia-gpu.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (plugin_dir / "nvidia-gpu.sock").is_socket()  # serving, not registered yet
        time.sleep(1.5)  # at least one refused attempt
        assert proc.poll() is None, proc.communicate()[0]
        kubelet.start()
        reg = kubelet.requests.get(timeout=TIMEOUT)
        assert (reg.endpoint, reg.resource_name) == ("nvidia-gpu.sock", "nvidia.com/gpu")
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 0, out
        assert "registered nvidia.com/gpu with kubelet" in out
        assert not (plugin_dir / "nvidia-gpu.sock").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kubelet.stop()


def _refused_start(plugin_dir: Path) -> tuple[int, str]:
    proc = start_device_plugin(plugin_dir, "--nvml-reading", str(DGX1))
    out, _ = proc.communicate(timeout=TIMEOUT)
    return proc.returncode, out


def test_a_directory_at_the_socket_path_is_one_line_and_exit_2(plugin_dir: Path) -> None:
    """QA t6: IsADirectoryError and a traceback; now one line naming the path (kubelet's socket dir holds
    sockets only: pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go CleanupPluginDirectory)."""
    (plugin_dir / "nvidia-gpu.sock").mkdir()
    rc, out = _refused_start(plugin_dir)
    assert rc == 2, out
    assert "Traceback" not in out
    assert (
        out.strip().splitlines()[-1]
        == f"Error: {plugin_dir / 'nvidia-gpu.sock'}: is a directory, not a socket"
    )
    assert (plugin_dir / "nvidia-gpu.sock").is_dir()  # left as found


def test_a_missing_plugin_directory_is_one_line_and_exit_2(plugin_dir: Path) -> None:
    """QA t6: gRPC's "RuntimeError: Failed to bind" and a traceback; now one line naming the directory."""
    missing = plugin_dir / "absent"
    rc, out = _refused_start(missing)
    assert rc == 2, out
    assert "Traceback" not in out
    assert out.strip().splitlines()[-1] == f"Error: {missing}: plugin directory does not exist"


def test_a_socket_path_over_the_af_unix_limit_is_one_line_and_exit_2(plugin_dir: Path) -> None:
    """QA t6: a path over 107 bytes (AF_UNIX sun_path is 108 with its NUL, unix(7)) was a traceback."""
    deep = plugin_dir / ("d" * 100)
    deep.mkdir()
    rc, out = _refused_start(deep)
    path = deep / "nvidia-gpu.sock"
    assert rc == 2, out
    assert "Traceback" not in out
    size = len(str(path).encode())
    assert out.strip().splitlines()[-1] == (
        f"Error: {path}: socket path is {size} bytes; a unix socket path holds at most 107"
    )


def test_sighup_rereads_the_config_serves_and_registers_again(plugin_dir: Path) -> None:
    """NVIDIA k8s-device-plugin v0.20.0 cmd/nvidia-device-plugin/main.go: on SIGHUP "Received SIGHUP,
    restarting." (goto restart: startPlugins loads the config again), which config-manager sends after a
    config change. Before, SIGHUP's default action killed the agent (QA t4)."""
    config = plugin_dir / "config.yaml"
    config.write_text("version: v1\n")
    proc = start_device_plugin(plugin_dir, "--nvml-reading", str(DGX1), "--config", str(config))
    kubelet = TestKubelet(plugin_dir)
    kubelet.start()
    try:
        assert kubelet.requests.get(timeout=TIMEOUT).resource_name == "nvidia.com/gpu"
        config.write_text(
            "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n"
            "    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n"
        )
        proc.send_signal(signal.SIGHUP)
        reg = kubelet.requests.get(timeout=TIMEOUT)
        assert (reg.endpoint, reg.resource_name) == ("nvidia-gpu.shared.sock", "nvidia.com/gpu.shared")
        assert proc.poll() is None
        assert (plugin_dir / "nvidia-gpu.shared.sock").is_socket()
        assert not (plugin_dir / "nvidia-gpu.sock").exists()  # the old generation's socket is gone
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 0, out
        assert "received SIGHUP" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kubelet.stop()
