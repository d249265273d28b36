"""Shutdown on SIGINT/SIGTERM for the long-running commands (exporter, node agent, live control plane)."""

from __future__ import annotations

import signal
import threading
from types import FrameType


def stop_on_signals(stop: threading.Event) -> None:
    """Set ``stop`` on SIGTERM (kubelet stopping the pod) or SIGINT (Ctrl-C) so servers drain cleanly."""

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
