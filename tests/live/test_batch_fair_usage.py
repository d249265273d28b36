"""Decayed queue usage in the live scheduler (``live.fair_usage``): kept across admission cycles, written
to the GpuQueue status the Kueue way, seeded from it on start.

Pins Kueue's admission fair sharing (KEP-4136) as kubegpu models it (``docs/batch.md``): a queue's
consumed usage decays with ``0.5 ** (elapsed / usageHalfLifeTime)`` towards what it holds, and is
recorded at every ``usageSamplingInterval`` in the LocalQueue's shape
``status.fairSharing.admissionFairSharingStatus.{consumedResources, lastUpdate}`` — here a merge patch
on the ``gpuqueues/<name>/status`` subresource, which the chart's RBAC grants and nothing more. Expected
values are worked by hand from that formula (Kueue's own controller test: 8 GPUs consumed, 4 running,
half-life 10 min, 5 min later → 4 + 4 · 2^-½ = 6.828).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from kubegpu.batch.objects import QUEUE_LABEL, Cohort, Queue, parse_batch_objects
from kubegpu.explain.engine import Engine
from kubegpu.live.batch import BatchAdmission, Cycle
from kubegpu.live.fair_usage import UsageHistory
from kubegpu.model.objects import Pod
from kubegpu.model.parse import parse_pod
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.assembly import SchedulerSpec
from kubegpu.scheduler.registry import kubegpu_profile
from kubegpu.testing.builders import make_node, make_pod
from tests.live.apiserver import RunningApiServer, wait_until
from tests.live.conftest import Component, gpu_node, gpu_pod
from tests.live.deploy_manifests import DEPLOY, documents, granted, request_attributes
from tests.live.observe import QUEUES, message_of, node_of

COHORTS = "gpucohorts.kubegpu.io"
GPU = "nvidia.com/gpu"


def stamp(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def cohort(api: RunningApiServer, half_life: str, sampling: str) -> None:
    api.emulator.install_crd(COHORTS)
    api.emulator.install_crd(QUEUES)
    fair = {"usageHalfLifeTime": half_life, "usageSamplingInterval": sampling}
    api.emulator.create(COHORTS, {"metadata": {"name": "org"}, "spec": {"admissionFairSharing": fair}})


def queue(
    api: RunningApiServer, name: str, consumed: str | None = None, at: dt.datetime | None = None
) -> None:
    obj: dict[str, Any] = {"metadata": {"name": name}, "spec": {"cohort": "org", "nominalQuota": {GPU: "8"}}}
    if consumed is not None and at is not None:
        afs = {"consumedResources": {GPU: consumed}, "lastUpdate": stamp(at)}
        obj["status"] = {"fairSharing": {"admissionFairSharingStatus": afs}}
    api.emulator.create(QUEUES, obj)


def recorded(api: RunningApiServer, name: str) -> dict[str, Any]:
    obj = api.emulator.get(QUEUES, "", name) or {}
    return dict(obj.get("status", {}).get("fairSharing", {}).get("admissionFairSharingStatus") or {})


def milli(quantity: str) -> float:
    return float(quantity[:-1]) if quantity.endswith("m") else float(quantity) * 1000


def test_consumed_usage_is_decayed_and_written_to_the_queue_status_every_sampling_interval(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """team-a consumed 8 GPUs as of 5 minutes ago and holds 4 since: the first sample is due at once
    (the status is a sampling interval old) and reads 4 + 4 · 0.5^(elapsed/600 s) — 6.828 at exactly
    300 s. With the 10 s sampling interval the next one follows 10 s later, decayed from the first."""
    cohort(api, "10m", "10s")
    t0 = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(seconds=300)
    queue(api, "team-a", "8", t0)
    api.emulator.create("nodes", gpu_node("gpu-1", 8))
    api.emulator.create("pods", gpu_pod("run", 4, node="gpu-1", labels={"kubegpu.io/queue": "team-a"}))
    start_scheduler("replica-a")

    first = wait_until(lambda: recorded(api, "team-a") if recorded(api, "team-a").get("lastUpdate") != stamp(t0) else None, what="the first sample")  # fmt: skip
    t1 = parse(first["lastUpdate"])
    elapsed = (t1 - t0).total_seconds()
    assert 300 <= elapsed <= 310  # the bound below: 4000 + 4000 · 0.5^(310/600) = 6795.9 m
    expected = 4000 + 4000 * 0.5 ** (elapsed / 600)
    assert abs(milli(first["consumedResources"][GPU]) - expected) <= 1  # rounded to whole milli-GPUs
    assert 6796 <= milli(first["consumedResources"][GPU]) <= 6829  # 310 s … 300 s, worked by hand

    second = wait_until(
        lambda: recorded(api, "team-a") if recorded(api, "team-a")["lastUpdate"] != first["lastUpdate"] else None,
        timeout=30, what="the next sample",
    )  # fmt: skip
    t2 = parse(second["lastUpdate"])
    assert 10 <= (t2 - t1).total_seconds() <= 15  # one sampling interval (whole seconds, a loop's delay)
    again = 4000 + (milli(first["consumedResources"][GPU]) - 4000) * 0.5 ** ((t2 - t1).total_seconds() / 600)
    assert abs(milli(second["consumedResources"][GPU]) - again) <= 1

    writes = [
        request_attributes(s) for s in api.emulator.served if s.method == "PATCH" and "gpuqueues" in s.path
    ]
    assert {w[:3] for w in writes} == {("patch", "kubegpu.io", "gpuqueues/status")}  # never the main resource
    docs = documents(DEPLOY / "scheduler" / "scheduler.yaml")
    rules = [r for d in docs if d["kind"] in ("ClusterRole", "Role") for r in d["rules"]]
    assert all(granted(rules, *w) for w in writes)


def test_the_admission_order_follows_the_history_recorded_in_status(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """One 8-GPU node; queue b holds 2 GPUs, queue a none but its status says it consumed 8 up to now
    (half-life 1 h). Each queue has a 4-GPU pod waiting and only one fits (6 free). By what they hold, a
    (share 0) goes first; by decayed usage a reads 8/8 = 1.0 and b 2/8 = 0.25, so b's pod is admitted
    and a's waits (equal priorities, both within nominal quota: nothing is preempted or reclaimed)."""
    cohort(api, "1h", "5m")
    queue(api, "a", "8", dt.datetime.now(dt.UTC).replace(microsecond=0))
    queue(api, "b")
    api.emulator.create("nodes", gpu_node("gpu-1", 8))
    api.emulator.create("pods", gpu_pod("b-run", 2, node="gpu-1", labels={"kubegpu.io/queue": "b"}))
    api.emulator.create("pods", gpu_pod("a-job", 4, labels={"kubegpu.io/queue": "a"}))
    api.emulator.create("pods", gpu_pod("b-job", 4, labels={"kubegpu.io/queue": "b"}))
    start_scheduler("replica-a")

    wait_until(lambda: node_of(api, "b-job") == "gpu-1", what="b's pod admitted first")
    wait_until(lambda: message_of(api, "a-job").startswith("queue a, position 1 of 1: "), what="a waiting")
    assert node_of(api, "a-job") == "" and api.emulator.requests_to("POST", r".*/eviction") == []


# -- what one admission cycle hands the next (live.fair_usage.UsageHistory), without a cluster -----------

T0 = dt.datetime(2026, 12, 3, 10, 0, 0, tzinfo=dt.UTC)
HOUR = dt.timedelta(hours=1)


def holding(gpus: int) -> list[Pod]:
    """team-a's running pods: ``gpus`` GPUs on one node (none for 0)."""
    if not gpus:
        return []
    raw = gpu_pod("run", gpus, node="gpu-1", labels={"kubegpu.io/queue": "team-a"})
    return [parse_pod(raw, "test")]


def test_the_kept_usage_wins_over_a_stale_status_and_a_newer_status_wins_over_it() -> None:
    """Half-life 1 h; status: 8 GPUs consumed at 10:00. At 11:00 holding nothing: 8·½ = 4 (kept). At 12:00,
    having held 4 since 11:00: from what was kept 4·½ + 4·½ = 4; from the stale status alone it would
    be 8·¼ + 4·¾ = 5 (the span 10:00–11:00 wrongly counted at 4). A status written after what was kept
    (another writer, a reset by hand) replaces it: 0 at 12:00 → 0·½ + 4·½ = 2 at 13:00."""
    cohorts = {"org": Cohort("org", usage_half_life_s=3600, usage_sampling_s=300)}
    queues = {"team-a": Queue("team-a", "org", consumed={GPU: 8000}, consumed_at=T0)}
    history = UsageHistory()
    assert history.due(queues, cohorts, T0 + dt.timedelta(seconds=299)) == []  # within one interval
    assert history.due(queues, cohorts, T0 + dt.timedelta(seconds=300)) == ["team-a"]

    assert history.sample(queues, cohorts, {}, holding(0), T0 + HOUR).consumed["team-a"][GPU] == 4000.0
    assert history.due(queues, cohorts, T0 + HOUR + dt.timedelta(seconds=1)) == []  # just sampled
    assert history.sample(queues, cohorts, {}, holding(4), T0 + 2 * HOUR).consumed["team-a"][GPU] == 4000.0

    reset = {
        "team-a": Queue(
            "team-a", "org", consumed={GPU: 0}, consumed_at=T0 + 2 * HOUR + dt.timedelta(seconds=1)
        )
    }
    later = history.sample(reset, cohorts, {}, holding(4), T0 + 3 * HOUR + dt.timedelta(seconds=1))
    assert later.consumed["team-a"][GPU] == 2000.0
    history.reset()  # a new leader: seeds from status again
    assert history.kept == {} and history.due(queues, cohorts, T0 + 3 * HOUR) == ["team-a"]


# -- the entry penalty of one admission cycle (live.batch.BatchAdmission.cycle), without a cluster -------


def admission_cycle(objects: list[dict[str, Any]], admission: BatchAdmission, now: dt.datetime) -> Cycle:
    """One cycle over ``objects`` (nodes, pods) with a fresh scheduler, as the live loop hands it the
    informers' pods; the queue objects are ``admission``'s."""
    snap = build_snapshot([("test", o) for o in objects])
    assert not snap.errors, snap.errors
    scheduler = Engine(snap, SchedulerSpec(kubegpu_profile())).scheduler
    pods = {p.key: p for p in snap.pods}
    return admission.cycle(scheduler, pods, [p for p in snap.pods if not p.node_name], {}, now)


def test_a_preempting_workload_is_charged_its_entry_penalty_once_and_the_workloads_after_it_none() -> None:
    """Queues a and b in cohort org (half-life 1 h, sampling 5 m, so Kueue's A = 1 − 0.5^(300/3600) =
    1 − 2^(−1/12) = 1 − 0.943874 = 0.056126), neither with history: both start at 0. Nodes n1 (8 GPUs,
    full with the unqueued pod low) and n2 (4 free). a's head hi (8 GPUs, priority 1000) goes first
    (equal shares 0, higher priority) and fits only by preempting low; b's bj (1 GPU) comes after it.

    Cycle 1 (11:00): hi preempts and is not admitted yet; bj is not decided (it would count on low's room
    being free). Kept usage: a 0 and b 0 — no entry penalty for either. Cycle 2 (same instant, low
    gone): hi and bj are admitted and charged once: a = 8000 m · A = 449.0 m, b = 1000 m · A = 56.1 m (a
    second charge for hi would make a 898.0 m)."""
    cohort = {"apiVersion": "kubegpu.io/v1alpha1", "kind": "GpuCohort", "metadata": {"name": "org"},
              "spec": {"admissionFairSharing": {"usageHalfLifeTime": "1h", "usageSamplingInterval": "5m"}}}  # fmt: skip
    queues = [
        {"apiVersion": "kubegpu.io/v1alpha1", "kind": "GpuQueue", "metadata": {"name": name},
         "spec": {"cohort": "org", "nominalQuota": {GPU: "16"}}}
        for name in ("a", "b")
    ]  # fmt: skip
    admission = BatchAdmission()
    admission.queues, admission.cohorts, admission.groups, errors = parse_batch_objects(
        [("test", o) for o in [cohort, *queues]]
    )
    assert not errors
    nodes = [make_node("n1").gpus(8).obj(), make_node("n2").gpus(4).obj()]
    low = make_pod("low").gpu(8).on("n1", started="2026-12-02T10:00:00Z").obj()
    hi = (
        make_pod("hi")
        .gpu(8)
        .priority(1000)
        .labels(**{QUEUE_LABEL: "a"})
        .created("2026-12-02T10:30:00Z")
        .obj()
    )
    bj = make_pod("bj").gpu(1).labels(**{QUEUE_LABEL: "b"}).created("2026-12-02T10:30:00Z").obj()
    now = dt.datetime(2026, 12, 2, 11, tzinfo=dt.UTC)

    first = admission_cycle([*nodes, low, hi, bj], admission, now)
    assert first.preempting is not None and first.preempting.workload == "default/hi"
    assert first.preempting.victims.keys() == {"default/low"} and first.admitted == []
    assert admission.usage.kept["a"] == ({GPU: 0.0}, now)
    assert admission.usage.kept["b"][0].get(GPU, 0.0) == 0.0

    second = admission_cycle([*nodes, hi, bj], admission, now)
    assert second.preempting is None
    assert {a.workload for a in second.admitted} == {"default/hi", "default/bj"}
    assert abs(admission.usage.kept["a"][0][GPU] - 449.0) < 0.1
    assert abs(admission.usage.kept["b"][0][GPU] - 56.1) < 0.1
