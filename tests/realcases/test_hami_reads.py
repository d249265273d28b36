"""diagnose may explain 1,000 Pending HAMi pods on 5,000 nodes: what HAMi's notes read from every node and pod
(each node's hami.io/node-nvidia-register annotation, the GPU-holding pods of a node, the quotas naming a HAMi
resource, the nodes without the annotation) is read once per snapshot (``explain.hami_reads``), not once per
pod. The snapshots are the real cases' own, their Pending pod copied 50 times with its events:
Project-HAMi/HAMi#1527 (``hami-vgpus-over-registered.yaml``: 4 vGPUs in one container, one node registering 2
GPUs, two nodes unregistered; hami-scheduler's "0/4 nodes are available: 1 NodeUnfitPod, … 2 node unregistered"
and its extender's "no available node, 3 nodes do not meet") and Project-HAMi/HAMi#1368
(``hami-node-unfit-stale.yaml``: the NodeUnfitPod refusal written while the node's GPU was held, the node empty
since)."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.model.snapshot import ClusterSnapshot, build_snapshot
from tests.realcases.cases import HERE
from tests.walks import CountedList

COPIES = 50
VGPUS_OVER_PHYSICAL = "hami-scheduler: more vGPUs in one container than any node has physical GPUs"
STALE = "hami-scheduler's last refusal predates the node's state: no GPU on it is held now"
COUNTS_ONLY = (
    "hami-scheduler counts only nodes whose HAMi device plugin wrote the hami.io/node-nvidia-register"
)


def _copied(fixture: str, pod_name: str, *, drop_every_other: str = "") -> ClusterSnapshot:
    """The fixture with its Pending pod ``pod_name`` and the events about it copied ``COPIES`` times (names
    suffixed); ``drop_every_other``: the odd copies lose their event of that reason."""
    items: list[dict[str, Any]] = yaml.safe_load((HERE / fixture).read_text(encoding="utf-8"))["items"]
    pod = next(o for o in items if o["kind"] == "Pod" and o["metadata"]["name"] == pod_name)
    events = [o for o in items if o["kind"] == "Event" and o["involvedObject"]["name"] == pod_name]
    assert events
    for i in range(1, COPIES):
        twin = copy.deepcopy(pod)
        twin["metadata"]["name"] = f"{pod_name}-{i}"
        items.append(twin)
        for e in events:
            if i % 2 and e["reason"] == drop_every_other:
                continue
            said = copy.deepcopy(e)
            said["metadata"]["name"] = f"{e['metadata']['name']}-{i}"
            said["involvedObject"]["name"] = f"{pod_name}-{i}"
            items.append(said)
    snap = build_snapshot([(fixture, o) for o in items])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    return snap


def _explained(snap: ClusterSnapshot) -> tuple[list[Any], int]:
    """Every Pending pod explained, and the walks over the snapshot's node, pod and quota lists that made (a
    pod's notes read its namespace's quotas by lookup, ``admission.quota.quotas_in``)."""
    snap.nodes = nodes = CountedList(snap.nodes)
    snap.pods = pods = CountedList(snap.pods)
    snap.quotas = quotas = CountedList(snap.quotas)
    engine = Engine(snap)
    pending = [p for p in snap.pods if not p.node_name]
    assert len(pending) == COPIES
    nodes.walks = pods.walks = quotas.walks = 0
    return [explain_pod(engine, p) for p in pending], nodes.walks + pods.walks + quotas.walks


def test_vgpus_over_registered_reads_the_nodes_once_hami_1527() -> None:
    """50 copies of the #1527 pod: each gets the vGPUs-over-physical cause (hami-scheduler puts each vGPU of a
    container on its own GPU, pkg/scheduler/score.go fitInDevices; the one registered node has 2, the pod asks
    4), and the 25 whose latest word is hami-scheduler's FailedScheduling ("2 node unregistered") the nodes
    without the annotation, in the fixture's order. The nodes are walked a few times in all (main: 77)."""
    exps, walks = _explained(
        _copied("hami-vgpus-over-registered.yaml", "worker-0", drop_every_other="FilteringFailed")
    )
    assert all(exp.established[0] == VGPUS_OVER_PHYSICAL for exp in exps), [e.established for e in exps]
    said = [
        w for exp in exps for w in (exp.observed or {}).get("likelyReasons", []) if w.startswith(COUNTS_ONLY)
    ]
    assert len(said) == COPIES // 2, said
    assert all("annotation; gpu-node-b, cpu-node-1, cpu-node-2 lack it" in w for w in said), said
    assert walks <= 6, walks


def test_stale_refusal_reads_the_pods_once_hami_1368() -> None:
    """50 copies of the #1368 pod, each with its NodeUnfitPod event: each gets the stale-refusal cause (no pod
    on the node holds a GPU, no quota names a HAMi resource), with the pods and quotas walked a few times in all
    (main: 102)."""
    exps, walks = _explained(_copied("hami-node-unfit-stale.yaml", "train-b-0"))
    assert all(exp.established[0] == STALE for exp in exps), [e.established for e in exps]
    assert walks <= 6, walks


def test_a_quota_on_a_hami_resource_is_seen_with_or_without_its_prefix() -> None:
    """A ResourceQuota names an extended resource as ``requests.<name>`` (the API server's quota validation takes
    extended resources only under that prefix); a manifest's bare name is read too, as the reader's docstring
    says. Before, the prefix was cut at the first dot, so a bare ``nvidia.com/gpumem`` read as ``com/gpumem``
    and matched nothing."""
    from kubegpu.explain.hami_reads import hami_reads
    from kubegpu.model.objects import ResourceQuota

    for key in ("requests.nvidia.com/gpumem", "requests.nvidia.com/gpucores", "nvidia.com/gpumem"):
        snap = build_snapshot([])
        snap.quotas.append(ResourceQuota(namespace="team-a", name="q", hard={key: 1000}, used={}))
        assert hami_reads(snap).quoted("team-a"), key
        assert not hami_reads(snap).quoted("team-b")
