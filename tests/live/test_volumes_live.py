"""The live scheduler with storage: it watches PVCs, PVs, StorageClasses and CSINodes (RBAC in
``deploy/scheduler/scheduler.yaml``) and filters with the storage plugins; it writes no PV bindings, so a pod
whose WaitForFirstConsumer claim would need one is refused with a message saying so, never bound beside a
claim nobody binds. Objects are shaped as in ``tests/realkube/volume_cases.py`` (a bound local PV with
required node affinity, kubernetes/kubernetes#81020)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.live.apiserver import RunningApiServer, wait_until
from tests.live.conftest import Component, gpu_node, gpu_pod
from tests.live.observe import node_of, scheduled_condition
from tests.realkube.volume_cases import claim, storage_class, volume


def _in_ml(raw: dict[str, Any]) -> dict[str, Any]:
    raw["metadata"]["namespace"] = "ml"
    return raw


def _uses(pod: dict[str, Any], claim_name: str) -> dict[str, Any]:
    pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]
    return pod


def test_bound_pv_node_affinity_and_unbindable_claims(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """gpu-1 has disk=ssd-a, gpu-2 ssd-b; the PV bound to "data" requires ssd-b, so "on-pv" lands on gpu-2
    (VolumeBinding's Filter); "wffc" uses an unbound WaitForFirstConsumer claim: refused, message naming it."""
    em = api.emulator
    em.create("nodes", gpu_node("gpu-1", labels={"disk": "ssd-a"}))
    em.create("nodes", gpu_node("gpu-2", labels={"disk": "ssd-b"}))
    em.create(
        "storageclasses", storage_class("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer")
    )
    pv = volume("pv-b", "local", "10Gi", claim_name="data", disk="ssd-b")
    pv["spec"]["claimRef"]["namespace"] = "ml"
    em.create("persistentvolumes", pv)
    em.create("persistentvolumeclaims", _in_ml(claim("data", "local", "10Gi", volume="pv-b")))
    em.create("persistentvolumeclaims", _in_ml(claim("scratch", "local", "5Gi")))
    em.create("pods", _uses(gpu_pod("on-pv", 1), "data"))
    em.create("pods", _uses(gpu_pod("wffc", 1), "scratch"))
    start_scheduler()
    wait_until(lambda: node_of(api, "on-pv"), what="on-pv bound")
    assert node_of(api, "on-pv") == "gpu-2"
    cond = wait_until(lambda: scheduled_condition(api, "wffc"), what="wffc's PodScheduled condition")
    assert cond["status"] == "False"
    assert "kubegpu does not bind volumes: claim(s) scratch wait for their first consumer" in cond["message"]
    assert node_of(api, "wffc") == ""


def test_no_pod_is_scheduled_before_the_claims_are_listed(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """kube-scheduler schedules only after ``WaitForCacheSync`` of every informer it started
    (``cmd/kube-scheduler/app/server.go`` Run: ``cc.InformerFactory.WaitForCacheSync``), PVCs included.
    The PVC list is held: Nodes, Pods and the Lease are there, yet "wffc" (an unbound WaitForFirstConsumer
    claim) stays unbound; before the claims are known VolumeBinding could not see it needs a PV binding,
    and the pod would be bound beside a claim nobody binds. Once the list is answered the pod is refused,
    naming the claim. (Scheduling that waited for Nodes and Pods only binds it to gpu-1 while held.)"""
    em = api.emulator
    em.create("nodes", gpu_node("gpu-1"))
    em.create(
        "storageclasses", storage_class("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer")
    )
    em.create("persistentvolumeclaims", _in_ml(claim("scratch", "local", "5Gi")))
    em.create("pods", _uses(gpu_pod("wffc", 1), "scratch"))
    held = em.hold("GET", r"/api/v1/persistentvolumeclaims")
    scheduler = start_scheduler()
    try:
        assert held.reached.wait(20), "the scheduler never listed PersistentVolumeClaims"
        wait_until(lambda: em.requests_to("GET", r"/api/v1/nodes") and em.requests_to("GET", r"/api/v1/pods")
                   and em.objects("leases"), what="Nodes and Pods listed, the Lease taken")  # fmt: skip
        # the positive signal: with Nodes and Pods synced the scheduler says it waits for the claims' cache
        # alone (a slow scheduler that simply had not got to the pod would not say it)
        wait_until(
            lambda: "waiting for caches to sync: PersistentVolumeClaim\n" in scheduler.output(),
            what="the scheduler waiting for the PersistentVolumeClaim cache only",
        )
        assert node_of(api, "wffc") == ""
        assert not em.requests_to("POST", r"/api/v1/namespaces/ml/pods/wffc/binding")
    finally:
        held.release.set()
    cond = wait_until(lambda: scheduled_condition(api, "wffc"), what="wffc's PodScheduled condition")
    assert cond["status"] == "False"
    assert "kubegpu does not bind volumes: claim(s) scratch wait for their first consumer" in cond["message"]
    assert node_of(api, "wffc") == ""


def test_csidrivers_and_storage_capacities_are_watched(
    api: RunningApiServer, start_scheduler: Callable[..., Component]
) -> None:
    """VolumeBinding's capacity check reads CSIDrivers and CSIStorageCapacities (binder.go ``hasEnoughCapacity``;
    kube-scheduler's informers for both, ``volume_binding.go`` New); the live scheduler lists and watches them
    like the other storage kinds (RBAC in ``deploy/scheduler/scheduler.yaml``), and scheduling, which waits
    for every watched kind to sync, goes on: "plain" (no volumes) is bound."""
    from tests.realkube.volume_cases import capacity, csidriver

    em = api.emulator
    em.create("nodes", gpu_node("gpu-1", labels={"pool": "a"}))
    em.create("csidrivers", csidriver())
    em.create("csistoragecapacities", _in_ml(capacity("cap-a", "fast", "a", "100Gi")))
    em.create("pods", gpu_pod("plain", 1))
    start_scheduler()
    wait_until(lambda: node_of(api, "plain"), what="plain bound")
    assert em.requests_to("GET", r"/apis/storage.k8s.io/v1/csidrivers")
    assert em.requests_to("GET", r"/apis/storage.k8s.io/v1/csistoragecapacities")
