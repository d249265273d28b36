"""Counters only the exporter reads from NVML, beyond the node agent's reading (R13.2).

``NvmlCounters()`` returns, per GPU UUID, the DCGM fields that ``kubegpu.node.discovery`` does not read,
or reads differently: framebuffer used/free/reserved by NVML's v2 memory info (reserved memory apart), total energy (``nvmlDeviceGetTotalEnergyConsumption``, mJ), PCIe replays, volatile and aggregate ECC
totals, remapped rows, encoder/decoder utilisation and memory temperature (``NVML_FI_DEV_MEMORY_TEMP``);
and per MIG device UUID its framebuffer used/free (v2 too). Each query that NVML refuses (``NotSupported`` on this
card, ECC off, a VM) leaves its field out. Read-only queries only.

``hold()`` keeps one NVML initialisation open for the exporter's lifetime: NVML counts ``nvmlInit`` and
``nvmlShutdown`` calls, so the node agent's per-reading init/shutdown then costs a counter update instead
of loading the driver each scrape.

Must not: decide labels, attribution or health.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubegpu.devices import dcgm_fields as F
from kubegpu.devices.inventory import MIB
from kubegpu.exporter.values import FB_RESERVED
from kubegpu.node.discovery import NvmlUnavailable, load_pynvml, text_of

# nvmlValueType_t -> the c_nvmlValue_t member holding the value.
_VALUE_MEMBER = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal"}


class NvmlCounters:
    """Reads the extra counters of every GPU on this host; raises ``NvmlUnavailable`` without NVML."""

    def __init__(self) -> None:
        self._nvml = load_pynvml()

    def hold(self) -> None:
        """Initialise NVML once more and never shut that one down (see the module docstring)."""
        try:
            self._nvml.nvmlInit()
        except self._nvml.NVMLError as exc:
            raise NvmlUnavailable(f"NVML init failed: {exc}") from exc

    def __call__(self) -> dict[str, dict[str, float]]:
        nvml = self._nvml
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            raise NvmlUnavailable(f"NVML init failed: {exc}") from exc
        try:
            out: dict[str, dict[str, float]] = {}
            for i in range(nvml.nvmlDeviceGetCount()):
                h = nvml.nvmlDeviceGetHandleByIndex(i)
                out[text_of(nvml.nvmlDeviceGetUUID(h))] = _gpu_counters(nvml, h)
                out.update(_mig_counters(nvml, h))
            return out
        finally:
            nvml.nvmlShutdown()


def _gpu_counters(nvml: Any, h: Any) -> dict[str, float]:
    def q(fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except nvml.NVMLError:
            return None

    out: dict[str, float] = {}

    def put(field: F.DcgmField, value: object) -> None:
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[field.name] = float(value)

    out.update(_framebuffer(nvml, h))
    put(F.TOTAL_ENERGY, q(nvml.nvmlDeviceGetTotalEnergyConsumption, h))
    put(F.PCIE_REPLAY, q(nvml.nvmlDeviceGetPcieReplayCounter, h))
    enc = q(nvml.nvmlDeviceGetEncoderUtilization, h)  # [utilization %, sampling period us]
    put(F.ENC_UTIL, enc[0] if enc else None)
    dec = q(nvml.nvmlDeviceGetDecoderUtilization, h)
    put(F.DEC_UTIL, dec[0] if dec else None)
    corrected, uncorrected = nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
    put(F.ECC_SBE_VOL, q(nvml.nvmlDeviceGetTotalEccErrors, h, corrected, nvml.NVML_VOLATILE_ECC))
    put(F.ECC_DBE_VOL, q(nvml.nvmlDeviceGetTotalEccErrors, h, uncorrected, nvml.NVML_VOLATILE_ECC))
    put(F.ECC_SBE_AGG, q(nvml.nvmlDeviceGetTotalEccErrors, h, corrected, nvml.NVML_AGGREGATE_ECC))
    put(F.ECC_DBE_AGG, q(nvml.nvmlDeviceGetTotalEccErrors, h, uncorrected, nvml.NVML_AGGREGATE_ECC))
    rows = q(nvml.nvmlDeviceGetRemappedRows, h)  # (correctable, uncorrectable, pending, failure)
    if rows is not None:
        put(F.CORRECTABLE_REMAPPED_ROWS, rows[0])
        put(F.UNCORRECTABLE_REMAPPED_ROWS, rows[1])
        put(F.ROW_REMAP_FAILURE, int(bool(rows[3])))
    values = q(nvml.nvmlDeviceGetFieldValues, h, [nvml.NVML_FI_DEV_MEMORY_TEMP])
    if values and values[0].nvmlReturn == nvml.NVML_SUCCESS:
        member = _VALUE_MEMBER.get(values[0].valueType)
        put(F.MEMORY_TEMP, getattr(values[0].value, member) if member else None)
    return out


def _mig_counters(nvml: Any, h: Any) -> dict[str, dict[str, float]]:
    try:
        current, _pending = nvml.nvmlDeviceGetMigMode(h)
        if current != nvml.NVML_DEVICE_MIG_ENABLE:
            return {}
        count = nvml.nvmlDeviceGetMaxMigDeviceCount(h)
    except nvml.NVMLError:
        return {}
    out: dict[str, dict[str, float]] = {}
    for i in range(count):
        try:
            m = nvml.nvmlDeviceGetMigDeviceHandleByIndex(h, i)
        except nvml.NVMLError:
            continue  # slot i holds no MIG device
        out[text_of(nvml.nvmlDeviceGetUUID(m))] = _framebuffer(nvml, m)
    return out


def _framebuffer(nvml: Any, h: Any) -> dict[str, float]:
    """FB used/free in MiB as DCGM (since 2.4.5, with DCGM_FI_DEV_FB_RESERVED) and nvidia-smi count them.

    NVML's v2 memory info splits the driver's reserved memory off ``used`` (used + free + reserved =
    total; nvmlMemory_v2_t in the R590 NVML reference; an idle H200 on driver 580: nvidia-smi reserved 616,
    used 0 MiB); the v1 info the node agent's reading stores counts it as used (615 MiB there). v2 also
    gives ``DCGM_FI_DEV_FB_RESERVED``. Where the driver has no v2 call, the v1 numbers stand, without it.
    """
    try:
        mem = nvml.nvmlDeviceGetMemoryInfo(h, nvml.nvmlMemory_v2)
        return {
            F.FB_USED.name: float(mem.used // MIB),
            F.FB_FREE.name: float(mem.free // MIB),
            FB_RESERVED.name: float(mem.reserved // MIB),
        }
    except nvml.NVMLError:
        pass
    try:
        mem = nvml.nvmlDeviceGetMemoryInfo(h)
    except nvml.NVMLError:
        return {}
    return {F.FB_USED.name: float(mem.used // MIB), F.FB_FREE.name: float((mem.total - mem.used) // MIB)}
