"""Findings that differ only in the pod they name, as one kind: how ``diagnose``'s grouped view and the HTML
report list them on a large cluster (400 Pending 8-GPU pods are 400 "needs 8 GPUs on one node; the free
ones are scattered" findings, each naming every node that holds a free GPU: 873k objects at 5,000 nodes).

Findings one check makes per object whose titles differ only in that object (167 ReplicaSets, each refused
by its namespace's quota) are one kind too, in the one-line list. Both are known by what made them
(``Finding.check``, ``subject``, ``many``), never by their titles' text; a finding that names no subject is
one kind per title in the one-line list, its own kind elsewhere.

Owns: the grouping, and how a kind's heading reads. May not import: faces.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kubegpu.explain.findings import Finding

NAMED_SHOWN = 20  # names a kind's text shows (a view that filters reads every one)


@dataclass
class FindingKind:
    severity: str
    title: str  # the first finding's; a kind of several subjects or pods: their ``many``
    first: Finding
    named: list[str] = field(default_factory=list)  # the pods the kind's findings name, else their objects;
    # a kind of subjects or pods: its findings' subjects
    members: list[Finding] = field(default_factory=list)  # the kind's findings, the first first
    subjects: bool = False  # one check's findings about several objects (``Finding.subject``)
    pods: bool = False  # one check's findings alike but for their pod, about several (``Finding.about_pod``)

    def heading(self) -> tuple[str, str]:
        """(severity, title) to print: ``warning, 400 pods`` and ``the pod needs …`` for a kind of several
        pods, ``167 ReplicaSets cannot create their pods: …`` for one of several subjects, the finding's own
        title for one."""
        if self.subjects:
            return self.severity, f"{len(self.named)} {self.title}"
        if self.pods and len(self.named) > 1:
            return f"{self.severity}, {len(self.named)} pods", self.title
        return self.severity, self.title

    def shown(self) -> tuple[list[str], int]:
        """The first ``NAMED_SHOWN`` names, and how many more there are."""
        return self.named[:NAMED_SHOWN], max(len(self.named) - NAMED_SHOWN, 0)

    def alike(self) -> str:
        """The note above a kind's detail when it stands for several findings ("" for one)."""
        return f"{len(self.members)} findings alike; the first one's detail:" if len(self.members) > 1 else ""


def finding_kinds(findings: Iterable[Finding], *, same_title: bool = True) -> list[FindingKind]:
    """In first-seen order; each kind's pods (else objects) each once. A check's findings alike but for their
    pod (``Finding.about_pod``: same severity, check and ``many``) are one kind in every view. ``same_title``:
    findings that name no subject are one kind per title too (a one-line list of what is wrong where), and a
    check's findings alike but for their subject one kind (same severity, check and ``many``); else each
    stays its own kind (a view that shows a kind's detail: findings of one title about different nodes or
    resources say different things). A kind that names a single subject or pod reads as its finding."""
    kinds: dict[tuple[str, str, int | str], FindingKind] = {}
    # each kind's names as a set: thousands of nodes share a kind
    seen: dict[tuple[str, str, int | str], set[str]] = {}
    for n, f in enumerate(findings):
        pods = f.about_pod
        by_subject = not pods and same_title and bool(f.subject and f.many)
        if pods or by_subject:
            key: tuple[str, str, int | str] = (f.severity, f.many, f.check)  # (a str: never a title's key)
            title, names = f.many, [f.subject]
        else:
            key = (f.severity, f.title, 0 if same_title else n + 1)
            title, names = f.title, _pods(f.objects) or f.objects
        kind = kinds.get(key)
        if kind is None:
            kind = kinds[key] = FindingKind(f.severity, title, f, subjects=by_subject, pods=pods)
            seen[key] = set()
        kind.members.append(f)
        listed = seen[key]
        new = [o for o in names if o not in listed]
        kind.named.extend(new)
        listed.update(new)
    for kind in kinds.values():
        if (kind.subjects or kind.pods) and len(kind.named) == 1:  # one subject or pod: as any finding
            # (a kind of one pod that stands for several findings says how many, as a title's kind does)
            kind.subjects, kind.pods, kind.title = False, False, kind.first.title
            objects = list(dict.fromkeys(o for f in kind.members for o in f.objects))
            kind.named = _pods(objects) or objects
    return list(kinds.values())


def _pods(objects: list[str]) -> list[str]:
    """Exactly the names starting "pod/" ("0" follows "/"): a comparison per object, no call per object (873k
    objects on 5,000 nodes)."""
    return [o for o in objects if "pod/" <= o < "pod0"]
