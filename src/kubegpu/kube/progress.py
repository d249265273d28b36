"""Progress of a long ``--kube`` read on stderr: per kind, the pages and objects listed so far.

When: only once the read has taken ``delay_s`` (2 s). A small cluster lists in well under that, and a
line on every read would be noise (on a terminal, a flicker; in scripts and CI logs, a line nobody asked
for); a read that takes longer (thousands of pods, a slow or distant API server) is one where a silent
terminal looks hung. Whether stderr is a terminal decides only the form: on a terminal one line is
rewritten in place as each page arrives; elsewhere (a pipe, a log file) one line per kind when its list
is complete, plus one every ``every_s`` seconds within a long kind, so a log shows where a stuck read
is without a line per page.

Owns no I/O beyond the stream it is given; ``read_cluster`` calls it after every page.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

DELAY_S = 2.0
EVERY_S = 10.0


class StderrProgress:
    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        delay_s: float = DELAY_S,
        every_s: float = EVERY_S,
        clock: Callable[[], float] = time.monotonic,
        tty: bool | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.delay_s, self.every_s, self.clock = delay_s, every_s, clock
        self.start = clock()
        self.last_line = -every_s  # when the last non-terminal line was written (seconds into the read)
        self.open_line = False  # a terminal line is being rewritten

    def __call__(self, kind: str, pages: int, objects: int, done: bool) -> None:
        """Told after each page of ``kind``: pages and objects so far, ``done`` after its last page."""
        elapsed = self.clock() - self.start
        if elapsed < self.delay_s:
            return
        text = f"kubegpu: listing {kind}: {pages} page(s), {objects:,} object(s){' (done)' if done else ''}"
        text += f" [{elapsed:.0f} s]"
        if self.tty:
            self.stream.write("\r\033[K" + text + ("\n" if done else ""))
            self.open_line = not done
        elif done or elapsed - self.last_line >= self.every_s:
            self.stream.write(text + "\n")
            self.last_line = elapsed
        self.stream.flush()

    def close(self) -> None:
        """End a terminal line left open (a read that failed part-way through a kind)."""
        if self.open_line:
            self.stream.write("\n")
            self.stream.flush()
            self.open_line = False
