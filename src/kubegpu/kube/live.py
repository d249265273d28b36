"""Read a live cluster's scheduling inputs: list calls only, through the official ``kubernetes`` client.

``read_cluster`` lists Namespaces, Nodes, PriorityClasses, Pods (all namespaces), ResourceQuotas,
LimitRanges, PodDisruptionBudgets, PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes, CSIDrivers and CSIStorageCapacities, following ``limit``/``continue`` pagination. It never watches and
never writes: the kubeconfig is loaded with ``persist_config=False`` so even a refreshed token is not
written back.

Responses are requested with ``_preload_content=False`` and JSON-decoded here, so every object is the
plain dict the API server sent (camelCase field names, quantities as strings, ``managedFields`` and all),
not a round trip through the client's model classes. List items carry no ``kind``/``apiVersion`` on the
wire; they are added from the list's own ``kind`` (``NodeList`` → ``Node``) and ``apiVersion``. Each object
is tagged with a source such as ``cluster prod/api/v1/nodes`` (``cluster in-cluster/…`` in a pod).

Failures (no kubeconfig, unknown context, unreachable server, 401, 403 on a kind the scheduler cannot do
without, a response that is not a Kubernetes list) raise ``InputError`` with a one-line message, never a
client traceback. A 403 or 404 on an optional kind (PriorityClasses, LimitRanges, PDBs, the storage kinds) is not fatal: the
kind is skipped and a warning saying what that costs is returned in ``LiveRead.warnings``.

``BATCH_LISTED_KINDS`` are the batch layer's custom resources (GpuQueue, GpuCohort, Volcano's and
coscheduling's PodGroup), listed through ``CustomObjectsApi``: by ``list_kind`` for the live scheduler's
informers, and by ``read_cluster`` after the core kinds (so ``explain --kube`` and ``queues --kube`` see
the queues). All are optional; ``read_cluster`` skips one answering 404 silently — a CRD that is not
installed is the ordinary case on a cluster without that project, not something to warn about on every
read — while a 403 (installed, but not readable with these credentials) is warned about as above.
Kueue's Workloads, LocalQueues, ClusterQueues and ResourceFlavors (``KUEUE_LISTED_KINDS``, what
``explain.kueue`` reads) are listed the same way, each at the first version the cluster serves, as the DRA
kinds are. The kinds and their paths are ``kube.listed_kinds``.
"""

from __future__ import annotations

import functools
import json
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import urllib3
import yaml
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from kubegpu.errors import InputError
from kubegpu.kube.listed_kinds import (
    BATCH_LISTED_KINDS,
    DRA_LISTED_KINDS,
    KUEUE_LISTED_KINDS,
    LISTED_KINDS,
    ListedKind,
)

# The kubernetes package is only partly annotated; these entry points are untyped.
_load_incluster_config: Callable[..., None] = k8s_config.load_incluster_config
_load_kube_config: Callable[..., None] = k8s_config.load_kube_config

# told after each page: kind, pages and objects so far, whether the kind's list is complete
Progress = Callable[[str, int, int, bool], None]

DEFAULT_PAGE_SIZE = 500  # what kubectl uses for chunked lists
DEFAULT_TIMEOUT_S = 30.0


def listed_path(kind: str) -> str:
    """The collection path of the listed kind ``kind`` (one that only one API serves)."""
    (path,) = {k.path for k in (*LISTED_KINDS, *BATCH_LISTED_KINDS) if k.kind == kind}
    return path


@dataclass
class LiveRead:
    """What one ``read_cluster`` call saw.

    ``objects`` are ``(source, raw_dict)`` pairs for ``build_snapshot``; ``warnings`` are one-line notes
    about kinds that were skipped (or lists that had to be restarted); ``context`` is the kubeconfig
    context name (``in-cluster`` inside a pod) and ``server`` the API server URL.
    """

    objects: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    server_version: str = ""  # the API server's /version gitVersion ("" when it could not be read)
    context: str = ""
    server: str = ""

    @property
    def counts(self) -> Counter[str]:
        """Objects read per kind, e.g. ``Counter({'Pod': 340, 'Node': 12, ...})``."""
        return Counter(str(obj.get("kind")) for _, obj in self.objects)


def read_cluster(
    context: str | None = None,
    kubeconfig: str | None = None,
    in_cluster: bool = False,
    *,
    page_size: int = DEFAULT_PAGE_SIZE,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: Progress | None = None,
) -> LiveRead:
    """List every kind in ``LISTED_KINDS``, ``BATCH_LISTED_KINDS``, ``DRA_LISTED_KINDS`` and ``KUEUE_LISTED_KINDS``
    (``kube.listed_kinds``) from one cluster; see the module
    docstring for the contract.

    ``context``/``kubeconfig`` pick the cluster as kubectl would (``$KUBECONFIG``, then ``~/.kube/config``,
    the current context); ``in_cluster=True`` uses the pod's service account instead and ignores both.
    ``page_size`` is the ``limit`` of each list call; ``timeout_s`` bounds each HTTP request; ``progress``
    is told after each page (kind, pages and objects so far, whether the kind is complete).
    """
    if page_size < 1:
        raise ValueError(f"page_size must be positive, got {page_size}")
    configuration, context_name = load_configuration(context, kubeconfig, in_cluster)
    # Fail fast on an unreachable server: two quick connection retries, no read retries.
    configuration.retries = urllib3.util.Retry(total=2, connect=2, read=0, redirect=0, backoff_factor=0.2)
    result = LiveRead(context=context_name, server=str(configuration.host))
    label = f"cluster {context_name}"
    api_client = k8s_client.ApiClient(configuration)
    try:
        try:  # the release decides kube-scheduler's messages (scheduler.versions)
            info = k8s_client.VersionApi(api_client).get_code(_request_timeout=timeout_s)
            result.server_version = str(info.git_version or "")
        except Exception as err:
            why = f"HTTP {err.status}" if isinstance(err, ApiException) else type(err).__name__
            result.warnings.append(f"{label}/version: could not read the server version ({why})")
        versioned = {*DRA_LISTED_KINDS, *KUEUE_LISTED_KINDS}  # one entry per version, newest first
        read_at: set[tuple[str, str]] = set()  # (group, kind) read at a newer version
        for listed in (*LISTED_KINDS, *BATCH_LISTED_KINDS, *DRA_LISTED_KINDS, *KUEUE_LISTED_KINDS):
            group = listed.api_version.rpartition("/")[0]
            if (group, listed.kind) in read_at:
                continue  # a newer version of its group answered already
            source = label + listed.path
            list_fn = _list_function(api_client, listed)
            on_page = functools.partial(progress, listed.kind) if progress is not None else None
            try:
                items, _ = _list_all(list_fn, listed, source, result, page_size, timeout_s, on_page)
            except _OptionalKindUnavailable as skipped:
                if listed not in LISTED_KINDS and skipped.status == 404:
                    continue  # its CRD / API version is not served: nothing to read, nothing lost
                result.warnings.append(
                    f"{source}: skipped {listed.kind} objects ({skipped}); {listed.without_it}"
                )
                continue
            if listed in versioned:
                read_at.add((group, listed.kind))
            result.objects.extend((source, item) for item in items)
    finally:
        close: Callable[[], None] = api_client.close
        close()
    return result


def list_kind(
    api_client: Any,
    listed: ListedKind,
    *,
    label: str = "cluster",
    page_size: int = DEFAULT_PAGE_SIZE,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> tuple[list[dict[str, Any]], str, list[str]]:
    """One kind's full list through ``api_client`` (a ``kubernetes.client.ApiClient``): its items, the
    list's resourceVersion (where a watch resumes) and warnings. This is the LIST half of an informer's
    list+watch, with ``read_cluster``'s pagination and error messages; an optional kind that answers
    403/404 is an ``InputError`` here too, because a watch on it would fail the same way."""
    result = LiveRead(server=str(api_client.configuration.host))
    source = label + listed.path
    list_fn = _list_function(api_client, listed)
    try:
        items, resource_version = _list_all(list_fn, listed, source, result, page_size, timeout_s)
    except _OptionalKindUnavailable as skipped:
        raise KindUnavailable(f"cannot list {listed.kind} objects ({skipped})", source=source) from None
    return items, resource_version, result.warnings


def _list_function(api_client: Any, listed: ListedKind) -> Callable[..., Any]:
    method = getattr(getattr(k8s_client, listed.api_class)(api_client), listed.method)
    return functools.partial(method, *listed.args) if listed.args else method


class KindUnavailable(InputError):
    """``list_kind``: an optional kind answered 403/404 (not allowed, or its API/CRD is not served)."""


class _OptionalKindUnavailable(Exception):
    """Internal: an optional kind answered 403/404; carries the short reason for the warning."""

    def __init__(self, reason: str, status: int) -> None:
        super().__init__(reason)
        self.status = status


def load_configuration(context: str | None, kubeconfig: str | None, in_cluster: bool) -> tuple[Any, str]:
    """A ``kubernetes.client.Configuration`` for the chosen cluster, and the context name for sources."""
    configuration = k8s_client.Configuration()
    if in_cluster:
        try:
            _load_incluster_config(client_configuration=configuration)
        except (ConfigException, OSError) as exc:
            raise InputError(
                f"cannot use the in-cluster service account: {first_line(exc)}", source="in-cluster config"
            ) from None
        return configuration, "in-cluster"

    env = os.environ.get("KUBECONFIG")
    path = kubeconfig or env or "~/.kube/config"
    paths = [os.path.expanduser(p) for p in path.split(os.pathsep) if p]
    if not any(os.path.isfile(p) for p in paths):
        origin = "" if kubeconfig else (" (from $KUBECONFIG)" if env else " (the default)")
        raise InputError(
            f"kubeconfig {path}{origin} does not exist; pass a kubeconfig, set KUBECONFIG, or use in_cluster",
            source="kubeconfig",
        )
    names, current = _contexts(paths)
    if context is not None and context not in names:
        known = ", ".join(names) or "none"
        raise InputError(f"context {context!r} is not in the kubeconfig (contexts: {known})", source=path)
    context_name = context if context is not None else current
    if not context_name:
        raise InputError("the kubeconfig has no current-context; pass a context", source=path)
    try:
        _load_kube_config(
            config_file=os.pathsep.join(paths),
            context=context_name,
            client_configuration=configuration,
            persist_config=False,
        )
    except ConfigException as exc:
        raise InputError(f"cannot use context {context_name!r}: {first_line(exc)}", source=path) from None
    except Exception as exc:  # exec/auth-provider plugins fail in their own ways
        raise InputError(
            f"cannot use context {context_name!r}: {type(exc).__name__}: {first_line(exc)}", source=path
        ) from None
    return configuration, context_name


def _contexts(paths: list[str]) -> tuple[list[str], str]:
    """Context names across the kubeconfig files, and the current-context (the first file that sets it wins,
    as in kubectl)."""
    names: list[str] = []
    current = ""
    for p in paths:
        if not os.path.isfile(p):
            continue
        try:
            with open(p, encoding="utf-8") as fh:
                doc = yaml.safe_load(fh)
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise InputError(f"cannot read kubeconfig: {first_line(exc)}", source=p) from None
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise InputError(f"expected a kubeconfig mapping, got {type(doc).__name__}", source=p)
        for entry in doc.get("contexts") or []:
            if isinstance(entry, dict) and isinstance(entry.get("name"), str) and entry["name"] not in names:
                names.append(entry["name"])
        if not current and isinstance(doc.get("current-context"), str):
            current = doc["current-context"]
    return names, current


def _list_all(
    list_fn: Callable[..., Any],
    listed: ListedKind,
    source: str,
    result: LiveRead,
    page_size: int,
    timeout_s: float,
    on_page: Callable[[int, int, bool], None] | None = None,
) -> tuple[list[dict[str, Any]], str]:
    """Every item of one collection, page by page, and the list's resourceVersion (the first page's: the
    API server serves every page from that one snapshot); a 410 (expired continue token) restarts the list
    once. ``on_page(pages, objects, done)`` is told after each page."""
    restarted = False
    pages = 0
    items: list[dict[str, Any]] = []
    token: str | None = None
    seen_tokens: set[str] = set()
    resource_version = ""
    while True:
        try:
            page = _get_page(list_fn, listed, source, result.server, page_size, token, timeout_s)
        except _ContinueExpired:
            if restarted:
                raise InputError(
                    "the list kept changing faster than it could be paged (HTTP 410 twice); try again",
                    source=source,
                ) from None
            restarted = True
            result.warnings.append(f"{source}: continue token expired (HTTP 410); restarted the list")
            items, token, seen_tokens, pages = [], None, set(), 0
            continue
        items.extend(_items_of(page, listed, source))
        pages += 1
        metadata = page.get("metadata")
        if token is None and isinstance(metadata, dict):
            resource_version = str(metadata.get("resourceVersion") or "")
        next_token = metadata.get("continue") if isinstance(metadata, dict) else None
        if on_page is not None:
            on_page(pages, len(items), not next_token)
        if not next_token:
            return items, resource_version
        if not isinstance(next_token, str) or next_token in seen_tokens:
            raise InputError(f"the API server repeated continue token {next_token!r}", source=source)
        seen_tokens.add(next_token)
        token = next_token


class _ContinueExpired(Exception):
    """Internal: HTTP 410 on a continued list."""


def _get_page(
    list_fn: Callable[..., Any],
    listed: ListedKind,
    source: str,
    server: str,
    page_size: int,
    token: str | None,
    timeout_s: float,
) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "limit": page_size,
        "_preload_content": False,
        "_request_timeout": (min(10.0, timeout_s), timeout_s),
    }
    if token:
        kwargs["_continue"] = token
    try:
        response = list_fn(**kwargs)
        body = response.data
    except ApiException as exc:
        raise _api_error(exc, listed, source, token) from None
    except urllib3.exceptions.HTTPError as exc:
        raise InputError(
            f"cannot reach the API server at {server}: {_transport_reason(exc)}", source=source
        ) from None
    except OSError as exc:
        raise InputError(
            f"cannot reach the API server at {server}: {first_line(exc)}", source=source
        ) from None
    try:
        page = json.loads(body)
    except (TypeError, ValueError, UnicodeDecodeError):
        raise InputError(
            f"the response is not JSON (first bytes: {bytes(body or b'')[:60]!r})", source=source
        ) from None
    if not isinstance(page, dict):
        raise InputError(
            f"expected a {listed.kind}List object, got a JSON {type(page).__name__}", source=source
        )
    return page


def _items_of(page: dict[str, Any], listed: ListedKind, source: str) -> list[dict[str, Any]]:
    """The page's items with ``apiVersion``/``kind`` filled in from the list (an item's own values win)."""
    list_kind = page.get("kind")
    if list_kind != f"{listed.kind}List":
        raise InputError(f"expected kind {listed.kind}List, got {list_kind!r}", source=source, field="kind")
    raw_items = page.get("items")
    if raw_items is None:  # the API server sends "items": [] but be lenient with null
        return []
    if not isinstance(raw_items, list):
        raise InputError("expected a list", source=source, obj=str(list_kind), field="items")
    api_version = page.get("apiVersion") or listed.api_version
    items: list[dict[str, Any]] = []
    for i, item in enumerate(raw_items):
        if not isinstance(item, dict):
            raise InputError(
                f"expected an object, got {type(item).__name__}",
                source=source,
                obj=str(list_kind),
                field=f"items[{i}]",
            )
        items.append({"apiVersion": api_version, "kind": listed.kind, **item})
    return items


def _api_error(exc: ApiException, listed: ListedKind, source: str, token: str | None) -> Exception:
    """Translate an HTTP error status into InputError, or the internal skip/restart signals."""
    status = int(exc.status or 0)
    detail = _status_message(exc)
    plural = listed.path.rsplit("/", 1)[-1]
    if status == 410 and token:
        return _ContinueExpired()
    if status in (403, 404) and listed.optional:
        what = "HTTP 403 Forbidden" if status == 403 else "HTTP 404 Not Found: the API is not served"
        return _OptionalKindUnavailable(f"{what}: {detail}" if detail else what, status)
    if status == 401:
        return InputError(
            f"the API server rejected the credentials (HTTP 401 Unauthorized){_suffix(detail)}; "
            "check the kubeconfig user or token",
            source=source,
        )
    if status == 403:
        return InputError(
            f"not allowed to list {plural} (HTTP 403 Forbidden){_suffix(detail)}", source=source
        )
    reason = f" {exc.reason}" if exc.reason else ""
    return InputError(f"listing {plural} failed (HTTP {status}{reason}){_suffix(detail)}", source=source)


def _suffix(detail: str) -> str:
    return f": {detail}" if detail else ""


def _status_message(exc: ApiException) -> str:
    """The ``message`` of a ``kind: Status`` error body, else its first line."""
    body = exc.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not body:
        return ""
    try:
        parsed = json.loads(body)
    except ValueError:
        return first_line(body)[:200]
    if isinstance(parsed, dict) and isinstance(parsed.get("message"), str):
        return first_line(parsed["message"])
    return first_line(body)[:200]


def _transport_reason(exc: urllib3.exceptions.HTTPError) -> str:
    """``connection refused`` rather than urllib3's ``HTTPConnectionPool(host=…): Max retries exceeded …``."""
    inner: BaseException = exc
    if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
        inner = exc.reason
    text = first_line(inner)
    marker = "Failed to establish a new connection: "
    if marker in text:
        text = text.split(marker, 1)[1]
    if isinstance(inner, urllib3.exceptions.SSLError):
        text = f"TLS error: {text}"
    elif isinstance(inner, urllib3.exceptions.TimeoutError):
        text = f"timed out ({text})"
    return text


def first_line(value: object) -> str:
    text = str(value).strip()
    return text.splitlines()[0] if text else type(value).__name__
