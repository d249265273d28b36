"""Findings that differ only in the pod they name, as one kind: how ``diagnose``'s grouped view and the HTML
report list them on a large cluster (400 Pending 8-GPU pods are 400 "needs 8 GPUs on one node; the free
ones are scattered" findings, each naming every node that holds a free GPU: 873k objects at 5,000 nodes).

Owns: the grouping, and how a kind's heading reads. May not import: faces.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kubegpu.explain.findings import Finding

POD_MARK = "{pod}"  # where a finding's title named its pod
NAMED_SHOWN = 20  # names a kind's text shows (a view that filters reads every one)


@dataclass
class FindingKind:
    severity: str
    title: str  # the first finding's, its pod replaced by ``POD_MARK``
    first: Finding
    named: list[str] = field(default_factory=list)  # the pods the kind's findings name, else their objects
    members: list[Finding] = field(default_factory=list)  # the kind's findings, the first first

    def heading(self) -> tuple[str, str]:
        """(severity, title) to print: ``warning, 400 pods`` and ``the pod needs …`` for a kind of several
        pods, the finding's own title for one."""
        if POD_MARK not in self.title:
            return self.severity, self.title
        if len(self.named) == 1:
            return self.severity, self.first.title
        return f"{self.severity}, {len(self.named)} pods", self.title.replace(POD_MARK, "the pod")

    def shown(self) -> tuple[list[str], int]:
        """The first ``NAMED_SHOWN`` names, and how many more there are."""
        return self.named[:NAMED_SHOWN], max(len(self.named) - NAMED_SHOWN, 0)

    def alike(self) -> str:
        """The note above a kind's detail when it stands for several findings ("" for one)."""
        return f"{len(self.members)} findings alike; the first one's detail:" if len(self.members) > 1 else ""


def finding_kinds(findings: Iterable[Finding], *, same_title: bool = True) -> list[FindingKind]:
    """In first-seen order; each kind's pods (else objects) each once. ``same_title``: findings whose title
    names no pod are one kind per title too (a one-line list of what is wrong where); else each stays its
    own kind (a view that shows a kind's detail: findings of one title about different nodes or
    resources say different things)."""
    kinds: dict[tuple[str, str, int], FindingKind] = {}
    seen: dict[
        tuple[str, str, int], set[str]
    ] = {}  # each kind's names as a set: thousands of nodes share a kind
    for n, f in enumerate(findings):
        # exactly the names starting "pod/" ("0" follows "/"): a comparison per object, no call (873k
        # objects on 5,000 nodes)
        pods = [o for o in f.objects if "pod/" <= o < "pod0"]
        title = f.title
        for obj in pods:
            title = title.replace(obj[4:], POD_MARK)
        key = (f.severity, title, 0 if same_title or POD_MARK in title else n + 1)
        kind = kinds.get(key)
        if kind is None:
            kind = kinds[key] = FindingKind(f.severity, title, f)
            seen[key] = set()
        kind.members.append(f)
        listed = seen[key]
        new = [o for o in (pods or f.objects) if o not in listed]
        kind.named.extend(new)
        listed.update(new)
    return list(kinds.values())
