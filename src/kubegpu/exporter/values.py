"""Which value each DCGM field gets for a GPU, from an inventory reading and extra NVML counters (R13.2).

A reading (``kubegpu.devices.NodeInventory``, from ``kubegpu.node`` NVML or a recorded file) carries
memory, temperature, power, utilisation and clocks; ``Counters`` carries what only the exporter reads
(energy, PCIe replays, ECC, remapped rows, encoder/decoder utilisation, memory temperature, last XID,
per-MIG-device memory), keyed by GPU or MIG UUID. A MIG device gets its own memory and its parent's
device-wide values, as DCGM reports a GPU instance (``mig_values``). A value NVML did not give (the
reading stores ``"ERR:…"`` or nothing) is left out, never written as 0: dcgm-exporter leaves out fields
the card does not support, and a 0 would read as "idle" or "no errors" (R13.3).

Unit conversions are dcgm-exporter's: framebuffer in MiB (bytes // 2**20), power in W (NVML mW / 1000),
clocks in MHz, temperatures in C. A reading stores NVML's v1 memory info, whose ``used`` includes the
driver's reserved memory (free = total - used); on NVML the exporter's counters replace both with the v2
numbers DCGM and nvidia-smi report, which leave reserved memory out, and add ``DCGM_FI_DEV_FB_RESERVED``
(``nvml_counters``); a recorded reading has no reserved number, so it has no ``FB_RESERVED`` series.

Must not: call NVML or format anything.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubegpu.devices import GpuDevice
from kubegpu.devices import dcgm_fields as F
from kubegpu.devices.inventory import MIB

Counters = Mapping[str, Mapping[str, float]]  # GPU or MIG UUID -> DCGM field name -> value

# dcgm-exporter's etc/default-counters.csv line (enabled since 4.3.1-4.4.0, still in 4.5.3-4.8.2), only NVML's
# v2 memory info gives it (``nvml_counters``). Defined here, not in ``kubegpu.devices.dcgm_fields`` (another
# area's module), until that module lists it; ``EXPORTED_FIELDS`` is the exporter's field list.
FB_RESERVED = F.DcgmField(
    "DCGM_FI_DEV_FB_RESERVED", F.PromType.GAUGE, "Framebuffer memory reserved (in MiB)."
)
_AFTER = F.DCGM_FIELDS.index(F.FB_USED) + 1  # the CSV's order: FB_FREE, FB_USED, FB_RESERVED
EXPORTED_FIELDS: tuple[F.DcgmField, ...] = (*F.DCGM_FIELDS[:_AFTER], FB_RESERVED, *F.DCGM_FIELDS[_AFTER:])

# A MIG-enabled GPU is a GPU instance entity per MIG device to DCGM (dcgm-exporter's default ``-d f``). Its
# framebuffer fields are the instance's own (DCGM 3.1.3 release notes: FB_FREE/FB_USED/FB_TOTAL "per MIG
# device"); every other device-wide field is the physical GPU's, the same on each instance (dcgm-exporter
# issue #50: "all MIG instances on a physical GPU will have the same SM and MEM clocks"; issue #317's scrape:
# SM_CLOCK and GPU_TEMP per GPU_I_ID, one value). Utilisation is not reported for MIG (issue #430:
# GPU_UTIL, MEM_COPY_UTIL, ENC_UTIL, DEC_UTIL "are not supported for MIG configurations").
MIG_OWN = frozenset({F.FB_FREE.name, F.FB_USED.name, FB_RESERVED.name})
NOT_ON_MIG = frozenset({F.GPU_UTIL.name, F.MEM_COPY_UTIL.name, F.ENC_UTIL.name, F.DEC_UTIL.name})


def gpu_values(gpu: GpuDevice, counters: Counters) -> dict[str, float]:
    """DCGM field name -> value for one whole GPU; fields NVML could not give are absent."""
    t = gpu.telemetry
    util = t.get("util")
    clocks = t.get("clocks")
    out: dict[str, float] = {
        F.FB_USED.name: gpu.memory_used // MIB,
        F.FB_FREE.name: (gpu.memory_total - gpu.memory_used) // MIB,
    }
    _put(out, F.GPU_TEMP.name, t.get("temp"))
    power_mw = _number(t.get("power_mw"))
    if power_mw is not None:
        out[F.POWER_USAGE.name] = power_mw / 1000
    if isinstance(util, Mapping):
        _put(out, F.GPU_UTIL.name, util.get("gpu"))
        _put(out, F.MEM_COPY_UTIL.name, util.get("memory"))
    if isinstance(clocks, Mapping):
        _put(out, F.SM_CLOCK.name, clocks.get("sm"))
        _put(out, F.MEM_CLOCK.name, clocks.get("mem"))
    out.update(counters.get(gpu.uuid, {}))
    return out


def mig_values(mig_uuid: str, parent: Mapping[str, float], counters: Counters) -> dict[str, float]:
    """DCGM field name -> value for one MIG device, as DCGM reports a GPU instance: its own framebuffer
    (``MIG_OWN``, read by NVML per MIG device; absent when NVML gave none, never the whole card's), its
    parent's value for the device-wide fields (clocks, temperatures, power, energy, errors), and none of
    the utilisation fields (``NOT_ON_MIG``)."""
    out = {k: v for k, v in parent.items() if k not in MIG_OWN and k not in NOT_ON_MIG}
    out.update(counters.get(mig_uuid, {}))
    return out


def _put(out: dict[str, float], name: str, raw: object) -> None:
    value = _number(raw)
    if value is not None:
        out[name] = value


def _number(raw: object) -> float | None:
    # Readings store failed NVML queries as "ERR:<class>:<message>"; bool is an int subclass, not a value.
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return None
    return float(raw)
