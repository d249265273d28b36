"""GFD ``gpu.family`` per product and per-resource label naming, against k8s-device-plugin v0.20.0.

Family: ``internal/lm/resource.go`` ``getArchFamily`` at v0.20.0 (commit 1b826acc6af3079d8923bac395c3124b8861a9a6):
7.<5 volta, 7.>=5 turing, 8.<9 ampere, 8.9 ada-lovelace, 9 hopper, 10 and 12 blackwell, 13 rubin, else undefined.
Compute capabilities per product: NVIDIA's "CUDA GPUs" table (developer.nvidia.com/cuda-gpus; also
``nvidia-smi --query-gpu=compute_cap``): T4 7.5, V100 7.0, A10 8.6, A100 8.0, L4 8.9, L40S 8.9, H100 / H200 /
GH200 9.0, B200 / GB200 10.0, B300 10.3 (``sm_103a``, as public B300 readings print it), RTX PRO 6000
Blackwell 12.0. The expected family is read off the switch above.
MIG naming: ``internal/resource/nvml-mig-device.go`` ``GetName`` replaces ``+`` by ``.``; per-resource
``sharing-strategy`` and the MIG attribute labels: ``internal/lm/resource.go`` ``baseLabeler`` /
``newMigAttributeLabels`` (expected keys as ``internal/lm/mig-strategy_test.go`` lists them).
"""

from __future__ import annotations

import dataclasses

import pytest
from device_readings import mig_node

from kubegpu.devices import MigStrategy, NodeInventory, PluginConfig, gfd_labels, parse_plugin_config

PRODUCTS = [
    ("Tesla T4", (7, 5), "turing"),
    ("Tesla V100-SXM2-16GB", (7, 0), "volta"),
    ("NVIDIA A10", (8, 6), "ampere"),
    ("NVIDIA A100-SXM4-80GB", (8, 0), "ampere"),
    ("NVIDIA L4", (8, 9), "ada-lovelace"),
    ("NVIDIA L40S", (8, 9), "ada-lovelace"),
    ("NVIDIA H100 80GB HBM3", (9, 0), "hopper"),
    ("NVIDIA H200", (9, 0), "hopper"),
    ("NVIDIA GH200 480GB", (9, 0), "hopper"),
    ("NVIDIA B200", (10, 0), "blackwell"),
    ("NVIDIA GB200", (10, 0), "blackwell"),
    ("NVIDIA B300 SXM6 AC", (10, 3), "blackwell"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", (12, 0), "blackwell"),
    ("a Rubin GPU (compute 13.0)", (13, 0), "rubin"),
    ("a future GPU (compute 14.0)", (14, 0), "undefined"),
]


def _as(inv: NodeInventory, name: str, cc: tuple[int, int]) -> NodeInventory:
    return dataclasses.replace(
        inv, devices=tuple(dataclasses.replace(g, name=name, cuda_cc=cc) for g in inv.devices)
    )


@pytest.mark.parametrize(("name", "cc", "family"), PRODUCTS)
def test_family_per_product(h200: NodeInventory, name: str, cc: tuple[int, int], family: str) -> None:
    labels = gfd_labels(_as(h200, name, cc), PluginConfig())
    assert labels["nvidia.com/gpu.family"] == family
    assert (labels["nvidia.com/gpu.compute.major"], labels["nvidia.com/gpu.compute.minor"]) == (
        str(cc[0]),
        str(cc[1]),
    )


def test_me_profile_label_keys_use_a_dot(h200: NodeInventory) -> None:
    # H200 "1g.18gb+me" → resource nvidia.com/mig-1g.18gb.me; a "+" is not valid in a label key.
    inv = mig_node(h200, ["1g.18gb+me", "1g.18gb"])
    labels = gfd_labels(inv, dataclasses.replace(PluginConfig(), mig_strategy=MigStrategy.MIXED))
    assert labels["nvidia.com/mig-1g.18gb.me.count"] == "1"
    assert labels["nvidia.com/mig-1g.18gb.me.product"] == "NVIDIA-H200-MIG-1g.18gb.me"
    assert labels["nvidia.com/mig-1g.18gb.me.sharing-strategy"] == "none"
    assert not [k for k in labels if "+" in k]


def test_sharing_strategy_is_per_resource(h200: NodeInventory) -> None:
    # Only MIG 1g.18gb is time-sliced: the full-GPU resource says "none", the MIG resource "time-slicing".
    inv = mig_node(h200, ["1g.18gb", "1g.18gb", "3g.71gb"])
    config = parse_plugin_config(
        "flags: {migStrategy: mixed}\n"
        "sharing: {timeSlicing: {resources: [{name: nvidia.com/mig-1g.18gb, replicas: 2}]}}"
    )
    labels = gfd_labels(inv, config)
    assert labels["nvidia.com/mig-1g.18gb.sharing-strategy"] == "time-slicing"
    assert labels["nvidia.com/mig-1g.18gb.replicas"] == "2"
    assert labels["nvidia.com/mig-3g.71gb.sharing-strategy"] == "none"
    assert labels["nvidia.com/gpu.sharing-strategy"] == "none"


def test_mig_attribute_labels_from_the_reading(h200: NodeInventory) -> None:
    inv = mig_node(h200, ["3g.71gb"])
    g = inv.devices[0]
    # Illustrative nvmlDeviceGetAttributes values (not a recorded reading): each attribute becomes
    # "<resource>.<name>" unchanged, and they replace the memory-total fallback.
    attrs = (
        ("memory", 71424), ("multiprocessors", 60), ("slices.gi", 3), ("slices.ci", 3), ("engines.copy", 3),
        ("engines.decoder", 3), ("engines.encoder", 0), ("engines.jpeg", 3), ("engines.ofa", 0),
    )  # fmt: skip
    migs = tuple(dataclasses.replace(m, attributes=attrs) for m in g.mig_devices)
    inv = dataclasses.replace(inv, devices=(dataclasses.replace(g, mig_devices=migs),))
    labels = gfd_labels(inv, dataclasses.replace(PluginConfig(), mig_strategy=MigStrategy.MIXED))
    got = {
        k.removeprefix("nvidia.com/mig-3g.71gb."): v
        for k, v in labels.items()
        if k.startswith("nvidia.com/mig-3g")
    }
    assert got == {
        "count": "1", "replicas": "1", "sharing-strategy": "none", "product": "NVIDIA-H200-MIG-3g.71gb",
        "memory": "71424", "multiprocessors": "60", "slices.gi": "3", "slices.ci": "3", "engines.copy": "3",
        "engines.decoder": "3", "engines.encoder": "0", "engines.jpeg": "3", "engines.ofa": "0",
    }  # fmt: skip
