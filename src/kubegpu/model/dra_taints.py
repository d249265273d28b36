"""Device taints (KEP-5055, ``resource.k8s.io``): a device's ``taints`` and ``DeviceTaintRule`` objects, and
their parsers. Part of the model (``model.dra`` uses it); imports nothing but the model.

A device taint's effect is ``NoSchedule``, ``NoExecute`` or (1.36+) ``None`` (k8s.io/api resource/v1
types.go ``DeviceTaintEffect``); only the first two keep the scheduler away. A ``DeviceTaintRule`` adds its
one taint to every device its selector matches (driver, pool, device name; all set ones must match, an
absent selector matches none), as if the driver had published it (k8s.io/dynamic-resource-allocation
resourceslice/tracker ``applyPatches``): the scheduler reads the patched slices where DRADeviceTaintRules
is on (GA in 1.37; ``scheduler.versions.DRA_GATES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubegpu.model.objects import Taint
from kubegpu.model.parse import _Ctx, _meta

DEVICE_TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")


def parse_device_taints(ctx: _Ctx, value: Any, field: str) -> tuple[Taint, ...]:
    """A device's ``taints``: key and effect required."""
    return tuple(_taint(ctx, t, f"{field}[{i}]") for i, t in enumerate(ctx.seq(value, field)))


def _taint(ctx: _Ctx, value: Any, field: str) -> Taint:
    t = ctx.mapping(value, field)
    effect = ctx.string(t.get("effect"), f"{field}.effect", required=True)
    if effect not in DEVICE_TAINT_EFFECTS:
        raise ctx.fail(
            f"{field}.effect",
            f"unsupported value {effect!r}: must be one of {', '.join(DEVICE_TAINT_EFFECTS)}",
        )
    return Taint(
        key=ctx.string(t.get("key"), f"{field}.key", required=True),
        value=ctx.string(t.get("value"), f"{field}.value"),
        effect=effect,
    )


@dataclass(frozen=True, slots=True)
class DeviceTaintRule:
    name: str
    taint: Taint
    has_selector: bool  # no deviceSelector: the rule matches no device
    driver: str | None = None
    pool: str | None = None
    device: str | None = None
    source: str = ""

    def matches(self, driver: str, pool: str, device: str) -> bool:
        return (
            self.has_selector
            and self.driver in (None, driver)
            and self.pool in (None, pool)
            and self.device in (None, device)
        )


def parse_device_taint_rule(raw: Mapping[str, Any], source: str = "") -> DeviceTaintRule:
    ctx = _Ctx(source, raw)
    _, _, name = _meta(ctx, raw, namespaced=False)
    spec = ctx.mapping(raw.get("spec"), "spec")
    sel_raw = spec.get("deviceSelector")
    sel = ctx.mapping(sel_raw, "spec.deviceSelector")

    def opt(key: str) -> str | None:
        return None if sel.get(key) is None else ctx.string(sel.get(key), f"spec.deviceSelector.{key}")

    return DeviceTaintRule(
        name=name,
        taint=_taint(ctx, spec.get("taint"), "spec.taint"),
        has_selector=sel_raw is not None,
        driver=opt("driver"),
        pool=opt("pool"),
        device=opt("device"),
        source=source,
    )


def with_rules(
    taints: tuple[Taint, ...], rules: list[DeviceTaintRule], driver: str, pool: str, device: str
) -> tuple[Taint, ...]:
    """A device's taints after the rules that match it, appended in rule order."""
    extra = tuple(r.taint for r in rules if r.matches(driver, pool, device))
    return taints + extra if extra else taints
