"""kubelet's admission rejections of GPU pods, by reason, on cases rebuilt from public threads (each fixture's
header cites its thread): ``TopologyAffinityError`` (kubelet topologymanager: "Resources cannot be allocated
with Topology locality"; pytorch/ci-infra#696) and ``OutOf<resource>`` with kubelet's fit text "Node didn't have
enough resource: %s, requested: %d, used: %d, capacity: %d" (pkg/kubelet/lifecycle/predicate.go;
GoogleCloudPlatform/container-engine-accelerators#100). Expected texts come from the threads and those sources.
"""

from __future__ import annotations

from tests.realcases.cases import case, finding


def test_topology_affinity_rejection_pytorch_ci_infra_696() -> None:
    """pytorch/ci-infra#696: kubelet's single-numa-node Topology Manager rejects the 4-GPU pod on a p5.48xlarge
    whose free H100s are split over both sockets: reason TopologyAffinityError, final, the scheduler NUMA-blind."""
    data = case("topology-affinity-h100-numa")
    pod = "arc-runners/mt-l-x86iamx-88-900-h100-4-2pfzt-runner-26mj5-workflow"
    f = finding(data, f"kubelet rejected {pod} at admission (TopologyAffinityError)")
    assert '"Resources cannot be allocated with Topology locality"' in f["detail"]
    assert "single-numa-node" in f["detail"] and "not per NUMA node" in f["detail"]
    assert f["severity"] == "critical"  # a bare pod


def test_out_of_gpu_after_restart_container_engine_accelerators_100() -> None:
    """GoogleCloudPlatform/container-engine-accelerators#100: after a node restart the ReplicaSet's pod stays
    OutOfnvidia.com/gpu while its replacement runs on the same node. "capacity: 0" in kubelet's fit text means no
    device was registered at admission: the device plugin was not back yet, not a node short of GPUs."""
    f = finding(
        case("gke-restart-outof-gpu"),
        "kubelet rejected default/gpu-replicaset-bxbc2 at admission (OutOfnvidia.com/gpu)",
    )
    assert f["severity"] == "warning" and f["layer"] == "driver/device-plugin"
    assert "Its ReplicaSet gpu-replicaset creates a replacement" in f["detail"]
    assert "counted no nvidia.com/gpu on the node at all (capacity 0)" in f["detail"]
    assert (
        "kubectl get pods -A -o wide --field-selector spec.nodeName=controller-2.k8s.ml.prod.srcd.host"
        in f["commands"]
    )
