"""Progress of a long ``--kube`` read on stderr (issue 25: "lists with pagination and shows progress on
stderr for long loads"), against the kmock API server of ``test_live``.

Pagination is the API server's ``limit``/``continue`` chunking (API concepts, "Retrieving large results
sets in chunks", kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks):
5 pods listed with ``limit=2`` come in pages of 2, 2 and 1.
"""

from __future__ import annotations

import io
from pathlib import Path

from tests.kube.live_fakes import FakeApiServer, api, full_cluster, read

from kubegpu.kube.progress import StderrProgress

__all__ = ["api"]  # the kmock fixture, used by name below


class Clock:
    """A clock the test moves: each read of it advances ``step`` seconds."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def _printed(api: FakeApiServer, tmp_path: Path, step: float, tty: bool) -> str:
    """What a read of the kmock cluster in pages of 2 prints, the clock moving ``step`` s per reading."""
    api.collections = full_cluster()
    out = io.StringIO()
    progress = StderrProgress(out, clock=Clock(step), tty=tty)
    read(api, tmp_path, page_size=2, progress=progress)
    progress.close()
    return out.getvalue()


def test_read_cluster_reports_every_page_per_kind(api: FakeApiServer, tmp_path: Path) -> None:
    api.collections = full_cluster()
    calls: list[tuple[str, int, int, bool]] = []
    read(api, tmp_path, page_size=2, progress=lambda *a: calls.append(a))
    pods = [c for c in calls if c[0] == "Pod"]
    assert pods == [("Pod", 1, 2, False), ("Pod", 2, 4, False), ("Pod", 3, 5, True)]
    assert [c for c in calls if c[0] == "Node"] == [("Node", 1, 2, True)]  # two nodes: one page of two
    # every kind that answered ends with a "done" call
    assert {c[0] for c in calls if c[3]} >= {"Namespace", "Node", "PriorityClass", "Pod", "ResourceQuota"}


def test_a_read_shorter_than_the_delay_prints_nothing(api: FakeApiServer, tmp_path: Path) -> None:
    assert _printed(api, tmp_path, step=0.0, tty=True) == ""  # the clock never reaches the 2 s delay


def test_a_long_read_to_a_log_prints_one_line_per_kind_and_a_line_per_interval(
    api: FakeApiServer, tmp_path: Path
) -> None:
    # each reading moves the clock 3 s, past the 2 s delay: in a log, a line when a kind completes and
    # one during a kind only when 10 s have passed since the last line
    lines = _printed(api, tmp_path, step=3.0, tty=False).splitlines()
    pod_lines = [line for line in lines if "listing Pod:" in line]
    assert pod_lines[-1].startswith("kubegpu: listing Pod: 3 page(s), 5 object(s) (done)")
    assert all("\r" not in line for line in lines)
    assert any(line.startswith("kubegpu: listing Node: 1 page(s), 2 object(s) (done)") for line in lines)
    # not one line per page: of the Pod kind's three pages at most the interval line and the last one
    assert len(pod_lines) <= 2


def test_on_a_terminal_the_line_is_rewritten_in_place(api: FakeApiServer, tmp_path: Path) -> None:
    text = _printed(api, tmp_path, step=3.0, tty=True)
    # each page rewrites the line ("\r" and erase to end of line); a kind's last page ends it
    assert "\r\x1b[Kkubegpu: listing Pod: 1 page(s), 2 object(s) [" in text
    assert "\r\x1b[Kkubegpu: listing Pod: 2 page(s), 4 object(s) [" in text
    assert "\r\x1b[Kkubegpu: listing Pod: 3 page(s), 5 object(s) (done) [" in text
    assert text.endswith("\n")
