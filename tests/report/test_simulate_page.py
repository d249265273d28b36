"""``kubegpu simulate --report FILE``: one self-contained HTML page with the before/after table and the
replay series as figures.

The replay is the hand-worked borrowing case of ``tests/sim/test_simulate_batch.py`` (queue a borrows
b's unused GPU before, waits after b's nominal quota is set to 0), so the table's figures are known
independently of the page: queue a pending p50 / p95 0 / 0 before, 50 / 95 after.
"""

from __future__ import annotations

import base64
import io
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from PIL import Image

from kubegpu.cli.sim_cmd import simulate
from kubegpu.sim.html_report import FIGURE_DPI, FIGURE_SIZE_IN
from tests.report.chromium import severe_logs, wait_for
from tests.sim.cli_inputs import node, pod, queue, table, write

PNG_SIZE = (round(FIGURE_SIZE_IN[0] * FIGURE_DPI), round(FIGURE_SIZE_IN[1] * FIGURE_DPI))  # 640 × 400


class Page(HTMLParser):
    """Every URL-bearing attribute, the replay table's cells and the images' sources."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.images: list[str] = []
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "action", "poster", "data") and value is not None:
                self.urls.append(value)
        if tag == "img":
            self.images.append(dict(attrs).get("src") or "")
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th"):
            self._cell = []

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    d = tmp_path_factory.mktemp("simulate-report")
    cluster = write(d / "cluster.yaml", node("n1"), node("n2"))
    work = write(
        d / "work.yaml",
        queue("a", 1), queue("b", 1), pod("p0", 0, 100, "a"), pod("p1", 0, 100, "a"),
    )  # fmt: skip
    out = d / "replay.html"
    args = ["--snapshot", cluster, "--workload", work, "--queue-nominal", "b=nvidia.com/gpu=0"]
    result = CliRunner().invoke(simulate, [*args, "--report", str(out)], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    return out, result.output


def parsed(path: Path) -> Page:
    p = Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def test_page_fetches_nothing(page: tuple[Path, str]) -> None:
    p = parsed(page[0])
    assert p.urls, "the page has images and an icon"
    assert all(u.startswith("data:") for u in p.urls), [u[:40] for u in p.urls if not u.startswith("data:")]
    assert "http://" not in page[0].read_text() and "https://" not in page[0].read_text()


def test_table_is_the_printed_table(page: tuple[Path, str]) -> None:
    rows = parsed(page[0]).rows
    assert rows[0] == ["metric", "before: default", "after: b nominal nvidia.com/gpu=0"]
    on_page = {r[0]: r[1:] for r in rows[1:]}
    assert {"metric": rows[0][1:], **on_page} == table(page[1])  # every metric, every value, as printed
    assert on_page["queue a: pending p50 / p95 (s)"] == ["0 / 0", "50 / 95"]  # worked by hand
    assert on_page["placed"] == ["2", "2"]


def test_figures_are_pngs_of_the_documented_size(page: tuple[Path, str]) -> None:
    images = parsed(page[0]).images
    assert len(images) == 2
    for src in images:
        assert src.startswith("data:image/png;base64,")
        image = Image.open(io.BytesIO(base64.b64decode(src.removeprefix("data:image/png;base64,"))))
        assert image.format == "PNG" and image.size == PNG_SIZE
        image.verify()


def test_page_loads_in_chromium_with_its_figures(browser: Any, page: tuple[Path, str]) -> None:
    browser.get(page[0].as_uri())
    wait_for(lambda: browser.execute_script("return document.readyState") == "complete", "the page to load")
    widths = browser.execute_script(
        "return Array.from(document.images).map(i => i.complete ? i.naturalWidth : 0)"
    )
    assert widths == [PNG_SIZE[0], PNG_SIZE[0]]
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert severe_logs(browser) == []
