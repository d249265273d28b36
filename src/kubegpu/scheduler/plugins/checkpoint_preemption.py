"""CheckpointAwarePreemption (kubegpu): DefaultPreemption that counts what it destroys (R14.3).

Same eligibility, candidate nodes, minimal victim sets and PDB handling as kube-scheduler's
DefaultPreemption (it reuses them), with two changes when choosing among candidate nodes:

- gangs are evicted whole or not at all: a victim that belongs to a pod group brings every other
  running member of its group along (they would stall without it anyway);
- after the fewest PDB violations, the node whose victims lose the least GPU-time since their last
  checkpoint wins (``model.podgroup.eviction_cost``), then upstream's remaining criteria.

Costs are measured at the handle's clock, read once per preemption cycle: UTC wall time by default, so a
long-running scheduler prices each preemption at its own time, not at the plugin's start; a fixed instant
for reproducible offline runs (``SchedulerSpec.clock``: the CLI gives the snapshot's newest timestamp) or
simulated time (the replay simulator moves the clock before each cycle).
``last_costs`` keeps, for reporting, what each chosen preemption cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, ClassVar

from kubegpu.model.objects import Pod
from kubegpu.model.podgroup import eviction_cost, group_key
from kubegpu.scheduler.framework import Handle
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.plugins.default_preemption import Candidate, DefaultPreemption, pick_one


class CheckpointAwarePreemption(DefaultPreemption):
    name: ClassVar[str] = names.CHECKPOINT_AWARE_PREEMPTION

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        super().__init__(args, handle)
        self.last_costs: dict[str, int] = {}  # victim pod key → GPU-seconds lost

    def gang_of(self, victim: Pod) -> list[Pod]:
        key = group_key(victim)
        cluster = self.handle.cluster
        if key is None or cluster is None:
            return [victim]
        return [p for pods in cluster.pods_on for p in pods.values() if group_key(p) == key]

    @staticmethod
    def cost(candidate: Candidate, now: datetime) -> int:
        return sum(eviction_cost(v, now) for v in candidate.victims)

    def pick(self, candidates: list[Candidate]) -> Candidate:
        now = self.handle.clock()  # one instant for the whole cycle
        whole: list[Candidate] = []
        for c in candidates:
            victims: dict[str, Pod] = {}
            for v in c.victims:
                for member in self.gang_of(v):
                    victims.setdefault(member.key, member)
            whole.append(replace(c, victims=tuple(victims.values())))
        fewest = min(c.pdb_violations for c in whole)
        cheapest = min(self.cost(c, now) for c in whole if c.pdb_violations == fewest)
        best = pick_one([c for c in whole if c.pdb_violations == fewest and self.cost(c, now) == cheapest])
        self.last_costs = {v.key: eviction_cost(v, now) for v in best.victims}
        return best
