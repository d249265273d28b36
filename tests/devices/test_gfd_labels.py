"""GFD labels (NVIDIA k8s-device-plugin internal/lm), with expected values worked out from the readings."""

from __future__ import annotations

import dataclasses

import pytest
from device_readings import README_TIME_SLICING, mig_node

from kubegpu.devices import MigStrategy, NodeInventory, PluginConfig, gfd_labels, parse_plugin_config
from kubegpu.errors import InputError


def test_h200_labels_without_sharing(h200: NodeInventory) -> None:
    # Driver "580.159.04" splits into major/minor/rev; cuda_driver 13000 is CUDA 13.0; 150754820096 bytes is
    # 143771 MiB (query-gpu.csv says "143771 MiB"); compute capability 9.0 is the hopper family. The reading
    # predates pci_class and machine_type: gpu.machine and gpu.mode are "unknown", as GFD labels a node whose
    # DMI product name and PCI class it cannot read (test_gfd_machine_mode.py).
    assert gfd_labels(h200, PluginConfig()) == {
        "nvidia.com/cuda.driver-version.full": "580.159.04",
        "nvidia.com/cuda.driver-version.major": "580",
        "nvidia.com/cuda.driver-version.minor": "159",
        "nvidia.com/cuda.driver-version.revision": "04",
        "nvidia.com/cuda.driver.major": "580",
        "nvidia.com/cuda.driver.minor": "159",
        "nvidia.com/cuda.driver.rev": "04",
        "nvidia.com/cuda.runtime-version.full": "13.0",
        "nvidia.com/cuda.runtime-version.major": "13",
        "nvidia.com/cuda.runtime-version.minor": "0",
        "nvidia.com/cuda.runtime.major": "13",
        "nvidia.com/cuda.runtime.minor": "0",
        "nvidia.com/gpu.compute.major": "9",
        "nvidia.com/gpu.compute.minor": "0",
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.family": "hopper",
        "nvidia.com/gpu.machine": "unknown",
        "nvidia.com/gpu.memory": "143771",
        "nvidia.com/gpu.mode": "unknown",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-H200",
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mps.capable": "false",
    }


def test_time_sliced_and_renamed_keeps_the_product_name(h200: NodeInventory) -> None:
    labels = gfd_labels(h200, parse_plugin_config(README_TIME_SLICING))
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H200"
    assert labels["nvidia.com/gpu.replicas"] == "10"
    assert labels["nvidia.com/gpu.sharing-strategy"] == "time-slicing"


def test_time_sliced_without_rename_marks_the_product_shared(h200: NodeInventory) -> None:
    # Upstream productLabel: shared and not renamed → "-SHARED" suffix, so pools can tell them apart (R7.3).
    config = parse_plugin_config("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}")
    labels = gfd_labels(h200, config)
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H200-SHARED"
    assert labels["nvidia.com/gpu.replicas"] == "4"


def test_dgx1_labels_count_eight_volta_gpus_without_mig(dgx1: NodeInventory) -> None:
    labels = gfd_labels(dgx1, PluginConfig())
    assert labels["nvidia.com/gpu.product"] == "Tesla-V100-SXM2-16GB"
    assert labels["nvidia.com/gpu.count"] == "8"
    assert labels["nvidia.com/gpu.memory"] == "16160"
    assert labels["nvidia.com/gpu.family"] == "volta"  # compute capability 7.0 (< 7.5)
    assert labels["nvidia.com/mig.capable"] == "false"
    assert labels["nvidia.com/cuda.runtime-version.full"] == "12.2"  # cuda_driver 12020


def test_mixed_mig_labels_per_profile(h200: NodeInventory) -> None:
    labels = gfd_labels(mig_node(h200, ["1g.18gb", "1g.18gb"]), PluginConfig(mig_strategy=MigStrategy.MIXED))
    assert labels["nvidia.com/mig.strategy"] == "mixed"
    assert labels["nvidia.com/mig-1g.18gb.product"] == "NVIDIA-H200-MIG-1g.18gb"
    assert labels["nvidia.com/mig-1g.18gb.count"] == "2"
    assert labels["nvidia.com/mig-1g.18gb.replicas"] == "1"
    assert labels["nvidia.com/mig-1g.18gb.memory"] == "16384"
    # The MIG-enabled GPU itself is labelled "without sharing": replicas 0.
    assert labels["nvidia.com/gpu.replicas"] == "0"


def test_single_mig_labels_replace_the_gpu_labels(h200: NodeInventory) -> None:
    labels = gfd_labels(mig_node(h200, ["1g.18gb"] * 7), PluginConfig(mig_strategy=MigStrategy.SINGLE))
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H200-MIG-1g.18gb"
    assert labels["nvidia.com/gpu.count"] == "7"
    assert labels["nvidia.com/gpu.memory"] == "16384"


def test_single_mig_with_two_profiles_is_labelled_invalid(h200: NodeInventory) -> None:
    labels = gfd_labels(mig_node(h200, ["1g.18gb", "3g.71gb"]), PluginConfig(mig_strategy=MigStrategy.SINGLE))
    assert (labels["nvidia.com/gpu.product"], labels["nvidia.com/gpu.count"]) == (
        "NVIDIA-H200-MIG-INVALID",
        "0",
    )


def test_no_gpus_no_labels(h200: NodeInventory) -> None:
    assert gfd_labels(dataclasses.replace(h200, devices=()), PluginConfig()) == {}


def test_malformed_driver_version_is_input_error(h200: NodeInventory) -> None:
    with pytest.raises(InputError, match=r'does not match format "X\.Y\[\.Z\]"'):
        gfd_labels(dataclasses.replace(h200, driver="580"), PluginConfig())
