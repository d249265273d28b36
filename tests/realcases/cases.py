"""The rebuilt public cases in this folder read through kubegpu: a case diagnosed (in-process or through
``kubegpu diagnose -o json``), one pod explained, and lookups in the result (a finding, a Pending pod, its
fixes, the summary's first step); shared by the realcases test modules."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubegpu.cli.main import cli
from kubegpu.explain.diagnose import diagnose
from kubegpu.explain.engine import Engine
from kubegpu.explain.explanation import Explanation
from kubegpu.explain.pending import explain_pod
from kubegpu.sources import load_files

HERE = Path(__file__).parent
WRONG_NAME_CLAIMS = ("the name must match exactly", "Fix the pod template", "Did you mean")


@cache
def case(name: str) -> dict[str, Any]:
    snap = load_files(HERE / f"{name}.yaml")
    assert not snap.errors, [e.one_line() for e in snap.errors]
    data: dict[str, Any] = diagnose(Engine(snap)).to_dict()
    return data


def diagnosed(path: Path) -> dict[str, Any]:
    """``kubegpu diagnose --snapshot PATH -o json`` through the CLI (its stdout: warnings go to stderr)."""
    res = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(path), "-o", "json"])
    assert res.exit_code in (0, 1), res.output
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def text(data: dict[str, Any]) -> str:
    return json.dumps(data)


def finding(data: dict[str, Any], title: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [f for f in data["findings"] if f["title"] == title]
    assert found, [f["title"] for f in data["findings"]]
    return found[0]


def pending(data: dict[str, Any], key: str) -> dict[str, Any]:
    found: dict[str, Any] = next(p for p in data["pending"] if p["pod"] == key)
    return found


def fixes(p: dict[str, Any]) -> str:
    return " ".join(g["fix"] for g in p["groups"])


def assert_no_name_blame(data: dict[str, Any]) -> None:
    blob = text(data)
    for claim in WRONG_NAME_CLAIMS:
        assert claim not in blob, claim


def first_step(name: str) -> str:
    """The summary's first step, as `kubegpu diagnose -o json` gives it."""
    result = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(HERE / f"{name}.yaml"), "-o", "json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return str(data["summary"]["firstStep"])


def explain(tmp_path: Path, name: str, key: str, edits: tuple[tuple[str, str], ...] = ()) -> Explanation:
    text = (HERE / f"{name}.yaml").read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    snap = load_files(path)
    assert not snap.errors, [e.one_line() for e in snap.errors]
    pod = snap.pod(key)
    assert pod is not None
    return explain_pod(Engine(snap), pod)
