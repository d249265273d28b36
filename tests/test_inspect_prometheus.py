"""``kubegpu inspect --prometheus``: a real Prometheus serving recorded exporter series (R13, R16).

The series (tests/fixtures/prometheus/recorded-gpu-series.om, readings of the shared H200 fixture; its
README says which) are backfilled with ``promtool tsdb create-blocks-from openmetrics`` and served by
Debian's ``prometheus`` on loopback; ``inspect`` runs against it at 11:30 UTC, the recording's end. The
expected findings are worked out by hand from the recorded values:

* gpu-b GPU 1 reports Xid 79 from 11:10: within the last hour, and 79 is not an application Xid → error,
  with the pod the snapshot places there; ``kubegpu_gpu_healthy`` is 0 → a second error;
* gpu-a GPU 0 holds 141,769 MiB at 11:00 and 141,897 of 143,770 MiB from 11:01: 141897 / 143770 = 98.70 %
  at every minute of the last 15 min (> 95 %) → warning; over 95 % since 11:00 (30 min, read with
  /api/v1/query_range), 10-min peak 141,897 MiB;
* gpu-b GPU 0 has read 0 % (SM and memory interface) for 90 min while team-b's notebook holds it, and no
  process for 5,400 s = 90 min → an info-level candidate carrying R13.3's caveats;
* gpu-a GPU 0 and gpu-b GPU 1 are at 100 %: not idle.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubegpu.cli.main import cli
from kubegpu.testing.builders import make_node, make_pod

SRC = Path(__file__).resolve().parents[1] / "src"
SERIES = Path(__file__).parent / "fixtures" / "prometheus" / "recorded-gpu-series.om"
END = "2026-12-02T11:30:00Z"
UUID = "GPU-5f3c0a7e-1d2b-4c8e-9a6f-0b1c2d3e4f5"  # + 0 (gpu-a GPU 0), 1 / 2 (gpu-b GPU 0 / 1)


def _binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"Debian's prometheus package is not installed: {name} not on PATH")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _serve(SERIES, tmp_path_factory.mktemp("prometheus"))


@pytest.fixture(scope="module")
def prometheus_lower_hostname(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The same recording as a newer dcgm-exporter writes its series: NVIDIA/dcgm-exporter PR #655 (merged
    2026-05-12) renamed the ``Hostname`` label ``hostname``; kubegpu's own ``kubegpu_*`` series beside them
    keep ``Hostname``, as kubegpu's exporter writes it."""
    root = tmp_path_factory.mktemp("prometheus-lower")
    lines = SERIES.read_text().splitlines(keepends=True)
    renamed = [ln.replace('{Hostname="', '{hostname="', 1) if ln.startswith("DCGM_") else ln for ln in lines]
    assert sum(ln.startswith("DCGM_") and 'hostname="' in ln for ln in renamed) > 100  # the rewrite applied
    series = root / "series.om"
    series.write_text("".join(renamed))
    yield from _serve(series, root)


def _serve(series: Path, root: Path) -> Iterator[str]:
    data = root / "data"
    made = subprocess.run(
        [_binary("promtool"), "tsdb", "create-blocks-from", "openmetrics", str(series), str(data)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    (root / "prometheus.yml").write_text("global: {}\n")
    port = _free_port()
    proc = subprocess.Popen(
        [_binary("prometheus"), f"--config.file={root / 'prometheus.yml'}", f"--storage.tsdb.path={data}",
         "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "prometheus exited"
            assert time.monotonic() < deadline, "prometheus did not become ready"
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    objs = [
        make_node("gpu-a").gpus(1).obj(),
        make_node("gpu-b").gpus(2).obj(),
        make_pod("trainer-0").ns("team-a").gpu(1).owner("Job", "trainer").on("gpu-a").obj(),
        make_pod("notebook-7d9f-abcde")
        .ns("team-b")
        .gpu(1)
        .owner("ReplicaSet", "notebook-7d9f")
        .on("gpu-b")
        .obj(),
        make_pod("infer-0").ns("team-b").gpu(1).owner("StatefulSet", "infer").on("gpu-b").obj(),
    ]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objs}))
    return path


def _device_findings(out: str) -> dict[str, dict[str, object]]:
    report = json.loads(out)
    return {f["title"]: f for f in report["findings"] if f["layer"] in ("driver/device-plugin", "workload")}


def test_inspect_reads_xid_memory_and_idle_gpus_from_a_real_prometheus(
    prometheus: str, snapshot: Path
) -> None:
    _expect_the_recorded_findings(prometheus, snapshot)


def test_the_lower_case_hostname_of_newer_dcgm_exporters_reads_the_same(
    prometheus_lower_hostname: str, snapshot: Path
) -> None:
    """Before the reader took both spellings, every finding said "on ?" and named no node."""
    _expect_the_recorded_findings(prometheus_lower_hostname, snapshot)


def _expect_the_recorded_findings(prometheus: str, snapshot: Path) -> None:
    result = CliRunner().invoke(
        cli, ["inspect", "--snapshot", str(snapshot), "--prometheus", prometheus, "--now", END, "-o", "json"]
    )
    assert result.exit_code == 2, result.output  # errors found: Xid 79 and an Unhealthy GPU
    found = _device_findings(result.stdout)
    assert set(found) == {
        f"Xid 79 on GPU 1 ({UUID}2) on gpu-b",
        f"GPU 1 ({UUID}2) on gpu-b is Unhealthy",
        f"memory over 95% for 15m on GPU 0 ({UUID}0) on gpu-a",
        f"GPU requested but nearly idle for 1h: GPU 0 ({UUID}1) on gpu-b",
    }
    xid = found[f"Xid 79 on GPU 1 ({UUID}2) on gpu-b"]
    assert xid["severity"] == "critical"
    assert xid["objects"] == ["node/gpu-b", "pod/team-b/infer-0"]
    memory = found[f"memory over 95% for 15m on GPU 0 ({UUID}0) on gpu-a"]
    assert memory["severity"] == "warning"
    memory_detail = str(memory["detail"])
    # over 95 % since minute 60 (141769 / 143770 = 98.6 %; minute 59 read 43593 / 143770 = 30.3 %): 30 min
    assert (
        "at least 98.7% used at every minute of the last 15m (over 95% for 30 min, since 2026-12-02T11:00:00Z)"
        in memory_detail
    )
    assert "10-min peak 141897 MiB" in memory_detail
    assert memory["objects"] == ["node/gpu-a", "pod/team-a/trainer-0"]
    # one pod on a whole GPU: a full GPU, but not the time-slicing pitfall
    assert memory["pitfall"] is None
    idle = found[f"GPU requested but nearly idle for 1h: GPU 0 ({UUID}1) on gpu-b"]
    assert idle["severity"] == "info"
    detail = str(idle["detail"])
    assert "no compute process for 90 min" in detail
    assert (
        "team-b/notebook-7d9f-abcde requests nvidia.com/gpu=1 (ReplicaSet/notebook-7d9f, node gpu-b)"
        in detail
    )
    assert "A candidate, not a verdict: jobs waiting for data" in detail and "notebooks" in detail
    # requested but idle is still taken: the scheduler counts requests (seed §17, pitfall 2)
    assert idle["pitfall"] == "utilisation-as-capacity" and "counts requests, not utilisation" in detail


def test_memory_full_on_a_time_sliced_gpu_is_the_replica_pitfall(prometheus: str, tmp_path: Path) -> None:
    """The same recording, with gpu-a time-sliced ×2 the way GFD labels it (gpu.count=1,
    gpu.replicas=2, capacity nvidia.com/gpu=2): trainer-0's replica is full at 98.7 % of the GPU's whole
    143,770 MiB: the memory finding is pitfall R17.3 (a replica is not 1/2 of the memory)."""
    objs = [
        make_node("gpu-a").gpus(2).label("nvidia.com/gpu.count", "1").label("nvidia.com/gpu.replicas", "2")
        .label("nvidia.com/gpu.sharing-strategy", "time-slicing").obj(),
        make_node("gpu-b").gpus(2).obj(),
        make_pod("trainer-0").ns("team-a").gpu(1).owner("Job", "trainer").on("gpu-a").obj(),
    ]  # fmt: skip
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objs}))
    result = CliRunner().invoke(
        cli, ["inspect", "--snapshot", str(path), "--prometheus", prometheus, "--now", END, "-o", "json"]
    )
    memory = _device_findings(result.stdout)[f"memory over 95% for 15m on GPU 0 ({UUID}0) on gpu-a"]
    assert memory["pitfall"] == "replicas-share-one-gpu"
    assert memory["objects"] == ["node/gpu-a", "pod/team-a/trainer-0"]
    assert (
        "time-sliced (nvidia.com/gpu.replicas=2 on gpu-a): a replica is a turn on the GPU, not 1/2 of its memory"
        in str(memory["detail"])
    )


def test_before_the_xid_only_warnings_remain(prometheus: str, snapshot: Path) -> None:
    """At 11:05 the Xid (11:10) has not happened and gpu-a's memory has been full for only 4 min (since
    11:01): no Xid, no Unhealthy, no memory finding; the notebook's GPU has been idle for 65 min."""
    result = CliRunner().invoke(
        cli, ["inspect", "--snapshot", str(snapshot), "--prometheus", prometheus,
              "--now", "2026-12-02T11:05:00Z", "-o", "json"],
    )  # fmt: skip
    found = _device_findings(result.stdout)
    assert set(found) == {f"GPU requested but nearly idle for 1h: GPU 0 ({UUID}1) on gpu-b"}
    assert "no compute process for 65 min" in str(next(iter(found.values()))["detail"])


def test_an_unreachable_prometheus_is_a_clear_error(snapshot: Path) -> None:
    port = _free_port()  # nothing listens there
    result = subprocess.run(
        [sys.executable, "-m", "kubegpu", "inspect", "--snapshot", str(snapshot),
         "--prometheus", f"http://127.0.0.1:{port}", "--now", END],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(SRC)},
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: cannot read Prometheus at http://127.0.0.1:{port}: ")
    assert "Traceback" not in result.stderr
