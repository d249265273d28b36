"""Scrape-time reading with a short cache, /healthz, and the XID gauge (R13.3, R16).

Pins: dcgm-exporter's ``DCGM_FI_DEV_XID_ERRORS`` is the last XID code (a gauge, 0 before any); the
NVIDIA device plugin's health rule (application XIDs 13, 31, 43, 45, 68 leave a GPU healthy), shared
through ``kubegpu.devices``. Time is virtual: the collector reads an injected clock.
"""

from __future__ import annotations

import json

from exporter_helpers import DGX1, H200, ReadingBackend, Scraper
from tests.clock import ManualClock

from kubegpu.devices.health import HealthEvent
from kubegpu.exporter.collector import GpuCollector
from kubegpu.exporter.xids import XidLog
from kubegpu.node.discovery import RecordedBackend


def test_scrapes_within_the_ttl_share_one_reading_and_a_later_scrape_reads_again() -> None:
    backend = ReadingBackend(json.loads((H200 / "nvml.json").read_text()))
    clock = ManualClock(100)
    scraper = Scraper(GpuCollector(backend, ttl_s=2.0, clock=clock))
    try:
        scraper.scrape()
        clock.now += 1.9
        scraper.scrape()
        assert backend.reads == 1
        clock.now += 0.1
        scraper.scrape()
        assert backend.reads == 2
    finally:
        scraper.close()


class Broken:
    def inventory(self) -> object:
        raise RuntimeError("NVML init failed: Driver Not Loaded")


def test_a_failed_device_reading_makes_healthz_503_and_keeps_metrics_served() -> None:
    scraper = Scraper(GpuCollector(Broken()))  # type: ignore[arg-type]
    try:
        status, content_type, body = scraper.get("/healthz")
        assert (status, body) == (503, "device reading failed: NVML init failed: Driver Not Loaded\n")
        assert content_type.startswith("text/plain")
        got = scraper.scrape()
        assert got.series["kubegpu_exporter_source_up"] == {frozenset({("source", "devices")}): 0}
        assert scraper.get("/nope")[0] == 404
    finally:
        scraper.close()


def test_healthz_is_ok_and_metrics_use_prometheus_text_0_0_4() -> None:
    scraper = Scraper(GpuCollector(RecordedBackend(H200 / "nvml.json")))
    try:
        assert scraper.get("/healthz")[::2] == (200, "ok\n")
        assert scraper.get("/metrics")[1] == "text/plain; version=0.0.4; charset=utf-8"
    finally:
        scraper.close()


def _scrape_with(xids: XidLog) -> object:
    scraper = Scraper(GpuCollector(RecordedBackend(DGX1), xids=xids))
    try:
        return scraper.scrape()
    finally:
        scraper.close()


GPU0 = "GPU-0000d6e1-0000-4000-8000-000000000000"
GPU1 = "GPU-0000d6e1-0000-4000-8000-000000000001"


def test_xid_gauge_is_the_last_code_per_gpu_and_zero_before_any() -> None:
    xids = XidLog()
    xids.on_event(HealthEvent(GPU0, 79))
    xids.on_event(HealthEvent(GPU0, 13))
    got = _scrape_with(xids)
    assert got.one("DCGM_FI_DEV_XID_ERRORS", gpu="0") == 13  # the last one, not a count
    assert got.one("DCGM_FI_DEV_XID_ERRORS", gpu="1") == 0
    assert got.types["DCGM_FI_DEV_XID_ERRORS"] == "gauge"
    # 79 (fell off the bus) is critical; 13 (graphics engine exception) is an application XID.
    assert got.one("kubegpu_gpu_healthy", gpu="0") == 0
    assert got.one("kubegpu_gpu_healthy", gpu="1") == 1


def test_an_application_xid_alone_leaves_the_gpu_healthy() -> None:
    xids = XidLog()
    xids.on_event(HealthEvent(GPU1, 43))
    got = _scrape_with(xids)
    assert got.one("DCGM_FI_DEV_XID_ERRORS", gpu="1") == 43
    assert got.one("kubegpu_gpu_healthy", gpu="1") == 1


def test_an_event_naming_no_gpu_applies_to_all_and_registration_failure_is_no_xid_value() -> None:
    xids = XidLog()
    xids.on_event(HealthEvent(None, 48))
    xids.on_event(HealthEvent(GPU1, -1))  # the watcher could not register GPU1 for events
    got = _scrape_with(xids)
    assert {got.one("DCGM_FI_DEV_XID_ERRORS", gpu=str(i)) for i in range(8)} == {48}
    assert {got.one("kubegpu_gpu_healthy", gpu=str(i)) for i in range(8)} == {0}


def test_xid_series_carry_err_code_and_dcgm_exporters_err_msg() -> None:
    """dcgm-exporter 4.5.3-4.8.2 internal/pkg/collector/gpu_collector.go ``toMetric`` adds ``err_code`` and
    ``err_msg`` (``xidErrCodeToText`` of internal/pkg/collector/xid_errors.go: 0 "No Error", 79 "GPU has
    fallen off the bus"; a code past the table, ``unknownErr`` "Unknown Error") to DCGM_FI_DEV_XID_ERRORS."""
    xids = XidLog()
    xids.on_event(HealthEvent(GPU0, 79))
    xids.on_event(HealthEvent(GPU1, 999))
    got = _scrape_with(xids)
    assert (
        got.one("DCGM_FI_DEV_XID_ERRORS", gpu="0", err_code="79", err_msg="GPU has fallen off the bus") == 79
    )
    assert got.one("DCGM_FI_DEV_XID_ERRORS", gpu="1", err_code="999", err_msg="Unknown Error") == 999
    assert got.one("DCGM_FI_DEV_XID_ERRORS", gpu="2", err_code="0", err_msg="No Error") == 0
    assert not any("err_code" in dict(k) for k in got.series["DCGM_FI_DEV_FB_USED"])
