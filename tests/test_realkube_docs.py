"""docs/realkube.md's table of DRA cases per minor says what the committed goldens hold: the count per
minor and every ``dra-*`` case name recorded on it (tests/realkube/golden/<release>.json)."""

from __future__ import annotations

import json
import re

from tests.conftest import REPO

DOC = REPO / "docs" / "realkube.md"
GOLDEN = REPO / "tests" / "realkube" / "golden"


def _golden_dra(release: str) -> list[str]:
    data = json.loads((GOLDEN / f"{release}.json").read_text(encoding="utf-8"))
    cases = data.get("cases", data)
    return [k for k in cases if k.startswith("dra-")]


def test_the_dra_table_counts_and_names_the_recorded_cases() -> None:
    text = DOC.read_text(encoding="utf-8")
    rows = re.findall(r"^\| ([\d., ]+) \| (\d+)(?: each)? \| (.*) \|$", text, re.M)
    assert rows
    total = 0
    named: set[str] = set()
    for releases, count, cases in rows:
        named |= set(re.findall(r"`(dra-[a-z-]+)`", cases))
        for release in (r.strip() for r in releases.split(",")):
            recorded = _golden_dra(release)
            assert len(recorded) == int(count), (release, recorded)
            total += len(recorded)
    assert f"{total} DRA verdicts in all" in text
    recorded_anywhere = {c for f in GOLDEN.glob("*.json") for c in _golden_dra(f.stem)}
    assert named <= recorded_anywhere  # every full case name in the table is a recorded case
