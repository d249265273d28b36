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

from kubegpu.model import parse
from tests.conftest import scheduler_for
from tests.realkube.cases import CASES, Case
from tests.realkube.conftest import kube_version
from tests.realkube.harness import Verdict, run_case

GOLDEN = Path(__file__).resolve().parent / "golden"
NAMES = [c.name for c in CASES]


def minor_of(version: str) -> str:
    """``1.37.2`` → ``1.37``."""
    return ".".join(version.split(".")[:2])


def minor_number(version: str) -> int:
    """``1.37.2`` → 37."""
    return int(version.split(".")[1])


def reproduced(version: str) -> str:
    """The release whose rules kubegpu renders for a cluster of ``version``: its own minor, or for a release
    newer than the newest supported (a pre-release such as 1.38.0-beta.0 recorded to check ahead) the newest,
    as ``versions.choose`` does for such a cluster."""
    from kubegpu.scheduler.versions import BEHAVIOURS, NEWEST

    return version if minor_number(version) <= NEWEST else BEHAVIOURS[NEWEST].release


def cases_for(version: str, cases: list[Case] = CASES) -> list[Case]:
    """The cases the release's API server can hold (DRA's v1 objects from 1.34)."""
    return [c for c in cases if c.applies(minor_number(version))]


def kubegpu_verdict(case: Case, version: str) -> Verdict:
    """What kubegpu's core predicts for the case (default profile of that minor, as kube-scheduler ships).
    The pending pod joins the snapshot too when the case has DRA objects: its claim references live there."""
    dra = any(str(o.get("apiVersion", "")).startswith("resource.k8s.io/") for o in case.objects)
    s = scheduler_for(*case.objects, *((case.pod,) if dra else ()), kube_version=minor_of(version))
    result = s.schedule_one(parse.parse_pod(case.pod, "case"))
    return Verdict(result.scheduled, result.node or "", "" if result.scheduled else result.message,
                   result.nominated_node)  # fmt: skip


def golden(version: str, where: Path = GOLDEN) -> dict[str, Any]:
    path = where / f"{version}.json"
    if not path.exists():
        pytest.fail(f"no golden file for Kubernetes {version}: run `python -m tests.realkube.record_goldens`")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def differences(
    real: dict[str, dict[str, Any]], version: str, cases: list[Case] = CASES
) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """case → (kubegpu's verdict, the real one) for every case where they differ."""
    ours = {c.name: kubegpu_verdict(c, reproduced(version)).as_dict() for c in cases_for(version, cases)}
    return {n: (ours[n], real[n]) for n in ours if ours[n] != real.get(n)}


def report(diffs: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> str:
    return "\n".join(f"{n}:\n  kubegpu: {o['message'] or o}\n  real:    {r['message'] or r}"
                     for n, (o, r) in diffs.items())  # fmt: skip


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
