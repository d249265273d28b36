"""Run one ``kubegpu`` command line in a forked child of the test process: the real CLI entry point
(``kubegpu.cli.main.main``, as the console script runs it) with its exit status, its stdout and stderr,
whether a Python traceback escaped, its peak memory, and a wall-clock limit.

A fork instead of a thread: a hang inside one C call (``10 ** 999999999``, a YAML alias bomb expanding)
cannot be interrupted from Python, but a child can be killed; its peak resident size is the kernel's
(``wait4``), and an address-space limit turns a memory blow-up into a failure instead of an OOM kill of
the test run. The child inherits the parent's imports, so a case costs milliseconds, not an interpreter.
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

TIMEOUT_S = 20.0
# the child's address space may grow this much beyond the parent's before an allocation fails
HEADROOM = 2 * 1024**3


@dataclass(frozen=True)
class Outcome:
    code: int | None  # None: killed at the time limit
    out: str
    err: str
    traceback: bool
    seconds: float
    peak_rss_growth: int  # bytes above the parent's resident size at fork

    @property
    def hung(self) -> bool:
        return self.code is None


def _rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _vm_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


class Child:
    """One forked child running ``fn`` (its return value is the exit status) with stdout/stderr captured."""

    def __init__(self, fn: Callable[[], int], timeout: float = TIMEOUT_S) -> None:
        self.out = tempfile.TemporaryFile()  # noqa: SIM115  # closed in poll()
        self.err = tempfile.TemporaryFile()  # noqa: SIM115
        sys.stdout.flush()
        sys.stderr.flush()
        self.base_rss = _rss_bytes()
        limit = _vm_bytes() + HEADROOM
        self.start = time.monotonic()
        self.deadline = self.start + timeout
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns into pytest
            code = 70
            try:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
                os.dup2(self.out.fileno(), 1)
                os.dup2(self.err.fileno(), 2)
                # pytest's capture replaces sys.stdout/stderr with in-memory objects: write to the fds
                sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
                sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
                try:
                    code = fn()
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                except BaseException:  # what the console script would print as a traceback
                    traceback.print_exc()
                    code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)

    def poll(self) -> Outcome | None:
        done, status, rusage = os.wait4(self.pid, os.WNOHANG)
        if not done:
            if time.monotonic() <= self.deadline:
                return None
            os.kill(self.pid, signal.SIGKILL)
            os.wait4(self.pid, 0)
            status, rusage = None, None
        seconds = time.monotonic() - self.start
        outs = []
        for f in (self.out, self.err):
            f.seek(0)
            outs.append(f.read().decode("utf-8", "replace"))
            f.close()
        code = None if status is None else os.waitstatus_to_exitcode(status)
        growth = max(0, rusage.ru_maxrss * 1024 - self.base_rss) if rusage is not None else 0
        return Outcome(
            code, outs[0], outs[1], "Traceback (most recent call last)" in outs[1], seconds, growth
        )


def cli_main(args: list[str]) -> Callable[[], int]:
    """The console script's entry point with ``args`` as its command line."""

    def run() -> int:
        sys.argv = ["kubegpu", *args]
        from kubegpu.cli.main import main

        main()
        return 0

    return run


def run_cli(args: list[str], timeout: float = TIMEOUT_S) -> Outcome:
    return run_all([cli_main(args)], workers=1, timeout=timeout)[0]


def run_all(fns: list[Callable[[], int]], workers: int = 2, timeout: float = TIMEOUT_S) -> list[Outcome]:
    """Run every ``fn`` in its own child, ``workers`` at a time; outcomes in the order given."""
    results: list[Outcome | None] = [None] * len(fns)
    running: dict[int, Child] = {}
    pending = list(enumerate(fns))[::-1]
    while pending or running:
        while pending and len(running) < workers:
            i, fn = pending.pop()
            running[i] = Child(fn, timeout)
        for i, child in list(running.items()):
            outcome = child.poll()
            if outcome is not None:
                results[i] = outcome
                del running[i]
        time.sleep(0.002)
    return [r for r in results if r is not None]


def warm() -> None:
    """Import what the commands import lazily, once, in the parent: each child then starts warm."""
    import importlib

    from kubegpu.cli.main import LAZY_COMMANDS

    for module, _, _ in LAZY_COMMANDS.values():
        importlib.import_module(module)
    for module in ("kubegpu.explain.engine", "kubegpu.explain.diagnose", "kubegpu.explain.pending",
                   "kubegpu.explain.inspect", "kubegpu.scheduler.loop", "kubegpu.admission.admit",
                   "kubegpu.batch.session", "kubegpu.cli.render", "kubegpu.cli.summary_view",
                   "kubegpu.snapshot_writer", "kubegpu.sim.workload", "kubegpu.sim.openb", "kubegpu.plan",
                   "kubegpu.report", "numpy", "rich.console", "rich.table"):  # fmt: skip
        importlib.import_module(module)
