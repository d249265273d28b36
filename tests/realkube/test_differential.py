"""Differential fidelity: every case in ``cases.py`` scheduled by kubegpu's core and by the real kube-scheduler.

Per case, the real scheduler's verdict (bound or not, the node where exactly one fits, the PodScheduled
message byte for byte, the nominated node after a preemption) must equal the golden recorded from that same
release (``golden/<version>.json``, written by ``python -m tests.realkube.record_goldens``), and kubegpu's
verdict must equal it too, except for the cases ``known_differences.py`` lists for that minor with the
upstream change behind each: those must still differ (a listed case that now matches fails: drop it).

The goldens of minors not built in this run are checked the same way without a control plane.
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
from tests.realkube.known_differences import known, minor_of

GOLDEN = Path(__file__).resolve().parent / "golden"
NAMES = [c.name for c in CASES]


def kubegpu_verdict(case: Case) -> Verdict:
    """What kubegpu's core predicts for the case (default profile, as kube-scheduler ships)."""
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


def differences(real: dict[str, dict[str, Any]]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """case → (kubegpu's verdict, the real one) for every case where they differ."""
    ours = {c.name: kubegpu_verdict(c).as_dict() for c in CASES}
    return {n: (ours[n], real[n]) for n in NAMES if ours[n] != real[n]}


def report(diffs: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> str:
    return "\n".join(f"{n}:\n  kubegpu: {o['message'] or o}\n  real:    {r['message'] or r}"
                     for n, (o, r) in diffs.items())  # fmt: skip


@pytest.fixture(scope="module")
def real(control_plane: Any) -> dict[str, Verdict]:
    """Every case through the real scheduler, once (sequentially: they share the scheduler)."""
    return {c.name: run_case(control_plane, c, i) for i, c in enumerate(CASES)}


@pytest.mark.parametrize("case", CASES, ids=NAMES)
def test_real_scheduler_matches_the_recorded_golden(case: Case, real: dict[str, Verdict]) -> None:
    version = kube_version()
    assert real[case.name].as_dict() == golden(version)["cases"][case.name], (
        f"Kubernetes {version}'s kube-scheduler decided {case.name} differently from its golden"
    )


@pytest.mark.parametrize("case", CASES, ids=NAMES)
def test_kubegpu_matches_the_real_scheduler(case: Case, real: dict[str, Verdict]) -> None:
    version = kube_version()
    ours, theirs = kubegpu_verdict(case), real[case.name]
    why = known(minor_of(version), NAMES).get(case.name)
    if why is None:
        assert ours == theirs
    else:
        # a listed difference: the verdict (bound, node, nomination) still agrees, the text differs
        assert (ours.scheduled, ours.node, ours.nominated) == (
            theirs.scheduled,
            theirs.node,
            theirs.nominated,
        )
        assert ours.message != theirs.message, (
            f"{case.name} now matches Kubernetes {version}: drop it ({why})"
        )


def test_every_case_was_run_against_the_real_scheduler(real: dict[str, Verdict]) -> None:
    assert sorted(real) == sorted(NAMES)
    assert any(v.scheduled for v in real.values()) and any(not v.scheduled for v in real.values())


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.json")), ids=lambda p: p.stem)
def test_recorded_golden_differs_from_kubegpu_only_where_known(path: Path) -> None:
    """The committed goldens (minors not built in this run included): the same cases, each release's named
    in the file, and kubegpu differing from it on exactly the known cases."""
    data = json.loads(path.read_text())
    assert data["version"] == path.stem
    assert sorted(data["cases"]) == sorted(NAMES), "cases.py changed: re-record with record_goldens"
    diffs = differences(data["cases"])
    expected = known(minor_of(data["version"]), NAMES)
    assert sorted(diffs) == sorted(expected), report(diffs)
