"""Storage fidelity: every case in ``volume_cases.py`` scheduled by kubegpu's core and by the real kube-scheduler,
as ``test_differential`` does for the base cases; goldens in ``golden/volumes/<release>.json``
(``python -m tests.realkube.record_goldens --volumes 1.3x``). The texts that differ by minor: PR #129887
(1.33, PV node affinity) and PR #129145 (1.34, ReadWriteOncePod), both in ``scheduler.versions``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.realkube.cases import Case
from tests.realkube.conftest import kube_version
from tests.realkube.harness import Verdict, run_case
from tests.realkube.verdicts import GOLDEN, cases_for, differences, golden, kubegpu_verdict, report
from tests.realkube.volume_cases import VOLUME_CASES

VOLUME_GOLDEN = GOLDEN / "volumes"
NAMES = [c.name for c in VOLUME_CASES]


@pytest.fixture(scope="module")
def real(control_plane: Any) -> dict[str, Verdict]:
    # indexes after the base cases' so names and namespaces never collide within one control plane
    applicable = cases_for(kube_version(), VOLUME_CASES)  # a case may need a newer API server (min_minor)
    return {
        c.name: run_case(control_plane, c, 100 + i) for i, c in enumerate(VOLUME_CASES) if c in applicable
    }


@pytest.mark.parametrize("case", VOLUME_CASES, ids=NAMES)
def test_real_scheduler_matches_the_recorded_golden(case: Case, real: dict[str, Verdict]) -> None:
    version = kube_version()
    assert real[case.name].as_dict() == golden(version, VOLUME_GOLDEN)["cases"][case.name]


@pytest.mark.parametrize("case", VOLUME_CASES, ids=NAMES)
def test_kubegpu_matches_the_real_scheduler(case: Case, real: dict[str, Verdict]) -> None:
    assert kubegpu_verdict(case, kube_version()) == real[case.name]


@pytest.mark.parametrize("path", sorted(VOLUME_GOLDEN.glob("*.json")), ids=lambda p: p.stem)
def test_recorded_volume_golden_equals_kubegpu(path: Path) -> None:
    data = json.loads(path.read_text())
    assert data["version"] == path.stem
    expected = sorted(c.name for c in cases_for(data["version"], VOLUME_CASES))
    assert sorted(data["cases"]) == expected, "volume_cases.py changed: re-record with --volumes"
    diffs = differences(data["cases"], data["version"], VOLUME_CASES)
    assert not diffs, report(diffs)
