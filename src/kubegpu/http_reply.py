"""The one base for kubegpu's small HTTP servers (exporter, scheduler metrics, extender, webhook).

Each answers with a status, a body and a content type, and none writes the stdlib's access log to
stderr (probes and scrapes would flood it); requests are logged at debug level instead.
"""

from __future__ import annotations

import logging
from http.server import BaseHTTPRequestHandler

log = logging.getLogger("kubegpu.http")


class ReplyHandler(BaseHTTPRequestHandler):
    def reply(self, code: int, body: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # the stdlib names it "format"
        log.debug("%s " + format, self.client_address[0], *args)
