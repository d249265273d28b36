"""Differential fidelity: every case in ``cases.py`` scheduled by kubegpu's core and by the real kube-scheduler.

Per case, the real scheduler's verdict (bound or not, the node where exactly one fits, the PodScheduled
message byte for byte, the nominated node after a preemption) must equal the golden recorded from that same
release (``golden/<version>.json``, written by ``python -m tests.realkube.record_goldens``), and kubegpu's
verdict, rendered for that release, must equal it too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubegpu.model import parse
from tests.conftest import scheduler_for
from tests.realkube.cases import CASES, Case
from tests.realkube.conftest import kube_version
from tests.realkube.harness import Verdict, run_case

GOLDEN = Path(__file__).resolve().parent / "golden"


def kubegpu_verdict(case: Case, version: str) -> Verdict:
    """What kubegpu's core predicts for the case (default profile, as kube-scheduler ships)."""
    del version  # the core renders one release's text today; the per-version table is the version issue's
    s = scheduler_for(*case.objects)
    result = s.schedule_one(parse.parse_pod(case.pod, "case"))
    return Verdict(result.scheduled, result.node or "", "" if result.scheduled else result.message,
                   result.nominated_node)  # fmt: skip


def golden(version: str) -> dict[str, Any]:
    path = GOLDEN / f"{version}.json"
    if not path.exists():
        pytest.fail(f"no golden file for Kubernetes {version}: run `python -m tests.realkube.record_goldens`")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@pytest.fixture(scope="module")
def real(control_plane: Any) -> dict[str, Verdict]:
    """Every case through the real scheduler, once (sequentially: they share the scheduler)."""
    return {c.name: run_case(control_plane, c, i) for i, c in enumerate(CASES)}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_real_scheduler_matches_the_recorded_golden(case: Case, real: dict[str, Verdict]) -> None:
    version = kube_version()
    assert real[case.name].as_dict() == golden(version)["cases"][case.name], (
        f"Kubernetes {version}'s kube-scheduler decided {case.name} differently from its golden"
    )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_kubegpu_matches_the_real_scheduler(case: Case, real: dict[str, Verdict]) -> None:
    version = kube_version()
    assert kubegpu_verdict(case, version) == real[case.name]
