"""``bench openb --executor ray``: the grid on a real local Ray gives the local process pool's results.

Data: the first 24 nodes of Alibaba's openb node list with the openb default trace (read in place from
../shared through a symlink), so the FGD protocol's workload is 130 % of those 24 nodes' GPUs: a real
packing run that takes well under a second. Ray is started on 127.0.0.1 only
(``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` makes Ray use the loopback address as its node address) and
with usage stats off, so nothing leaves the machine. These tests need the ``ray`` extra, which CI installs
through the ``test`` extra; without it they fail rather than skip.
"""

from __future__ import annotations

import csv
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from unittest import mock

import numpy as np
import pytest
from click.testing import CliRunner

from kubegpu.cli.sim_cmd import bench
from kubegpu.sim.bench import RunResult, local_pool, run_grid
from kubegpu.sim.ray_executor import INSTALL_HINT, ray_executor
from tests.conftest import REPO, SHARED

OPENB = SHARED / "data" / "alibaba-gpu-2023" / "csv"
# Ray on loopback, no usage report, a token of our own for the cluster test (Ray 2.5x enables token
# authentication on clusters it starts; a client must present the cluster's token)
RAY_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_AUTH_MODE": "token",
    "RAY_AUTH_TOKEN": secrets.token_hex(16),
}


def small_openb(tmp_path: Path) -> Path:
    """A data folder: the openb node list cut to its first 24 nodes, the default trace linked."""
    csv_dir = tmp_path / "data" / "csv"
    csv_dir.mkdir(parents=True)
    lines = (OPENB / "openb_node_list_gpu_node.csv").read_text().splitlines(keepends=True)
    (csv_dir / "openb_node_list_gpu_node.csv").write_text("".join(lines[:25]))
    (csv_dir / "openb_pod_list_default.csv").symlink_to(OPENB / "openb_pod_list_default.csv")
    return tmp_path / "data"


@pytest.fixture
def local_ray() -> Iterator[ModuleType]:
    with mock.patch.dict(os.environ, RAY_ENV):
        import ray

        ray.init(address="local", num_cpus=2, include_dashboard=False)
        try:
            yield ray
        finally:
            ray.shutdown()


def summary_without_seconds(out: Path) -> list[dict[str, str]]:
    with (out / "summary.csv").open() as f:
        return [{k: v for k, v in row.items() if k != "seconds"} for row in csv.DictReader(f)]


def same_outputs(a: Path, b: Path) -> None:
    """Every output file but the wall times equal, byte for byte (figures aside: PNG metadata)."""
    assert summary_without_seconds(a) == summary_without_seconds(b)
    assert (a / "table.csv").read_bytes() == (b / "table.csv").read_bytes()
    runs = sorted(p.name for p in (a / "runs").iterdir())
    assert runs == sorted(p.name for p in (b / "runs").iterdir())
    for name in runs:
        assert (a / "runs" / name).read_bytes() == (b / "runs" / name).read_bytes(), name


def test_ray_tasks_give_the_local_pools_results(tmp_path: Path, local_ray: ModuleType) -> None:
    data = small_openb(tmp_path)
    seen: dict[str, list[tuple[str, str, int]]] = {"local": [], "ray": []}

    def record(name: str) -> Callable[[RunResult], None]:
        return lambda r: seen[name].append((r.trace, r.policy, r.seed))

    grid = (["default"], ["FGD", "BestFit"], [42])
    local = run_grid(data, *grid, tmp_path / "local", executor=local_pool(1), on_done=record("local"))
    on_ray = run_grid(data, *grid, tmp_path / "ray", executor=ray_executor(), on_done=record("ray"))

    cells = [("default", "FGD", 42), ("default", "BestFit", 42)]
    assert [(r.trace, r.policy, r.seed) for r in on_ray] == cells  # grid order, whatever finished first
    assert sorted(seen["ray"]) == sorted(cells) and sorted(seen["local"]) == sorted(cells)
    for a, b in zip(local, on_ray, strict=True):
        assert (a.pods, a.failed) == (b.pods, b.failed)
        assert a.pods > 0 and sum(a.failed.values()) > 0  # a real run: 130 % of 24 nodes' GPUs
        for field in ("allocation", "frag_amount", "frag_ratio"):
            assert np.array_equal(getattr(a.curves, field), getattr(b.curves, field), equal_nan=True)
    same_outputs(tmp_path / "local", tmp_path / "ray")
    # the runs were Ray tasks, in Ray's worker processes (its task events name the function)
    names = {e.get("name", "") for e in local_ray.timeline()}
    assert any("run_on" in n for n in names), names


def bench_cli(data: Path, out: Path, *extra: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    args = ["--data", str(data), "--policies", "FGD,BestFit", "--seeds", "42", "--out", str(out), *extra]
    return subprocess.run(
        [sys.executable, "-m", "kubegpu", "bench", "openb", *args],
        env={**os.environ, **env, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_bench_openb_starts_a_local_ray_with_the_worker_count(tmp_path: Path) -> None:
    data = small_openb(tmp_path)
    local = bench_cli(data, tmp_path / "local", "--workers", "1", env={})
    assert local.returncode == 0, local.stderr
    on_ray = bench_cli(data, tmp_path / "ray", "--executor", "ray", "--workers", "1", env=RAY_ENV)
    assert on_ray.returncode == 0, on_ray.stderr
    assert "Traceback" not in on_ray.stderr
    same_outputs(tmp_path / "local", tmp_path / "ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def ray_head(tmp_path: Path) -> Iterator[str]:
    """A one-CPU Ray head (`ray start --head --block`), ended by SIGTERM to that process: it drains and
    stops the GCS, raylet and workers it started."""
    port = _free_port()
    ray_cli = Path(sys.executable).parent / "ray"
    log = (tmp_path / "head.log").open("w")
    head = subprocess.Popen(
        [str(ray_cli), "start", "--head", f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
         "--disable-usage-stats", "--block"],
        env={**os.environ, **RAY_ENV, "PYTHONPATH": str(REPO / "src")},
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while "Ray runtime started" not in (tmp_path / "head.log").read_text():
            assert head.poll() is None, (tmp_path / "head.log").read_text()
            assert time.monotonic() < deadline, "ray start --head did not come up in 120 s"
            time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:
        head.send_signal(signal.SIGTERM)
        head.wait(timeout=60)
        log.close()


def test_bench_openb_runs_on_an_existing_ray_cluster(tmp_path: Path, ray_head: str) -> None:
    data = small_openb(tmp_path)
    local = bench_cli(data, tmp_path / "local", "--workers", "1", env={})
    assert local.returncode == 0, local.stderr
    on_ray = bench_cli(data, tmp_path / "ray", "--executor", "ray", "--ray-address", ray_head, env=RAY_ENV)
    assert on_ray.returncode == 0, on_ray.stderr
    same_outputs(tmp_path / "local", tmp_path / "ray")


def test_executor_ray_without_ray_installed_names_the_extra(tmp_path: Path) -> None:
    """`import ray` made to fail (a None entry in sys.modules raises ImportError), as without the extra."""
    data, out = small_openb(tmp_path), tmp_path / "out"
    code = "import sys; sys.modules['ray'] = None; from kubegpu.cli.main import main; main()"
    args = ["bench", "openb", "--data", str(data), "--executor", "ray", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr == "Error: --executor ray needs Ray, an optional extra: pip install 'kubegpu[ray]'\n"
    assert INSTALL_HINT in done.stderr
    assert not out.exists()  # nothing run, nothing written


def test_unusable_ray_address_is_one_line(tmp_path: Path) -> None:
    """Ray rejects an address without a port (``ray.init`` raises ValueError "Invalid address format")."""
    data = small_openb(tmp_path)
    done = bench_cli(data, tmp_path / "o", "--executor", "ray", "--ray-address", "bogus", env=RAY_ENV)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith("Error: cannot start or reach Ray at bogus: ")


def test_ray_address_needs_the_ray_executor(tmp_path: Path) -> None:
    args = ["openb", "--data", str(small_openb(tmp_path)), "--out", str(tmp_path / "o")]
    result = CliRunner().invoke(bench, [*args, "--ray-address", "127.0.0.1:6379"])
    assert result.exit_code == 2 and "--ray-address needs --executor ray" in result.output
