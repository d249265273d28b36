"""A pre-release of the next minor, checked against the newest supported minor's rules
(``versions.CHECKED_AHEAD``, which the too-new warning of ``versions.choose`` quotes).

``golden_prerelease/<release>.json``, ``volumes/<release>.json`` and ``ahead/<release>.json`` are what the real
kube-scheduler and kube-apiserver of that pre-release decided for every base, storage and ahead case (the
last written for its source changes, ``cases.AHEAD_CASES``, and recorded on 1.37.2 as well): v1.38.0-beta.0,
built from k8s.io/kubernetes@v1.38.0-beta.0 off the Go module proxy by ``tools/kube/build.py 1.38.0-beta.0``
(GOTOOLCHAIN=go1.27.3: its go.mod names go 1.27.0) and recorded with ``python -m tests.realkube.record_goldens
[--volumes] --out … 1.38.0-beta.0`` and ``record_goldens --ahead 1.37 1.38.0-beta.0`` on 2026-12-05. They sit outside ``golden/`` so that no test takes them for a supported
release; kubegpu is compared with them rendering the newest supported minor, as it does for such a cluster.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubegpu.scheduler.versions import BEHAVIOURS, CHECKED_AHEAD, NEWEST
from tests.realkube.cases import AHEAD_CASES
from tests.realkube.verdicts import cases_for, differences, reproduced
from tests.realkube.volume_cases import VOLUME_CASES

PRERELEASE = Path(__file__).resolve().parent / "golden_prerelease"


def _cases(path: Path, release: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    assert data["version"] == release
    cases: dict[str, Any] = data["cases"]
    return cases


@pytest.mark.parametrize("minor", sorted(CHECKED_AHEAD))
def test_the_pre_release_checked_ahead_matches_the_newest_rules_on_every_recorded_case(minor: int) -> None:
    check = CHECKED_AHEAD[minor]
    assert minor > NEWEST and check.release.startswith(f"1.{minor}.0-")
    assert reproduced(check.release).startswith(f"1.{NEWEST}.")
    base = _cases(PRERELEASE / f"{check.release}.json", check.release)
    volumes = _cases(PRERELEASE / "volumes" / f"{check.release}.json", check.release)
    assert sorted(base) == sorted(c.name for c in cases_for(check.release)), "re-record with --out"
    assert sorted(volumes) == sorted(c.name for c in cases_for(check.release, VOLUME_CASES))
    ahead = _cases(PRERELEASE / "ahead" / f"{check.release}.json", check.release)
    assert sorted(ahead) == sorted(c.name for c in AHEAD_CASES)
    assert len(base) + len(volumes) + len(ahead) == check.cases
    differed = {
        **differences(base, check.release),
        **differences(volumes, check.release, VOLUME_CASES),
        **differences(ahead, check.release, AHEAD_CASES),
    }
    assert sorted(differed) == sorted(case for case, _ in check.differed)


def test_the_ahead_cases_are_what_the_newest_supported_release_does() -> None:
    """Each case written for a pre-release's source change was recorded on the newest supported release too
    (golden_prerelease/ahead/1.37.2.json): kubegpu equals it there, so the difference is the new release's.
    spread-empty-selector: kubernetes/kubernetes#141339 (labelSelector {} spread nothing since PR #116607)."""
    newest = BEHAVIOURS[NEWEST].release
    recorded = _cases(PRERELEASE / "ahead" / f"{newest}.json", newest)
    assert sorted(recorded) == sorted(c.name for c in AHEAD_CASES)
    assert not differences(recorded, newest, AHEAD_CASES)
