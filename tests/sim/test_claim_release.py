"""``simulate`` frees DRA claims when their pods are done, as the resourceclaim controller does.

Upstream (pkg/controller/resourceclaim/controller.go ``syncClaim``, 1.30-1.37): a pod that is deleted or
done (``isPodDone``) leaves the claim's ``status.reservedFor``; when no consumer is left the controller
clears ``status.allocation``; a claim generated from a template for the pod (controlling ownerReference
``v1/Pod``) is deleted once unreserved. kube-scheduler's PreBind adds every pod that binds to its claims'
``reservedFor`` (dynamicresources.go ``bindClaim``), so a shared claim stays allocated while any consumer
runs. Objects: tests/dra/objects.py (NVIDIA DRA driver-shaped slices, ``gpu.nvidia.com`` class). Every pod
asks for 1 CPU, far below a node's; only the GPUs decide. Waits (arrival to first start) are derived by
hand in each test from the timeline.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubegpu.cli.sim_cmd import simulate
from kubegpu.model.snapshot import build_snapshot
from kubegpu.sim.replay_inputs import NodeEvent, SimPod
from kubegpu.sim.replay_report import ReplayReport
from kubegpu.sim.whatif import Scenario, run
from kubegpu.testing.builders import make_node
from tests.dra import objects as o
from tests.sim.cli_inputs import simulate_table, write

TEMPLATE: dict[str, Any] = {
    "apiVersion": o.API,
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "two-gpus", "namespace": "default"},
    "spec": {"spec": {"devices": {"requests": [o.request("gpu", count=2)]}}},
}


def templated(pod: str) -> list[dict[str, Any]]:
    """A pod whose claim the controller generated from TEMPLATE: ``<pod>-gpu``, owned by the pod."""
    made, generated_pod = o.generated(
        pod, o.request("gpu", count=2), template="two-gpus", claim_name=f"{pod}-gpu"
    )
    return [generated_pod, made]


def scenario(objs: list[dict[str, Any]], timeline: list[tuple[str, float, float]], **kw: Any) -> Scenario:
    snap = build_snapshot([("t", x) for x in [*o.gpu_classes(), TEMPLATE, *objs]])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    by_name = {p.name: p for p in snap.pods}
    pods = [SimPod(by_name[name], arrival, duration) for name, arrival, duration in timeline]
    return Scenario(list(snap.nodes), pods, False, dra=snap.dra, **kw)


def replay(s: Scenario) -> ReplayReport:
    return run(s, "default", None, 0, "dra")


def test_a_template_claim_is_freed_when_its_pod_completes() -> None:
    # n1 has 2 GPUs. pa (t=0, runs 100 s) gets both through its generated claim; pb arrives at 10 and
    # needs 2 GPUs too: nothing free until pa completes at 100, when pa-gpu is deleted (its devices
    # free) and pb starts. Waits: pa 0, pb 100 - 10 = 90. Before claims were released pb never ran.
    s = scenario([*o.gpu_node("n1", 2), *templated("pa"), *templated("pb")], [("pa", 0, 100), ("pb", 10, 50)])
    got = replay(s)
    assert (got.placed, got.still_pending, sorted(got.waits)) == (2, 0, [0.0, 90.0])


def test_a_shared_claim_stays_allocated_until_its_last_consumer_completes() -> None:
    # n1 has 1 GPU. s1 (0, 100 s) and s2 (0, 200 s) both name claim "shared" (1 GPU): s1's cycle
    # allocates it, s2 binds to the allocated claim and becomes its second consumer. x (t=5) needs its
    # own 1-GPU claim: at 100 s1 completes but s2 still holds "shared", so x stays pending; at 200 s2
    # completes, "shared" has no consumer left and is deallocated, and x starts. Waits: 0, 0, 195
    # (95 would mean the claim was freed with its first consumer).
    objs = [
        *o.gpu_node("n1", 1),
        o.claim("shared", o.request("gpu")),
        o.claim("own", o.request("gpu")),
        o.pod("s1", ("gpu", "shared", "")),
        o.pod("s2", ("gpu", "shared", "")),
        o.pod("x", ("gpu", "own", "")),
    ]
    got = replay(scenario(objs, [("s1", 0, 100), ("s2", 0, 200), ("x", 5, 10)]))
    assert (got.placed, got.still_pending, sorted(got.waits)) == (3, 0, [0.0, 0.0, 195.0])


def test_a_claim_stays_allocated_across_a_node_added_mid_run() -> None:
    # Adding n2 (no GPUs, no slice) at t=50 rebuilds the replay's scheduler; pa's claim (both GPUs of n1,
    # pa runs 0-100) must stay allocated through it. pb (t=60, 2 GPUs) therefore starts at 100: waits 0,
    # 40. Had the rebuild forgotten pa's allocation, pb would have started at 60 (wait 0).
    n2 = build_snapshot([("t", make_node("n2").obj())]).nodes[0]
    s = scenario(
        [*o.gpu_node("n1", 2), *templated("pa"), *templated("pb")],
        [("pa", 0, 100), ("pb", 60, 10)],
        node_events=(NodeEvent(50, "add", "n2", n2),),
    )
    got = replay(s)
    assert (got.placed, got.still_pending, sorted(got.waits)) == (2, 0, [0.0, 40.0])


def test_a_pod_deleted_with_its_node_gets_a_fresh_claim_for_its_replacement() -> None:
    # n1 (2 GPUs) is the only node at first, so pa (t=0, runs 1000 s) gets n1's GPUs; n2 (2 GPUs, its
    # slice published from the start) joins at 20 and n1 is removed at 50. pa is deleted with n1 and
    # recreated; its generated claim, unreserved, is deleted, so the replacement's claim is unallocated
    # and fits n2 at once: 1 eviction, nothing pending at the end. Kept allocated (pinned to n1 by its
    # nodeSelector), the replacement could never run: 1 still pending.
    n2_node, n2_slice = o.gpu_node("n2", 2)
    n2 = build_snapshot([("t", n2_node)]).nodes[0]
    events = (NodeEvent(20, "add", "n2", n2), NodeEvent(50, "remove", "n1"))
    s = scenario([*o.gpu_node("n1", 2), n2_slice, *templated("pa")], [("pa", 0, 1000)], node_events=events)
    got = replay(s)
    assert (got.placed, got.node_removal_evictions, got.still_pending) == (1, 1, 0)


def test_each_replay_works_on_its_own_copy_of_the_snapshots_claims() -> None:
    # s1 and s2 share "shared" and run to the end: in the replay's copy the claim ends reserved for both.
    # The snapshot's claim must stay as loaded (no consumer), so a second replay (simulate's "after")
    # starts from the same state and places both again.
    objs = [*o.gpu_node("n1", 1), o.claim("shared", o.request("gpu"))]
    objs += [o.pod("s1", ("gpu", "shared", "")), o.pod("s2", ("gpu", "shared", ""))]
    s = scenario(objs, [("s1", 0, math.inf), ("s2", 0, math.inf)])
    assert s.dra is not None
    assert [replay(s).placed for _ in range(2)] == [2, 2]
    loaded = s.dra.claims["default/shared"]
    assert (loaded.allocated, loaded.reserved_for) == (None, ())


def job(completions: int, parallelism: int, run_s: int) -> dict[str, Any]:
    """A Job whose pods each get a 1-GPU claim from the workload's template ``one-gpu``."""
    claim_pod = o.pod("x", ("gpu", "", "one-gpu"))
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "annotations": {"kubegpu.io/sim-duration-seconds": str(run_s)}},
        "spec": {
            "completions": completions,
            "parallelism": parallelism,
            "template": {"spec": claim_pod["spec"]},
        },
    }


ONE_GPU: dict[str, Any] = {**TEMPLATE, "metadata": {"name": "one-gpu", "namespace": "default"}}
ONE_GPU["spec"] = {"spec": {"devices": {"requests": [o.request("gpu")]}}}


def test_simulate_gives_a_jobs_later_pods_the_devices_its_finished_pods_claimed(tmp_path: Path) -> None:
    # kubegpu simulate --snapshot (2-GPU DRA node) --workload (template one-gpu, Job parallelism 2,
    # completions 4, 100 s per pod). Each pod's claim is generated from the template (train-<i>-gpu). At 0
    # train-0 and train-1 take the two GPUs; at 100 both complete, their claims are deleted, and the Job's
    # replacements train-2 and train-3 (created at 100) get the GPUs at once: 4 placed, none after
    # waiting, none pending. With the claims kept allocated, train-2 and train-3 would wait forever.
    cluster = write(tmp_path / "cluster.yaml", *o.gpu_classes(), *o.gpu_node("n1", 2))
    work = write(tmp_path / "work.yaml", ONE_GPU, job(4, 2, 100))
    _, rows = simulate_table("--snapshot", cluster, "--workload", work)
    assert rows["placed"] == ["4"]
    assert rows["placed after waiting"] == ["0"]
    assert rows["still pending at the end"] == ["0"]


def test_a_workload_pod_naming_a_missing_template_is_refused_with_file_pod_and_field(tmp_path: Path) -> None:
    cluster = write(tmp_path / "cluster.yaml", *o.gpu_classes(), *o.gpu_node("n1", 2))
    work = write(tmp_path / "work.yaml", job(1, 1, 100))  # no ResourceClaimTemplate one-gpu anywhere
    result = CliRunner().invoke(simulate, ["--snapshot", cluster, "--workload", work])
    assert result.exit_code != 0
    assert (
        f"{work}: Pod default/train-0: spec.resourceClaims[0].resourceClaimTemplateName: ResourceClaimTemplate "
        "default/one-gpu is not in the snapshot or the workload"
    ) in result.output
    assert "Traceback" not in result.output
