"""diagnose may read 1,000 Kueue Workloads (suspended Jobs' and gated pods') on 5,000 nodes: each Workload's
LocalQueue, ClusterQueue and ResourceFlavors are looked up by name, and the nodes a flavor's nodeLabels select
are found once per flavor and resource (``kueue_objects.kueue_index``, ``kueue_objects.flavor_nodes``), not
by a scan of every queue object and node per Workload. The snapshots are the real cases' own, their held
Workload copied 50 times: kubernetes-sigs/kueue#3909 (``kueue-3909-max-capacity.yaml``: the PyTorchJob past
the ClusterQueue's maximum, flavors on 1 and 2 nodes of 8 GPUs) and Kueue's troubleshooting docs
(``kueue-localqueue-missing.yaml``: "LocalQueue user-queue doesn't exist", the namespace's only LocalQueue
team-queue). The expected facts are the sources' numbers, as tests/realcases/test_kueue.py pins them."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from kubegpu.explain.findings_kueue import held_findings
from kubegpu.explain.kueue import read_pod
from kubegpu.explain.kueue_objects import kueue_index
from kubegpu.model.snapshot import ClusterSnapshot, build_snapshot
from tests.realcases.cases import HERE
from tests.walks import CountedList

COPIES = 50
QUEUE_KINDS = ("LocalQueue", "ClusterQueue", "ResourceFlavor")


def _copied(fixture: str, workload: str, pod: str = "") -> ClusterSnapshot:
    """The fixture with its Workload ``workload`` (and its pod ``pod``, which owns it) copied ``COPIES``
    times, names and owners suffixed."""
    items: list[dict[str, Any]] = [
        o for o in yaml.safe_load_all((HERE / fixture).read_text(encoding="utf-8")) if o
    ]
    wl = next(o for o in items if o["kind"] == "Workload" and o["metadata"]["name"] == workload)
    owned = next((o for o in items if o["kind"] == "Pod" and o["metadata"]["name"] == pod), None)
    for i in range(1, COPIES):
        twin = copy.deepcopy(wl)
        twin["metadata"]["name"] = f"{workload}-{i}"
        for ref in twin["metadata"]["ownerReferences"]:
            ref["name"] = f"{ref['name']}-{i}"
            ref.pop("uid", None)
        items.append(twin)
        if owned is not None:
            again = copy.deepcopy(owned)
            again["metadata"]["name"] = f"{pod}-{i}"
            items.append(again)
    snap = build_snapshot([(fixture, o) for o in items])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    return snap


def _counted(snap: ClusterSnapshot) -> list[CountedList]:
    """The node list, the snapshot's queue objects and the index's LocalQueue, ClusterQueue and ResourceFlavor
    lists, counting walks from here on (the index itself is built by the first read)."""
    snap.nodes = CountedList(snap.nodes)
    snap.records.queues = CountedList(snap.records.queues)
    by_kind = kueue_index(snap).by_kind
    for kind in QUEUE_KINDS:
        by_kind[kind] = CountedList(by_kind.get(kind, []))
    lists = [snap.nodes, snap.records.queues, *(by_kind[k] for k in QUEUE_KINDS)]
    for x in lists:
        x.walks = 0
    return lists


def test_held_workloads_read_queues_and_flavor_nodes_once_kueue_3909() -> None:
    """50 copies of kueue#3909's high-priority Workload: each finding names the ClusterQueue's quota per flavor
    (nominalQuota 8 / 16, borrowingLimit 8) and that 24 GPUs of quota in single-node-h100 would be more than
    its nodes hold; the nodes are walked once (to index their labels), the queue lists never (main: 400 walks, 100 of the nodes)."""
    snap = _copied("kueue-3909-max-capacity.yaml", "pytorchjob-pytorch-simple-high-priority-8d2e7")
    lists = _counted(snap)
    found = [f for f in held_findings(snap) if "high-priority" in f.title]
    assert len(found) == COPIES, [f.title for f in found]
    for f in found:
        # the thread's three 8-GPU nodes: one labelled mlp=multi-node, two mlp=single-node
        assert (
            "multi-node-h100 nvidia.com/gpu: nominalQuota 8, borrowingLimit 8; its nodes hold 8 on 1 node(s)"
            in f.detail
        )
        assert (
            "single-node-h100 nvidia.com/gpu: nominalQuota 16, borrowingLimit 8; its nodes hold 16 on 2 node(s)"
            in f.detail
        )
        assert (
            "a nominalQuota of 24 nvidia.com/gpu in single-node-h100 is more than its nodes hold" in f.detail
        )
    assert sum(x.walks for x in lists) <= 1, [x.walks for x in lists]


def test_gated_pods_find_their_local_queue_by_name_kueue_docs() -> None:
    """50 copies of the docs' gated pod whose Workload names a LocalQueue that does not exist: each reading
    says so and lists the namespace's LocalQueues (team-queue), with no walk of the LocalQueue or ClusterQueue
    list per pod (main: 150)."""
    snap = _copied("kueue-localqueue-missing.yaml", "pod-kueue-sleep-9kx2t-5e1b0", "kueue-sleep-9kx2t")
    lists = _counted(snap)
    gated = [p for p in snap.pods if not p.node_name]
    assert len(gated) == COPIES
    for p in gated:
        r = read_pod(snap, p)
        assert (r.state, r.message) == ("queue-missing", "LocalQueue user-queue doesn't exist"), p.key
        assert "LocalQueues in default: team-queue" in r.advice[0]
    assert sum(x.walks for x in lists) == 0, [x.walks for x in lists]
