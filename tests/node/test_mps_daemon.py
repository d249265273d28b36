"""kubegpu.node.mps against upstream's mps-control-daemon and against readings from a real H200.

Pins k8s-device-plugin v0.20.0 (commit 1b826acc6af3079d8923bac395c3124b8861a9a6)
``cmd/mps-control-daemon/mps/daemon.go`` (Start, EchoPipeToControl, AssertHealthy, Stop,
perDevicePinnedDeviceMemoryLimits, activeThreadPercentage) and ``mps/root.go`` (pipe/log/.started paths).
The hardware fixture ``fixtures/mps_h200.json`` was recorded on an H200 lent through the device tool
(compute mode Default and MIG Disabled before and after: the check never changes GPU settings).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from kubegpu.devices.container_view import MpsDefaults
from kubegpu.node.mps import MpsControlDaemon, MpsRoot, MpsSupervisor

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "mps_h200.json").read_text())


class FakeControl:
    """Stands in for nvidia-cuda-mps-control: records argv/stdin/env; ``alive`` toggles health."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], str | None, dict[str, str]]] = []
        self.alive = False

    def __call__(self, argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        self.calls.append((argv, kw.get("input"), kw["env"]))
        if argv == ["nvidia-cuda-mps-control", "-d"]:
            self.alive = True
        elif not self.alive and argv[0] == "nvidia-cuda-mps-control":
            return subprocess.CompletedProcess(argv, 1, "", "Cannot find MPS control daemon process\n")
        elif kw.get("input") == "quit":
            self.alive = False
        return subprocess.CompletedProcess(
            argv, 0, "25.0\n" if (kw.get("input") or "").startswith("get") else "", ""
        )


def _daemon(tmp_path: Path, fake: FakeControl, compute_mode: bool = True) -> MpsControlDaemon:
    # 4 replicas of one 80 GiB GPU: 81920 MiB / 4 = 20480M, 100 // 4 = 25 (daemon.go integer divisions)
    defaults = MpsDefaults(active_thread_percentage=25, pinned_device_mem_limit={0: "20480M"})
    return MpsControlDaemon(
        "nvidia.com/gpu",
        MpsRoot(str(tmp_path)),
        defaults,
        gpu_uuids=("GPU-a",),
        set_compute_mode=compute_mode,
        run=fake,
    )


def test_start_runs_upstream_sequence(tmp_path: Path) -> None:
    fake = FakeControl()
    d = _daemon(tmp_path, fake)
    d.start()
    argvs = [(c[0], c[1]) for c in fake.calls]
    assert argvs == [
        (["nvidia-smi", "-i", "GPU-a", "-c", "EXCLUSIVE_PROCESS"], None),
        (["nvidia-cuda-mps-control", "-d"], None),
        (["nvidia-cuda-mps-control"], "set_default_device_pinned_mem_limit 0 20480M"),
        (["nvidia-cuda-mps-control"], "set_default_active_thread_percentage 25"),
    ]
    env = fake.calls[1][2]
    assert env["CUDA_MPS_PIPE_DIRECTORY"] == f"{tmp_path}/nvidia.com/gpu/pipe"
    assert env["CUDA_MPS_LOG_DIRECTORY"] == f"{tmp_path}/nvidia.com/gpu/log"
    assert sorted(p.name for p in (tmp_path / "nvidia.com" / "gpu").iterdir()) == [".started", "log", "pipe"]


def test_stop_quits_resets_mode_and_cleans(tmp_path: Path) -> None:
    fake = FakeControl()
    d = _daemon(tmp_path, fake)
    d.start()
    fake.calls.clear()
    d.stop()
    assert [(c[0], c[1]) for c in fake.calls] == [
        (["nvidia-cuda-mps-control"], "quit"),
        (["nvidia-smi", "-i", "GPU-a", "-c", "DEFAULT"], None),
    ]
    # upstream removes the started file and the log directory, and keeps the pipe directory
    assert sorted(p.name for p in (tmp_path / "nvidia.com" / "gpu").iterdir()) == ["pipe"]


def test_no_compute_mode_change_when_off(tmp_path: Path) -> None:
    fake = FakeControl()
    d = _daemon(tmp_path, fake, compute_mode=False)
    d.start()
    d.stop()
    assert not any(c[0][0] == "nvidia-smi" for c in fake.calls)


def test_supervisor_restarts_a_daemon_that_stopped_answering(tmp_path: Path) -> None:
    fake = FakeControl()
    sup = MpsSupervisor({"nvidia.com/gpu": _daemon(tmp_path, fake, compute_mode=False)})
    assert [s.as_dict() for s in sup.start()] == [
        {"resource": "nvidia.com/gpu", "healthy": True, "detail": "25.0", "restarts": 0}
    ]
    fake.alive = False  # the daemon died
    (status,) = sup.tick()
    assert status.healthy and status.restarts == 1


def test_missing_binary_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    d = MpsControlDaemon(
        "nvidia.com/gpu", MpsRoot(str(tmp_path)), MpsDefaults(50, {}), binary="/nonexistent/mps"
    )
    ok, detail = d.healthy()
    assert not ok
    assert detail.startswith("nvidia.com/gpu: sending 'get_default_active_thread_percentage'")
    assert "\n" not in detail


def test_h200_supervised_daemon_readings() -> None:
    rec = FIXTURE["supervised"]
    assert rec["nvidia_smi_before"] == rec["nvidia_smi_after"]  # compute mode and MIG untouched
    assert ", Default, Disabled," in rec["nvidia_smi_before"]
    # 143771 MiB / 4 replicas = 35942.75 -> "35942M" (integer MiB, daemon.go); MPS echoes it rounded to "35G"
    assert rec["control_commands"] == [
        "set_default_device_pinned_mem_limit 0 35942M",
        "set_default_active_thread_percentage 25",
    ]
    assert rec["get_default_device_pinned_mem_limit"] == "35G"
    assert rec["supervisor_start"][0]["healthy"] and rec["supervisor_start"][0]["detail"] == "25.0"
    assert rec["baseline"]["multi_processor_count"] == 132
    # a client with no MPS variables gets the daemon defaults: 25 % of 132 SMs, rounded down to whole
    # TPCs (2 SMs each) -> 32; free memory just under 35942 MiB (the context takes the rest)
    c = rec["client_C_daemon_defaults"]
    assert c["multi_processor_count"] == 32
    assert 34 * 2**30 < c["mem_get_info_free"] <= 35942 * 2**20
    # a client can lower its share under the daemon default but not raise it: 50 % still gives 32 SMs
    assert rec["client_B"]["multi_processor_count"] == 32
    # the daemon that was quit behind the supervisor's back is found unhealthy and restarted once
    assert rec["health_after_quit"][0] is False
    assert rec["supervisor_tick_after_quit"][0]["restarts"] == 1
    assert rec["client_D_after_restart"]["multi_processor_count"] == 32
    assert rec["supervisor_stop_errors"] == []


def test_h200_plain_daemon_client_limits() -> None:
    """Two concurrent clients, 4G/25 % and 8G/50 %, against a daemon with no defaults."""
    p = FIXTURE["plain_daemon"]
    a, b = p["client_A"], p["client_B"]
    assert (a["multi_processor_count"], b["multi_processor_count"]) == (
        32,
        66,
    )  # 132 * 0.25 -> 32 (TPCs), 132 * 0.5
    assert 3.8 * 2**30 < a["mem_get_info_free"] <= 4 * 2**30
    assert 7.6 * 2**30 < b["mem_get_info_free"] <= 8 * 2**30
    assert a["alloc_3GiB"] == "ok" and a["alloc_6GiB"].startswith("OutOfMemoryError")
    assert b["alloc_7GiB"] == "ok" and b["alloc_9GiB"].startswith("OutOfMemoryError")


def test_supervisor_for_mps_config_one_daemon_per_shared_resource(tmp_path: Path) -> None:
    from kubegpu.devices import load_reading, parse_plugin_config, plan_resources
    from kubegpu.node.mps import supervisor_for

    inv = load_reading(
        Path(__file__).parents[2].parent / "shared" / "fixtures" / "nodes" / "h200-1gpu" / "nvml.json"
    )
    config = parse_plugin_config(
        f"flags: {{mpsRoot: {tmp_path}}}\nsharing: {{mps: {{resources: [{{name: nvidia.com/gpu, replicas: 4}}]}}}}"
    )
    sup = supervisor_for(inv, config, plan_resources(inv, config))
    assert sup is not None
    (d,) = sup.daemons.values()
    # 150754820096 bytes (143771 MiB) / 4 = 35942 MiB; 100 // 4 = 25 (daemon.go integer divisions)
    assert d.defaults.control_commands() == (
        "set_default_device_pinned_mem_limit 0 35942M",
        "set_default_active_thread_percentage 25",
    )
    assert d.pipe_dir == f"{tmp_path}/nvidia.com/gpu/pipe"
    assert list(d.gpu_uuids) == [inv.devices[0].uuid]
    assert supervisor_for(inv, parse_plugin_config(""), plan_resources(inv, parse_plugin_config(""))) is None
