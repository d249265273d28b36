"""A finding: what ``kubegpu inspect`` and ``diagnose`` report as wrong or risky (``explain.findings`` and the
``findings_*`` modules make them; this module is the record alone, so those modules need not import each
other)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubegpu.model.names import pitfall_name


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
    # namespace refused by its quota): the object the title names, and the title of several such findings
    # after their count. The one-line list shows them as one line (``finding_kinds``); not output.
    subject: str = ""  # "ns/name", or a namespace
    many: str = ""  # "ReplicaSets cannot create their pods: ResourceQuota exceeded"

    def to_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity, "layer": self.layer, "title": self.title, "objects": self.objects,
            "detail": self.detail, "commands": self.commands, "pitfall": pitfall_name(self.pitfall) or None,
        }  # fmt: skip
