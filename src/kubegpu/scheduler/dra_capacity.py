"""The structured allocator's rules for device gates beyond the basics, one function each, as
``k8s.io/dynamic-resource-allocation/structured/internal/incubating`` (v0.36.3, v0.37.2) decides them:

- ``Features``: which of them a minor turns on (``scheduler.versions.DRA_GATES``; dynamicresources.go
  ``AllocatorFeatures``). A gate off means the API server dropped the field (``versions`` says where), so
  the allocator ignores it here too.
- consumable capacity (KEP-5075, consumable_capacity.go): ``consumed`` (a request's amount after the
  device's ``requestPolicy`` rounds it up: ``calculateConsumedCapacity``), ``violates``
  (``violatesPolicy``) and ``capacity_short`` (``CmpRequestOverCapacity``: the first capacity that does not
  fit, or "" when all do).
- device taints (KEP-5055, allocator_incubating.go ``taintPreventsAllocation``): ``untolerated``.
- partitionable devices (KEP-4815, ``checkAvailableCounters``): ``counters_left`` (a pool's counters minus
  what its allocated devices consume), ``counters_short`` and ``device_counters_short`` (one device alone).

Quantities are exact ``Fraction`` values (upstream rounds a range's min/step/request to integers with
``Quantity.Value()`` in 1.36; identical for integer quantities, which is what drivers publish).
Imports the model and ``scheduler.versions`` only.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from math import ceil

from kubegpu.model.dra import AllocatedDevice, Device, DeviceSubRequest, ResourceSlice, qualify
from kubegpu.model.dra_capacity import CapacityPolicy
from kubegpu.model.objects import Taint, first_untolerated
from kubegpu.scheduler.versions import dra_gate

CounterSets = dict[str, dict[str, Fraction]]  # counter set → counter → value
DeviceId = tuple[str, str, str]  # driver, pool, device


@dataclass(frozen=True, slots=True)
class Features:
    """The allocator features a scheduler has (structured.Features): off fields are ignored."""

    device_taints: bool = False  # DRADeviceTaints
    taint_rules: bool = False  # DRADeviceTaintRules: DeviceTaintRule objects taint the devices they select
    partitionable: bool = False  # DRAPartitionableDevices
    consumable: bool = False  # DRAConsumableCapacity
    # 1.36's distinctAttributeConstraint keeps one value per request name (a map; constraint.go v0.36.3),
    # so a request's next device is compared only with its previous one; 1.37 keeps every value (a list)
    distinct_per_request: bool = False
    # from 1.35 (structured/internal/stable and incubating v0.35+): a pool whose slices reaching the node
    # are short is checked against all slices (GatherPools checkSlicesInPool: obsolete when a newer
    # generation exists, else complete when every slice of its generation exists), and allocateOne takes no
    # device from an incomplete pool; 1.34 (v0.34) counts the reaching slices and refuses an incomplete pool
    # only under allocationMode All. Checked on the real 1.34.4 and 1.35.4 (realkube dra-incomplete-pool).
    pool_check: bool = False
    # 1.37 checks the claim limit (AllocationResultsMaxSize) request by request, naming the request that
    # crosses it ("claim C, request R: adding N devices exceeds the claim limit of 32, with M already
    # accounted for"); before, the claim's total ("claim C: number of requested devices N exceeds ...")
    limit_per_request: bool = False
    # DRADeviceBindingConditions and DRAResourceClaimDeviceStatus (dynamicresources.go
    # DeviceBindingAndStatus): devices' binding conditions are honoured
    binding: bool = False
    # 1.37 lists an All request's devices by their static capacity (validateDeviceRequest v0.37.2 passes
    # emptyConsumedCapacity: "Static capacity only: remaining capacity is checked in allocateDevice so
    # capacity-blocked matching devices stay in allDevices and All fails"); 1.36 (v0.36.3
    # alloc.CmpRequestOverCapacity) leaves out a device other claims' shares already fill
    all_static_capacity: bool = False

    @classmethod
    def for_minor(cls, minor: int) -> Features:
        return cls(
            device_taints=dra_gate(minor, "DRADeviceTaints"),
            taint_rules=dra_gate(minor, "DRADeviceTaintRules"),
            partitionable=dra_gate(minor, "DRAPartitionableDevices"),
            consumable=dra_gate(minor, "DRAConsumableCapacity"),
            distinct_per_request=minor == 36,
            pool_check=minor >= 35,
            limit_per_request=minor >= 37,
            binding=dra_gate(minor, "DRADeviceBindingConditions")
            and dra_gate(minor, "DRAResourceClaimDeviceStatus"),
            all_static_capacity=minor >= 37,
        )


def allocated_state(
    results: Iterable[AllocatedDevice], f: Features
) -> tuple[set[DeviceId], dict[DeviceId, dict[str, Fraction]]]:
    """Upstream ``ListAllAllocatedDevices`` / ``GatherAllocatedState`` over allocated claims' results: every
    device they hold (admin access aside), and, with consumable capacity, the capacity each device's shares
    (``shareID``) consume instead (without the gate a share holds the device whole)."""
    in_use: set[DeviceId] = set()
    shared: dict[DeviceId, dict[str, Fraction]] = {}
    for d in results:
        if d.admin_access:
            continue
        if d.share_id and f.consumable:
            add_consumption(shared.setdefault(d.device_id, {}), d.consumed)
        else:
            in_use.add(d.device_id)
    return in_use, shared


def untolerated(device: Device, sub: DeviceSubRequest) -> Taint | None:
    """The first NoSchedule/NoExecute taint no toleration of the request tolerates (other effects,
    ``None`` included, never prevent allocation)."""
    return first_untolerated(device.taints, sub.tolerations)


def _round_up_range(requested: Fraction, p: CapacityPolicy) -> Fraction:
    assert p.range_min is not None
    if requested < p.range_min:
        return p.range_min
    if p.range_step is None:
        return requested
    return p.range_min + p.range_step * ceil((requested - p.range_min) / p.range_step)


def consumed(requested: Fraction | None, value: Fraction, policy: CapacityPolicy | None) -> Fraction:
    """``calculateConsumedCapacity``: no request takes the policy's default, else the whole capacity; a
    request rounds up to the range's next step or the next valid value."""
    if requested is None:
        return policy.default if policy is not None and policy.default is not None else value
    if policy is None:
        return requested
    if policy.range_min is not None:
        return _round_up_range(requested, policy)
    for v in policy.valid_values:
        if requested <= v:
            return v
    return requested


def violates(amount: Fraction, policy: CapacityPolicy | None) -> bool:
    """``violatesPolicy``: the default always passes; above the range's max, off its step, or not one of
    the valid values fails."""
    if policy is None or (policy.default is not None and amount == policy.default):
        return False
    if policy.range_min is not None or policy.range_max is not None or policy.range_step is not None:
        if policy.range_max is not None and amount > policy.range_max:
            return True
        if policy.range_step is not None:
            return (amount - (policy.range_min or 0)) % policy.range_step != 0
        return False
    return bool(policy.valid_values) and amount not in policy.valid_values


def capacity_short(
    sub: DeviceSubRequest,
    driver: str,
    device: Device,
    allocated: Mapping[str, Fraction],
    allocating: Mapping[str, Fraction],
) -> str:
    """``CmpRequestOverCapacity``: "" when every capacity of ``device`` can give what ``sub`` asks on top of
    what allocated claims (``allocated``) and this cycle (``allocating``) already consume; else why not,
    with the values."""
    asked = {qualify(k, driver): v for k, v in sub.capacity}
    for name in asked:
        if name not in device.capacity:
            return f"requests capacity {name.rpartition('/')[2]}, which the device does not have"
    for name, value in device.capacity.items():
        policy = device.request_policy.get(name)
        amount = consumed(asked.get(name), value, policy)
        short = name.rpartition("/")[2]
        if violates(amount, policy):
            return f"capacity {short}: {_q(amount)} is outside the device's requestPolicy"
        used = allocated.get(name, Fraction(0)) + allocating.get(name, Fraction(0))
        if used + amount > value:
            return f"capacity {short}: needs {_q(amount)}, {_q(value - used)} of {_q(value)} left"
    return ""


def add_consumption(
    into: dict[str, Fraction],
    consumed_by: Mapping[str, Fraction] | tuple[tuple[str, Fraction], ...],
    sign: int = 1,
) -> None:
    for name, v in consumed_by.items() if isinstance(consumed_by, Mapping) else consumed_by:
        into[name] = into.get(name, Fraction(0)) + sign * v


def consumption(sub: DeviceSubRequest, driver: str, device: Device) -> dict[str, Fraction]:
    """``GetConsumedCapacityFromRequest``: what one share of ``device`` consumes for ``sub``."""
    asked = {qualify(k, driver): v for k, v in sub.capacity}
    return {
        name: consumed(asked.get(name), value, device.request_policy.get(name))
        for name, value in device.capacity.items()
    }


def counters_left(
    sets: CounterSets, slices: Iterable[ResourceSlice], taken: Container[tuple[str, str, str]]
) -> CounterSets:
    """The pool's counter ``sets`` minus what the devices of ``slices`` (its device slices, every node's)
    that ``taken`` holds (driver, pool, device) consume: upstream's allocator counts them once per cycle
    from the allocated claims (a device in use whole, or a share of one). May go negative."""
    got = {k: dict(v) for k, v in sets.items()}
    for s in slices:
        for d in s.devices:
            if (s.driver, s.pool, d.name) not in taken:
                continue
            for set_name, cs in d.consumes_counters:
                for name, v in cs.items():
                    if name in got.get(set_name, {}):
                        got[set_name][name] -= v
    return got


def device_counters_short(available: CounterSets, device: Device) -> str:
    """``counters_short`` for ``device`` taken alone on top of the allocated devices ("" when it fits or
    consumes no counter): the rule the allocator applies first to each device of a partitionable pool."""
    if not device.consumes_counters:
        return ""
    mine: CounterSets = {}
    for set_name, cs in device.consumes_counters:
        add_consumption(mine.setdefault(set_name, {}), cs)
    return counters_short(available, mine)


def counters_short(available: CounterSets, consumed_now: CounterSets) -> str:
    """``checkAvailableCounters`` after adding a device: "" when no counter of the pool is overdrawn, else
    the first that is (set, counter, consumed, available). Every counter of the pool is checked, so one
    already overdrawn by allocated devices blocks every device of the pool that consumes counters."""
    for set_name in sorted(available):
        for name in sorted(available[set_name]):
            have = available[set_name][name]
            used = consumed_now.get(set_name, {}).get(name, Fraction(0))
            if have < used:
                return f"counter set {set_name} counter {name}: needs {_q(used)} in all, {_q(have)} available"
    return ""


def _q(v: Fraction) -> str:
    """A quantity for messages: bytes as Gi/Mi when whole, else the number."""
    for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20)):
        if v and v % size == 0:
            return f"{v // size}{unit}"
    return str(v.numerator) if v.denominator == 1 else str(float(v))
