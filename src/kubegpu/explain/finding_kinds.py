"""Findings that differ only in the pod they name, as one kind: how ``diagnose``'s grouped view and the HTML
report list them on a large cluster (400 Pending 8-GPU pods are 400 "needs 8 GPUs on one node; the free
ones are scattered" findings, each naming every node that holds a free GPU: 873k objects at 5,000 nodes).

Findings one check makes per object whose titles differ only in that object (167 ReplicaSets, each refused
by its namespace's quota) are one kind too, in the one-line list: by what made them (``Finding.check``,
``subject``, ``many``), not by their titles' text.

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
    title: str  # the first finding's, its pod replaced by ``POD_MARK``; a kind of subjects: their ``many``
    first: Finding
    named: list[str] = field(default_factory=list)  # the pods the kind's findings name, else their objects;
    # a kind of subjects: its findings' subjects
    members: list[Finding] = field(default_factory=list)  # the kind's findings, the first first
    subjects: bool = False  # one check's findings about several objects (``Finding.subject``)

    def heading(self) -> tuple[str, str]:
        """(severity, title) to print: ``warning, 400 pods`` and ``the pod needs …`` for a kind of several
        pods, ``167 ReplicaSets cannot create their pods: …`` for one of several subjects, the finding's own
        title for one."""
        if self.subjects:
            return self.severity, f"{len(self.named)} {self.title}"
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
    resources say different things). ``same_title`` also makes one kind of a check's findings alike but for
    their subject (same severity, check and ``many``); one that names a single subject reads as before."""
    kinds: dict[tuple[str, str, int | str], FindingKind] = {}
    # each kind's names as a set: thousands of nodes share a kind
    seen: dict[tuple[str, str, int | str], set[str]] = {}
    for n, f in enumerate(findings):
        by_subject = same_title and bool(f.subject and f.many)
        if by_subject:
            key: tuple[str, str, int | str] = (f.severity, f.many, f.check)  # (a str: never a title's key)
            title, names = f.many, [f.subject]
        else:
            pods = _pods(f.objects)
            title = f.title
            for obj in pods:
                title = title.replace(obj[4:], POD_MARK)
            key = (f.severity, title, 0 if same_title or POD_MARK in title else n + 1)
            names = pods or f.objects
        kind = kinds.get(key)
        if kind is None:
            kind = kinds[key] = FindingKind(f.severity, title, f, subjects=by_subject)
            seen[key] = set()
        kind.members.append(f)
        listed = seen[key]
        new = [o for o in names if o not in listed]
        kind.named.extend(new)
        listed.update(new)
    for kind in kinds.values():
        if kind.subjects and len(kind.named) == 1:  # one subject: its own title and objects, as any finding
            kind.subjects, kind.title = False, kind.first.title
            objects = list(dict.fromkeys(o for f in kind.members for o in f.objects))
            kind.named = _pods(objects) or objects
    return list(kinds.values())


def _pods(objects: list[str]) -> list[str]:
    """Exactly the names starting "pod/" ("0" follows "/"): a comparison per object, no call per object (873k
    objects on 5,000 nodes)."""
    return [o for o in objects if "pod/" <= o < "pod0"]
