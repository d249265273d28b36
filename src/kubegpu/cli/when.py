"""The one place a command turns ``--now`` (or its absence) into the time it measures at."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click


def command_now(snap: Any, now: str | None) -> datetime:
    """``--now``, else the snapshot's newest pod time, else the wall clock with a note on stderr.

    A snapshot without pod timestamps (hand-written manifests) is not an error: ages are then measured
    from the current time, and the user is told how to pin it.
    """
    from kubegpu.model.podgroup import snapshot_now

    try:
        at, note = snapshot_now(snap.pods, now)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--now") from None
    if note:
        click.echo(f"note: {note}", err=True)
    return at
