"""The openb cluster after a real packing run of the simulator, and the simulator's real figures, in the report.

The page is what ``kubegpu report --openb`` writes (default trace, FGD, seed 42, workload 100 % of GPU
capacity) with ``--figures`` pointing at what ``kubegpu bench openb`` writes for a small grid (default
trace × BestFit, FGD × seeds 42, 43); the command itself is run once more on a short workload. Expected values come from elsewhere than the page: the node list
in ../shared (1,213 nodes, 6,212 GPUs; per-model counts), the figure files on disk (bytes, and the PNG
header's size, 768×480: ``bench.plot`` draws 6.4×4.0 in at 120 dpi), and the simulator's own record of
the same run — its ``GpuShareLedger`` (which pod holds which GPU, how many milli-GPU) and ``PackingRun``
(cumulative milli-GPU allocated, the fragment amount after the last pod, failures by class).
"""

from __future__ import annotations

import base64
import csv
import re
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubegpu.cli.report_cmd import report
from kubegpu.report import load_figures, render
from kubegpu.sim.bench import run_grid
from kubegpu.sim.packed import PackedCluster, PackingSetup, collect_packed, pack
from tests.conftest import SHARED
from tests.report.chromium import screenshot, set_filter, severe_logs, visible, wait_for
from tests.report.parsed_html import Parsed

DATA = SHARED / "data" / "alibaba-gpu-2023"
NODE_LIST = DATA / "csv" / "openb_node_list_gpu_node.csv"
SEED = 42
SHARE_LINE = re.compile(r"^(\d+)m of 1000m: (openb/\S+)$")
WHOLE_LINE = re.compile(r"^kubegpu\.io/gpu-milli: (openb/\S+)$")


@pytest.fixture(scope="module")
def node_list() -> list[dict[str, str]]:
    with NODE_LIST.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def packed() -> PackedCluster:
    """The run the page shows, with the simulator's own state at its end."""
    return pack(PackingSetup(DATA, "default", "FGD", SEED, 100))


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``kubegpu bench openb``'s output for a small grid, through the grid runner the command calls."""
    out = tmp_path_factory.mktemp("bench-openb")
    run_grid(DATA, ["default"], ["BestFit", "FGD"], [42, 43], out, workers=2)
    return out / "figures"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, packed: PackedCluster, figures: Path) -> Path:
    """What ``kubegpu report --openb --seed 42 --figures DIR`` writes, built from the same run as
    ``packed`` (the command itself is run below, on a shorter workload)."""
    out = tmp_path_factory.mktemp("openb-report") / "openb.html"
    out.write_text(render(collect_packed(packed), load_figures(figures)[0]), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def parsed(page: Path) -> Parsed:
    return Parsed(page.read_text(encoding="utf-8"))


def tile_titles(parsed: Parsed) -> dict[str, list[str]]:
    """``node/gpu`` → the lines of the tile's details (its ``title``)."""
    return {t["data-gpu"]: t["title"].split("\n") for t in parsed.all("button", "gpu")}


def test_every_gpu_of_the_node_list_is_a_tile(parsed: Parsed, node_list: list[dict[str, str]]) -> None:
    assert len(parsed.all("article", "node")) == len(node_list) == 1213
    assert len(parsed.all("button", "gpu")) == sum(int(r["gpu"]) for r in node_list) == 6212
    # pools are GPU models (nvidia.com/gpu.product), with the node list's counts per model
    per_model = Counter(r["model"] for r in node_list)
    sections = {s["data-pool"]: s for s in parsed.all("section", "pool")}
    assert set(sections) == set(per_model)
    cards = Counter(c["data-pool"] for c in parsed.all("article", "node"))
    assert cards == per_model


def test_tiles_show_the_simulators_placement(parsed: Parsed, packed: PackedCluster) -> None:
    """Every pod the run placed is on the tiles of exactly its GPUs, with its milli-GPU; nothing else."""
    cluster = packed.ledger.cluster
    expected: dict[str, Counter[str]] = {}
    for key, (idx, gpus, milli) in packed.ledger.held.items():
        for g in gpus:
            expected.setdefault(f"{cluster.nodes[idx].name}/{g}", Counter())[key] += milli
    shown: dict[str, Counter[str]] = {}
    for gpu, lines in tile_titles(parsed).items():
        for line in lines:
            if m := SHARE_LINE.match(line):
                shown.setdefault(gpu, Counter())[m.group(2)] += int(m.group(1))
            elif m := WHOLE_LINE.match(line):
                shown.setdefault(gpu, Counter())[m.group(1)] += 1000
    assert shown == expected
    # and their total is the run's own running sum of milli-GPU allocated (kept apart from the ledger)
    assert sum(sum(c.values()) for c in shown.values()) == int(packed.run.allocated[-1])
    assert any(m < 1000 for _, _, m in packed.ledger.held.values()), "the default trace has sharing pods"


def test_shared_gpus_are_drawn_as_shares(parsed: Parsed, packed: PackedCluster) -> None:
    # a GPU held by sharing pods: one chip per pod, as wide as its milli, plus the free rest
    key, (idx, (g,), milli) = next((k, v) for k, v in sorted(packed.ledger.held.items()) if v[2] < 1000)
    gpu = f"{packed.ledger.cluster.nodes[idx].name}/{g}"
    (tile,) = [t for t in parsed.all("button", "gpu") if t["data-gpu"] == gpu]
    assert "part" in tile["class"].split() and key in tile["data-pods"].split()
    lines = tile["title"].split("\n")
    assert f"{milli}m of 1000m: {key}" in lines
    free = int(packed.ledger.gpu_left[idx, g])
    assert (f"{free}m of 1000m: free" in lines) == (free > 0)
    assert "no UUID: a simulated GPU (packing run)" in lines


def test_fragmentation_per_pool_adds_up_to_the_run(parsed: Parsed, packed: PackedCluster) -> None:
    assert "fragment amount (GPUs)" in parsed.text_of("th", "n")
    cells = _summary_cells(parsed)
    assert len(cells) == 7  # A10, G2, G3, P100, T4, V100M16, V100M32
    # the page rounds each pool to 0.1 GPU; the run recorded the whole cluster's amount in milli-GPU
    total = sum(float(c[-1]) for c in cells.values())
    assert total == pytest.approx(float(packed.run.frag[-1]) / 1000, abs=0.05 * len(cells))
    gpus = sum(int(c[1]) for c in cells.values())
    held = sum(int(c[2]) for c in cells.values())
    idle = sum(int(c[3]) for c in cells.values())
    assert gpus == 6212 and held + idle == gpus
    assert idle == int((packed.ledger.gpu_left == 1000).sum())


def _summary_cells(parsed: Parsed) -> dict[str, list[str]]:
    """Pool → its numeric cells (nodes, GPUs, held, idle, unhealthy, stranded, block, free slots, fragment)."""
    out: dict[str, list[str]] = {}
    pool = ""
    for i, (tag, attrs) in enumerate(parsed.elements):
        if tag == "tr":
            pool = attrs.get("data-pool", "")
            if pool:
                out[pool] = []
        elif tag == "td" and pool and attrs.get("class") == "n":
            out[pool].append("".join(parsed.texts.get(i, [])))
    return out


def test_pods_the_run_could_not_place_are_pending_with_their_message(
    parsed: Parsed, packed: PackedCluster
) -> None:
    articles = parsed.all("article", "pending")
    gpu_failures = sum(n for kind, n in packed.run.failed.items() if kind != "cpu")
    assert len(articles) == gpu_failures > 0
    messages = parsed.text_of("pre", "msg")
    assert len(messages) == gpu_failures
    assert all(m.startswith("0/1213 nodes are available: ") for m in messages)


def test_figures_are_the_benchs_png_files(parsed: Parsed, figures: Path) -> None:
    files = sorted(figures.glob("*.png"))
    assert [f.stem for f in files] == ["default_frag", "default_unallocated"]
    imgs = parsed.all("img")
    assert [i["alt"] for i in imgs] == [f.stem for f in files]
    for img, f in zip(imgs, files, strict=True):
        data = base64.b64decode(img["src"].removeprefix("data:image/png;base64,"))
        assert data == f.read_bytes()
        assert struct.unpack(">II", data[16:24]) == (768, 480)  # IHDR: 6.4×4.0 in at 120 dpi


def test_report_command_runs_the_simulator(tmp_path: Path, figures: Path) -> None:
    out = tmp_path / "openb.html"
    args = ["--openb", "--seed", "7", "--policy", "BestFit", "--arrived", "5", "--figures", str(figures)]
    result = CliRunner().invoke(report, [*args, "-O", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    page = Parsed(text)
    assert len(page.all("button", "gpu")) == 6212
    assert "<h1>kubegpu report: openb default, BestFit packing run, seed 7, arrived 5 % of GPU" in text
    assert [i["alt"] for i in page.all("img")] == ["default_frag", "default_unallocated"]


def test_figures_dir_without_pngs_is_named(tmp_path: Path, figures: Path) -> None:
    # the bench's output folder itself, not its figures/ folder: said, not silently empty
    result = CliRunner().invoke(
        report, ["--demo", "--figures", str(figures.parent), "-O", str(tmp_path / "r.html")]
    )
    assert result.exit_code == 0
    assert (
        f"warning: {figures.parent}: no *.png file to embed (bench openb writes its figures to OUT/figures)"
        in (result.stderr)
    )


def test_openb_with_another_source_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(report, ["--openb", "--demo", "-O", str(tmp_path / "x.html")])
    assert result.exit_code == 2
    assert "--openb is a source of its own" in result.output


# In headless Chromium: the same file, opened from disk


@pytest.fixture(scope="module")
def openb_browser(browser: Any, page: Path) -> Any:
    browser.get(page.as_uri())
    wait_for(
        lambda: browser.execute_script("return document.documentElement.dataset.ready"), "the page's script"
    )
    browser.get_log("browser")
    return browser


def test_chromium_shows_every_gpu_without_console_errors(openb_browser: Any, artifacts: Path) -> None:
    b = openb_browser
    assert b.execute_script("return document.querySelectorAll('button.gpu').length") == 6212
    assert b.find_element("id", "f-status").text == "1213 nodes, 6212 GPUs shown"
    assert b.execute_script("return performance.getEntriesByName('kubegpu-ready').length") == 1
    screenshot(b, artifacts / "openb-sim.png")
    assert severe_logs(b) == []


def test_chromium_hover_and_click_show_the_pod(
    openb_browser: Any, packed: PackedCluster, artifacts: Path
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    b = openb_browser
    nodes = packed.ledger.cluster.nodes
    held = sorted(packed.ledger.held.items())
    whole_key, (whole_idx, whole_gpus, _) = next((k, v) for k, v in held if v[2] == 1000)
    share_key, (share_idx, (share_gpu,), milli) = next((k, v) for k, v in held if v[2] < 1000)

    whole = b.find_element("css selector", f'button.gpu[data-gpu="{nodes[whole_idx].name}/{whole_gpus[0]}"]')
    # the map comes after the headline, Pending pods and findings: scroll to the tile as a person would
    # (a W3C pointer move does not scroll)
    b.execute_script("arguments[0].scrollIntoView({block: 'center'})", whole)
    ActionChains(b).move_to_element(whole).perform()
    title = b.find_element("id", "detail-title")
    wait_for(lambda: title.text == f"{nodes[whole_idx].name} · GPU {whole_gpus[0]}", "the hovered tile")
    assert f"kubegpu.io/gpu-milli: {whole_key}" in b.find_element("id", "detail-lines").text

    share = b.find_element("css selector", f'button.gpu[data-gpu="{nodes[share_idx].name}/{share_gpu}"]')
    b.execute_script("arguments[0].scrollIntoView({block: 'center'})", share)  # not under the filter bar
    share.click()
    wait_for(lambda: title.text == f"{nodes[share_idx].name} · GPU {share_gpu}", "the clicked tile")
    assert f"{milli}m of 1000m: {share_key}" in b.find_element("id", "detail-lines").text.split("\n")
    assert "pinned" in share.get_attribute("class").split()
    # the share chip is drawn as wide as its share of the tile's chip row
    chip_fraction = b.execute_script(
        "const t = arguments[0], key = arguments[1].split('/')[1];"
        "const row = t.querySelector('.slots'), chip = [...row.children].find(c => c.textContent === key);"
        "return chip.getBoundingClientRect().width / row.getBoundingClientRect().width;",
        share,
        share_key,
    )
    assert chip_fraction == pytest.approx(milli / 1000, abs=0.05)
    screenshot(b, artifacts / "openb-sim-pinned.png")
    ActionChains(b).send_keys(Keys.ESCAPE).perform()
    assert severe_logs(b) == []


def test_chromium_filters_and_search(
    openb_browser: Any, packed: PackedCluster, node_list: list[dict[str, str]], artifacts: Path
) -> None:
    b = openb_browser
    status = lambda: b.find_element("id", "f-status").text  # noqa: E731
    shown_cards = "return document.querySelectorAll('#map .node:not([hidden])').length"

    set_filter(b, "f-pool", "V100M32")
    per_model = Counter(r["model"] for r in node_list)
    gpus_v100m32 = sum(int(r["gpu"]) for r in node_list if r["model"] == "V100M32")
    assert b.execute_script(shown_cards) == per_model["V100M32"] == 30
    assert status() == f"30 nodes, {gpus_v100m32} GPUs shown"
    b.execute_script("document.getElementById('map').scrollIntoView()")
    screenshot(b, artifacts / "openb-sim-pool-V100M32.png")

    b.find_element("id", "f-clear").click()
    set_filter(b, "f-ns", "openb")  # every placed pod is in the trace's namespace: every held GPU matches
    held_gpus = len({(i, g) for i, gs, _ in packed.ledger.held.values() for g in gs})
    assert status() == f"1213 nodes, 6212 GPUs shown; {held_gpus} GPUs match"

    b.find_element("id", "f-clear").click()
    node = node_list[100]["sn"]
    set_filter(b, "f-node", node)
    wait_for(lambda: status().startswith("1 nodes"), "the node filter")
    assert [c.get_attribute("data-node") for c in visible(b, "#map .node")] == [node]

    b.find_element("id", "f-clear").click()
    key, (idx, gpus, _) = next((k, v) for k, v in sorted(packed.ledger.held.items()) if len(v[1]) == 2)
    name = key.partition("/")[2]
    set_filter(b, "f-pod", name)
    wait_for(lambda: "GPUs match" in status(), "the search")
    hits = b.find_elements("css selector", "button.gpu.match")
    on_node = packed.ledger.cluster.nodes[idx].name
    # a name can be the prefix of another (openb-pod-1 of openb-pod-1234): match what the page matches
    also = {
        f"{packed.ledger.cluster.nodes[i].name}/{g}"
        for k, (i, gs, _) in packed.ledger.held.items()
        if name in k
        for g in gs
    }
    assert {h.get_attribute("data-gpu") for h in hits} == also >= {f"{on_node}/{g}" for g in gpus}
    b.execute_script("arguments[0].scrollIntoView()", hits[0])
    screenshot(b, artifacts / "openb-sim-search.png")
    b.find_element("id", "f-clear").click()
    assert severe_logs(b) == []


def test_chromium_displays_the_figures(openb_browser: Any, artifacts: Path) -> None:
    b = openb_browser
    b.execute_script("document.getElementById('figures').scrollIntoView()")
    sizes = wait_for(
        lambda: b.execute_script(
            "const imgs = [...document.querySelectorAll('#figures img')];"
            "return imgs.every(i => i.complete) && imgs.map(i => [i.naturalWidth, i.naturalHeight]);"
        ),
        "the figures to decode",
    )
    assert sizes == [[768, 480], [768, 480]]
    screenshot(b, artifacts / "openb-sim-figures.png")
    assert severe_logs(b) == []
