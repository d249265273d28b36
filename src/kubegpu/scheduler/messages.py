"""THE formatter for scheduling-failure messages, byte-identical to kube-scheduler 1.34.

``fit_error_message`` reproduces ``FitError.Error()``: ``0/N nodes are available:`` then either the
PreFilter message or a histogram of node reasons (``"<count> <reason>"`` strings sorted as plain text —
so ``10 …`` sorts before ``2 …`` and upper case before ``node(s)…`` — joined by ``", "``), each part
followed by ``.``, then the PostFilter (preemption) message after a space with no period of its own
(since 1.30; older releases printed ``..`` because the preemption text already ends in ``.``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

NO_NODE_AVAILABLE = "0/{} nodes are available"
NO_NODES_AVAILABLE_TO_SCHEDULE = "no nodes available to schedule pods"
# Events cap their note at 1 KiB (``validation.NoteLengthLimit``).
EVENT_MESSAGE_LIMIT = 1024


def reason_histogram(reasons: Iterable[tuple[str, int]]) -> list[str]:
    counts: Counter[str] = Counter()
    for reason, n in reasons:
        counts[reason] += n
    return sorted(f"{n} {reason}" for reason, n in counts.items())


def fit_error_message(
    num_all_nodes: int,
    reasons: Iterable[tuple[str, int]],
    pre_filter_msg: str = "",
    post_filter_msg: str = "",
) -> str:
    """``reasons`` holds (reason, number of nodes) pairs; repeated reasons are summed."""
    msg = NO_NODE_AVAILABLE.format(num_all_nodes) + ":"
    if pre_filter_msg:
        msg += f" {pre_filter_msg}."
    else:
        histogram = reason_histogram(reasons)
        if histogram:
            msg += f" {', '.join(histogram)}."
    if post_filter_msg:
        msg += f" {post_filter_msg}"
    return msg


def truncate_event_message(message: str) -> str:
    """Upstream ``truncateMessage``: the event note is cut to 1024 bytes ending in ``" ..."``; the
    PodScheduled condition keeps the full text. (Go slices bytes, so a rune may be split; we drop it.)"""
    encoded = message.encode()
    if len(encoded) <= EVENT_MESSAGE_LIMIT:
        return message
    suffix = " ..."
    return encoded[: EVENT_MESSAGE_LIMIT - len(suffix)].decode(errors="ignore") + suffix
