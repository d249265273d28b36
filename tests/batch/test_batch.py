"""The batch layer: queue quota with cohorts, DRF order, gangs all-or-nothing, cost-aware preemption.

Pinned behaviours: Kueue-style nominal quota with cohort borrowing/lending limits (worked examples in
``batch/quota.py``), Volcano / scheduler-plugins PodGroup ``minMember`` (all-or-nothing), DRF (Ghodsi
et al.: the queue with the lowest dominant share goes first), kube-scheduler DefaultPreemption rules
for candidate nodes and minimal victims (reused), plus gang-whole eviction and GPU-time cost.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubegpu.batch.objects import Cohort, Queue, parse_batch_objects
from kubegpu.batch.quota import QuotaBook
from kubegpu.batch.session import BatchSession
from kubegpu.batch.workloads import workloads
from kubegpu.explain.engine import Engine
from kubegpu.model.podgroup import eviction_cost
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.assembly import SchedulerSpec
from kubegpu.scheduler.registry import kubegpu_profile
from kubegpu.testing.builders import make_node, make_pod

GPU = "nvidia.com/gpu"


def q(name: str, gpus: int, cohort: str = "", **kw: Any) -> Queue:
    return Queue(name, cohort, nominal={GPU: gpus * 1000}, **kw)


def test_borrowing_and_lending_worked_example() -> None:
    """A and B share a cohort, 8 GPUs each, B lends at most 4: A may reach 12 while B is idle,
    and 10 once B uses 6 (B draws 6 − (8 − 4) = 2 from the pool of 12)."""
    book = QuotaBook(
        {"a": q("a", 8, "c"), "b": q("b", 8, "c", lending_limit={GPU: 4000})}, {"c": Cohort("c")}
    )
    assert book.check("a", {GPU: 12000}).fits
    assert not book.check("a", {GPU: 13000}).fits
    book.charge("b", {GPU: 6000})
    assert book.check("a", {GPU: 10000}).fits
    assert not book.check("a", {GPU: 11000}).fits


def test_borrowing_limit_caps_what_a_queue_takes_above_nominal() -> None:
    book = QuotaBook(
        {"a": q("a", 4, "c", borrowing_limit={GPU: 2000}), "b": q("b", 8, "c")}, {"c": Cohort("c")}
    )
    check = book.check("a", {GPU: 7000})
    assert not check.fits and check.reason == "nvidia.com/gpu: would borrow 3 but borrowingLimit is 2"
    assert book.check("a", {GPU: 6000}).borrowing == {GPU: 2000}


def test_a_queue_without_cohort_gets_its_nominal_only() -> None:
    book = QuotaBook({"solo": q("solo", 2)}, {})
    assert book.check("solo", {GPU: 2000}).fits and not book.check("solo", {GPU: 3000}).fits


def test_nested_cohorts_share_one_pool_at_the_root() -> None:
    cohorts = {"root": Cohort("root"), "left": Cohort("left", "root"), "right": Cohort("right", "root")}
    book = QuotaBook({"a": q("a", 2, "left"), "b": q("b", 6, "right")}, cohorts)
    assert book.check("a", {GPU: 8000}).fits


def test_drf_share_is_the_dominant_fraction_over_weight() -> None:
    """Queue usage 4 GPUs of 16 (25%) and 8 CPUs of 64 (12.5%): dominant share 0.25, weight 2 → 0.125."""
    book = QuotaBook({"a": Queue("a", weight=2, nominal={GPU: 8000})}, {})
    book.charge("a", {GPU: 4000, "cpu": 8000})
    assert book.dominant_share("a", {GPU: 16000, "cpu": 64000}) == 0.125


def queue_obj(name: str, gpus: int, cohort: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"nominalQuota": {GPU: str(gpus)}}
    if cohort:
        spec["cohort"] = cohort
    return {"apiVersion": "kubegpu.io/v1alpha1", "kind": "GpuQueue", "metadata": {"name": name}, "spec": spec}


def pod_group(name: str, min_member: int, api: str = "scheduling.x-k8s.io/v1alpha1") -> dict[str, Any]:
    return {"apiVersion": api, "kind": "PodGroup", "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": min_member}}  # fmt: skip


def session(*objs: dict[str, Any]) -> BatchSession:
    snap = build_snapshot([("t", o) for o in objs])
    assert not snap.errors, snap.errors
    queues, cohorts, groups, errors = parse_batch_objects(snap.batch_objects)
    assert not errors
    engine = Engine(snap, SchedulerSpec(kubegpu_profile()))
    return BatchSession(engine.scheduler, snap, queues, cohorts, groups)


def member(name: str, group: str, gpus: int, queue: str = "team") -> dict[str, Any]:
    return (
        make_pod(name)
        .gpu(gpus)
        .labels(**{"scheduling.x-k8s.io/pod-group": group, "kubegpu.io/queue": queue})
        .obj()
    )


def test_gang_that_does_not_fit_holds_nothing_and_is_explained_whole() -> None:
    small = member("small", "", 1)
    small["metadata"]["creationTimestamp"] = "2026-01-02T00:00:00Z"  # queued after the gang
    s = session(
        queue_obj("team", 64), pod_group("train", 3),
        make_node("n1").gpus(8).obj(), make_node("n2").gpus(8).obj(),
        *(member(f"w{i}", "train", 8) for i in range(3)),
        small,
    )  # fmt: skip
    decisions = {d.workload.key: d for d in s.run()}
    gang = decisions["default/train"]
    assert not gang.admitted and gang.nodes == {}
    assert gang.reason.startswith(
        "gang default/train needs 3 of 3 pods (8×nvidia.com/gpu) placed together; only 2 fit now"
    )
    assert "w2: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu." in gang.reason
    # the half-gang held nothing: the 1-GPU pod still finds room
    assert decisions["default/small"].admitted
    assert (s.scheduler.cluster.requested[:, s.scheduler.cluster.col[GPU]] <= 8000).all()


def test_volcano_pod_group_and_annotation_are_understood() -> None:
    raw = make_pod("p0").gpu(1).obj()
    raw["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "job"}
    vg = pod_group("job", 1, "scheduling.volcano.sh/v1beta1")
    vg["spec"]["queue"] = "research"
    snap = build_snapshot([("t", raw), ("t", vg)])
    _, _, groups, _ = parse_batch_objects(snap.batch_objects)
    (w,) = workloads(snap.pods, groups)
    assert (w.key, w.queue, w.min_member, w.gang) == ("default/job", "research", 1, True)


def test_quota_blocks_before_placement_and_says_by_how_much() -> None:
    s = session(queue_obj("team", 4), make_node("n").gpus(8).obj(), member("a", "", 3), member("b", "", 2))
    decisions = {d.workload.key: d for d in s.run()}
    assert decisions["default/a"].admitted
    assert decisions["default/b"].reason == (
        "quota of queue team: nvidia.com/gpu: needs 2, the queue uses 3 of nominal 4 and its cohort has 1 left to lend"
    )


def test_lowest_dominant_share_goes_first() -> None:
    s = session(
        queue_obj("big", 16), queue_obj("small", 16), make_node("n").gpus(4).obj(),
        make_pod("run").gpu(2).labels(**{"kubegpu.io/queue": "big"}).on("n").obj(),
        member("big-next", "", 2, "big"), member("small-next", "", 2, "small"),
    )  # fmt: skip
    order = [d.workload.key for d in s.run()]
    assert order == ["default/small-next", "default/big-next"]


def test_equal_shares_go_by_priority_then_age_not_queue_name() -> None:
    """Kueue's entryOrdering under fair sharing (pkg/scheduler/scheduler.go): at equal dominant share the
    head of higher priority goes first, then the older head. Queues "a" and "b" both at share 0: b's
    head, created a day earlier, goes before a's; with a's head at priority 10, a's goes first."""

    def head(name: str, queue: str, created: str, priority: int = 0) -> dict[str, Any]:
        pod = member(name, "", 1, queue)
        pod["metadata"]["creationTimestamp"] = created
        pod["spec"]["priority"] = priority
        return pod

    objs = (queue_obj("a", 8), queue_obj("b", 8), make_node("n").gpus(4).obj())
    older_b = session(
        *objs, head("a-head", "a", "2026-01-02T00:00:00Z"), head("b-head", "b", "2026-01-01T00:00:00Z")
    )
    assert [d.workload.key for d in older_b.run()] == ["default/b-head", "default/a-head"]
    urgent_a = session(
        *objs,
        head("a-head", "a", "2026-01-02T00:00:00Z", priority=10),
        head("b-head", "b", "2026-01-01T00:00:00Z"),
    )
    assert [d.workload.key for d in urgent_a.run()] == ["default/a-head", "default/b-head"]


def test_a_head_within_nominal_quota_goes_before_one_that_would_borrow() -> None:
    """Kueue's entryOrdering puts heads whose admission stays within their queue's nominal quota before
    heads that would borrow, ahead of share, priority and age. Cohort "org": a (nominal 1 GPU) and b
    (nominal 8), nothing admitted, both shares 0. a's head asks 2 GPUs (borrows 1) and is older and of
    higher priority; b's head asks 1 (within nominal) and still goes first. With a's head asking 1, a's
    goes first again (older)."""

    def head(name: str, queue: str, gpus: int, created: str, priority: int = 0) -> dict[str, Any]:
        pod = member(name, "", gpus, queue)
        pod["metadata"]["creationTimestamp"] = created
        pod["spec"]["priority"] = priority
        return pod

    objs = (queue_obj("a", 1, "org"), queue_obj("b", 8, "org"), make_node("n").gpus(4).obj())
    b_head = head("b-head", "b", 1, "2026-01-02T00:00:00Z")
    borrowing = session(*objs, head("a-head", "a", 2, "2026-01-01T00:00:00Z", priority=10), b_head)
    assert [d.workload.key for d in borrowing.run()] == ["default/b-head", "default/a-head"]
    within = session(*objs, head("a-head", "a", 1, "2026-01-01T00:00:00Z"), b_head)
    assert [d.workload.key for d in within.run()] == ["default/a-head", "default/b-head"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.sampled_from([1, 2, 4, 8])), min_size=1, max_size=6),
       st.lists(st.sampled_from([2, 4, 8]), min_size=1, max_size=4))  # fmt: skip
def test_gangs_are_all_or_nothing_under_contention(
    gangs: list[tuple[int, int]], node_gpus: list[int]
) -> None:
    objs: list[dict[str, Any]] = [queue_obj("team", 1000)]
    objs += [make_node(f"n{i}").gpus(g).obj() for i, g in enumerate(node_gpus)]
    for gi, (size, gpus) in enumerate(gangs):
        objs.append(pod_group(f"g{gi}", size))
        objs += [member(f"g{gi}-{k}", f"g{gi}", gpus) for k in range(size)]
    s = session(*objs)
    decisions = s.run()
    cluster = s.scheduler.cluster
    for d in decisions:
        placed = [p for p in d.workload.pods if p.key in cluster.placement]
        assert (
            len(placed) in (0, len(d.workload.pods))
            if d.workload.min_member == len(d.workload.pods)
            else True
        )
        assert d.admitted == bool(placed)
    assert (cluster.requested <= cluster.allocatable).all()


NOW = "2026-12-02T11:10:00Z"


def running(name: str, node: str, gpus: int, started: str, **annotations: str) -> dict[str, Any]:
    raw = make_pod(name).gpu(gpus).on(node, started=started).obj()
    raw["metadata"]["annotations"] = dict(annotations)
    return raw


def test_eviction_cost_worked_example() -> None:
    """4 GPUs, started 10:00, checkpoint every 1800 s, evicted 11:10 → 4 × 600 s."""
    pod = build_snapshot(
        [
            (
                "t",
                running(
                    "p", "n", 4, "2026-12-02T10:00:00Z", **{"kubegpu.io/checkpoint-interval-seconds": "1800"}
                ),
            )
        ]
    ).pods[0]
    assert eviction_cost(pod, datetime(2026, 12, 2, 11, 10, tzinfo=UTC)) == 2400


def preemptor_result(*objs: dict[str, Any]) -> Any:
    snap = build_snapshot([("t", o) for o in objs])
    at = datetime.fromisoformat(NOW)
    engine = Engine(snap, SchedulerSpec(kubegpu_profile(), clock=lambda: at))  # costs priced at NOW
    return engine.scheduler.schedule_one(make_pod("urgent").gpu(4).priority(100).parsed())


def test_preemption_picks_the_node_that_loses_least_gpu_time() -> None:
    """Both nodes free 4 GPUs by evicting one pod; upstream would tie-break on start time, kubegpu
    evicts the pod that checkpointed 5 minutes ago rather than the one that never did."""
    result = preemptor_result(
        make_node("a").gpus(4).obj(), running("fresh", "a", 4, "2026-12-02T08:00:00Z",
                                               **{"kubegpu.io/last-checkpoint-time": "2026-12-02T11:05:00Z"}),
        make_node("b").gpus(4).obj(), running("unsaved", "b", 4, "2026-12-02T10:00:00Z"),
    )  # fmt: skip
    assert (result.nominated_node, [v.name for v in result.victims]) == ("a", ["fresh"])


def test_preemption_never_splits_a_gang() -> None:
    """Evicting one member of a 2-pod gang evicts both: that costs more than the lone pod elsewhere."""
    gang = {"scheduling.x-k8s.io/pod-group": "ddp"}
    m0 = running("ddp-0", "a", 4, "2026-12-02T11:00:00Z")
    m0["metadata"]["labels"] = gang
    m1 = running("ddp-1", "b", 4, "2026-12-02T11:00:00Z")
    m1["metadata"]["labels"] = gang
    result = preemptor_result(
        make_node("a").gpus(4).obj(), m0, make_node("b").gpus(4).obj(), m1,
        make_node("c").gpus(4).obj(), running("solo", "c", 4, "2026-12-02T10:55:00Z"),
    )  # fmt: skip
    # gang: 2 pods × 4 GPUs × 600 s = 4800; solo: 4 × 900 s = 3600 → solo goes
    assert [v.name for v in result.victims] == ["solo"]
    # and when the gang is the only option, both members go together
    result = preemptor_result(make_node("a").gpus(4).obj(), m0, make_node("b").gpus(4).obj(), m1)
    assert sorted(v.name for v in result.victims) == ["ddp-0", "ddp-1"]


def test_reclaim_takes_back_borrowed_capacity_from_the_cohort() -> None:
    """team-b borrowed team-a's idle GPUs (b uses 8 on nominal 4); a asks for 4 within its nominal 4:
    b's cheapest borrowed workload is evicted and a is admitted."""
    borrower = [
        running(f"b{i}", "n", 2, f"2026-12-02T1{i}:00:00Z") | {"metadata": {
            "name": f"b{i}", "namespace": "default", "labels": {"kubegpu.io/queue": "team-b"},
            "creationTimestamp": "2026-12-02T00:00:00Z"}}
        for i in range(4)
    ]  # fmt: skip
    s = session(
        queue_obj("team-a", 4, "org"), queue_obj("team-b", 4, "org"), make_node("n").gpus(8).obj(),
        *borrower, member("claim", "", 4, "team-a"),
    )  # fmt: skip
    s.now = datetime(2026, 12, 2, 14, 0, tzinfo=UTC)
    (decision,) = s.run()
    assert decision.admitted
    # b0..b3 started 10:00..13:00; the two most recent lose least (b3: 2 GPUs × 1 h, b2: 2 × 2 h)
    assert decision.evicted == {"default/b3": 7200, "default/b2": 14400}


def test_explain_reports_queue_position_quota_shortfall_and_missing_gang_members() -> None:
    from kubegpu.explain.pending import explain_pod

    objs = [
        queue_obj("team", 4), make_node("n").gpus(8).obj(), pod_group("ddp", 3),
        member("first", "", 2), member("ddp-0", "ddp", 2), member("ddp-1", "ddp", 2),
    ]  # fmt: skip
    snap = build_snapshot([("t", o) for o in objs])
    engine = Engine(snap)
    gang_pod = snap.pod("default/ddp-0")
    assert gang_pod is not None
    status = explain_pod(engine, gang_pod).queue
    # workloads in "team" sorted by key at equal priority/creation: default/ddp, default/first
    assert status is not None and (status["position"], status["pendingInQueue"]) == (1, 2)
    # the gang asks for 4 GPUs on a nominal of 4 with nothing used: quota fits...
    assert status["quotaFits"] is True
    # ...but only 2 of its 3 members exist
    assert status["gang"] == {"minMember": 3, "members": 2, "bound": 0, "missing": 1}
    used = running("busy", "n", 3, "2026-12-02T10:00:00Z")
    used["metadata"]["labels"] = {"kubegpu.io/queue": "team"}
    snap = build_snapshot([("t", o) for o in [*objs, used]])
    status = explain_pod(Engine(snap), snap.pod("default/first")).queue  # type: ignore[arg-type]
    assert status is not None and status["quotaShortfall"]["shortBy"] == "1"


def test_queue_status_follows_pods_added_to_the_same_snapshot() -> None:
    """The workloads are grouped once per snapshot for every Pending pod ``diagnose`` explains (100 gang
    members on 20,000 pods took 3.5 s grouped per pod); a pod appended to the snapshot afterwards (as
    ``schedule --new-pods`` does) is seen: the gang's third member arrives, nothing is missing, and the
    queue's pending count does not change (same workload)."""
    from kubegpu.batch.status import workload_status
    from kubegpu.model.parse import parse_pod

    objs = [
        queue_obj("team", 4), make_node("n").gpus(8).obj(), pod_group("ddp", 3),
        member("first", "", 2), member("ddp-0", "ddp", 2), member("ddp-1", "ddp", 2),
    ]  # fmt: skip
    snap = build_snapshot([("t", o) for o in objs])
    gang_pod = snap.pod("default/ddp-0")
    assert gang_pod is not None
    before = workload_status(snap, gang_pod)
    assert before is not None and before["gang"]["missing"] == 1 and before["pendingInQueue"] == 2
    snap.pods.append(parse_pod(member("ddp-2", "ddp", 2), "t", snap.priority_classes))
    after = workload_status(snap, gang_pod)
    assert after is not None and after["gang"] == {"minMember": 3, "members": 3, "bound": 0, "missing": 0}
    assert after["pendingInQueue"] == 2


def test_a_single_pod_and_a_gang_of_the_same_name_keep_their_own_queue_positions() -> None:
    """Pending pod ``train`` (queue a) and a gang ``train`` whose one member runs (queue b) are two
    workloads with one key, ``default/train``. The running member's status reads its own queue: no
    position (its workload is bound) and nothing pending in b; not the single pod's place in a."""
    from kubegpu.batch.status import workload_status

    single = make_pod("train").gpu(1).labels(**{"kubegpu.io/queue": "a"}).obj()
    bound = (
        make_pod("train-0")
        .gpu(1)
        .labels(**{"kubegpu.io/queue": "b", "kubegpu.io/pod-group": "train"})
        .on("n")
        .obj()
    )
    snap = build_snapshot([("t", o) for o in (queue_obj("a", 4), queue_obj("b", 4), make_node("n").gpus(8).obj(),
                                              single, bound)])  # fmt: skip
    member_pod, single_pod = snap.pod("default/train-0"), snap.pod("default/train")
    assert member_pod is not None and single_pod is not None
    status = workload_status(snap, member_pod)
    assert status is not None and (status["queue"], status["position"], status["pendingInQueue"]) == (
        "b",
        None,
        0,
    )
    mine = workload_status(snap, single_pod)
    assert mine is not None and (mine["queue"], mine["position"], mine["pendingInQueue"]) == ("a", 1, 1)
