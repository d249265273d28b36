"""HAMi's per-node GPU list (the hami.io/node-nvidia-register annotation) read against a container's vGPU count.

hami-scheduler refuses a node when one container asks for more vGPUs than the node's registered devices
(Project-HAMi/HAMi pkg/scheduler/score.go: ``int(k.Nums) > len(typeDevices)`` -> NodeInsufficientDevice); the
list is JSON in current HAMi (pkg/device/devices.go MarshalNodeDevices / UnMarshalNodeDevices) and
``id,count,devmem,devcore,type,numa,health[,index,mode]:`` entries before (EncodeNodeDevices)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from click.testing import CliRunner

from kubegpu.cli.main import cli
from kubegpu.explain.diagnose import diagnose
from kubegpu.explain.engine import Engine
from kubegpu.model.gpu_facts import hami_registered_gpus
from kubegpu.model.objects import Node
from kubegpu.sources import load_files
from tests.realcases.cases import HERE, case, pending
from tests.summaries import summary_of

# Project-HAMi/HAMi#1565 (hami-device-plugin log, "patch node with the following annos"): two GTX 1050, 9 fields
COLON_9 = (
    "GPU-c68a7b57-2e7c-82e7-5544-ba780116e140,10,4096,100,NVIDIA-NVIDIA GeForce GTX 1050,0,true,0,hami-core:"
    "GPU-331e028c-15b8-e878-7c68-0c2d231b0932,10,4096,100,NVIDIA-NVIDIA GeForce GTX 1050,0,true,1,hami-core:"
)
# the same two devices as register.go logs them ("start working on the devices", JSON of DeviceInfo), the form
# Project-HAMi/website#835 documents for the annotation
JSON = (
    '[{"id":"GPU-c68a7b57-2e7c-82e7-5544-ba780116e140","count":10,"devmem":4096,"devcore":100,'
    '"type":"NVIDIA-NVIDIA GeForce GTX 1050","mode":"hami-core","health":true},'
    '{"id":"GPU-331e028c-15b8-e878-7c68-0c2d231b0932","index":1,"count":10,"devmem":4096,"devcore":100,'
    '"type":"NVIDIA-NVIDIA GeForce GTX 1050","mode":"hami-core","health":true}]'
)


def node(annotation: str | None) -> Node:
    notes = {} if annotation is None else {"hami.io/node-nvidia-register": annotation}
    return Node(name="n", annotations=notes)


def test_registered_gpus_both_formats_hami_1565() -> None:
    assert hami_registered_gpus(node(COLON_9)) == 2
    assert hami_registered_gpus(node(JSON)) == 2
    assert hami_registered_gpus(node(None)) is None
    assert hami_registered_gpus(node("GPU-1,10,4096")) is None  # not HAMi's form: unknown, not zero


def test_four_vgpus_on_a_two_gpu_node_hami_1527() -> None:
    """Project-HAMi/HAMi#1527: nvidia.com/gpu: 4 in one container, "more than two gives the error"; the only
    HAMi-registered node lists 2 GPUs, so hami-scheduler's filter refuses it (NodeUnfitPod in its message)."""
    result = CliRunner().invoke(
        cli, ["explain", "llm/worker-0", "--snapshot", str(HERE / "hami-vgpus-over-registered.yaml")]
    )
    assert result.exit_code == 0, result.output
    flat = " ".join(result.stdout.split())
    assert "gpu-node-a's hami.io/node-nvidia-register lists 2 physical GPU(s)" in flat
    assert "NodeInsufficientDevice" in flat
    assert "kubegpu could not read" not in flat


def test_stale_node_unfit_refusal_hami_1368() -> None:
    """Project-HAMi/HAMi#1368: hami-scheduler refused the pod (NodeUnfitPod, HAMi pkg/scheduler/score.go) while
    the previous workload was terminating; once it was gone the node was free but the pod waited ~5 minutes
    (kube-scheduler DefaultPodMaxInUnschedulablePodsDuration = 5 * time.Minute, scheduling_queue.go). kubegpu
    only said the message "was written by hami-scheduler"."""
    notes = " ".join(pending(case("hami-node-unfit-stale"), "team-a/train-b-0")["notes"])
    assert "Now no pod on gpu-node-1 holds a GPU, so that refusal predates the node's present state" in notes
    assert "after 5 minutes (podMaxInUnschedulablePodsDuration)" in notes
    # a pod still holding the node's GPU: the refusal is current, and nothing is said of it
    text = (HERE / "hami-node-unfit-stale.yaml").read_text(encoding="utf-8")
    holder = (
        "- apiVersion: v1\n  kind: Pod\n  metadata: {name: train-a-0, namespace: team-a}\n"
        "  spec:\n    schedulerName: hami-scheduler\n    nodeName: gpu-node-1\n"
        "    containers: [{name: main, image: x, resources: {limits: {nvidia.com/gpu: '1'}}}]\n"
        "  status: {phase: Running}\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.yaml"
        path.write_text(
            text.replace(
                "- apiVersion: kueue.x-k8s.io/v1beta1\n  kind: Workload",
                holder + "- apiVersion: kueue.x-k8s.io/v1beta1\n  kind: Workload",
            ),
            encoding="utf-8",
        )
        data = diagnose(Engine(load_files(path))).to_dict()
    assert "predates" not in " ".join(pending(data, "team-a/train-b-0")["notes"])


def test_the_headline_counts_hamis_nvidia_gpu_as_vgpu_slots_not_gpus() -> None:
    """HAMi's device plugin advertises each physical GPU deviceSplitCount times as nvidia.com/gpu (default 10:
    the ``nvidia.deviceSplitCount`` of the device configuration HAMi's chart ships; the #591 node: 8 RTX 3090 in its register
    annotation, nvidia.com/gpu 80). Before, the headline said "80 GPUs allocatable" for that node of 8 GPUs."""
    summary = summary_of(load_files(HERE / "hami-591-sixteen-vgpus-eight-gpus.yaml"))
    line = summary.devices_line()
    assert line.startswith("1 GPU nodes, 0 GPUs allocatable, 0 requested, 0 free; ")
    assert "80 HAMi vGPU slots allocatable (on 8 physical GPUs HAMi registered), 0 requested, 80 free" in line
    assert summary.to_dict()["hamiVgpuSlots"] == {
        "allocatable": 80,
        "requested": 0,
        "free": 80,
        "physicalGpus": 8,
    }


def test_an_unreadable_register_annotation_makes_the_physical_count_a_lower_bound(tmp_path: Path) -> None:
    """A second HAMi node whose annotation kubegpu cannot read (not HAMi's form): its GPUs are not counted, so
    the headline says "at least" (review of the vGPU-slots headline)."""
    text = (HERE / "hami-591-sixteen-vgpus-eight-gpus.yaml").read_text()
    second = (
        text.split("---")[0]
        .replace("name: k8s-master1", "name: k8s-worker2")
        .replace('hami.io/node-nvidia-register: "GPU-', 'hami.io/node-nvidia-register: "garbled,GPU-', 1)
    )
    path = tmp_path / "two.yaml"
    path.write_text(text + "\n---\n" + second)
    summary = summary_of(load_files(path))
    assert (
        "160 HAMi vGPU slots allocatable (on at least 8 physical GPUs HAMi registered)"
        in summary.devices_line()
    )
