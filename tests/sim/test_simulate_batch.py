"""``kubegpu simulate`` in batch mode: queue objects or pod groups among the inputs send the replay
through the batch layer (issue 6, item 6).

The clusters and workloads are hand-written here (1-GPU nodes, pods of one ``nvidia.com/gpu``, built with
``cli_inputs``); every expected figure is worked out by hand in the test's docstring from the rules in
docs/batch.md and docs/simulator.md (kube-scheduler's 1 s initial backoff, arrival → first start as pending time,
numpy's linear percentile, GPU × seconds since the last checkpoint as the cost of an eviction).
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kubegpu.cli.sim_cmd import simulate
from tests.sim.cli_inputs import node, pod, pod_group, queue, simulate_table, write


def test_gang_waits_until_all_its_members_fit(tmp_path: Path) -> None:
    """Two 1-GPU nodes. ``solo`` (queue a) takes one GPU from 0 to 100. The gang (PodGroup minMember 2,
    two 1-GPU pods, queue a) arrives at 10: one GPU is free but the gang needs two, so nothing of it
    starts (in kube mode its first member would take the free GPU at 10). At 100 ``solo`` leaves, the
    waiting gang is moved back (its 1 s backoff is long over) and both members start at 100: waits
    0, 90, 90 → p50 90, p95 90; 2 workloads admitted, all 3 pods placed, 2 of them after waiting."""
    cluster = write(tmp_path / "cluster.yaml", node("n1"), node("n2"))
    work = write(
        tmp_path / "work.yaml",
        queue("a", 4), pod_group("train", 2), pod("solo", 0, 100, "a"),
        pod("train-0", 10, 50, "a", "train"), pod("train-1", 10, 50, "a", "train"),
    )  # fmt: skip
    out, rows = simulate_table("--snapshot", cluster, "--workload", work)
    assert "batch replay: queues, quota, gangs" in out
    assert rows["placed"] == ["3"] and rows["placed after waiting"] == ["2"]
    assert rows["queue a: pending p50 / p95 (s)"] == ["90 / 90"]
    assert rows["queue a: admitted / given up / waiting (workloads)"] == ["2 / 0 / 0"]


def test_the_same_pods_without_queue_objects_replay_pod_by_pod(tmp_path: Path) -> None:
    """Control for the test above: with neither GpuQueue nor PodGroup among the inputs the replay is
    kube-scheduler's (no per-queue rows), and the gang label alone makes no gang: ``train-0`` starts at
    10 on the free GPU (half the gang holds a GPU), ``train-1`` when ``train-0`` leaves at 60: waits 0,
    0, 50 → p95 = 0 + 0.9 × 50 = 45 (numpy's linear interpolation between the 2nd and 3rd)."""
    cluster = write(tmp_path / "cluster.yaml", node("n1"), node("n2"))
    work = write(
        tmp_path / "work.yaml",
        pod("solo", 0, 100), pod("train-0", 10, 50, group="train"), pod("train-1", 10, 50, group="train"),
    )  # fmt: skip
    out, rows = simulate_table("--snapshot", cluster, "--workload", work)
    assert "batch replay" not in out and not any(k.startswith("queue ") for k in rows)
    assert rows["placed after waiting"] == ["1"] and rows["pending time p95 (s)"] == ["45"]


def test_a_queue_borrows_the_cohorts_unused_quota_and_waits_once_it_cannot(tmp_path: Path) -> None:
    """Two 1-GPU nodes; queues a and b in cohort org, nominal 1 GPU each; b submits nothing. a's two
    pods arrive at 0 and run 100 s. Before: a uses its 1 and borrows b's unused 1 → both start at 0
    (p50 / p95 0 / 0). After ``--queue-nominal b=nvidia.com/gpu=0``: b has nothing to lend, so a's
    second pod waits for the first to leave at 100 → waits 0, 100: p50 50, p95 95."""
    cluster = write(tmp_path / "cluster.yaml", node("n1"), node("n2"))
    work = write(tmp_path / "work.yaml", queue("a", 1), queue("b", 1), pod("p0", 0, 100, "a"), pod("p1", 0, 100, "a"))  # fmt: skip
    _, rows = simulate_table(
        "--snapshot", cluster, "--workload", work, "--queue-nominal", "b=nvidia.com/gpu=0"
    )
    assert rows["queue a: pending p50 / p95 (s)"] == ["0 / 0", "50 / 95"]
    assert rows["queue a: admitted / given up / waiting (workloads)"] == ["2 / 0 / 0", "2 / 0 / 0"]
    assert rows["queue b: admitted / given up / waiting (workloads)"] == ["0 / 0 / 0", "0 / 0 / 0"]


def test_reclaim_evicts_the_borrower_and_counts_the_work_since_its_checkpoint(tmp_path: Path) -> None:
    """One 1-GPU node; queues hi (nominal 1 GPU) and lo (nominal 0) in one cohort. ``lo-job`` arrives
    at 0 for 10,000 s, borrowing hi's unused GPU, checkpointing every 3,600 s. ``hi-job`` arrives at
    5,400 s for 1,000 s. Without preemption hi waits for lo to finish: 10,000 − 5,400 = 4,600 s. With
    ``--preemption`` hi (within its nominal quota) reclaims the GPU: lo is evicted at 5,400 s, losing
    the 5,400 mod 3,600 = 1,800 s since its last checkpoint = 0.5 GPU-hours, and terminates for its
    grace period (the API default 30 s, holding the GPU); hi starts when lo is deleted at 5,430 (waits
    30 s) and lo's replacement restarts when hi leaves."""
    cluster = write(tmp_path / "cluster.yaml", node("n1"))
    work = write(
        tmp_path / "work.yaml",
        queue("hi", 1), queue("lo", 0), pod("lo-job", 0, 10_000, "lo", checkpoint=3600), pod("hi-job", 5400, 1000, "hi"),
    )  # fmt: skip
    _, rows = simulate_table("--snapshot", cluster, "--workload", work)
    assert rows["queue hi: pending p50 / p95 (s)"] == ["4600 / 4600"]
    assert rows["pods evicted by preemption"] == ["0"]
    _, rows = simulate_table("--snapshot", cluster, "--workload", work, "--preemption")
    assert rows["queue hi: pending p50 / p95 (s)"] == ["30 / 30"]
    assert rows["queue lo: evicted pods / GPU-hours lost"] == ["1 / 0.5"]
    assert rows["queue hi: evicted pods / GPU-hours lost"] == ["0 / 0.0"]
    assert rows["GPU-hours lost to preemption"] == ["0.5"]
    assert rows["queue lo: admitted / given up / waiting (workloads)"] == [
        "2 / 0 / 0"
    ]  # once more after eviction


def test_the_demo_runs_through_its_queues(tmp_path: Path) -> None:
    """The demo snapshot defines GpuQueues training / inference / research and a PodGroup, so it replays
    in batch mode. Its pending workloads (counted in src/kubegpu/demo/cluster.yaml): data-prep (no queue
    label → ``default``); training: urgent-eval, llm-finetune-0, nccl-allreduce-4gpu,
    nccl-allreduce-2gpu; inference: vllm-6b7c9d-q9r4s, embed-server, batch-embed, llm-70b-int4. With the
    kubegpu profile, what one admission cycle of ``kubegpu queues --demo`` places without evicting:
    data-prep and nccl-allreduce-2gpu. urgent-eval would need whisper-0 (inference) evicted, but inference
    uses 11 of its nominal 20 GPUs, so even with --preemption the benchmark's rule (queues within their
    nominal quota are safe) keeps it: nothing is evicted."""
    out, rows = simulate_table("--demo", "--policy", "kubegpu", "--preemption")
    assert "batch replay" in out
    assert rows["queue default: admitted / given up / waiting (workloads)"] == ["1 / 0 / 0"]
    assert rows["queue training: admitted / given up / waiting (workloads)"] == ["1 / 0 / 3"]
    assert rows["queue inference: admitted / given up / waiting (workloads)"] == ["0 / 0 / 4"]
    assert rows["queue research: admitted / given up / waiting (workloads)"] == ["0 / 0 / 0"]
    assert rows["pods evicted by preemption"] == ["0"]


def test_bad_queue_object_and_unknown_queue_are_clear_errors(tmp_path: Path) -> None:
    cluster = write(tmp_path / "cluster.yaml", node("n1"))
    bad = queue("a", 1)
    bad["spec"]["weight"] = 0
    work = write(tmp_path / "work.yaml", bad, pod("p", 0, 10, "a"))
    result = CliRunner().invoke(simulate, ["--snapshot", cluster, "--workload", work])
    assert result.exit_code == 2  # bad input: exit 2 on every command
    assert "work.yaml" in result.output and "GpuQueue a" in result.output and "spec.weight" in result.output
    work = write(tmp_path / "work2.yaml", queue("a", 1), pod("p", 0, 10, "a"))
    args = ["--snapshot", cluster, "--workload", work, "--queue-nominal", "zz=nvidia.com/gpu=1"]
    result = CliRunner().invoke(simulate, args)
    assert result.exit_code == 1 and "no GpuQueue named 'zz' (queues: a)" in result.output


def test_relabel_moves_a_node_into_the_pool_the_pods_select(tmp_path: Path) -> None:
    """Nodes n1 (pool=a) and n2 (pool=b), one GPU each; two 1-GPU pods selecting pool=a arrive at 0 and
    run 100 s. Before: only n1 matches, the second pod waits for the first: waits 0, 100 → p95 =
    0 + 0.95 × 100 = 95. After ``--relabel pool=b:pool=a`` both nodes are in pool a: waits 0, 0."""
    n1, n2 = node("n1"), node("n2")
    n1["metadata"]["labels"], n2["metadata"]["labels"] = {"pool": "a"}, {"pool": "b"}
    cluster = write(tmp_path / "cluster.yaml", n1, n2)
    pods = [pod("p0", 0, 100), pod("p1", 0, 100)]
    for p in pods:
        p["spec"]["nodeSelector"] = {"pool": "a"}
    work = write(tmp_path / "work.yaml", *pods)
    out, rows = simulate_table("--snapshot", cluster, "--workload", work, "--relabel", "pool=b:pool=a")
    assert "after: pool=b nodes: pool=a" in out
    assert rows["pending time p95 (s)"] == ["95", "0"] and rows["placed after waiting"] == ["1", "0"]
    result = CliRunner().invoke(
        simulate, ["--snapshot", cluster, "--workload", work, "--relabel", "pool=z:pool=a"]
    )
    assert result.exit_code == 1 and "--relabel: no node has label pool=z" in result.output
    result = CliRunner().invoke(simulate, ["--snapshot", cluster, "--workload", work, "--relabel", "pool"])
    assert result.exit_code == 1 and "--relabel takes SELECTOR_KEY=VALUE:KEY=VALUE" in result.output


def test_relabel_with_key_minus_removes_the_label() -> None:
    """``kubectl label node n1 pool-`` semantics: the matching node loses the key, the others keep theirs."""
    from kubegpu.model.objects import Node
    from kubegpu.sim.node_changes import parse_relabel, relabeled

    nodes = [Node(name="n1", labels={"pool": "a", "x": "1"}), Node(name="n2", labels={"pool": "b"})]
    out = relabeled(nodes, [parse_relabel("pool=a:pool-")])
    assert [n.labels for n in out] == [{"x": "1"}, {"pool": "b"}]


MIG_LAYOUTS = """
version: v1
mig-configs:
  all-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 7}
"""


def test_mig_layout_advertises_the_slices_and_moves_the_gpu_pods(tmp_path: Path) -> None:
    """One H100 80GB node (GFD labels: product NVIDIA-H100-80GB-HBM3, count 1, mig.strategy mixed)
    advertising one whole ``nvidia.com/gpu``, held by the running pod ``old``. Three pods asking for one
    ``nvidia.com/mig-1g.10gb`` each arrive at 0. Before: the node has no such resource, all three stay
    pending. After ``--mig-layout`` to all-1g.10gb (NVIDIA's H100 80GB catalog: seven 1g.10gb slices,
    so the device plugin's mixed strategy advertises ``nvidia.com/mig-1g.10gb: 7``): ``old`` is moved
    off first and recreated, and finds no whole GPU any more (still pending); the three slices' pods
    start at once."""
    h100 = node("h100")
    h100["metadata"]["labels"] = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "1",
        "nvidia.com/mig.strategy": "mixed",
    }  # fmt: skip
    old = pod("old", 0, 0)
    old["spec"]["nodeName"] = "h100"
    old["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
    cluster = write(tmp_path / "cluster.yaml", h100, old)
    slices = [pod(f"slice-{i}", 0, 100) for i in range(3)]
    for p in slices:
        p["spec"]["containers"][0]["resources"] = {"requests": {"nvidia.com/mig-1g.10gb": "1"}, "limits": {"nvidia.com/mig-1g.10gb": "1"}}  # fmt: skip
    work = write(tmp_path / "work.yaml", *slices)
    (tmp_path / "mig.yaml").write_text(MIG_LAYOUTS)
    layout = f"nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3:{tmp_path / 'mig.yaml'}"
    out, rows = simulate_table("--snapshot", cluster, "--workload", work, "--mig-layout", layout)
    assert "MIG all-1g.10gb" in out
    assert rows["placed"] == ["0", "3"]
    assert rows["still pending at the end"] == ["3", "1"]
    bad = CliRunner().invoke(
        simulate, ["--snapshot", cluster, "--mig-layout", f"a=b:{tmp_path / 'none.yaml'}"]
    )
    assert bad.exit_code == 2 and "none.yaml" in bad.output and "cannot read MIG config" in bad.output
