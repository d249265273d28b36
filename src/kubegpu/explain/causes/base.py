"""What a cause's hooks receive and return: the engine and pod under explanation, and the advice."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubegpu.explain.engine import Engine
from kubegpu.model.objects import Pod


@dataclass(frozen=True)
class Context:
    engine: Engine
    pod: Pod
    # evidence lines already made for this pod, by what they depend on: thousands of nodes in a
    # pool give the same lines (same free count, same labels), so each distinct line is made once
    memo: dict[tuple[object, ...], list[str]] = field(default_factory=dict, compare=False, repr=False)

    def cmd(self, rest: str) -> str:
        """A kubectl command in the pod's namespace."""
        return f"kubectl -n {self.pod.namespace} {rest}"


@dataclass(frozen=True)
class Advice:
    fix: str = ""
    pitfall: str = ""
    commands: list[str] = field(default_factory=list)


NO_ADVICE = Advice()

# evidence(ctx, reason, node index) -> lines;  advice(ctx, reason, node names) -> Advice
Evidence = Callable[[Context, Any, int], list[str]]
AdviceHook = Callable[[Context, Any, list[str]], Advice]
# evidence_many(ctx, reason, node indices) -> lines per node, equal to ``evidence`` on each
EvidenceMany = Callable[[Context, Any, list[int]], list[list[str]]]


@dataclass(frozen=True)
class Hooks:
    """One reason kind's hooks; either may be absent (no evidence lines / no advice). ``evidence_many``
    (optional) answers for many nodes at once, as ``evidence`` would on each: for kinds that reject
    thousands of nodes."""

    evidence: Evidence | None = None
    advice: AdviceHook | None = None
    evidence_many: EvidenceMany | None = None
