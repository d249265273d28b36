"""``/metrics`` and ``/healthz`` for the live components, with kube-scheduler's metric names.

The scheduler exports, on its own ``CollectorRegistry`` (never the process-global one):

* ``scheduler_schedule_attempts_total{result, profile}`` — ``result`` is ``scheduled``,
  ``unschedulable`` or ``error``, as upstream;
* ``scheduler_scheduling_attempt_duration_seconds{result, profile}`` — the cycle plus binding, with
  upstream's buckets (1 ms doubling, 15 buckets);
* ``scheduler_pending_pods{queue}`` — ``active``, ``backoff``, ``unschedulable`` (pods waiting for queue
  admission, ``live.batch``, count as ``unschedulable``: they too wait for a cluster event);
* ``leader_election_master_status{name}`` — 1 while this replica holds the Lease (client-go's metric);
* ``kubegpu_preemption_victims_total{checkpointed}`` and ``kubegpu_preemption_lost_gpu_seconds_total``
  — pods evicted by preemption (``checkpointed="true"`` when evicted after a fresh checkpoint of the
  handshake) and the GPU-seconds lost since their last checkpoints (kubegpu's own, R14.3).

``serve`` runs a threaded HTTP server on a port (0 picks a free one; the bound port is returned):
``/healthz`` answers ``ok`` (503 before the component has started) and ``/metrics`` the text exposition.
"""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from kubegpu.http_reply import ReplyHandler

ATTEMPT_BUCKETS = tuple(0.001 * 2**i for i in range(15))  # metrics.ExponentialBuckets(0.001, 2, 15)


class SchedulerMetrics:
    def __init__(self, profile: str) -> None:
        self.profile = profile
        self.registry = CollectorRegistry(auto_describe=True)
        self.healthy = False
        self.attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=ATTEMPT_BUCKETS,
            registry=self.registry,
        )
        self.pending = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; "
            "'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods.",
            ["queue"],
            registry=self.registry,
        )
        self.victims = Counter(
            "kubegpu_preemption_victims",
            "Pods evicted by preemption, by whether they checkpointed after the request first.",
            ["checkpointed"],
            registry=self.registry,
        )
        self.lost = Counter(
            "kubegpu_preemption_lost_gpu_seconds",
            "GPU-seconds of work lost by preemption: per victim, GPUs x seconds since its last checkpoint.",
            registry=self.registry,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.",
            ["name"],
            registry=self.registry,
        )

    def observe_victim(self, checkpointed: bool, lost_gpu_seconds: int) -> None:
        self.victims.labels("true" if checkpointed else "false").inc()
        self.lost.inc(lost_gpu_seconds)

    def observe_attempt(self, result: str, seconds: float) -> None:
        self.attempts.labels(result, self.profile).inc()
        self.duration.labels(result, self.profile).observe(seconds)

    def set_queue_depths(self, depths: dict[str, int]) -> None:
        for name, depth in depths.items():
            self.pending.labels(name).set(depth)

    def set_leader(self, leading: bool) -> None:
        self.leader.labels(self.profile).set(1 if leading else 0)


def serve(metrics: SchedulerMetrics, port: int, host: str = "0.0.0.0") -> ThreadingHTTPServer:
    """Start the health/metrics server on a daemon thread; ``server.server_address[1]`` is the port."""

    class Handler(ReplyHandler):
        def do_GET(self) -> None:
            if self.path == "/healthz":
                ok = metrics.healthy
                self.reply(200 if ok else 503, b"ok" if ok else b"not started", "text/plain; charset=utf-8")
            elif self.path == "/metrics":
                self.reply(200, generate_latest(metrics.registry), CONTENT_TYPE_LATEST)
            else:
                self.reply(404, b"404 page not found\n", "text/plain; charset=utf-8")

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.1,), name="metrics-http", daemon=True).start()
    return server
