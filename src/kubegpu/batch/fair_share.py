"""Decayed historical usage for the fair share between queues (opt-in; R14.2).

Without it the DRF share of a queue is computed from what it holds *now*. With it the share is computed
from its *consumed* usage: an exponentially decayed average of what it held over time, in the shape of
Kueue's admission fair sharing (KEP-4136: the ``admissionFairSharing`` configuration's
``usageHalfLifeTime`` and ``usageSamplingInterval``, the LocalQueue's
``status.fairSharing.admissionFairSharingStatus.consumedResources`` and ``lastUpdate``). Slurm's
``PriorityDecayHalfLife`` decays accumulated usage with the same kernel, so it orders queues the same.

Configuration: a ``GpuCohort``'s ``spec.admissionFairSharing`` applies to every queue in its subtree; with
settings on several cohorts of one path, the topmost wins (Kueue uses the higher AdmissionScope).

Advancing a queue from t0 to t1 while it held usage u (usage only changes at events, so u is constant
over the span)::

    consumed(t1) = consumed(t0) · d + u · (1 − d),   d = 0.5 ** ((t1 − t0) / usageHalfLifeTime)

Kueue updates every ``usageSamplingInterval`` S with ``(1 − A) · previous + A · current``,
``A = 1 − 0.5 ** (S / H)``; for usage constant over a span both give the same value at every sample
point; here the span is the exact time between events (the simulator's clock in a replay). Entry
penalty (Kueue ≥ 0.13): an admitted workload adds ``A · request`` at once, so admissions in one instant
are not free. Worked example: H = 1 h, a queue consumed 8 GPUs at 10:00 and holds none since; another
consumed 0 and holds 4: at 11:00 they read 8·½ = 4 and 4·½ = 2, at 12:00 8·¼ = 2 and 4·¾ = 3.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from kubegpu.batch.objects import Cohort, Queue


@dataclass(frozen=True)
class Decay:
    half_life_s: float
    sampling_s: float

    def kept(self, seconds: float) -> float:
        """The fraction of consumed usage still counted after ``seconds``."""
        return float(0.5 ** (max(seconds, 0.0) / self.half_life_s))

    @property
    def penalty(self) -> float:
        """Kueue's ``A``: the weight of one sampling interval's usage, charged at admission."""
        return 1.0 - float(0.5 ** (self.sampling_s / self.half_life_s))


def decay_of(queue: Queue, cohorts: Mapping[str, Cohort]) -> Decay | None:
    """The topmost setting on the path from the queue's cohort to its root cohort, if any."""
    found: Decay | None = None
    name, seen = queue.cohort, set()
    while name in cohorts and name not in seen:
        seen.add(name)
        c = cohorts[name]
        if c.usage_half_life_s is not None:
            found = Decay(c.usage_half_life_s, c.usage_sampling_s)
        name = c.parent
    return found


History = Mapping[str, tuple[Mapping[str, float], datetime]]  # queue → (consumed milli-units, as of)


class ConsumedUsage:
    """Each decayed queue's consumed usage (milli-units per resource), kept up to date lazily.

    ``history`` is what a caller kept from an earlier instance (the live scheduler's previous admission
    cycle); for a queue it wins over the queue's recorded status unless the status is newer."""

    def __init__(
        self,
        queues: Mapping[str, Queue],
        cohorts: Mapping[str, Cohort],
        usage: Mapping[str, Mapping[str, int]],
        now: datetime,
        history: History | None = None,
    ) -> None:
        self.decay = {q.name: d for q in queues.values() if (d := decay_of(q, cohorts)) is not None}
        self.consumed: dict[str, dict[str, float]] = {}
        self.updated: dict[str, datetime] = {}
        for name in self.decay:
            q = queues[name]
            kept = (history or {}).get(name)
            if kept is not None and (q.consumed_at is None or kept[1] >= q.consumed_at):
                self.consumed[name] = dict(kept[0])
                self.updated[name] = kept[1]
            elif q.consumed is None or q.consumed_at is None:
                # no history recorded: start from what the queue holds (Kueue captures current usage)
                self.consumed[name] = {r: float(v) for r, v in usage[name].items()}
                self.updated[name] = now
            else:
                self.consumed[name] = {r: float(v) for r, v in q.consumed.items()}
                self.updated[name] = q.consumed_at
        self.advance(now, usage)

    def advance(self, now: datetime, usage: Mapping[str, Mapping[str, int]]) -> None:
        """Bring every queue to ``now``, ``usage`` having been held since its last update."""
        for name, decay in self.decay.items():
            seconds = (now - self.updated[name]).total_seconds()
            if seconds <= 0:
                continue
            kept = decay.kept(seconds)
            held = usage[name]
            old = self.consumed[name]
            self.consumed[name] = {
                r: old.get(r, 0.0) * kept + held.get(r, 0) * (1.0 - kept) for r in set(old) | set(held)
            }
            self.updated[name] = now

    def admitted(self, queue: str, request: Mapping[str, int], sign: int = 1) -> None:
        """Kueue's entry penalty: ``A · request`` counts at once. ``sign=-1`` withdraws it for an
        admission that does not stand yet (the live scheduler's preempting workload, charged again when
        it is admitted into the room its victims left)."""
        decay = self.decay.get(queue)
        if decay is None:
            return
        consumed = self.consumed[queue]
        for r, v in request.items():
            consumed[r] = consumed.get(r, 0.0) + sign * decay.penalty * v
