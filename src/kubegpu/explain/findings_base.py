"""A finding: what ``kubegpu inspect`` and ``diagnose`` report as wrong or risky (``explain.findings`` and the
``findings_*`` modules make them; this module is the record alone, so those modules need not import each
other)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from kubegpu.model.names import pitfall_name

POD_SUBJECT: Final = "pod/"  # a ``Finding.subject`` that is a pod: "pod/ns/name", as in ``Finding.objects``
POD_MARK: Final = "{pod}"  # where a pod finding's title template names its pod (``naming_pod``)


def naming_pod(template: str, key: str) -> tuple[str, str, str]:
    """(title, subject, many) of a finding about one pod whose title names it where ``template`` says
    ``POD_MARK``: the title with the pod's ``ns/name`` there, the pod as ``Finding.subject``, and ``many`` with
    "the pod" there (how several such findings read after their count: "warning, 12 pods: the pod needs 8
    nvidia.com/gpu on one node; …")."""
    return template.replace(POD_MARK, key), f"{POD_SUBJECT}{key}", template.replace(POD_MARK, "the pod")


@dataclass
class Finding:
    severity: str  # critical | warning | info (inspect exits 2 | 1 | 0 on the worst)
    layer: str  # driver/device-plugin | node | scheduling | quota | isolation | workload
    title: str
    objects: list[str]
    detail: str
    requirement: str
    commands: list[str] = field(default_factory=list)
    pitfall: str = ""  # "R17.n" when the finding is one of the six pitfalls of R17, else ""
    # which check made it, where another view needs to know (``findings_bound.BOUND``); not output
    check: str = ""
    # Where one check makes a finding per object whose titles differ only in that object (a ReplicaSet per
    # namespace refused by its quota, a Pending pod whose GPUs are scattered): the object the title names, and
    # the title of several such findings after their count. ``finding_kinds`` groups by these, never by the
    # titles' text: a check's findings about several objects are one line in the one-line list, and those about
    # several pods (``POD_SUBJECT``), alike but for their pod, one kind in every view. Not output.
    subject: str = ""  # "ns/name", a namespace, or "pod/ns/name"
    many: str = (
        ""  # "ReplicaSets cannot create their pods: ResourceQuota exceeded"; "the pod needs …" for pods
    )

    @property
    def about_pod(self) -> bool:
        """One of a check's findings alike but for the pod they name (``naming_pod``)."""
        return self.subject.startswith(POD_SUBJECT) and bool(self.many)

    def to_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity, "layer": self.layer, "title": self.title, "objects": self.objects,
            "detail": self.detail, "commands": self.commands, "pitfall": pitfall_name(self.pitfall) or None,
        }  # fmt: skip
