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


def test_hostname_is_node_name_else_this_hosts_name_as_dcgm_exporter_4_5_3_writes_it() -> None:
    """dcgm-exporter 4.5.3-4.8.2 (commit 691c927) internal/pkg/hostname/hostname.go ``getLocalHostname``:
    ``$NODE_NAME``, else ``os.Hostname()``; internal/pkg/rendermetrics/render_metrics.go writes it as
    ``Hostname`` whenever it is not empty. (PR #655 renamed the label ``hostname``, first released in
    4.6.0-4.8.3; kubegpu writes 4.5.3-4.8.2's name, ``kubegpu.devices.dcgm_fields.LABEL_HOSTNAME``.)"""
    args = ["--once", "--reading", str(H200 / "nvml.json")]
    node = CliRunner().invoke(exporter, args, env={"NODE_NAME": "node-a"})
    assert node.exit_code == 0, node.output
    assert parse(node.output).one("DCGM_FI_DEV_GPU_TEMP", Hostname="node-a") == 37
    host = CliRunner().invoke(exporter, args, env={"NODE_NAME": None})
    assert host.exit_code == 0, host.output
    assert parse(host.output).one("DCGM_FI_DEV_GPU_TEMP", Hostname=socket.gethostname()) == 37


def test_no_hostname_leaves_the_label_out_as_dcgm_exporter_3_did() -> None:
    """dcgm-exporter 3.3.9-3.6.1 pkg/dcgmexporter/gpu_collector.go sets the host name only ``if
    !config.NoHostname``; 4.0.0 (commit 5f9250c) dropped that check, so 4.x (4.5.3-4.8.2 included) accepts
    ``--no-hostname`` / ``DCGM_EXPORTER_NO_HOSTNAME`` and still writes the label. kubegpu keeps the 3.x
    meaning of its flag (and does not read the environment variable)."""
    args = ["--once", "--reading", str(H200 / "nvml.json"), "--no-hostname"]
    result = CliRunner().invoke(exporter, args, env={"NODE_NAME": "node-a"})
    assert result.exit_code == 0, result.output
    temps = parse(result.output).series["DCGM_FI_DEV_GPU_TEMP"]
    assert len(temps) == 1 and all("Hostname" not in dict(k) for k in temps)


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
