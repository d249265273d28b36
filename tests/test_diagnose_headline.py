"""The diagnose headline's "First:" line names the fix for the cause that blocks the most Pending pods (all
its groups together), and the nearest-miss nodes are picked by structured reason kind, not by text.

Issue 25, "An answer, not a dump": the headline gives "the top causes with counts, and the first thing to
do". Before, "First:" took the largest single group; on the embedded demo that was one pod blocked by
"Insufficient nvidia.com/gpu" while three pods were blocked by untolerated taints (listed above it).
The filter order that decides each node's reason (TaintToleration before NodeResourcesFit) is
kube-scheduler's default profile, pkg/scheduler/apis/config/v1/default_plugins.go.
"""

from __future__ import annotations

from pathlib import Path

from kubegpu.explain.diagnose import diagnose
from kubegpu.explain.engine import Engine
from kubegpu.explain.explanation import Explanation, NodeEvidence
from kubegpu.explain.summary import PendingGroup, pod_ask, summarize
from kubegpu.model.snapshot import ClusterSnapshot, build_snapshot
from kubegpu.testing.builders import make_node, make_pod
from tests.summaries import summary_of

TAINT = "node(s) had untolerated taint(s)"
NO_GPU = "Insufficient nvidia.com/gpu"


def _cluster(one_gpu: int, two_gpu: int, eight_gpu: int) -> ClusterSnapshot:
    """Three nodes of 4 GPUs tainted dedicated=infer:NoSchedule and one untainted node of 4 GPUs, full.

    A pod without the toleration is refused by the taint on the three (TaintToleration runs first) and
    by NodeResourcesFit on the full one: its cause is the taint (3 nodes of 4). An 8-GPU pod that
    tolerates the taint is refused by NodeResourcesFit everywhere: "Insufficient nvidia.com/gpu"."""
    nodes = [make_node(f"t{i}").gpus(4).taint("dedicated", "infer").obj() for i in range(3)]
    nodes.append(make_node("full").gpus(4).obj())
    objs = [*nodes, make_pod("holder").ns("ops").gpu(4).on("full").obj()]
    objs += [make_pod(f"one-{i}").ns("team-a").gpu(1).obj() for i in range(one_gpu)]
    objs += [make_pod(f"two-{i}").ns("team-a").gpu(2).obj() for i in range(two_gpu)]
    objs += [
        make_pod(f"eight-{i}").ns("team-b").gpu(8).tolerate("dedicated", "infer", "NoSchedule", "Equal").obj()
        for i in range(eight_gpu)
    ]
    return build_snapshot([("hand-built.yaml", o) for o in objs])


def test_first_step_is_the_cause_with_the_most_pods_not_the_largest_group() -> None:
    # taint: 2 one-GPU + 2 two-GPU pods = 4 pods in two groups of 2; Insufficient: one group of 3 pods
    s = summary_of(_cluster(one_gpu=2, two_gpu=2, eight_gpu=3))
    assert dict(s.causes) == {TAINT: 4, NO_GPU: 3}
    assert [(g.cause, len(g.pods)) for g in s.groups] == [(NO_GPU, 3), (TAINT, 2), (TAINT, 2)]
    # the largest group is the 3-pod Insufficient one, but the taint blocks 4 pods: its fix comes first,
    # told through its first-listed group (equal sizes: shapes in order, "1 nvidia.com/gpu" before "2 …")
    assert s.first_step.startswith("These nodes keep pods off with taint dedicated=infer:NoSchedule.")
    assert "(4 pod(s) in 2 groups, the largest 2 pod(s): 1 nvidia.com/gpu" in s.first_step


def test_first_step_tie_keeps_the_order_the_groups_are_listed_in() -> None:
    # 2 pods blocked by the taint, 2 by Insufficient: groups of equal size are listed by shape, and
    # "1 nvidia.com/gpu …" sorts before "8 nvidia.com/gpu …", so the taint's group is listed first
    s = summary_of(_cluster(one_gpu=2, two_gpu=0, eight_gpu=2))
    assert dict(s.causes) == {TAINT: 2, NO_GPU: 2}
    assert s.groups[0].cause == TAINT
    assert s.first_step.startswith("These nodes keep pods off with taint dedicated=infer:NoSchedule.")
    assert s.first_step.endswith("(2 pod(s): " + s.groups[0].shape + ")")


def test_nearest_misses_are_chosen_by_reason_kind_not_text() -> None:
    """A node refused by a free-form message that happens to read "Insufficient …" (an extender's text,
    kind Message) is not a resource-only miss; one refused by NodeResourcesFit (kind Insufficient) is."""
    snap = _cluster(one_gpu=0, two_gpu=0, eight_gpu=1)
    report = diagnose(Engine(snap))
    exp: Explanation = report.pending[0]
    assert {n.name for n in exp.nodes} == {"t0", "t1", "t2", "full"}
    assert all(n.kinds == ("Insufficient",) for n in exp.nodes)
    # t0 (4 GPUs free, the nearest) refused instead by a free-form message that reads "Insufficient …"
    at = next(i for i, n in enumerate(exp.nodes) if n.name == "t0")
    exp.nodes = nodes = list(exp.nodes)  # (a list: the evidence ``explain_pod`` gives is read-only)
    nodes[at] = NodeEvidence("t0", "Extender", ["Insufficient nvidia.com/gpu on the extender's books"],
                                 "Unschedulable", kinds=("Message",))  # fmt: skip
    shapes = {str(p.key): pod_ask(p) for p in snap.pending_pods()}
    nearest = summarize(report, shapes).groups[0].nearest
    # resource-only misses, most free GPUs first, then by name: t1 and t2 (4 free), full (0 free); a test
    # of the text would have kept t0 first
    assert [n.name for n in nearest] == ["t1", "t2", "full"]


def test_with_nothing_blocked_a_critical_finding_is_the_first_step() -> None:
    """docs/examples/dra/mixed-double-counting.yaml: no Pending pod, and the node advertising its GPUs
    through both stacks is a critical finding (docs/dra.md case 3): "First:" names it instead of saying
    "nothing is blocked"."""
    from kubegpu import sources

    snap = sources.load_files(Path(__file__).parent.parent / "docs/examples/dra/mixed-double-counting.yaml")
    snap.kube_version = "1.34"
    s = summary_of(snap)
    assert s.pending == 0
    assert s.first_step == (
        "no Pending GPU pod is blocked, but fix the critical finding: mixed-1 advertises its GPUs twice: "
        "2 through the device plugin and 2 through the DRA driver"
    )


def test_with_nothing_blocked_and_no_critical_finding_nothing_is_blocked() -> None:
    s = summary_of(_cluster(one_gpu=0, two_gpu=0, eight_gpu=0))
    assert s.first_step == "nothing is blocked"


def _mig_and_whole() -> ClusterSnapshot:
    """Node whole: 8 GPUs, 4 held by a running pod (4 free). Node mig: its 8 GPUs split into 7 slices each
    (mixed strategy: nvidia.com/mig-1g.10gb: 56, no nvidia.com/gpu), 2 slices held. Pending: one 8-GPU pod."""
    objs = [
        make_node("whole").gpus(8).obj(),
        make_node("mig").gpus(56, resource="nvidia.com/mig-1g.10gb").obj(),
        make_pod("run").gpu(4).on("whole").obj(),
        make_pod("slices").limits(**{"nvidia.com/mig-1g.10gb": "2"}).on("mig").obj(),
        make_pod("big").gpu(8).obj(),
    ]
    snap = build_snapshot([("t", o) for o in objs])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    return snap


def test_the_headline_counts_mig_devices_apart_from_gpus() -> None:
    """56 slices of 8 GPUs are not 56 more GPUs: the headline says 8 GPUs (4 requested, 4 free) and 56 MIG
    devices (2 requested, 54 free). Before, it read "64 GPUs allocatable"."""
    snap = _mig_and_whole()
    summary = summary_of(snap)
    assert (summary.gpus, summary.requested, summary.free, summary.mig) == (8, 4, 4, (56, 2, 54))
    assert summary.devices_line() == (
        "2 GPU nodes, 8 GPUs allocatable, 4 requested, 4 free; 56 MIG devices allocatable, 2 requested, 54 free"
    )


def test_the_headline_counts_shared_replicas_apart_from_gpus() -> None:
    """Time-slicing or MPS advertises each GPU ``replicas`` times (NVIDIA/k8s-device-plugin: as nvidia.com/gpu,
    GFD labelling nvidia.com/gpu.replicas, or renamed nvidia.com/gpu.shared under renameByDefault). A node of
    2 GPUs × 4 replicas and a renamed node of 1 GPU × 4 are 8 + 4 shared replicas, not 12 more GPUs; the
    plain 8-GPU node's GPUs stay GPUs. 1 replica and 2 whole GPUs requested."""
    ts = make_node("ts").gpus(8).label("nvidia.com/gpu.replicas", "4").obj()
    renamed = make_node("rn").gpus(4, resource="nvidia.com/gpu.shared").obj()
    whole = make_node("w").gpus(8).obj()
    pods = [make_pod("a").gpu(1).on("ts").obj(), make_pod("b").gpu(2).on("w").obj()]
    summary = summary_of(build_snapshot([("t", o) for o in (ts, renamed, whole, *pods)]))
    assert (summary.gpus, summary.requested, summary.free, summary.shared) == (8, 2, 6, (12, 1, 11))
    assert summary.devices_line() == (
        "3 GPU nodes, 8 GPUs allocatable, 2 requested, 6 free; 12 shared GPU replicas allocatable, 1 requested, 11 free"
    )


def test_shared_replicas_requested_are_read_from_each_nodes_own_resource() -> None:
    """Shared replicas are nvidia.com/gpu on a time-sliced node and nvidia.com/gpu.shared on a renamed one
    (renameByDefault, NVIDIA/k8s-device-plugin api/config/v1 sharing.go): each node's requests are read from its
    own resource, 1 on each here: 2 in all, not the first node's resource read on both. A renamed node whose
    capacity still lists a plain nvidia.com/gpu (kubelet keeps a resource its plugin stopped advertising, at 0:
    NVIDIA/k8s-device-plugin#321), held by a pod bound before the rename, counts that as GPUs, not replicas."""
    ts = make_node("ts").gpus(8).label("nvidia.com/gpu.replicas", "4").obj()
    renamed = (
        make_node("rn").gpus(4, resource="nvidia.com/gpu.shared").label("nvidia.com/gpu.replicas", "4").obj()
    )
    renamed["status"]["capacity"]["nvidia.com/gpu"] = "0"
    renamed["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    pods = [
        make_pod("a").gpu(1).on("ts").obj(),
        make_pod("b").gpu(1, resource="nvidia.com/gpu.shared").on("rn").obj(),
        make_pod("old").gpu(1).on("rn").obj(),
    ]
    summary = summary_of(build_snapshot([("t", o) for o in (ts, renamed, *pods)]))
    assert summary.shared == (12, 2, 10)
    assert (summary.gpus, summary.requested) == (0, 1)


def test_nearest_misses_are_nodes_that_could_hold_the_request_not_the_most_free_devices() -> None:
    """The 8-GPU pod is refused by NodeResourcesFit on both nodes. The MIG node has 54 free devices but no
    nvidia.com/gpu at all (it can never hold the pod: listed last); the whole node has 4 of 8 free: it is
    the nearest miss, first. Before, the nodes were ranked by free devices of any resource, and the MIG node
    came first. And where more free GPUs and room for the pod disagree: node small has 4 GPUs, all free,
    node large 8 with 2 free; only large can ever hold the 8-GPU pod, so it comes first."""
    snap = _mig_and_whole()
    summary = summary_of(snap)
    (group,) = summary.groups
    assert [n.name for n in group.nearest] == ["whole", "mig"]
    objs = [
        make_node("small").gpus(4).obj(),
        make_node("large").gpus(8).obj(),
        make_pod("run").gpu(6).on("large").obj(),
        make_pod("big").gpu(8).obj(),
    ]
    snap = build_snapshot([("t", o) for o in objs])
    summary = summary_of(snap)
    (group,) = summary.groups
    assert [n.name for n in group.nearest] == ["large", "small"]


def test_the_single_strategys_mig_devices_count_as_mig_devices_not_gpus() -> None:
    """MIG single strategy: the device plugin offers every MIG device as nvidia.com/gpu and GPU Feature
    Discovery appends the profile to the product label (NVIDIA/gpu-feature-discovery README, "MIG
    strategy single": ``nvidia.com/gpu.product=A100-SXM4-40GB-MIG-1g.5gb``, ``nvidia.com/gpu.count`` the
    MIG devices). Node mig: 2 A100 in 7 slices each = 14 nvidia.com/gpu, 3 held; node whole: 8 GPUs."""
    objs = [
        make_node("whole").gpus(8).label("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB").obj(),
        make_node("mig")
        .gpus(14)
        .label("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb")
        .label("nvidia.com/mig.strategy", "single")
        .obj(),
        make_pod("slices").gpu(3).on("mig").obj(),
    ]
    snap = build_snapshot([("t", o) for o in objs])
    assert not snap.errors
    summary = summarize(diagnose(Engine(snap)), {})
    assert (summary.gpus, summary.requested, summary.free, summary.mig) == (8, 0, 8, (14, 3, 11))


def _affinity_case(free_node: bool) -> tuple[list[str], PendingGroup]:
    """Nodes full and full2 (4 of 4 GPUs held), and ``free_node``: free (4 free); pod p asks 1 GPU with
    required podAffinity to app=db by hostname, and no app=db pod runs (nor is p one). Returns the reasons
    kube-scheduler gives with their node counts, and p's group."""
    objs = [make_node("full").gpus(4).obj(), make_node("full2").gpus(4).obj()]
    objs += [make_node("free").gpus(4).obj()] if free_node else []
    objs += [make_pod("holder").gpu(4).on("full").obj(), make_pod("holder2").gpu(4).on("full2").obj()]
    objs += [
        make_pod("p").labels(app="web").gpu(1).pod_affinity("kubernetes.io/hostname", {"app": "db"}).obj()
    ]
    snap = build_snapshot([("t", o) for o in objs])
    assert not snap.errors
    report = diagnose(Engine(snap))
    (exp,) = report.pending
    (group,) = summary_of(snap, report).groups
    return [f"{len(g.nodes)} {g.reason}" for g in exp.groups], group


def test_a_pod_its_affinity_keeps_off_every_node_has_the_affinity_as_its_cause() -> None:
    """kube-scheduler's default profile runs NodeResourcesFit before InterPodAffinity
    (pkg/scheduler/apis/config/v1/default_plugins.go), so the full nodes read "Insufficient nvidia.com/gpu"
    and the free one "node(s) didn't match pod affinity rules", and the larger-count rule picked the GPU
    shortage. Freeing GPUs would not place p: its cause is the affinity, and it has no nearest miss."""
    reasons, group = _affinity_case(free_node=True)
    assert sorted(reasons) == ["1 node(s) didn't match pod affinity rules", "2 Insufficient nvidia.com/gpu"]
    assert group.cause == "node(s) didn't match pod affinity rules" and group.nearest == []
    assert "none runs anywhere" in group.fix


def test_the_affinity_cause_holds_when_every_node_fails_on_gpus_first() -> None:
    """Both nodes full: no node reports the affinity at all, yet it is unmet everywhere: the cause is the
    affinity, with its advice's fix, and there is no nearest miss."""
    reasons, group = _affinity_case(free_node=False)
    assert reasons == ["2 Insufficient nvidia.com/gpu"]
    assert group.cause == "node(s) didn't match pod affinity rules" and group.nearest == []
    assert "none runs anywhere: start the pods it depends on first" in group.fix


def test_a_pod_preemption_makes_room_for_has_preemption_as_its_cause() -> None:
    """One node of 8 GPUs held by two 4-GPU pods of priority 0; a Pending 8-GPU pod of priority 1000. No node
    fits it, so NodeResourcesFit refuses the node ("Insufficient nvidia.com/gpu"), but DefaultPreemption
    finds both pods as victims and nominates the node ("preemption: found a potential placement for pod on
    node full, preempting 2 victims": pkg/scheduler/framework/preemption/preemption.go v1.37.2). The
    cause is the preemption, not a shortage to fix: it names the victims and the node (the preemptor waits
    for their graceful termination, kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption).
    A pod of priority 0 alike finds no victim: its cause stays the shortage."""
    objs = [make_node("full").gpus(8).obj()]
    objs += [make_pod(f"low-{i}").ns("batch").gpu(4).priority(0).on("full").obj() for i in range(2)]
    objs.append(make_pod("urgent").ns("team-a").gpu(8).priority(1000).obj())
    objs.append(make_pod("patient").ns("team-b").gpu(8).priority(0).obj())
    snap = build_snapshot([("hand-built.yaml", o) for o in objs])
    assert not snap.errors
    s = summary_of(snap)
    by_pod = {p: g for g in s.groups for p in g.pods}
    urgent, patient = by_pod["team-a/urgent"], by_pod["team-b/patient"]
    assert urgent.cause == "would preempt lower-priority pods"
    assert "preempting 2 victims" in urgent.message
    assert urgent.fix.startswith(
        "kube-scheduler would evict 2 lower-priority pod(s) (batch/low-0, batch/low-1) on full and nominate the pod there"
    )
    assert patient.cause == NO_GPU
    assert dict(s.causes) == {"would preempt lower-priority pods": 1, NO_GPU: 1}
