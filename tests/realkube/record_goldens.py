"""Record what each release's real kube-scheduler decides for every case in ``cases.py``.

    python -m tests.realkube.record_goldens 1.37 1.36 ...   # default: the newest supported minor
    python -m tests.realkube.record_goldens --all            # every supported minor (builds each; slow)
    python -m tests.realkube.record_goldens 1.37 --only a,b   # only cases a and b, merged into the golden

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
from tests.realkube.test_differential import GOLDEN, differences, report


def record(version: str, only: set[str] | None = None) -> int:
    """Record every case (or the ``only`` ones, merged into the release's golden, whose other cases stay as
    recorded before) and report where kubegpu differs."""
    rel = build.release(version)
    build.build(rel)
    path = GOLDEN / f"{rel}.json"
    earlier = json.loads(path.read_text())["cases"] if only and path.exists() else {}
    cp = controlplane.start(rel)
    try:
        verdicts = {
            c.name: run_case(cp, c, i).as_dict() for i, c in enumerate(CASES) if not only or c.name in only
        }
    finally:
        cp.stop()
    GOLDEN.mkdir(exist_ok=True)
    out = {
        "version": rel,
        "recorded": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "how": "kube-apiserver + kube-scheduler built from the Go module proxy (tools/kube/build.py), default profile",
        "cases": {c.name: verdicts.get(c.name) or earlier[c.name] for c in CASES},
    }
    path.write_text(json.dumps(out, indent=1, sort_keys=False) + "\n")
    diffs = differences(out["cases"], rel)
    print(report(diffs))
    print(f"Kubernetes {rel}: {len(CASES)} cases recorded, kubegpu differs on {len(diffs)}")
    return len(diffs)


def main(argv: list[str]) -> int:
    """Exit 1 when kubegpu differs from any release recorded (the goldens are written all the same)."""
    only = None
    if "--only" in argv:
        at = argv.index("--only")
        only = set(argv[at + 1].split(","))
        argv = argv[:at] + argv[at + 2 :]
    versions = list(build.MINORS) if argv == ["--all"] else argv or [build.NEWEST]
    return 1 if sum(record(v, only) for v in versions) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
