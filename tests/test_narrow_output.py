"""The table view at a given width: ``COLUMNS`` is honoured also when output is piped, 80 columns stay readable
(the GPU node table drops its least needed columns first: held by, state, product, capacity — allocatable is
what schedules — and wraps the rest inside cells), and only kube-scheduler's and kubelet's own messages,
printed verbatim on one line so that they can be copied and grepped, run past the width."""

from __future__ import annotations

import os
import subprocess
import sys

# proposed commands too: each is one line to copy (a wrapped one put ``--dry-run=server`` on a line of its
# own, and copying the first line ran the real change)
VERBATIM = ("0/", "UnexpectedAdmissionError", "TopologyAffinityError", "  $ kubectl ")


def diagnose(columns: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    proc = subprocess.run(
        [sys.executable, "-m", "kubegpu", "diagnose", "--demo"], capture_output=True, text=True, env=env,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def header(lines: list[str]) -> list[str]:
    row = next(line for line in lines if line.startswith("┃") and " node " in line)
    return [cell.strip() for cell in row.strip("┃").split("┃")]


def test_80_columns_fit_and_keep_what_schedules() -> None:
    lines = diagnose("80")
    wide = [line for line in lines if len(line) > 80]
    assert wide and all(line.startswith(VERBATIM) for line in wide), [w[:60] for w in wide]
    assert header(lines) == ["node", "pool", "taints", "resource", "alloc", "req", "free"]
    # the headline's long "First:" line is wrapped, indented under itself
    first = next(i for i, line in enumerate(lines) if line.startswith("First: "))
    assert lines[first + 1].startswith("    ") and len(lines[first]) <= 80


def test_a_wide_screen_gets_every_column_and_piped_output_keeps_whole_lines() -> None:
    wide = diagnose("200")
    assert header(wide) == [
        "node", "pool", "product", "state", "taints", "resource", "cap", "alloc", "req", "free", "held by",
    ]  # fmt: skip
    piped = diagnose(None)  # no COLUMNS, not a terminal: 150-column tables, plain lines never wrapped
    first = next(line for line in piped if line.startswith("First: "))
    assert len(first) > 150 and first.endswith(")")


def test_a_proposed_command_is_printed_whole_at_80_columns() -> None:
    """The demo proposes ``kubectl label node ... --overwrite --dry-run=server -o yaml`` (the pool-label
    finding): at 80 columns that line is longer than the width, and must still be one line."""
    lines = diagnose("80")
    dry = [line for line in lines if "--dry-run=server" in line]
    assert dry and all(line.startswith("  $ kubectl -n ") and len(line) > 80 for line in dry), dry
    assert not any(line.strip(" │").startswith("--dry-run") for line in lines)
