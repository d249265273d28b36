"""A replay's results: the report (placements, pending times, allocation, evictions, per queue),
its table rows, and the queue-length / allocation series written as CSV.

Owns: ``ReplayReport`` and its figures. May not import ``sim.replay`` nor another face.
"""

import csv
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kubegpu.scheduler.gpu_shapes import MILLI


@dataclass(frozen=True)
class Sample:
    t: float
    active: int
    backoff: int
    unschedulable: int
    allocated_milli: int


@dataclass
class ReplayReport:
    label: str
    pods: int
    placed: int = 0
    delayed: int = 0  # placed after waiting
    given_up: int = 0
    given_up_by_class: dict[str, int] = field(default_factory=dict)  # cpu | share | n-gpu
    still_pending: int = 0
    waits: list[float] = field(default_factory=list)  # arrival → first start, per placed pod
    waits_by_queue: dict[str, list[float]] = field(default_factory=dict)  # by the pod's queue label
    attempts: int = 0
    evictions: int = 0  # preemption victims (pods)
    node_removal_evictions: int = 0
    gpu_seconds_lost: int = 0  # to preemption
    node_removal_gpu_seconds_lost: int = 0
    capacity_milli: int = 0
    horizon_s: float = 0.0
    allocated_area: float = 0.0  # ∫ allocated milli-GPU dt
    frag_area: float | None = None  # ∫ fragment amount dt (GpuShare ledger only)
    pending_area: float = 0.0  # ∫ pending entries dt
    max_pending: int = 0
    series: list[Sample] = field(default_factory=list)
    # batch mode, per queue (defined or used): admissions, workloads given up or still waiting at the
    # end, and pods evicted / GPU-seconds lost by the queue's own workloads
    queues: list[str] = field(default_factory=list)
    admitted_by_queue: dict[str, int] = field(default_factory=dict)
    given_up_by_queue: dict[str, int] = field(default_factory=dict)
    waiting_by_queue: dict[str, int] = field(default_factory=dict)
    evictions_by_queue: dict[str, int] = field(default_factory=dict)
    gpu_seconds_lost_by_queue: dict[str, int] = field(default_factory=dict)

    def given_up_classes(self) -> str:
        c = self.given_up_by_class
        multi = sum(v for k, v in c.items() if k not in ("cpu", "share", "1-gpu"))
        return f"{c.get('cpu', 0)} / {c.get('share', 0)} / {c.get('1-gpu', 0)} / {multi}"

    def pending_pct(self, q: float, queue: str | None = None) -> float:
        waits = self.waits if queue is None else self.waits_by_queue.get(queue, [])
        return float(np.percentile(waits, q)) if waits else 0.0

    @property
    def mean_allocation_pct(self) -> float:
        return 100 * self.allocated_area / max(self.horizon_s, 1.0) / max(self.capacity_milli, 1)

    @property
    def useful_utilisation_pct(self) -> float:
        """Allocation minus the GPU-time later thrown away by evictions."""
        lost = (self.gpu_seconds_lost + self.node_removal_gpu_seconds_lost) * MILLI
        return 100 * (self.allocated_area - lost) / max(self.horizon_s, 1.0) / max(self.capacity_milli, 1)

    @property
    def mean_frag_pct(self) -> float | None:
        if self.frag_area is None:
            return None
        return 100 * self.frag_area / max(self.horizon_s, 1.0) / max(self.capacity_milli, 1)

    @property
    def gpu_hours_lost(self) -> float:
        return self.gpu_seconds_lost / 3600

    def rows(self) -> list[tuple[str, str]]:
        frag = self.mean_frag_pct
        # a replay whose events all happen at one instant (a snapshot's pending pods at t=0) has no time
        # to weight by: its time-weighted figures would read 0, so they are shown as not applicable
        timed = self.horizon_s > 0
        pending_mean = f"{self.pending_area / self.horizon_s:.1f}" if timed else "—"
        return [
            ("pods", str(self.pods)),
            ("placed", str(self.placed)),
            ("placed after waiting", str(self.delayed)),
            ("given up (deleted while pending)", str(self.given_up)),
            ("  of which cpu / share / 1-gpu / multi-gpu", self.given_up_classes()),
            ("still pending at the end", str(self.still_pending)),
            ("pending time p50 (s)", f"{self.pending_pct(50):.0f}"),
            ("pending time p95 (s)", f"{self.pending_pct(95):.0f}"),
            ("pending pods, time-weighted mean / max", f"{pending_mean} / {self.max_pending}"),
            ("GPU allocated, time-weighted (%)", f"{self.mean_allocation_pct:.2f}" if timed else "—"),
            ("fragment amount, time-weighted (% of GPUs)", "—" if frag is None or not timed else f"{frag:.2f}"),
            ("pods evicted by preemption", str(self.evictions)),
            ("GPU-hours lost to preemption", f"{self.gpu_hours_lost:.1f}"),
            ("scheduling attempts", str(self.attempts)),
            *(row for q in self.queues for row in self.queue_rows(q)),
        ]  # fmt: skip

    def queue_rows(self, q: str) -> list[tuple[str, str]]:
        lost = self.gpu_seconds_lost_by_queue.get(q, 0) / 3600
        return [
            (f"queue {q}: pending p50 / p95 (s)", f"{self.pending_pct(50, q):.0f} / {self.pending_pct(95, q):.0f}"),
            (f"queue {q}: admitted / given up / waiting (workloads)",
             f"{self.admitted_by_queue.get(q, 0)} / {self.given_up_by_queue.get(q, 0)} / {self.waiting_by_queue.get(q, 0)}"),
            (f"queue {q}: evicted pods / GPU-hours lost", f"{self.evictions_by_queue.get(q, 0)} / {lost:.1f}"),
        ]  # fmt: skip


def write_series(reports: Sequence[ReplayReport], path: Path) -> None:
    """Queue lengths and GPU allocation over time, one row per sample and run, as CSV."""
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["run", "t_s", "active", "backoff", "unschedulable", "pending", "gpu_allocated_pct"])
        for r in reports:
            for s in r.series:
                pct = 100 * s.allocated_milli / max(r.capacity_milli, 1)
                pending = s.active + s.backoff + s.unschedulable
                w.writerow([r.label, f"{s.t:g}", s.active, s.backoff, s.unschedulable, pending, f"{pct:.2f}"])


def _thin(samples: list[Sample], points: int) -> list[Sample]:
    """At most ``points`` samples: the last one in each of ``points`` equal time buckets."""
    if len(samples) <= points:
        return samples
    t0, t1 = samples[0].t, samples[-1].t
    width = (t1 - t0) / points or 1.0
    out: dict[int, Sample] = {}
    for s in samples:
        out[min(int((s.t - t0) / width), points - 1)] = s
    return list(out.values())
