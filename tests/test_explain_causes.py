"""The explainer's advice follows the cause the structured reason and the cluster show, not the text.

Every expected value below is derived by hand from the objects built in the test (numbers in whole GPUs).
Facts pinned: NVIDIA/k8s-device-plugin ``deployments/static/nvidia-device-plugin.yml`` tolerates only
``nvidia.com/gpu`` (Exists, NoSchedule); kubelet's device manager (kubernetes/kubernetes
``pkg/kubelet/cm/devicemanager/manager.go``, ``GetCapacity``) counts every device in capacity and only
healthy ones in allocatable; kube-scheduler 1.34 ``computePodResourceRequest`` (noderesources/fit.go)
sums app containers' requests, which must then fit on one node.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubegpu import sources
from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.model.objects import Taint
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.assembly import SchedulerSpec
from kubegpu.scheduler.reasons import Insufficient, UntoleratedTaint, render
from kubegpu.scheduler.registry import kubegpu_profile
from kubegpu.testing.builders import make_node, make_pod
from tests.explanations import explain, group

FRAGMENTATION_TAIL = "Free devices on one node (wait for or move single-GPU pods)"


def two_half_full_nodes() -> list[Any]:
    """a and b: 4 GPUs each, 2 taken by a running pod: 2 free on each, 4 free together."""
    return [
        make_node("a").gpus(4).obj(),
        make_node("b").gpus(4).obj(),
        make_pod("ra").gpu(2).on("a").obj(),
        make_pod("rb").gpu(2).on("b").obj(),
    ]


def test_fragmentation_keeps_the_scattered_gpus_advice() -> None:
    """3 GPUs in one container: 2 + 2 free adds up to 4 ≥ 3 but no node has 3 → scattered, nothing else."""
    exp = explain(make_pod("p").gpu(3), *two_half_full_nodes())
    fix = group(exp, "Insufficient nvidia.com/gpu").fix
    assert "Together these nodes have 4 free, but no single one has 3" in fix
    assert FRAGMENTATION_TAIL in fix
    assert "sum of its containers" not in fix and "unhealthy" not in fix


SHORTAGE_TAIL = "let the pod preempt lower-priority ones"


@pytest.mark.parametrize(
    ("gpus", "said"),
    [
        (5, "Together these nodes have 4 free: a shortage, not fragmentation."),
        (1, None),  # fits: no Insufficient group at all
    ],
)
def test_fewer_free_gpus_in_all_than_asked_is_a_shortage_not_scattering(gpus: int, said: str | None) -> None:
    """2 + 2 free on a and b, 8 GPUs each: a 5-GPU pod could not fit even if the free ones were on one
    node, so moving pods around (the fragmentation advice) cannot help; the advice is to wait, preempt or
    add nodes (each node could hold it emptied: 5 ≤ 8; a request above every node's allocatable is
    tests/realcases/test_too_small_nodes.py)."""
    exp = explain(
        make_pod("p").gpu(gpus),
        make_node("a").gpus(8).obj(),
        make_node("b").gpus(8).obj(),
        make_pod("ra").gpu(6).on("a").obj(),
        make_pod("rb").gpu(6).on("b").obj(),
    )
    found = [g for g in exp.groups if g.reason == "Insufficient nvidia.com/gpu"]
    if said is None:
        assert exp.schedulable and not found
        return
    fix = found[0].fix
    assert said in fix and SHORTAGE_TAIL in fix
    assert FRAGMENTATION_TAIL not in fix and "scattered" not in fix


def test_no_free_gpu_on_the_pods_nodes_is_a_shortage_and_names_the_free_ones_elsewhere() -> None:
    """Nodes a and b in pool train are full (4 of 4 requested); node c, outside the pod's pool, has 4
    free. A 1-GPU pod for pool train: its nodes have none free (no scattering: nothing to gather), and
    the 4 on c are named as free on nodes refused for other reasons (c fails the selector)."""
    objs = [
        make_node("a").gpus(4).label("pool", "train").obj(),
        make_node("b").gpus(4).label("pool", "train").obj(),
        make_node("c").gpus(4).label("pool", "serve").obj(),
        make_pod("ra").gpu(4).on("a").obj(),
        make_pod("rb").gpu(4).on("b").obj(),
    ]
    exp = explain(make_pod("p").gpu(1).node_selector(pool="train"), *objs)
    fix = group(exp, "Insufficient nvidia.com/gpu").fix
    assert group(exp, "Insufficient nvidia.com/gpu").nodes == ["a", "b"]
    assert "the most free on any one is 0" in fix
    assert "None of these nodes has any nvidia.com/gpu free: a shortage, not fragmentation." in fix
    assert "Another 4 nvidia.com/gpu is free on nodes refused for other reasons" in fix
    assert SHORTAGE_TAIL in fix and FRAGMENTATION_TAIL not in fix


def test_a_per_container_sum_is_named_with_its_parts() -> None:
    """Containers main (2) and side (2): the pod asks 4 on one node; each node has 2 free."""
    pod = make_pod("p").gpu(2).container("side", limits={"nvidia.com/gpu": "2"})
    fix = group(explain(pod, *two_half_full_nodes()), "Insufficient nvidia.com/gpu").fix
    assert "The 4 is the sum of its containers' requests (main 2 + side 2)" in fix
    assert FRAGMENTATION_TAIL not in fix


def test_an_unhealthy_gpu_is_named_when_healthy_it_would_fit() -> None:
    """Node u: capacity 4, allocatable 3 (one GPU unhealthy), 2 taken → 1 free; the pod needs 2 = 1 + 1."""
    node = make_node("u").gpus(4).allocatable(nvidia_com__gpu=3).obj()
    exp = explain(make_pod("p").gpu(2), node, make_pod("r").gpu(2).on("u").obj())
    fix = group(exp, "Insufficient nvidia.com/gpu").fix
    assert "u has 1 of its 4 nvidia.com/gpu unhealthy (capacity 4, allocatable 3)" in fix
    assert FRAGMENTATION_TAIL not in fix


def test_an_unhealthy_gpu_that_would_not_be_enough_is_not_blamed() -> None:
    """Same node, pod needs 3: 1 free + 1 unhealthy = 2 < 3, so the broken GPU is not the cause."""
    node = make_node("u").gpus(4).allocatable(nvidia_com__gpu=3).obj()
    exp = explain(make_pod("p").gpu(3), node, make_pod("r").gpu(2).on("u").obj())
    assert "unhealthy" not in group(exp, "Insufficient nvidia.com/gpu").fix


@pytest.mark.parametrize("with_whole_gpu_node", [False, True])
def test_a_whole_gpu_request_on_a_mig_node_names_the_profiles_on_offer(with_whole_gpu_node: bool) -> None:
    """Node m is partitioned into 7 × 1g.18gb and advertises no nvidia.com/gpu; optionally node w with
    1 whole GPU, taken. Either way the fix names m's slices; with no node advertising nvidia.com/gpu at
    all it is still not called a typo of the resource name."""
    objs = [make_node("m").gpus(7, resource="nvidia.com/mig-1g.18gb").obj()]
    if with_whole_gpu_node:
        objs += [make_node("w").gpus(1).obj(), make_pod("r").gpu(1).on("w").obj()]
    exp = explain(make_pod("p").gpu(1), *objs)
    fix = group(exp, "Insufficient nvidia.com/gpu").fix
    assert "m is MIG-partitioned: it offers mig-1g.18gb ×7, not whole GPUs" in fix
    assert "Did you mean" not in fix and FRAGMENTATION_TAIL not in fix


DARK_NODE_TAINTS = [
    # (taint key, value, whether the stock device plugin DaemonSet tolerates it)
    ("dedicated", "ml", False),
    ("nvidia.com/gpu", "present", True),
]


@pytest.mark.parametrize(("key", "value", "plugin_tolerates"), DARK_NODE_TAINTS)
def test_a_taint_that_also_keeps_the_device_plugin_off_is_called_out(
    key: str, value: str, plugin_tolerates: bool
) -> None:
    """Node d: GPU labels, no GPU resource advertised, tainted. Only a taint the device plugin's stock
    DaemonSet does not tolerate explains the missing GPUs."""
    node = make_node("d").label("nvidia.com/gpu.present", "true").taint(key, value).obj()
    exp = explain(make_pod("p").gpu(1), node)
    fix = group(exp, "node(s) had untolerated taint(s)").fix
    assert ("the taint also keeps the NVIDIA device plugin off" in fix) is not plugin_tolerates


def test_a_taint_on_a_node_with_registered_gpus_gets_the_plain_advice() -> None:
    node = make_node("g").gpus(8).taint("dedicated", "ml").obj()
    fix = group(explain(make_pod("p").gpu(1), node), "node(s) had untolerated taint(s)").fix
    assert "device plugin" not in fix
    assert "(key: dedicated, operator: Equal, value: ml, effect: NoSchedule)" in fix


def test_reasons_render_kube_scheduler_text_per_minor() -> None:
    """tainttoleration ``errReasonNotMatch``: ``{k: v}`` up to 1.33, one ``taint(s)`` text from 1.34's later
    patches (kubernetes PR #134740 / #135023); noderesources ``Insufficient %v`` in every minor."""
    assert (
        render(UntoleratedTaint(Taint("k", "v", "NoExecute")), "1.33")
        == "node(s) had untolerated taint {k: v}"
    )
    assert render(UntoleratedTaint(Taint("k", "v", "NoExecute"))) == "node(s) had untolerated taint(s)"
    assert render(Insufficient("nvidia.com/gpu", 4000)) == "Insufficient nvidia.com/gpu"
    with pytest.raises(ValueError, match=r"1\.29"):
        render(Insufficient("cpu", 1), version="1.29")


@pytest.fixture(scope="module")
def demo_kubegpu() -> Engine:
    return Engine(sources.load_demo(), SchedulerSpec(kubegpu_profile()))


def test_device_refusals_get_advice_for_their_own_layer(demo_kubegpu: Engine) -> None:
    """Demo, kubegpu profile: gpu-dgx-01 (single-numa-node, 2 + 2 free on its NUMA nodes) refuses the
    4-GPU nccl-allreduce-4gpu; gpu-ts-01 (time-sliced, failRequestsGreaterThanOne) refuses batch-embed's
    2-replica container. Different problems, different fixes."""
    numa = explain_pod(demo_kubegpu, demo_kubegpu.snapshot.pod("ml-train/nccl-allreduce-4gpu"))  # type: ignore[arg-type]
    shared = explain_pod(demo_kubegpu, demo_kubegpu.snapshot.pod("ml-infer/batch-embed"))  # type: ignore[arg-type]
    numa_fix = group(
        numa, "node(s) could not align nvidia.com/gpu on one NUMA node (topology manager single-numa-node)"
    ).fix
    shared_fix = group(shared, "node(s) time-slice nvidia.com/gpu with failRequestsGreaterThanOne").fix
    assert "Topology Manager (single-numa-node)" in numa_fix and "replica" not in numa_fix
    assert "Ask for 1 per container" in shared_fix and "NUMA" not in shared_fix


def test_node_reasons_and_groups_use_the_release_of_the_message() -> None:
    """Below 1.34 each taint is its own reason text (kubernetes PR #134740 merged them later): the groups and
    per-node reasons must print what the message prints, so two different taints are two groups on 1.33."""
    from kubegpu.explain.engine import Engine
    from kubegpu.model.snapshot import build_snapshot
    from kubegpu.scheduler.registry import default_profile

    objs = [
        make_node("a").gpus(8).taint("dedicated", "ml").obj(),
        make_node("b").gpus(8).taint("team", "x").obj(),
    ]
    objs.append(make_pod("p").gpu(1).obj())
    snap = build_snapshot([("t", o) for o in objs])
    for version, texts in (
        (
            "1.33",
            ["node(s) had untolerated taint {dedicated: ml}", "node(s) had untolerated taint {team: x}"],
        ),
        ("1.37", ["node(s) had untolerated taint(s)"]),
    ):
        engine = Engine(snap, SchedulerSpec(default_profile(kube_version=version)))
        exp = explain_pod(engine, snap.pod("default/p"))  # type: ignore[arg-type]
        assert sorted(g.reason for g in exp.groups) == texts
        assert all(g.reason in exp.message for g in exp.groups)


def test_a_mig_profile_no_gpu_is_split_into_gets_the_layout_advice_not_the_plugin_one() -> None:
    """Mixed strategy (NVIDIA/k8s-device-plugin README: each profile is its own nvidia.com/mig-<profile>
    resource): node m's A100-40GB offers 1g.5gb and 3g.20gb; the pod asks 7g.40gb, which no GPU is split
    into. The device plugin registers MIG resources fine: the fix is the layout (or the request), as the
    finding "pod requests a MIG profile no GPU is partitioned into" says."""
    node = make_node("m").capacity(**{"nvidia.com/mig-1g.5gb": 4, "nvidia.com/mig-3g.20gb": 1}).obj()
    pod = make_pod("p").gpu(1, resource="nvidia.com/mig-7g.40gb")
    g = group(explain(pod, node), "Insufficient nvidia.com/mig-7g.40gb")
    assert g.fix == (
        "nvidia.com/mig-7g.40gb: no node's MIG layout offers it (offered: nvidia.com/mig-1g.5gb, "
        "nvidia.com/mig-3g.20gb). Ask for an offered profile, or re-partition a GPU — which affects every instance "
        "on it (`kubegpu plan mig`)."
    )
    assert "registered" not in g.fix


def test_hundreds_of_dark_gpu_nodes_are_named_a_few_per_cause() -> None:
    """40 nodes labelled as GPU nodes (GFD labels) advertise no GPU, and the snapshot holds no DaemonSet:
    one cause for all of them, three named and the rest counted (the sentence was one per node: 40 kB on a
    generated fleet of 150 such nodes)."""
    nodes = []
    for i in range(40):
        raw = make_node(f"dark{i:02d}").obj()
        raw["metadata"]["labels"].update({"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "8"})
        nodes.append(raw)
    fix = group(explain(make_pod("p").gpu(1), *nodes), "Insufficient nvidia.com/gpu").fix
    assert "dark00 (nvidia.com/gpu.present=true, nvidia.com/gpu.count=8), dark01 (" in fix
    assert "and 37 more: the snapshot holds no DaemonSets" in fix
    assert fix.count("the snapshot holds no DaemonSets") == 1
    assert len(fix) < 700


def test_batch_evidence_reads_as_each_node_alone() -> None:
    """The hooks' ``evidence_many`` (one call for thousands of refused nodes) gives each node the lines
    ``evidence`` gives it alone: node affinity (nodeSelector and required terms, nodes grouped by their
    values of the labels those read) and Insufficient on a resource no node has (the node's GPU labels
    and offers enter its line)."""
    from kubegpu.explain.causes.affinity import HOOKS as AFFINITY_HOOKS
    from kubegpu.explain.causes.base import Context
    from kubegpu.explain.causes.resources import HOOKS as RESOURCE_HOOKS
    from kubegpu.scheduler.reasons import AffinityMismatch

    nodes = []
    for i in range(12):
        b = make_node(f"n{i:02d}").label("pool", ("a", "b", "c")[i % 3]).label("zone", f"z{i % 2}")
        if i % 4 == 0:
            b.gpus(2)
        elif i % 4 == 1:
            b.gpus(7, resource="nvidia.com/mig-1g.18gb")
        elif i % 4 == 2:
            b.label("nvidia.com/gpu.present", "true")  # labels say GPUs, none advertised
        nodes.append(b.obj())
    pod = (
        make_pod("p").gpu(1, resource="nvidia.com/mig-3g.71gb").selector("pool", "a")
        .require([("zone", "In", ["z1"])])
    )  # fmt: skip
    snap = build_snapshot([("t", o) for o in (*nodes, pod.obj())])
    found = snap.pod("default/p")
    assert found is not None and not snap.errors
    engine = Engine(snap)
    idxs = list(range(12))
    for hooks, reason in (
        (AFFINITY_HOOKS[AffinityMismatch], AffinityMismatch()),
        (RESOURCE_HOOKS[Insufficient], Insufficient("nvidia.com/mig-3g.71gb", 1000)),
    ):
        assert hooks.evidence is not None and hooks.evidence_many is not None
        many = hooks.evidence_many(Context(engine, found), reason, idxs)  # type: ignore[arg-type]
        alone = [hooks.evidence(Context(engine, found), reason, i) for i in idxs]  # type: ignore[arg-type]
        assert many == alone
        assert len({tuple(lines) for lines in alone}) >= 2  # the nodes do differ


@pytest.mark.parametrize(
    ("key", "value", "writer"),
    [
        # GPU Feature Discovery's product label (k8s-device-plugin docs/gpu-feature-discovery/README.md)
        ("nvidia.com/gpu.product", "NVIDIA-B200", "GPU Feature Discovery"),
        # the cloud provider's well-known instance-type label (kubernetes.io docs, "Well-Known Labels")
        ("node.kubernetes.io/instance-type", "p6-b200.48xlarge", "the cloud provider"),
        ("karpenter.sh/nodepool", "b200", "Karpenter"),
    ],
)
def test_a_selector_on_a_label_that_says_what_the_node_is_is_not_fixed_by_relabelling(
    key: str, value: str, writer: str
) -> None:
    """A pod selects B200 nodes by a label a component writes from what the node is; the cluster has only
    A10G nodes. Labelling an A10G node as B200 would not make it one (and the writer puts the value back):
    the advice says so and proposes no `label node` command, where a pool label people set gets one."""
    nodes = [make_node(f"a10g-{i}").gpus(8).label(key, "other").obj() for i in range(2)]
    exp = explain(make_pod("p").gpu(1).node_selector(**{key: value}), *nodes)
    mismatch = group(exp, "node(s) didn't match Pod's node affinity/selector")
    assert f"{key}={value}, a label {writer} writes from what a node is" in mismatch.fix
    assert not any(" label node " in c for c in mismatch.commands), mismatch.commands
    assert mismatch.commands == [f"kubectl -n default get nodes -L {key}"]
    # a label people set: relabelling a node that belongs in the pool is the fix, dry run and rollback first
    pool = [make_node(f"n{i}").gpus(8).label("accelerator.example.com/pool", "infer").obj() for i in range(2)]
    exp = explain(make_pod("q").gpu(1).node_selector(**{"accelerator.example.com/pool": "train"}), *pool)
    commands = group(exp, "node(s) didn't match Pod's node affinity/selector").commands
    assert (
        "kubectl -n default label node n0 accelerator.example.com/pool=train --overwrite --dry-run=server -o yaml"
        in commands
    )
    assert (
        "kubectl -n default label node n0 accelerator.example.com/pool=infer --overwrite   # rollback"
        in commands
    )


def test_cpu_advice_on_nodes_also_short_of_the_gpu_points_at_the_gpu() -> None:
    """aws-samples/stable-diffusion-on-eks#75 ("2 Insufficient cpu, 2 Insufficient memory, 2 Insufficient
    nvidia.com/gpu"): each node's one GPU is taken, so lowering the pod's CPU request frees nothing; where the
    GPU is free, lowering the CPU request is the fix."""
    taken = [
        make_node("a").gpus(1).capacity(cpu="4").obj(),
        make_node("b").gpus(1).capacity(cpu="4").obj(),
        make_pod("ra").gpu(1).requests(cpu="3").on("a").obj(),
        make_pod("rb").gpu(1).requests(cpu="3").on("b").obj(),
    ]
    fix = group(explain(make_pod("p").gpu(1).requests(cpu="2"), *taken), "Insufficient cpu").fix
    assert fix.startswith(
        "These nodes are also short of nvidia.com/gpu for the pod: lowering its cpu request"
    )
    free_gpu = [
        make_node("a").gpus(1).capacity(cpu="4").obj(),
        make_pod("ra").requests(cpu="3").on("a").obj(),
    ]
    fix = group(explain(make_pod("p").gpu(1).requests(cpu="2"), *free_gpu), "Insufficient cpu").fix
    assert fix.startswith("Lower the pod's cpu request")
