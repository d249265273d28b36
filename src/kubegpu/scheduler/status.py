"""Status codes and statuses of plugin calls (mirrors kube-scheduler 1.34 ``framework.Code`` / ``Status``).

A status is a value: the code says what the framework does next, the reasons are structured values
(``scheduler.reasons``) that ``render`` turns into the exact strings of the ``FailedScheduling``
message, and ``plugin`` names who said it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kubegpu.scheduler.reasons import DEFAULT_VERSION, Reason, render_all


class Code(enum.IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2  # preemption may help: removing pods could make the node fit
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3  # preemption cannot help (taint, affinity, request > allocatable)
    WAIT = 4
    SKIP = 5
    PENDING = 6


@dataclass(frozen=True, slots=True)
class Status:
    code: Code
    reasons: tuple[Reason, ...] = ()
    plugin: str = ""

    @property
    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def is_rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def texts(self, version: str = DEFAULT_VERSION) -> tuple[str, ...]:
        """Each reason as kube-scheduler ``version`` prints it."""
        return render_all(self.reasons, version)

    def message(self, version: str = DEFAULT_VERSION) -> str:
        """Upstream ``Status.Message()``: the reasons joined by ``", "``."""
        return ", ".join(self.texts(version))

    def with_plugin(self, plugin: str) -> Status:
        return Status(self.code, self.reasons, plugin)


SUCCESS = Status(Code.SUCCESS)
SKIP = Status(Code.SKIP)


def unschedulable(*reasons: Reason) -> Status:
    return Status(Code.UNSCHEDULABLE, reasons)


def unresolvable(*reasons: Reason) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)
