"""``--device-plugin-config`` on the commands that run the core says what the NVIDIA plugin would ignore.

k8s-device-plugin v0.20.0 decodes the file with ``sigs.k8s.io/yaml`` into ``api/config/v1`` (unknown keys
dropped) and runs with it; kubegpu therefore accepts such a file, prints one warning per ignored field on
stderr, and answers as usual (exit 0). A file the plugin refuses (``version: v2``) stops the command.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from kubegpu.cli.main import cli


def test_ignored_field_is_a_warning_not_a_refusal(tmp_path: Path) -> None:
    cfg = tmp_path / "plugin.yaml"
    cfg.write_text("version: v1\nflags:\n  migStrategy: none\n  failOnInitEror: true\n")  # sic: a typo
    result = CliRunner().invoke(cli, ["diagnose", "--demo", "--device-plugin-config", str(cfg)])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1
    assert "flags.failOnInitEror" in warnings[0] and "did you mean 'failOnInitError'" in warnings[0]
    assert str(cfg) in warnings[0]


def test_a_refused_config_stops_the_command(tmp_path: Path) -> None:
    cfg = tmp_path / "plugin.yaml"
    cfg.write_text("version: v2\n")
    proc = subprocess.run(
        [sys.executable, "-m", "kubegpu", "diagnose", "--demo", "--device-plugin-config", str(cfg)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: {cfg}: version: unknown version: v2"
