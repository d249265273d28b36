"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go's ``leaderelection`` does it.

The Lease's spec is the election record: ``holderIdentity``, ``leaseDurationSeconds``, ``acquireTime``,
``renewTime`` (MicroTime, ``2006-01-02T15:04:05.000000Z07:00``) and ``leaseTransitions``. A candidate
GETs the Lease (creating it when absent); a Lease held by someone else is respected until
``leaseDurationSeconds`` have passed *on this candidate's clock since it last saw the record change*
(client-go's ``observedTime``: no trust in other machines' clocks); then the candidate PUTs itself as
holder with the resourceVersion it read, so of two candidates racing, the API server accepts one and
answers the other 409 Conflict. The leader renews every ``retry_period_s``; if it cannot renew for
``renew_deadline_s`` it has lost the lease and must stop (kube-scheduler exits). ``is_leader()`` also
turns false as soon as the last successful renewal is older than the renew deadline, so a leader cut
off from the API server stops writing before another candidate may take over
(renew_deadline < lease_duration).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubegpu.kube.client import ApiError, KubeApi

log = logging.getLogger(__name__)

LEASES = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"


@dataclass(frozen=True)
class LeaseConfig:
    """kube-scheduler's defaults (``--leader-elect-*``): 15 s lease, 10 s renew deadline, 2 s retry."""

    namespace: str = "kube-system"
    name: str = "kubegpu-scheduler"
    lease_duration_s: float = 15.0
    renew_deadline_s: float = 10.0
    retry_period_s: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_period_s < self.renew_deadline_s < self.lease_duration_s:
            raise ValueError("leader election needs 0 < retry period < renew deadline < lease duration")


def micro_time(now: dt.datetime) -> str:
    """``metav1.MicroTime`` as the API server serialises it."""
    return now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def other_holder(api: KubeApi, identity: str, config: LeaseConfig, now: dt.datetime) -> str | None:
    """For a replica started without leader election: who else holds the Lease now, read once at start,
    as ``"<identity> (renewed <renewTime>)"``; None when the Lease is absent, unheld, held by ``identity``
    or not renewed within its ``leaseDurationSeconds`` (judged on this clock: a holder whose clock runs
    far behind may look expired). A Lease that cannot be read is an ``ApiError`` (not assumed free)."""
    try:
        lease = api.get(f"{LEASES.format(namespace=config.namespace)}/{config.name}")
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise
    raw = lease.get("spec")
    spec: dict[str, Any] = raw if isinstance(raw, dict) else {}
    holder, renewed = str(spec.get("holderIdentity") or ""), str(spec.get("renewTime") or "")
    if not holder or holder == identity:
        return None
    try:
        renew_time = dt.datetime.fromisoformat(renewed)
        duration = float(spec.get("leaseDurationSeconds") or config.lease_duration_s)
    except (TypeError, ValueError):
        return f"{holder} (renewTime {renewed!r} unreadable)"  # unknown freshness: taken as held
    if renew_time.tzinfo is None or renew_time + dt.timedelta(seconds=duration) <= now:
        return None
    return f"{holder} (renewed {renewed})"


class LeaderElector:
    """Runs the election loop on its own thread; ``on_stopped_leading`` fires once if the lease is lost."""

    def __init__(
        self,
        api: KubeApi,
        identity: str,
        config: LeaseConfig,
        stop: threading.Event,
        on_stopped_leading: Callable[[], None],
    ) -> None:
        self.api = api
        self.identity = identity
        self.config = config
        self.stop = stop
        self.on_stopped_leading = on_stopped_leading
        self._leading = threading.Event()
        self._last_renew = 0.0  # monotonic time of the last successful acquire/renew
        self._observed: dict[str, Any] | None = None  # last record seen
        self._observed_at = 0.0  # monotonic time it last changed

    @property
    def collection(self) -> str:
        return LEASES.format(namespace=self.config.namespace)

    def is_leader(self) -> bool:
        return self._leading.is_set() and time.monotonic() - self._last_renew < self.config.renew_deadline_s

    def wait_for_leadership(self, timeout: float) -> bool:
        return self._leading.wait(timeout)

    def run(self) -> None:
        while not self.stop.is_set() and not self._try_acquire_or_renew():
            self.stop.wait(self.config.retry_period_s)
        if self.stop.is_set():
            return
        log.info("%s acquired lease %s/%s", self.identity, self.config.namespace, self.config.name)
        self._leading.set()
        while not self.stop.wait(self.config.retry_period_s):
            if self._try_acquire_or_renew():
                continue
            if time.monotonic() - self._last_renew >= self.config.renew_deadline_s:
                self._leading.clear()
                log.error("%s lost lease %s/%s", self.identity, self.config.namespace, self.config.name)
                self.on_stopped_leading()
                return

    def _try_acquire_or_renew(self) -> bool:
        now = dt.datetime.now(dt.UTC)
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.config.lease_duration_s) or 1,
            "acquireTime": micro_time(now),
            "renewTime": micro_time(now),
            "leaseTransitions": 0,
        }
        path = f"{self.collection}/{self.config.name}"
        try:
            lease = self.api.get(path)
        except ApiError as exc:
            if exc.status != 404:
                log.warning("getting lease: %s", exc)
                return False
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.config.name, "namespace": self.config.namespace},
                "spec": spec,
            }
            return self._write(lambda: self.api.request("POST", self.collection, body=body, retry=False))
        old = lease.get("spec") or {}
        if old != self._observed:
            self._observed, self._observed_at = old, time.monotonic()
        holder = old.get("holderIdentity") or ""
        if holder and holder != self.identity:
            duration = float(old.get("leaseDurationSeconds") or self.config.lease_duration_s)
            if time.monotonic() - self._observed_at < duration:
                return False
        if holder == self.identity:
            spec["acquireTime"] = old.get("acquireTime") or spec["acquireTime"]
            spec["leaseTransitions"] = int(old.get("leaseTransitions") or 0)
        else:
            spec["leaseTransitions"] = int(old.get("leaseTransitions") or 0) + 1
        # PUT carries the resourceVersion we read: a competing write in between makes this a 409.
        body = {**lease, "spec": spec}
        return self._write(lambda: self.api.request("PUT", path, body=body, retry=False))

    def _write(self, send: Callable[[], dict[str, Any]]) -> bool:
        try:
            written = send()
        except ApiError as exc:
            log.info("lease write refused: %s", exc)
            return False
        self._observed, self._observed_at = written.get("spec") or {}, time.monotonic()
        self._last_renew = time.monotonic()
        return True
