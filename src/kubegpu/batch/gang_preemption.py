"""A gang as preemptor: evict lower-priority work so that ALL of a pod group fits, or evict nothing (R14.2, R14.3).

kube-scheduler preempts for one pod at a time; a gang needs room for every member at once, and
evicting victims for half a gang destroys work for nothing. So the search runs as a dry run on the
cluster journal:

1. Eviction units: running pods of strictly lower priority than the gang, a victim gang being one unit
   with all its running members (a gang is never split). Units are tried cheapest first by the GPU-time
   they would lose since their last checkpoint (``model.podgroup.eviction_cost``), then lower priority,
   then name.
2. PodDisruptionBudgets, as kube-scheduler weighs them: upstream's ``filterPodsWithPDBViolation`` walks
   the potential victims in order, each pod spending one ``status.disruptionsAllowed`` of every PDB that
   selects it (a PDB with an empty selector selects nothing), and a pod that drives any budget below zero
   is *violating*; a unit is violating when any of its pods is (upstream's workload-aware preemption
   groups pods the same way). The walk here is the cheapest-first order, so the budget is spent on the
   units we would rather evict. Violations are avoided, never forbidden: fewest PDB violations is
   ``pickOneNodeForPreemption``'s first criterion, ahead of everything else.
3. Units are removed one by one, non-violating ones first, each group cheapest first, until every
   member of the gang places (through the core's ``schedule_one``, device allocation included). None
   fits even with all of them gone → nothing is evicted.
4. Reprieve, as ``selectVictimsOnNode`` does for one node: the chosen units are put back one at a time,
   the violating ones first, each group the most expensive first, and stay back whenever the gang still
   places without them; what remains are the victims, and ``pdb_violations`` counts the violating
   units among them (upstream's ``numViolatingVictim``).
5. Everything is rolled back; the caller evicts the victims for real and places the gang.

Worked example (tests): three full 4-GPU nodes whose pods would lose 2400, 1200 and 240 GPU-seconds;
a gang of two 4-GPU pods of higher priority evicts the 240 and the 1200 ones (1440 in all) and leaves
the 2400 one running. With a PDB that allows no disruption over the 240 one, the gang evicts the 1200
and 2400 ones instead (3600, no violation); with a PDB allowing none over all three, it evicts the
cheapest two and reports two violations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kubegpu.batch import gang
from kubegpu.batch.workloads import Workload
from kubegpu.model.objects import Pod, PodDisruptionBudget
from kubegpu.model.podgroup import group_key
from kubegpu.model.quantity import exact_sum
from kubegpu.scheduler.device_ledger import Assignment
from kubegpu.scheduler.plugins.default_preemption import split_by_pdb
from kubegpu.scheduler.schedule_one import Scheduler


@dataclass(frozen=True)
class Unit:
    """Pods evicted together (one pod, or every running member of a victim gang)."""

    pods: tuple[Pod, ...]
    cost: int  # GPU-seconds lost
    priority: int
    name: str


@dataclass
class GangPreemption:
    victims: list[Unit] = field(default_factory=list)
    ok: bool = False
    pdb_violations: int = 0  # victim units whose eviction breaks a PodDisruptionBudget

    @property
    def cost(self) -> int:
        return sum(u.cost for u in self.victims)


def eviction_units(
    scheduler: Scheduler,
    below: int,
    exclude: set[str],
    cost: Callable[[Pod], int],
    protected: Callable[[Pod], bool] | None = None,
) -> list[Unit]:
    """Running pods of priority lower than ``below``, grouped into units (gangs whole), cheapest first.
    A gang with any member at or above ``below``, or any ``protected`` member, is not a candidate."""
    groups: dict[str, list[Pod]] = {}
    for pods in scheduler.cluster.pods_on:
        for p in pods.values():
            if p.key in exclude:
                continue
            groups.setdefault(group_key(p) or "pod:" + p.key, []).append(p)
    units = [
        Unit(tuple(members), sum(cost(p) for p in members), max(p.priority for p in members), name)
        for name, members in groups.items()
        if max(p.priority for p in members) < below
        and not (protected is not None and any(protected(p) for p in members))
    ]
    units.sort(key=lambda u: (u.cost, u.priority, u.name))
    return units


def violating_units(units: list[Unit], pdbs: list[PodDisruptionBudget]) -> set[str]:
    """Names of the units that would break a PDB, walking ``units`` in order (see the module docstring)."""
    violating, _ = split_by_pdb([p for u in units for p in u.pods], pdbs)
    keys = {p.key for p in violating}
    return {u.name for u in units if any(p.key in keys for p in u.pods)}


def preempt_for_gang(
    scheduler: Scheduler,
    workload: Workload,
    cost: Callable[[Pod], int],
    protected: Callable[[Pod], bool] | None = None,
) -> GangPreemption:
    """The cheapest victims that let all of ``workload`` place (see the module docstring); a dry run —
    the cluster is unchanged on return. ``protected`` pods are never victims (the batch session
    protects other queues within their nominal quota)."""
    cluster = scheduler.cluster
    exclude: set[str] = {p.key for p in workload.pods}
    units = eviction_units(scheduler, workload.priority, exclude, cost, protected)
    violating = violating_units(units, scheduler.framework.handle.pdbs)
    units.sort(key=lambda u: u.name in violating)  # stable: cheapest first within each group
    mark = cluster.mark()
    removed: list[Unit] = []
    result = GangPreemption()
    try:
        need = gang.place(scheduler, workload, keep=False).ok
        if need:
            result.ok = True  # fits already: nothing to evict
            return result
        for unit in units:
            for p in unit.pods:
                cluster.remove_pod(p)
            removed.append(unit)
            if _may_fit(scheduler, workload) and gang.place(scheduler, workload, keep=False).ok:
                result.ok = True
                break
        if not result.ok:
            return result
        victims = list(removed)
        for unit in sorted(removed, key=lambda u: (u.name not in violating, -u.cost, -u.priority, u.name)):
            back = cluster.mark()
            for p in unit.pods:
                idx, assignment, assumed = _removed_from(scheduler, p)
                cluster.add_pod(p, idx, assignment, assumed)
            if gang.place(scheduler, workload, keep=False).ok:
                victims.remove(unit)  # the gang fits with this unit kept: reprieved
            else:
                cluster.rollback(back)
        result.victims = victims
        result.pdb_violations = sum(1 for u in victims if u.name in violating)
        return result
    finally:
        cluster.rollback(mark)


def _removed_from(scheduler: Scheduler, pod: Pod) -> tuple[int, Assignment | None, bool]:
    """Where a pod removed in this dry run ran, with its devices (its journal record)."""
    for op, p, idx, assignment, assumed in reversed(scheduler.cluster.journal):
        if op == "remove" and p.key == pod.key:
            return idx, assignment, assumed
    raise KeyError(pod.key)


def _may_fit(scheduler: Scheduler, workload: Workload) -> bool:
    """Cheap necessary test before a placement attempt: the cluster has the gang's total request free."""
    cluster = scheduler.cluster
    cols, amounts = cluster.request_vector(workload.requests)
    # exact per column: an int64 sum over the nodes wraps past int64 (quantity.exact_sum)
    return all(
        exact_sum(cluster.allocatable[:, c]) - exact_sum(cluster.requested[:, c]) >= int(a)
        for c, a in zip(cols.tolist(), amounts.tolist(), strict=True)
    )
