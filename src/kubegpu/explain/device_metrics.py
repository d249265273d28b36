"""Device findings from the exporter's series in Prometheus, joined with the snapshot (R13, R16).

Reads Prometheus's HTTP API (``/api/v1/query`` at the inspection time, ``/api/v1/query_range``) with
urllib, over the series ``kubegpu exporter`` writes (dcgm-exporter's names and labels: ``UUID``, ``gpu``,
``Hostname``, or ``hostname`` as dcgm-exporter writes it since its PR #655, ``pod``, ``namespace``,
``GPU_I_ID``) and asks what the alerting rules of
``deploy/prometheus/kubegpu-rules.yaml`` ask, as a point-in-time look back:

* Xid seen: ``DCGM_FI_DEV_XID_ERRORS`` above 0 in the window. It holds the *last* Xid code (a gauge, not a
  counter, R13.3), so the finding names the code; 13, 31, 43, 45 and 68 are usually the application's,
  the rest point at hardware or driver (error);
* unhealthy: ``kubegpu_gpu_healthy == 0``;
* memory near full for long: used / (used + free) above 95 % at every minute of the last 15 min
  (the rule's ``for: 15m``), with how long it has been so (``/api/v1/query_range``, minute steps, up to
  6 h back) and the 10-min peak ``max_over_time(DCGM_FI_DEV_FB_USED[10m])``;
* requests high while utilisation is low: the 15-min averages of ``DCGM_FI_DEV_GPU_UTIL`` and
  ``DCGM_FI_DEV_MEM_COPY_UTIL`` below 10 % throughout the last hour on a GPU a container holds
  (``kubegpu_gpu_allocated_containers``), reported as a candidate with R13.3's caveats and the GPU
  requests of the pod(s) the snapshot places there, plus ``kubegpu_gpu_seconds_since_process``: the
  scheduler counts requests, not utilisation (pitfall R17.2).

Memory near full on a shared GPU (the node time-sliced, ``nvidia.com/gpu.replicas`` > 1, or several pods on
the device) is pitfall R17.3: replicas share one GPU's memory, none has 1/N of it.

A device several containers share (time-slicing) carries one copy of each series per container: findings
are per device (Hostname, UUID, MIG instance), naming every pod on it.
"""

from __future__ import annotations

import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from kubegpu.devices import dcgm_fields as F
from kubegpu.devices.gpu_series import ALLOCATED, HEALTHY, SINCE_PROCESS
from kubegpu.errors import InputError, KubegpuError, json_document
from kubegpu.explain.findings import Finding
from kubegpu.model.names import GPU_REPLICAS_LABEL as REPLICAS_LABEL
from kubegpu.model.podgroup import rfc3339
from kubegpu.model.snapshot import ClusterSnapshot

APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68})  # usually the application's fault, not the GPU's
NEAR_FULL = 0.95
LOW_UTIL = 10
WINDOW = "15m"
XID_WINDOW = "1h"
IDLE_WINDOW = "1h"
DEVICE: Final = "device-metrics"  # ``Finding.check`` of ``device_findings`` (a GPU each)
HISTORY_H = 6  # how far back the range query looks for the start of a near-full stretch

Series = tuple[dict[str, str], float]


class PrometheusError(KubegpuError):
    """Prometheus could not be read or refused a query."""


class Prometheus:
    """The instant-query part of Prometheus's HTTP API."""

    def __init__(self, url: str, timeout_s: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def _get(self, path: str, params: dict[str, str], expr: str, kind: str) -> list[dict[str, Any]]:
        where = f"{self.url}{path}"
        try:
            with urllib.request.urlopen(
                f"{where}?{urllib.parse.urlencode(params)}", timeout=self.timeout_s
            ) as reply:
                body = _json(reply.read(), where)
        except urllib.error.HTTPError as exc:
            # Prometheus answers 400/422 with a JSON body naming the error
            try:
                body = _json(exc.read(), where)
            except PrometheusError:
                raise PrometheusError(f"{where}: HTTP {exc.code} for query {expr!r}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise PrometheusError(f"cannot read Prometheus at {self.url}: {reason}") from None
        if body.get("status") != "success":
            raise PrometheusError(
                f"{where}: {body.get('errorType', 'error')}: {body.get('error', body)} (query {expr!r})"
            )
        data = body.get("data") or {}
        if not isinstance(data, dict) or data.get("resultType") != kind:
            got = data.get("resultType") if isinstance(data, dict) else type(data).__name__
            raise PrometheusError(f"{where}: expected a {kind} for {expr!r}, got {got}")
        result = data.get("result", [])
        if not isinstance(result, list) or not all(
            isinstance(r, dict) and isinstance(r.get("metric"), dict)
            and all(isinstance(v, str) for v in r["metric"].values()) for r in result
        ):  # fmt: skip
            raise PrometheusError(
                f"{where}: data.result for {expr!r} is not a list of series with string labels"
            )
        return result

    def query(self, expr: str, at: datetime) -> list[Series]:
        """``/api/v1/query``: one value per series at ``at`` (series whose value is NaN or ±Inf left out: no
        finding can be drawn from them)."""
        where = f"{self.url}/api/v1/query"
        result = self._get("/api/v1/query", {"query": expr, "time": f"{at.timestamp():.3f}"}, expr, "vector")
        out = [(dict(r["metric"]), _sample(r.get("value"), where)[1]) for r in result]
        return [(labels, value) for labels, value in out if math.isfinite(value)]

    def query_range(
        self, expr: str, start: datetime, end: datetime, step_s: int
    ) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
        """``/api/v1/query_range``: per series, (unix time, value) every ``step_s`` seconds."""
        params = {
            "query": expr,
            "start": f"{start.timestamp():.3f}",
            "end": f"{end.timestamp():.3f}",
            "step": str(step_s),
        }
        where = f"{self.url}/api/v1/query_range"
        result = self._get("/api/v1/query_range", params, expr, "matrix")
        values: list[tuple[dict[str, Any], list[Any]]] = []
        for r in result:
            if not isinstance(r.get("values"), list):
                raise PrometheusError(f"{where}: a series of {expr!r} has no list of values")
            values.append((r, r["values"]))
        return [
            (dict(r["metric"]), [s for s in (_sample(p, where) for p in v) if math.isfinite(s[1])])
            for r, v in values
        ]


def _json(raw: bytes, where: str) -> dict[str, Any]:
    try:
        body = json_document(raw, where, "Prometheus answer")
    except InputError as exc:
        raise PrometheusError(str(exc)) from None
    if not isinstance(body, dict):
        raise PrometheusError(f"{where}: the answer is not a JSON object")
    return body


def _sample(pair: object, where: str) -> tuple[float, float]:
    """``[<unix time>, "<value>"]`` as the API sends it; NaN and ±Inf are values Prometheus may send."""
    if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str)):
        raise PrometheusError(f'{where}: a sample is not [<time>, "<value>"]: {str(pair)[:80]}')
    try:
        return float(pair[0]), float(pair[1])
    except (TypeError, ValueError):
        raise PrometheusError(f"{where}: a sample value is not a number: {str(pair)[:80]}") from None


def _device(labels: Mapping[str, str]) -> tuple[str, str, str]:
    return F.host_label(labels), labels.get(F.LABEL_UUID, ""), labels.get(F.LABEL_MIG_ID, "")


def _by_device(series: list[Series]) -> dict[tuple[str, str, str], tuple[dict[str, str], float, list[str]]]:
    """One entry per device: its labels, its value, and the pods that carry a copy of the series."""
    out: dict[tuple[str, str, str], tuple[dict[str, str], float, list[str]]] = {}
    for labels, value in series:
        key = _device(labels)
        pods = out[key][2] if key in out else []
        if labels.get(F.LABEL_POD):
            pods.append(f"{labels.get(F.LABEL_NAMESPACE, '')}/{labels[F.LABEL_POD]}")
        out[key] = (labels, value, pods)
    return out


def _name(labels: Mapping[str, str]) -> str:
    mig = f" MIG {labels[F.LABEL_MIG_ID]}" if labels.get(F.LABEL_MIG_ID) else ""
    return f"GPU {labels.get(F.LABEL_GPU, '?')} ({labels.get(F.LABEL_UUID, '?')}){mig} on {F.host_label(labels) or '?'}"


def _holders(snapshot: ClusterSnapshot, host: str, from_series: list[str]) -> list[str]:
    """The pods on the device: the series' own pod labels, else the snapshot's GPU pods on that node."""
    if from_series:
        return sorted(set(from_series))
    return sorted(
        p.key
        for p in snapshot.pods_on(host)
        if any(r.startswith("nvidia.com/") and v for r, v in p.requests.items())
    )


def _replicas(snapshot: ClusterSnapshot, host: str) -> int:
    """The node's time-slicing replicas per GPU, as GFD labels it (1 when not shared or unknown)."""
    node = snapshot.node(host)
    raw = node.labels.get(REPLICAS_LABEL, "1") if node is not None else "1"
    return int(raw) if raw.isdigit() else 1


def _requests(snapshot: ClusterSnapshot, pods: list[str]) -> str:
    parts = []
    for key in pods:
        pod = snapshot.pod(key)
        if pod is None:
            parts.append(f"{key} (not in the snapshot)")
            continue
        gpus = ", ".join(
            f"{r}={v // 1000}" for r, v in sorted(pod.requests.items()) if r.startswith("nvidia.com/") and v
        )
        owner = f"{pod.owner.kind}/{pod.owner.name}" if pod.owner else "bare pod"
        parts.append(f"{key} requests {gpus or 'no GPU'} ({owner}, node {pod.node_name or 'none'})")
    return "; ".join(parts)


def _full_since(prom: Prometheus, ratio: str, at: datetime) -> dict[tuple[str, str, str], float]:
    """Per device, when its memory last went over the threshold and stayed there (minute steps, 6 h back)."""
    out: dict[tuple[str, str, str], float] = {}
    for labels, values in prom.query_range(ratio, at - timedelta(hours=HISTORY_H), at, 60):
        start = None
        for t, v in reversed(values):
            if v <= NEAR_FULL:
                break
            start = t
        if start is not None:
            out[_device(labels)] = start
    return out


def device_findings(prom: Prometheus, snapshot: ClusterSnapshot, at: datetime) -> list[Finding]:
    out: list[Finding] = []
    xids = _by_device(prom.query(f"max_over_time({F.XID_ERRORS.name}[{XID_WINDOW}]) > 0", at))
    for (host, _, _), (labels, code, pods) in sorted(xids.items()):
        xid = int(code)
        app = xid in APPLICATION_XIDS
        holders = _holders(snapshot, host, pods)
        out.append(Finding(
            "warning" if app else "critical", "driver/device-plugin", f"Xid {xid} on {_name(labels)}",
            [f"node/{host}", *(f"pod/{p}" for p in holders)],
            f"{F.XID_ERRORS.name} is the last Xid code (a gauge: rate() over it means nothing); "
            + ("Xid 13/31/43/45/68 usually come from the application: read the pod's log"
               if app else "this code points at the GPU, its memory or the driver: check kubegpu_gpu_healthy and the kernel log")
            + (f". Pods on it: {_requests(snapshot, holders)}" if holders else ""),
            "R13.3, R16", [f"kubectl -n default describe node {host}"],
            check=DEVICE, subject=_name(labels), many=f"GPUs with Xid {xid}",
        ))  # fmt: skip
    for labels, _ in prom.query(f"{HEALTHY[0]} == 0", at):
        host = F.host_label(labels)
        out.append(Finding(
            "critical", "driver/device-plugin", f"{_name(labels)} is Unhealthy", [f"node/{host}"],
            "a critical Xid marked it Unhealthy, as the device plugin does: kubelet stops offering it and allocatable drops",
            "R2.1, R16", [f"kubectl -n default describe node {host}"],
            check=DEVICE, subject=_name(labels), many="GPUs Unhealthy",
        ))  # fmt: skip
    used, free = F.FB_USED.name, F.FB_FREE.name
    full = _by_device(
        prom.query(f"min_over_time(({used} / ({used} + {free}))[{WINDOW}:1m]) > {NEAR_FULL}", at)
    )
    peaks = _by_device(prom.query(f"max_over_time({used}[10m])", at))
    full_since = _full_since(prom, f"{used} / ({used} + {free})", at) if full else {}
    for key, (labels, ratio, pods) in sorted(full.items()):
        holders = _holders(snapshot, key[0], pods)
        peak = peaks.get(key, ({}, 0.0, []))[1]
        start = full_since.get(key)
        lasting = (
            f"over {NEAR_FULL:.0%} for {(at.timestamp() - start) / 60:.0f} min, since "
            + rfc3339(datetime.fromtimestamp(start, UTC))
            if start is not None
            else ""
        )
        replicas = _replicas(snapshot, key[0])
        shared = replicas > 1 or len(holders) > 1
        out.append(Finding(
            "warning", "workload", f"memory over {NEAR_FULL:.0%} for {WINDOW} on {_name(labels)}",
            [f"node/{key[0]}", *(f"pod/{p}" for p in holders)],
            f"at least {ratio:.1%} used at every minute of the last {WINDOW}" + (f" ({lasting})" if lasting else "")
            + f"; 10-min peak {peak:.0f} MiB. A framework's "
            "cache keeps memory by design; what fails is the next allocation, of this pod or, on a shared GPU, of "
            f"its neighbours. Pods: {_requests(snapshot, holders) or 'none known'}"
            + (f". The GPU is time-sliced ({REPLICAS_LABEL}={replicas} on {key[0]}): a replica is a turn on the GPU, "
               f"not 1/{replicas} of its memory: every pod on it allocates from the same memory, nothing caps one. "
               "Fix: cap memory in each application, or give pods that need a memory bound a MIG instance or a "
               "whole GPU" if replicas > 1 else
               ". Several pods share this GPU's memory; nothing caps one of them. Fix: cap memory in each "
               "application, or give them MIG instances or whole GPUs" if shared else ""),
            "R13.3, R16" + (", R17.3" if shared else ""),
            [f"kubectl -n {p.split('/')[0]} describe pod {p.split('/')[1]}" for p in holders[:3]],
            pitfall="R17.3" if shared else "", check=DEVICE, subject=_name(labels),
            many=f"GPUs with memory over {NEAR_FULL:.0%} for {WINDOW}",
        ))  # fmt: skip
    util, copy = F.GPU_UTIL.name, F.MEM_COPY_UTIL.name
    # joined on UUID alone (unique per GPU): the DCGM series may come from a dcgm-exporter that spells the host
    # label ``hostname`` (PR #655) while ``kubegpu_*`` come from kubegpu's exporter, which writes ``Hostname``
    idle_expr = (
        f"max_over_time(avg_over_time({util}[{WINDOW}])[{IDLE_WINDOW}:1m]) < {LOW_UTIL} "
        f"and max_over_time(avg_over_time({copy}[{WINDOW}])[{IDLE_WINDOW}:1m]) < {LOW_UTIL} "
        f'and on ({F.LABEL_UUID}) ({ALLOCATED[0]}{{{F.LABEL_MIG_ID}=""}} > 0)'
    )
    idle = _by_device(prom.query(idle_expr, at))
    since = _by_device(prom.query(SINCE_PROCESS[0], at))
    for key, (labels, value, pods) in sorted(idle.items()):
        holders = _holders(snapshot, key[0], pods)
        quiet = since.get((key[0], key[1], ""), ({}, -1.0, []))[1]
        process = f"; no compute process for {quiet / 60:.0f} min" if quiet >= 0 else ""
        out.append(Finding(
            "info", "workload", f"GPU requested but nearly idle for {IDLE_WINDOW}: {_name(labels)}",
            [f"node/{key[0]}", *(f"pod/{p}" for p in holders)],
            f"{WINDOW} average utilisation at most {value:.0f} % throughout the last {IDLE_WINDOW}{process}. "
            f"Requested by: {_requests(snapshot, holders) or 'no pod the snapshot knows'}. A candidate, not a verdict"
            ": jobs waiting for data, notebooks between cells and cron or batch jobs between runs look the same; "
            "check the application's metrics. The scheduler counts requests, not utilisation, so the GPU is not free",
            "R13.3, R16, R17.2", [f"kubectl -n {p.split('/')[0]} describe pod {p.split('/')[1]}" for p in holders[:3]],
            pitfall="R17.2", check=DEVICE, subject=_name(labels),
            many=f"GPUs requested but nearly idle for {IDLE_WINDOW}",
        ))  # fmt: skip
    return out
