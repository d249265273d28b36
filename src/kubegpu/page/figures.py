"""Figures from ``kubegpu simulate`` / ``bench`` embedded in the report: the documented hook.

``kubegpu report --figures DIR`` embeds every PNG directly in DIR (sorted by name) as a ``data:`` URI,
so the page stays one file that fetches nothing. Whatever writes figures (the simulator's matplotlib
output) only has to drop ``*.png`` files into a directory; the file name, without ``.png``, is the caption.
Files that do not start with the PNG signature are skipped rather than embedded as broken images.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Figure:
    name: str
    data_uri: str


def load_figures(directory: Path) -> tuple[list[Figure], list[str]]:
    """The PNG figures in ``directory`` and, separately, one line per file skipped and why."""
    figures, skipped = [], []
    for path in sorted(directory.glob("*.png")):
        data = path.read_bytes()
        if not data.startswith(PNG_SIGNATURE):
            skipped.append(f"{path}: not a PNG file (wrong signature); not embedded")
            continue
        figures.append(png_figure(path.stem, data))
    return figures, skipped


def png_figure(name: str, data: bytes) -> Figure:
    """A PNG as a figure the page embeds (a ``data:`` URI: the page fetches nothing)."""
    return Figure(name, "data:image/png;base64," + base64.b64encode(data).decode("ascii"))
