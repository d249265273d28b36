"""diagnose's grouped summary of a snapshot, as the CLI makes it, for tests of the headline and groups."""

from __future__ import annotations

from kubegpu.explain.diagnose import Diagnosis, diagnose
from kubegpu.explain.engine import Engine
from kubegpu.explain.summary import Summary, pod_ask, summarize
from kubegpu.model.snapshot import ClusterSnapshot


def summary_of(snap: ClusterSnapshot, report: Diagnosis | None = None) -> Summary:
    """``summarize`` of ``report`` (default: diagnosing ``snap`` on a fresh engine), each Pending pod's ask
    read off the pod with its DRA claims, as ``kubegpu diagnose`` reads it."""
    asks = {str(p.key): pod_ask(p, snap.dra) for p in snap.pending_pods()}
    return summarize(report if report is not None else diagnose(Engine(snap)), asks)
