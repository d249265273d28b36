"""The page frame every kubegpu HTML page shares: ``<head>`` with its Content-Security-Policy and inlined
stylesheet, sections, embedded figures and escaping.

Shared by ``kubegpu.report`` (the cluster page) and ``kubegpu.sim`` (the replay page), which are faces
and may not import each other, so the frame lives below both.

Must not import: any face (``cli``, ``live``, ``plan``, ``sim``, ``report``, exporters) or the core; this is
plain string building over ``kubegpu.page.assets`` and ``kubegpu.page.figures``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from kubegpu.page import assets
from kubegpu.page.figures import Figure


@dataclass(frozen=True)
class Live:
    """Served by ``kubegpu ui``: poll ``version`` every ``refresh_s`` and swap the page in when it changes."""

    refresh_s: int
    version: str


def head(title: str, live: Live | None = None) -> str:
    """The page up to ``</head>``: a Content-Security-Policy that allows no fetch (but the live view's
    own ``version``), the viewport, no favicon request, the title and the inlined stylesheet."""
    csp = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; " + (
        "connect-src 'self'; " if live else ""
    ) + "base-uri 'none'; form-action 'none'"  # fmt: skip
    return "\n".join([
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',  # else the browser asks the server for /favicon.ico
        f"<title>{body_text(title)}</title>",
        f"<style>{assets.CSS}</style></head>",
    ])  # fmt: skip


def body_text(text: str) -> str:
    return escape(text, quote=False)


def attr_text(text: str) -> str:
    return escape(text, quote=True)


def section(section_id: str, heading: str, body: str, cls: str = "") -> str:
    """A top-level section: its heading labels it, so skip links and screen-reader landmarks find it."""
    attr = f' class="{cls}"' if cls else ""
    return (
        f'<section id="{section_id}"{attr} aria-labelledby="{section_id}-h">'
        f'<h2 id="{section_id}-h">{body_text(heading)}</h2>{body}</section>'
    )


def figure_section(figures: Sequence[Figure]) -> str:
    if not figures:
        return ""
    items = "".join(
        f'<figure><img src="{f.data_uri}" alt="{attr_text(f.name)}"><figcaption>{body_text(f.name)}</figcaption></figure>'
        for f in figures
    )
    return section("figures", "Figures", items, cls="figures")
