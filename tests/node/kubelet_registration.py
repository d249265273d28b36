"""A test kubelet (its v1beta1 Registration service on ``<dir>/kubelet.sock``) and ``kubegpu node
device-plugin`` started as a real process, for the device plugin command tests."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
from concurrent import futures
from pathlib import Path

import grpc
from tests.conftest import REPO

from kubegpu.node.v1beta1 import api_pb2 as pb
from kubegpu.node.v1beta1 import api_pb2_grpc as pb_grpc

TIMEOUT = 20.0


class TestKubelet(pb_grpc.RegistrationServicer):  # type: ignore[misc]
    """kubelet's Registration service on ``<dir>/kubelet.sock``; restartable like the real one."""

    __test__ = False  # a helper, not a pytest test class

    def __init__(self, plugin_dir: Path) -> None:
        self.plugin_dir = plugin_dir
        self.requests: queue.Queue[pb.RegisterRequest] = queue.Queue()
        self._server: grpc.Server | None = None

    def Register(self, request: pb.RegisterRequest, context: grpc.ServicerContext) -> pb.Empty:
        self.requests.put(request)
        return pb.Empty()

    def start(self) -> None:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        pb_grpc.add_RegistrationServicer_to_server(self, server)
        server.add_insecure_port(f"unix://{self.plugin_dir / 'kubelet.sock'}")
        server.start()
        self._server = server

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None).wait()
            self._server = None
        (self.plugin_dir / "kubelet.sock").unlink(missing_ok=True)


def start_device_plugin(plugin_dir: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.Popen(
        [sys.executable, "-m", "kubegpu", "node", "device-plugin", "--plugin-dir", str(plugin_dir), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
