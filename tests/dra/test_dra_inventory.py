"""The DRA inventory (report GPU map, cluster exporter) applies the allocator's shared-counter rule.

Upstream: KEP-4815 partitionable devices; k8s.io/dynamic-resource-allocation structured/internal/incubating
(v0.36.3) ``allocateDevice`` → ``checkAvailableCounters``: a device is allocatable only when the counters it
consumes fit in its pool's counter sets minus what the allocated devices consume. DRAPartitionableDevices is
beta, on by default from 1.36 (pkg/features/kube_features.go v1.36.3); off (1.35) the API server drops
``sharedCounters`` / ``consumesCounters`` (resourceslice strategy ``dropDisabledFields``).
Fixture: NVIDIA DRA driver partitions.go shapes (``tests.dra.objects.partitionable_node``): gpu-0's counter
set has copy-engines 8, multiprocessors 132, memory-slice-0..7 1 each; the full GPU consumes all of them, a
1g.10gb MIG device at memory slice k consumes copy-engines 1, multiprocessors 16, memory-slice-k 1.
"""

from __future__ import annotations

from typing import Any

from kubegpu.cluster_exporter.collector import families_of
from kubegpu.cluster_exporter.measure import measure
from kubegpu.explain.cards import node_cards
from kubegpu.explain.diagnose import diagnose, gpu_totals
from kubegpu.explain.dra_inventory import devices, pool_counts
from kubegpu.explain.engine import Engine
from kubegpu.explain.overview import node_rows
from kubegpu.explain.summary import anomalies, pod_ask
from kubegpu.model.snapshot import ClusterSnapshot, build_snapshot
from kubegpu.testing.builders import make_node, make_pod
from tests.dra import objects as o
from tests.summaries import summary_of

POOL = "accelerator.example.com/pool"


def cluster(*extra: dict[str, Any], version: str = "1.36") -> ClusterSnapshot:
    node = o.partitionable_node("n1", (0, 1))
    node[0]["metadata"]["labels"][POOL] = "a"
    snap = build_snapshot([("t", x) for x in (*o.gpu_classes(), *node, *extra)])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    snap.kube_version = version
    return snap


def held_mig() -> dict[str, Any]:
    """Claim ``held`` allocated the MIG device at memory slice 0 of gpu-0."""
    return o.claim("held", o.request("m", "mig.nvidia.com"),
                   status=o.allocated("n1", ("m", "gpu-0-mig-1g10gb-19-0")))  # fmt: skip


def test_a_full_gpu_beside_its_allocated_mig_device_is_not_free() -> None:
    got = {d.name: (d.claim, d.unavailable, d.free) for d in devices(cluster(held_mig()))}
    # copy-engines (checked first, name order): 8 − 1 (the held MIG) = 7 left, the full GPU needs 8.
    # MIG at slice 1: copy-engines 1 ≤ 7, memory-slice-1 1 ≤ 1, multiprocessors 16 ≤ 132 − 16 → free.
    assert got == {
        "gpu-0": (
            "",
            "counter set gpu-0-counter-set counter copy-engines: needs 8 in all, 7 available",
            False,
        ),
        "gpu-0-mig-1g10gb-19-0": ("default/held", "", False),
        "gpu-0-mig-1g10gb-19-1": ("", "", True),
    }
    # 3 devices, 1 allocated, 1 free (the full GPU is neither)
    assert pool_counts(cluster(held_mig()), POOL, "-") == {("a", "gpu.nvidia.com"): (3, 1, 1)}


def test_nothing_allocated_every_device_is_free_and_1_35_ignores_counters() -> None:
    assert pool_counts(cluster(), POOL, "-") == {("a", "gpu.nvidia.com"): (3, 0, 3)}
    # gate off: no device consumes counters, so only the held MIG is taken: 3, 1, 2
    assert pool_counts(cluster(held_mig()), POOL, "-", partitionable=False) == {
        ("a", "gpu.nvidia.com"): (3, 1, 2)
    }


def test_exporter_and_gpu_map_follow_the_minor() -> None:
    for version, free in (("1.36", 1), ("1.35", 2)):
        engine = Engine(cluster(held_mig(), version=version))
        fams = {f.name: f for f in families_of(measure(engine, POOL))}
        (sample,) = fams["kubegpu_pool_dra_devices_free"].samples
        assert sample.value == free, version
        (card,) = node_cards(engine, node_rows(engine, POOL), POOL)
        names = [s.device_id.rpartition("/")[2] for g in card.gpus for s in g.slots]
        # 1.36: the full GPU is no slot (its counters are taken); 1.35: all three devices are slots
        expected = ["gpu-0-mig-1g10gb-19-0", "gpu-0-mig-1g10gb-19-1"]
        assert names == (expected if version == "1.36" else ["gpu-0", *expected]), version


def test_diagnose_counts_dra_gpus_as_the_allocator_sees_them() -> None:
    """The overview row of a DRA node (no nvidia.com/gpu in status.capacity): 1.36 (partitionable) counts
    the GPU only, its MIG devices being partitions of it, and the GPU is taken once a MIG device of it is
    allocated; 1.35 (the API server drops the counters) counts the three devices as the allocator sees
    them: 1 GPU free, 2 MIG devices of which 1 allocated. The headline's totals are the rows' sums, and the
    node's product is its GPU's productName (no GFD label on a DRA-only node)."""
    for version, rows in (
        ("1.36", {"gpu (DRA)": ("1", "1", "0")}),
        ("1.35", {"gpu (DRA)": ("1", "0", "1"), "mig (DRA)": ("2", "1", "1")}),
    ):
        engine = Engine(cluster(held_mig(), version=version))
        (row,) = node_rows(engine, POOL)
        got = {r: (v["allocatable"], v["requested"], v["free"]) for r, v in row.gpu.items()}
        assert (row.name, row.pool, row.product) == ("n1", "a", "NVIDIA H100 80GB HBM3")
        assert got == rows, version
        totals = {r: (t["allocatable"], t["requested"]) for r, t in gpu_totals(engine).items()}
        assert totals == {r: (int(a), int(q)) for r, (a, q, _) in rows.items()}, version


def test_a_dra_cluster_headline_and_groups_name_its_gpus_and_claims() -> None:
    """Two DRA nodes of 8 GPUs, 6 held on each; three Pending pods with generated claims: two ask 4 GPUs
    with an 80Gi selector (no node has 4 free), one asks 2 (fits). Before, the headline read "0 GPU
    nodes, 0 GPUs" and every group "want cpu 1"."""
    objs: list[dict[str, Any]] = list(o.gpu_classes())
    for i in range(2):
        objs += o.gpu_node(f"node-{i}", 8)
        held = tuple(("gpu", f"gpu-{k}") for k in range(6))
        objs.append(o.claim(f"held-{i}", o.request("gpu", count=6), status=o.allocated(f"node-{i}", *held)))
    sel = o.SELECTOR_80GI
    for name, count in (("a", 4), ("b", 4), ("c", 2)):
        objs += o.generated(
            name, o.request("gpu", count=count, selectors=(sel,)), claim_name=f"{name}-gpu-x1"
        )
    snap = build_snapshot([("t", x) for x in objs])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    summary = summary_of(snap)
    assert (summary.gpu_nodes, summary.gpus, summary.requested, summary.free) == (2, 16, 12, 4)
    want = f"gpu.nvidia.com where {sel} (DRA claim), cpu 1"
    assert [(g.shape, g.cause, len(g.pods)) for g in summary.groups] == [
        (f"4 {want}", "cannot allocate all claims", 2),
        (f"2 {want}", "schedulable now", 1),
    ]


def test_a_node_left_with_a_zero_device_plugin_count_has_its_dra_gpus_counted() -> None:
    """A node moved from the device plugin to DRA keeps ``nvidia.com/gpu: 0`` in status (kubelet keeps
    the zero once the plugin is gone: pkg/kubelet/nodestatus/setters.go ``MachineInfo`` sets the device
    manager's removed resources to capacity 0): its 8 DRA GPUs count in the totals (only a non-zero plugin count
    means the same GPUs on both stacks)."""
    node = make_node("n1").gpus(0).obj()
    objs = [*o.gpu_classes(), node, o.node_slice("n1", [o.gpu_device(i, "n1") for i in range(8)])]
    snap = build_snapshot([("t", x) for x in objs])
    assert not snap.errors
    totals = gpu_totals(Engine(snap))
    assert totals["gpu (DRA)"] == {"capacity": 8, "allocatable": 8, "requested": 0}


def test_a_gpu_request_served_through_dra_is_no_anomaly_on_a_dra_node() -> None:
    """KEP-5004 (1.36): p runs with nvidia.com/gpu: 2 served by its special claim on DRA node n1 (no
    nvidia.com/gpu in the node's status), q holds a third GPU through a claim: the row is gpu (DRA) 3 of
    4 taken, with no nvidia.com/gpu row of 2 requested out of 0 (an anomaly that is not one)."""
    cls = o.device_class("gpu.nvidia.com", "gpu", extended="nvidia.com/gpu")
    p = make_pod("p").gpu(2).on("n1").obj()
    p["metadata"]["uid"] = "uid-p"
    special = o.claim(
        "p-extended-resources-abcde",
        o.request("container-0-request-0", count=2),
        owner_uid="uid-p",
        status=o.allocated(
            "n1", ("container-0-request-0", "gpu-0"), ("container-0-request-0", "gpu-1"), reserved=("uid-p",)
        ),
    )
    special["metadata"]["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "true"}
    held = o.claim("dc", o.request("gpu"), status=o.allocated("n1", ("gpu", "gpu-2"), reserved=("uid-q",)))
    q = o.pod("q", ("gpu", "dc", ""), uid="uid-q")
    q["spec"]["nodeName"] = "n1"
    snap = build_snapshot([("t", x) for x in (cls, *o.gpu_node("n1", 4), p, special, held, q)])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    snap.kube_version = "1.36"
    report = diagnose(Engine(snap))
    (row,) = report.nodes
    assert row.gpu == {"gpu (DRA)": {"capacity": "4", "allocatable": "4", "requested": "3", "free": "1"}}
    assert anomalies(report.nodes) == []
    # who holds them: p by its request (served through its special claim), q by its claim's device
    assert row.holders == ["default: p (2), q (1 gpu (DRA))"]


def test_a_template_reference_that_needs_no_claim_asks_for_no_devices() -> None:
    """status.resourceClaimStatuses names no claim for the reference (the controller decided none is
    needed: core/v1 ``PodResourceClaimStatus.resourceClaimName``, "If this is unset, then generating a
    ResourceClaim was not necessary"; the DRA plugin skips it): the pod's group phrase lists no DRA request
    for it. Control: with no status entry at all (the claim not generated yet) it does name the reference."""
    for statuses, phrase in (({"gpu": None}, ""), ({}, "DRA claim gpus (not in the snapshot)")):
        objs = [*o.gpu_classes(), o.pod("p", ("gpu", "", "gpus"), statuses=statuses)]
        snap = build_snapshot([("t", x) for x in objs])
        assert not snap.errors
        (pod,) = snap.pending_pods()
        assert pod_ask(pod, snap.dra).devices == phrase, statuses


def test_a_pool_republishing_is_counted_and_named_from_its_newest_generation_only() -> None:
    """The driver republished node n1's pool (generation 2: 3 H100s and one MIG device, named as a
    generation-1 partition) while the generation-1 slices (an A100 with its MIG devices drawing on a
    counter set) still exist: the allocator reads generation 2 only (``GatherPools``,
    k8s.io/dynamic-resource-allocation structured/internal ``pools.go``: an obsolete generation is skipped),
    so the node row is 3 GPUs of the H100 and 1 MIG device (before, the product came from whichever slice
    the snapshot listed first, and a stale partition's name could hide a current device)."""
    old = o.partitionable_node("n1", (0, 1))
    stale = old[1:]
    for s in stale:
        s["metadata"]["name"] = "a-" + s["metadata"]["name"]  # (listed first: the old code read it first)
        for d in s["spec"].get("devices", []):
            d["attributes"]["productName"] = {"string": o.A100_80}
    current = o.node_slice("n1", [o.gpu_device(i, "n1", "NVIDIA H100 80GB HBM3") for i in range(3)]
                           + [o.mig_device(3, 0, "n1")], generation=2)  # fmt: skip
    current["spec"]["devices"][-1]["name"] = "gpu-0-mig-1g10gb-19-0"  # a name the stale pool partitioned
    snap = build_snapshot([("t", x) for x in (*o.gpu_classes(), old[0], *stale, current)])
    assert not snap.errors, [e.one_line() for e in snap.errors]
    snap.kube_version = "1.36"
    (row,) = node_rows(Engine(snap), POOL)
    got = {r: (v["allocatable"], v["requested"]) for r, v in row.gpu.items()}
    assert row.product == "NVIDIA H100 80GB HBM3"
    assert got == {"gpu (DRA)": ("3", "0"), "mig (DRA)": ("1", "0")}
