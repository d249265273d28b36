"""``kubegpu lint`` run in-process on manifests written to a file; shared by the lint test modules."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from click.testing import CliRunner

from kubegpu.cli.live_cmd import lint as lint_command


def lint(*args: str) -> subprocess.CompletedProcess[str]:
    """``kubegpu lint`` in-process through click (the real command; no interpreter start per call)."""
    result = CliRunner().invoke(lint_command, list(args))
    return subprocess.CompletedProcess(
        ["kubegpu", "lint", *args], result.exit_code, result.stdout, result.stderr
    )


def write(path: Path, *docs: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump_all(docs))
    return path
