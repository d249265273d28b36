"""The GPU cases of ``gpu_cases.py`` (public reports: spread over GPU zones, a zonal volume, GFD label affinity,
taint effects, sidecar GPUs, pod-level resources, PDB-aware preemption, hostNetwork ports, an unbound claim):
kubegpu's verdict, rendered for each release, must equal what that release's real kube-scheduler decided
(``golden/gpu/<release>.json``, recorded by ``python -m tests.realkube.record_goldens --gpu <version>`` from the
binaries ``tools/kube/build.py`` builds), byte for byte. The recorded releases need no control plane; the newest
supported one is also run live on the session's control plane, as the differential suite does.

Known differences are listed in ``KNOWN`` (strict xfail: fixing one makes its test fail until it is removed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.realkube.conftest import kube_version
from tests.realkube.gpu_cases import GPU_CASES, GPU_INDEX
from tests.realkube.harness import Verdict, run_case
from tests.realkube.verdicts import GOLDEN, cases_for, kubegpu_verdict, minor_number, reproduced

GPU_GOLDEN = GOLDEN / "gpu"
NAMES = [c.name for c in GPU_CASES]
RECORDED = sorted(GPU_GOLDEN.glob("*.json"))

# (case, minor) → why kubegpu's verdict on the case's manifests differs from the real one: it comes from the API
# server's admission and defaulting of a pod kubegpu reads as a manifest (never admitted); a snapshot of the real
# cluster (`kubectl get -o json`) already carries what the API server did, and there kubegpu agrees.
# (none now: taint-effects-gpu differed until kubegpu added DefaultTolerationSeconds' tolerations to a manifest)
KNOWN: dict[tuple[str, int], str] = {}


def _golden(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    assert data["version"] == path.stem
    assert sorted(data["cases"]) == sorted(c.name for c in cases_for(data["version"], GPU_CASES)), (
        "gpu_cases.py changed: re-record with record_goldens --gpu"
    )
    return data


@pytest.mark.parametrize("case", GPU_CASES, ids=NAMES)
@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_kubegpu_equals_the_recorded_real_verdict(path: Path, case: Any) -> None:
    data = _golden(path)
    why = KNOWN.get((case.name, minor_number(data["version"])))
    ours = kubegpu_verdict(case, reproduced(data["version"])).as_dict()
    if why:  # strict: a known difference that is gone must leave KNOWN
        assert ours != data["cases"][case.name], f"{case.name} now agrees: remove it from KNOWN"
        pytest.xfail(why)
    assert ours == data["cases"][case.name], f"Kubernetes {data['version']} decided {case.name} otherwise"


def test_the_three_releases_of_the_round_are_recorded() -> None:
    assert {p.stem for p in RECORDED} >= {"1.30.14", "1.33.13", "1.37.2"}


@pytest.fixture(scope="module")
def real(control_plane: Any) -> dict[str, Verdict]:
    return {c.name: run_case(control_plane, c, i) for i, c in enumerate(GPU_CASES, GPU_INDEX)}


@pytest.mark.parametrize("case", GPU_CASES, ids=NAMES)
def test_the_real_scheduler_still_decides_as_recorded(case: Any, real: dict[str, Verdict]) -> None:
    version = kube_version()
    path = GPU_GOLDEN / f"{version}.json"
    if not path.exists():
        pytest.fail(f"no GPU golden for Kubernetes {version}: run record_goldens --gpu {version}")
    assert real[case.name].as_dict() == _golden(path)["cases"][case.name]
