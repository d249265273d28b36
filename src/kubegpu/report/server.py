"""``kubegpu ui``'s HTTP server: the report page served live on localhost, read-only.

A background thread rebuilds the page every ``interval_s`` seconds with a caller-supplied ``build``
(re-reading the snapshot directory or listing the cluster); requests are only ever answered from the
last page built, so a slow or failing rebuild never blocks or breaks the page a browser already has.
Routes: ``GET /`` the page, ``GET /version`` its version (the page polls it and re-fetches itself only
when it changed). Only GET and HEAD exist (anything else gets 501 from ``http.server``): nothing a
browser sends can change the cluster or the server.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Page:
    html: str
    version: str


class ReportServer:
    """Serves the latest ``Page`` from ``build``; ``start`` binds and returns the URL."""

    def __init__(
        self, build: Callable[[], Page], interval_s: float, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self._build = build
        self._interval_s = interval_s
        self._page = (
            build()
        )  # the first build's errors reach the caller: a UI that never had a page is useless
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._httpd.daemon_threads = True
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/"

    @property
    def page(self) -> Page:
        with self._lock:
            return self._page

    def start(self) -> str:
        self._threads = [
            threading.Thread(target=self._httpd.serve_forever, name="kubegpu-ui-http", daemon=True),
            threading.Thread(target=self._refresh, name="kubegpu-ui-refresh", daemon=True),
        ]
        for t in self._threads:
            t.start()
        return self.url

    def stop(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        for t in self._threads:
            t.join(timeout=5)

    def _refresh(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                page = self._build()
            # A rebuild can fail in any way the sources can (a half-written file, an API server away, a
            # --strict exit): keep serving the last good page and say why, rather than kill the thread.
            except (Exception, SystemExit) as exc:
                print(
                    f"kubegpu ui: refresh failed, still serving the previous page: {exc!r}", file=sys.stderr
                )
                continue
            with self._lock:
                self._page = page

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "kubegpu-ui"

            def do_GET(self) -> None:
                self._answer(send_body=True)

            def do_HEAD(self) -> None:
                self._answer(send_body=False)

            def _answer(self, send_body: bool) -> None:
                page = server.page
                path = self.path.split("?", 1)[0]
                if path == "/":
                    body, ctype = page.html.encode(), "text/html; charset=utf-8"
                elif path == "/version":
                    body, ctype = page.version.encode(), "text/plain; charset=utf-8"
                else:
                    self.send_error(HTTPStatus.NOT_FOUND)
                    return
                self.send_response(HTTPStatus.OK)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.send_header("X-Content-Type-Options", "nosniff")
                self.end_headers()
                if send_body:
                    self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                """Silent: a browser polling /version every few seconds would bury the terminal."""

        return Handler
