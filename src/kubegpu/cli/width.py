"""How wide the output may be: ``COLUMNS`` (also when piped), else the terminal's. Read here once for the rich
tables (``cli.render``) and the plain lines (``cli.summary_view``); imports nothing of the project."""

from __future__ import annotations

import os
import shutil
import sys
import textwrap

import click


def columns_env() -> int | None:
    """``COLUMNS`` as a width, when set to a positive number (the tables' console reads it too)."""
    value = os.environ.get("COLUMNS", "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def wrap_width() -> int | None:
    """The width plain lines are wrapped to: ``COLUMNS`` when set (also when piped), else the terminal's;
    None (not wrapped) when output is piped without ``COLUMNS``, so scripts and greps see whole lines."""
    given = columns_env()
    if given is not None:
        return given
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def echo_wrapped(text: str = "") -> None:
    """``click.echo``, with a line longer than ``wrap_width()`` wrapped at spaces, its continuation lines
    indented under the text."""
    width = wrap_width()
    if width is None or len(text) <= width:
        click.echo(text)
        return
    indent = " " * (len(text) - len(text.lstrip(" ")) + 4)
    click.echo(textwrap.fill(text, width=width, subsequent_indent=indent, break_on_hyphens=False))
