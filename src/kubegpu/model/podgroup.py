"""Pod facts the batch layer and preemption share: gang membership and what evicting a pod costs (R14.2, R14.3).

Gang membership: Volcano's ``scheduling.k8s.io/group-name`` annotation, the coscheduling plugin's
``scheduling.x-k8s.io/pod-group`` label, or kubegpu's ``kubegpu.io/pod-group`` label.

Eviction cost: the GPU-time a victim loses, i.e. its GPUs × the seconds since its last checkpoint —
``kubegpu.io/last-checkpoint-time`` (RFC 3339) when the workload reports it, else the time since start
modulo ``kubegpu.io/checkpoint-interval-seconds`` (work since the last periodic checkpoint), else the
whole time since start (nothing is saved). Worked example: a 4-GPU pod started 10:00, checkpointing
every 1800 s, evicted at 11:10: 4 × (4200 mod 1800 = 600 s) = 2400 GPU-seconds lost.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from kubegpu.model.objects import Pod
from kubegpu.model.resources import GPU_MILLI, is_gpu

VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
COSCHEDULING_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
KUBEGPU_GROUP_LABEL = "kubegpu.io/pod-group"
LAST_CHECKPOINT_ANNOTATION = "kubegpu.io/last-checkpoint-time"
CHECKPOINT_INTERVAL_ANNOTATION = "kubegpu.io/checkpoint-interval-seconds"


def group_key(pod: Pod) -> str | None:
    """``namespace/group`` of the gang the pod belongs to, if any."""
    name = (
        pod.annotations.get(VOLCANO_GROUP_ANNOTATION)
        or pod.labels.get(COSCHEDULING_GROUP_LABEL)
        or pod.labels.get(KUBEGPU_GROUP_LABEL)
    )
    return f"{pod.namespace}/{name}" if name else None


def parse_time(text: str) -> datetime | None:
    """An RFC 3339 time; one written without an offset is taken as UTC (the API server always writes Z),
    so it compares with the snapshot's times instead of raising."""
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def snapshot_now(
    pods: list[Pod], given: str | None, wall: Callable[[], datetime] = lambda: datetime.now(UTC)
) -> tuple[datetime, str | None]:
    """The time a command measures ages and eviction costs at, and a note when it had to guess.

    ``given`` (RFC 3339) wins; else the snapshot's newest pod time, so reruns agree; else (no pod carries a
    timestamp, as in hand-written manifests) the wall clock, with a note saying so. Raises ``ValueError``
    naming ``given`` when it is not an RFC 3339 time.
    """
    if given:
        at = parse_time(given)
        if at is None:
            raise ValueError(f"not an RFC 3339 time: {given!r} (e.g. 2026-12-04T10:00:00Z)")
        return at, None
    at = snapshot_time(pods)
    if at is not None:
        return at, None
    return wall(), (
        "no pod in the snapshot carries a creationTimestamp or startTime: ages and GPU-hours are "
        "measured from the current time; give --now to pin it"
    )


def rfc3339(t: datetime) -> str:
    """``t`` (UTC) as the API server writes a timestamp, to the second: ``2026-12-03T10:00:00Z``."""
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def gpu_milli_of(pod: Pod) -> int:
    """Milli-GPU-equivalents the pod holds: each extended GPU resource unit counts as one GPU, and a
    fractional-sharing request (``kubegpu.io/gpu-milli``) as its milli-GPUs."""
    whole = sum(v for r, v in pod.requests.items() if is_gpu(r))
    return whole + pod.requests.get(GPU_MILLI, 0) // 1000


def seconds_at_risk(pod: Pod, now: datetime) -> int:
    """Seconds of work the pod loses if evicted at ``now`` (see the module docstring)."""
    last = parse_time(pod.annotations.get(LAST_CHECKPOINT_ANNOTATION, ""))
    if last is not None:
        return max(int((now - last).total_seconds()), 0)
    start = parse_time(pod.start_time)
    if start is None:
        return 0  # not started: nothing to lose
    elapsed = max(int((now - start).total_seconds()), 0)
    interval = pod.annotations.get(CHECKPOINT_INTERVAL_ANNOTATION, "")
    if interval.isdigit() and int(interval) > 0:
        return elapsed % int(interval)
    return elapsed


def eviction_cost(pod: Pod, now: datetime) -> int:
    """GPU-seconds lost by evicting ``pod`` at ``now`` (truncated to whole GPU-seconds)."""
    return gpu_milli_of(pod) * seconds_at_risk(pod, now) // 1000


def snapshot_time(pods: list[Pod]) -> datetime | None:
    """The newest creation or start time among ``pods``: "now" for a snapshot, reproducibly."""
    times = [
        t for p in pods for t in (parse_time(p.creation_timestamp), parse_time(p.start_time)) if t is not None
    ]
    return max(times, default=None)
