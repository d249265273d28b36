"""The Prometheus text exposition format 0.0.4, as dcgm-exporter writes it (R13.2).

client_python's ``generate_latest`` renames every counter family to ``<name>_total`` in its HELP and TYPE
lines (OpenMetrics naming), while dcgm-exporter writes ``# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION
counter`` and samples of that exact name; dashboards and alerts written for dcgm-exporter match on those
names. So the exporter encodes its registry itself: HELP, TYPE, then each sample, labels in the order the
collector gives them (dcgm-exporter's template order), values in client_python's Go float format.

Must not: collect anything; it only writes what a registry's collectors yield.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import utils
from prometheus_client.registry import Collector

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# client_python's Go-style float formatting ("+Inf", "615.0"), the one its own encoder uses; unannotated.
_go_float: Callable[[float], str] = utils.floatToGoString


def encode(registry: Collector) -> bytes:
    lines: list[str] = []
    for metric in registry.collect():
        lines.append(f"# HELP {metric.name} {_escape_help(metric.documentation)}")
        lines.append(
            f"# TYPE {metric.name} {metric.type if metric.type in ('gauge', 'counter') else 'untyped'}"
        )
        for s in metric.samples:
            labels = ",".join(f'{k}="{_escape_value(v)}"' for k, v in s.labels.items())
            lines.append(
                f"{s.name}{{{labels}}} {_go_float(s.value)}" if labels else f"{s.name} {_go_float(s.value)}"
            )
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def _escape_help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


def _escape_value(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
