"""MPS control daemon per MPS-shared resource: start, supervise, health, stop (R7, issue 26 item 4).

What upstream's ``mps-control-daemon`` does (k8s-device-plugin v0.20.0,
``cmd/mps-control-daemon/mps/daemon.go`` and ``root.go``), for each resource that ``sharing.mps`` replicates:

* directories ``<root>/<resource>/pipe`` and ``<root>/<resource>/log`` (mode 0755), where ``<root>`` is
  ``/mps`` inside the daemon's container and ``flags.mpsRoot`` (default ``/run/nvidia/mps``) on the host;
* ``nvidia-cuda-mps-control -d`` with ``CUDA_MPS_PIPE_DIRECTORY`` / ``CUDA_MPS_LOG_DIRECTORY`` set to them;
* ``set_default_device_pinned_mem_limit <index> <memory / replicas in MiB>M`` per GPU and
  ``set_default_active_thread_percentage <100 / replicas>``, each written to ``nvidia-cuda-mps-control``'s
  stdin (``EchoPipeToControl``); the values come from ``kubegpu.devices.container_view.mps_defaults``, the
  same numbers the device plugin reports for its containers;
* a ``.started`` file once configured; health is ``get_default_active_thread_percentage`` answering
  (``AssertHealthy``); stop is ``quit``, then the started file and the log directory are removed.

Upstream also switches each GPU to ``EXCLUSIVE_PROCESS`` compute mode with ``nvidia-smi -c`` before starting
and back to ``DEFAULT`` after stopping. ``set_compute_mode`` keeps that step (on by default, as upstream); it
is the one step that changes the GPU's settings, so the hardware check runs with it off (the daemon works in
``DEFAULT`` mode, which is how ``tests/node/fixtures/mps_h200.json`` was recorded).

``MpsSupervisor`` adds what upstream leaves to Kubernetes (a liveness probe restarting the pod): it checks
health on each ``tick`` and restarts a daemon that stopped answering, counting restarts.

Must not: decide limits or which resources are MPS-shared (``kubegpu.devices``); imports no ``grpc``.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kubegpu.devices.container_view import MpsDefaults, mps_defaults
from kubegpu.devices.inventory import NodeInventory
from kubegpu.devices.sharing import PluginConfig, ResourcePlan, SharingStrategy
from kubegpu.errors import KubegpuError

log = logging.getLogger(__name__)

CONTROL_BIN = "nvidia-cuda-mps-control"


@dataclass(frozen=True, slots=True)
class MpsRoot:
    """root.go ``Root``: where one resource's pipe, log and started file live."""

    path: str

    def pipe_dir(self, resource: str) -> str:
        return os.path.join(self.path, resource, "pipe")

    def log_dir(self, resource: str) -> str:
        return os.path.join(self.path, resource, "log")

    def started_file(self, resource: str) -> str:
        return os.path.join(self.path, resource, ".started")


Runner = Callable[..., "subprocess.CompletedProcess[str]"]


class MpsError(KubegpuError):
    """One line saying which resource and which step failed."""


@dataclass(slots=True)
class MpsControlDaemon:
    """One ``nvidia-cuda-mps-control -d`` for one MPS-shared resource."""

    resource: str
    root: MpsRoot
    defaults: MpsDefaults
    gpu_uuids: Sequence[str] = ()
    set_compute_mode: bool = True
    binary: str = CONTROL_BIN
    run: Runner = subprocess.run
    timeout_s: float = 10.0

    @property
    def pipe_dir(self) -> str:
        return self.root.pipe_dir(self.resource)

    @property
    def log_dir(self) -> str:
        return self.root.log_dir(self.resource)

    def env(self) -> dict[str, str]:
        """daemon.go ``EnvVars``: what every control command (and the daemon) runs with."""
        return {"CUDA_MPS_PIPE_DIRECTORY": self.pipe_dir, "CUDA_MPS_LOG_DIRECTORY": self.log_dir}

    def start(self) -> None:
        if self.set_compute_mode:
            self._compute_mode("EXCLUSIVE_PROCESS")
        for d in (self.pipe_dir, self.log_dir):
            os.makedirs(d, mode=0o755, exist_ok=True)
        self._exec([self.binary, "-d"], None, "starting the MPS control daemon")
        for command in self.defaults.control_commands():
            self.control(command)
        Path(self.root.started_file(self.resource)).touch()

    def control(self, command: str) -> str:
        """daemon.go ``EchoPipeToControl``: one command on stdin, its answer from stdout."""
        return self._exec([self.binary], command, f"sending {command.split()[0]!r} to the MPS control daemon")

    def healthy(self) -> tuple[bool, str]:
        """daemon.go ``AssertHealthy``: the daemon answers ``get_default_active_thread_percentage``."""
        try:
            answer = self.control("get_default_active_thread_percentage").strip()
        except MpsError as e:
            return False, str(e)
        return True, answer

    def stop(self) -> None:
        self.control("quit")
        if self.set_compute_mode:
            self._compute_mode("DEFAULT")
        Path(self.root.started_file(self.resource)).unlink(missing_ok=True)
        shutil.rmtree(self.log_dir, ignore_errors=True)

    def _compute_mode(self, mode: str) -> None:
        for uuid in self.gpu_uuids:
            self._exec(["nvidia-smi", "-i", uuid, "-c", mode], None, f"setting compute mode {mode} on {uuid}")

    def _exec(self, argv: list[str], stdin: str | None, what: str) -> str:
        env = {**os.environ, **self.env()}
        try:
            done = self.run(
                argv,
                input=stdin,
                env=env,
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise MpsError(f"{self.resource}: {what}: {e}") from None
        if done.returncode != 0:
            detail = (done.stderr or done.stdout or "").strip().splitlines()
            raise MpsError(
                f"{self.resource}: {what}: exit {done.returncode}" + (f": {detail[-1]}" if detail else "")
            )
        return str(done.stdout)


@dataclass(slots=True)
class MpsStatus:
    resource: str
    healthy: bool
    detail: str
    restarts: int

    def as_dict(self) -> dict[str, object]:
        return {
            "resource": self.resource,
            "healthy": self.healthy,
            "detail": self.detail,
            "restarts": self.restarts,
        }


@dataclass(slots=True)
class MpsSupervisor:
    """Starts one daemon per resource, restarts those that stop answering, stops them all."""

    daemons: Mapping[str, MpsControlDaemon]
    restarts: dict[str, int] = field(default_factory=dict)

    def start(self) -> list[MpsStatus]:
        for d in self.daemons.values():
            d.start()
        return self.tick()

    def tick(self) -> list[MpsStatus]:
        out = []
        for name, d in self.daemons.items():
            ok, detail = d.healthy()
            if not ok:
                try:
                    d.start()
                    self.restarts[name] = self.restarts.get(name, 0) + 1
                    ok, detail = d.healthy()
                except MpsError as e:
                    detail = f"{detail}; restart failed: {e}"
            out.append(MpsStatus(name, ok, detail, self.restarts.get(name, 0)))
        return out

    def stop(self) -> list[str]:
        errors = []
        for d in self.daemons.values():
            try:
                d.stop()
            except MpsError as e:
                errors.append(str(e))
        return errors


def supervisor_for(
    inv: NodeInventory, config: PluginConfig, plans: Sequence[ResourcePlan], *, set_compute_mode: bool = True
) -> MpsSupervisor | None:
    """One daemon per resource that ``sharing.mps`` replicates, rooted at ``flags.mpsRoot``; None without MPS."""
    memory = {g.index: g.memory_total for g in inv.devices}
    daemons = {}
    for plan in plans:
        if plan.sharing is not SharingStrategy.MPS:
            continue
        gpus = sorted({d.gpu_index for d in plan.devices})
        uuids = [g.uuid for g in inv.devices if g.index in gpus]
        daemons[plan.name] = MpsControlDaemon(
            plan.name, MpsRoot(config.mps_root), mps_defaults(plan, memory), uuids, set_compute_mode
        )
    return MpsSupervisor(daemons) if daemons else None


def supervise(sup: MpsSupervisor, done: threading.Event, period_s: float = 10.0) -> threading.Thread:
    """Tick ``sup`` every ``period_s`` until ``done``, logging each daemon that is not healthy."""

    def run() -> None:
        while not done.wait(period_s):
            for status in sup.tick():
                if not status.healthy:
                    log.warning("MPS daemon for %s unhealthy: %s", status.resource, status.detail)

    thread = threading.Thread(target=run, name="mps-supervisor", daemon=True)
    thread.start()
    return thread
