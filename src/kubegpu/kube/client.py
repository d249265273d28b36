"""A small JSON client over the official ``kubernetes`` client's transport, for the live control plane.

``KubeApi`` sends one request to a path and hands back the decoded JSON dict exactly as the API server
sent it (camelCase, quantities as strings), or an open streaming response for a watch. It adds what
client-go's REST client does and the generated Python methods do not, so every caller behaves alike:

* throttling and outages are retried: HTTP 429 and 5xx (and connection errors) are retried with capped
  exponential backoff, honouring ``Retry-After`` as client-go does (``maxRetries`` bounded); the last
  failure is raised as ``ApiError``;
* a non-2xx answer becomes ``ApiError(status, reason, message)`` read from the ``kind: Status`` body, so
  callers branch on the HTTP status (409 conflict, 410 gone, 404) rather than parse text.

Configuration (kubeconfig, context, in-cluster) is loaded by ``kubegpu.kube.live``'s loader, so the live
scheduler and the read-only ``--kube`` source accept the same flags and fail with the same messages.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes import client as k8s_client

from kubegpu.backoff import doubling
from kubegpu.kube import live

JSON = dict[str, Any]

# client-go's rest.Request retries a 429/5xx carrying Retry-After up to 10 times; we also retry 5xx and
# transport errors without it, because "API outages retried with backoff" is the contract we promise.
DEFAULT_MAX_RETRIES = 10
RETRY_INITIAL_S = 0.1
RETRY_MAX_S = 5.0
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


@dataclass
class ApiError(Exception):
    """A non-success answer (``status`` 0 for a transport failure), with the Status body's reason/message."""

    status: int
    reason: str
    message: str
    method: str = ""
    path: str = ""

    def __str__(self) -> str:
        return f"{self.method} {self.path}: HTTP {self.status} {self.reason}: {self.message}"


class KubeApi:
    """JSON requests to one API server; thread-safe (urllib3's pool is), one instance per process."""

    def __init__(
        self,
        configuration: Any,
        *,
        user_agent: str = "kubegpu",
        timeout_s: float = 30.0,
        max_retries: int = DEFAULT_MAX_RETRIES,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        # No urllib3-level retries: they would hide 429/5xx from the backoff below and retry POSTs blindly.
        configuration.retries = False
        self.api_client = k8s_client.ApiClient(configuration)
        self.api_client.user_agent = user_agent
        self.server = str(configuration.host)
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self._sleep = sleep
        self._lock = threading.Lock()
        self.retries = 0  # retried attempts so far (for metrics and tests)

    @classmethod
    def from_kubeconfig(
        cls, context: str | None, kubeconfig: str | None, in_cluster: bool, **kwargs: Any
    ) -> KubeApi:
        configuration, _ = live.load_configuration(context, kubeconfig, in_cluster)
        return cls(configuration, **kwargs)

    def close(self) -> None:
        close: Callable[[], None] = self.api_client.close
        close()

    # -- plain requests -----------------------------------------------------------------------------

    def get(self, path: str, query: Mapping[str, str] | None = None) -> JSON:
        return self.request("GET", path, query=query)

    def post(self, path: str, body: JSON) -> JSON:
        return self.request("POST", path, body=body)

    def put(self, path: str, body: JSON) -> JSON:
        return self.request("PUT", path, body=body)

    def patch(self, path: str, body: JSON, content_type: str = STRATEGIC_MERGE_PATCH) -> JSON:
        return self.request("PATCH", path, body=body, content_type=content_type)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: JSON | None = None,
        content_type: str = "application/json",
        retry: bool = True,
    ) -> JSON:
        """One request (retried as the module docstring says, unless ``retry`` is False); the JSON answer."""
        attempt = 0
        while True:
            try:
                response = self._send(
                    method, path, query, body, content_type, (min(10.0, self.timeout_s), self.timeout_s)
                )
                try:
                    data = response.read()
                finally:
                    response.response.release_conn()
                if 200 <= response.status < 300:
                    decoded = json.loads(data) if data else {}
                    return decoded if isinstance(decoded, dict) else {"items": decoded}
                error = _error_from(response.status, response.reason, data, method, path)
                retry_after = _retry_after(response.headers)
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                error = ApiError(0, type(exc).__name__, live.first_line(exc), method, path)
                retry_after = None
            retryable = (
                error.status in RETRYABLE_STATUSES and retry_after is not None
                if error.status
                else method == "GET"
            )
            if not retry or not retryable or attempt >= self.max_retries:
                raise error
            attempt += 1
            with self._lock:
                self.retries += 1
            self._sleep(backoff_delay(attempt, retry_after))

    # -- watch --------------------------------------------------------------------------------------

    def watch(self, path: str, query: Mapping[str, str], read_timeout_s: float) -> Iterator[JSON]:
        """Open a watch and yield its events (``{"type", "object"}``) until the server ends the stream.

        An HTTP error answer raises ``ApiError``; a dropped connection simply ends the iteration (the
        caller resumes from its last resourceVersion, as client-go's reflector does)."""
        response = self._send(
            "GET", path, {**query, "watch": "true"}, None, "application/json", (10.0, read_timeout_s)
        )
        try:
            if not 200 <= response.status < 300:
                raise _error_from(response.status, response.reason, response.read(), "GET", path)
            buffer = b""
            try:
                for chunk in response.response.stream(amt=None, decode_content=False):
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if line.strip():
                            event = json.loads(line)
                            if isinstance(event, dict):
                                yield event
            except (urllib3.exceptions.HTTPError, OSError):
                return  # connection dropped or read timed out: the caller re-watches
        finally:
            response.response.release_conn()

    def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None,
        body: JSON | None,
        content_type: str,
        timeout: tuple[float, float],
    ) -> Any:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        serialized = self.api_client.param_serialize(
            method,
            path,
            query_params=list((query or {}).items()),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        return self.api_client.call_api(*serialized, _request_timeout=timeout)


def backoff_delay(attempt: int, retry_after: float | None) -> float:
    """Seconds before retry number ``attempt`` (1-based): ``Retry-After`` when the server sent one, else
    capped exponential backoff with jitter (0.1 s, 0.2 s, … up to 5 s) for transport failures."""
    if retry_after is not None:
        return float(min(retry_after, RETRY_MAX_S * 6))
    return doubling(attempt, RETRY_INITIAL_S, RETRY_MAX_S, jitter=True)


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:
        return None


def _error_from(status: int, reason: str | None, data: bytes | None, method: str, path: str) -> ApiError:
    message = ""
    status_reason = reason or ""
    try:
        parsed = json.loads(data or b"")
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        message = str(parsed.get("message") or "")
        status_reason = str(parsed.get("reason") or status_reason)
    elif data:
        message = live.first_line(data.decode("utf-8", "replace"))[:200]
    return ApiError(int(status), status_reason, message, method, path)
