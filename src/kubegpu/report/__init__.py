"""``kubegpu report`` / ``kubegpu ui``: the cluster's GPUs as one self-contained HTML page.

Covers R2, R11, R13.4 and R14 for people who would rather look than read.

``data.collect`` gathers what to show from an ``Engine`` and its ``Diagnosis`` (``packed.collect_packed``
from the end state of one of the simulator's packing runs instead); ``html.render`` turns it
into the page; ``figures`` embeds simulator PNGs; ``server`` serves the page live, read-only, on
localhost. No click or rich here: the commands are in ``kubegpu.cli.report_cmd``.
"""

from kubegpu.report.data import ReportData, collect
from kubegpu.report.figures import Figure, load_figures
from kubegpu.report.html import Live, render

__all__ = ["Figure", "Live", "ReportData", "collect", "load_figures", "render"]
