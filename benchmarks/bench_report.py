"""The openb report in headless Chromium: load to interactive, and the first click's response (goal < 2 s).

Builds the page ``kubegpu report --openb`` writes (1,213 nodes, 6,212 GPUs after one packing run of the
simulator: default trace, FGD, seed 42, 100 % arrived), opens it from disk in Debian's Chromium
(the browser the tests use, /usr/bin/chromium through /usr/bin/chromedriver) and, per run, in a fresh
tab state (``about:blank`` in between, so nothing is reused from the previous load but the disk cache):

- ready: navigation start → the ``kubegpu-ready`` mark the page's script sets once every handler is bound
  and the first filter pass has run (``performance.getEntriesByName``; navigation start is time 0);
- first paint and load event: navigation start → ``first-contentful-paint`` and → ``loadEventEnd``, for
  comparison (the map is on screen, every resource is in);
- click → shown: a real click (WebDriver) on a GPU tile of a node near the end of the map, from the
  click event's timestamp to the frame after the detail panel names that GPU.

    python benchmarks/bench_report.py [--runs 7] [--seed 42] [--policy FGD] [--arrived 100]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.report.chromium import start_chromium, wait_for  # noqa: E402

from kubegpu.report import render  # noqa: E402
from kubegpu.sim.bench import default_data_dir  # noqa: E402
from kubegpu.sim.packed import PackingSetup, collect_packed, pack  # noqa: E402

GOAL_MS = 2000
# records the click event's time and the first frame after the detail panel's title changes
PROBE = """
window.__probe = {};
document.addEventListener("click", (e) => { window.__probe.click = e.timeStamp; }, { capture: true, once: true });
new MutationObserver((_, obs) => {
  obs.disconnect();
  requestAnimationFrame(() => { window.__probe.shown = performance.now(); });
}).observe(document.getElementById("detail-title"), { childList: true, characterData: true, subtree: true });
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--policy", default="FGD")
    ap.add_argument("--arrived", type=int, default=100)
    ap.add_argument("--data", type=Path, default=default_data_dir())
    args = ap.parse_args()

    started = time.perf_counter()
    data = collect_packed(pack(PackingSetup(args.data, "default", args.policy, args.seed, args.arrived)))
    html = render(data)
    built_s = time.perf_counter() - started
    tmp = Path(tempfile.mkdtemp(prefix="bench-report-"))
    page = tmp / "openb.html"
    page.write_text(html, encoding="utf-8")
    target = data.nodes[-3].gpus[0]  # far down the map: the tile is laid out only once scrolled to
    print(
        f"page: {len(data.nodes)} nodes, {data.gpu_count} GPUs, {len(html) / 1e6:.1f} MB, built in {built_s:.1f} s"
    )

    driver = start_chromium(tmp / "profile")
    ready, paint, load, click = [], [], [], []
    try:
        for _ in range(args.runs):
            driver.get("about:blank")
            driver.get(page.as_uri())
            wait_for(lambda: driver.execute_script("return document.documentElement.dataset.ready"), "ready")
            ready.append(
                driver.execute_script("return performance.getEntriesByName('kubegpu-ready')[0].startTime")
            )
            paint.append(
                driver.execute_script(
                    "return performance.getEntriesByName('first-contentful-paint')[0].startTime"
                )
            )
            load.append(
                driver.execute_script("return performance.getEntriesByType('navigation')[0].loadEventEnd")
            )
            driver.execute_script(PROBE)
            tile = driver.find_element("css selector", f'button.gpu[data-gpu="{target.node}/{target.index}"]')
            tile.click()
            probe = wait_for(
                lambda: driver.execute_script("return window.__probe.shown && window.__probe"), "click"
            )
            assert driver.find_element("id", "detail-title").text == f"{target.node} · GPU {target.index}"
            click.append(probe["shown"] - probe["click"])
    finally:
        driver.quit()

    print(f"{'metric (ms)':<28}{'p50':>8}{'max':>8}   runs={args.runs}, goal: ready + click < {GOAL_MS} ms")
    for name, values in (
        ("navigation → ready", ready),
        ("navigation → first paint", paint),
        ("navigation → load event", load),
        ("click → details shown", click),
    ):
        print(f"{name:<28}{statistics.median(values):>8.0f}{max(values):>8.0f}")
    worst = max(r + c for r, c in zip(ready, click, strict=True))
    print(
        f"{'ready + click, worst run':<28}{'':>8}{worst:>8.0f}   {'meets' if worst < GOAL_MS else 'MISSES'} the goal"
    )


if __name__ == "__main__":
    main()
