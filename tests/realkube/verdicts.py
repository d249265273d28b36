"""kubegpu's verdict on a differential case for a release, the recorded goldens of the real kube-scheduler
and where the two differ; shared by the differential tests and ``record_goldens``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubegpu.model import parse
from tests.conftest import scheduler_for
from tests.realkube.cases import CASES, Case
from tests.realkube.harness import Verdict

GOLDEN = Path(__file__).resolve().parent / "golden"


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
