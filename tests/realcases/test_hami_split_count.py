"""HAMi with split count 1 (Project-HAMi/HAMi#587, fixture hami-split-count-one.yaml): the second pod asking
to share a card stays Pending, and the maintainer's cause is the chart's devicePlugin.deviceSplitCount set to 1
("一张卡同时最多可以给多少个 container 共享 ... 配置成 1 了，就只能给一个 Pod 用了，第二个 Pod 就只能 Pending 了"):
raise it and the second pod schedules. That is the first step, not the shortage's generic advice (wait for GPU
pods to finish, preempt, add nodes), which fits no split count.

Why the shortage is the split count's symptom: HAMi's device plugin advertises nvidia.com/gpu as cards times
the split count (Project-HAMi/HAMi docs/config.md: devicePlugin.deviceSplitCount, "Maximum tasks assigned to a
simple GPU device", 10 by default; 4paradigm/k8s-vgpu-scheduler#35: split count 5 on 8 A40s, allocatable
nvidia.com/gpu 40), and registers each card as ``id,count,devmem,devcore,type,numa,health:`` in
hami.io/node-nvidia-register (Project-HAMi/HAMi docs/develop/protocol.md). With count 1 the node's
nvidia.com/gpu is its cards, so a node refused only for nvidia.com/gpu has every card held by one container.

Where the split count is not why the pod waits, the shortage's advice stays: a node that is short of CPU as well
(a split card would not seat the pod), or a node whose cards HAMi split (count 10) with every slot held.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.realcases.cases import HERE, diagnosed

FIXTURE = HERE / "hami-split-count-one.yaml"
GENERIC_SHORTAGE = "Wait for GPU pods there to finish"


def variant(tmp_path: Path, edit: str, extra: str = "") -> dict[str, Any]:
    """The #587 objects, the Pending pod's container line edited (``edit``: what replaces its limits' close),
    plus ``extra`` documents."""
    text = FIXTURE.read_text(encoding="utf-8")
    head, pod2 = text.split("name: gpu-pod-2", 1)
    limits = "nvidia.com/gpumem: 3000}"
    assert limits in pod2
    path = tmp_path / "variant.yaml"
    path.write_text(head + "name: gpu-pod-2" + pod2.replace(limits, edit) + extra, encoding="utf-8")
    return diagnosed(path)


def causes(data: dict[str, Any]) -> list[str]:
    return [c["cause"] for c in data["summary"]["causes"]]


def test_split_count_one_is_the_first_step_hami_587() -> None:
    data = diagnosed(FIXTURE)
    step = data["summary"]["firstStep"]
    # the maintainer's fix, first: deviceSplitCount is 1, raise it
    assert "split count 1" in step and "devicePlugin.deviceSplitCount" in step and "raise it" in step
    assert GENERIC_SHORTAGE not in step
    # the pod shares no card (the thread's "only one Pod"), said of the pod, not of its resource list
    assert "a pod asking nvidia.com/gpumem=3000 shares its card with no other pod" in step
    assert "Insufficient nvidia.com/gpu" not in causes(data)
    assert data["pending"][0]["establishedCause"]["fix"] in step
    # the checks' evidence is kept: the node is still shown refused for nvidia.com/gpu
    assert [g["reason"] for g in data["pending"][0]["groups"]] == ["Insufficient nvidia.com/gpu"]


def test_a_cpu_node_beside_does_not_hide_the_split_count(tmp_path: Path) -> None:
    # a node without GPUs could not take the pod whatever the split count: not a candidate
    cpu_node = """---
apiVersion: v1
kind: Node
metadata: {name: cpu-1, labels: {kubernetes.io/hostname: cpu-1}}
status:
  capacity: {cpu: "16", memory: 64Gi, pods: "110"}
  allocatable: {cpu: "16", memory: 64Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
"""
    data = variant(tmp_path, "nvidia.com/gpumem: 3000}", cpu_node)
    assert "devicePlugin.deviceSplitCount" in data["summary"]["firstStep"]


def test_a_node_short_of_cpu_too_keeps_the_shortage_advice(tmp_path: Path) -> None:
    # 64 CPUs on a 32-CPU node: a shared card would not seat the pod there
    data = variant(tmp_path, 'nvidia.com/gpumem: 3000, cpu: "64"}')
    assert "devicePlugin.deviceSplitCount" not in data["summary"]["firstStep"]
    # the note still says how the cards are registered
    assert any("split count 1" in n for n in data["pending"][0]["notes"])


def test_a_split_node_with_every_slot_held_keeps_the_shortage_advice(tmp_path: Path) -> None:
    # a second node whose card HAMi split 2 ways, both slots held by one-vGPU pods: the pod waits for a slot
    split_node = """---
apiVersion: v1
kind: Node
metadata:
  name: 10.35.211.18
  labels: {kubernetes.io/hostname: 10.35.211.18, gpu: "on"}
  annotations:
    hami.io/node-nvidia-register: "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,2,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
status:
  capacity: {cpu: "32", memory: 128Gi, pods: "110", nvidia.com/gpu: "2"}
  allocatable: {cpu: "32", memory: 128Gi, pods: "110", nvidia.com/gpu: "2"}
  conditions: [{type: Ready, status: "True"}]
"""
    holders = "".join(
        f"""---
apiVersion: v1
kind: Pod
metadata: {{name: holder-{i}, namespace: default}}
spec:
  schedulerName: hami-scheduler
  nodeName: 10.35.211.18
  containers:
  - {{name: c, image: "ubuntu:18.04", resources: {{limits: {{nvidia.com/gpu: 1, nvidia.com/gpumem: 3000}}}}}}
status: {{phase: Running}}
"""
        for i in range(2)
    )
    data = variant(tmp_path, "nvidia.com/gpumem: 3000}", split_node + holders)
    assert "devicePlugin.deviceSplitCount" not in data["summary"]["firstStep"]
    assert "Insufficient nvidia.com/gpu" in causes(data)
