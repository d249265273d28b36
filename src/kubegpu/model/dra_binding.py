"""Device binding conditions (KEP-5007, DRADeviceBindingConditions with DRAResourceClaimDeviceStatus) in
``resource.k8s.io``: a device's ``bindingConditions`` / ``bindingFailureConditions`` / ``bindsToNode`` (copied
by the allocator into the claim's allocation result), and the claim's ``status.devices[].conditions`` a
driver or controller sets; with ``status.allocation.allocationTimestamp``. Part of the model (``model.dra``
uses it); imports nothing but the model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from kubegpu.model.parse import _Ctx


@dataclass(frozen=True, slots=True)
class Binding:
    """What must be true of a device before the pod binds (``conditions``), and what fails it."""

    conditions: tuple[str, ...] = ()
    failure_conditions: tuple[str, ...] = ()
    binds_to_node: bool = False


@dataclass(frozen=True, slots=True)
class DeviceCondition:
    """One ``metav1.Condition`` of ``status.devices[].conditions``."""

    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str = ""
    message: str = ""


# ((driver, pool, device), its conditions) per status.devices entry: a tuple, so that a claim stays hashable
DeviceConditions = tuple[tuple[tuple[str, str, str], tuple[DeviceCondition, ...]], ...]


def _names(ctx: _Ctx, value: Any, field: str) -> tuple[str, ...]:
    return tuple(ctx.string(v, f"{field}[{i}]", required=True) for i, v in enumerate(ctx.seq(value, field)))


def parse_binding(ctx: _Ctx, body: Mapping[str, Any], field: str) -> Binding | None:
    """A device's (or an allocation result's) binding fields; None when it sets none."""
    got = Binding(
        _names(ctx, body.get("bindingConditions"), f"{field}.bindingConditions"),
        _names(ctx, body.get("bindingFailureConditions"), f"{field}.bindingFailureConditions"),
        body.get("bindsToNode") is True,
    )
    return got if got != Binding() else None


def parse_device_conditions(ctx: _Ctx, status: Mapping[str, Any]) -> DeviceConditions:
    """``status.devices``: each allocated device's conditions (DRAResourceClaimDeviceStatus)."""
    out = []
    for i, d in enumerate(ctx.seq(status.get("devices"), "status.devices")):
        f = f"status.devices[{i}]"
        d = ctx.mapping(d, f)
        key = tuple(ctx.string(d.get(k), f"{f}.{k}", required=True) for k in ("driver", "pool", "device"))
        conds = []
        for j, c in enumerate(ctx.seq(d.get("conditions"), f"{f}.conditions")):
            cf = f"{f}.conditions[{j}]"
            c = ctx.mapping(c, cf)
            conds.append(
                DeviceCondition(
                    ctx.string(c.get("type"), f"{cf}.type", required=True),
                    ctx.string(c.get("status"), f"{cf}.status", required=True),
                    ctx.string(c.get("reason"), f"{cf}.reason"),
                    ctx.string(c.get("message"), f"{cf}.message"),
                )
            )
        out.append(((key[0], key[1], key[2]), tuple(conds)))
    return tuple(out)


def conditions_of(statuses: DeviceConditions, device: tuple[str, str, str]) -> dict[str, DeviceCondition]:
    """The conditions ``status.devices`` holds for ``device``, by type."""
    return {c.type: c for did, cs in statuses if did == device for c in cs}


def failed(binding: Binding, conds: Mapping[str, DeviceCondition]) -> DeviceCondition | None:
    """The first binding failure condition that is True (``isClaimReadyForBinding`` fails the claim)."""
    return next(
        (conds[f] for f in binding.failure_conditions if f in conds and conds[f].status == "True"), None
    )


def unmet(binding: Binding, conds: Mapping[str, DeviceCondition]) -> list[str]:
    """The binding conditions not True yet, each with its status ("not set" when absent)."""
    return [
        f"{t} ({conds[t].status})" if t in conds else f"{t} (not set)"
        for t in binding.conditions
        if t not in conds or conds[t].status != "True"
    ]


class _Result(Protocol):
    """An allocation result as read here (``model.dra.AllocatedDevice``, which imports this module)."""

    @property
    def binding(self) -> Binding | None: ...

    @property
    def device_id(self) -> tuple[str, str, str]: ...


R = TypeVar("R", bound=_Result)


def binding_failure(results: Iterable[R], statuses: DeviceConditions) -> tuple[R, DeviceCondition] | None:
    """Upstream ``isClaimReadyForBinding``'s error for a claim's allocation ``results`` and its
    ``status.devices`` conditions: results without binding conditions are skipped; at the first device
    whose failure condition is True, that (result, condition); at the first device not yet ready (no
    status, or a binding condition not True) upstream stops without an error, and so does this."""
    for r in results:
        if r.binding is None or not r.binding.conditions:
            continue
        conds = conditions_of(statuses, r.device_id)
        bad = failed(r.binding, conds)
        if bad is not None:
            return r, bad
        if unmet(r.binding, conds):
            return None
    return None
