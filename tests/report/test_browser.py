"""End to end in headless Chromium: the page ``kubegpu ui`` serves on 127.0.0.1, driven by Selenium.

Checks what a person would: every GPU is a tile, hovering or clicking one shows its pod, the filters and
the search narrow the map, the keyboard reaches and moves between tiles, the page logs no console
errors, dark mode and print styles apply, a changed snapshot reaches an open page, and the 1,213-node
openb cluster loads and answers a search within the bound. Screenshots go to the artefacts directory.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubegpu.explain.engine import Engine
from kubegpu.sources import load_files
from kubegpu.testing.builders import make_pod
from tests.report.chromium import set_filter, severe_logs, visible, wait_for
from tests.report.conftest import UiServer


@pytest.fixture(scope="module")
def demo_ui(start_ui: Callable[..., UiServer], demo_dir: Path) -> UiServer:
    return start_ui("--snapshot", str(demo_dir), "--interval", "1")


@pytest.fixture
def demo_page(browser: Any, demo_ui: UiServer) -> Any:
    browser.get(demo_ui.url)
    browser.get_log("browser")  # start each test with an empty console
    wait_for(lambda: "GPUs shown" in browser.find_element("id", "f-status").text, "the script to run")
    return browser


def test_tiles_equal_gpus_and_no_console_errors(demo_page: Any, demo_dir: Path, artifacts: Path) -> None:
    engine = Engine(load_files(demo_dir))
    gpus = sum(
        len({d.gpu_index for p in m.plans.values() for d in p.devices})
        for m in engine.cluster.devices.models
        if m is not None
    )
    assert len(demo_page.find_elements("css selector", "button.gpu")) == gpus == 49
    assert demo_page.find_element("id", "f-status").text.startswith(f"9 nodes, {gpus} GPUs shown")
    demo_page.save_screenshot(str(artifacts / "demo.png"))
    assert severe_logs(demo_page) == []


def test_report_file_works_offline(browser: Any, tmp_path: Path, artifacts: Path) -> None:
    """The file ``kubegpu report`` writes, opened from disk: complete, and nothing fetched."""
    from click.testing import CliRunner

    from kubegpu.cli.report_cmd import report

    out = tmp_path / "demo.html"
    assert CliRunner().invoke(report, ["--demo", "-O", str(out)]).exit_code == 0
    browser.get(out.as_uri())
    browser.get_log("browser")
    wait_for(lambda: "GPUs shown" in browser.find_element("id", "f-status").text, "the script to run")
    assert browser.execute_script("return document.querySelectorAll('button.gpu').length") == 49
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert severe_logs(browser) == []


def test_hover_and_click_show_the_pod(demo_page: Any) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    tile = demo_page.find_element("css selector", 'button.gpu[data-pods~="research/rl-sweep-1"]')
    demo_page.execute_script("arguments[0].scrollIntoView({block: 'center'})", tile)  # the map is below
    ActionChains(demo_page).move_to_element(tile).perform()
    title = demo_page.find_element("id", "detail-title")
    wait_for(lambda: title.text.startswith("gpu-train-01 · GPU"), "the hovered tile's details")
    assert "research/rl-sweep-1" in demo_page.find_element("id", "detail-lines").text

    other = demo_page.find_element("css selector", 'button.gpu[data-gpu="gpu-mig-01/0"]')
    # centred, or WebDriver scrolls it to the top edge under the sticky filter bar
    demo_page.execute_script("arguments[0].scrollIntoView({block: 'center'})", other)
    other.click()
    wait_for(lambda: title.text == "gpu-mig-01 · GPU 0", "the clicked tile's details")
    assert "ml-infer/embed-small" in demo_page.find_element("id", "detail-lines").text
    assert "pinned" in other.get_attribute("class").split()
    demo_page.execute_script("arguments[0].scrollIntoView({block: 'center'})", tile)
    ActionChains(demo_page).move_to_element(tile).perform()  # pinned: hovering elsewhere changes nothing
    time.sleep(0.1)
    assert title.text == "gpu-mig-01 · GPU 0"
    ActionChains(demo_page).send_keys(Keys.ESCAPE).perform()
    assert "pinned" not in other.get_attribute("class").split()


def test_filters_and_search(demo_page: Any, artifacts: Path) -> None:
    set_filter(demo_page, "f-ns", "research")
    cards = visible(demo_page, "#map .node")
    assert {c.get_attribute("data-node") for c in cards} == {"gpu-train-01", "gpu-train-02"}
    matches = demo_page.find_elements("css selector", "button.gpu.match")
    assert sorted(m.get_attribute("data-pods") for m in matches) == [
        f"research/rl-sweep-{i}" for i in range(1, 5)
    ]
    assert [q.get_attribute("data-ns") for q in visible(demo_page, ".quota")] == ["research"]
    demo_page.execute_script("document.getElementById('map').scrollIntoView()")
    demo_page.save_screenshot(str(artifacts / "demo-namespace-research.png"))

    demo_page.find_element("id", "f-clear").click()
    set_filter(demo_page, "f-pool", "inference")
    assert {c.get_attribute("data-node") for c in visible(demo_page, "#map .node")} == {
        "gpu-infer-01", "gpu-infer-02",
    }  # fmt: skip

    demo_page.find_element("id", "f-clear").click()
    set_filter(demo_page, "f-node", "gpu-dgx")
    wait_for(lambda: demo_page.find_element("id", "f-status").text.startswith("1 nodes"), "the node filter")
    assert [c.get_attribute("data-node") for c in visible(demo_page, "#map .node")] == ["gpu-dgx-01"]

    demo_page.find_element("id", "f-clear").click()
    set_filter(demo_page, "f-pod", "whisper")
    whisper = [f"ml-infer/whisper-{i}" for i in range(3)]
    # typing fires one input event per key: wait for the last one's result
    wait_for(lambda: "; 3 GPUs match" in demo_page.find_element("id", "f-status").text, "the search")
    matched = demo_page.find_elements("css selector", "button.gpu.match")
    assert sorted(m.get_attribute("data-pods") for m in matched) == whisper

    set_filter(demo_page, "f-pod", "urgent-eval")  # a Pending pod: no tile, its explanation stays
    wait_for(lambda: "; 0 GPUs match" in demo_page.find_element("id", "f-status").text, "the search")
    assert [p.get_attribute("data-pod") for p in visible(demo_page, ".pending")] == ["ml-train/urgent-eval"]
    assert visible(demo_page, "#map .node") == []
    assert severe_logs(demo_page) == []


def test_keyboard_reaches_and_moves_between_tiles(demo_page: Any) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    active = lambda: demo_page.switch_to.active_element  # noqa: E731
    demo_page.find_element("tag name", "body").click()
    for _ in range(30):  # skip links, the filters, then the first tile
        ActionChains(demo_page).send_keys(Keys.TAB).perform()
        if "gpu" in (active().get_attribute("class") or "").split():
            break
    first = active()
    assert "gpu" in first.get_attribute("class").split(), "Tab never reached a GPU tile"
    start = first.get_attribute("data-gpu")
    ActionChains(demo_page).send_keys(Keys.ARROW_RIGHT).perform()
    moved = active().get_attribute("data-gpu")
    assert moved != start and moved.rpartition("/")[2] == "1"
    ActionChains(demo_page).send_keys(Keys.ENTER).perform()
    assert demo_page.find_element("id", "detail-title").text.endswith("· GPU 1")
    ActionChains(demo_page).send_keys(Keys.ARROW_DOWN).perform()  # the same GPU of the next node
    assert active().get_attribute("data-gpu").rpartition("/")[0] != moved.rpartition("/")[0]
    ActionChains(demo_page).send_keys(Keys.ESCAPE).perform()


def test_dark_mode_and_print_styles(demo_page: Any, artifacts: Path) -> None:
    def emulate(**params: Any) -> None:
        demo_page.execute_cdp_cmd("Emulation.setEmulatedMedia", params)

    bg = "return getComputedStyle(document.body).backgroundColor"
    assert demo_page.execute_script(bg) == "rgb(255, 255, 255)"
    emulate(features=[{"name": "prefers-color-scheme", "value": "dark"}])
    assert demo_page.execute_script(bg) == "rgb(13, 17, 23)"
    demo_page.execute_script("document.getElementById('map').scrollIntoView()")
    demo_page.save_screenshot(str(artifacts / "demo-dark.png"))
    emulate(media="print", features=[])
    nav = "return getComputedStyle(document.querySelector('nav.controls')).display"
    assert demo_page.execute_script(nav) == "none"
    emulate(media="", features=[])
    assert demo_page.execute_script(nav) != "none"


def test_live_view_picks_up_a_changed_snapshot(
    browser: Any, start_ui: Callable[..., UiServer], demo_dir: Path, tmp_path: Path
) -> None:
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    (snapshot / "cluster.yaml").write_text((demo_dir / "cluster.yaml").read_text(encoding="utf-8"))
    server = start_ui("--snapshot", str(snapshot), "--interval", "1")
    browser.get(server.url)
    browser.get_log("browser")
    wait_for(lambda: "GPUs shown" in browser.find_element("id", "f-status").text, "the script to run")
    set_filter(browser, "f-pool", "training")  # the filter must survive the refresh
    assert browser.find_elements("css selector", 'button.gpu[data-pods~="late/new-job"]') == []
    browser.find_element("css selector", 'button.gpu[data-gpu="gpu-train-01/0"]').click()  # pin one
    late = make_pod("new-job").ns("late").gpu(1).on("gpu-reserved-01").tolerate("nvidia.com/gpu").obj()
    (snapshot / "late.json").write_text(json.dumps(late), encoding="utf-8")
    wait_for(
        lambda: browser.find_elements("css selector", 'button.gpu[data-pods~="late/new-job"]'),
        "the new pod to appear on the open page",
    )
    assert browser.find_element("id", "f-pool").get_attribute("value") == "training"
    pinned = browser.find_elements("css selector", "button.gpu.pinned")
    assert [p.get_attribute("data-gpu") for p in pinned] == ["gpu-train-01/0"]
    namespaces = browser.find_elements("css selector", "#f-ns option")
    assert "late" in [o.get_attribute("value") for o in namespaces]
    assert {c.get_attribute("data-pool") for c in visible(browser, "#map .node")} == {"training"}
    assert severe_logs(browser) == []


def test_openb_cluster_renders_and_searches(
    browser: Any, start_ui: Callable[..., UiServer], openb_dir: Path, artifacts: Path
) -> None:
    server = start_ui("--snapshot", str(openb_dir), "--interval", "600")
    browser.get(server.url)  # returns after the load event
    loaded_ms = browser.execute_script("return performance.getEntriesByType('navigation')[0].loadEventEnd")
    # counted in the page: 6,212 element handles over the WebDriver wire would take seconds
    assert browser.execute_script("return document.querySelectorAll('button.gpu').length") == 6212
    assert browser.find_element("id", "f-status").text.startswith("1213 nodes, 6212 GPUs shown")
    started = time.monotonic()
    set_filter(browser, "f-pod", "job-00042")
    wait_for(lambda: "GPUs match" in browser.find_element("id", "f-status").text, "the search on 1,213 nodes")
    search_ms = (time.monotonic() - started) * 1000
    (hit,) = visible(browser, "#map .node")
    hit.find_element("css selector", "button.gpu.match").click()
    assert "job-00042" in browser.find_element("id", "detail-lines").text
    browser.execute_script("arguments[0].scrollIntoView()", hit)
    browser.save_screenshot(str(artifacts / "openb-search.png"))
    # speed is measured here but not asserted (speed goals live in benchmarks/); the bounded waits above
    # are what a usable page must meet
    print(f"openb: load {loaded_ms:.0f} ms, search {search_ms:.0f} ms")
    assert severe_logs(browser) == []


@pytest.mark.parametrize("width", [1280, 1920])
def test_page_reads_top_down_at_common_widths(
    browser: Any, demo_ui: UiServer, width: int, artifacts: Path
) -> None:
    """At 1280 and 1920 px: headline, then Pending pods, then findings, then the map, each below the last;
    nothing wider than the window; the headline's first line inside the first screen."""
    browser.set_window_size(width, 1000)
    try:
        browser.get(demo_ui.url)
        wait_for(lambda: "GPUs shown" in browser.find_element("id", "f-status").text, "the script to run")
        tops = browser.execute_script(
            "return ['headline', 'pending', 'findings', 'map'].map("
            "id => document.getElementById(id).getBoundingClientRect().top + window.scrollY)"
        )
        assert tops == sorted(tops) and len(set(tops)) == 4, tops
        inner, scroll = browser.execute_script(
            "return [window.innerWidth, document.documentElement.scrollWidth]"
        )
        assert scroll <= inner, f"page is {scroll} px wide in a {inner} px window"
        first = browser.execute_script(
            "return document.querySelector('#headline p').getBoundingClientRect().bottom"
        )
        assert first <= browser.execute_script("return window.innerHeight")
        assert "Pending GPU pod(s)" in browser.find_element("id", "headline").text
        browser.save_screenshot(str(artifacts / f"demo-{width}.png"))
    finally:
        browser.set_window_size(1400, 1000)
