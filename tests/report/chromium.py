"""Debian's headless Chromium under Selenium, for the report's browser tests and benchmarks/bench_report.py.

The driver's path is given explicitly, so Selenium Manager never downloads a browser or a driver.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def start_chromium(profile_dir: Path) -> Any:
    """A headless Chromium 1400×1000 that keeps the console log (``driver.get_log("browser")``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--window-size=1400,1000", f"--user-data-dir={profile_dir}",
    ):  # fmt: skip
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    return driver


WAIT_S = 10


def wait_for(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def severe_logs(driver: Any) -> list[dict[str, Any]]:
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def set_filter(driver: Any, element_id: str, value: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    el = driver.find_element(By.ID, element_id)
    if el.tag_name == "select":
        Select(el).select_by_value(value)
    else:
        el.clear()
        if value:
            el.send_keys(value)


def visible(driver: Any, css: str) -> list[Any]:
    """Elements matching ``css`` that are rendered (not inside anything hidden)."""
    return list(driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).filter(e => e.offsetParent !== null)", css
    ))  # fmt: skip


def screenshot(driver: Any, path: Path) -> None:
    """Save a screenshot once the page has painted twice: cards under ``content-visibility: auto`` that
    were just scrolled into view are laid out on the next frame, not at once."""
    driver.execute_async_script(
        "const done = arguments[0]; requestAnimationFrame(() => requestAnimationFrame(() => done()));"
    )
    driver.save_screenshot(str(path))
