"""``kubegpu simulate --report FILE``: the before/after replay as one self-contained HTML page.

The page is the report package's (``kubegpu.report.html``: its ``<head>`` with the Content-Security-Policy
that forbids every fetch, its stylesheet, sections and figure embedding as ``data:`` URIs): the
before/after table exactly as ``simulate`` prints it (``whatif.table_rows``), and two matplotlib figures
of the replays' series (``ReplayReport.series``): the scheduling queue's active / backoff /
unschedulable lengths over simulated time, one panel per run, and the GPU allocation over time, before
and after on one axis.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

from kubegpu.page.figures import Figure, png_figure
from kubegpu.page.html import figure_section, head, section
from kubegpu.sim.replay import ReplayReport
from kubegpu.sim.whatif import table_rows

if TYPE_CHECKING:
    from matplotlib.figure import Figure as PlotFigure

FIGURE_SIZE_IN = (6.4, 4.0)
FIGURE_DPI = 100  # 640 × 400 pixels


def render_replay(title: str, reports: Sequence[ReplayReport]) -> str:
    """The whole page as one string."""
    return "\n".join(
        [
            head(f"kubegpu simulate — {title}"),
            '<body><header class="top" id="top">',
            f"<h1>kubegpu simulate: {escape(title, quote=False)}</h1>",
            '<p class="muted">The same workload replayed in simulated time through the scheduling core, '
            "as is and with the change. Pending time is arrival to first start; time-weighted figures are "
            "averages over the run.</p></header>",
            '<main id="app">',
            section("table", "Before and after", _table(reports)),
            figure_section(figures(reports)),
            "</main></body></html>\n",
        ]
    )


def _table(reports: Sequence[ReplayReport]) -> str:
    head_cells = "".join(f"<th class=n>{escape(r.label, quote=False)}</th>" for r in reports)
    body = "".join(
        f"<tr><td>{escape(label, quote=False)}</td>"
        + "".join(f"<td class=n>{escape(v, quote=False)}</td>" for v in values)
        + "</tr>"
        for label, values in table_rows(reports)
    )
    return f'<table id="replay-table"><thead><tr><th>metric</th>{head_cells}</tr></thead><tbody>{body}</tbody></table>'


def figures(reports: Sequence[ReplayReport]) -> list[Figure]:
    """Queue lengths per run and GPU allocation of every run, as embedded PNGs."""
    import matplotlib  # optional heavy import, only where figures are drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    fig, axes = plt.subplots(len(reports), 1, figsize=FIGURE_SIZE_IN, sharex=True, squeeze=False)
    for ax, r in zip(axes[:, 0], reports, strict=True):
        t = [s.t for s in r.series]
        for name in ("active", "backoff", "unschedulable"):
            ax.plot(
                t,
                [getattr(s, name) for s in r.series],
                drawstyle="steps-post",
                marker=".",
                markersize=3,
                label=name,
            )
        ax.set_title(r.label, fontsize=9)
        ax.set_ylabel("entries", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("simulated time (s)")
    out.append(png_figure("scheduling queue: active, backoff, unschedulable", _png(fig)))

    fig, ax = plt.subplots(figsize=FIGURE_SIZE_IN)
    for r in reports:
        pct = [100 * s.allocated_milli / max(r.capacity_milli, 1) for s in r.series]
        ax.plot([s.t for s in r.series], pct, drawstyle="steps-post", marker=".", markersize=3, label=r.label)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("GPU allocated (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    out.append(png_figure("GPU allocation over time", _png(fig)))
    return out


def _png(fig: PlotFigure) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=FIGURE_DPI)
    plt.close(fig)
    return buf.getvalue()
