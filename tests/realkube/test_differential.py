"""Differential fidelity: every case in ``cases.py`` scheduled by kubegpu's core and by the real kube-scheduler.

Per case, the real scheduler's verdict (bound or not, the node where exactly one fits, the PodScheduled
message byte for byte, the nominated node after a preemption) must equal the golden recorded from that same
release (``golden/<version>.json``, written by ``python -m tests.realkube.record_goldens``), and kubegpu's
verdict, rendered for that minor (``kubegpu.scheduler.versions``), must equal it too, on every case.

The goldens of minors not built in this run are checked the same way without a control plane. The
differences the first runs showed (untolerated taint(s), kubernetes PR #134740/#135023; DynamicResources'
"no new claims to deallocate" in 1.34–1.36, gone by #140222; the 1.37 preemption success text, #140180;
1.30 and 1.31 not counting the nodes a PreFilter result leaves out, counted from 1.32 by #126022) are now
modelled per minor in that table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.realkube.cases import CASES, Case
from tests.realkube.conftest import kube_version
from tests.realkube.harness import Verdict, run_case
from tests.realkube.verdicts import (
    GOLDEN,
    cases_for,
    differences,
    golden,
    kubegpu_verdict,
    minor_number,
    report,
)

NAMES = [c.name for c in CASES]


@pytest.fixture(scope="module")
def real(control_plane: Any) -> dict[str, Verdict]:
    """Every case through the real scheduler, once (sequentially: they share the scheduler)."""
    version = kube_version()
    return {
        c.name: run_case(control_plane, c, i) for i, c in enumerate(CASES) if c.applies(minor_number(version))
    }


@pytest.mark.parametrize("case", CASES, ids=NAMES)
def test_real_scheduler_matches_the_recorded_golden(case: Case, real: dict[str, Verdict]) -> None:
    version = kube_version()
    if case.name not in real:
        pytest.skip(
            f"Kubernetes {version}'s API server cannot hold {case.name}'s objects (1.{case.min_minor}+)"
        )
    assert real[case.name].as_dict() == golden(version)["cases"][case.name], (
        f"Kubernetes {version}'s kube-scheduler decided {case.name} differently from its golden"
    )


@pytest.mark.parametrize("case", CASES, ids=NAMES)
def test_kubegpu_matches_the_real_scheduler(case: Case, real: dict[str, Verdict]) -> None:
    if case.name not in real:
        pytest.skip(f"Kubernetes {kube_version()} cannot hold {case.name}'s objects (1.{case.min_minor}+)")
    assert kubegpu_verdict(case, kube_version()) == real[case.name]


def test_every_case_was_run_against_the_real_scheduler(real: dict[str, Verdict]) -> None:
    assert sorted(real) == sorted(c.name for c in cases_for(kube_version()))
    assert any(v.scheduled for v in real.values()) and any(not v.scheduled for v in real.values())


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.json")), ids=lambda p: p.stem)
def test_recorded_golden_equals_kubegpu(path: Path) -> None:
    """The committed goldens (minors not built in this run included): the same cases, each release's named
    in the file, and kubegpu equal to it on every case."""
    data = json.loads(path.read_text())
    assert data["version"] == path.stem
    want = sorted(c.name for c in cases_for(data["version"]))
    assert sorted(data["cases"]) == want, "cases.py changed: re-record with record_goldens"
    diffs = differences(data["cases"], data["version"])
    assert not diffs, report(diffs)
