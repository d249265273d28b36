"""``kubegpu exporter``: options, ``--once``, and bad input as one line (the CLI conventions of node_cmd)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from click.testing import CliRunner
from exporter_helpers import H200, parse

from kubegpu.cli.exporter_cmd import exporter


def test_once_prints_one_scrape_of_a_recorded_reading_with_the_given_hostname() -> None:
    result = CliRunner().invoke(
        exporter, ["--once", "--reading", str(H200 / "nvml.json"), "--hostname", "gpu-7"]
    )
    assert result.exit_code == 0, result.output
    got = parse(result.output)
    assert got.one("DCGM_FI_DEV_GPU_TEMP", Hostname="gpu-7") == 37


def test_a_bad_reading_is_one_line_naming_the_file_and_exit_1(tmp_path: Path) -> None:
    bad = tmp_path / "reading.json"
    bad.write_text("{not json")
    result = CliRunner().invoke(exporter, ["--once", "--reading", str(bad)])
    assert result.exit_code == 1
    assert (
        result.output
        == f"Error: device reading failed: {bad}: invalid JSON at line 1, column 2: Expecting property name enclosed in double quotes\n"
    )


def test_recorded_backend_needs_a_reading() -> None:
    result = CliRunner().invoke(exporter, ["--once", "--backend", "recorded"])
    assert result.exit_code == 2
    assert "--backend recorded needs --reading FILE" in result.output


def test_serves_until_sigterm_and_exits_cleanly() -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from kubegpu.cli.exporter_cmd import exporter; exporter()",
            "--reading",
            str(H200 / "nvml.json"),
            "--listen",
            f"127.0.0.1:{port}",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == f"serving /metrics and /healthz on 127.0.0.1:{port}\n"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as resp:
            assert (resp.status, resp.read()) == (200, b"ok\n")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            assert parse(resp.read().decode()).one("DCGM_FI_DEV_FB_USED") == 615
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        proc.kill()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
