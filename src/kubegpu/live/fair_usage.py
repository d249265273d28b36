"""Decayed queue usage in the live scheduler: kept across admission cycles, persisted to GpuQueue status.

Each admission cycle runs a fresh ``batch.session.BatchSession``; on its own the session would seed a
queue's decayed usage (``batch.fair_share``) from the GpuQueue's recorded status every time and forget
what it advanced. This module keeps each queue's consumed usage and the time it is valid for from one
cycle to the next, and writes it the way Kueue's admission fair sharing records it on a LocalQueue:
``status.fairSharing.admissionFairSharingStatus.{consumedResources, lastUpdate}``, a merge patch on the
``status`` subresource, for a queue whose status is ``usageSamplingInterval`` old (Kueue's sampling
period). Writing is the leader's job only; a replica that becomes leader (start, takeover) drops what
it kept and seeds from the status its predecessor wrote.

Quantities are written in milli-units (``6828m``: decayed usage is fractional) and ``lastUpdate`` in
whole seconds, the value brought to exactly that second, so a reader gets back what was kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubegpu.batch.fair_share import ConsumedUsage, decay_of
from kubegpu.batch.objects import Cohort, PodGroup, Queue
from kubegpu.batch.quota import QuotaBook
from kubegpu.batch.workloads import workloads
from kubegpu.kube.live import listed_path
from kubegpu.model.objects import Pod
from kubegpu.model.podgroup import rfc3339
from kubegpu.model.quantity import format_milli

GPUQUEUES = listed_path("GpuQueue")


def status_path(queue: str) -> str:
    return f"{GPUQUEUES}/{queue}/status"


def status_patch(consumed: Mapping[str, float], at: datetime) -> dict[str, Any]:
    """The merge patch recording ``consumed`` (milli-units) as of ``at``."""
    resources = {r: format_milli(r, round(v)) for r, v in sorted(consumed.items())}
    afs = {"consumedResources": resources, "lastUpdate": rfc3339(at)}
    return {"status": {"fairSharing": {"admissionFairSharingStatus": afs}}}


class UsageHistory:
    """Queue → (consumed milli-units, the time they are valid for), and when each was last sampled for
    writing (a failed write is retried at the next interval, not at every loop)."""

    def __init__(self) -> None:
        self.kept: dict[str, tuple[dict[str, float], datetime]] = {}
        self.sampled: dict[str, datetime] = {}

    def reset(self) -> None:
        """Forget everything: the next reader seeds from the GpuQueues' status (a new leader)."""
        self.kept.clear()
        self.sampled.clear()

    def keep(self, usage: ConsumedUsage) -> None:
        for name in usage.decay:
            self.kept[name] = (dict(usage.consumed[name]), usage.updated[name])

    def due(self, queues: Mapping[str, Queue], cohorts: Mapping[str, Cohort], now: datetime) -> list[str]:
        """Decayed queues whose recorded status is a sampling interval old (or missing)."""
        out = []
        for name, q in sorted(queues.items()):
            decay = decay_of(q, cohorts)
            if decay is None:
                continue
            last = max((t for t in (q.consumed_at, self.sampled.get(name)) if t is not None), default=None)
            if last is None or (now - last).total_seconds() >= decay.sampling_s:
                out.append(name)
        return out

    def sample(
        self,
        queues: Mapping[str, Queue],
        cohorts: Mapping[str, Cohort],
        groups: Mapping[str, PodGroup],
        running: list[Pod],
        now: datetime,
    ) -> ConsumedUsage:
        """Every decayed queue brought to ``now`` (whole seconds) with what ``running`` holds; kept."""
        book = QuotaBook(queues, cohorts).charge_admitted(workloads(running, groups))
        at = now.replace(microsecond=0)
        usage = ConsumedUsage(queues, cohorts, book.usage, at, self.kept)
        self.keep(usage)
        for name in usage.decay:
            self.sampled[name] = at
        return usage
