"""Consumable capacity (KEP-5075) and partitionable devices' counters (KEP-4815) in ``resource.k8s.io``:
a capacity's ``requestPolicy``, counter sets, and their parsers. Part of the model (``model.dra`` uses it);
imports nothing but the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kubegpu.model.parse import _Ctx
from kubegpu.model.quantity import QuantityError, parse_quantity

# counter set name → counter name → value (ResourceSlice spec.sharedCounters, a device's consumesCounters)
Counters = tuple[tuple[str, Mapping[str, Fraction]], ...]


@dataclass(frozen=True, slots=True)
class CapacityPolicy:
    """A device capacity's ``requestPolicy`` (KEP-5075): how a share of the device consumes it."""

    default: Fraction | None = None
    valid_values: tuple[Fraction, ...] = ()
    range_min: Fraction | None = None
    range_max: Fraction | None = None
    range_step: Fraction | None = None


def quantity(ctx: _Ctx, value: Any, field: str) -> Fraction:
    try:
        return parse_quantity(value)
    except QuantityError as exc:
        raise ctx.fail(field, str(exc)) from None


def qualify(name: str, driver: str) -> str:
    """An attribute or capacity name as the driver publishes it: unqualified names belong to the driver."""
    return name if "/" in name else f"{driver}/{name}"


def consumed_capacity(ctx: _Ctx, result: Mapping[str, Any], field: str) -> tuple[tuple[str, Fraction], ...]:
    """An allocation result's ``consumedCapacity`` (qualified name, amount)."""
    driver = ctx.string(result.get("driver"), f"{field}.driver")
    return tuple(
        (qualify(str(k), driver), quantity(ctx, v, f"{field}.consumedCapacity[{k}]"))
        for k, v in ctx.mapping(result.get("consumedCapacity"), f"{field}.consumedCapacity").items()
    )


def counters(ctx: _Ctx, value: Any, field: str, key: str) -> Counters:
    """``sharedCounters`` (``key`` "name") or ``consumesCounters`` (``key`` "counterSet"):
    ``[{<key>: set, counters: {name: {value: q}}}]``."""
    out = []
    for i, c in enumerate(ctx.seq(value, field)):
        f = f"{field}[{i}]"
        c = ctx.mapping(c, f)
        name = ctx.string(c.get(key), f"{f}.{key}", required=True)
        counters = {
            str(k): quantity(
                ctx, ctx.mapping(v, f"{f}.counters[{k}]").get("value"), f"{f}.counters[{k}].value"
            )
            for k, v in ctx.mapping(c.get("counters"), f"{f}.counters").items()
        }
        out.append((name, counters))
    return tuple(out)


def policy(ctx: _Ctx, value: Any, field: str) -> CapacityPolicy | None:
    if value is None:
        return None
    p = ctx.mapping(value, field)
    rng = ctx.mapping(p.get("validRange"), f"{field}.validRange")

    def q(v: Any, f: str) -> Fraction | None:
        return None if v is None else quantity(ctx, v, f)

    return CapacityPolicy(
        default=q(p.get("default"), f"{field}.default"),
        valid_values=tuple(
            quantity(ctx, v, f"{field}.validValues[{i}]")
            for i, v in enumerate(ctx.seq(p.get("validValues"), f"{field}.validValues"))
        ),
        range_min=q(rng.get("min"), f"{field}.validRange.min"),
        range_max=q(rng.get("max"), f"{field}.validRange.max"),
        range_step=q(rng.get("step"), f"{field}.validRange.step"),
    )
