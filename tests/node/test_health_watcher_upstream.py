"""``NvmlHealthWatcher`` and the XID rules against NVIDIA k8s-device-plugin v0.20.0 internal/rm/health.go.

QA (t3) drove the real watcher with a fake pynvml; these tests do the same in-process with a fake that has
pynvml's error classes: ``RegisterEvents`` answering NotSupported only warns (the device stays Healthy),
a wait error other than a timeout marks every device Unhealthy, and ``DP_DISABLE_HEALTHCHECKS`` /
``DP_ENABLE_HEALTHCHECKS`` are read as ``getDisabledHealthCheckXids`` reads them.
"""

from __future__ import annotations

import threading
import types
from typing import Any

import pytest

from kubegpu.devices.health import (
    NO_EVENTS_XID,
    WAIT_FAILED_XID,
    HealthEvent,
    health_checks_disabled,
    xid_is_critical,
)
from kubegpu.node import health as node_health
from kubegpu.node.health import NvmlHealthWatcher


class _FakeNvml(types.SimpleNamespace):
    """Two GPUs; ``register_error`` is raised by RegisterEvents for GPU 1, ``wait_error`` by every wait."""

    class NVMLError(Exception):
        pass

    class NVMLError_NotSupported(NVMLError):
        pass

    class NVMLError_Timeout(NVMLError):
        pass

    class NVMLError_Unknown(NVMLError):
        pass

    nvmlEventTypeXidCriticalError = 8

    def __init__(self, register_error: type[Exception] | None, wait_error: type[Exception]) -> None:
        super().__init__()
        self.register_error = register_error
        self.wait_error = wait_error
        self.waited = threading.Event()

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlEventSetCreate(self) -> object:
        return object()

    def nvmlEventSetFree(self, s: object) -> None: ...
    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return f"GPU-{h}"

    def nvmlDeviceRegisterEvents(self, h: int, mask: int, s: object) -> None:
        if h == 1 and self.register_error is not None:
            raise self.register_error()

    def nvmlEventSetWait_v2(self, s: object, ms: int) -> Any:
        self.waited.set()
        raise self.wait_error()


def _watch(
    monkeypatch: pytest.MonkeyPatch, register_error: type[Exception] | None, wait_error: type[Exception]
) -> list[HealthEvent]:
    fake = _FakeNvml(register_error, wait_error)
    monkeypatch.setattr(node_health, "load_pynvml", lambda: fake)
    events: list[HealthEvent] = []
    watcher = NvmlHealthWatcher(events.append, wait_ms=10)
    watcher.start()
    assert fake.waited.wait(5.0)
    watcher.stop()
    return events


def test_register_events_not_supported_only_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    """health.go: ``case ret == nvml.ERROR_NOT_SUPPORTED: klog.Warningf("Device %v is too old to support
    healthchecking.")`` and no unhealthy report (QA t3 register_notsupported_gpu1 had GPU 1 Unhealthy)."""
    assert _watch(monkeypatch, _FakeNvml.NVMLError_NotSupported, _FakeNvml.NVMLError_Timeout) == []


def test_register_events_failing_otherwise_marks_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """health.go: ``case ret != nvml.SUCCESS: … Marking device %v as unhealthy``."""
    events = _watch(monkeypatch, _FakeNvml.NVMLError_Unknown, _FakeNvml.NVMLError_Timeout)
    assert events == [HealthEvent(uuid="GPU-1", xid=NO_EVENTS_XID)]


def test_a_wait_error_that_is_not_a_timeout_marks_every_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """health.go: ``if ret != nvml.SUCCESS { … Marking all devices as unhealthy`` after ``Wait(5000)``
    (QA t3 wait_error_unknown only logged)."""
    events = _watch(monkeypatch, None, _FakeNvml.NVMLError_Unknown)
    assert events and set(events) == {HealthEvent(uuid=None, xid=WAIT_FAILED_XID)}


@pytest.mark.parametrize(
    ("xid", "disable", "enable", "critical"),
    [
        (
            48,
            "48,all",
            "",
            False,
        ),  # an element "all" disables every check (QA t3 xid48_disable_list_with_all)
        (48, "ALL", "", False),  # lower-cased first
        (48, " xids ", "", False),
        (48, "48", "48", True),  # DP_ENABLE_HEALTHCHECKS overrides a skipped XID (v0.18.0+)
        (13, "", "13", True),  # ... and an application XID (QA t3 xid13_enabled_by_DP_ENABLE)
        (13, "", "all", True),  # enable=all: every XID counts
        (79, "all", "79", False),  # IsAllDisabled: checkHealth returns before watching anything
        (79, "all", "all", True),
        (WAIT_FAILED_XID, "13,79", "", True),  # the markers are in no list
        (NO_EVENTS_XID, "all", "", False),
    ],
)
def test_disable_and_enable_lists_as_upstream_reads_them(
    xid: int, disable: str, enable: str, critical: bool
) -> None:
    """health.go v0.20.0 ``getDisabledHealthCheckXids``, ``newHealthCheckXIDs``, ``IsDisabled``, ``IsAllDisabled``."""
    assert xid_is_critical(xid, disable, enable) is critical


@pytest.mark.parametrize(
    ("disable", "enable", "off"),
    [("all", "", True), ("79,all", "", True), ("all", "79", True), ("all", "all", False), ("79", "", False)],
)
def test_when_no_health_check_runs_at_all(disable: str, enable: str, off: bool) -> None:
    """health.go ``checkHealth``: ``if xids.IsAllDisabled() { return nil }``."""
    assert health_checks_disabled(disable, enable) is off
