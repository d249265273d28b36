"""Pod labels for GPUs a container got through DRA, over real gRPC on a unix socket (R13.4).

Pins:
* kubelet's Pod Resources v1 ``ContainerResources.dynamic_resources`` (DynamicResource: claim_name,
  claim_namespace, claim_resources; ClaimResource: cdi_devices, driver_name, pool_name, device_name) and
  how kubelet fills it: ``GetDynamicResources`` in pkg/kubelet/cm/container_manager_linux.go (1.32-1.37)
  appends every device's CDI names to one list per driver, so a claim's second device also carries the
  first one's names (``kubelet_claim`` below builds the list that way);
* NVIDIA's DRA driver (k8s-dra-driver-gpu cmd/gpu-kubelet-plugin): driver ``gpu.nvidia.com``, device
  names ``gpu-<minor>`` (``GpuInfo.CanonicalName``), one transient CDI spec per claim
  ``/var/run/cdi/k8s.gpu.nvidia.com-claim_<claim UID>.yaml`` of kind ``k8s.gpu.nvidia.com/claim`` whose
  devices are named ``<claim UID>-<device name>`` (cdi.go ``CreateClaimSpecFile``/``GetClaimDeviceName``),
  each with nvcdi's device nodes: ``/dev/nvidia<minor>`` plus DRM nodes for a GPU, the parent's node plus
  ``/dev/nvidia-caps/nvidia-cap<GI>`` and ``<CI>`` for a MIG device;
* dcgm-exporter's DRA labels (transformation/const.go): dra_claim_name, dra_claim_namespace,
  dra_driver_name, dra_pool_name, dra_device_name, next to pod/namespace/container.
"""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from exporter_helpers import DGX1, H200, ReadingBackend, Scraper, fake_kubelet, labels
from exporter_helpers import dgx_labels as _dgx
from exporter_helpers import h200_labels as _h200

from kubegpu.devices.inventory import MIB
from kubegpu.exporter import dra_devices
from kubegpu.exporter.collector import GpuCollector, PodSources
from kubegpu.exporter.podresources import ClaimDevice, list_pod_resources
from kubegpu.exporter.podresources.v1 import api_pb2 as pb

UID = "dab5ab50-d59a-42a6-af16-cfd4628c0f7a"  # the claim UID in cdi.go's GetClaimDeviceName comment
KIND = "k8s.gpu.nvidia.com/claim"
POOL = "node-a"  # the driver publishes one pool per node, named after it
MIG_UUID = "MIG-11111111-2222-3333-4444-555555555555"


def kubelet_claim(name: str, namespace: str, driver: str, devices: list[tuple[str, list[str]]]) -> Any:
    """A DynamicResource as kubelet 1.32+ builds it: CDI names accumulate across one driver's devices."""
    resources, cdi = [], []
    for device, names in devices:
        cdi = cdi + [pb.CDIDevice(name=n) for n in names]
        resources.append(
            pb.ClaimResource(cdi_devices=cdi, driver_name=driver, pool_name=POOL, device_name=device)
        )
    return pb.DynamicResource(claim_name=name, claim_namespace=namespace, claim_resources=resources)


def write_claim_spec(directory: Path, devices: dict[str, list[str]]) -> None:
    """The driver's transient spec for claim ``UID``: device name -> its device nodes."""
    spec = {
        "cdiVersion": "0.5.0",
        "kind": KIND,
        "devices": [
            {"name": f"{UID}-{d}", "containerEdits": {"deviceNodes": [{"path": p} for p in nodes]}}
            for d, nodes in devices.items()
        ],
        "containerEdits": {"deviceNodes": [{"path": "/dev/nvidiactl"}, {"path": "/dev/nvidia-uvm"}]},
    }
    (directory / f"k8s.gpu.nvidia.com-claim_{UID}.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")


def dgx_minors_reversed() -> dict[str, Any]:
    """The DGX-1 reading with device minors 7..0 for NVML indexes 0..7: ``gpu-<N>`` must follow the minor."""
    reading = json.loads(DGX1.read_text(encoding="utf-8"))
    for dev in reading["devices"]:
        dev["minor"] = 7 - dev["index"]
    return reading


def scrape(reading: dict[str, Any], socket: Path, cdi_dirs: tuple[Path, ...], counters: Any = None) -> Any:
    pods = PodSources(socket, cdi_dirs=cdi_dirs)
    collector = GpuCollector(ReadingBackend(reading), counters=counters, pods=pods)
    scraper = Scraper(collector)
    try:
        return scraper.scrape()
    finally:
        scraper.close()


def dra(claim: str, device: str, namespace: str = "ml", driver: str = "gpu.nvidia.com") -> dict[str, str]:
    return {
        "dra_claim_name": claim,
        "dra_claim_namespace": namespace,
        "dra_driver_name": driver,
        "dra_pool_name": POOL,
        "dra_device_name": device,
    }


def test_list_returns_each_claim_device_as_kubelet_sends_it() -> None:
    with fake_kubelet() as (kubelet, socket):
        kubelet.pods = [("ml", "train-0", {"main": []})]
        cdi0, cdi1 = f"{KIND}={UID}-gpu-0", f"{KIND}={UID}-gpu-1"
        kubelet.dynamic[("ml", "train-0", "main")] = [
            kubelet_claim("two-gpus", "ml", "gpu.nvidia.com", [("gpu-0", [cdi0]), ("gpu-1", [cdi1])])
        ]
        got = list_pod_resources(socket)
    assert got.assignments == ()
    assert [(c.claim_name, c.device, c.cdi_devices) for c in got.claim_devices] == [
        ("two-gpus", "gpu-0", (cdi0,)),
        ("two-gpus", "gpu-1", (cdi0, cdi1)),  # kubelet's accumulated list, kept as sent
    ]
    assert {
        (c.namespace, c.pod, c.container, c.claim_namespace, c.driver, c.pool) for c in got.claim_devices
    } == {("ml", "train-0", "main", "ml", "gpu.nvidia.com", POOL)}


def test_claimed_gpus_follow_the_cdi_specs_device_nodes_with_dra_labels() -> None:
    # gpu-0 -> /dev/nvidia0 -> minor 0 -> NVML index 7; gpu-1 -> /dev/nvidia1 -> index 6 (minors reversed).
    # The second device's ClaimResource also lists gpu-0's CDI name; each GPU must still get one holder.
    with tempfile.TemporaryDirectory() as tmp, fake_kubelet() as (kubelet, socket):
        cdi = Path(tmp)
        write_claim_spec(
            cdi,
            {
                "gpu-0": ["/dev/nvidia0", "/dev/dri/card1", "/dev/dri/renderD128"],
                "gpu-1": ["/dev/nvidia1", "/dev/dri/card2", "/dev/dri/renderD129"],
            },
        )
        kubelet.pods = [("ml", "train-0", {"main": []})]
        names = [f"{KIND}={UID}-gpu-0", f"{KIND}={UID}-gpu-1"]
        kubelet.dynamic[("ml", "train-0", "main")] = [
            kubelet_claim("two-gpus", "ml", "gpu.nvidia.com", [("gpu-0", names[:1]), ("gpu-1", names[1:])])
        ]
        got = scrape(dgx_minors_reversed(), socket, (cdi,))
    pod = {"pod": "train-0", "namespace": "ml", "container": "main"}
    fb = got.series["DCGM_FI_DEV_FB_USED"]
    assert len(fb) == 8  # one series per GPU: no GPU got two holders
    assert fb[labels(**_dgx(7), **pod, **dra("two-gpus", "gpu-0"))] == 0
    assert fb[labels(**_dgx(6), **pod, **dra("two-gpus", "gpu-1"))] == 0
    assert labels(**_dgx(0)) in fb  # minor 7: not claimed, no pod labels
    assert got.one("kubegpu_gpu_allocated_containers", gpu="7") == 1
    assert got.one("kubegpu_gpu_allocated_containers", gpu="0") == 0


def test_a_claimed_mig_device_labels_the_mig_series_through_its_capability_nodes() -> None:
    # mig-minors: gpu0/gi9 -> nvidia-cap84, gpu0/gi9/ci0 -> nvidia-cap85; the spec lists the parent's
    # /dev/nvidia0 and both caps, so the device is MIG (gi 9, ci 0) of the GPU with minor 0.
    reading = _h200_with_mig()
    with tempfile.TemporaryDirectory() as tmp, fake_kubelet() as (kubelet, socket):
        cdi = Path(tmp)
        device = "gpu-0-mig-1g18gb-19-0"  # 25.12's form; the resolution does not parse it
        write_claim_spec(
            cdi, {device: ["/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap84", "/dev/nvidia-caps/nvidia-cap85"]}
        )
        kubelet.pods = [("ml", "tiny", {"c": []})]
        kubelet.dynamic[("ml", "tiny", "c")] = [
            kubelet_claim("mig", "ml", "gpu.nvidia.com", [(device, [f"{KIND}={UID}-{device}"])])
        ]
        got = scrape(reading, socket, (cdi,), counters=lambda: {MIG_UUID: {"DCGM_FI_DEV_FB_USED": 512.0}})
    pod = {"pod": "tiny", "namespace": "ml", "container": "c"}
    mig = {"GPU_I_PROFILE": "1g.18gb", "GPU_I_ID": "9"}
    # dcgm-exporter's default -d f monitors a MIG-enabled GPU through its GPU instances only (4.5.3-4.8.2
    # device_monitoring.go monitorAllGPUInstances): the GPU's temperature is on the instance's series, with
    # the claim's labels (NVIDIA/dcgm-exporter issue #317's scrape: GPU_TEMP per GPU_I_ID, no parent series)
    assert got.series["DCGM_FI_DEV_GPU_TEMP"] == {labels(**_h200(), **mig, **pod, **dra("mig", device)): 37}
    allocated = {
        dict(k).get("GPU_I_ID", "parent"): v
        for k, v in got.series["kubegpu_gpu_allocated_containers"].items()
    }
    assert allocated == {"9": 1, "parent": 0}
    assert got.series["DCGM_FI_DEV_FB_USED"][labels(**_h200(), **mig, **pod, **dra("mig", device))] == 512


def _no_spec_scrape(reading: dict[str, Any]) -> list[dict[str, str]]:
    with tempfile.TemporaryDirectory() as tmp, fake_kubelet() as (kubelet, socket):
        kubelet.pods = [("ml", "a", {"c": []})]
        kubelet.dynamic[("ml", "a", "c")] = [
            kubelet_claim("one", "ml", "gpu.nvidia.com", [("gpu-3", [f"{KIND}={UID}-gpu-3"])]),
            kubelet_claim(
                "m", "ml", "gpu.nvidia.com", [("gpu-2-mig-1-0-1", [f"{KIND}={UID}-gpu-2-mig-1-0-1"])]
            ),
        ]
        got = scrape(reading, socket, (Path(tmp) / "absent",))
    return [dict(k) for k in got.series["DCGM_FI_DEV_FB_USED"] if "pod" in dict(k)]


def test_without_a_spec_a_whole_gpu_resolves_by_its_name_where_index_is_minor() -> None:
    # No CDI directory; the DGX-1 reading as recorded has minor == index on all 8 GPUs, so gpu-3 is the
    # GPU of index 3 whichever way the driver release named it; the MIG name is left unresolved (no guess).
    reading = json.loads(DGX1.read_text(encoding="utf-8"))
    assert all(d.get("minor", d["index"]) == d["index"] for d in reading["devices"])
    held = _no_spec_scrape(reading)
    assert held == [{**_dgx(3), "pod": "a", "namespace": "ml", "container": "c", **dra("one", "gpu-3")}]


def test_without_a_spec_a_name_is_not_guessed_where_index_and_minor_differ(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Minors 7..0 for indexes 0..7: gpu-3 is minor 3 (index 4) for k8s-dra-driver-gpu's CanonicalName
    # (gpu-<minor>) but index 3 for the older NVIDIA/k8s-dra-driver (gpu-<index>): not resolved, said once.
    with caplog.at_level(logging.WARNING, logger="kubegpu.exporter.dra_devices"):
        held = _no_spec_scrape(dgx_minors_reversed())
    assert held == []
    said = [r for r in caplog.records if "GPU indexes differ from their device minors" in r.getMessage()]
    assert len(said) == 1


def test_other_drivers_and_unparsable_specs_attribute_nothing_but_spoil_nothing() -> None:
    with tempfile.TemporaryDirectory() as tmp, fake_kubelet() as (kubelet, socket):
        cdi = Path(tmp)
        write_claim_spec(cdi, {"gpu-5": ["/dev/nvidia5"]})
        (cdi / "broken.yaml").write_text("kind: [unclosed\n", encoding="utf-8")
        (cdi / "nokind.json").write_text(json.dumps({"devices": []}), encoding="utf-8")
        bad_edits = {"kind": KIND, "devices": [{"name": "x", "containerEdits": ["/dev/nvidia0"]}]}
        (cdi / "badedits.json").write_text(json.dumps(bad_edits), encoding="utf-8")
        bad_nodes = {
            "kind": KIND,
            "devices": [{"name": "y", "containerEdits": {"deviceNodes": "/dev/nvidia1"}}],
        }
        (cdi / "badnodes.json").write_text(json.dumps(bad_nodes), encoding="utf-8")
        kubelet.pods = [("ml", "a", {"c": []})]
        kubelet.dynamic[("ml", "a", "c")] = [
            kubelet_claim("ok", "ml", "gpu.nvidia.com", [("gpu-5", [f"{KIND}={UID}-gpu-5"])]),
            # Another driver naming a device gpu-0 is not an NVIDIA GPU (dcgm-exporter filters the same way).
            kubelet_claim("nic", "ml", "dra.example.com", [("gpu-0", ["example.com/nic=gpu-0"])]),
        ]
        got = scrape(dgx_minors_reversed(), socket, (cdi,))
    held = [dict(k) for k in got.series["DCGM_FI_DEV_FB_USED"] if "pod" in dict(k)]
    # gpu-5 -> /dev/nvidia5 -> minor 5 -> NVML index 2.
    assert held == [{**_dgx(2), "pod": "a", "namespace": "ml", "container": "c", **dra("ok", "gpu-5")}]
    assert got.one("kubegpu_exporter_source_up", source="pod-resources") == 1


def test_device_plugin_and_dra_holders_of_one_node_both_get_labels() -> None:
    with tempfile.TemporaryDirectory() as tmp, fake_kubelet() as (kubelet, socket):
        cdi = Path(tmp)
        write_claim_spec(cdi, {"gpu-7": ["/dev/nvidia7"]})
        kubelet.pods = [
            ("ml", "plugin", {"c": [("nvidia.com/gpu", ["GPU-0000d6e1-0000-4000-8000-000000000003"])]}),
            ("ml", "claimed", {"c": []}),
        ]
        kubelet.dynamic[("ml", "claimed", "c")] = [
            kubelet_claim("x", "ml", "gpu.nvidia.com", [("gpu-7", [f"{KIND}={UID}-gpu-7"])])
        ]
        got = scrape(dgx_minors_reversed(), socket, (cdi,))
    held = sorted(
        (dict(k)["gpu"], dict(k)["pod"]) for k in got.series["DCGM_FI_DEV_FB_USED"] if "pod" in dict(k)
    )
    assert held == [("0", "claimed"), ("3", "plugin")]  # gpu-7: minor 7 -> index 0


def _h200_with_mig() -> dict[str, Any]:
    reading = json.loads((H200 / "nvml.json").read_text(encoding="utf-8"))
    dev = reading["devices"][0]
    dev["minor"], dev["mig_mode"] = 0, [1, 1]
    dev["mig_devices"] = [
        {
            "index": 0,
            "uuid": MIG_UUID,
            "profile": "1g.18gb",
            "gi_id": 9,
            "ci_id": 0,
            "memory_total": 16384 * MIB,
        }
    ]
    reading["mig_minors"] = ["config 1", "monitor 2", "gpu0/gi9/access 84", "gpu0/gi9/ci0/access 85"]
    return reading


def test_cdi_specs_are_parsed_again_only_when_a_file_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    # One spec, read on three scrapes: parsed on the first, not on the second (same mtime and size), again
    # on the third after the driver rewrote it for another device; a removed spec is forgotten.
    parsed: list[str] = []
    real = dra_devices._spec_devices

    def counting(path: Path) -> dict[str, tuple[str, ...]]:
        parsed.append(path.name)
        return real(path)

    monkeypatch.setattr(dra_devices, "_spec_devices", counting)
    with tempfile.TemporaryDirectory() as tmp:
        cdi = Path(tmp)
        specs = dra_devices.CdiSpecs((cdi, cdi / "absent"))
        write_claim_spec(cdi, {"gpu-0": ["/dev/nvidia0"]})
        assert specs.devices().nodes == {f"{KIND}={UID}-gpu-0": ("/dev/nvidia0",)}
        assert specs.devices().nodes == {f"{KIND}={UID}-gpu-0": ("/dev/nvidia0",)}
        write_claim_spec(cdi, {"gpu-12": ["/dev/nvidia12"]})  # one byte longer: a new size
        assert specs.devices().nodes == {f"{KIND}={UID}-gpu-12": ("/dev/nvidia12",)}
        for f in cdi.iterdir():
            f.unlink()
        assert specs.devices().nodes == {}
    assert parsed == [f"k8s.gpu.nvidia.com-claim_{UID}.yaml"] * 2


def test_an_unresolvable_claim_device_is_logged_once_not_per_scrape(caplog: pytest.LogCaptureFixture) -> None:
    # A MIG device name without its spec cannot be matched (above); three scrapes, one warning naming it.
    inv = ReadingBackend(_h200_with_mig()).inventory()
    device = "gpu-0-mig-1g18gb-19-0"
    claim = ClaimDevice(
        "ml", "tiny", "c", "mig", "ml", "gpu.nvidia.com", POOL, device, (f"{KIND}={UID}-{device}",)
    )
    with tempfile.TemporaryDirectory() as tmp:
        specs = dra_devices.CdiSpecs((Path(tmp),))
        with caplog.at_level(logging.WARNING, logger=dra_devices.__name__):
            got = [dra_devices.resolve_all(inv, [claim], specs) for _ in range(3)]
    assert got == [{claim: None}] * 3
    assert [r.getMessage() for r in caplog.records] == [
        f"DRA device gpu.nvidia.com/{POOL}/{device} of claim ml/mig (pod ml/tiny) matches no GPU on this node: "
        "no pod labels"
    ]
