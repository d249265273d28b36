"""diagnose on 5,000 nodes: when the container runtime fails GPU pods on many nodes at once (a toolkit release
that never configured containerd's ``nvidia`` runtime: NVIDIA/gpu-operator#759, #730,
``containerd-no-nvidia-runtime.yaml``), each node's finding names that node's toolkit pod. The DaemonSet pod
of a node is found by a lookup in one index of the snapshot's DaemonSet pods (``device_plugin.pod_of``), not by a
scan of every pod once per failing node: with 2,000 such nodes that scan alone took 5.8 s of ``bound_findings``
(6,000 pods), growing with nodes times pods.

The snapshot is the real case's node, toolkit pod, workload pod and event, copied ``COPIES`` times."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from kubegpu.explain import device_plugin
from kubegpu.explain.findings_bound import bound_findings
from kubegpu.model.snapshot import ClusterSnapshot, build_snapshot
from tests.realcases.cases import HERE
from tests.walks import CountedList

COPIES = 30
NODE = "ip-10-0-12-34.ec2.internal"
TOOLKIT = "nvidia-container-toolkit-daemonset-8x2lq"


def _copied() -> ClusterSnapshot:
    """Every node-bound object of the case copied per node ``n<i>`` (names suffixed ``-<i>``)."""
    items: list[dict[str, Any]] = yaml.safe_load(
        (HERE / "containerd-no-nvidia-runtime.yaml").read_text(encoding="utf-8")
    )["items"]
    shared = [o for o in items if o["kind"] in ("RuntimeClass", "DaemonSet")]
    out = list(shared)
    for i in range(COPIES):
        for o in items:
            if o in shared:
                continue
            twin = copy.deepcopy(o)
            if o["kind"] == "Node":
                twin["metadata"]["name"] = f"n{i}"
            else:
                twin["metadata"]["name"] += f"-{i}"
            if o["kind"] == "Pod":
                twin["spec"]["nodeName"] = f"n{i}"
            if o["kind"] == "Event":
                twin["involvedObject"]["name"] += f"-{i}"
            out.append(twin)
    snap = build_snapshot([("copied", o) for o in out])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    return snap


def test_each_failing_node_names_its_own_toolkit_pod_from_one_walk_of_the_pods() -> None:
    snap = _copied()
    chains = device_plugin.check_nodes(snap)  # find() reads them once for every check, before this one
    snap.pods = pods = CountedList(snap.pods)
    found = bound_findings(snap, chains)
    assert [f.objects for f in found] == [[f"pod/ml/infer-0-{i}", f"node/n{i}"] for i in range(COPIES)]
    # the log to read first is the toolkit pod on the pod's own node, as in the single-node case
    assert [f.commands[0] for f in found] == [
        f"kubectl -n gpu-operator logs {TOOLKIT}-{i} --all-containers --tail=100" for i in range(COPIES)
    ]
    # one walk for the GPU pods, one for the DaemonSet pods' index: not one more per failing node
    assert pods.walks <= 2, pods.walks
