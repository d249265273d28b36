"""Devices of init containers, as kubelet's device manager hands them out (``ManagerImpl.Allocate``,
pkg/kubelet/cm/devicemanager/manager.go v1.37.2): init containers first, in order; a plain init container's
devices are reused by the containers after it before any free device (``devicesToReuse``); a sidecar's
(``restartPolicy: Always``) and an app container's stay their own; the pod holds the union until it ends.

Cases: kubernetes/kubernetes manager_test.go v1.37.2 ``TestRestartableInitContainerDeviceAllocation`` (its
``domain1.com/resource1`` here ``nvidia.com/gpu``) and issue #72486 ("Gpu allocation fails after
initContainer finishes": init and app container each asking for every GPU of the node; its
``alpha.kubernetes.io/nvidia-gpu`` here ``nvidia.com/gpu``, the device-plugin name that replaced it).
"""

from __future__ import annotations

from typing import Any

from kubegpu.devices.node_devices import node_devices
from kubegpu.model.parse import parse_pod
from kubegpu.scheduler.device_ledger import choose
from kubegpu.testing.builders import make_node


def _c(name: str, gpus: int, sidecar: bool = False, **extra: str) -> dict[str, Any]:
    res = {"nvidia.com/gpu": str(gpus), **extra}
    c: dict[str, Any] = {"name": name, "image": "busybox", "resources": {"requests": res, "limits": res}}
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


def _pod(init: list[dict[str, Any]], containers: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"initContainers": init, "containers": containers}}  # fmt: skip


def test_sidecars_reuse_the_plain_init_containers_devices_and_apps_get_their_own() -> None:
    """TestRestartableInitContainerDeviceAllocation: 6 devices; init 3, sidecars 1 and 2, apps 1 and 2."""
    pod = parse_pod(
        _pod(
            [_c("init-1", 3), _c("sidecar-2", 1, True), _c("sidecar-3", 2, True)],
            [_c("app-1", 1), _c("app-2", 2)],
        )
    )
    assert pod.requests["nvidia.com/gpu"] == 6000  # max(init 3, sidecars 3 + apps 3): the node needs 6
    model = node_devices(make_node("n").gpus(6).parsed())
    assert model is not None
    got, refusal = choose(pod, model, {}, as_kubelet=True)
    assert refusal is None and got is not None
    dev = {c: set(r["nvidia.com/gpu"]) for c, r in got.items()}
    assert [len(dev[c]) for c in ("init-1", "sidecar-2", "sidecar-3", "app-1", "app-2")] == [3, 1, 2, 1, 2]
    assert dev["init-1"] >= dev["sidecar-2"] | dev["sidecar-3"]
    dedicated = [dev["sidecar-2"], dev["sidecar-3"], dev["app-1"], dev["app-2"]]
    for i, a in enumerate(dedicated):
        for b in dedicated[i + 1 :]:
            assert not a & b
    assert len(set().union(*dev.values())) == 6  # what the pod holds on the node


def test_an_app_container_reuses_the_init_containers_gpus() -> None:
    """Issue #72486: init and app container each ask for all 4 GPUs; the app gets the init's 4, the pod
    holds 4 (scheduler: max(4, 4) = 4), and nothing is refused."""
    pod = parse_pod(
        _pod([_c("init-myservice", 4, cpu="2", memory="4Gi")], [_c("busybox", 4, cpu="2", memory="4Gi")])
    )
    assert pod.requests["nvidia.com/gpu"] == 4000
    model = node_devices(make_node("n").gpus(4).parsed())
    assert model is not None
    got, refusal = choose(pod, model, {}, as_kubelet=True)
    assert refusal is None and got is not None
    assert sorted(got["init-myservice"]["nvidia.com/gpu"]) == sorted(got["busybox"]["nvidia.com/gpu"])
    assert len(got["busybox"]["nvidia.com/gpu"]) == 4
