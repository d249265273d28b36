"""Fixtures for the live control-plane tests: the emulated API server, a kubeconfig for it, and the
components started as real processes (``python -m kubegpu.cli.live_cmd …``) that talk HTTP to it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kmock._internal import parsing

from tests.live.apiserver import RunningApiServer, parse_path_with_namespace_list, serve_in_thread

SCHEDULER = "kubegpu"


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningApiServer]:
    monkeypatch.setattr(parsing, "parse_path", parse_path_with_namespace_list)
    yield from serve_in_thread()


@pytest.fixture
def kubeconfig(api: RunningApiServer, tmp_path: Path) -> Path:
    return write_kubeconfig(api, tmp_path)


def write_kubeconfig(api: RunningApiServer, tmp_path: Path) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "emulator", "cluster": {"server": api.url}}],
        "users": [{"name": "scheduler", "user": {"token": "live-test-token"}}],
        "contexts": [{"name": "emulator", "context": {"cluster": "emulator", "user": "scheduler"}}],
        "current-context": "emulator",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Component:
    """One started process; ``stop()`` sends SIGTERM (SIGKILL after 10 s), ``kill()`` SIGKILL at once."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        self._fh = log.open("w")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(args, stdout=self._fh, stderr=subprocess.STDOUT, env=env)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        self._fh.close()
        return int(self.proc.returncode)

    def output(self) -> str:
        self._fh.flush()
        return self.log.read_text()


def extender_process(kubeconfig: Path, port: int, log: Path) -> Component:
    """``kubegpu extender`` on 127.0.0.1:``port`` against the emulator behind ``kubeconfig``."""
    return Component(
        [sys.executable, "-m", "kubegpu.cli.live_cmd", "extender", "--kubeconfig", str(kubeconfig),
         "--bind-address", "127.0.0.1", "--port", str(port)],
        log,
    )  # fmt: skip


@pytest.fixture
def start_scheduler(kubeconfig: Path, tmp_path: Path) -> Iterator[Callable[..., Component]]:
    started: list[Component] = []

    def start(identity: str = "replica-a", *extra: str, leader_elect: bool = True) -> Component:
        args = [
            sys.executable, "-m", "kubegpu.cli.live_cmd", "scheduler",
            "--kubeconfig", str(kubeconfig),
            "--identity", identity,
            "--metrics-bind-address", "127.0.0.1",
            "--metrics-port", str(free_port()),
            # fast clocks so the tests wait fractions of a second, not kube-scheduler's 1 s/10 s/15 s
            "--pod-initial-backoff", "0.1", "--pod-max-backoff", "0.4",
            "--lease-namespace", "kube-system",
            "--lease-duration", "3", "--renew-deadline", "2", "--retry-period", "0.3",
            "-v",
            *extra,
        ]  # fmt: skip
        if not leader_elect:
            args.append("--no-leader-elect")
        component = Component(args, tmp_path / f"{identity}.log")
        started.append(component)
        return component

    yield start
    for component in started:
        component.stop()


# -- API-server-shaped objects ------------------------------------------------------------------------


def gpu_node(
    name: str, gpus: int = 8, *, taint: bool = False, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    node: dict[str, Any] = {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {},
        "status": {
            "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpus)},
            "allocatable": {"cpu": "63500m", "memory": "500Gi", "pods": "110", "nvidia.com/gpu": str(gpus)},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    if taint:
        node["spec"]["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    return node


def gpu_pod(
    name: str, gpus: int, *, namespace: str = "ml", scheduler: str = SCHEDULER, priority: int = 0,
    labels: dict[str, str] | None = None, node: str = "",
) -> dict[str, Any]:  # fmt: skip
    pod: dict[str, Any] = {
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {"app": name}},
        "spec": {
            "schedulerName": scheduler,
            "priority": priority,
            "containers": [
                {
                    "name": "main",
                    "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                    "resources": {
                        "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": str(gpus)},
                        "limits": {"nvidia.com/gpu": str(gpus)},
                    },
                }
            ],
        },
        "status": {"phase": "Pending"},
    }
    if node:
        pod["spec"]["nodeName"] = node
        pod["status"]["phase"] = "Running"
    return pod


@pytest.fixture(scope="session")
def tls_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed ECDSA certificate for 127.0.0.1 made with the openssl CLI (``cryptography`` is not a
    dependency): what the webhook serves and what the client trusts, as the caBundle would be."""
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "tls.crt", d / "tls.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=kubegpu-webhook",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def start_webhook(
    tls_pair: tuple[Path, Path], tmp_path: Path
) -> Iterator[Callable[..., tuple[Component, int]]]:
    started: list[Component] = []

    def start(*extra: str) -> tuple[Component, int]:
        port = free_port()
        cert, key = tls_pair
        args = [
            sys.executable, "-m", "kubegpu.cli.live_cmd", "webhook",
            "--tls-cert-file", str(cert), "--tls-private-key-file", str(key),
            "--bind-address", "127.0.0.1", "--port", str(port), *extra,
        ]  # fmt: skip
        component = Component(args, tmp_path / f"webhook-{len(started)}.log")
        started.append(component)
        return component, port

    yield start
    for component in started:
        component.stop()
