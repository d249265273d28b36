"""``kubegpu report`` (one self-contained HTML file) and ``kubegpu ui`` (the same page, live and read-only).

Both take the usual sources (``--snapshot`` / ``--demo`` / ``--kube``) and engine options from
``kubegpu.cli.options``, which ``main`` shares; this module never imports ``main`` (``main`` loads it
lazily to register the commands).
"""

from __future__ import annotations

import datetime
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kubegpu.cli.options import engine_options, load_snapshot, make_engine, one_shot, source_options
from kubegpu.cli.sim_cmd import _data_dir as data_dir
from kubegpu.cli.sim_cmd import _data_option as data_option
from kubegpu.model.gpu_facts import DEFAULT_POOL_LABEL
from kubegpu.scheduler.registry import PACKING_POLICIES
from kubegpu.sim.packed import PackingSetup

if TYPE_CHECKING:
    from kubegpu.page.figures import Figure
    from kubegpu.report.server import Page

DEFAULT_OUT = "kubegpu-report.html"


POOL_LABEL_OPTION = click.option(
    "--pool-label",
    default=DEFAULT_POOL_LABEL,
    show_default=True,
    help="Node label that names hardware pools (the GPU map groups nodes by it).",
)


FIGURES_OPTION = click.option(
    "--figures",
    "figures_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    metavar="DIR",
    default=None,
    help="Embed every *.png in DIR (e.g. `kubegpu simulate` output) as a figure.",
)


def _figures(figures_dir: Path | None) -> list[Figure]:
    from kubegpu.page.figures import load_figures

    if figures_dir is None:
        return []
    figures, skipped = load_figures(figures_dir)
    for line in skipped:
        click.echo(f"warning: {line}", err=True)
    if not figures and not skipped:
        hint = (
            " (bench openb writes its figures to OUT/figures)" if (figures_dir / "figures").is_dir() else ""
        )
        click.echo(f"warning: {figures_dir}: no *.png file to embed{hint}", err=True)
    return figures


def _build(
    src: dict[str, Any], pool_label: str, profile: str, plugin_configs: tuple[str, ...], seed: int,
    figures: list[Figure], refresh_s: int | None,
) -> Page:  # fmt: skip
    """Read the source, diagnose, render: one page, with its version for the live view."""
    from kubegpu.explain.diagnose import diagnose
    from kubegpu.report import collect, live_page, render
    from kubegpu.report.server import Page

    snap = load_snapshot(**src)
    engine = make_engine(snap, profile, plugin_configs, seed)
    data = collect(engine, diagnose(engine, pool_label=pool_label), pool_label, generated=_now())
    if not refresh_s:  # a file: no version to poll
        return Page(render(data, figures), "")
    return Page(*live_page(data, figures, refresh_s))


def _build_openb(setup: PackingSetup, figures: list[Figure]) -> str:
    """Run the packing simulator once and render the cluster it leaves."""
    from kubegpu.report import render
    from kubegpu.sim.packed import collect_packed, pack

    data = collect_packed(pack(setup), generated=_now())
    return render(data, figures)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


@click.command("report")
@source_options
@engine_options
@click.option("-O", "--out", "out", default=DEFAULT_OUT, show_default=True, metavar="FILE",
              help="Where to write the HTML page; - writes it to stdout.")  # fmt: skip
@FIGURES_OPTION
@POOL_LABEL_OPTION
@click.option("--openb", is_flag=True,
              help="Instead of a cluster: the openb cluster (1,213 nodes) after one packing run of the "
                   "simulator (--trace, --policy, --seed, --arrived).")  # fmt: skip
@data_option
@click.option("--trace", default="default", show_default=True, help="With --openb: the openb pod list.")
@click.option("--policy", type=click.Choice(list(PACKING_POLICIES)), default="FGD", show_default=True,
              help="With --openb: the packing policy.")  # fmt: skip
@click.option("--arrived", type=click.IntRange(1, 200), default=100, show_default=True, metavar="PCT",
              help="With --openb: the workload drawn, in % of the cluster's GPU capacity.")  # fmt: skip
@one_shot
def report(
    out: str, figures_dir: Path | None, pool_label: str, openb: bool, data: Path | None, trace: str,
    policy: str, arrived: int, profile: str, plugin_configs: tuple[str, ...], seed: int, **src: Any,
) -> None:  # fmt: skip
    """Write the GPU map, Pending pods, quotas, fragmentation and findings as ONE self-contained HTML file."""
    if openb:
        if src["snapshots"] or src["demo"] or src["kube"]:
            raise click.UsageError(
                "--openb is a source of its own: give it without --snapshot, --demo or --kube"
            )
        setup = PackingSetup(data_dir(data), trace, policy, seed, arrived)
        html = _build_openb(setup, _figures(figures_dir))
    else:
        html = _build(src, pool_label, profile, plugin_configs, seed, _figures(figures_dir), None).html
    if out == "-":
        sys.stdout.write(html)
        return
    Path(out).write_text(html, encoding="utf-8")
    click.echo(f"wrote {out}", err=True)


@click.command("ui")
@source_options
@engine_options
@click.option("--port", default=8765, show_default=True, help="Port on 127.0.0.1 (0 picks a free one).")
@click.option("--interval", default=30, show_default=True, type=click.IntRange(min=1),
              help="Seconds between re-reading the source; open pages refresh when it changed.")  # fmt: skip
@FIGURES_OPTION
@POOL_LABEL_OPTION
def ui(
    port: int, interval: int, figures_dir: Path | None, pool_label: str, profile: str,
    plugin_configs: tuple[str, ...], seed: int, **src: Any,
) -> None:  # fmt: skip
    """Serve the report on http://127.0.0.1:PORT/, re-reading the snapshot directory or --kube periodically.

    Read-only: the server answers GET and HEAD only and the source is only ever listed.
    """
    from kubegpu.report.server import ReportServer

    figures = _figures(figures_dir)
    server = ReportServer(
        lambda: _build(src, pool_label, profile, plugin_configs, seed, figures, interval),
        interval_s=interval, port=port,
    )  # fmt: skip
    url = server.start()
    try:
        click.echo(
            f"serving {url} (read-only; re-reads the source every {interval} s; Ctrl-C stops)", err=True
        )
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
