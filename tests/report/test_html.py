"""The report page as HTML, checked with ``html.parser`` against the engine's own device ledger."""

from __future__ import annotations

import dataclasses
import json
import struct
import time
import urllib.error
import urllib.request
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubegpu.cli.report_cmd import report
from kubegpu.explain.diagnose import diagnose
from kubegpu.explain.engine import Engine
from kubegpu.model.snapshot import build_snapshot
from kubegpu.report import Live, collect, live_page, load_figures, render
from kubegpu.report.html import VERSION_MARK
from kubegpu.report.server import Page, ReportServer
from kubegpu.scheduler.device_ledger import ALLOCATION_ANNOTATION
from kubegpu.sources import load_demo, load_files
from kubegpu.testing.builders import make_node, make_pod
from tests.report.openb import OPENB_NODES, POOL_LABEL
from tests.report.parsed_html import Parsed


def physical_gpus(engine: Engine) -> dict[str, set[int]]:
    """Per node, the physical GPUs behind its advertised devices, straight from the device ledger."""
    out: dict[str, set[int]] = {}
    for model in engine.cluster.devices.models:
        if model is not None:
            out[model.node] = {d.gpu_index for p in model.plans.values() for d in p.devices}
    return out


@pytest.fixture(scope="module")
def demo() -> tuple[Engine, str]:
    engine = Engine(load_demo())
    data = collect(engine, diagnose(engine), POOL_LABEL, generated="2026-01-01 00:00:00 UTC")
    return engine, render(data)


def test_one_tile_per_physical_gpu_in_the_ledger(demo: tuple[Engine, str]) -> None:
    engine, text = demo
    page = Parsed(text)
    tiles = page.all("button", "gpu")
    expected = physical_gpus(engine)
    assert len(tiles) == sum(len(g) for g in expected.values()) == 49
    assert {t["data-gpu"] for t in tiles} == {f"{n}/{i}" for n, gpus in expected.items() for i in gpus}


def test_every_held_device_shows_its_pod_on_its_gpu(demo: tuple[Engine, str]) -> None:
    engine, text = demo
    tiles = {t["data-gpu"]: t for t in Parsed(text).all("button", "gpu")}
    ledger = engine.cluster.devices
    checked = 0
    for idx, model in enumerate(ledger.models):
        if model is None:
            continue
        for resource, held in ledger.held[idx].items():
            gpu_of = {d.id: d.gpu_index for d in model.plans[resource].devices}
            for device_id, pod in held.items():
                tile = tiles[f"{model.node}/{gpu_of[device_id]}"]
                assert pod in tile["data-pods"].split(), (device_id, pod)
                assert pod.partition("/")[0] in tile["data-ns"].split()
                assert pod in tile["title"]
                checked += 1
    assert checked == 23 + 1  # requested nvidia.com/gpu (whole GPUs and replicas) + one MIG device


def test_tile_states_mig_replicas_unhealthy_idle_and_synthesised(demo: tuple[Engine, str]) -> None:
    _, text = demo
    tiles = {t["data-gpu"]: t for t in Parsed(text).all("button", "gpu")}
    assert "unhealthy" in tiles["gpu-infer-01/3"]["class"].split()
    assert "UNHEALTHY" in tiles["gpu-infer-01/3"]["title"]
    assert "idle" in tiles["gpu-reserved-01/0"]["class"].split()
    mig = tiles["gpu-mig-01/0"]["title"]
    assert "MIG 1g.18gb" in mig and "MIG 3g.71gb" in mig and "ml-infer/embed-small" in mig
    assert tiles["gpu-ts-01/0"]["title"].count("replica") == 4
    # stand-in devices are marked; the DGX node publishes a real inventory and is not
    assert "synth" in tiles["gpu-train-01/0"]["class"].split()
    assert "synth" not in tiles["gpu-dgx-01/0"]["class"].split()
    assert "(stand-in)" in tiles["gpu-train-01/0"]["title"]
    assert "GPU-0000d6e1" in tiles["gpu-dgx-01/0"]["title"]
    # inside partitioned tiles, one chip per MIG device / replica
    assert text.count('class="slots"') == 1 + 4


def test_details_join_pod_workload_node_and_uuid(demo: tuple[Engine, str]) -> None:
    _, text = demo
    tiles = {t["data-gpu"]: t for t in Parsed(text).all("button", "gpu")}
    title = tiles["gpu-infer-01/0"]["title"].splitlines()
    assert title[0] == "gpu-infer-01 · GPU 0"
    assert title[1] == "UUID gpu-infer-01-gpu0 (stand-in)"
    assert "ml-infer/vllm-6b7c9d-4kq2p (ReplicaSet vllm-6b7c9d) (inferred)" in title[3]


def test_recorded_devices_are_shown_where_recorded_and_inferred_ones_say_so() -> None:
    recorded = make_pod("recorded").ns("t").gpu(1).on("a").obj()
    recorded["metadata"]["annotations"] = {
        ALLOCATION_ANNOTATION: json.dumps({"main": {"nvidia.com/gpu": ["a-gpu2"]}})
    }
    objects = [make_node("a").gpus(4).obj(), recorded, make_pod("guessed").ns("t").gpu(1).on("a").obj()]
    engine = Engine(build_snapshot([("test", o) for o in objects]))
    diagnosis = diagnose(engine)  # runs dry scheduling cycles first, as the report command does
    (card,) = collect(engine, diagnosis, POOL_LABEL).nodes
    slots = {s.holder: (g.index, s.assumed) for g in card.gpus for s in g.slots if s.holder}
    assert slots["t/recorded"] == (2, False)
    assert slots["t/guessed"][1] is True


def test_overcommitted_node_names_the_pods_without_devices() -> None:
    objects = [
        make_node("a").gpus(1).obj(),
        make_pod("first").ns("t").gpu(1).on("a").obj(),
        make_pod("second").ns("t").gpu(1).on("a").obj(),
    ]
    engine = Engine(build_snapshot([("test", o) for o in objects]))
    (card,) = collect(engine, diagnose(engine), POOL_LABEL).nodes
    assert [g.holders for g in card.gpus] == [("t/first",)]
    assert any(p.startswith("t/second requests GPUs but no free device") for p in card.problems)


def test_node_without_device_plugin_has_a_card_but_no_tiles(demo: tuple[Engine, str]) -> None:
    _, text = demo
    page = Parsed(text)
    cards = {c["data-node"]: c for c in page.all("article", "node")}
    assert "gpu-infer-02" in cards
    assert not any(t["data-gpu"].startswith("gpu-infer-02/") for t in page.all("button", "gpu"))
    assert "no GPU devices advertised" in page.text_of("p", "nogpu")


def test_pending_pods_carry_the_exact_scheduler_message(demo: tuple[Engine, str]) -> None:
    engine, text = demo
    page = Parsed(text)
    messages = page.text_of("pre", "msg")
    diag = diagnose(engine)
    assert [a["data-pod"] for a in page.all("article", "pending")] == [e.pod for e in diag.pending]
    for e in diag.pending:
        if e.message:
            assert e.message in messages
    assert any(m.startswith("0/9 nodes are available: 2 Insufficient nvidia.com/gpu") for m in messages)
    assert "Requests 1 nvidia.com/gpus." in text  # the misspelt resource, as the pod asks for it


def test_quota_bars_and_findings(demo: tuple[Engine, str]) -> None:
    _, text = demo
    page = Parsed(text)
    bars = page.all("div", "quota")
    quotas = [q for q in bars if "data-ns" in q]
    assert [q["data-ns"] for q in quotas] == ["ml-infer", "ml-infer", "ml-train", "research"]
    # GpuQueues of the demo (cohort gpu-org): inference has 3 vLLM, 3 whisper and 5 chat pods bound (11 GPUs)
    # plus embed-small's 1g.18gb slice; research's 4 rl-sweep pods fill its nominal 4; training holds 8
    assert [q["data-cohort"] for q in bars if "data-cohort" in q] == ["gpu-org"] * 5
    labels = [b["aria-label"] for b in page.all("svg", "bar")]
    assert labels[len(quotas) :] == [
        "11 of 20 used",
        "1 of 3 used",
        "0 of 1 used",
        "4 of 4 used",
        "8 of 24 used",
    ]
    full = [r for r in page.all("rect", "fill") if "full" in r["class"].split()]
    assert len(full) == 2 and {f["width"] for f in full} == {"100.0"}  # research: quota 4 of 4, queue 4 of 4
    assert len(page.all("article", "finding")) == len(diagnose(Engine(load_demo())).findings)


def test_self_contained_nothing_fetched(demo: tuple[Engine, str]) -> None:
    _, text = demo
    page = Parsed(text)
    for tag, attrs in page.elements:
        for name in ("src", "href", "action", "data", "poster"):
            value = attrs.get(name, "")
            assert not value or value.startswith(("#", "data:")), (tag, name, value)
    assert len(page.all("script")) == 1 and "src" not in page.all("script")[0]
    csp = next(a["content"] for a in page.all("meta") if a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp and "connect-src" not in csp
    assert "@media (prefers-color-scheme: dark)" in text and "@media print" in text


def test_ids_are_unique_and_skip_links_land(demo: tuple[Engine, str]) -> None:
    page = Parsed(demo[1])
    ids = [a["id"] for _, a in page.elements if "id" in a]
    assert len(ids) == len(set(ids))
    for link in page.all("a", "skip"):
        assert link["href"].removeprefix("#") in ids


def test_text_is_escaped(demo: tuple[Engine, str]) -> None:
    engine, _ = demo
    data = collect(engine, diagnose(engine), POOL_LABEL)
    evil = dataclasses.replace(data, description='<img src=x onerror="alert(1)">')
    text = render(evil)
    assert "<img src=x" not in text and "&lt;img src=x" in text


def test_keyboard_one_tab_stop_per_node(demo: tuple[Engine, str]) -> None:
    _, text = demo
    page = Parsed(text)
    tabbable = [t for t in page.all("button", "gpu") if t["tabindex"] == "0"]
    nodes_with_tiles = {t["data-gpu"].rpartition("/")[0] for t in page.all("button", "gpu")}
    assert len(tabbable) == len(nodes_with_tiles)
    assert all(t["aria-label"].startswith("GPU ") for t in page.all("button", "gpu"))


def test_fragmentation_summary_counts() -> None:
    objects = [
        make_node("a").gpus(4).label(POOL_LABEL, "p").obj(),
        make_node("b").gpus(4).label(POOL_LABEL, "p").cordon().obj(),
        make_pod("x").ns("t").gpu(1).on("a").obj(),
    ]
    engine = Engine(build_snapshot([("test", o) for o in objects]))
    (pool,) = collect(engine, diagnose(engine), POOL_LABEL).pools
    assert (pool.gpus, pool.held, pool.idle, pool.stranded, pool.largest_idle_block) == (8, 1, 7, 4, 3)
    assert pool.idle_spread == ((3, 1),)


def test_the_live_version_changes_with_what_the_page_shows_only() -> None:
    """The live view polls a version: the same cluster built at two times has one version (the generation
    time aside), a pod more another; the page carries its own version and no placeholder."""
    objects = [make_node("a").gpus(2).obj()]
    engine = Engine(build_snapshot([("test", o) for o in objects]))
    page1, one = live_page(
        collect(engine, diagnose(engine), POOL_LABEL, generated="2026-12-05 01:00:00 UTC"), (), 5
    )
    page2, two = live_page(
        collect(engine, diagnose(engine), POOL_LABEL, generated="2026-12-05 02:00:00 UTC"), (), 5
    )
    assert one == two and len(one) == 16
    assert f'data-version="{one}"' in page1 and VERSION_MARK not in page1 and page1 != page2
    engine = Engine(build_snapshot([("test", o) for o in [*objects, make_pod("x").gpu(1).on("a").obj()]]))
    assert live_page(collect(engine, diagnose(engine), POOL_LABEL, generated="t"), (), 5)[1] != one


def _png(width: int = 1, height: int = 1) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def test_figures_are_embedded_as_data_uris(tmp_path: Path) -> None:
    (tmp_path / "b-utilisation.png").write_bytes(_png())
    (tmp_path / "a-broken.png").write_bytes(b"not a png")
    figures, skipped = load_figures(tmp_path)
    assert [f.name for f in figures] == ["b-utilisation"]
    assert len(skipped) == 1 and "a-broken.png" in skipped[0]
    engine = Engine(load_demo())
    page = Parsed(render(collect(engine, diagnose(engine), POOL_LABEL), figures))
    (img,) = page.all("img")
    assert img["src"].startswith("data:image/png;base64,iVBORw0KGgo") and img["alt"] == "b-utilisation"


def test_report_command_writes_one_file(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = CliRunner().invoke(report, ["--demo", "-O", str(out)])
    assert result.exit_code == 0, result.output
    assert len(Parsed(out.read_text(encoding="utf-8")).all("button", "gpu")) == 49
    to_stdout = CliRunner().invoke(report, ["--demo", "-O", "-"])
    assert to_stdout.exit_code == 0 and to_stdout.stdout.startswith("<!doctype html>")
    assert CliRunner().invoke(report, ["-O", str(out)]).exit_code == 2  # no source given
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "openb_frag.png").write_bytes(_png())
    assert CliRunner().invoke(report, ["--demo", "-O", str(out), "--figures", str(figures)]).exit_code == 0
    assert [i["alt"] for i in Parsed(out.read_text(encoding="utf-8")).all("img")] == ["openb_frag"]


def test_openb_page_has_every_gpu(openb_dir: Path) -> None:
    import csv

    with OPENB_NODES.open(newline="") as f:
        rows = list(csv.DictReader(f))
    engine = Engine(load_files(openb_dir))
    text = render(collect(engine, diagnose(engine), POOL_LABEL))
    page = Parsed(text)
    assert len(page.all("article", "node")) == len(rows) == 1213
    assert len(page.all("button", "gpu")) == sum(int(r["gpu"]) for r in rows) == 6212
    assert len(text) < 5_000_000  # stays a file a browser opens at once


def test_server_is_read_only_and_swaps_pages() -> None:
    pages = iter([Page("<p>one</p>", "v1"), Page("<p>two</p>", "v2")])
    server = ReportServer(lambda: next(pages, Page("<p>two</p>", "v2")), interval_s=0.05)
    url = server.start()
    try:
        assert url.startswith("http://127.0.0.1:")
        deadline = time.monotonic() + 5
        while urllib.request.urlopen(url + "version").read() != b"v2" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert urllib.request.urlopen(url).read() == b"<p>two</p>"
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(url + "nothing")
        assert missing.value.code == 404
        with pytest.raises(urllib.error.HTTPError) as post:
            urllib.request.urlopen(urllib.request.Request(url, data=b"x", method="POST"))
        assert post.value.code == 501
    finally:
        server.stop()


def test_live_page_polls_its_own_server() -> None:
    engine = Engine(load_demo())
    text = render(collect(engine, diagnose(engine), POOL_LABEL), live=Live(5, "abc"))
    body = Parsed(text).all("body")[0]
    assert (body["data-refresh"], body["data-version"]) == ("5", "abc")
    assert "connect-src 'self'" in text


def test_findings_alike_but_for_their_pod_are_one_article_naming_them_all() -> None:
    """Three 3-GPU pods on two nodes with 2 + 2 free: each gets the scattered-GPU finding, alike but for its
    pod. The page shows one article ("warning, 3 pods: the pod needs 3 …") whose filter attributes carry
    all three pods and both nodes, not three articles (at 5,000 nodes, 400 such findings each naming the
    ~2,000 nodes with a free GPU made 50 MB of the page)."""
    objects = [make_node("a").gpus(4).obj(), make_node("b").gpus(4).obj()]
    objects += [make_pod(f"r{n}").gpu(2).on(n).obj() for n in ("a", "b")]
    objects += [make_pod(f"p{i}").gpu(3).obj() for i in range(3)]
    engine = Engine(build_snapshot([("test", o) for o in objects]))
    report = diagnose(engine)
    scattered = [f for f in report.findings if "the free ones are scattered" in f.title]
    assert len(scattered) == 3
    page = Parsed(render(collect(engine, report, POOL_LABEL)))
    articles = [a for a in page.all("article", "finding") if "default/p0" in a["data-pods"]]
    assert len(articles) == 1
    assert articles[0]["data-pods"].split() == ["default/p0", "default/p1", "default/p2"]
    assert set(articles[0]["data-nodes"].split()) == {"a", "b"}
    texts = ["".join(v) for v in page.texts.values()]
    assert "warning, 3 pods" in texts  # the badge
    assert any("the pod needs 3 nvidia.com/gpu on one node; the free ones are scattered" in t for t in texts)


def test_a_pending_pods_claims_are_named_above_its_evidence() -> None:
    """docs/examples/dra/selector-rejects-every-device.yaml: default/train names ResourceClaim train-gpus as
    ``gpus``; its evidence says ``pod claim gpus`` (one text for pods whose claims ask alike), and the page
    says, once and before the evidence, which ResourceClaim that is."""
    snap = load_files(
        Path(__file__).resolve().parents[2] / "docs/examples/dra/selector-rejects-every-device.yaml"
    )
    snap.kube_version = "1.34"
    engine = Engine(snap)
    text = render(collect(engine, diagnose(engine), POOL_LABEL, generated="2026-01-01 00:00:00 UTC"))
    line = "pod claim gpus is ResourceClaim default/train-gpus"
    assert text.count(line) == 1
    assert text.index(line) < text.index("pod claim gpus request gpus wants 2")


@pytest.mark.parametrize(
    ("causes", "listed", "more"), [(5, 5, ""), (6, 6, ""), (7, 5, "and 2 more cause(s) below")]
)
def test_the_headline_lists_the_causes_the_table_view_lists(causes: int, listed: int, more: str) -> None:
    """The page's headline cuts the causes where ``kubegpu diagnose`` does (``Summary.headline_causes``: never
    "1 more", which takes the place the sixth cause needs)."""
    from kubegpu.explain import summary as summary_module

    engine = Engine(load_demo())
    data = collect(engine, diagnose(engine), POOL_LABEL, generated="2026-01-01 00:00:00 UTC")
    real = summary_module.summarize

    def fixed(*args: object) -> summary_module.Summary:
        s = real(*args)
        s.causes = [(f"cause {i}", 10 - i) for i in range(causes)]
        return s

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("kubegpu.report.html.summarize", fixed)
        page = render(data)
    head = page[page.index('id="headline"') : page.index("<b>First:</b>")]
    assert head.count("<li>") == listed
    assert (more in head) if more else "more cause(s)" not in head


def test_a_pending_pods_autoscaler_reading_is_on_the_page() -> None:
    """Cluster Autoscaler's NotTriggerScaleUp on kubernetes/autoscaler#3869's pod (tests/realcases): the page
    shows what the autoscaler said and what it means, as the terminal view does, not only the scheduler's."""
    engine = Engine(load_files(Path(__file__).parents[1] / "realcases" / "ca-scale-from-zero-gpu.yaml"))
    text = render(collect(engine, diagnose(engine), POOL_LABEL))
    assert "Cluster Autoscaler said (NotTriggerScaleUp):" in text
    assert "node-template/resources/nvidia.com/gpu" in text
