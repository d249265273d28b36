"""Record what each release's real kube-scheduler decides for every case in ``cases.py``.

    python -m tests.realkube.record_goldens 1.37 1.36 ...   # default: the newest supported minor
    python -m tests.realkube.record_goldens --all            # every supported minor (builds each; slow)
    python -m tests.realkube.record_goldens --only dra-,spread- 1.36  # only cases whose names start so
                                                             # (comma-separated); the rest of the golden is kept

Writes ``tests/realkube/golden/<version>.json`` (the release it came from is in the name and the file), so
the minors not built in CI still have their real messages in the repo. Then prints where kubegpu differs.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

from tests.realkube.cases import CASES
from tests.realkube.conftest import build, controlplane
from tests.realkube.harness import run_case
from tests.realkube.test_differential import GOLDEN, cases_for, differences, report


def record(version: str, only: str = "") -> int:
    """Record every case of the release (or only those whose names start with one of the comma-separated
    prefixes in ``only``, merged into the release's golden, whose other cases stay as recorded before) and
    report where kubegpu differs."""
    prefixes = tuple(p for p in only.split(",") if p)
    rel = build.release(version)
    build.build(rel)
    chosen = [
        (i, c)
        for i, c in enumerate(CASES)
        if c in cases_for(rel) and (not prefixes or c.name.startswith(prefixes))
    ]
    cp = controlplane.start(rel)
    try:
        verdicts = {c.name: run_case(cp, c, i) for i, c in chosen}
    finally:
        cp.stop()
    GOLDEN.mkdir(exist_ok=True)
    path = GOLDEN / f"{rel}.json"
    kept = json.loads(path.read_text())["cases"] if only and path.exists() else {}
    names = [c.name for c in cases_for(rel)]
    merged = {**kept, **{name: v.as_dict() for name, v in verdicts.items()}}
    out = {
        "version": rel,
        "recorded": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "how": "kube-apiserver + kube-scheduler built from the Go module proxy (tools/kube/build.py), default profile",
        "cases": {n: merged[n] for n in names if n in merged},
    }
    (GOLDEN / f"{rel}.json").write_text(json.dumps(out, indent=1, sort_keys=False) + "\n")
    diffs = differences(out["cases"], rel)
    print(report(diffs))
    print(f"Kubernetes {rel}: {len(verdicts)} cases recorded, kubegpu differs on {len(diffs)}")
    return len(diffs)


def main(argv: list[str]) -> int:
    """Exit 1 when kubegpu differs from any release recorded (the goldens are written all the same)."""
    only = ""
    if argv[:1] == ["--only"] and len(argv) > 1:
        only, argv = argv[1], argv[2:]
    versions = list(build.MINORS) if argv == ["--all"] else argv or [build.NEWEST]
    return 1 if sum(record(v, only) for v in versions) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
