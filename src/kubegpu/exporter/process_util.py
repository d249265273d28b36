"""Per-process SM utilisation from a reading's ``proc_util`` samples (R13.4, beyond dcgm-exporter).

NVML's ``nvmlDeviceGetProcessUtilization`` answers, for each process that ran kernels, samples of the
percentage of time during one of the driver's sample periods (1/6 s to 1 s, by product) in which a
kernel of that process was executing; the node agent's reading stores the samples newer than a
``since_us`` it chose (``kubegpu.node.discovery.process_utilization``). ``latest_sm`` keeps, per PID,
the newest sample's ``sm``: what ``nvidia-smi pmon`` shows for the process in its latest interval.

No value is not 0: a device whose reading has no ``proc_util`` (older readings), NVML's ``NotSupported``
or ``NotFound`` (no process had a sample since ``since_us``), or a PID without a sample of its own gives
no value, and the exporter then leaves the series out. An idle process has no sample, by NVML's contract
(only processes with non-zero utilisation in the period are listed).

Must not: call NVML or decide which pod a process belongs to (``attribution`` does).
"""

from __future__ import annotations

from kubegpu.devices import GpuDevice
from kubegpu.devices.inventory import is_recorded_error
from kubegpu.errors import InputError


def latest_sm(gpu: GpuDevice, *, source: str = "") -> dict[int, float]:
    """PID -> SM utilisation (%) of its newest sample newer than ``since_us``; {} when NVML gave none."""
    raw = gpu.telemetry.get("proc_util")
    if raw is None or is_recorded_error(raw):
        return {}
    obj = f"device {gpu.index}"
    if not isinstance(raw, dict) or not isinstance(raw.get("samples"), list):
        raise InputError(
            "expected {since_us, samples} or an ERR: string", source=source, obj=obj, field="proc_util"
        )
    since = _integer(raw.get("since_us"), source, obj, "proc_util.since_us")
    newest: dict[int, tuple[int, float]] = {}
    for i, sample in enumerate(raw["samples"]):
        where = f"proc_util.samples[{i}]"
        if not isinstance(sample, dict):
            raise InputError("expected an object", source=source, obj=obj, field=where)
        pid, ts, sm = (_integer(sample.get(k), source, obj, f"{where}.{k}") for k in ("pid", "ts", "sm"))
        # NVML's buffer can carry a sample at or before lastSeenTimeStamp; the contract is "newer than".
        if ts > since and (pid not in newest or ts > newest[pid][0]):
            newest[pid] = (ts, float(sm))
    return {pid: sm for pid, (_ts, sm) in newest.items()}


def _integer(value: object, source: str, obj: str, field: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputError(
            f"expected a non-negative integer, got {value!r}", source=source, obj=obj, field=field
        )
    return value
