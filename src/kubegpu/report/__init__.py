"""``kubegpu report`` / ``kubegpu ui``: the cluster's GPUs as one self-contained HTML page.

Covers R2, R11, R13.4 and R14 for people who would rather look than read.

``kubegpu.explain.cards.collect`` gathers what to show from an ``Engine`` and its ``Diagnosis``
(``kubegpu.sim.packed.collect_packed`` from the end state of one of the simulator's packing runs
instead); ``html.render`` turns it into the page; ``kubegpu.page.figures`` embeds simulator PNGs; ``server`` serves the page live, read-only, on
localhost. No click or rich here: the commands are in ``kubegpu.cli.report_cmd``.

Layer (``.importlinter``, checked by ``lint-imports`` in CI): a face. It may import the core (``explain``,
``batch``, ``scheduler``, ``devices``, ``admission``, ``model``), the node agent and the adapters (``kube``,
``sources``, ``snapshot_writer``, ``page``, ``http_reply``, ``ttl_cache``); it never imports another face
(``cli``, ``live``, ``plan``, ``sim``, ``report``, ``cluster_exporter``, ``exporter``). The page frame,
stylesheet and figures are in ``kubegpu.page`` (shared with ``sim``), the data in ``kubegpu.explain.cards``;
the openb packed cluster is built by ``kubegpu.sim.packed`` and handed in by the CLI.
"""

from kubegpu.explain.cards import ReportData, collect
from kubegpu.page.figures import Figure, load_figures
from kubegpu.page.html import Live
from kubegpu.report.html import live_page, render

__all__ = ["Figure", "Live", "ReportData", "collect", "live_page", "load_figures", "render"]
