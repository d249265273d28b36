"""The embedded demo: each pending pod gets the message a real 1.34 cluster would print (its kubelets report
v1.34.2, so 1.34 is the release reproduced: one "untolerated taint(s)" text for every taint, kubernetes PR
#135023; DynamicResources' "no new claims to deallocate" before the preemption text; both as the real
1.34.4 and 1.34.5 kube-schedulers printed them: tests/realkube/golden/1.34.5.json and the 1.35/1.36 goldens).

Expected texts were derived by hand from the demo's objects (not copied from kubegpu's output):
- gpu-train-01/02 (pool=training, 8 GPUs, 5 and 6 requested), gpu-reserved-01/02 (pool=training, tainted
  nvidia.com/gpu=present:NoSchedule, 8 free), gpu-infer-01 (pool=inference, 3 allocatable, 3 requested),
  gpu-infer-02 (pool=inference, GPU labels but no nvidia.com/gpu in capacity);
- filter order NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, so a
  tainted node reports the taint even when affinity would also fail;
- running pods have priority 0, so for a priority-0 pod every Unschedulable node is "No preemption victims".
"""

from __future__ import annotations

import pytest

from kubegpu import sources
from kubegpu.admission.admit import admit_pods
from kubegpu.explain.diagnose import SHARED_TOTAL, diagnose
from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.scheduler.loop import run_queue

EXPECTED = {
    # the seed's situation; the three device-level nodes (pools training-nvlink, inference-shared,
    # inference-mig) fail the pool affinity too, so 2 + 1 + 1 + 1 = 5 nodes didn't match
    "ml-train/llm-finetune-0": (
        "0/9 nodes are available: 2 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint(s), "
        "5 node(s) didn't match Pod's node affinity/selector. no new claims to deallocate, preemption: 0/9 nodes "
        "are available: "
        "2 No preemption victims found for incoming pod, 7 Preemption is not helpful for scheduling."
    ),
    "ml-infer/vllm-6b7c9d-q9r4s": (
        "0/9 nodes are available: 2 Insufficient nvidia.com/gpu, 7 node(s) didn't match Pod's node affinity/selector. "
        "no new claims to deallocate, preemption: 0/9 nodes are available: 1 No preemption victims found for incoming pod, "
        "8 Preemption is not helpful for scheduling."
    ),
    "ml-infer/embed-server": (
        "0/9 nodes are available: 2 node(s) had untolerated taint(s), 7 Insufficient nvidia.com/gpus. "
        "no new claims to deallocate, preemption: 0/9 nodes are available: 9 Preemption is not helpful for scheduling."
    ),
    # priority 1000000: preemption finds victims, so the message has no PostFilter part (1.34)
    "ml-train/urgent-eval": (
        "0/9 nodes are available: 2 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint(s), "
        "5 node(s) didn't match Pod's node affinity/selector."
    ),
    # no GPU is partitioned into 4g.71gb: the MIG node has the resource at 0, so it is unresolvable
    "ml-infer/llm-70b-int4": (
        "0/9 nodes are available: 1 Insufficient nvidia.com/mig-4g.71gb, 2 node(s) had untolerated taint(s), "
        "6 node(s) didn't match Pod's node affinity/selector. no new claims to deallocate, preemption: 0/9 nodes are "
        "available: 9 Preemption is not helpful for scheduling."
    ),
}


@pytest.fixture(scope="module")
def demo_engine() -> Engine:
    return Engine(sources.load_demo())


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_pending_pod_messages(demo_engine: Engine, key: str) -> None:
    pod = demo_engine.snapshot.pod(key)
    assert pod is not None
    assert explain_pod(demo_engine, pod).message == EXPECTED[key]


def test_fragmented_training_pod_is_explained_as_scattered_gpus(demo_engine: Engine) -> None:
    """R9.2: 3 + 2 GPUs free on the two usable nodes, a 4-GPU pod fits on neither; more sit elsewhere."""
    exp = explain_pod(demo_engine, demo_engine.snapshot.pod("ml-train/llm-finetune-0"))  # type: ignore[arg-type]
    fit = next(g for g in exp.groups if g.reason == "Insufficient nvidia.com/gpu")
    assert fit.nodes == ["gpu-train-01", "gpu-train-02"]
    assert "Together these nodes have 5 free, but no single one has 4" in fit.fix
    # 8 + 8 behind the taint, 4 on the DGX node, 11 time-sliced replicas: all in other pools or tainted
    assert "Another 31 nvidia.com/gpu is free on nodes refused for other reasons" in fit.fix
    evidence = {n.name: n.evidence for n in exp.nodes}
    assert evidence["gpu-train-01"] == [
        "nvidia.com/gpu: pod requests 4, node has 3 free (allocatable 8, already requested 5)"
    ]
    assert any("Job llm-finetune" in n and "create another one with the same spec" in n for n in exp.notes)


def test_urgent_eval_preempts_the_least_important_pod_on_the_node_needing_fewest_victims(
    demo_engine: Engine,
) -> None:
    """gpu-train-01 needs 1 victim (3 free), gpu-train-02 needs 2: the sum-of-priorities criterion picks
    train-01; among its five priority-0 GPU pods the latest started (whisper-0, 03:00) goes."""
    exp = explain_pod(demo_engine, demo_engine.snapshot.pod("ml-train/urgent-eval"))  # type: ignore[arg-type]
    assert (exp.nominated_node, exp.victims) == ("gpu-train-01", ["ml-infer/whisper-0"])


def test_typo_resource_name_is_called_out(demo_engine: Engine) -> None:
    exp = explain_pod(demo_engine, demo_engine.snapshot.pod("ml-infer/embed-server"))  # type: ignore[arg-type]
    group = next(g for g in exp.groups if g.reason == "Insufficient nvidia.com/gpus")
    assert "Did you mean nvidia.com/gpu?" in group.fix


def test_diagnose_findings_cover_the_demo_s_broken_parts() -> None:
    report = diagnose(Engine(sources.load_demo()))
    titles = {(f.title, tuple(f.objects)) for f in report.findings}
    assert ("GPU node advertises no GPU resource", ("node/gpu-infer-02",)) in titles
    assert ("allocatable GPUs below capacity", ("node/gpu-infer-01",)) in titles
    assert ("GPU quota exhausted in research", ("resourcequota/research/gpu-quota",)) in titles
    assert ("pod requests a resource no node advertises", ("pod/ml-infer/embed-server",)) in titles
    assert ("pod tolerates the GPU taint but requests no GPU", ("pod/ml-train/data-prep",)) in titles
    assert any(
        t.startswith("pool accelerator.example.com/pool=training mixes GPU products") for t, _ in titles
    )
    assert [p.pod for p in report.pending] == [  # PrioritySort: priority, then creationTimestamp
        "ml-train/urgent-eval",
        "ml-infer/vllm-6b7c9d-q9r4s",
        "ml-infer/embed-server",
        "ml-infer/batch-embed",
        "ml-infer/llm-70b-int4",
        "ml-train/llm-finetune-0",
        "ml-train/nccl-allreduce-4gpu",
        "ml-train/nccl-allreduce-2gpu",
        "ml-train/data-prep",
    ]
    # 36 whole GPUs as before, + 8 on the DGX node; gpu-ts-01's 16 nvidia.com/gpu are time-sliced replicas
    # (4 GPUs, label nvidia.com/gpu.replicas=4), 5 of them requested by its five chat pods: counted apart
    assert report.totals["nvidia.com/gpu"] == {"capacity": 44, "allocatable": 43, "requested": 18}
    assert report.totals[SHARED_TOTAL] == {"capacity": 16, "allocatable": 16, "requested": 5}


def test_new_pods_are_admitted_or_rejected_with_api_server_messages() -> None:
    snap = sources.load_demo()
    manifests = sources.read_text(
        (sources.resources.files("kubegpu.demo") / "new-pods.yaml").read_text(), "new-pods.yaml", []
    )
    results = {a.name: a.message for a in admit_pods(snap, manifests)}
    assert results == {
        "single-gpu-debug": "",
        "notebook-gpu": 'pods "notebook-gpu" is forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=1, '
        "used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4",
        "half-gpu": 'Pod "half-gpu" is invalid: [spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": '
        'must be an integer, spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "500m": must be an integer]',
        "request-only": 'Pod "request-only" is invalid: spec.containers[0].resources.limits: Required value: '
        "Limit must be set for non overcommitable resources",
        "request-below-limit": 'Pod "request-below-limit" is invalid: spec.containers[0].resources.requests: '
        'Invalid value: "1": must be equal to nvidia.com/gpu limit of 2',
    }


def test_scheduling_pass_runs_in_priority_order_and_preempts(demo_engine: Engine) -> None:
    snap = sources.load_demo()
    engine = Engine(snap)
    outcomes = run_queue(engine.scheduler, snap.pending_pods())
    first = outcomes[0]
    assert first.pod.key == "ml-train/urgent-eval"
    assert (first.node, [v.key for v in first.evicted]) == ("gpu-train-01", ["ml-infer/whisper-0"])
    # after that, gpu-train-01 is full (8/8) and gpu-train-02 still has 2 free: the 4-GPU job stays Pending
    finetune = next(o for o in outcomes if o.pod.key == "ml-train/llm-finetune-0")
    assert finetune.node is None
    assert (engine.cluster.requested <= engine.cluster.allocatable).all()
