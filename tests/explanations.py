"""One Pending pod explained against a few built objects, and one reason's group of that explanation: for
the tests of the explainer's advice (test_explain_causes.py) and of diagnose on unusual cluster shapes
(test_diagnose_shapes.py)."""

from __future__ import annotations

from typing import Any

from kubegpu.explain.engine import Engine
from kubegpu.explain.explanation import Explanation, ReasonGroup
from kubegpu.explain.pending import explain_pod
from kubegpu.model.snapshot import build_snapshot


def explain(pod: Any, *objs: Any) -> Explanation:
    snap = build_snapshot([("t", o) for o in (*objs, pod.obj())])
    assert not snap.errors
    found = snap.pod(f"default/{pod.obj()['metadata']['name']}")
    assert found is not None
    return explain_pod(Engine(snap), found)


def group(exp: Explanation, reason: str) -> ReasonGroup:
    return next(g for g in exp.groups if g.reason == reason)
