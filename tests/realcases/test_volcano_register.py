"""Volcano's per-node GPU list (the volcano.sh/node-vgpu-register annotation), read as upstream writes and
reads it.

Project-HAMi/volcano-vgpu-device-plugin pkg/util/util.go EncodeNodeDevices writes one entry per GPU ended by
``:``: ``id,count,devmem,type,health`` up to v1.9.4 (pkg/plugin/vgpu/util/util.go), with ``,mode`` added from
v1.10.0 (commit b24d45a); it never writes JSON. volcano-sh/volcano pkg/scheduler/api/devices/nvidia/vgpu/
utils.go decodeNodeDevices returns nothing for a value without ``:``, indexes five fields before v1.12.0 and
refuses an entry of fewer than six from v1.12.0 (commit 4b8409bf4 "Add vgpu dynamic mig"). Any other shape is
unreadable: the vGPU limit is then said to be unchecked, never counted."""

from __future__ import annotations

import pytest

from kubegpu.model.gpu_facts import volcano_registered_gpus
from kubegpu.model.objects import Node

# A node's annotation as quoted in Wangmin362/volcano (d99a06cf) pkg/scheduler/api/devices/nvidia/vgpu/utils.go,
# above decodeNodeDevices: two GTX 1080 Ti, five fields each (the plugin up to v1.9.4)
FIVE = (
    "GPU-151ae9c0-83a9-2dd1-8981-b5f44c021a58,1,1126,NVIDIA-NVIDIA GeForce GTX 1080 Ti,true:"
    "GPU-76f93f2b-8cd8-4dd0-e555-56418bde1457,1,1126,NVIDIA-NVIDIA GeForce GTX 1080 Ti,true:"
)
# the same two cards as EncodeNodeDevices writes them from v1.10.0: the sharing mode last
SIX = FIVE.replace(",true:", ",true,hami-core:")


def node(annotation: str) -> Node:
    return Node(name="n", annotations={"volcano.sh/node-vgpu-register": annotation})


def test_the_plugins_five_and_six_field_entries_are_read() -> None:
    assert volcano_registered_gpus(node(FIVE)) == 2
    assert volcano_registered_gpus(node(SIX)) == 2


@pytest.mark.parametrize(
    "annotation",
    [
        # seven fields: written by no plugin release (HAMi's own hami.io/node-nvidia-register has 7 or 9)
        SIX.replace(",hami-core:", ",hami-core,0:"),
        # JSON: the plugin never writes it and decodeNodeDevices does not parse it
        '[{"id":"GPU-151ae9c0-83a9-2dd1-8981-b5f44c021a58","count":1,"devmem":1126,'
        '"type":"NVIDIA-NVIDIA GeForce GTX 1080 Ti","health":true}]',
        # no ":" at all: decodeNodeDevices returns nil
        "GPU-151ae9c0-83a9-2dd1-8981-b5f44c021a58,1,1126,NVIDIA-NVIDIA GeForce GTX 1080 Ti,true",
        # fewer fields than any release writes
        "GPU-a,4,24564:GPU-b,4,24564:",
        "::",
    ],
)
def test_other_shapes_are_unreadable_not_counted(annotation: str) -> None:
    assert volcano_registered_gpus(node(annotation)) is None
