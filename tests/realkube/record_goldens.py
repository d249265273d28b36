"""Record what each release's real kube-scheduler decides for every case in ``cases.py``.

    python -m tests.realkube.record_goldens 1.37 1.36 ...   # default: the newest supported minor
    python -m tests.realkube.record_goldens --all            # every supported minor (builds each; slow)
    python -m tests.realkube.record_goldens --only dra-,spread- 1.36  # only cases whose names start so
                                                             # (comma-separated); the rest of the golden is kept
    python -m tests.realkube.record_goldens --volumes 1.35   # the storage cases (golden/volumes/)
    python -m tests.realkube.record_goldens --gpu 1.33       # the GPU cases of gpu_cases.py (golden/gpu/)
    python -m tests.realkube.record_goldens --out /tmp/g 1.38.0-beta.0  # a pre-release, into a scratch dir
    python -m tests.realkube.record_goldens --ahead 1.37 1.38.0-beta.0  # cases.AHEAD_CASES (golden_prerelease/)

A release newer than the newest supported minor (a pre-release built to check ahead) is compared with the
newest minor's rules, the ones kubegpu reproduces for such a cluster (``versions.choose``); its golden
belongs outside ``golden/`` (``--out``), whose files the tests take as supported releases.

Writes ``tests/realkube/golden/<version>.json`` (the release it came from is in the name and the file), so
the minors not built in CI still have their real messages in the repo. Then prints where kubegpu differs.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from tests.realkube.cases import AHEAD_CASES, CASES, Case
from tests.realkube.conftest import build, controlplane
from tests.realkube.gpu_cases import GPU_CASES, GPU_INDEX
from tests.realkube.harness import run_case
from tests.realkube.verdicts import GOLDEN, cases_for, differences, report, reproduced
from tests.realkube.volume_cases import VOLUME_CASES


def record(
    version: str, only: str = "", cases: list[Case] = CASES, where: Path = GOLDEN, first_index: int = 0
) -> int:
    """Record every case of the release (or only those whose names start with one of the comma-separated
    prefixes in ``only``, merged into the release's golden, whose other cases stay as recorded before) and
    report where kubegpu differs."""
    prefixes = tuple(p for p in only.split(",") if p)
    rel = build.release(version)
    build.build(rel)
    applicable = cases_for(rel, cases)
    chosen = [
        (i, c)
        for i, c in enumerate(cases, first_index)
        if c in applicable and (not prefixes or c.name.startswith(prefixes))
    ]
    cp = controlplane.start(rel)
    try:
        verdicts = {c.name: run_case(cp, c, i) for i, c in chosen}
    finally:
        cp.stop()
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{rel}.json"
    kept = json.loads(path.read_text())["cases"] if only and path.exists() else {}
    merged = {**kept, **{name: v.as_dict() for name, v in verdicts.items()}}
    out = {
        "version": rel,
        "recorded": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "how": "kube-apiserver + kube-scheduler built from the Go module proxy (tools/kube/build.py), default profile",
        "cases": {c.name: merged[c.name] for c in applicable if c.name in merged},
    }
    path.write_text(json.dumps(out, indent=1, sort_keys=False) + "\n")
    diffs = differences(out["cases"], rel, cases)
    print(report(diffs))
    print(
        f"Kubernetes {rel}: {len(verdicts)} cases recorded into {path}, kubegpu ({reproduced(rel)} rules) differs on {len(diffs)}"
    )
    return len(diffs)


def main(argv: list[str]) -> int:
    """Exit 1 when kubegpu differs from any release recorded (the goldens are written all the same)."""
    only = ""
    if "--only" in argv:
        at = argv.index("--only")
        only, argv = argv[at + 1], argv[:at] + argv[at + 2 :]
    volumes, ahead, gpu = "--volumes" in argv, "--ahead" in argv, "--gpu" in argv
    argv = [a for a in argv if a not in ("--volumes", "--ahead", "--gpu")]
    out = GOLDEN.parent / "golden_prerelease" if ahead else GOLDEN
    if "--out" in argv:
        at = argv.index("--out")
        out, argv = Path(argv[at + 1]), argv[:at] + argv[at + 2 :]
    versions = list(build.MINORS) if argv == ["--all"] else argv or [build.NEWEST]
    if ahead:  # differences from the newest rules are what is looked for: reported, not an error
        for v in versions:
            record(v, only, AHEAD_CASES, out / "ahead")
        return 0
    if gpu:
        return 1 if sum(record(v, only, GPU_CASES, out / "gpu", GPU_INDEX) for v in versions) else 0
    if volumes:
        return 1 if sum(record(v, only, VOLUME_CASES, out / "volumes") for v in versions) else 0
    return 1 if sum(record(v, only, where=out) for v in versions) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
