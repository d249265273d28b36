"""Fixtures for the report tests: snapshot directories, a running ``kubegpu ui``, and headless Chromium.

The browser is Debian's ``chromium`` driven through ``chromium-driver`` by Selenium, with the driver's
path given explicitly so Selenium Manager never downloads anything. Without them the browser tests
skip, unless ``KUBEGPU_REQUIRE_BROWSER=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from tests.report.chromium import CHROMEDRIVER, CHROMIUM, start_chromium
from tests.report.openb import OPENB_NODES, write_openb_snapshot

UI_START_TIMEOUT_S = 30


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedded demo cluster as a snapshot directory (what ``kubegpu demo export`` writes)."""
    d = tmp_path_factory.mktemp("demo-snapshot")
    text = resources.files("kubegpu.demo").joinpath("cluster.yaml").read_text(encoding="utf-8")
    (d / "cluster.yaml").write_text(text, encoding="utf-8")
    return d


@pytest.fixture(scope="session")
def openb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not OPENB_NODES.exists():
        pytest.fail(f"{OPENB_NODES} is missing: the 1,213-node test reads the openb node list in ../shared")
    d = tmp_path_factory.mktemp("openb-snapshot")
    write_openb_snapshot(d)
    return d


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: $KUBEGPU_TEST_ARTIFACTS (CI keeps it), else a pytest temporary directory."""
    configured = os.environ.get("KUBEGPU_TEST_ARTIFACTS")
    d = Path(configured) if configured else tmp_path_factory.mktemp("report-artifacts")
    d.mkdir(parents=True, exist_ok=True)
    return d


class UiServer:
    """``kubegpu ui`` in a subprocess, exactly as a user starts it (through the click command)."""

    def __init__(self, *args: str) -> None:
        code = "from kubegpu.cli.report_cmd import ui; ui(prog_name='kubegpu ui')"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, *args, "--port", "0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        deadline = time.monotonic() + UI_START_TIMEOUT_S
        seen = []
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break  # the process ended
            seen.append(line)
            m = re.search(r"serving (http://127\.0\.0\.1:\d+/)", line)
            if m:
                self.url = m.group(1)
                return
        self.stop()
        raise AssertionError(f"kubegpu ui did not start: {''.join(seen)}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


@pytest.fixture(scope="session")
def start_ui() -> Iterator[Callable[..., UiServer]]:
    started: list[UiServer] = []

    def start(*args: str) -> UiServer:
        server = UiServer(*args)
        started.append(server)
        return server

    yield start
    for s in started:
        s.stop()


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing or shutil.which("chromium") is None:
        reason = f"headless Chromium is not installed ({', '.join(missing) or 'chromium not on PATH'})"
        if os.environ.get("KUBEGPU_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    pytest.importorskip("selenium.webdriver")
    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"))
    yield driver
    driver.quit()
