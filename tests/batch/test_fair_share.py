"""Decayed historical usage in the fair share (issue 6), in the shape of Kueue's admission fair sharing
(KEP-4136): ``consumed = previous · d + current · (1 − d)`` with ``d = 0.5 ** (elapsed / half-life)``,
and an entry penalty of ``A · request``, ``A = 1 − 0.5 ** (usageSamplingInterval / half-life)``.
Expected values are worked by hand below each test's docstring; one pins Kueue's own unit-test value."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubegpu.batch.fair_share import ConsumedUsage, decay_of
from kubegpu.batch.objects import QUEUE_LABEL, Cohort, Queue, parse_batch_objects
from kubegpu.batch.session import BatchSession
from kubegpu.cli.main import cli
from kubegpu.explain.engine import Engine
from kubegpu.model.resources import GPU_MILLI
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.assembly import SchedulerSpec
from kubegpu.scheduler.registry import kubegpu_profile
from kubegpu.sim.openb import to_node
from kubegpu.sim.openb_replay import packing_factory
from kubegpu.sim.replay import BatchSetup, Replay, SimPod
from kubegpu.testing.builders import make_node, make_pod
from tests.sim.builders import node, pod

GPU = "nvidia.com/gpu"
T10 = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)


def cohort(half_life: str = "1h", **extra: str) -> dict[str, Any]:
    afs = {"usageHalfLifeTime": half_life, **extra}
    return {"apiVersion": "kubegpu.io/v1alpha1", "kind": "GpuCohort", "metadata": {"name": "org"},
            "spec": {"admissionFairSharing": afs}}  # fmt: skip


def queue(name: str, consumed: dict[str, str] | None = None) -> dict[str, Any]:
    raw: dict[str, Any] = {"apiVersion": "kubegpu.io/v1alpha1", "kind": "GpuQueue", "metadata": {"name": name},
                           "spec": {"cohort": "org", "nominalQuota": {GPU: "8"}}}  # fmt: skip
    if consumed is not None:
        raw["status"] = {"fairSharing": {"admissionFairSharingStatus": {
            "consumedResources": consumed, "lastUpdate": "2026-12-02T10:00:00Z"}}}  # fmt: skip
    return raw


def two_queue_cluster(with_decay: bool = True) -> list[dict[str, Any]]:
    """One 8-GPU node. Queue a consumed 8 GPUs up to 10:00 and holds none now; queue b had consumed
    nothing at 10:00 and has held 4 GPUs (b-run) since. One 1-GPU job pending in each."""
    return [
        cohort() if with_decay else {**cohort(), "spec": {}},
        queue("a", {GPU: "8"}), queue("b", {}),
        make_node("n").gpus(8).obj(),
        make_pod("b-run").gpu(4).labels(**{QUEUE_LABEL: "b"}).on("n", started="2026-12-02T10:00:00Z").obj(),
        make_pod("a-job").gpu(1).labels(**{QUEUE_LABEL: "a"}).created("2026-12-02T10:30:00Z").obj(),
        make_pod("b-job").gpu(1).labels(**{QUEUE_LABEL: "b"}).created("2026-12-02T10:30:00Z").obj(),
    ]  # fmt: skip


def session_at(objs: list[dict[str, Any]], now: datetime) -> BatchSession:
    snap = build_snapshot([("t", o) for o in objs])
    assert not snap.errors, snap.errors
    queues, cohorts, groups, errors = parse_batch_objects(snap.batch_objects)
    assert not errors
    return BatchSession(
        Engine(snap, SchedulerSpec(kubegpu_profile())).scheduler, snap, queues, cohorts, groups, now=now
    )


def test_two_queues_half_life_one_hour_order_follows_decayed_usage() -> None:
    """H = 1 h. At 11:00 (one half-life): a = 8·½ + 0·½ = 4 GPUs → share 4/8 = 0.5; b = 0·½ + 4·½ = 2
    → 0.25: b goes first although it holds more now. At 12:00: a = 8·¼ = 2 → 0.25, b = 4·¾ = 3 →
    0.375: a goes first. Without decay, current usage decides at any time: a (0) before b (4/8)."""
    s = session_at(two_queue_cluster(), T10 + timedelta(hours=1))
    assert s.book.share_usage("a")[GPU] == pytest.approx(4000)
    assert s.book.share_usage("b")[GPU] == pytest.approx(2000)
    assert s.book.dominant_share("a", s.totals) == pytest.approx(0.5)
    assert s.book.dominant_share("b", s.totals) == pytest.approx(0.25)
    assert [d.workload.key for d in s.run()] == ["default/b-job", "default/a-job"]

    s = session_at(two_queue_cluster(), T10 + timedelta(hours=2))
    assert s.book.share_usage("a")[GPU] == pytest.approx(2000)
    assert s.book.share_usage("b")[GPU] == pytest.approx(3000)
    assert [d.workload.key for d in s.run()] == ["default/a-job", "default/b-job"]

    s = session_at(two_queue_cluster(with_decay=False), T10 + timedelta(hours=1))
    assert [d.workload.key for d in s.run()] == ["default/a-job", "default/b-job"]


def test_entry_penalty_is_one_sampling_interval_of_the_request() -> None:
    """H = 5m, usageSamplingInterval = 5m → A = 1 − 0.5 = 0.5: admitting b-job (1 GPU) at 11:00 adds
    0.5 GPU at once: b reads 4·(1 − 2⁻¹²) + 0.5 (12 half-lives since 10:00)."""
    objs = [cohort("5m", usageSamplingInterval="5m"), *two_queue_cluster()[1:]]
    s = session_at(objs, T10 + timedelta(hours=1))
    before = 4000 * (1 - 0.5**12)
    assert s.book.share_usage("b")[GPU] == pytest.approx(before)
    s.admit(next(w for w in s.pending()["b"]))
    assert s.book.share_usage("b")[GPU] == pytest.approx(before + 500)


def test_matches_kueue_unit_test_half_life_twice_the_sampling_interval() -> None:
    """Kueue's localqueue controller test "local queue decaying usage sums the previous state and
    running workloads half time twice larger than sampling": consumed 8 five minutes ago, 4 running,
    half-life 10m → 8·2^−½ + 4·(1 − 2^−½) = 6.8284. Kueue's expected status is 6827m: it keeps each
    term in whole milli (5656 + 1171); kubegpu keeps the sum unrounded, so it is within 2 milli of
    Kueue's own expected value (2 terms, each truncated by less than 1 milli)."""
    q = Queue("lq", "c", consumed={GPU: 8000}, consumed_at=T10 - timedelta(minutes=5))
    usage = ConsumedUsage({"lq": q}, {"c": Cohort("c", usage_half_life_s=600)}, {"lq": {GPU: 4000}}, T10)
    assert usage.consumed["lq"][GPU] == pytest.approx(8000 * 2**-0.5 + 4000 * (1 - 2**-0.5))
    assert 6827 <= usage.consumed["lq"][GPU] < 6827 + 2


def test_without_recorded_history_a_queue_starts_from_what_it_holds() -> None:
    q = Queue("lq", "c")
    usage = ConsumedUsage({"lq": q}, {"c": Cohort("c", usage_half_life_s=600)}, {"lq": {GPU: 3000}}, T10)
    assert usage.consumed["lq"] == {GPU: 3000.0}


def test_the_topmost_cohort_setting_on_the_path_applies() -> None:
    """Kueue: with two AdmissionScopes on the path to the root, the higher one is used."""
    cohorts = {"root": Cohort("root", "", 7200.0), "team": Cohort("team", "root", 600.0)}
    decay = decay_of(Queue("q", "team"), cohorts)
    assert decay is not None and decay.half_life_s == 7200.0
    assert decay_of(Queue("q", "team"), {"team": Cohort("team")}) is None


@pytest.mark.parametrize(
    ("afs", "field", "problem"),
    [
        ({"usageHalfLifeTime": "1 week"}, "spec.admissionFairSharing.usageHalfLifeTime", "not a duration"),
        ({"usageHalfLifeTime": "0s"}, "spec.admissionFairSharing.usageHalfLifeTime", "must be a positive"),
        ({"usageSamplingInterval": "5m"}, "spec.admissionFairSharing.usageHalfLifeTime", "required field"),
        (
            {"usageHalfLifeTime": "1h", "usageSamplingInterval": 300},
            "spec.admissionFairSharing.usageSamplingInterval",
            "not a duration",
        ),
    ],
)
def test_bad_fair_sharing_settings_name_file_object_and_field(
    afs: dict[str, Any], field: str, problem: str
) -> None:
    raw = {**cohort(), "spec": {"admissionFairSharing": afs}}
    _, cohorts, _, errors = parse_batch_objects([("queues.yaml", raw)])
    assert not cohorts
    (err,) = errors
    assert err.one_line().startswith(f"queues.yaml: GpuCohort org: {field}: {problem}")


def test_go_durations_parse_like_metav1_duration() -> None:
    """``1h30m`` = 5400 s, ``1.5h`` = 5400 s, ``90s``, ``500ms`` (time.ParseDuration's units)."""
    for text, seconds in (("1h30m", 5400.0), ("1.5h", 5400.0), ("90s", 90.0), ("500ms", 0.5)):
        _, cohorts, _, errors = parse_batch_objects([("f", cohort(text))])
        assert not errors and cohorts["org"].usage_half_life_s == pytest.approx(seconds)


def test_bad_recorded_status_names_the_field() -> None:
    raw = queue("a", {GPU: "8"})
    raw["status"]["fairSharing"]["admissionFairSharingStatus"]["lastUpdate"] = "yesterday"
    _, _, _, errors = parse_batch_objects([("q.yaml", raw)])
    (err,) = errors
    assert err.one_line() == (
        "q.yaml: GpuQueue a: status.fairSharing.admissionFairSharingStatus.lastUpdate: "
        "expected an RFC 3339 time, got 'yesterday'"
    )


def test_replay_advances_decayed_usage_with_simulated_time() -> None:
    """H = 1 h, sampling 5 min → A = 1 − 2^(−1/12). Queue a runs a 1-GPU pod from t = 0 to 3600 s;
    queue b's pod arrives at 7200 s and runs on. a: A·1000 at admission; at 3600: ½·A·1000 + ½·1000; at
    7200 (holding nothing): ¼·A·1000 + 250. b: A·1000 at its admission at 7200 (``kubegpu.io/gpu-milli``
    units; milli-units of them are stored, ×1000). The replay takes milliseconds of wall clock, so these
    values can only come from the simulated clock."""
    a = SimPod(replace(pod("x"), labels={QUEUE_LABEL: "a"}), 0.0, 3600.0)
    b = SimPod(replace(pod("y"), labels={QUEUE_LABEL: "b"}), 7200.0, math.inf)
    setup = BatchSetup(
        {q: Queue(q, "org", nominal={GPU_MILLI: 1_000_000}) for q in ("a", "b")},
        {"org": Cohort("org", usage_half_life_s=3600.0)},
    )
    replay = Replay(
        [to_node(node("n", 1))], [a, b], packing_factory("BestFit", None, None), mode="batch", batch=setup
    )
    report = replay.run()
    assert report.placed == 2
    assert replay.session is not None and replay.session.book.consumed is not None
    consumed = replay.session.book.consumed.consumed
    penalty = 1 - 0.5 ** (1 / 12)
    assert consumed["a"][GPU_MILLI] == pytest.approx((0.25 * penalty * 1000 + 250) * 1000)
    assert consumed["b"][GPU_MILLI] == pytest.approx(penalty * 1000 * 1000)


def test_queues_command_shows_decayed_usage_and_share(tmp_path: Path) -> None:
    """The worked example of the first test through ``kubegpu queues --now 11:00``."""
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(two_queue_cluster()), encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["queues", "--snapshot", str(path), "--now", "2026-12-02T11:00:00Z", "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    rows = {q["queue"]: q for q in data["queues"]}
    assert rows["a"]["consumed"] == {GPU: "4"} and rows["a"]["share"] == 0.5
    assert rows["b"]["consumed"] == {GPU: "2"} and rows["b"]["share"] == 0.25
    assert rows["a"]["usageHalfLifeSeconds"] == 3600
    assert rows["b"]["used"] == {GPU: "4"}
    assert [d["workload"] for d in data["decisions"]] == ["default/b-job", "default/a-job"]
    table = CliRunner().invoke(cli, ["queues", "--snapshot", str(path), "--now", "2026-12-02T11:00:00Z"])
    assert table.exit_code == 0 and "half-life 3600 s" in table.output


def test_queues_command_reports_a_bad_setting_without_a_traceback(tmp_path: Path) -> None:
    objs = [cohort("soon"), *two_queue_cluster()[1:]]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(objs), encoding="utf-8")
    result = CliRunner().invoke(cli, ["queues", "--snapshot", str(path), "-o", "json"])
    assert result.exit_code == 0
    assert (
        f"{path}: GpuCohort org: spec.admissionFairSharing.usageHalfLifeTime: not a duration" in result.output
    )
