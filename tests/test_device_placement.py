"""Device-level placement (issue 3): the devices behind the counts, the kubelet's refusals, GpuDeviceFit.

Upstream behaviours pinned:
- NVIDIA device plugin, time-slicing with ``failRequestsGreaterThanOne``: Allocate fails with
  "request for '<resource>: <n>' too large: maximum request size for shared resources is 1", which
  kubelet reports as ``Allocate failed due to <grpc error>, which is unexpected`` (reason
  UnexpectedAdmissionError), as the plugin's README shows;
- kubelet Topology Manager ``single-numa-node``: devices from one NUMA node or TopologyAffinityError;
- devices the plugin reports unhealthy are never allocated (they drop out of allocatable).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from kubegpu.devices.node_devices import INVENTORY_ANNOTATION, node_devices
from kubegpu.devices.plugin_config import parse_plugin_config
from kubegpu.explain.pending import explain_pod
from kubegpu.model.names import DEVICE_PLUGIN_CONFIG_ANNOTATION as CONFIG_ANNOTATION
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.device_ledger import choose
from kubegpu.scheduler.framework import CycleState
from kubegpu.scheduler.reasons import render
from kubegpu.scheduler.registry import kubegpu_profile
from kubegpu.testing.builders import make_node, make_pod
from tests.dgx_placement import UUIDS, dgx_node, engine, holder
from tests.summaries import summary_of

TIME_SLICING = """version: v1
sharing:
  timeSlicing:
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
"""


def test_synthesised_devices_follow_capacity_labels_and_unhealthy_count() -> None:
    node = make_node("n").gpus(4).allocatable(nvidia_com__gpu=3).parsed()
    model = node_devices(node)
    assert model is not None and model.synthesized
    devices = model.plans["nvidia.com/gpu"].devices
    assert [d.health.value for d in devices] == ["Healthy", "Healthy", "Healthy", "Unhealthy"]


def test_time_slicing_labels_give_replica_ids() -> None:
    node = (
        make_node("ts")
        .gpus(8)
        .label("nvidia.com/gpu.count", "2")
        .label("nvidia.com/gpu.replicas", "4")
        .parsed()
    )
    model = node_devices(node)
    assert model is not None and model.sharing == "time-slicing"
    ids = [d.id for d in model.plans["nvidia.com/gpu"].devices]
    assert ids[:5] == ["ts-gpu0::0", "ts-gpu0::1", "ts-gpu0::2", "ts-gpu0::3", "ts-gpu1::0"]


def test_unhealthy_devices_are_never_chosen() -> None:
    node = make_node("n").gpus(2).allocatable(nvidia_com__gpu=1).parsed()
    model = node_devices(node)
    assert model is not None
    assignment, _ = choose(make_pod("p").gpu(1).parsed(), model, {})
    assert assignment == {"main": {"nvidia.com/gpu": ["n-gpu0"]}}
    _, refusal = choose(make_pod("p").gpu(2).parsed(), model, {})
    assert refusal is not None and render(refusal.reason) == "node(s) had too few free nvidia.com/gpu devices"


def test_single_numa_node_refuses_a_split_set_that_fits_by_count() -> None:
    """4 GPUs free as 2 (NUMA 0) + 2 (NUMA 1): kube-scheduler binds, kubelet says TopologyAffinityError."""
    e = engine(dgx_node(), holder("a", UUIDS[0:2]), holder("b", UUIDS[4:6]))
    exp = explain_pod(e, make_pod("p").gpu(4).parsed())
    assert exp.node == "dgx"
    assert exp.kubelet is not None
    assert (exp.kubelet["reason"], exp.kubelet["message"]) == (
        "TopologyAffinityError",
        "Resources cannot be allocated with Topology locality",
    )
    # kubegpu's profile does not place it
    result = engine(dgx_node(), holder("a", UUIDS[0:2]), holder("b", UUIDS[4:6]), profile=kubegpu_profile())
    msg = result.scheduler.schedule_one(make_pod("p").gpu(4).parsed()).message
    assert msg.startswith(
        "0/1 nodes are available: 1 node(s) could not align nvidia.com/gpu on one NUMA node "
        "(topology manager single-numa-node)."
    )


def test_without_a_numa_policy_the_same_set_is_fine() -> None:
    e = engine(dgx_node("none"), holder("a", UUIDS[0:2]), holder("b", UUIDS[4:6]))
    exp = explain_pod(e, make_pod("p").gpu(4).parsed())
    assert exp.kubelet is None
    assert sorted(exp.allocation[0].device_ids) == sorted(UUIDS[2:4] + UUIDS[6:8])


def test_two_gpus_on_a_cube_mesh_come_from_one_nvlinked_quad() -> None:
    """With GPUs 0,1 and 4,5 taken, the best pair is (2,3) or (6,7): NVLinked and on one NUMA node."""
    e = engine(dgx_node(), holder("a", UUIDS[0:2]), holder("b", UUIDS[4:6]), profile=kubegpu_profile())
    result = e.scheduler.schedule_one(make_pod("p").gpu(2).parsed())
    assert result.allocation is not None
    chosen = sorted(result.allocation["main"]["nvidia.com/gpu"])
    assert chosen in (sorted(UUIDS[2:4]), sorted(UUIDS[6:8]))
    # the reservation is recorded: the next 2-GPU pod gets the other pair
    nxt = e.scheduler.schedule_one(make_pod("q").gpu(2).parsed()).allocation
    assert nxt is not None and set(nxt["main"]["nvidia.com/gpu"]).isdisjoint(chosen)


def test_container_view_maps_logical_indexes_to_host_gpus() -> None:
    e = engine(dgx_node("none"), holder("a", UUIDS[0:6]))
    exp = explain_pod(e, make_pod("p").gpu(2).parsed())
    grant = exp.allocation[0]
    assert [(g["logical"], g["host_index"]) for g in grant.gpus] == [(0, 6), (1, 7)]
    assert grant.env == {"NVIDIA_VISIBLE_DEVICES": f"{UUIDS[6]},{UUIDS[7]}"}


def time_sliced_node():  # type: ignore[no-untyped-def]
    raw = (
        make_node("ts").gpus(8).label("nvidia.com/gpu.count", "2").label("nvidia.com/gpu.replicas", "4").obj()
    )
    raw["metadata"]["annotations"] = {CONFIG_ANNOTATION: TIME_SLICING}
    return raw


def test_fail_requests_greater_than_one_is_kubelets_unexpected_admission_error() -> None:
    e = engine(time_sliced_node())
    exp = explain_pod(e, make_pod("p").gpu(2).parsed())
    assert exp.kubelet is not None
    assert exp.kubelet["reason"] == "UnexpectedAdmissionError"
    # no plugin image in the snapshot: the v0.20.0 plugin's text (internal/plugin/server.go Allocate
    # around internal/rm/rm.go ValidateRequest), in kubelet's "Allocate failed due to %v, which is unexpected"
    assert exp.kubelet["message"] == (
        'Allocate failed due to rpc error: code = Unknown desc = invalid allocation request for "nvidia.com/gpu": '
        "invalid request: maximum request size for shared resources is 1; found 2, which is unexpected"
    )
    ok = explain_pod(e, make_pod("q").gpu(1).parsed())
    assert ok.kubelet is None and ok.allocation[0].shared
    assert any("a replica is not 1/N of the GPU" in n for n in ok.notes)


def test_replicas_without_extra_hardware_are_refused() -> None:
    """Two replicas of one GPU add no hardware; with only one GPU's replicas free, kubegpu says so."""
    cfg = TIME_SLICING.replace("failRequestsGreaterThanOne: true", "failRequestsGreaterThanOne: false")
    raw = (
        make_node("ts").gpus(4).label("nvidia.com/gpu.count", "1").label("nvidia.com/gpu.replicas", "4").obj()
    )
    raw["metadata"]["annotations"] = {CONFIG_ANNOTATION: cfg}
    model = node_devices(build_snapshot([("t", raw)]).nodes[0], parse_plugin_config(cfg))
    assert model is not None
    _, refusal = choose(make_pod("p").gpu(2).parsed(), model, {})
    assert refusal is not None
    assert (
        render(refusal.reason) == "node(s) had nvidia.com/gpu replicas on fewer physical GPUs than requested"
    )


def test_replicas_on_fewer_gpus_are_admitted_by_kubelet_and_called_out() -> None:
    """Without failRequestsGreaterThanOne the NVIDIA plugin hands out any free replicas (internal/rm/
    allocate.go ``distributedAlloc`` checks only that enough are free): kubelet admits a pod asking 2
    replicas of a node with one GPU, which kube-scheduler binds there. Not an admission failure (the pod
    is schedulable, no ``kubelet`` refusal); a note says both replicas share one GPU and where kubegpu's
    device-aware profile would go (nowhere: no node has two GPUs), and the grant shows the two replicas."""
    cfg = TIME_SLICING.replace("failRequestsGreaterThanOne: true", "failRequestsGreaterThanOne: false")
    raw = (
        make_node("ts").gpus(4).label("nvidia.com/gpu.count", "1").label("nvidia.com/gpu.replicas", "4").obj()
    )
    raw["metadata"]["annotations"] = {CONFIG_ANNOTATION: cfg}
    exp = explain_pod(engine(raw), make_pod("p").gpu(2).parsed())
    assert exp.schedulable and exp.node == "ts"
    assert exp.kubelet is None
    (note,) = [n for n in exp.notes if n.startswith("kube-scheduler counts devices")]
    assert note.startswith(
        "kube-scheduler counts devices, so it would bind the pod to ts; kubelet and the device plugin would "
        "admit it, but 2 replicas would land on 1 physical GPU(s)"
    )
    assert "kubegpu's device-aware profile finds no node" in note
    (grant,) = exp.allocation  # two replicas of the one GPU: the container sees one GPU
    assert grant.device_ids == ["ts-gpu0::0", "ts-gpu0::1"]
    assert [g["uuid"] for g in grant.gpus] == ["ts-gpu0"]


def test_a_running_pod_on_replicas_of_fewer_gpus_holds_them() -> None:
    """A running pod that kubelet admitted with two replicas of one GPU (no allocation recorded) holds
    those two replicas in the device ledger: a Pending pod asking the other two gets the other two."""
    cfg = TIME_SLICING.replace("failRequestsGreaterThanOne: true", "failRequestsGreaterThanOne: false")
    raw = (
        make_node("ts").gpus(4).label("nvidia.com/gpu.count", "1").label("nvidia.com/gpu.replicas", "4").obj()
    )
    raw["metadata"]["annotations"] = {CONFIG_ANNOTATION: cfg}
    e = engine(raw, make_pod("r").gpu(2).on("ts").obj())
    held = e.cluster.devices.taken(0)["nvidia.com/gpu"]
    assert len(held) == 2
    (grant,) = explain_pod(e, make_pod("p").gpu(2).parsed()).allocation
    assert len(grant.device_ids) == 2 and held.isdisjoint(grant.device_ids)


def test_preemption_dry_run_restores_device_assignments() -> None:
    e = engine(dgx_node("none"), holder("a", UUIDS[0:4]), holder("b", UUIDS[4:8]), profile=kubegpu_profile())
    before = {k: dict(v) for k, v in e.cluster.devices.held[0].items()}
    result = e.scheduler.schedule_one(make_pod("p").gpu(4).priority(100).parsed())
    assert result.nominated_node == "dgx"
    assert e.cluster.devices.held[0] == before


def test_batch_device_filter_equals_scalar() -> None:
    e = engine(dgx_node(), holder("a", UUIDS[0:2]), holder("b", UUIDS[4:6]), time_sliced_node(),
               make_node("plain").gpus(2).obj(), profile=kubegpu_profile())  # fmt: skip
    plugin = next(p for p in e.framework.filter_plugins if p.name == "GpuDeviceFit")
    rows = np.arange(len(e.cluster), dtype=np.intp)
    for pod in (make_pod("a").gpu(1).parsed(), make_pod("b").gpu(2).parsed(), make_pod("c").gpu(4).parsed()):
        state = CycleState()
        e.framework.run_pre_filter(state, pod, e.cluster)
        codes, reasons = plugin.filter_batch(state, pod, e.cluster, rows)  # type: ignore[attr-defined]
        for i in rows:
            scalar = plugin.filter(state, pod, e.cluster.view(int(i)))
            assert (int(codes[i]), e.framework.reason_strings(int(reasons[i]))) == (
                int(scalar.code),
                scalar.texts(),
            )


def test_inventory_annotation_may_be_nvidia_smi_xml() -> None:
    """The real H200 `nvidia-smi -q -x` output as the node's inventory: its UUID is the device ID."""
    xml = (
        Path(__file__).resolve().parents[1].parent
        / "shared"
        / "fixtures"
        / "nodes"
        / "h200-1gpu"
        / "nvidia-smi-q.xml"
    ).read_text()
    raw = make_node("h200").gpus(1).obj()
    raw["metadata"]["annotations"] = {INVENTORY_ANNOTATION: xml}
    model = node_devices(build_snapshot([("t", raw)]).nodes[0])
    assert model is not None and not model.synthesized
    assert [d.id for d in model.plans["nvidia.com/gpu"].devices] == [
        "GPU-5f3c0a7e-1d2b-4c8e-9a6f-0b1c2d3e4f50"
    ]


def test_dry_runs_keep_stand_in_assignments_flagged() -> None:
    """Pods whose devices nobody recorded get stand-in IDs flagged `assumed`; a preemption dry run that
    removes and re-adds them must keep the flag (found by the report's GPU map)."""
    e = engine(
        make_node("n").gpus(2).obj(), make_pod("a").gpu(1).on("n").obj(), make_pod("b").gpu(1).on("n").obj()
    )
    before = set(e.cluster.devices.assumed)
    assert before == {"default/a", "default/b"}
    e.scheduler.schedule_one(make_pod("p").gpu(2).priority(10).parsed())
    assert e.cluster.devices.assumed == before


def test_replica_policy_spreads_or_packs_across_physical_gpus() -> None:
    """Two GPUs × 4 replicas; GPU 0 already has 3 replicas in use. spread (NVIDIA's distributed policy)
    puts the next replica on the idle GPU 1; pack puts it on GPU 0 and keeps GPU 1 whole."""
    cfg = TIME_SLICING.replace("failRequestsGreaterThanOne: true", "failRequestsGreaterThanOne: false")
    raw = (
        make_node("ts").gpus(8).label("nvidia.com/gpu.count", "2").label("nvidia.com/gpu.replicas", "4").obj()
    )
    raw["metadata"]["annotations"] = {CONFIG_ANNOTATION: cfg}
    model = node_devices(build_snapshot([("t", raw)]).nodes[0], parse_plugin_config(cfg))
    assert model is not None
    taken = {"nvidia.com/gpu": {"ts-gpu0::0", "ts-gpu0::1", "ts-gpu0::2"}}
    pod = make_pod("p").gpu(1).parsed()
    spread, _ = choose(pod, model, taken, "spread")
    packed, _ = choose(pod, model, taken, "pack")
    assert spread == {"main": {"nvidia.com/gpu": ["ts-gpu1::0"]}}
    assert packed == {"main": {"nvidia.com/gpu": ["ts-gpu0::3"]}}
    # two replicas for one container still land on two GPUs when packing
    two, _ = choose(make_pod("q").gpu(2).parsed(), model, taken, "pack")
    assert two is not None and sorted(two["main"]["nvidia.com/gpu"]) == ["ts-gpu0::3", "ts-gpu1::0"]


def test_the_grouped_view_counts_a_pod_kubelet_would_refuse_as_blocked_not_schedulable() -> None:
    """Two Pending pods on the split DGX above: p (4 GPUs) is bound by kube-scheduler and refused by
    kubelet (TopologyAffinityError), so its group's cause names the admission failure and it is the first
    step; q (2 GPUs, from one NUMA node) fits, and its group says where it would go. Before, both read
    "schedulable now" and the headline said nothing was blocked."""
    objs = [dgx_node(), holder("a", UUIDS[0:2]), holder("b", UUIDS[4:6])]
    objs += [make_pod("p").gpu(4).obj(), make_pod("q").gpu(2).obj()]
    snap = build_snapshot([("t", o) for o in objs])
    summary = summary_of(snap)
    by_pod = {g.pods[0]: g for g in summary.groups}
    p, q = by_pod["default/p"], by_pod["default/q"]
    assert p.cause == "kubelet admission would fail (TopologyAffinityError)"
    assert p.fix == (
        "kube-scheduler would bind it to dgx, but its kubelet would refuse it: "
        "Resources cannot be allocated with Topology locality"
    )
    assert q.cause == "schedulable now" and q.fix.startswith("kube-scheduler would bind it to dgx now.")
    assert summary.first_step.startswith("kube-scheduler would bind it to dgx, but its kubelet")


def test_the_device_search_is_shared_by_pods_asking_the_same_gpus(monkeypatch: Any) -> None:
    """GpuDeviceFit's verdict on a node is a function of the pod's GPU requests and the node's devices: pods
    that differ in memory (each its own class) share it, and it is searched again once the node changes.
    The verdicts equal a fresh search's (failRequestsGreaterThanOne refuses 2 replicas, 1 fits)."""
    from kubegpu.scheduler.plugins import gpu_device_fit

    calls: list[str] = []
    real = gpu_device_fit.choose

    def counting(pod: Any, *args: Any, **kw: Any) -> Any:
        calls.append(pod.name)
        return real(pod, *args, **kw)

    monkeypatch.setattr(gpu_device_fit, "choose", counting)
    e = engine(time_sliced_node(), profile=kubegpu_profile())
    two = [make_pod(f"two-{m}").gpu(2).requests(memory=f"{m}Gi").parsed() for m in (1, 2, 3)]
    results = [e.scheduler.schedule_one(p, assume=False) for p in two]
    assert [r.node for r in results] == [None, None, None]
    assert all("time-slice nvidia.com/gpu with failRequestsGreaterThanOne" in r.message for r in results)
    assert calls == ["two-1"]  # one device search for the three
    one = e.scheduler.schedule_one(make_pod("one").gpu(1).parsed())
    assert one.node == "ts" and calls == ["two-1", "one", "one"]  # Filter, then Reserve's choice
    e.scheduler.schedule_one(make_pod("two-4").gpu(2).requests(memory="4Gi").parsed(), assume=False)
    assert calls[-1] == "two-4"  # the node changed (a pod placed): searched again


def test_too_few_devices_carries_kubelets_own_admission_error() -> None:
    """kubelet's devicemanager refuses with ``requested number of devices unavailable for <res>. Requested: n,
    Available: m`` (pkg/kubelet/cm/devicemanager/manager.go devicesToAllocate, v1.37.2), set on the pod as
    ``Allocate failed due to <err>, which is unexpected`` (pkg/kubelet/cm/admission/errors.go): the text
    Project-HAMi/HAMi-core#110 posted. The refusal used to carry no text ("UnexpectedAdmissionError: ")."""
    node = make_node("n").gpus(2).allocatable(nvidia_com__gpu=1).parsed()
    model = node_devices(node)
    assert model is not None
    _, refusal = choose(make_pod("p").gpu(2).parsed(), model, {}, as_kubelet=True)
    assert refusal is not None and refusal.kubelet_reason == "UnexpectedAdmissionError"
    assert refusal.kubelet_error == (
        "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 2, "
        "Available: 1, which is unexpected"
    )


def test_a_count_label_that_disagrees_with_capacity_leaves_capacity_the_device_count() -> None:
    """The plugin registers what capacity shows, and kubelet allocates from those; GFD's nvidia.com/gpu.count
    can be stale (a finding says so). Stand-ins follow capacity, except under MIG, where the label counts
    physical GPUs (time-slicing: capacity / replicas)."""
    stale = make_node("s").gpus(8).label("nvidia.com/gpu.count", "4").parsed()
    model = node_devices(stale)
    assert model is not None and len(model.plans["nvidia.com/gpu"].devices) == 8
    sliced = (
        make_node("t")
        .gpus(8)
        .label("nvidia.com/gpu.count", "1")
        .label("nvidia.com/gpu.replicas", "4")
        .parsed()
    )
    model = node_devices(sliced)
    assert model is not None and len(model.plans["nvidia.com/gpu"].devices) == 8
    assert {d.id.split("::")[0] for d in model.plans["nvidia.com/gpu"].devices} == {"t-gpu0", "t-gpu1"}
