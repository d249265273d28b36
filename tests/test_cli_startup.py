"""``kubegpu --help`` loads only click and the CLI's own skeleton; each lazily registered command's
``--help`` line is its own docstring's first sentence.

The subcommands that live in ``kubegpu.cli.*_cmd`` modules are imported when run, not when the top-level
help is printed (``kubegpu.cli.main.LAZY_COMMANDS``), so the help needs none of numpy, rich, the
Kubernetes client, gRPC, Prometheus, NVML or matplotlib, nor the scheduling core.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from kubegpu.cli.main import LAZY_COMMANDS, cli

REPO = Path(__file__).resolve().parents[1]
HEAVY = {"numpy", "rich", "kubernetes", "grpc", "prometheus_client", "pynvml", "matplotlib", "yaml"}


def _modules_after_help(*args: str) -> tuple[str, set[str]]:
    code = (
        "import json, sys\n"
        "from kubegpu.cli.main import main\n"
        f"sys.argv = ['kubegpu', *{list(args)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout, set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_top_level_help_loads_no_heavy_library_and_no_core() -> None:
    out, loaded = _modules_after_help("--help")
    assert "Commands:" in out and "simulate" in out and "exporter" in out
    assert HEAVY.isdisjoint({m.split(".")[0] for m in loaded})
    ours = {m for m in loaded if m.startswith("kubegpu")}
    assert ours == {"kubegpu", "kubegpu.cli", "kubegpu.cli.main", "kubegpu.cli.options", "kubegpu.errors"}


def test_a_lazy_command_is_loaded_when_asked_for() -> None:
    out, loaded = _modules_after_help("plan", "--help")
    assert "mig" in out and "time-slicing" in out
    assert "kubegpu.cli.plan_cmd" in loaded
    assert "kubegpu.cli.sim_cmd" not in loaded and "kubegpu.cli.exporter_cmd" not in loaded


@pytest.mark.parametrize("name", sorted(LAZY_COMMANDS))
def test_each_registry_line_is_the_commands_own_short_help(name: str) -> None:
    """The registry's line must not drift from the command's docstring (its full first sentence)."""
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    assert command.get_short_help_str(limit=1000) == LAZY_COMMANDS[name][2]


def test_top_level_help_names_the_supported_releases() -> None:
    """The help is static text (it may not import the core); it must name the range the core models
    (``scheduler.versions.SUPPORTED_RANGE``), which it once gave as a single stale release."""
    from kubegpu.scheduler.versions import SUPPORTED_RANGE

    out, _ = _modules_after_help("--help")
    assert f"(Kubernetes {SUPPORTED_RANGE})" in " ".join(out.split())


def _help_texts(cmd: click.Command, path: list[str]) -> list[tuple[str, str]]:
    ctx = click.Context(cmd, info_name=path[-1])
    out = [(" ".join(path), cmd.get_help(ctx))]
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None:
                out += _help_texts(sub, [*path, name])
    return out


def test_no_help_text_shows_the_projects_requirement_numbers() -> None:
    """The requirement numbers (R1–R17 of docs/requirements.md) are the team's, never user output; two
    help texts once said ``(R8)`` and ``(R16)``."""
    import re

    numbered = re.compile(r"\bR1?\d(\.\d+)?\b")
    found = [
        (where, m.group()) for where, text in _help_texts(cli, ["kubegpu"]) if (m := numbered.search(text))
    ]
    assert found == []
