"""The exporter's HTTP server: ``/metrics`` (Prometheus text 0.0.4) and ``/healthz`` (R13).

A stdlib ``ThreadingHTTPServer``: each scrape runs on its own thread, and the collector's lock and cache
make concurrent scrapes share one reading. ``/healthz`` answers 200 ``ok`` while the latest device
reading succeeded and 503 with the reason otherwise, for the DaemonSet's liveness/readiness probes.
Anything else is 404.

Must not: read devices itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import ThreadingHTTPServer

from prometheus_client.registry import Collector

from kubegpu.exporter.exposition import CONTENT_TYPE, encode
from kubegpu.http_reply import ReplyHandler

HealthCheck = Callable[[], tuple[bool, str]]


class ExporterServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], registry: Collector, health: HealthCheck) -> None:
        super().__init__(address, _Handler)
        self.registry = registry
        self.health = health


class _Handler(ReplyHandler):
    server: ExporterServer
    # Headers and body go out in separate writes; with Nagle on, the body waits for the client's delayed ACK
    # (tens of ms per scrape on Linux).
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self.reply(200, encode(self.server.registry), CONTENT_TYPE)
        elif path == "/healthz":
            ok, reason = self.server.health()
            self.reply(200 if ok else 503, (reason + "\n").encode(), "text/plain; charset=utf-8")
        else:
            self.reply(404, b"not found: try /metrics or /healthz\n", "text/plain; charset=utf-8")


def start_server(registry: Collector, health: HealthCheck, host: str, port: int) -> ExporterServer:
    """Bind and serve in a daemon thread; ``server.server_address`` has the port (0 picks a free one)."""
    server = ExporterServer((host, port), registry, health)
    threading.Thread(target=server.serve_forever, name="kubegpu-exporter-http", daemon=True).start()
    return server
