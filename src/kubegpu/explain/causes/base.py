"""What a cause's hooks receive and return: the engine and pod under explanation, and the advice."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from kubegpu.explain.engine import Engine
from kubegpu.explain.kubectl import kubectl
from kubegpu.model.objects import Node, Pod
from kubegpu.model.resources import is_extended

T = TypeVar("T")


@dataclass(frozen=True)
class Context:
    engine: Engine
    pod: Pod
    # what a cause already worked out for this pod, by what it depends on (``once``): thousands of nodes in
    # a pool give the same lines (same free count, same labels), and cluster-wide facts (the pods a term
    # selects, the slices in reach) are the same for every node, so each is made once per pod
    memo: dict[tuple[object, ...], object] = field(default_factory=dict, compare=False, repr=False)

    def once(self, key: tuple[object, ...], make: Callable[[], T]) -> T:
        """``make()``, computed on the first call for ``key`` and kept for this pod. The key's first item
        names the function whose result it is, so two causes never share a slot."""
        if key in self.memo:
            return cast(T, self.memo[key])
        made = self.memo[key] = make()
        return made

    def lacking(self, nodes: Iterable[Node]) -> str:
        """The pod's extended resources (GPUs) that none of ``nodes`` offers, or "" when one offers them all:
        a place no pod asking for them can ever land (a zone of GPU-less nodes, kubernetes/kubernetes#129762)."""
        wanted = sorted(r for r, v in self.pod.requests.items() if v and is_extended(r))
        if not wanted or any(all(n.allocatable.get(r, 0) > 0 for r in wanted) for n in nodes):
            return ""
        return ", ".join(wanted)

    def cmd(self, rest: str) -> str:
        """A kubectl command in the pod's namespace."""
        return kubectl(self.pod.namespace, rest)


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
# advice for one reason text's nodes when several reasons of the kind read alike (1.34+ words every untolerated
# taint the same): (reason, its nodes) per reason, most nodes first
AdviceMany = Callable[[Context, list[tuple[Any, list[str]]]], Advice]
PodPart = Callable[[Pod], Hashable]


def nothing_of_the_pod(pod: Pod) -> Hashable:
    """``Hooks.pod_part`` of a kind whose lines read only the reason's values and the node."""
    return ()


@dataclass(frozen=True)
class Hooks:
    """One reason kind's hooks; either may be absent (no evidence lines / no advice). ``evidence_many``
    (optional) answers for many nodes at once, as ``evidence`` would on each: for kinds that reject
    thousands of nodes."""

    evidence: Evidence | None = None
    advice: AdviceHook | None = None
    evidence_many: EvidenceMany | None = None
    advice_many: AdviceMany | None = None
    # what of the pod a node's evidence lines depend on beyond the reason's values and the node's state:
    # pods giving the same value share those lines (``explain.shared_evidence``); None: each pod's own
    pod_part: PodPart | None = None
